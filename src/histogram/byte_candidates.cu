// Candidates for uint8 data, measured against production (rung 7) and CUB in one device run.
// Production counts a byte with a 16-bit shared load, an add and a store into lane-private
// counters (two copies, 32 KB per warp): 1 GiB took 548 us on an H200, 7.5 bytes per SM and
// clock, with 6 warps per SM. Every byte waits for its counter's load before the store, and a
// thread's next word waits for that store (it may hit the same counter): with 6 warps the
// chain, not a shared unit, may be what limits it. The candidates test that from two sides:
//   8  lane-atomics:    no chain at all (a shared atomic whose result is unused does not
//                       wait), 48 warps per SM, still no bank conflicts; 1 atomic per byte.
//   9  private-8bit:    production's loads and stores into 8-bit counters: 8 KB per warp, so
//                       24 warps per SM hide the chain 4x better; flushed every 192 bytes.
//   10 private-16bit:   one copy of 16-bit counters: 12 warps per SM, almost no flushes.
//   11 hybrid:          half the bytes by 8's atomics, half by 9's counters, in case the atomic
//                       unit and the load/store path are separate limits.
// Integer instructions matter as much as shared memory: an SM issues 64 integer lanes per clock,
// so 1.5x CUB (~12 bytes per SM and clock) allows about 5 per byte. Production spends about that
// (extract, address, add, and a compare per pair of bytes); 8 spends 2 (extract, address).
// Predictions in docs/histogram.md. All three fold the 256 value counts into the bins by the
// exact rule at the end, as production does, so any lo, hi and bins work.
#include "histogram/byte_candidates.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "histogram/counting.cuh"
#include "histogram/histogram_workspace.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

using detail::EvenBins;
using detail::VectorSplit;

constexpr const char* op_name = "bench histogram";
constexpr int byte_values = 256;

__device__ void fill_bin_table(int* bin_of_value, const EvenBins& rule) {
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x))
    bin_of_value[v] = detail::bin_of(std::uint8_t(v), rule);  // -1: not counted
}

__device__ __forceinline__ std::uint32_t byte_of(std::uint32_t word, int k) {
  return __byte_perm(word, 0, 0x4440 | k);  // byte k, zero-extended
}

// ---------------------------------------------------------------------------------------------
// Candidate 8 — lane-atomics. One table per block, counter (value, lane) at word value * 32 +
// lane: lane l of every warp only ever touches bank l, so a warp's atomic is one wavefront
// whatever the bytes (all-equal data included); warps meet on an address only across
// instructions. The atomics' results are unused, so no thread waits on shared memory at all.
constexpr int atomic_threads = 512;
constexpr int atomic_blocks_per_sm = 3;  // 48 warps, 99 KB of shared memory per SM
constexpr int atomic_loads = 4;          // 16-byte loads per thread per round
// A counter stays below 2^26 (merged before), so a warp's sum of 32 counters fits 32 bits.
constexpr std::uint32_t atomic_counter_limit = 1u << 26;

__device__ void merge_lane_columns(std::uint32_t* columns, const int* bin_of_value, unsigned long long* counts) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32, warps = int(blockDim.x) / 32;
  __syncthreads();
  for (int value = warp; value < byte_values; value += warps) {
    std::uint32_t& counter = columns[value * 32 + lane];
    const std::uint32_t total = __reduce_add_sync(0xFFFFFFFF, counter);
    counter = 0;
    if (lane == 0 && total != 0 && bin_of_value[value] >= 0)
      detail::add_count(counts, bin_of_value[value], total);
  }
  __syncthreads();
}

