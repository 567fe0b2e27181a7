// rooflab::histogram_even, the production path: the ladder's best rungs generalized to every
// type, any n (64-bit), unaligned inputs and up to 2^24 bins, with the exact bin rule.
//
//   uint8             count_byte_values: lane-private 16-bit counters of the 256 byte values,
//                     bumped with plain loads and stores (no atomics), folded into the bins at
//                     the end; the data's bins never matter to the hot loop.
//   int32, float,     count_values_shared with 32-bit counters (one copy per warp where they fit)
//   double            up to ~19K bins, 16-bit packed counters up to ~115K bins (the sizes follow
//                     the device's shared memory), count_values_global beyond.
// Every value path reads 16-byte vectors, 64 bytes in flight per thread, and bins without a
// branch by the cheapest evaluation that provably gives the rule's bins (even_bins.hpp/.cuh),
// single precision for int32 and float data wherever its error bound allows.
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

// uint8: no atomics. Each lane owns two copies of 16-bit counters for the 256 byte values, the two
// halves of one 32-bit word per value: copy 0 counts the bytes at even positions of the 32-bit
// words the lane reads, copy 1 those at odd positions. Word (value, lane) of a warp's 256 x 32
// block lies in the lane's own bank, so a warp's 32 lanes never conflict, whatever the bytes.
// A byte costs a 16-bit load, an add and a 16-bit store: two shared-memory wavefronts per warp,
// where a shared atomic costs about four (the previous design counted 8 bytes per SM and clock,
// exactly one warp-wide atomic per four clocks). The four bytes of a word are loaded together
// and stored together, so the chain load -> add -> store is paid once per word, not per byte;
// bytes 0 and 2 (or 1 and 3) may hit the same counter, and the second store then carries both
// increments. The copies cost 32 KB per warp: 6 warps per SM on Hopper, each thread with 192
// bytes of the next round in flight while it counts the current one (36 KB per SM, staged in
// the L1 that the 193 KB of shared memory leave: 60 KB).
constexpr int byte_values = 256;
constexpr int byte_words_per_warp = byte_values * 32;  // 32 KB
constexpr int byte_loads = 12;                         // 16-byte loads per thread per round
constexpr int byte_max_threads = 256;

// Sums every lane's counters of the block into the output bins and clears them. A word holds at
// most 2 x 65535 counts, a lane's words of all warps at most 2^21, a warp's sum at most 2^26.
__device__ void merge_lane_counts(std::uint32_t* lane_counts, const int* bin_of_value,
                                  unsigned long long* counts) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32, warps = int(blockDim.x) / 32;
  __syncthreads();
  for (int value = warp; value < byte_values; value += warps) {
    std::uint32_t total = 0;
    for (int w = 0; w < warps; ++w) {
      std::uint32_t& word = lane_counts[w * byte_words_per_warp + value * 32 + lane];
      total += (word & 0xFFFF) + (word >> 16);
      word = 0;
    }
    total = __reduce_add_sync(0xFFFFFFFF, total);
    if (lane == 0 && total != 0 && bin_of_value[value] >= 0)
      detail::add_count(counts, bin_of_value[value], total);
  }
  __syncthreads();
}

// The counts of the four bytes of `word` in copies 0 (bytes 0 and 2) and 1 (bytes 1 and 3) of a
// lane whose counters of value 0 are copy0[0] and copy0[1]; value v's are 64 halves further.
__device__ __forceinline__ void count_word(std::uint32_t word, std::uint16_t* copy0) {
  std::uint32_t value[4];
  std::uint16_t* counter[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    value[k] = __byte_perm(word, 0, 0x4440 | k);  // byte k, zero-extended
    counter[k] = copy0 + value[k] * 64 + (k & 1);
  }
  std::uint32_t count[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) count[k] = counter[k][0];
  count[2] += value[2] == value[0];  // the same counter, stored after byte 0's: carry both
  count[3] += value[3] == value[1];
#pragma unroll
  for (int k = 0; k < 4; ++k) counter[k][0] = std::uint16_t(count[k] + 1);
}

