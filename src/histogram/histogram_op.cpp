// The histogram op: problem, model, workspace and the CPU rungs. GPU rungs are in ladder.cu.
#include <algorithm>
#include <string>

#include "cpu/compare.hpp"
#include "cpu/histogram.hpp"
#include "histogram/histogram_workspace.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

namespace {

constexpr struct {
  Distribution dist;
  const char* name;
} distribution_names[] = {{Distribution::uniform, "uniform"}, {Distribution::equal, "equal"},
                          {Distribution::sorted, "sorted"},   {Distribution::zipf, "zipf"},
                          {Distribution::hot, "hot"},         {Distribution::normal, "normal"}};

}  // namespace

DistributionChoice parse_distribution(const std::string& text) {
  const std::size_t colon = text.find(':');
  const std::string name = text.substr(0, colon),
                    mapping = colon == std::string::npos ? "" : text.substr(colon + 1);
  DistributionChoice choice;
  bool known = text.empty();
  for (const auto& entry : distribution_names)
    if (name == entry.name) choice.dist = entry.dist, known = true;
  if (!known || (colon != std::string::npos && mapping != "scaled" && mapping != "identity"))
    throw Error(
        "bench histogram", "--dist",
        "'" + text +
            "' is not a distribution: uniform, equal, sorted, zipf, hot or normal, "
            "optionally followed by :scaled (the default) or :identity (one bin per integer)");
  if (mapping == "identity") choice.mapping = Mapping::identity;
  return choice;
}

std::string distribution_name(DistributionChoice choice) {
  std::string name = "uniform";
  for (const auto& entry : distribution_names)
    if (choice.dist == entry.dist) name = entry.name;
  return choice.mapping == Mapping::identity ? name + ":identity" : name;
}

namespace {

const std::vector<DType> histogram_types{DType::i32, DType::u8, DType::f32, DType::f64};

DType histogram_dtype(const std::string& text) {
  return parse_dtype(text, histogram_types, DType::i32, "bench histogram");
}

std::size_t element_bytes(DType dtype) {
  return visit_histogram_type(dtype, [](auto zero) { return sizeof(zero); });
}

}  // namespace

namespace {

InputShape input_shape(const Problem& problem) {
  const DistributionChoice choice = parse_distribution(problem.dist);
  InputShape shape;
  shape.dist = choice.dist;
  shape.mapping = choice.mapping;
  shape.bins = int(problem.bins);
  shape.n = problem.n;
  return shape;
}

}  // namespace

HistogramWorkspace::HistogramWorkspace(const Problem& problem)
    : n(problem.n),
      bins(int(problem.bins)),
      dtype(histogram_dtype(problem.dtype)),
      shape(input_shape(problem)),
      lo(visit_histogram_type(
          dtype,
          [&](auto zero) { return HistogramData<decltype(zero)>::lo(shape.mapping, bins); })),
      hi(visit_histogram_type(
          dtype,
          [&](auto zero) { return HistogramData<decltype(zero)>::hi(shape.mapping, bins); })),
      in(std::size_t(n) * element_bytes(dtype)),
      counts(std::size_t(bins)) {}

void HistogramWorkspace::refill(std::uint64_t seed) {
  fill_histogram_input(dtype, in.data(), n, seed, shape);
  counts.fill_bytes(0xFF);  // 2^64 - 1 in every bin: a bin nobody writes fails the check
  host_in.clear();
  host_counts.clear();
  binned_by_cub = false;
}

void HistogramWorkspace::prepare_host() {
  if (!host_in.empty() || n == 0) return;
  host_in = in.download();
  host_counts.assign(std::size_t(bins), ~std::uint64_t(0));
}

Check HistogramWorkspace::check(Where where) {
  const std::vector<std::uint64_t> result = where == Where::gpu ? counts.download() : host_counts;
  if (std::int64_t(result.size()) != bins) return Check{false, 0, 0, "no output"};
  // The reference bins the values the device drew: zipf's pow() need not give the host's bits.
  prepare_host();
  const std::vector<std::uint64_t> reference = visit_histogram_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* values = reinterpret_cast<const T*>(host_in.data());
    return cpu::histogram_reference<T>(n, bins, lo, hi,
                                       [values](std::int64_t i) { return values[i]; });
  });
  const auto comparison = cpu::compare_exact(
      result.data(), bins, [&](std::int64_t b) { return reference[std::size_t(b)]; });
  if (comparison.within(0)) return Check{true, 0, 0, "all " + std::to_string(bins) + " bins exact"};
  const auto first = std::size_t(comparison.worst_index);
  std::string detail = std::to_string(std::int64_t(comparison.max_error)) +
                       " bins differ, the first bin " + std::to_string(first) + ": got " +
                       std::to_string(result[first]) + ", expected " +
                       std::to_string(reference[first]);
  if (binned_by_cub)
    detail +=
        " (CUB bins floats and doubles as int((v - lo) * (bins / (hi - lo))) in their own type, "
        "which can differ from the rule at bin edges)";
  return Check{false, comparison.max_error, 0, detail};
}