__global__ void __launch_bounds__(atomic_threads, atomic_blocks_per_sm)
    count_bytes_in_lane_columns(const std::uint8_t* __restrict__ in, VectorSplit split, EvenBins rule,
                                unsigned long long* __restrict__ counts) {
  extern __shared__ std::uint32_t columns[];  // byte_values x 32
  __shared__ int bin_of_value[byte_values];
  for (int w = int(threadIdx.x); w < byte_values * 32; w += int(blockDim.x)) columns[w] = 0;
  fill_bin_table(bin_of_value, rule);
  __syncthreads();
  std::uint32_t* const mine = columns + threadIdx.x % 32;
  const auto count = [&](std::uint32_t value) { atomicAdd(mine + value * 32, 1u); };

  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) count(in[thread]);
  if (thread < split.tail) count(in[split.tail_start + thread]);

  // A counter gains at most one byte per warp and byte slot of a round.
  const std::uint32_t round_gain = blockDim.x / 32 * atomic_loads * 16;
  std::uint32_t bound = 2;  // the head and tail above
  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * atomic_loads;
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += gridDim.x * round) {
    if (bound > atomic_counter_limit - round_gain) {
      merge_lane_columns(columns, bin_of_value, counts);
      bound = 0;
    }
    uint4 data[atomic_loads];
    bool valid[atomic_loads];
#pragma unroll
    for (int k = 0; k < atomic_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      valid[k] = v < split.vectors;
      if (valid[k]) data[k] = vectors[v];
    }
#pragma unroll
    for (int k = 0; k < atomic_loads; ++k) {
      if (valid[k]) {
        const std::uint32_t words[4] = {data[k].x, data[k].y, data[k].z, data[k].w};
#pragma unroll
        for (const std::uint32_t word : words) {
#pragma unroll
          for (int b = 0; b < 4; ++b) count(byte_of(word, b));
        }
      }
    }
    bound += round_gain;
  }
  merge_lane_columns(columns, bin_of_value, counts);
}

// ---------------------------------------------------------------------------------------------
// Candidates 9 and 10 — lane-private counters of `Counter` bits, bumped by loads and stores.
// A lane's counters fill `words` 32-bit words of its own bank: value v is field v / words of
// word v % words, word w of lane l at w * 32 + l in the warp's table. Bytes are counted in pairs
// (count_private_word).
// Before a counter could wrap, the warp flushes: lane l sums words [l * owned, (l + 1) * owned)
// of all 32 lanes (rotated, lane l reading lane l + s: 32 banks), clears them, and adds the sums
// to its 64-bit totals; at the end the block adds those into 256 shared totals, then the output.
template <class Counter>
struct PrivateCounters {
  static constexpr int fields = 4 / int(sizeof(Counter));  // counters per word
  static constexpr int words = byte_values / fields;       // per lane: 64 or 128
  static constexpr int owned = words / 32;                 // words per lane in a flush
  static constexpr std::uint32_t counter_max = (1u << (8 * sizeof(Counter))) - 1;
  // Both: 192 KB of counters and 48 KB of loads in flight per SM (the next round's, while this
  // one is counted), in the 60 KB of L1 the counters leave. 8-bit: 24 warps, 4 loads a round,
  // a flush every 3 rounds (192 bytes per lane). 16-bit: 12 warps, 8 loads, every 511 rounds.
  static constexpr int max_threads = sizeof(Counter) == 1 ? 768 : 384;
  static constexpr int loads = sizeof(Counter) == 1 ? 4 : 8;
  static constexpr int rounds_per_flush = int(counter_max / (loads * 16));
  static constexpr int warp_bytes = words * 32 * 4;
};

template <class Counter>
__device__ __forceinline__ Counter* counter_of(unsigned char* lane_base, std::uint32_t value) {
  using C = PrivateCounters<Counter>;
  return reinterpret_cast<Counter*>(lane_base + (value % C::words) * 128 + value / C::words * std::uint32_t(sizeof(Counter)));
}

