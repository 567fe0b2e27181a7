#include "bench/runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <exception>
#include <memory>

#include "core/event_timer.hpp"
#include "core/l2_flush.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {

int affordable_reps(double one_run_ms, const RunOptions& options) {
  const double budget_ms = options.seconds_per_variant * 1e3;
  const int fit = one_run_ms > 0 ? int(budget_ms / one_run_ms) : options.reps;
  return std::min(options.reps, std::max(3, fit));
}

namespace {

struct Timing {
  std::vector<double> ms;
  double median() const {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t half = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[half] : 0.5 * (sorted[half - 1] + sorted[half]);
  }
};

class Stream {
 public:
  Stream() {
    ROOFLAB_CUDA("bench", "creating the stream",
                 cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

void prepare(const Variant& variant, Workspace& workspace, cudaStream_t stream) {
  if (variant.prepare) variant.prepare(workspace, stream);
}

Timing time_gpu(const Variant& variant, Workspace& workspace, const RunOptions& options,
                L2Flush& flush, cudaStream_t stream) {
  EventTimer timer;
  for (int i = 0; i < options.warmup; ++i) {
    prepare(variant, workspace, stream);
    variant.run(workspace, stream);
  }
  Timing timing;
  int reps = options.reps;
  for (int r = 0; r < reps; ++r) {
    prepare(variant, workspace, stream);
    if (!options.hot) flush(stream);
    timer.start(stream);
    variant.run(workspace, stream);
    timer.stop(stream);
    timing.ms.push_back(timer.elapsed_ms());
    if (r == 0) reps = affordable_reps(timing.ms[0], options);
  }
  return timing;
}

Timing time_cpu(const Variant& variant, Workspace& workspace, const RunOptions& options) {
  using clock = std::chrono::steady_clock;
  Timing timing;
  int reps = options.reps;
  for (int r = 0; r < reps; ++r) {
    prepare(variant, workspace, nullptr);
    const auto start = clock::now();
    variant.run(workspace, nullptr);
    timing.ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
    if (r == 0) reps = affordable_reps(timing.ms[0], options);
  }
  return timing;
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::failed: return "FAILED";
    case Status::skipped: return "skipped";
  }
  return "?";
}

bool counts_as_failure(const Row& row) {
  return row.status == Status::failed && row.expected_failure.empty();
}

bool selected(const Variant& variant, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  return std::any_of(only.begin(), only.end(), [&](const std::string& wanted) {
    return wanted == variant.name || wanted == std::to_string(variant.rung);
  });
}

const Row* fastest_cpu_row(const std::vector<Row>& rows) {
  const Row* cpu = nullptr;
  for (const Row& row : rows)
    if (row.cpu && row.status == Status::ok && (!cpu || row.median_ms < cpu->median_ms)) cpu = &row;
  return cpu;
}

void derive_rates(std::vector<Row>& rows, const Model& model, const Environment& environment) {
  derive_rates(rows, model, environment, fastest_cpu_row(rows));
}

void derive_rates(std::vector<Row>& rows, const Model& model, const Environment& environment,
                  const Row* cpu) {
  const double ceiling = environment.ceiling_value(model.ceiling);
  const bool compute_bound = is_compute_ceiling(model.ceiling);
  const Row* previous = nullptr;
  for (Row& row : rows) {
    row.bytes = model.bytes;
    row.flops = model.flops;
    row.ceiling = ceiling_name(model.ceiling);
    if (row.status != Status::ok) continue;
    const double seconds = row.median_ms * 1e-3;
    row.gbps = seconds > 0 ? model.bytes / seconds * 1e-9 : 0;
    row.gflops = seconds > 0 ? model.flops / seconds * 1e-9 : 0;
    const double achieved = compute_bound ? row.gflops * 1e9 : row.gbps * 1e9;
    row.percent_of_ceiling = ceiling > 0 ? 100.0 * achieved / ceiling : 0;
    row.speedup_vs_previous = previous ? previous->median_ms / row.median_ms : 0;
    row.speedup_vs_cpu = cpu ? cpu->median_ms / row.median_ms : 0;
    previous = &row;
  }
}

Runner::Runner(const Registry& registry, const Environment& environment, RunOptions options)
    : registry_(registry), environment_(environment), options_(std::move(options)) {}

std::vector<Row> Runner::run(const std::string& op_name, Problem problem,
                             const std::function<void(const Row&)>& on_row) {
  const Op& op = registry_.op(op_name);
  problem = op.resolve(problem);
  const Model model = op.model(problem);
  const std::string description = op.describe(problem);

  Stream stream;
  L2Flush flush(std::size_t(environment_.device.l2_bytes));
  std::unique_ptr<Workspace>
      workspace;  // built on first use: skipped-only ladders allocate nothing

  std::uint64_t seed = options_.seed;
  const auto measure = [&](const Variant& variant) {
    Row row;
    row.op = op_name;
    row.problem = description;
    row.rung = variant.rung;
    row.name = variant.name;
    row.idea = variant.idea;
    row.vendor = variant.vendor;
    row.cpu = variant.where == Where::cpu;
    row.expected_failure = variant.expected_failure;
    row.note = variant.limit && !options_.ignore_limits ? variant.limit(problem) : std::string();
    if (!row.note.empty()) {
      row.status = Status::skipped;
      return row;
    }
    try {
      if (!workspace) workspace = op.make_workspace(problem);
      workspace->refill(options_.same_inputs ? options_.seed : seed++);
      // Refills may queue work on any stream; the variant's stream must not overtake it.
      ROOFLAB_CUDA("bench", "waiting for the device", cudaDeviceSynchronize());
      prepare(variant, *workspace, stream);
      variant.run(*workspace, stream);
      ROOFLAB_CUDA("bench", "waiting for the stream", cudaStreamSynchronize(stream));
      const Check check = workspace->check(variant.where);
      row.error = check.error;
      row.tolerance = check.tolerance;
      if (!check.passed) {
        row.status = Status::failed;
        row.note = check.detail;
      } else {
        const Timing timing = row.cpu ? time_cpu(variant, *workspace, options_)
                                      : time_gpu(variant, *workspace, options_, flush, stream);
        row.reps = int(timing.ms.size());
        row.median_ms = timing.median();
        row.min_ms = *std::min_element(timing.ms.begin(), timing.ms.end());
        row.max_ms = *std::max_element(timing.ms.begin(), timing.ms.end());
        if (variant.note) row.note = variant.note(*workspace);
      }
    } catch (const std::exception& error) {
      row.status = Status::failed;
      row.note = error.what();
      cudaStreamSynchronize(stream);  // let queued work drain before the next variant
    }
    return row;
  };

  std::vector<const Variant*> chosen;
  for (const Variant* variant : registry_.variants(op_name))
    if (selected(*variant, options_.only)) chosen.push_back(variant);
  // The CPU rungs run first: "vs CPU" is against the fastest of them, and every row shows its
  // final figure as soon as it is measured. The rows still come in rung order.
  std::vector<std::optional<Row>> measured(chosen.size());
  std::vector<Row> cpu_rows;
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i]->where == Where::cpu) cpu_rows.push_back(*(measured[i] = measure(*chosen[i])));
  const Row* const cpu = fastest_cpu_row(cpu_rows);
  std::vector<Row> rows;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    rows.push_back(measured[i] ? *measured[i] : measure(*chosen[i]));
    derive_rates(rows, model, environment_, cpu);
    if (on_row) on_row(rows.back());
  }
  return rows;
}

}  // namespace rooflab::bench
