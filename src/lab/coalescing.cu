// The coalescing ladder (the limiting-factors lecture): the same add, the same bytes, different
// element-to-thread mappings. What changes is how many 32-byte sectors one warp instruction
// touches.
#include <cstdint>

#include "lab/coalescing.hpp"
#include "lab/patterns.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr int block_threads = 256;

unsigned blocks_for(std::int64_t threads) {
  return unsigned((threads + block_threads - 1) / block_threads);
}

// Rungs 1, 2, 4, 6, 8 — block-stride, k elements per thread (the limiting-factors lecture's add:
// k = 2 on its slide; the timed code's k is not stated).
// Block b owns k * 256 elements; at step j thread t takes b * 256k + j * 256 + t, so a warp's 32
// loads are 32 consecutive floats: one 128-byte line, 4 sectors, every byte used. Larger k only
// puts more independent loads in flight per thread.
template <int K>
__global__ void add_block_stride(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ out, std::int64_t n) {
  const std::int64_t first = std::int64_t(blockIdx.x) * (block_threads * K) + threadIdx.x;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t i = first + std::int64_t(j) * block_threads;
    if (i < n) out[i] = a[i] + b[i];
  }
}

// Rungs 3, 5, 7, 9 — contiguous chunk of k elements per thread (the limiting-factors lecture's
// stupid_add; its slide's scheme is k = 2).
// The block owns the same k * 256 elements, but thread t takes k neighbours: at each step the
// warp's loads are k floats apart, spread over k lines (32 sectors once k >= 8) of which it uses 4
// bytes per sector; stores become partial-sector writes. The lecture measured 3.2x (18.6 against
// 5.8-5.9 ms; it says four times) without saying the timed code's k; a remark in its questions recalls
// about 3x with 8 per thread, which may be the same measurement.
template <int K>
__global__ void add_contiguous_chunk(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out, std::int64_t n) {
  const std::int64_t first = (std::int64_t(blockIdx.x) * block_threads + threadIdx.x) * K;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const std::int64_t i = first + j;
    if (i < n) out[i] = a[i] + b[i];
  }
}

// Rungs 10-15 — the stride sweep: one element per thread, a warp's lanes `Stride` floats apart.
// A warp touches min(32, 4 * Stride) sectors for 128 useful bytes; the tile's other warps use the
// rest of those sectors, so DRAM traffic barely grows while the requests to L1/L2 grow with the
// stride: this sweep isolates the cost of scattered requests from the amount of work per thread.
template <int Stride>
__global__ void add_strided(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ out, std::int64_t n) {
  constexpr std::int64_t tile = std::int64_t(lab::warp_size) * Stride;
  const std::int64_t t = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  const std::int64_t i = t / tile * tile + lab::strided_offset(int(t % tile), Stride);
  if (i < n) out[i] = a[i] + b[i];
}

// Rung 16 — a random permutation inside each warp's 32 elements (the lecture's suggestion).
// Lane l takes element permutation[l] of its warp's 32: the same single 128-byte line as rung 1,
// in a scrambled order. The coalescer serves a warp by the set of lines it touches, not by the
// order of its lanes, so on any GPU since Fermi this costs (nearly) nothing.
__global__ void add_warp_permuted(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ out, std::int64_t n,
                                  const std::uint8_t* __restrict__ permutation) {
  const std::int64_t t = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  const std::int64_t i = t - t % lab::warp_size + permutation[t % lab::warp_size];
  if (i < n) out[i] = a[i] + b[i];
}

template <int K>
void launch_block_stride(CoalescingWorkspace& w, cudaStream_t stream) {
  add_block_stride<K><<<blocks_for((w.n + K - 1) / K), block_threads, 0, stream>>>(
      w.a.data(), w.b.data(), w.out.data(), w.n);
  detail::check_launch("bench coalescing", "add_block_stride");
}