// Two bytes at a time: both counters are loaded before either is stored, so a second byte
// equal to the first carries both increments (one compare per pair; four bytes at a time would
// take six, and the compares, not shared memory, would then bound the rate).
template <class Counter>
__device__ __forceinline__ void count_private_pair(std::uint32_t first, std::uint32_t second, unsigned char* lane_base) {
  Counter* const first_counter = counter_of<Counter>(lane_base, first);
  Counter* const second_counter = counter_of<Counter>(lane_base, second);
  const std::uint32_t first_count = *first_counter;
  const std::uint32_t second_count = *second_counter + (first == second);
  *first_counter = Counter(first_count + 1);
  *second_counter = Counter(second_count + 1);
}

template <class Counter>
__device__ __forceinline__ void count_private_word(std::uint32_t word, unsigned char* lane_base) {
  count_private_pair<Counter>(byte_of(word, 0), byte_of(word, 1), lane_base);
  count_private_pair<Counter>(byte_of(word, 2), byte_of(word, 3), lane_base);
}

// Field f of word `owned * lane + i` is value owned * lane + i + f * words.
template <class Counter>
__device__ __forceinline__ void flush_private(std::uint32_t* warp_table, std::uint64_t (&totals)[PrivateCounters<Counter>::owned][PrivateCounters<Counter>::fields]) {
  using C = PrivateCounters<Counter>;
  const int lane = int(threadIdx.x) % 32;
  __syncwarp();
#pragma unroll
  for (int i = 0; i < C::owned; ++i) {
    std::uint32_t* const row = warp_table + (C::owned * lane + i) * 32;
    // 8-bit: bytes 0 and 2 summed in the halves of `low`, 1 and 3 in `high` (at most 32 x 255).
    std::uint32_t low = 0, high = 0;
#pragma unroll 8
    for (int s = 0; s < 32; ++s) {
      std::uint32_t& word = row[(lane + s) % 32];
      const std::uint32_t x = word;
      word = 0;
      if constexpr (C::fields == 4) {
        low += x & 0x00FF00FF;
        high += (x >> 8) & 0x00FF00FF;
      } else {
        low += x & 0xFFFF;
        high += x >> 16;
      }
    }
    if constexpr (C::fields == 4) {
      totals[i][0] += low & 0xFFFF;
      totals[i][1] += high & 0xFFFF;
      totals[i][2] += low >> 16;
      totals[i][3] += high >> 16;
    } else {
      totals[i][0] += low;
      totals[i][1] += high;
    }
  }
  __syncwarp();
}

// Adds a lane's flushed totals (values as flush_private numbers them) into the block's.
template <class Counter>
__device__ void add_lane_totals(unsigned long long* block_totals,
                                const std::uint64_t (&totals)[PrivateCounters<Counter>::owned][PrivateCounters<Counter>::fields]) {
  using C = PrivateCounters<Counter>;
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int i = 0; i < C::owned; ++i)
#pragma unroll
    for (int f = 0; f < C::fields; ++f)
      if (totals[i][f] != 0) atomicAdd(block_totals + C::owned * lane + i + f * C::words, totals[i][f]);
}

