#pragma once
// The counting kernels of rooflab::histogram_even and their launch helpers, shared by
// histogram.cu (which dispatches) and the ladder's many-bins and lane-atomics rungs.
//
//   count_values_shared  int32, float, double: block counters in shared memory, 32-bit (one copy
//                        per warp where they fit) or 16-bit packed two to a word for many bins.
//   count_values_global  bins beyond shared memory: atomics on the output, aggregated per warp.
//   count_bytes          uint8: the 256 byte values in a lane-column table of shared atomics.
// The value kernels are templates on the bin evaluation (E: BinEvaluation in even_bins.cuh),
// chosen per call by histogram.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/device_features.hpp"
#include "core/programmatic_launch.cuh"
#include "histogram/even_bins.cuh"
#include "rooflab/detail/launch_bounds.cuh"
#include "rooflab/detail/warp_reduce.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::detail {

// ---------------------------------------------------------------------------------------------
// Host side: how the input splits into 16-byte vectors, and how many blocks fit.

// n elements at `in` as an unaligned head, whole 16-byte vectors, and a tail.
struct VectorSplit {
  std::int64_t head = 0;        // elements before the first 16-byte boundary
  std::int64_t vectors = 0;     // whole 16-byte vectors after them
  std::int64_t tail_start = 0;  // the first element after the vectors
  std::int64_t tail = 0;        // elements from there to the end
};

template <class T>
VectorSplit split_into_vectors(const T* in, std::int64_t n) {
  constexpr std::int64_t per_vector = 16 / sizeof(T);
  const auto misalignment = std::int64_t(reinterpret_cast<std::uintptr_t>(in) % 16);
  VectorSplit split;
  split.head = std::min(n, misalignment == 0 ? 0 : (16 - misalignment) / std::int64_t(sizeof(T)));
  split.vectors = (n - split.head) / per_vector;
  split.tail_start = split.head + split.vectors * per_vector;
  split.tail = n - split.tail_start;
  return split;
}

struct DeviceLimits {
  int sm_count = 0;
  int shared_per_sm = 0;     // bytes of shared memory per multiprocessor
  int shared_per_block = 0;  // the most one block may opt in to
};

// The current device's limits, queried once per device.
inline const DeviceLimits& device_limits(const char* op) {
  static std::mutex mutex;
  static std::map<int, DeviceLimits> known;
  int device = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found != known.end()) return found->second;
  DeviceLimits limits;
  ROOFLAB_CUDA(op, "reading the SM count of device " + std::to_string(device),
               cudaDeviceGetAttribute(&limits.sm_count, cudaDevAttrMultiProcessorCount, device));
  const DeviceFeatures& features = current_device_features();
  limits.shared_per_sm = features.shared_per_sm;
  limits.shared_per_block = features.shared_per_block;
  return known.emplace(device, limits).first->second;
}

// Blocks of `kernel` resident per SM with `threads` threads and `dynamic_shared` bytes, after
// opting the kernel in to more than the default 48 KB. Cached: every call of the op asks, and
// the answer never changes for a device.
inline int resident_blocks(const void* kernel, int threads, std::size_t dynamic_shared,
                           const char* op) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int, std::size_t>, int> known;
  static std::map<std::pair<int, const void*>, std::size_t> opted_in;  // the largest size so far
  int device = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(device, kernel, threads, dynamic_shared);
  auto found = known.find(key);
  if (found != known.end()) return found->second;
  // The attribute only ever grows: a later, smaller request must not take back what an earlier
  // (cached, so never re-set) launch configuration relies on.
  std::size_t& allowed = opted_in[{device, kernel}];
  if (dynamic_shared > allowed) {
    ROOFLAB_CUDA(
        op, "letting a counting kernel use " + describe_bytes(dynamic_shared) + " of shared memory",
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(dynamic_shared)));
    allowed = dynamic_shared;
  }
  int blocks = 0;
  ROOFLAB_CUDA(
      op, "asking how many counting blocks fit on an SM",
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_shared));
  if (blocks < 1) throw Error(op, "", "a counting kernel does not fit on this GPU");
  return known.emplace(key, blocks).first->second;
}

