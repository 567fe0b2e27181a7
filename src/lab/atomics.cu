// The atomics ladder (the limiting-factors lecture): n threads, one counter. From a race, through
// one atomic per thread, to one atomic per warp and one per block.
#include <cstdint>

#include "lab/atomics.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/warp_reduce.cuh"

namespace rooflab::bench {
namespace {

constexpr int block_threads = 256;

// Rung 1 — plain += (the lecture's data race), on purpose.
// `+=` is a load, an add and a store: threads that load the same old value overwrite each other's
// sums. Every thread adds into its block's shared counter (a race compute-sanitizer's racecheck
// reports), then one thread per block adds that into the global counter (a race between blocks,
// which racecheck cannot see: it watches shared memory only). The count comes out far too small.
__global__ void count_plain_add(const std::uint32_t* __restrict__ values, std::int64_t n,
                                unsigned long long* counter) {
  __shared__ unsigned long long block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) block_count += values[i];
  __syncthreads();
  if (threadIdx.x == 0) *counter += block_count;
}

// Rung 2 — one global atomicAdd per thread.
// Correct, but all n updates go to one address: the L2 slice that owns it applies them one after
// another, so the whole GPU runs at the rate of a single memory controller's atomic unit.
__global__ void count_global_atomic(const std::uint32_t* __restrict__ values, std::int64_t n,
                                    unsigned long long* counter) {
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) atomicAdd(counter, static_cast<unsigned long long>(values[i]));
}

// Rung 3 — warp-aggregated: sum the warp's 32 values first, one atomic per warp.
// warp_reduce adds across the lanes (one __reduce_add_sync on sm_80+, five shuffles before); 32
// times fewer updates reach the contended address. Every lane takes part (a lane past n adds 0).
__global__ void count_warp_aggregated(const std::uint32_t* __restrict__ values, std::int64_t n,
                                      unsigned long long* counter) {
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  const unsigned value = i < n ? values[i] : 0u;
  const unsigned warp_sum = detail::warp_reduce(value, Sum{});  // lane 0 holds it
  if (threadIdx.x % 32 == 0 && warp_sum != 0)
    atomicAdd(counter, static_cast<unsigned long long>(warp_sum));
}

// Rung 4 — block-privatized: atomics on a shared-memory counter, one global atomic per block.
// Shared-memory atomics are resolved inside each SM, all SMs at once; only one update per block
// (256 threads) reaches the global counter. Privatize, then merge: the pattern of histograms too.
__global__ void count_block_privatized(const std::uint32_t* __restrict__ values, std::int64_t n,
                                       unsigned long long* counter) {
  __shared__ unsigned block_count;  // at most 256 x 4: 32 bits are plenty
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) atomicAdd(&block_count, values[i]);
  __syncthreads();
  if (threadIdx.x == 0 && block_count != 0)
    atomicAdd(counter, static_cast<unsigned long long>(block_count));
}

using CountKernel = void (*)(const std::uint32_t*, std::int64_t, unsigned long long*);

template <CountKernel kernel>
void launch_count(AtomicsWorkspace& w, cudaStream_t stream) {
  ROOFLAB_CUDA("bench atomics", "zeroing the counter",
               cudaMemsetAsync(w.counter.data(), 0, sizeof(unsigned long long), stream));
  const auto blocks = unsigned((w.n + block_threads - 1) / block_threads);
  kernel<<<blocks, block_threads, 0, stream>>>(w.values.data(), w.n, w.counter.data());
  detail::check_launch("bench atomics", "count kernel");
}

ROOFLAB_VARIANT(Variant{"atomics",
                        1,
                        "plain-add",
                        "counter += value without atomics: a data race",
                        Where::gpu,
                        false,
                        no_limit,
                        on<AtomicsWorkspace>(launch_count<count_plain_add>),
                        {},
                        {},
                        "threads overwrite each other's += (a data race)"});
ROOFLAB_VARIANT(Variant{"atomics", 2, "global-atomic", "one atomicAdd per thread on one address",
                        Where::gpu, false, no_limit,
                        on<AtomicsWorkspace>(launch_count<count_global_atomic>)});
ROOFLAB_VARIANT(Variant{"atomics", 3, "warp-aggregated", "warp sum first: one atomicAdd per warp",
                        Where::gpu, false, no_limit,
                        on<AtomicsWorkspace>(launch_count<count_warp_aggregated>)});
ROOFLAB_VARIANT(Variant{"atomics", 4, "block-privatized",
                        "shared-memory atomics, one global atomic per block", Where::gpu, false,
                        no_limit, on<AtomicsWorkspace>(launch_count<count_block_privatized>)});

}  // namespace
}  // namespace rooflab::bench