namespace {

Problem histogram_problem(std::int64_t n, DType dtype, std::int64_t bins, Distribution dist) {
  Problem problem;
  problem.n = n;
  problem.dtype = dtype_name(dtype);
  problem.bins = bins;
  problem.dist = distribution_name({dist, Mapping::scaled});
  return problem;
}

ROOFLAB_OP(Op{
    "histogram",
    "The memory-basics lab's histogram: n values counted into evenly spaced bins (reads every "
    "value once)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = 50'000'000;  // the memory-basics lab's size
      if (problem.bins == 0) problem.bins = 256;
      require(problem.n >= 1, "bench histogram", "--n", "must be at least 1");
      require(problem.bins >= 1 && problem.bins <= (1 << 24), "bench histogram", "--bins",
              "must be in [1, 2^24]");
      problem.dtype = dtype_name(histogram_dtype(problem.dtype));
      problem.dist = distribution_name(parse_distribution(problem.dist));
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", " + problem.dtype + ", " +
             std::to_string(problem.bins) + " bins, " + problem.dist;
    },
    [](const Problem& problem) {
      const double bytes =
          double(problem.n) * double(element_bytes(histogram_dtype(problem.dtype))) +
          double(problem.bins) * sizeof(std::uint64_t);
      return Model{bytes, 0, Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<HistogramWorkspace>(problem);
    },
    [](bool quick) {
      const auto uniform = Distribution::uniform, equal = Distribution::equal;
      if (quick)
        return std::vector<Problem>{histogram_problem(1 << 22, DType::i32, 256, uniform),
                                    histogram_problem(1 << 22, DType::i32, 65536, uniform),
                                    histogram_problem(1 << 22, DType::i32, 256, equal),
                                    histogram_problem(1 << 24, DType::u8, 256, uniform),
                                    histogram_problem(1 << 22, DType::f32, 256, uniform)};
      // The memory-basics lab's 50M int32 first (its CPU, naive and shared-memory table), then the
      // targets.
      const std::int64_t seed_n = 50'000'000;
      return std::vector<Problem>{histogram_problem(seed_n, DType::i32, 256, uniform),
                                  histogram_problem(seed_n, DType::i32, 4096, uniform),
                                  histogram_problem(seed_n, DType::i32, 65536, uniform),
                                  histogram_problem(seed_n, DType::i32, 256, equal),
                                  histogram_problem(std::int64_t(1) << 30, DType::u8, 256, uniform),
                                  histogram_problem(seed_n, DType::f32, 256, uniform)};
    },
    {"--n", "--bins"},
});

// Rung 0 — the CPU loop, rooflab's stand-in for the memory-basics lab's CPU version (timed there,
// not shown): one core binning and counting value by value.
ROOFLAB_VARIANT(Variant{"histogram", 0, "cpu-loop",
                        "one CPU core, one pass (in place of the memory-basics lab's CPU version)",
                        Where::cpu, false,
                        at_most_n(std::int64_t(1) << 28, "one core would take seconds per run"),
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          visit_histogram_type(w.dtype, [&](auto zero) {
                            using T = decltype(zero);
                            cpu::histogram_serial(reinterpret_cast<const T*>(w.host_in.data()), w.n,
                                                  w.bins, w.lo, w.hi, w.host_counts.data());
                          });
                        })});

// Rungs 30 and 31 — the careful CPU baselines (cpu::histogram_fast): the bin by a multiply and one
// comparison with a table of the rule's edges, or a shift, rather than a division, bytes counted by
// value and folded once; one core, then every core with a histogram of its own. "vs CPU" is against
// the faster CPU rung of the run.
void run_fast_cpu(HistogramWorkspace& w, bool every_core) {
  w.prepare_host();
  // Poisoned (bins words): the counts another CPU rung left must not pass this one's check.
  std::fill(w.host_counts.begin(), w.host_counts.end(), ~std::uint64_t(0));
  visit_histogram_type(w.dtype, [&](auto zero) {
    using T = decltype(zero);
    cpu::histogram_fast(reinterpret_cast<const T*>(w.host_in.data()), w.n, w.bins, w.lo, w.hi,
                        w.host_counts.data(), every_core);
  });
}

ROOFLAB_VARIANT(Variant{
    "histogram", 30, "cpu-fast-bins",
    "one CPU core binning by a multiply and a table of the rule's edges, bytes by value",
    Where::cpu, false, at_most_n(std::int64_t(1) << 28, "one core would take seconds per run"),
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t) { run_fast_cpu(w, false); })});
ROOFLAB_VARIANT(Variant{
    "histogram", 31, "cpu-threads", "every CPU core, cpu-fast-bins with a histogram per core",
    Where::cpu, false, no_limit,
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t) { run_fast_cpu(w, true); })});

}  // namespace
}  // namespace rooflab::bench