template <class Counter>
__global__ void __launch_bounds__(PrivateCounters<Counter>::max_threads, 1)
    count_bytes_in_private_counters(const std::uint8_t* __restrict__ in, VectorSplit split, EvenBins rule,
                                    unsigned long long* __restrict__ counts) {
  using C = PrivateCounters<Counter>;
  extern __shared__ std::uint32_t tables[];  // warps x words x 32
  __shared__ int bin_of_value[byte_values];
  __shared__ unsigned long long block_totals[byte_values];
  const int lane = int(threadIdx.x) % 32;
  std::uint32_t* const warp_table = tables + int(threadIdx.x) / 32 * (C::words * 32);
  for (int w = 0; w < C::words; ++w) warp_table[w * 32 + lane] = 0;
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x)) block_totals[v] = 0;
  fill_bin_table(bin_of_value, rule);
  __syncthreads();
  unsigned char* const lane_base = reinterpret_cast<unsigned char*>(warp_table + lane);

  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) atomicAdd(block_totals + in[thread], 1ull);
  if (thread < split.tail) atomicAdd(block_totals + in[split.tail_start + thread], 1ull);

  std::uint64_t totals[C::owned][C::fields] = {};
  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * C::loads, stride = round * gridDim.x;
  uint4 next[C::loads] = {};
  const auto load_round = [&](std::int64_t first) {
#pragma unroll
    for (int k = 0; k < C::loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      if (v < split.vectors) next[k] = vectors[v];
    }
  };
  load_round(blockIdx.x * round);
  int rounds = 0;
  // The loop's trip count is the same for every thread of the block: the flushes' __syncwarp
  // meet all 32 lanes.
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += stride) {
    uint4 data[C::loads];
#pragma unroll
    for (int k = 0; k < C::loads; ++k) data[k] = next[k];
    load_round(first + stride);  // in flight while this round is counted
#pragma unroll
    for (int k = 0; k < C::loads; ++k) {
      if (first + k * std::int64_t(blockDim.x) + threadIdx.x < split.vectors) {
        count_private_word<Counter>(data[k].x, lane_base);
        count_private_word<Counter>(data[k].y, lane_base);
        count_private_word<Counter>(data[k].z, lane_base);
        count_private_word<Counter>(data[k].w, lane_base);
      }
    }
    if (++rounds == C::rounds_per_flush) {  // at most rounds_per_flush x loads x 16 <= counter_max
      flush_private<Counter>(warp_table, totals);
      rounds = 0;
    }
  }
  flush_private<Counter>(warp_table, totals);
  add_lane_totals<Counter>(block_totals, totals);
  __syncthreads();
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x))
    if (block_totals[v] != 0 && bin_of_value[v] >= 0) detail::add_count(counts, bin_of_value[v], block_totals[v]);
}

// ---------------------------------------------------------------------------------------------
// Candidate 11 — hybrid: bytes 0 and 1 of every data word go to candidate 9's private 8-bit
// counters (a shared load and store each, a compare per pair), bytes 2 and 3 to candidate 8's
// lane-column atomics. Should the atomic unit and the load/store path each be a separate limit
// (the first design's atomics and production's loads and stores both stalled near 8 bytes per
// SM and clock), splitting the bytes between them adds their rates. One block per SM: the
// 32 KB column table and 8 KB of private counters per warp, 20 warps in 192 KB.
constexpr int hybrid_max_threads = 640;
constexpr int hybrid_loads = 4;
// The private counters take 2 bytes of every 4: 32 per lane and round, flushed every 7 rounds.
constexpr int hybrid_rounds_per_flush = 255 / (hybrid_loads * 8);