// A persistent grid: every block resident at once, but no more blocks than rounds of work.
inline unsigned persistent_grid(const void* kernel, int threads, std::size_t dynamic_shared,
                                std::int64_t vectors, std::int64_t vectors_per_round,
                                const char* op) {
  const std::int64_t resident = std::int64_t(device_limits(op).sm_count) *
                                resident_blocks(kernel, threads, dynamic_shared, op);
  const std::int64_t rounds = (vectors + vectors_per_round - 1) / vectors_per_round;
  return unsigned(std::max<std::int64_t>(1, std::min(resident, rounds)));
}

// ---------------------------------------------------------------------------------------------
// Device side.

template <class T>
struct alignas(16) Vector16 {
  T lane[16 / sizeof(T)];
};

// The output counts, zeroed before any kernel adds to them. While the input has fewer than 2^32
// elements no count can reach 2^32, so the additions go to a count's low 32-bit word (the first:
// GPUs are little-endian) and its high word stays zero. A 32-bit atomic costs the L2 less than a
// 64-bit one: with them, 50M int32 into 65536 bins (132 blocks merging 65536 counters each) took
// 95-108 us on an H200 instead of 101-117 us (docs/histogram.md).
struct Totals {
  unsigned long long* counts;
  bool narrow;  // every count stays below 2^32

  __device__ void add(int bin, std::uint64_t count) const {
    if (narrow) {
      atomicAdd(reinterpret_cast<unsigned*>(counts + bin), unsigned(count));
    } else {
      atomicAdd(counts + bin, static_cast<unsigned long long>(count));
    }
  }
};

// The totals of an input of n elements in `counts`.
inline Totals totals_for(unsigned long long* counts, std::int64_t n) {
  return Totals{counts, n < (std::int64_t(1) << 32)};
}

// Zeroes the counts ahead of a counting kernel launched with launch_after_previous, which then
// starts at once and waits (wait_for_previous_kernel) only before its first add to the output. A
// memset there is a second operation the counting kernel starts after: 50M int32 took 1.8-1.9 us
// longer at 4096 bins and 2.1-3.6 us longer at 65536 on an H200 (docs/histogram.md).
inline __global__ void zero_counts_kernel(unsigned long long* counts, int bins) {
  let_next_kernel_start();
  for (int bin = int(blockIdx.x * blockDim.x + threadIdx.x); bin < bins;
       bin += int(gridDim.x * blockDim.x))
    counts[bin] = 0;
}

// Queues zero_counts_kernel for `bins` counts on `stream`.
inline void queue_zero_counts(unsigned long long* counts, int bins, cudaStream_t stream,
                              const char* op) {
  constexpr int threads = 256;
  zero_counts_kernel<<<std::min(1024, (bins + threads - 1) / threads), threads, 0, stream>>>(counts,
                                                                                             bins);
  check_launch(op, "zero_counts_kernel");
}

// --- int32, float, double ---------------------------------------------------------------------
constexpr int value_loads = 4;  // 16-byte loads per thread per round: 64 bytes a round

// Adds `value` to the shared word at shared-window address `address`: a reduction with no result
// to wait for, which leaves the compiler free to interleave the unrolled loop's values. Every
// value is added somewhere (its bin, or the spare slot), so the add carries no predicate: ptxas
// of CUDA 13.0 wraps a predicated shared atomic for sm_90 in a short branch and a convergence
// barrier (BSSY, BRA, ATOMS, BSYNC: three instructions a value more than the atomic).
__device__ __forceinline__ void add_shared(std::uint32_t address, std::uint32_t value) {
  asm volatile("red.shared.add.u32 [%0], %1;" : : "r"(address), "r"(value) : "memory");
}

// A warp's adds of 16-bit packed counters (1 to the low half of a word, 1 << 16 to the high),
// one slot a lane: where every lane's word is the same, lane 0 adds them all at once. The
// hardware combines a warp's increments of one address (ATOMS.POPC.INC, the 32-bit counters'),
// but not adds of 1 or 1 << 16 (ATOMS.ADD): 32 of them on one word run one after another.
// Called by every lane of a whole warp.
__device__ __forceinline__ void add_packed_from_warp(std::uint32_t word, bool high_half) {
  if (__all_sync(~0u, word == __shfl_sync(~0u, word, 0))) {
    const std::uint32_t high = __popc(__ballot_sync(~0u, high_half));
    if (threadIdx.x % 32 == 0) add_shared(word, (32 - high) + (high << 16));
  } else {
    add_shared(word, high_half ? 1u << 16 : 1u);
  }
}