__global__ void __launch_bounds__(byte_max_threads)
    count_byte_values(const std::uint8_t* __restrict__ in, VectorSplit split, EvenBins rule,
                      unsigned long long* __restrict__ counts) {
  extern __shared__ std::uint32_t lane_counts[];  // warps x byte_words_per_warp
  __shared__ int bin_of_value[byte_values];       // -1: not counted
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  std::uint32_t* mine = lane_counts + warp * byte_words_per_warp + lane;
  for (int value = 0; value < byte_values; ++value) mine[value * 32] = 0;
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x))
    bin_of_value[v] = detail::bin_of(std::uint8_t(v), rule);
  __syncthreads();
  auto* const copy0 = reinterpret_cast<std::uint16_t*>(mine);

  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) copy0[in[thread] * 64] += 1;
  if (thread < split.tail) copy0[in[split.tail_start + thread] * 64] += 1;

  // A round adds at most 96 to a counter (192 bytes, half of them to each copy), the head and
  // tail 2: merged and cleared after at most 65535 counts, before any can wrap.
  constexpr int rounds_between_merges = (65535 - 2) / (byte_loads * 16 / 2);
  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * byte_loads, stride = round * gridDim.x;
  uint4 next[byte_loads] = {};
  const auto load_round = [&](std::int64_t first) {
#pragma unroll
    for (int k = 0; k < byte_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      if (v < split.vectors) next[k] = vectors[v];
    }
  };
  load_round(blockIdx.x * round);
  int rounds = 0;
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += stride) {
    if (rounds++ == rounds_between_merges) {
      merge_lane_counts(lane_counts, bin_of_value, counts);
      rounds = 1;
    }
    uint4 data[byte_loads];
#pragma unroll
    for (int k = 0; k < byte_loads; ++k) data[k] = next[k];
    load_round(first + stride);  // in flight while this round is counted
#pragma unroll
    for (int k = 0; k < byte_loads; ++k) {
      if (first + k * std::int64_t(blockDim.x) + threadIdx.x < split.vectors) {
        count_word(data[k].x, copy0);
        count_word(data[k].y, copy0);
        count_word(data[k].z, copy0);
        count_word(data[k].w, copy0);
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
  // One warp fewer than their 32 KB of counters would allow in one block beside the 1 KB bin
  // table (6 of 7 on Hopper): shared memory and L1 share one array, and the loads in flight
  // need the L1 that the seventh warp's counters would take.
  const int fitting = (limits.shared_per_block - 1024) / (byte_words_per_warp * 4);
  const int warps = std::max(1, std::min(byte_max_threads / 32, fitting - 1));
  const int threads = warps * 32;
  const std::size_t shared = std::size_t(warps) * byte_words_per_warp * 4;
  const VectorSplit split = detail::split_into_vectors(in, n);
  const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(count_byte_values), threads,
                                                  shared, split.vectors, std::int64_t(threads) * byte_loads,
                                                  op_name);
  count_byte_values<<<blocks, threads, shared, stream>>>(in, split, rule, counts);
  detail::check_launch(op_name, "count_byte_values");
}

// The value kernels with the bin evaluation `Single` (even_bins.hpp).
template <class T, bool Single>
void histogram_values(const T* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                      cudaStream_t stream) {
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  const VectorSplit split = detail::split_into_vectors(in, n);
  const std::size_t bins = std::size_t(rule.bins);
  if (bins * 4 <= std::size_t(limits.shared_per_sm) / 3) {
    // 32-bit counters leaving room for 3 blocks per SM; a copy per warp while a quarter of the
    // SM's shared memory holds them (8 copies of 256 bins, 3 of 4096, 1 of 16384).
    constexpr int threads = detail::shared_value_threads<false>();
    const int copies = int(std::max<std::size_t>(
        1, std::min<std::size_t>(threads / 32, std::size_t(limits.shared_per_sm) / 4 / (bins * 4))));
    const std::size_t shared = std::size_t(copies) * bins * 4;
    const auto kernel = detail::count_values_shared<T, false, Single>;
    const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                                    split.vectors, threads * detail::value_loads, op_name);
    kernel<<<blocks, threads, shared, stream>>>(in, split, rule, copies, counts);
    detail::check_launch(op_name, "count_values_shared<32-bit>");
  } else if ((bins + 1) / 2 * 4 + 1024 <= std::size_t(limits.shared_per_block)) {  // 1 KB: static
    constexpr int threads = detail::shared_value_threads<true>();
    const std::size_t shared = (bins + 1) / 2 * 4;
    const auto kernel = detail::count_values_shared<T, true, Single>;
    const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                                    split.vectors, threads * detail::value_loads, op_name);
    kernel<<<blocks, threads, shared, stream>>>(in, split, rule, 1, counts);
    detail::check_launch(op_name, "count_values_shared<16-bit>");
  } else {
    constexpr int threads = detail::global_value_threads;
    const auto kernel = detail::count_values_global<T, Single>;
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
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    histogram_bytes(in, n, rule, totals, stream);
  } else if constexpr (detail::single_precision_type<T>) {
    if (rule.single_precision) histogram_values<T, true>(in, n, rule, totals, stream);
    else histogram_values<T, false>(in, n, rule, totals, stream);
  } else {
    histogram_values<T, false>(in, n, rule, totals, stream);
  }
}

template void histogram_even(const std::uint8_t*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const std::int32_t*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const float*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);
template void histogram_even(const double*, std::int64_t, int, double, double, std::uint64_t*, cudaStream_t);

}  // namespace rooflab