__global__ void __launch_bounds__(hybrid_max_threads, 1)
    count_bytes_hybrid(const std::uint8_t* __restrict__ in, VectorSplit split, EvenBins rule,
                       unsigned long long* __restrict__ counts) {
  using C = PrivateCounters<std::uint8_t>;
  extern __shared__ std::uint32_t hybrid_shared[];  // byte_values x 32 columns, then warps x words x 32
  __shared__ int bin_of_value[byte_values];
  __shared__ unsigned long long block_totals[byte_values];
  std::uint32_t* const columns = hybrid_shared;
  const int lane = int(threadIdx.x) % 32;
  std::uint32_t* const warp_table = hybrid_shared + byte_values * 32 + int(threadIdx.x) / 32 * (C::words * 32);
  for (int w = int(threadIdx.x); w < byte_values * 32; w += int(blockDim.x)) columns[w] = 0;
  for (int w = 0; w < C::words; ++w) warp_table[w * 32 + lane] = 0;
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x)) block_totals[v] = 0;
  fill_bin_table(bin_of_value, rule);
  __syncthreads();
  unsigned char* const lane_base = reinterpret_cast<unsigned char*>(warp_table + lane);
  std::uint32_t* const my_column = columns + lane;

  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread < split.head) atomicAdd(block_totals + in[thread], 1ull);
  if (thread < split.tail) atomicAdd(block_totals + in[split.tail_start + thread], 1ull);

  // A column counter gains at most 8 bytes per warp, load and round (bytes 2 and 3 of 4 words).
  const std::uint32_t column_gain = blockDim.x / 32 * hybrid_loads * 8;
  std::uint32_t column_bound = 0;
  std::uint64_t totals[C::owned][C::fields] = {};
  const auto* vectors = reinterpret_cast<const uint4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * hybrid_loads, stride = round * gridDim.x;
  uint4 next[hybrid_loads] = {};
  const auto load_round = [&](std::int64_t first) {
#pragma unroll
    for (int k = 0; k < hybrid_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      if (v < split.vectors) next[k] = vectors[v];
    }
  };
  load_round(blockIdx.x * round);
  int rounds = 0;
  // Block-uniform trip count: the merges' __syncthreads and the flushes' __syncwarp meet everyone.
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += stride) {
    if (column_bound > atomic_counter_limit - column_gain) {
      merge_lane_columns(columns, bin_of_value, counts);
      column_bound = 0;
    }
    uint4 data[hybrid_loads];
#pragma unroll
    for (int k = 0; k < hybrid_loads; ++k) data[k] = next[k];
    load_round(first + stride);
#pragma unroll
    for (int k = 0; k < hybrid_loads; ++k) {
      if (first + k * std::int64_t(blockDim.x) + threadIdx.x < split.vectors) {
        const std::uint32_t words[4] = {data[k].x, data[k].y, data[k].z, data[k].w};
#pragma unroll
        for (const std::uint32_t word : words) {
          atomicAdd(my_column + byte_of(word, 2) * 32, 1u);
          atomicAdd(my_column + byte_of(word, 3) * 32, 1u);
          count_private_pair<std::uint8_t>(byte_of(word, 0), byte_of(word, 1), lane_base);
        }
      }
    }
    column_bound += column_gain;
    if (++rounds == hybrid_rounds_per_flush) {  // 7 x 32 = 224 <= 255
      flush_private<std::uint8_t>(warp_table, totals);
      rounds = 0;
    }
  }
  flush_private<std::uint8_t>(warp_table, totals);
  add_lane_totals<std::uint8_t>(block_totals, totals);
  merge_lane_columns(columns, bin_of_value, counts);  // its __syncthreads orders the totals too
  for (int v = int(threadIdx.x); v < byte_values; v += int(blockDim.x))
    if (block_totals[v] != 0 && bin_of_value[v] >= 0) detail::add_count(counts, bin_of_value[v], block_totals[v]);
}

template <class Counter>
void launch_private(const std::uint8_t* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                    cudaStream_t stream) {
  using C = PrivateCounters<Counter>;
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  const int static_shared = 3 * 1024;  // the bin table and the block totals
  const int warps = std::max(1, std::min(C::max_threads / 32, (limits.shared_per_block - static_shared) / C::warp_bytes));
  const int threads = warps * 32;
  const std::size_t shared = std::size_t(warps) * C::warp_bytes;
  const VectorSplit split = detail::split_into_vectors(in, n);
  const auto kernel = count_bytes_in_private_counters<Counter>;
  const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                                  split.vectors, std::int64_t(threads) * C::loads, op_name);
  kernel<<<blocks, threads, shared, stream>>>(in, split, rule, counts);
  detail::check_launch(op_name, "count_bytes_in_private_counters");
}

