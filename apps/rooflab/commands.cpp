#include "commands.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench/sizes.hpp"
#include "core/device_info.hpp"
#include "rooflab/error.hpp"

namespace rooflab::app {
namespace {

std::int64_t size_or_zero(const std::string& text, const char* option) {
  return text.empty() ? 0 : bench::parse_size(text, option);
}

void run_one(bench::Runner& runner, bench::RowWriter& writer, const bench::Registry& registry,
             const std::string& op, const bench::Problem& problem, std::vector<bench::Run>* runs,
             int* failures) {
  const bench::Op& definition = registry.op(op);
  const bench::Problem resolved = definition.resolve(problem);
  writer.begin_run(op, definition.describe(resolved), definition.model(resolved));
  const auto rows = runner.run(op, resolved, [&](const bench::Row& row) {
    writer.row(row);
    if (bench::counts_as_failure(row)) ++*failures;
  });
  writer.end_run(rows);
  if (runs) runs->push_back({op, definition.describe(resolved), definition.model(resolved), rows});
}

}  // namespace

void require_gpu() {
  const std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) throw NoDevice(why);
}

std::vector<bench::Problem> to_problems(const BenchRequest& request, const bench::Registry& registry) {
  const bench::Op& op = registry.op(request.op);
  const bool sizes_given = !(request.n.empty() && request.rows.empty() && request.cols.empty() &&
                             request.m.empty() && request.batch.empty() && request.bins.empty());
  std::vector<bench::Problem> problems;
  if (sizes_given) {
    bench::Problem problem;
    problem.n = size_or_zero(request.n, "--n");
    problem.rows = size_or_zero(request.rows, "--rows");
    problem.cols = size_or_zero(request.cols, "--cols");
    problem.m = size_or_zero(request.m, "--m");
    problem.batch = size_or_zero(request.batch, "--batch");
    problem.bins = size_or_zero(request.bins, "--bins");
    require(request.n.empty() || problem.n > 0, "bench", "--n", "must be at least 1");
    require(request.bins.empty() || problem.bins > 0, "bench", "--bins", "must be at least 1");
    problems.push_back(problem);
  } else {
    problems = op.report_problems(false);
  }
  for (bench::Problem& problem : problems) {
    if (!request.dtype.empty()) problem.dtype = request.dtype;
    if (!request.dist.empty()) problem.dist = request.dist;
    problem = op.resolve(problem);
  }
  return problems;
}

void list(std::ostream& out, const bench::Registry& registry, const std::string& op) {
  if (op.empty()) {
    for (const std::string& name : registry.op_names())
      out << fmt::format("{:<14} {}\n", name, registry.op(name).summary);
    return;
  }
  const bench::Op& definition = registry.op(op);
  out << definition.name << ": " << definition.summary << "\n";
  for (const bench::Variant* variant : registry.variants(op)) {
    const char* kind = variant->vendor ? "vendor" : variant->where == bench::Where::cpu ? "cpu" : "gpu";
    out << fmt::format("{:>3}  {:<22} {:<6} {}\n", variant->rung, variant->name, kind, variant->idea);
  }
}

void table(std::ostream& out, const std::string& results_path, const std::string& op) {
  std::ifstream file(results_path);
  if (!file) throw UsageError("rooflab: cannot read results file '" + results_path + "'");
  nlohmann::json results;
  try {
    results = nlohmann::json::parse(file);
    out << bench::markdown_tables(results, op);
  } catch (const nlohmann::json::exception& error) {
    throw UsageError("rooflab: '" + results_path + "' is not a rooflab results file (" + error.what() + ")");
  }
}

std::string info_text(const bench::Environment& environment) {
  const DeviceInfo& d = environment.device;
  const double sm_mhz = d.sm_clock_khz / 1e3;
  const double memory_mhz = d.memory_clock_khz / 1e3;
  std::string text;
  text += fmt::format("device           {} (compute capability {}.{})\n", d.name, d.cc_major, d.cc_minor);
  text += fmt::format("                 {} SMs, {:.1f} MB L2, {:.1f} GiB memory\n", d.sm_count,
                      d.l2_bytes / 1e6, d.global_memory_bytes / double(1 << 30));
  text += fmt::format("clocks           SM {:.0f} MHz, memory {:.0f} MHz, bus {} bits\n", sm_mhz,
                      memory_mhz, d.memory_bus_bits);
  text += fmt::format("versions         driver {}, runtime {}, rooflab {} ({})\n",
                      cuda_version_string(d.driver_version), cuda_version_string(d.runtime_version),
                      environment.version, environment.commit);
  text += fmt::format("bandwidth        theoretical {:.0f} GB/s = 2 x {:.0f} MHz x {} bits / 8\n",
                      d.theoretical_bandwidth() * 1e-9, memory_mhz, d.memory_bus_bits);
  text += fmt::format(
      "                 measured copy {:.0f} GB/s ({:.0f}% of theoretical): device-to-device "
      "memcpy, bytes read + written, {:.2f} GB buffers\n",
      environment.ceilings.copy_bandwidth * 1e-9,
      100 * environment.ceilings.copy_bandwidth / d.theoretical_bandwidth(),
      environment.ceilings.buffer_bytes * 1e-9);
  text += fmt::format(
      "                 measured read {:.0f} GB/s ({:.0f}% of theoretical): a kernel streaming "
      "16-byte loads\n",
      environment.ceilings.read_bandwidth * 1e-9,
      100 * environment.ceilings.read_bandwidth / d.theoretical_bandwidth());
  text += fmt::format(
      "host link        measured host-to-device {:.1f} GB/s: cudaMemcpy from pinned memory, {:.0f} "
      "MB copies (what transfers are bounded by)\n",
      environment.ceilings.host_to_device_bandwidth * 1e-9,
      environment.ceilings.host_buffer_bytes * 1e-6);
  text += fmt::format("fp32 peak        {:.1f} TFLOP/s = {} SMs x {} cores x 2 flop x {:.0f} MHz\n",
                      d.fp32_peak() * 1e-12, d.sm_count, fp32_cores_per_sm(d.cc_major, d.cc_minor),
                      sm_mhz);
  text += fmt::format("fp64 peak        {:.1f} TFLOP/s = {} SMs x {} cores x 2 flop x {:.0f} MHz\n",
                      d.fp64_peak() * 1e-12, d.sm_count, fp64_cores_per_sm(d.cc_major, d.cc_minor),
                      sm_mhz);
  text += fmt::format("ridge point      {:.1f} flop/byte in fp32 (peak / copy bandwidth): below it a "
                      "kernel is memory-bound\n",
                      d.fp32_peak() / environment.ceilings.copy_bandwidth);
  return text;
}

