// The histogram op: problem, model, workspace and the CPU rung. GPU rungs are in ladder.cu.
#include <string>

#include "cpu/compare.hpp"
#include "cpu/histogram.hpp"
#include "histogram/histogram_workspace.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

Distribution parse_distribution(const std::string& text) {
  if (text.empty() || text == "uniform") return Distribution::uniform;
  if (text == "equal") return Distribution::equal;
  throw Error("bench histogram", "--dist", "'" + text + "' is not a distribution (uniform, equal)");
}

const char* distribution_name(Distribution dist) {
  return dist == Distribution::equal ? "equal" : "uniform";
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

HistogramWorkspace::HistogramWorkspace(const Problem& problem)
    : n(problem.n), bins(int(problem.bins)), dtype(histogram_dtype(problem.dtype)),
      dist(parse_distribution(problem.dist)),
      lo(visit_histogram_type(dtype, [](auto zero) { return HistogramData<decltype(zero)>::lo; })),
      hi(visit_histogram_type(dtype, [](auto zero) { return HistogramData<decltype(zero)>::hi; })),
      in(std::size_t(n) * element_bytes(dtype)), counts(std::size_t(bins)) {}

void HistogramWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  fill_histogram_input(dtype, in.data(), n, seed, dist);
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
  const std::uint64_t seed = seed_;
  const std::vector<std::uint64_t> reference = visit_histogram_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    return cpu::histogram_reference<T>(n, bins, lo, hi, [&](std::int64_t i) {
      return HistogramData<T>::sample(seed, std::uint64_t(i), dist);
    });
  });
  const auto comparison =
      cpu::compare_exact(result.data(), bins, [&](std::int64_t b) { return reference[std::size_t(b)]; });
  if (comparison.within(0)) return Check{true, 0, 0, "all " + std::to_string(bins) + " bins exact"};
  const auto first = std::size_t(comparison.worst_index);
  std::string detail = std::to_string(std::int64_t(comparison.max_error)) + " bins differ, the first bin " +
                       std::to_string(first) + ": got " + std::to_string(result[first]) + ", expected " +
                       std::to_string(reference[first]);
  if (binned_by_cub)
    detail += " (CUB bins floats as int((v - lo) * float(bins / (hi - lo))), which can differ from the "
              "double rule at bin edges)";
  return Check{false, comparison.max_error, 0, detail};
}

namespace {

Problem histogram_problem(std::int64_t n, DType dtype, std::int64_t bins, Distribution dist) {
  Problem problem;
  problem.n = n;
  problem.dtype = dtype_name(dtype);
  problem.bins = bins;
  problem.dist = distribution_name(dist);
  return problem;
}

ROOFLAB_OP(Op{
    "histogram",
    "seed 000's histogram: n values counted into evenly spaced bins (reads every value once)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = 50'000'000;  // seed 000's size
      if (problem.bins == 0) problem.bins = 256;
      require(problem.n >= 1, "bench histogram", "--n", "must be at least 1");
      require(problem.bins >= 1 && problem.bins <= (1 << 24), "bench histogram", "--bins",
              "must be in [1, 2^24]");
      problem.dtype = dtype_name(histogram_dtype(problem.dtype));
      problem.dist = distribution_name(parse_distribution(problem.dist));
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", " + problem.dtype + ", " + std::to_string(problem.bins) +
             " bins, " + problem.dist;
    },
    [](const Problem& problem) {
      const double bytes = double(problem.n) * double(element_bytes(histogram_dtype(problem.dtype))) +
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
      // Seed 000's 50M int32 first (its CPU, naive and shared-memory table), then the targets.
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

// Rung 0 — the CPU loop, rooflab's stand-in for seed 000's CPU baseline (timed there, not shown):
// one core binning and counting value by value.
ROOFLAB_VARIANT(Variant{
    "histogram", 0, "cpu-loop", "one CPU core, one pass (in place of seed 000's CPU loop)", Where::cpu, false,
    at_most_n(std::int64_t(1) << 28, "one core would take seconds per run"),
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t) {
      w.prepare_host();
      visit_histogram_type(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        cpu::histogram_serial(reinterpret_cast<const T*>(w.host_in.data()), w.n, w.bins, w.lo, w.hi,
                              w.host_counts.data());
      });
    })});

}  // namespace
}  // namespace rooflab::bench