template <int K>
void launch_contiguous_chunk(CoalescingWorkspace& w, cudaStream_t stream) {
  add_contiguous_chunk<K><<<blocks_for((w.n + K - 1) / K), block_threads, 0, stream>>>(
      w.a.data(), w.b.data(), w.out.data(), w.n);
  detail::check_launch("bench coalescing", "add_contiguous_chunk");
}

template <int Stride>
void launch_strided(CoalescingWorkspace& w, cudaStream_t stream) {
  constexpr std::int64_t tile = std::int64_t(lab::warp_size) * Stride;
  add_strided<Stride><<<blocks_for((w.n + tile - 1) / tile * tile), block_threads, 0, stream>>>(
      w.a.data(), w.b.data(), w.out.data(), w.n);
  detail::check_launch("bench coalescing", "add_strided");
}

void launch_warp_permuted(CoalescingWorkspace& w, cudaStream_t stream) {
  const std::int64_t threads = (w.n + lab::warp_size - 1) / lab::warp_size * lab::warp_size;
  add_warp_permuted<<<blocks_for(threads), block_threads, 0, stream>>>(
      w.a.data(), w.b.data(), w.out.data(), w.n, w.lane_permutation.data());
  detail::check_launch("bench coalescing", "add_warp_permuted");
}

Variant rung(int number, const char* name, const char* idea,
             void (*launch)(CoalescingWorkspace&, cudaStream_t)) {
  return Variant{"coalescing", number, name,     idea,
                 Where::gpu,   false,  no_limit, on<CoalescingWorkspace>(launch)};
}

ROOFLAB_VARIANT(rung(1, "one-per-thread", "thread t adds element t: each warp load is one line",
                     launch_block_stride<1>));
ROOFLAB_VARIANT(rung(2, "block-stride-2", "2 per thread, 256 apart: still one line per warp load",
                     launch_block_stride<2>));
ROOFLAB_VARIANT(rung(3, "contiguous-2", "2 neighbours per thread (stupid_add): 2 lines per load",
                     launch_contiguous_chunk<2>));
ROOFLAB_VARIANT(rung(4, "block-stride-4", "4 per thread, 256 apart: one line per warp load",
                     launch_block_stride<4>));
ROOFLAB_VARIANT(rung(5, "contiguous-4", "4 neighbours per thread: 4 lines per warp load",
                     launch_contiguous_chunk<4>));
ROOFLAB_VARIANT(rung(6, "block-stride-8", "8 per thread, 256 apart: one line per warp load",
                     launch_block_stride<8>));
ROOFLAB_VARIANT(rung(7, "contiguous-8", "8 neighbours per thread: 8 lines per warp load",
                     launch_contiguous_chunk<8>));
ROOFLAB_VARIANT(rung(8, "block-stride-16", "16 per thread, 256 apart: one line per warp load",
                     launch_block_stride<16>));
ROOFLAB_VARIANT(rung(9, "contiguous-16", "16 neighbours per thread: 16 lines per warp load",
                     launch_contiguous_chunk<16>));
ROOFLAB_VARIANT(rung(10, "stride-1", "one element per thread, lanes 1 apart: 4 sectors per load",
                     launch_strided<1>));
ROOFLAB_VARIANT(rung(11, "stride-2", "lanes 2 floats apart: 8 sectors per warp load",
                     launch_strided<2>));
ROOFLAB_VARIANT(rung(12, "stride-4", "lanes 4 floats apart: 16 sectors per warp load",
                     launch_strided<4>));
ROOFLAB_VARIANT(rung(13, "stride-8", "lanes 8 floats apart: 32 sectors, 4 bytes used of each 32",
                     launch_strided<8>));
ROOFLAB_VARIANT(rung(14, "stride-16", "lanes 16 floats apart: 32 sectors in 16 lines",
                     launch_strided<16>));
ROOFLAB_VARIANT(rung(15, "stride-32", "lanes 32 floats apart: 32 sectors in 32 lines",
                     launch_strided<32>));
ROOFLAB_VARIANT(rung(16, "warp-permuted", "a random permutation inside each warp's 32 elements",
                     launch_warp_permuted));

}  // namespace
}  // namespace rooflab::bench