__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return std::uint32_t(__cvta_generic_to_shared(pointer));
}

// Rung 6 — many bins: 16-bit counters, two to a 32-bit word, flushed before they can wrap.
// 65536 bins of 32-bit counters (256 KB) exceed the 227 KB a Hopper block may have; packed two
// to a word they take 128 KB. No counter can exceed the number of elements its block counted
// since it was last cleared, so the block carries that bound and, before a round could push it
// past 65535, stops to flush every counter at 2^15 or above into the output and to bound the
// rest anew by the OR of all of them. With uniform data over many bins the counters stay small
// and the bound resets to a handful; with one hot bin that bin is flushed every few rounds: a
// global atomic per 16384 elements or more. The same bound (2^32 - 1) guards the 32-bit counters.
//
// One block of 1024 threads per SM (32 warps of at most 64 registers), each thread with two
// rounds of four 16-byte loads in flight: 128 KB of loads per SM. One block rather than four of
// 256 threads, because every block adds its counters into the output at the end: 50M int32 into
// 4096 bins took 61 us on an H200 with 528 blocks merging, 53-54 us with 132 (docs/histogram.md).
constexpr int shared_value_threads = 1024;

// A round adds at most this many to a counter, and a flush leaves every counter below half its
// range: the next round must fit above that.
static_assert(shared_value_threads * value_loads * 4 <= 0x8000,
              "a round of the packed counters must fit in what a flush leaves");

// Clears every counter whose top bit is set (a 16-bit counter at 2^15 or more, a 32-bit one at
// 2^31 or more), adding it to the totals, and returns a bound on the counters left: the OR of
// them all, which no counter exceeds. A pass reads each word once, four to a 16-byte load, and
// spends two instructions on it unless it holds a counter to flush. Finding the largest counter
// instead (a comparison and a maximum per counter) cost the 65536-bin path, which flushes every
// third round, a fifth of its time on uniform data: 95-108 us against 80-88 us on an H200
// (docs/histogram.md). The counters of the spare slot (index `bins` of each copy) are cleared,
// not added anywhere.
template <bool Packed>
__device__ std::uint32_t flush_large_counters(std::uint32_t* block_counts, int words, int bins,
                                              Totals totals) {
  constexpr std::uint32_t top_bits = Packed ? 0x80008000u : 0x80000000u;
  // Word w with its counters at or above the top bit moved to the totals.
  const auto flushed = [&](int w, std::uint32_t word) {
    if constexpr (Packed) {
      for (int half = 0; half < 2; ++half) {
        const std::uint32_t value = (word >> (16 * half)) & 0xFFFF;
        if ((value & 0x8000) != 0) {
          if (2 * w + half < bins) totals.add(2 * w + half, value);
          word &= ~(0xFFFFu << (16 * half));
        }
      }
      return word;
    } else {
      if (w % (bins + 1) < bins) totals.add(w % (bins + 1), word);
      return 0u;
    }
  };
  __shared__ std::uint32_t warp_bound[32];
  wait_for_previous_kernel();  // the output's zeroing
  __syncthreads();
  std::uint32_t bound = 0;
  auto* quads = reinterpret_cast<uint4*>(block_counts);
  for (int q = int(threadIdx.x); q < words / 4; q += int(blockDim.x)) {
    uint4 quad = quads[q];
    if (((quad.x | quad.y | quad.z | quad.w) & top_bits) != 0) {
      if ((quad.x & top_bits) != 0) quad.x = flushed(4 * q, quad.x);
      if ((quad.y & top_bits) != 0) quad.y = flushed(4 * q + 1, quad.y);
      if ((quad.z & top_bits) != 0) quad.z = flushed(4 * q + 2, quad.z);
      if ((quad.w & top_bits) != 0) quad.w = flushed(4 * q + 3, quad.w);
      quads[q] = quad;
    }
    bound |= quad.x | quad.y | quad.z | quad.w;
  }
  for (int w = words / 4 * 4 + int(threadIdx.x); w < words; w += int(blockDim.x)) {
    std::uint32_t word = block_counts[w];
    if ((word & top_bits) != 0) block_counts[w] = word = flushed(w, word);
    bound |= word;
  }
  bound = warp_reduce(bound, [](std::uint32_t a, std::uint32_t b) { return a | b; });  // lane 0
  if (threadIdx.x % 32 == 0) warp_bound[threadIdx.x / 32] = bound;
  __syncthreads();
  bound = 0;
  for (int w = 0; w < int(blockDim.x) / 32; ++w) bound |= warp_bound[w];
  __syncthreads();  // warp_bound is reused by the next flush
  return Packed ? (bound & 0xFFFF) | (bound >> 16) : bound;
}

