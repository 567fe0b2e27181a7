#pragma once
// The index mappings and per-element formulas of the limiting-factor lab (the limiting-factors
// lecture), shared by the kernels, the CPU baselines, the references and the CPU tests (which prove
// every mapping a bijection, so that a rung can only be slow, never wrong, because of its access
// pattern).
#include <cstdint>

#if defined(__CUDACC__)
#define ROOFLAB_LAB_HD __host__ __device__
#else
#define ROOFLAB_LAB_HD
#endif

namespace rooflab::lab {

constexpr int warp_size = 32;

// Coalescing, the stride sweep: one element per thread, the 32 lanes of a warp `stride` elements
// apart. A tile of 32 * stride threads covers 32 * stride elements: thread r of the tile
// (0 <= r < 32 * stride) takes offset (r % 32) * stride + r / 32, a bijection on [0, 32 * stride).
ROOFLAB_LAB_HD constexpr int strided_offset(int r, int stride) {
  return (r % warp_size) * stride + r / warp_size;
}

// Divergence: in every group of 32 elements, `heavy_per_warp` of them need the heavy work, evenly
// spaced (16: every second element, the memory-basics lab's threadIdx.x % 2; 1: one element, the
// limiting-factors lecture's single busy thread). spacing = 32 / heavy_per_warp, a power of two.
ROOFLAB_LAB_HD constexpr bool is_heavy(std::int64_t i, int spacing) {
  return (i & (spacing - 1)) == 0;
}

// Divergence, the warp-sorted mapping: a tile of 32 * spacing elements holds 32 heavy ones; the
// tile's first warp takes exactly those (lane l: offset l * spacing), the other warps take the
// light ones in order. Thread r of the tile (0 <= r < 32 * spacing) gets a bijection on
// [0, 32 * spacing), and whether a thread works hard depends on its warp only.
ROOFLAB_LAB_HD constexpr int warp_sorted_offset(int r, int spacing) {
  if (r < warp_size) return r * spacing;
  const int light = r - warp_size;  // rank among the tile's light elements
  return light / (spacing - 1) * spacing + 1 + light % (spacing - 1);
}

// The heavy work: x <- 0.75 x + y, `iterations` times from x = y. A contraction, so rounding
// errors do not grow: |x| <= 4 |y| and the float result stays within a few ulp of the exact one.
constexpr int heavy_iterations = 2048;
template <class T>
ROOFLAB_LAB_HD T heavy_work(T y, int iterations) {
  T x = y;
  for (int k = 0; k < iterations; ++k) x = x * T(0.75) + y;
  return x;
}

// Occupancy: each tile of 32 x 32 elements is held by one warp, lane l keeping column l
// (elements tile * 1024 + k * 32 + l, k = 0..31: 32 floats per thread, the register pressure of
// the lesson; a partial last tile reads zeros past n). Each pass smooths every column around its
// ring, in order: x[k] <- (x[k] + x[k + 1 mod 32]) / 2. The halving is exact and the average
// never exceeds the larger input, so each pass adds at most one rounding of size <= 1 ulp of 1.
constexpr int tile_rows = 32;
constexpr int smoothing_passes = 128;
template <class T>
ROOFLAB_LAB_HD void smooth_column(T (&x)[tile_rows], int passes) {
  for (int pass = 0; pass < passes; ++pass) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int k = 0; k < tile_rows; ++k) x[k] = (x[k] + x[(k + 1) % tile_rows]) * T(0.5);
  }
}

}  // namespace rooflab::lab