void info(std::ostream& out, const bench::Environment& environment, bench::Format format) {
  if (format == bench::Format::json)
    out << bench::to_json(environment).dump(2) << "\n";
  else
    out << info_text(environment);
}

int bench(std::ostream& out, const BenchRequest& request) {
  const bench::Registry& registry = bench::registry();
  bench::Format format;
  std::vector<bench::Problem> problems;
  try {
    format = bench::parse_format(request.format);
    problems = to_problems(request, registry);
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  std::ofstream file;
  if (!request.out.empty()) {
    file.open(request.out);
    if (!file) throw UsageError("rooflab: cannot write --out file '" + request.out + "'");
  }
  require_gpu();
  const bench::Environment environment = bench::make_environment();
  bench::Runner runner(registry, environment, request.options);
  bench::RowWriter writer(out, format, environment, request.options.seed);
  std::vector<bench::Run> runs;
  int failures = 0;
  for (const bench::Problem& problem : problems)
    run_one(runner, writer, registry, request.op, problem, &runs, &failures);
  writer.finish();
  if (file) {
    bench::RowWriter file_writer(file, bench::format_for_path(request.out, format), environment,
                                 request.options.seed);
    for (const bench::Run& run : runs) {
      file_writer.begin_run(run.op, run.problem, run.model);
      for (const bench::Row& row : run.rows) file_writer.row(row);
      file_writer.end_run(run.rows);
    }
    file_writer.finish();
  }
  return failures;
}

int report(std::ostream& out, const std::string& directory, bool quick,
           const bench::RunOptions& options) {
  namespace fs = std::filesystem;
  require_gpu();
  fs::create_directories(directory);
  const bench::Registry& registry = bench::registry();
  const bench::Environment environment = bench::make_environment();
  out << info_text(environment);

  bench::Runner runner(registry, environment, options);
  bench::RowWriter writer(out, bench::Format::table, environment, options.seed);
  std::vector<bench::Run> runs;
  int failures = 0;
  for (const std::string& op : registry.op_names())
    for (const bench::Problem& problem : registry.op(op).report_problems(quick))
      run_one(runner, writer, registry, op, problem, &runs, &failures);
  writer.finish();

  const fs::path results = fs::path(directory) / "results.json";
  std::ofstream(results) << bench::results_json(environment, options.seed, runs).dump(2) << "\n";

  std::ofstream markdown(fs::path(directory) / "report.md");
  markdown << "# rooflab report\n\n" << environment.date << ", commit " << environment.commit
           << ", seed " << options.seed << "\n\n```\n" << info_text(environment) << "```\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bench::Run& run = runs[i];
    markdown << "\n## " << run.op << ": " << run.problem << "\n\n"
             << bench::markdown_header(bench::ceiling_name(run.model.ceiling)) << "\n";
    for (const bench::Row& row : run.rows) markdown << bench::markdown_row(row) << "\n";
    markdown << "\n![" << run.op << " ladder](ladder-" << i << ".png)\n";
  }
  markdown << "\n## Roofline\n\n![every measured variant on the roofline](roofline.png)\n";

  const fs::path plot = fs::path(ROOFLAB_SOURCE_DIR) / "scripts" / "plot.py";
  const std::string arguments = " '" + results.string() + "' --out '" + directory + "'";
  const std::string command = "python3 '" + plot.string() + "' ladder" + arguments +
                              " && python3 '" + plot.string() + "' roofline" + arguments;
  if (!fs::exists(plot) || std::system(command.c_str()) != 0)
    out << "rooflab: charts not drawn (needs python3 with matplotlib and " << plot.string() << ")\n";
  out << "report written to " << directory << " (report.md, results.json, ladder-*.png, roofline.png)\n";
  return failures;
}

}  // namespace rooflab::app