// The shared-memory words of the block counters of `bins` bins: `copies` copies of 32-bit
// counters, or 16-bit counters two to a word; either with the spare slot (even_bins.hpp).
template <bool Packed>
__host__ __device__ inline int shared_counter_words(int bins, int copies) {
  return Packed ? (bins + 2) / 2 : copies * (bins + 1);
}

// Block counters in shared memory: `copies` copies of 32-bit counters, warp w counting into
// copy w % copies (one per warp where they fit: warps then never contend for an address), or
// one copy of 16-bit counters packed two to a word. E: the bin evaluation (even_bins.cuh).
// Each round loads four vectors and adds every value to its counter slot without a branch
// (fast_slot): its bin, or the spare slot for values outside [lo, hi) and values near an edge,
// which (a few in ten thousand on random data) then go through the rule itself. The loop runs
// whole rounds, where every vector exists, with no test per value, loading the next round while
// it counts one; the last, partial round of a block sends the slots past the end to the spare
// slot.
template <class T, bool Packed, BinEvaluation E>
__global__ void __launch_bounds__(shared_value_threads, 1)
    count_values_shared(const T* __restrict__ in, VectorSplit split, EvenBins rule, int copies,
                        Totals totals) {
  constexpr int per_vector = 16 / sizeof(T), slots = value_loads * per_vector;
  static_assert(slots <= 32, "near_slots below holds a bit per slot");
  extern __shared__ __align__(16) std::uint32_t block_counts[];  // 16: the flush's loads
  const int words = shared_counter_words<Packed>(rule.bins, copies);
  for (int w = int(threadIdx.x); w < words; w += int(blockDim.x)) block_counts[w] = 0;
  __syncthreads();
  std::uint32_t* my_counts =
      block_counts + (Packed ? 0 : int(threadIdx.x) / 32 % copies * (rule.bins + 1));
  const std::uint32_t my_address = shared_address(my_counts);
  // The word and the increment of a slot.
  const auto word_of = [&](int slot) {
    return my_address + std::uint32_t(Packed ? slot >> 1 : slot) * 4;
  };
  const auto one_of = [](int slot) { return Packed ? 1u << ((slot & 1) * 16) : 1u; };
  const auto add_exactly = [&](T value) {
    if (const int bin = bin_of(value, rule); bin >= 0) add_shared(word_of(bin), one_of(bin));
  };
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) add_exactly(in[thread]);
  if (thread < split.tail) add_exactly(in[split.tail_start + thread]);

  constexpr std::uint32_t counter_max = Packed ? 0xFFFF : 0xFFFFFFFF;
  const std::uint32_t round_elements = blockDim.x * value_loads * per_vector;
  std::uint32_t bound = 2 * per_vector;  // the head and tail above: fewer than 2 vectors' worth
  const auto* vectors = reinterpret_cast<const Vector16<T>*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * value_loads;
  // The vectors of a round starting at `first`: first + k * blockDim.x + threadIdx.x.
  const auto load_round = [&](Vector16<T>(&into)[value_loads], std::int64_t first,
                              bool(&valid)[value_loads]) {
#pragma unroll
    for (int k = 0; k < value_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      valid[k] = v < split.vectors;
      if (valid[k]) into[k] = vectors[v];
    }
  };
  // Adds a loaded round (Partial: the last one, whose vectors past the end go to the spare slot).
  // The trip count is the same for every thread of the block, so the flush's barriers meet all.
  const auto count_round = [&](const Vector16<T>(&data)[value_loads],
                               const bool(&valid)[value_loads], auto partial) {
    if (bound > counter_max - round_elements)
      bound = flush_large_counters<Packed>(block_counts, words, rule.bins, totals);
    bound += round_elements;
    // Bit s: slot s holds a counted value near an edge. A warp takes the pass below whenever
    // one of its lanes has such a value (under single precision, about 8% of rounds at 256 bins
    // and 3 in 4 at 4096 on uniform data), so the pass only tests bits: nothing is evaluated twice.
    std::uint32_t near_slots = 0;
    // Whole warp: the lanes add each slot as one where they share its word (add_packed_from_warp).
    const auto add_slots = [&](auto whole_warp) {
#pragma unroll
      for (int s = 0; s < slots; ++s) {
        FastSlot fast = fast_slot<E>(data[s / per_vector].lane[s % per_vector], rule);
        if (decltype(partial)::value && !valid[s / per_vector]) fast = FastSlot{rule.bins, false};
        if constexpr (decltype(whole_warp)::value)
          add_packed_from_warp(word_of(fast.slot), (fast.slot & 1) != 0);
        else
          add_shared(word_of(fast.slot), one_of(fast.slot));
        near_slots |= fast.near_edge ? 1u << s : 0u;
      }
    };
    if constexpr (Packed) {
      // A round whose first slot falls in one word for the whole warp (all-equal or sorted data)
      // is added a warp at a time: 50M equal int32 at 65536 bins took 233 us with an add per lane
      // and take 86-90 us so (H200); other rounds pay a shuffle and a vote for the test, up to 3%
      // on uniform data. Grouping the lanes of every word instead (__match_any_sync) took four
      // hot bins from 226 to 148 us but uniform data from 87 to 338 us (docs/histogram.md).
      // With the round written twice, ptxas spills about 1.4 KB where int32 or float values are
      // binned in double precision (float over [0, 1) at 65536 bins): 87.5 us there, 87.6 before.
      FastSlot first = fast_slot<E>(data[0].lane[0], rule);
      if (decltype(partial)::value && !valid[0]) first = FastSlot{rule.bins, false};
      const std::uint32_t first_word = word_of(first.slot);
      if (__all_sync(~0u, first_word == __shfl_sync(~0u, first_word, 0)))
        add_slots(std::true_type{});
      else
        add_slots(std::false_type{});
    } else {
      add_slots(std::false_type{});
    }
    if (near_slots != 0) {  // rare per value: send the values near an edge to the rule
#pragma unroll
      for (int s = 0; s < slots; ++s) {
        if (near_slots & 1u << s) {
          const int bin = exact_bin(double(data[s / per_vector].lane[s % per_vector]), rule);
          add_shared(word_of(bin), one_of(bin));
        }
      }
    }
  };
  // Whole rounds, each loaded before the round ahead of it is counted, so that two rounds of
  // loads are in flight per thread; written out for two buffers, which registers can only hold
  // under names known at compile time.
  const std::int64_t stride = std::int64_t(gridDim.x) * round;
  const auto whole = [&](std::int64_t at) { return at + round <= split.vectors; };
  std::int64_t first = blockIdx.x * round;
  Vector16<T> ping[value_loads] = {}, pong[value_loads] = {};
  bool valid[value_loads];  // what load_round tested; whole rounds need no test
  if (whole(first)) load_round(ping, first, valid);
  while (whole(first)) {
    if (whole(first + stride)) load_round(pong, first + stride, valid);
    count_round(ping, valid, std::false_type{});
    first += stride;
    if (!whole(first)) break;
    if (whole(first + stride)) load_round(ping, first + stride, valid);
    count_round(pong, valid, std::false_type{});
    first += stride;
  }
  if (first < split.vectors) {
    load_round(ping, first, valid);
    count_round(ping, valid, std::true_type{});
  }
  wait_for_previous_kernel();  // the output's zeroing
  __syncthreads();
  for (int bin = int(threadIdx.x); bin < rule.bins; bin += int(blockDim.x)) {
    std::uint64_t total = 0;
    if constexpr (Packed) {
      total = (block_counts[bin / 2] >> (bin % 2 * 16)) & 0xFFFF;
    } else {
      for (int c = 0; c < copies; ++c) total += block_counts[c * (rule.bins + 1) + bin];
    }
    if (total != 0) totals.add(bin, total);
  }
}

