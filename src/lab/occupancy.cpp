// The occupancy op: problem, workspace and the CPU rung. GPU rungs are in occupancy.cu.
#include "lab/occupancy.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "bench/random.hpp"
#include "cpu/compare.hpp"
#include "cpu/lab.hpp"
#include "lab/patterns.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

OccupancyWorkspace::OccupancyWorkspace(std::int64_t n)
    : n(n), passes(lab::smoothing_passes), in(n), out(n) {}

void OccupancyWorkspace::refill(std::uint64_t seed) {
  fill_random(in.data(), n, seed, nullptr);
  out.fill_bytes(0xFF);  // NaN: an element no thread writes fails the check
  host_in.clear();
  host_out.clear();
}

void OccupancyWorkspace::prepare_host() {
  if (!host_in.empty()) return;
  host_in = in.download();
  host_out.assign(n, std::numeric_limits<float>::quiet_NaN());
}

Check OccupancyWorkspace::check(Where where) {
  const std::vector<float> input = in.download();
  const std::vector<float> result = where == Where::gpu ? out.download() : host_out;
  if (std::int64_t(result.size()) != n) return Check{false, 0, 0, "no output"};
  const std::vector<double> reference = cpu::smooth_tiles_reference(input.data(), n, passes);
  // Values stay within [-1, 1] and each pass adds at most one rounding of 2^-24: the float result
  // is within passes x 2^-24 of the exact one, measured against max(|reference|, 1).
  const double tolerance = passes * std::ldexp(1.0, -24);
  const auto comparison = cpu::compare_relative(
      result.data(), n, [&](std::int64_t i) { return reference[std::size_t(i)]; }, 1.0);
  return Check{comparison.within(tolerance), comparison.max_error, tolerance,
               comparison.describe()};
}

std::string describe(const LaunchFacts& facts) {
  return fmt::format("{} blocks/SM, {:.0f}% occupancy, {} registers, {} B local{}",
                     facts.blocks_per_sm, 100 * facts.occupancy, facts.registers, facts.local_bytes,
                     facts.local_bytes > 0 ? " (spilled)" : "");
}

namespace {

ROOFLAB_OP(Op{
    "occupancy",
    "each warp smooths a 32 x 32 tile in registers: block sizes 32-1024, registers capped (spills)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 24;
      require(problem.n >= 1, "bench occupancy", "--n", "must be at least 1");
      problem.dtype = "float";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", float, " +
             std::to_string(lab::smoothing_passes) + " passes";
    },
    [](const Problem& problem) {
      // Each element is read and written once, and takes an add and a multiply per pass.
      return Model{8.0 * double(problem.n), 2.0 * lab::smoothing_passes * double(problem.n),
                   Ceiling::fp32_peak};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<OccupancyWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 20 : 24);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — every CPU core, a tile at a time.
ROOFLAB_VARIANT(Variant{"occupancy", 0, "cpu-parallel", "all CPU cores, one tile at a time",
                        Where::cpu, false, no_limit,
                        on<OccupancyWorkspace>([](OccupancyWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::smooth_tiles(w.host_in.data(), w.host_out.data(), w.n, w.passes);
                        })});

}  // namespace
}  // namespace rooflab::bench
