// The coalescing op: problem, workspace and the CPU rung. GPU rungs are in coalescing.cu.
#include "lab/coalescing.hpp"

#include <numeric>
#include <utility>

#include "bench/random.hpp"
#include "cpu/add.hpp"
#include "lab/patterns.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

std::vector<std::uint8_t> random_lane_permutation(std::uint64_t seed) {
  std::vector<std::uint8_t> permutation(lab::warp_size);
  std::iota(permutation.begin(), permutation.end(), std::uint8_t(0));
  // Indices far from 0..n keep this stream apart from the inputs drawn with the same seed.
  for (int k = lab::warp_size - 1; k > 0; --k)
    std::swap(permutation[k], permutation[random_integer(seed, ~std::uint64_t(k), 0, k)]);
  return permutation;
}

CoalescingWorkspace::CoalescingWorkspace(std::int64_t n) : AddWorkspace(n), lane_permutation(lab::warp_size) {}

void CoalescingWorkspace::refill(std::uint64_t seed) {
  AddWorkspace::refill(seed);
  lane_permutation.upload(random_lane_permutation(seed));
}

namespace {

ROOFLAB_OP(Op{
    "coalescing",
    "lecture 003's add (out = a + b, n floats) with k elements per thread, strides and permutations",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 27;
      require(problem.n >= 1, "bench coalescing", "--n", "must be at least 1");
      problem.dtype = "float";
      return problem;
    },
    [](const Problem& problem) { return "n = " + std::to_string(problem.n) + ", float"; },
    [](const Problem& problem) {
      return Model{12.0 * double(problem.n), double(problem.n), Ceiling::copy_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<CoalescingWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 22 : 27);
      return std::vector<Problem>{problem};
    },
});

// Rung 0 — the CPU loop, for scale.
ROOFLAB_VARIANT(Variant{"coalescing", 0, "cpu-loop", "one CPU core, one loop (for scale)", Where::cpu,
                        false, no_limit, on<CoalescingWorkspace>([](CoalescingWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::add_serial(w.host_a.data(), w.host_b.data(), w.host_out.data(), w.n);
                        })});

}  // namespace
}  // namespace rooflab::bench
