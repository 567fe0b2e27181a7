// rooflab::histogram_even, the production path: the ladder's best rungs generalized to every
// type, any n (64-bit), unaligned inputs and up to 2^24 bins, with the exact bin rule.
//
//   uint8             count_byte_values: lane-private 16-bit counters of the 256 byte values, folded
//                     into the bins at the end; the data's bins never matter to the hot loop.
//   int32, float,     count_values_shared with 32-bit counters (one copy per warp where they fit)
//   double            up to ~19K bins, 16-bit packed counters up to ~115K bins (the sizes follow
//                     the device's shared memory), count_values_global beyond.
// Every value path reads 16-byte vectors, 64 bytes in flight per thread, merges runs of equal
// values before counting, and bins with bin_of (exact by the argument in even_bins.cuh).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "histogram/counting.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"

namespace rooflab {
namespace {

using detail::EvenBins;
using detail::VectorSplit;

// uint8: each lane owns 256 16-bit counters, two per 32-bit word, laid out so that all of a lane's
// words sit in the lane's own bank: word (r, lane) of a warp's 128 x 32 block holds the lane's
// counts of values 2r and 2r + 1. Whatever the bytes, the 32 lanes of a warp touch 32 banks:
// no conflicts, which is what limits shared-memory atomics on a single histogram per block.
// The counters are private, but they are still bumped with atomicAdd: a shared atomic whose
// result is unused does not wait for the read, so no load-add-store chain stalls the thread.
constexpr int byte_rows = 128;
constexpr int byte_words_per_warp = byte_rows * 32;  // 16 KB
constexpr int byte_loads = 4;  // 16-byte loads per thread per round: 64 bytes in flight
constexpr int byte_max_threads = 512;

// Sums every lane's counters of the block into the output bins and clears them. A word half
// holds at most 65535, a warp's 32 lanes and 16 warps at most 2^25: 32-bit sums suffice.
__device__ void merge_lane_counts(std::uint32_t* lane_counts, const int* bin_of_value,
                                         unsigned long long* counts) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32, warps = int(blockDim.x) / 32;
  __syncthreads();
  for (int row = warp; row < byte_rows; row += warps) {
    std::uint32_t low = 0, high = 0;
    for (int w = 0; w < warps; ++w) {
      std::uint32_t& word = lane_counts[w * byte_words_per_warp + row * 32 + lane];
      low += word & 0xFFFF;
      high += word >> 16;
      word = 0;
    }
    low = __reduce_add_sync(0xFFFFFFFF, low);
    high = __reduce_add_sync(0xFFFFFFFF, high);
    if (lane == 0) {
      const int low_bin = bin_of_value[2 * row], high_bin = bin_of_value[2 * row + 1];
      if (low != 0 && low_bin >= 0) detail::add_count(counts, low_bin, low);
      if (high != 0 && high_bin >= 0) detail::add_count(counts, high_bin, high);
    }
  }
  __syncthreads();
}

__global__ void __launch_bounds__(byte_max_threads)
    count_byte_values(const std::uint8_t* __restrict__ in, VectorSplit split, EvenBins rule,
                      unsigned long long* __restrict__ counts) {
  extern __shared__ std::uint32_t lane_counts[];  // warps x byte_words_per_warp
  __shared__ int bin_of_value[256];               // -1: not counted
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  std::uint32_t* mine = lane_counts + warp * byte_words_per_warp + lane;
  for (int row = 0; row < byte_rows; ++row) mine[row * 32] = 0;
  for (int v = int(threadIdx.x); v < 256; v += int(blockDim.x))
    bin_of_value[v] = detail::is_counted(v, rule) ? detail::exact_bin(v, rule) : -1;
  __syncthreads();

  const auto count = [&](std::uint32_t value) {
    atomicAdd(mine + (value >> 1) * 32, 1u << ((value & 1) * 16));
  };
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) count(in[thread]);
  if (thread < split.tail) count(in[split.tail_start + thread]);

  // A lane's counter grows by at most one per byte the lane reads: after at most 65535 bytes
  // per lane (2 above, 64 per round) they are merged and cleared, before any half can wrap.
  constexpr int rounds_between_merges = (65535 - 2) / (byte_loads * 16);
  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * byte_loads;
  int rounds = 0;
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += gridDim.x * round) {
    if (rounds++ == rounds_between_merges) {
      merge_lane_counts(lane_counts, bin_of_value, counts);
      rounds = 1;
    }
    uint4 data[byte_loads];
#pragma unroll
    for (int k = 0; k < byte_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      if (v < split.vectors) data[k] = vectors[v];
    }
#pragma unroll
    for (int k = 0; k < byte_loads; ++k) {
      if (first + k * std::int64_t(blockDim.x) + threadIdx.x < split.vectors) {
        const std::uint32_t words[4] = {data[k].x, data[k].y, data[k].z, data[k].w};
#pragma unroll
        for (const std::uint32_t word : words) {
          count(word & 0xFF);
          count((word >> 8) & 0xFF);
          count((word >> 16) & 0xFF);
          count(word >> 24);
        }
      }
    }
  }
  merge_lane_counts(lane_counts, bin_of_value, counts);
}

