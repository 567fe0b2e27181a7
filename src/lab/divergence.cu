// The divergence ladder (the memory-basics lab, the limiting-factors lecture): the same heavy
// elements, assigned to threads so that a warp's lanes disagree on the branch, or agree.
#include <cstdint>

#include "lab/divergence.hpp"
#include "lab/patterns.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr int block_threads = 256;

unsigned blocks_for(std::int64_t threads) {
  return unsigned((threads + block_threads - 1) / block_threads);
}

// Rung 1 — branch per lane (the memory-basics lab's threadIdx.x % 2; the limiting-factors lecture's
// one busy thread).
// Thread i takes element i, so the heavy elements sit in every warp: the warp runs the heavy loop
// with only the heavy lanes active, then the light path with the others. A warp costs as much as
// its slowest lane: with 16 heavy lanes half the lanes idle through the loop, with 1, 31 of 32.
__global__ void heavy_by_lane(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                              int spacing, int iterations) {
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i >= n) return;
  const float y = in[i];
  if (lab::is_heavy(i, spacing))
    out[i] = lab::heavy_work(y, iterations);
  else
    out[i] = y;
}

// Rung 2 — branch per warp (the memory-basics lab's fix: decide by the warp index).
// The warp-sorted mapping gives each tile's first warp its 32 heavy elements and the other warps
// the light ones, so all lanes of a warp take the same branch: the heavy loop runs with 32 active
// lanes and 32 / heavy-per-warp times fewer warps run it. The loads become mildly strided.
__global__ void heavy_by_warp(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                              int spacing, int iterations) {
  const std::int64_t t = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  const std::int64_t tile = std::int64_t(lab::warp_size) * spacing;  // a power of two
  const int r = int(t & (tile - 1));
  const std::int64_t i = (t - r) + lab::warp_sorted_offset(r, spacing);
  if (i >= n) return;
  const float y = in[i];
  const int warp_in_tile = r / lab::warp_size;
  if (warp_in_tile == 0)
    out[i] = lab::heavy_work(y, iterations);
  else
    out[i] = y;
}

ROOFLAB_VARIANT(Variant{"divergence", 1, "lane-branch",
                        "thread i takes element i: heavy and light lanes share warps", Where::gpu,
                        false, no_limit,
                        on<DivergenceWorkspace>([](DivergenceWorkspace& w, cudaStream_t stream) {
                          heavy_by_lane<<<blocks_for(w.n), block_threads, 0, stream>>>(
                              w.in.data(), w.out.data(), w.n, w.spacing, w.iterations);
                          detail::check_launch("bench divergence", "heavy_by_lane");
                        })});

ROOFLAB_VARIANT(Variant{"divergence", 2, "warp-branch",
                        "heavy elements in whole warps (vs prev = divergence slowdown)", Where::gpu,
                        false, no_limit,
                        on<DivergenceWorkspace>([](DivergenceWorkspace& w, cudaStream_t stream) {
                          const std::int64_t tile = std::int64_t(lab::warp_size) * w.spacing;
                          const std::int64_t threads = (w.n + tile - 1) / tile * tile;
                          heavy_by_warp<<<blocks_for(threads), block_threads, 0, stream>>>(
                              w.in.data(), w.out.data(), w.n, w.spacing, w.iterations);
                          detail::check_launch("bench divergence", "heavy_by_warp");
                        })});

}  // namespace
}  // namespace rooflab::bench
