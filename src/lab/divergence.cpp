// The divergence op: problem, workspace and the CPU rung. GPU rungs are in divergence.cu.
#include "lab/divergence.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "bench/random.hpp"
#include "cpu/compare.hpp"
#include "cpu/lab.hpp"
#include "lab/patterns.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

DivergenceWorkspace::DivergenceWorkspace(std::int64_t n, int spacing)
    : n(n), spacing(spacing), iterations(lab::heavy_iterations), in(n), out(n) {}

void DivergenceWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  fill_random(in.data(), n, seed, nullptr);
  out.fill_bytes(0xFF);  // NaN: an element no thread writes fails the check
  host_in.clear();
  host_out.clear();
}

void DivergenceWorkspace::prepare_host() {
  if (!host_in.empty()) return;
  host_in = in.download();
  host_out.assign(n, std::numeric_limits<float>::quiet_NaN());
}

Check DivergenceWorkspace::check(Where where) {
  const std::vector<float> result = where == Where::gpu ? out.download() : host_out;
  if (std::int64_t(result.size()) != n) return Check{false, 0, 0, "no output"};
  // x <- 0.75 x + y contracts: each step's rounding (at most 2 in float) is damped by 0.75, so the
  // float result stays within ~7 ulp of the exact one; 16 ulp leaves room for either rounding.
  const double tolerance = std::ldexp(1.0, -20);
  const auto comparison = cpu::compare_relative(
      result.data(), n,
      [&](std::int64_t i) {
        const double y = random_float(seed_, std::uint64_t(i));
        return lab::is_heavy(i, spacing) ? lab::heavy_work(y, iterations) : y;
      },
      std::ldexp(1.0, -100));
  return Check{comparison.within(tolerance), comparison.max_error, tolerance,
               comparison.describe()};
}

namespace {

int heavy_per_warp(const Problem& problem) { return int(problem.m); }
int spacing_of(const Problem& problem) { return lab::warp_size / heavy_per_warp(problem); }

ROOFLAB_OP(Op{
    "divergence",
    "heavy work for --m of every 32 elements (16: threadIdx.x % 2, the memory-basics lab; 1: one "
    "busy lane)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 22;
      if (problem.m == 0) problem.m = 16;
      require(problem.n >= 1, "bench divergence", "--n", "must be at least 1");
      require(problem.m == 1 || problem.m == 2 || problem.m == 4 || problem.m == 8 ||
                  problem.m == 16 || problem.m == 32,
              "bench divergence", "--m", "heavy elements per 32 must be 1, 2, 4, 8, 16 or 32");
      problem.dtype = "float";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", " + std::to_string(problem.m) +
             " heavy of every 32 (" + std::to_string(lab::heavy_iterations) + " iterations each)";
    },
    [](const Problem& problem) {
      const double heavy = double((problem.n + spacing_of(problem) - 1) / spacing_of(problem));
      return Model{8.0 * double(problem.n), 2.0 * lab::heavy_iterations * heavy,
                   Ceiling::fp32_peak};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<DivergenceWorkspace>(problem.n, spacing_of(problem));
    },
    [](bool quick) {
      std::vector<Problem> problems;
      for (const int heavy : {16, 1}) {
        Problem problem;
        problem.n = std::int64_t(1) << (quick ? 18 : 22);
        problem.m = heavy;
        problems.push_back(problem);
      }
      return problems;
    },
    {"--n", "--m"},
});

// Rung 0 — every CPU core, the branch per element (a CPU core has no lanes to keep in step).
ROOFLAB_VARIANT(Variant{
    "divergence", 0, "cpu-parallel", "all CPU cores, one element at a time", Where::cpu, false,
    no_limit, on<DivergenceWorkspace>([](DivergenceWorkspace& w, cudaStream_t) {
      w.prepare_host();
      cpu::heavy_or_copy(w.host_in.data(), w.host_out.data(), w.n, w.spacing, w.iterations);
    })});

}  // namespace
}  // namespace rooflab::bench