void launch_hybrid(const std::uint8_t* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                   cudaStream_t stream) {
  using C = PrivateCounters<std::uint8_t>;
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  const int static_shared = 3 * 1024, columns = byte_values * 32 * 4;
  const int warps =
      std::max(1, std::min(hybrid_max_threads / 32, (limits.shared_per_block - static_shared - columns) / C::warp_bytes));
  const int threads = warps * 32;
  const std::size_t shared = std::size_t(columns) + std::size_t(warps) * C::warp_bytes;
  const VectorSplit split = detail::split_into_vectors(in, n);
  const unsigned blocks = detail::persistent_grid(reinterpret_cast<const void*>(count_bytes_hybrid), threads, shared,
                                                  split.vectors, std::int64_t(threads) * hybrid_loads, op_name);
  count_bytes_hybrid<<<blocks, threads, shared, stream>>>(in, split, rule, counts);
  detail::check_launch(op_name, "count_bytes_hybrid");
}

std::string bytes_only(const Problem& problem) {
  if (problem.dtype == "uint8") return {};
  return "a candidate design for uint8 data";
}

template <void (*Count)(const std::uint8_t*, std::int64_t, const EvenBins&, unsigned long long*, cudaStream_t)>
void run_candidate(HistogramWorkspace& w, cudaStream_t stream) {
  ROOFLAB_CUDA(op_name, cudaMemsetAsync(w.counts.data(), 0, w.counts.bytes(), stream));
  Count(w.input<std::uint8_t>(), w.n, detail::make_even_bins(w.bins, w.lo, w.hi), w.device_counts(), stream);
}

ROOFLAB_VARIANT(Variant{
    "histogram", 8, "lane-atomics",
    "uint8: one 256 x 32 table per block, column = lane: conflict-free shared atomics, 48 warps per SM",
    Where::gpu, false, bytes_only, on<HistogramWorkspace>(run_candidate<count_bytes_lane_atomics>)});

ROOFLAB_VARIANT(Variant{
    "histogram", 9, "private-8bit",
    "uint8: production's lane-private counters at 8 bits (24 warps per SM), flushed every 192 bytes",
    Where::gpu, false, bytes_only, on<HistogramWorkspace>(run_candidate<count_bytes_private_8bit>)});

ROOFLAB_VARIANT(Variant{
    "histogram", 10, "private-16bit",
    "uint8: lane-private 16-bit counters, one copy (12 warps per SM), bytes counted in pairs",
    Where::gpu, false, bytes_only, on<HistogramWorkspace>(run_candidate<count_bytes_private_16bit>)});

ROOFLAB_VARIANT(Variant{
    "histogram", 11, "hybrid",
    "uint8: half the bytes by lane-column atomics (8), half by private 8-bit counters (9), 20 warps per SM",
    Where::gpu, false, bytes_only, on<HistogramWorkspace>(run_candidate<count_bytes_hybrid_split>)});

}  // namespace

void count_bytes_lane_atomics(const std::uint8_t* in, std::int64_t n, const EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream) {
  const std::size_t shared = std::size_t(byte_values) * 32 * 4;
  const VectorSplit split = detail::split_into_vectors(in, n);
  const unsigned blocks =
      detail::persistent_grid(reinterpret_cast<const void*>(count_bytes_in_lane_columns), atomic_threads, shared,
                              split.vectors, std::int64_t(atomic_threads) * atomic_loads, op_name);
  count_bytes_in_lane_columns<<<blocks, atomic_threads, shared, stream>>>(in, split, rule, counts);
  detail::check_launch(op_name, "count_bytes_in_lane_columns");
}

void count_bytes_private_8bit(const std::uint8_t* in, std::int64_t n, const EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream) {
  launch_private<std::uint8_t>(in, n, rule, counts, stream);
}

void count_bytes_private_16bit(const std::uint8_t* in, std::int64_t n, const EvenBins& rule,
                               unsigned long long* counts, cudaStream_t stream) {
  launch_private<std::uint16_t>(in, n, rule, counts, stream);
}

void count_bytes_hybrid_split(const std::uint8_t* in, std::int64_t n, const EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream) {
  launch_hybrid(in, n, rule, counts, stream);
}

}  // namespace rooflab::bench