// Bins beyond shared memory (up to 2^24): atomics straight on the output. Lanes of a warp that
// hit the same bin are found with __match_any_sync and added by one atomic, so a hot bin costs
// one atomic per warp and element slot, not 32.
constexpr int global_value_threads = 512;

template <class T, BinEvaluation E>
__global__ void __launch_bounds__(global_value_threads)
    count_values_global(const T* __restrict__ in, VectorSplit split, EvenBins rule, Totals totals) {
  constexpr int per_vector = 16 / sizeof(T);
  wait_for_previous_kernel();  // the output's zeroing
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) {
    const int bin = bin_of(in[thread], rule);
    if (bin >= 0) totals.add(bin, 1);
  }
  if (thread < split.tail) {
    const int bin = bin_of(in[split.tail_start + thread], rule);
    if (bin >= 0) totals.add(bin, 1);
  }
  const int lane = int(threadIdx.x) % 32;
  const auto* vectors = reinterpret_cast<const Vector16<T>*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * value_loads;
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += gridDim.x * round) {
    Vector16<T> data[value_loads];
    bool valid[value_loads];
#pragma unroll
    for (int k = 0; k < value_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      valid[k] = v < split.vectors;
      if (valid[k]) data[k] = vectors[v];
    }
#pragma unroll
    for (int s = 0; s < value_loads * per_vector; ++s) {
      const T value = data[s / per_vector].lane[s % per_vector];
      int bin = -1;
      if (valid[s / per_vector]) {
        const FastSlot fast = fast_slot<E>(value, rule);
        bin = fast.slot < rule.bins ? fast.slot
              : fast.near_edge      ? exact_bin(double(value), rule)
                                    : -1;
      }
      const unsigned same = __match_any_sync(0xFFFFFFFF, bin);
      if (bin >= 0 && lane == __ffs(same) - 1) totals.add(bin, __popc(same));
    }
  }
}