constexpr const char* op_name = "histogram_even";

void check_arguments(const void* in, std::size_t alignment, std::int64_t n, int bins, double lo, double hi,
                     const std::uint64_t* counts) {
  require(n >= 0, op_name, "n", "must not be negative, got " + std::to_string(n));
  require(bins >= 1 && bins <= (1 << 24), op_name, "bins",
          "must be in [1, 2^24], got " + std::to_string(bins));
  require(!std::isnan(lo), op_name, "lo", "is NaN");
  require(!std::isnan(hi), op_name, "hi", "is NaN");
  require(std::isfinite(lo), op_name, "lo", "must be finite");
  require(std::isfinite(hi), op_name, "hi", "must be finite");
  require(lo < hi, op_name, "hi", "must be greater than lo");
  // The rule computes (v - lo) * bins / (hi - lo): every step must stay finite.
  require(std::isfinite(hi - lo) && std::isfinite((hi - lo) * bins) && std::isfinite(bins / (hi - lo)),
          op_name, "hi", "hi - lo split into that many bins overflows double precision");
  require(counts != nullptr, op_name, "counts", "is null");
  require(n == 0 || in != nullptr, op_name, "in", "is null");
  require(reinterpret_cast<std::uintptr_t>(in) % alignment == 0, op_name, "in",
          "is not aligned to its element type");
}

void histogram_bytes(const std::uint8_t* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                     cudaStream_t stream) {
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  // Two blocks per SM, each with as many warps as their 16 KB of counters allow (7 on Hopper).
  const int warps = std::max(1, std::min(byte_max_threads / 32,
                                         (limits.shared_per_sm / 2 - 2048) / (byte_words_per_warp * 4)));
  const int threads = warps * 32;
  const std::size_t shared = std::size_t(warps) * byte_words_per_warp * 4;
  const VectorSplit split = detail::split_into_vectors(in, n);
  const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(count_byte_values), threads,
                                                  shared, split.vectors, std::int64_t(threads) * byte_loads,
                                                  op_name);
  count_byte_values<<<blocks, threads, shared, stream>>>(in, split, rule, counts);
  detail::check_launch(op_name, "count_byte_values");
}

template <class T>
void histogram_values(const T* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                      cudaStream_t stream) {
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  const VectorSplit split = detail::split_into_vectors(in, n);
  const std::size_t bins = std::size_t(rule.bins);
  if (bins * 4 <= std::size_t(limits.shared_per_sm) / 3) {
    // 32-bit counters leaving room for 3 blocks per SM; a copy per warp while a quarter of the
    // SM's shared memory holds them (16 copies of 256 bins, 3 of 4096, 1 of 16384).
    constexpr int threads = detail::shared_value_threads<false>();
    const int copies = int(std::max<std::size_t>(
        1, std::min<std::size_t>(threads / 32, std::size_t(limits.shared_per_sm) / 4 / (bins * 4))));
    const std::size_t shared = std::size_t(copies) * bins * 4;
    const auto kernel = detail::count_values_shared<T, false>;
    const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                                    split.vectors, threads * detail::value_loads, op_name);
    kernel<<<blocks, threads, shared, stream>>>(in, split, rule, copies, counts);
    detail::check_launch(op_name, "count_values_shared<32-bit>");
  } else if ((bins + 1) / 2 * 4 + 1024 <= std::size_t(limits.shared_per_block)) {  // 1 KB: static
    constexpr int threads = detail::shared_value_threads<true>();
    const std::size_t shared = (bins + 1) / 2 * 4;
    const auto kernel = detail::count_values_shared<T, true>;
    const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                                    split.vectors, threads * detail::value_loads, op_name);
    kernel<<<blocks, threads, shared, stream>>>(in, split, rule, 1, counts);
    detail::check_launch(op_name, "count_values_shared<16-bit>");
  } else {
    constexpr int threads = detail::global_value_threads;
    const auto kernel = detail::count_values_global<T>;
    const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, 0,
                                                    split.vectors, threads * detail::value_loads, op_name);
    kernel<<<blocks, threads, 0, stream>>>(in, split, rule, counts);
    detail::check_launch(op_name, "count_values_global");
  }
}

}  // namespace

template <class T>
void histogram_even(const T* in, std::int64_t n, int bins, double lo, double hi, std::uint64_t* counts,
                    cudaStream_t stream) {
  check_arguments(in, alignof(T), n, bins, lo, hi, counts);
  ROOFLAB_CUDA(op_name, cudaMemsetAsync(counts, 0, std::size_t(bins) * sizeof(std::uint64_t), stream));
  if (n == 0) return;
  const EvenBins rule = detail::make_even_bins(bins, lo, hi);
  auto* const totals = reinterpret_cast<unsigned long long*>(counts);  // atomicAdd's 64-bit type
  if constexpr (std::is_same_v<T, std::uint8_t>) histogram_bytes(in, n, rule, totals, stream);
  else histogram_values(in, n, rule, totals, stream);
}

template void histogram_even(const std::uint8_t*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const std::int32_t*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const float*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const double*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);

}  // namespace rooflab
