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

CoalescingWorkspace::CoalescingWorkspace(std::int64_t n)
    : AddWorkspace(n), lane_permutation(lab::warp_size) {}

void CoalescingWorkspace::refill(std::uint64_t seed) {
  AddWorkspace::refill(seed);
  lane_permutation.upload(random_lane_permutation(seed));
}

namespace {

ROOFLAB_OP(vector_add_op<CoalescingWorkspace>(
    "coalescing",
    "The limiting-factors lecture's add and stupid_add, as out = a + b over n floats, with k "
    "elements per thread, strides and permutations",
    27, 22));

// Rung 0 — the CPU loop, for scale.
ROOFLAB_VARIANT(Variant{"coalescing", 0, "cpu-loop", "one CPU core, one loop (for scale)",
                        Where::cpu, false, no_limit,
                        on<CoalescingWorkspace>([](CoalescingWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::add_serial(w.host_a.data(), w.host_b.data(), w.host_out.data(), w.n);
                        })});

}  // namespace
}  // namespace rooflab::bench