// --- uint8: lane columns ----------------------------------------------------------------------
// The 256 byte values are counted, then folded into the bins by the rule (bin_of_value: -1 where
// the rule does not count a byte), so the hot loop never evaluates a bin, whatever lo, hi and bins.
// Each block holds one 256 x 32 table of 32-bit counters, counter (value, lane) at word
// value * 32 + lane: lane l of every warp only ever touches bank l, so a warp's shared atomic is
// one wavefront whatever the bytes (all-equal data included); warps meet on an address only
// across instructions. The atomics' results are unused, so no thread waits on shared memory:
// on an H200 this counted 1 GiB in 292 us, where lane-private counters bumped by load, add and
// store took 506-568 us (each byte waits for its counter's load; docs/histogram.md), and in
// 246-256 us once a count's address took one multiply-add (below).
constexpr int byte_values = 256;
constexpr int byte_threads = 512;
constexpr int byte_blocks_per_sm = 3;  // 48 warps and 3 x 33 KB of shared memory per SM
constexpr int byte_loads = 4;          // 16-byte loads per thread per round
// A round adds at most (warps x loads x 16) = 1024 to a counter (one byte per warp and byte
// slot); the head and tail 2. Merging every 256 rounds (8 MiB per block) keeps the counters far
// below the 2^27 that a warp's sum of 32 in 32 bits allows, and costs under 0.5% of the rounds
// between (a merge touches each of the table's words once). So low a bound is chosen so that
// the merge during the run is exercised by any input above ~3.3 GB on a 132-SM GPU (the huge
// test uses 2^32 + 17 bytes), not only by the terabyte a bound near 2^27 would need.
constexpr int byte_rounds_between_merges = 256;
static_assert(
    (2 + std::int64_t(byte_rounds_between_merges) * (byte_threads / 32) * byte_loads * 16) * 32 <
        (std::int64_t(1) << 32),
    "a warp's sum of 32 lane counters must fit 32 bits");

__device__ __forceinline__ std::uint32_t byte_of(std::uint32_t word, int k) {
  return __byte_perm(word, 0, 0x4440 | k);  // byte k, zero-extended
}

// Adds the block's counters into the output bins and clears them. Every thread of the block
// calls it (two barriers).
__device__ inline void merge_lane_columns(std::uint32_t* columns, const int* bin_of_value,
                                          Totals totals) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32,
            warps = int(blockDim.x) / 32;
  wait_for_previous_kernel();  // the output's zeroing
  __syncthreads();
  for (int value = warp; value < byte_values; value += warps) {
    std::uint32_t& counter = columns[value * 32 + lane];
    const std::uint32_t total = warp_reduce(counter, Sum{});  // lane 0 holds it
    counter = 0;
    if (lane == 0 && total != 0 && bin_of_value[value] >= 0) totals.add(bin_of_value[value], total);
  }
  __syncthreads();
}

// Launched with byte_threads threads and byte_values x 32 x 4 bytes of dynamic shared memory.
// A template only so that the header may define it for the library and the lab alike.
template <int Loads>
__global__ void __launch_bounds__(byte_threads, min_blocks_per_sm(byte_threads, byte_blocks_per_sm))
    count_bytes_in_lane_columns(const std::uint8_t* __restrict__ in, VectorSplit split,
                                EvenBins rule, Totals totals) {
  extern __shared__ std::uint32_t columns[];  // byte_values x 32
  __shared__ int bin_of_value[byte_values];
  for (int w = int(threadIdx.x); w < byte_values * 32; w += int(blockDim.x)) columns[w] = 0;
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x))
    bin_of_value[v] = bin_of(std::uint8_t(v), rule);
  __syncthreads();
  // The lane's column as a shared-memory address, so that a count costs three instructions: the
  // byte's extraction, its address (one multiply-add: mine + value * 128) and the atomic. Through
  // a generic pointer the compiler formed the word index and scaled it afterwards, five a byte:
  // 394 instructions per 64 bytes against 258 (sm_90 SASS).
  const std::uint32_t mine = shared_address(columns + threadIdx.x % 32);
  const auto count = [mine](std::uint32_t value) { add_shared(mine + (value << 7), 1); };

  // The head and tail have fewer than 16 bytes each: one per thread of the first warp.
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) count(in[thread]);
  if (thread < split.tail) count(in[split.tail_start + thread]);

  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * Loads;
  int rounds = 0;
  // The trip count is the same for every thread of the block: the merges' barriers meet all.
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += gridDim.x * round) {
    if (rounds == byte_rounds_between_merges) {
      merge_lane_columns(columns, bin_of_value, totals);
      rounds = 0;
    }
    ++rounds;
    uint4 data[Loads];
    bool valid[Loads];
#pragma unroll
    for (int k = 0; k < Loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      valid[k] = v < split.vectors;
      if (valid[k]) data[k] = vectors[v];
    }
#pragma unroll
    for (int k = 0; k < Loads; ++k) {
      if (valid[k]) {
        const std::uint32_t words[4] = {data[k].x, data[k].y, data[k].z, data[k].w};
#pragma unroll
        for (const std::uint32_t word : words) {
#pragma unroll
          for (int b = 0; b < 4; ++b) count(byte_of(word, b));
        }
      }
    }
  }
  merge_lane_columns(columns, bin_of_value, totals);
}

// Adds the counts of n >= 1 bytes at `in` (any alignment) to `totals`, binned by `rule`.
inline void count_bytes(const std::uint8_t* in, std::int64_t n, const EvenBins& rule,
                        const Totals& totals, cudaStream_t stream, const char* op) {
  const std::size_t shared = std::size_t(byte_values) * 32 * 4;
  const VectorSplit split = split_into_vectors(in, n);
  const auto kernel = count_bytes_in_lane_columns<byte_loads>;
  const unsigned blocks =
      persistent_grid(reinterpret_cast<const void*>(kernel), byte_threads, shared, split.vectors,
                      std::int64_t(byte_threads) * byte_loads, op);
  launch_after_previous(op, kernel, blocks, byte_threads, shared, 1, stream,
                        "count_bytes_in_lane_columns", in, split, rule, totals);
}

}  // namespace rooflab::detail
