// The histogram ladder (the memory-basics lab): the same int32 values counted seven ways, from one
// global atomic per value to block, warp and packed counters in shared memory; the production path,
// and CUB's HistogramEven for comparison. Every rung bins with the same exact rule (even_bins.cuh):
// the ladder is about where and how the counting happens.
// Rung 8 counts uint8 data, production's byte kernel by itself; rung 9 is rung 2 launched as the
// lab launches its hist.
#include <cub/device/device_histogram.cuh>
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/device_features.hpp"
#include "core/device_info.hpp"
#include "histogram/counting.cuh"
#include "histogram/histogram_workspace.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/histogram.hpp"

namespace rooflab::bench {
namespace {

using detail::bin_of;
using detail::EvenBins;

constexpr const char* op_name = "bench histogram";
constexpr int rung_threads = 256;
constexpr int rung_warps = rung_threads / 32;

EvenBins rule_of(const HistogramWorkspace& w) { return detail::make_even_bins(w.bins, w.lo, w.hi); }

void zero_counts(HistogramWorkspace& w, cudaStream_t stream) {
  ROOFLAB_CUDA(op_name, "zeroing the counts",
               cudaMemsetAsync(w.counts.data(), 0, w.counts.bytes(), stream));
}

std::string int32_only(const Problem& problem) {
  if (problem.dtype == "int32") return {};
  return "the ladder's rungs are built for int32 (the memory-basics lab's type); production takes "
         "every type";
}

// A limit for rungs that keep `copies` histograms of 32-bit counters in one block.
std::function<std::string(const Problem&)> shared_counters_fit(int copies) {
  return [copies](const Problem& problem) {
    std::string why = int32_only(problem);
    if (why.empty() && problem.bins * 4 * copies > shared_per_block_for_rungs())
      why = std::to_string(copies) + " x bins x 4 bytes of counters exceed a block's shared memory";
    return why;
  };
}

// Every block resident at once, sized by the occupancy of `kernel`.
template <class Kernel>
unsigned resident_grid(Kernel kernel, std::size_t shared, std::int64_t items,
                       std::int64_t items_per_round) {
  return detail::persistent_grid(reinterpret_cast<const void*>(kernel), rung_threads, shared, items,
                                 items_per_round, op_name);
}

// Adds a block's copies of the counters into the output, skipping zeros unless every_bin.
__device__ void add_block_counts(const std::uint32_t* block_counts, int copies, int bins,
                                 unsigned long long* counts, bool every_bin = false) {
  __syncthreads();
  for (int bin = int(threadIdx.x); bin < bins; bin += int(blockDim.x)) {
    std::uint64_t total = 0;
    for (int c = 0; c < copies; ++c) total += block_counts[c * bins + bin];
    if (every_bin || total != 0) atomicAdd(counts + bin, static_cast<unsigned long long>(total));
  }
}

__device__ void zero_block_counts(std::uint32_t* block_counts, int words) {
  for (int w = int(threadIdx.x); w < words; w += int(blockDim.x)) block_counts[w] = 0;
  __syncthreads();
}

// Rung 1 — naive global atomics (the memory-basics lab's naiveHist).
// One atomicAdd on the output per value: every increment is a round trip to L2, and all the
// threads of the GPU that hit one bin queue on one address there.
__global__ void histogram_naive(const std::int32_t* __restrict__ in, std::int64_t n, EvenBins rule,
                                unsigned long long* counts) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (const int bin = bin_of(in[i], rule); bin >= 0) atomicAdd(counts + bin, 1ull);
  }
}

// Rung 2 — a histogram per block in shared memory (the memory-basics lab's hist).
// The atomics stay in the SM's shared memory, and a block adds its counters to the output once,
// at the end. A hot bin is still contended by all threads of the block. The launch is the
// ladder's (a resident grid, only non-zero counters added); the lab launches a thread per value.
template <bool EveryBin>
__global__ void histogram_per_block(const std::int32_t* __restrict__ in, std::int64_t n,
                                    EvenBins rule, unsigned long long* counts) {
  extern __shared__ std::uint32_t block_counts[];
  zero_block_counts(block_counts, rule.bins);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (const int bin = bin_of(in[i], rule); bin >= 0) atomicAdd(block_counts + bin, 1u);
  }
  add_block_counts(block_counts, 1, rule.bins, counts, EveryBin);
}

// Rung 3 — a histogram per warp.
// Each warp counts into its own copy, so warps never queue on each other's counters; a hot bin is
// contended by the 32 lanes of one instruction, not by a block. The copies are summed at the end.
__global__ void histogram_per_warp(const std::int32_t* __restrict__ in, std::int64_t n,
                                   EvenBins rule, unsigned long long* counts) {
  extern __shared__ std::uint32_t block_counts[];
  zero_block_counts(block_counts, rung_warps * rule.bins);
  std::uint32_t* warp_counts = block_counts + threadIdx.x / 32 * rule.bins;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (const int bin = bin_of(in[i], rule); bin >= 0) atomicAdd(warp_counts + bin, 1u);
  }
  add_block_counts(block_counts, rung_warps, rule.bins, counts);
}

// Rungs 4 and 5 — 16-byte loads, several in flight; then warp aggregation.
// Rung 4: each thread loads four int4 (16 values) before counting any, 64 bytes in flight per
// thread instead of 4, which is what hides the memory latency; a quarter of the load instructions.
// Rung 5: lanes holding the same bin find each other with __match_any_sync and the lowest adds
// the group's size: one atomic per distinct bin per warp, so all-equal data no longer serializes
// 32 atomics on one address (at the price of a match per value on uniform data).
constexpr int rung_loads = 4;
template <bool Aggregate>
__global__ void histogram_vectorized(const std::int32_t* __restrict__ in, detail::VectorSplit split,
                                     EvenBins rule, unsigned long long* counts) {
  extern __shared__ std::uint32_t block_counts[];
  zero_block_counts(block_counts, rung_warps * rule.bins);
  std::uint32_t* warp_counts = block_counts + threadIdx.x / 32 * rule.bins;
  const std::int64_t thread = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (thread < split.head)
    if (const int bin = bin_of(in[thread], rule); bin >= 0) atomicAdd(warp_counts + bin, 1u);
  if (thread < split.tail)
    if (const int bin = bin_of(in[split.tail_start + thread], rule); bin >= 0)
      atomicAdd(warp_counts + bin, 1u);
  const auto* vectors = reinterpret_cast<const int4*>(in + split.head);
  const std::int64_t round = std::int64_t(blockDim.x) * rung_loads;
  for (std::int64_t first = blockIdx.x * round; first < split.vectors; first += gridDim.x * round) {
    int4 data[rung_loads];
    bool valid[rung_loads];
#pragma unroll
    for (int k = 0; k < rung_loads; ++k) {
      const std::int64_t v = first + k * std::int64_t(blockDim.x) + threadIdx.x;
      valid[k] = v < split.vectors;
      if (valid[k]) data[k] = vectors[v];
    }
#pragma unroll
    for (int k = 0; k < rung_loads; ++k) {
      const std::int32_t values[4] = {data[k].x, data[k].y, data[k].z, data[k].w};
#pragma unroll
      for (const std::int32_t value : values) {
        const int bin = valid[k] ? bin_of(value, rule) : -1;
        if constexpr (Aggregate) {
          const unsigned same = __match_any_sync(0xFFFFFFFF, bin);
          if (bin >= 0 && threadIdx.x % 32 == __ffs(same) - 1)
            atomicAdd(warp_counts + bin, unsigned(__popc(same)));
        } else if (bin >= 0) {
          atomicAdd(warp_counts + bin, 1u);
        }
      }
    }
  }
  add_block_counts(block_counts, rung_warps, rule.bins, counts);
}

std::size_t warp_copies_bytes(const HistogramWorkspace& w) {
  return std::size_t(rung_warps) * w.bins * 4;
}

template <bool Aggregate>
void launch_vectorized(HistogramWorkspace& w, cudaStream_t stream) {
  zero_counts(w, stream);
  const auto* in = w.input<std::int32_t>();
  const detail::VectorSplit split = detail::split_into_vectors(in, w.n);
  const auto kernel = histogram_vectorized<Aggregate>;
  const unsigned blocks = resident_grid(kernel, warp_copies_bytes(w), split.vectors,
                                        std::int64_t(rung_threads) * rung_loads);
  kernel<<<blocks, rung_threads, warp_copies_bytes(w), stream>>>(in, split, rule_of(w),
                                                                 w.device_counts());
  detail::check_launch(op_name, "histogram_vectorized");
}

ROOFLAB_VARIANT(Variant{"histogram", 1, "naive-global",
                        "one atomicAdd on the output per value (the memory-basics lab's naiveHist)",
                        Where::gpu, false, int32_only,
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
                          zero_counts(w, stream);
                          // One resident wave where an SM holds 2048 threads (sm_80, sm_90).
                          const unsigned blocks = current_sm_count() * (2048 / rung_threads);
                          histogram_naive<<<blocks, rung_threads, 0, stream>>>(
                              w.input<std::int32_t>(), w.n, rule_of(w), w.device_counts());
                          detail::check_launch(op_name, "histogram_naive");
                        })});

ROOFLAB_VARIANT(Variant{
    "histogram", 2, "shared-block",
    "a histogram per block in shared memory (the memory-basics lab's hist)", Where::gpu, false,
    shared_counters_fit(1), on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
      zero_counts(w, stream);
      const std::size_t shared = std::size_t(w.bins) * 4;
      const unsigned blocks = resident_grid(histogram_per_block<false>, shared, w.n, rung_threads);
      histogram_per_block<false><<<blocks, rung_threads, shared, stream>>>(
          w.input<std::int32_t>(), w.n, rule_of(w), w.device_counts());
      detail::check_launch(op_name, "histogram_per_block");
    })});

ROOFLAB_VARIANT(Variant{
    "histogram", 3, "shared-warp", "a histogram per warp: warps never contend for a counter",
    Where::gpu, false, shared_counters_fit(rung_warps),
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
      zero_counts(w, stream);
      const unsigned blocks =
          resident_grid(histogram_per_warp, warp_copies_bytes(w), w.n, rung_threads);
      histogram_per_warp<<<blocks, rung_threads, warp_copies_bytes(w), stream>>>(
          w.input<std::int32_t>(), w.n, rule_of(w), w.device_counts());
      detail::check_launch(op_name, "histogram_per_warp");
    })});

ROOFLAB_VARIANT(Variant{"histogram", 4, "vector-loads",
                        "four int4 loads per thread in flight before counting", Where::gpu, false,
                        shared_counters_fit(rung_warps),
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
                          launch_vectorized<false>(w, stream);
                        })});

ROOFLAB_VARIANT(Variant{"histogram", 5, "warp-aggregated",
                        "__match_any_sync: one atomic per distinct bin per warp", Where::gpu, false,
                        shared_counters_fit(rung_warps),
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
                          launch_vectorized<true>(w, stream);
                        })});

// Rung 6 — many bins: the production path's 16-bit counters (see count_values_shared and the
// comment above flush_large_counters in counting.cuh), run at any bin count for comparison.
ROOFLAB_VARIANT(Variant{
    "histogram", 6, "packed-16bit",
    "16-bit counters two to a word, flushed before they wrap: 2x the bins", Where::gpu, false,
    [](const Problem& problem) {
      std::string why = int32_only(problem);
      if (why.empty() && detail::shared_counter_words<true>(problem.bins, 1) * 4 + 1024 >
                             shared_per_block_for_rungs())
        why = "bins x 2 bytes of counters exceed a block's shared memory";
      return why;
    },
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
      zero_counts(w, stream);
      const auto* in = w.input<std::int32_t>();
      const detail::VectorSplit split = detail::split_into_vectors(in, w.n);
      const EvenBins rule = rule_of(w);
      constexpr int threads = detail::shared_value_threads;
      const std::size_t shared = std::size_t(detail::shared_counter_words<true>(w.bins, 1)) * 4;
      detail::with_bin_evaluation<std::int32_t>(rule, [&](auto evaluation) {
        const auto kernel =
            detail::count_values_shared<std::int32_t, true, decltype(evaluation)::value>;
        const unsigned blocks =
            detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                    split.vectors, threads * detail::value_loads, op_name);
        kernel<<<blocks, threads, shared, stream>>>(in, split, rule, 1,
                                                    detail::totals_for(w.device_counts(), w.n));
      });
      detail::check_launch(op_name, "count_values_shared<16-bit>");
    })});

// Rung 7 — production: rooflab::histogram_even (histogram.cu): rung 4's per-warp 32-bit counters
// and loads with every value added without a branch (its bin or a spare counter), packed
// or global counters for many bins, and rung 8's lane-column table for uint8.
ROOFLAB_VARIANT(Variant{
    "histogram", 7, "production", "rooflab::histogram_even: every type, any n, up to 2^24 bins",
    Where::gpu, false, no_limit,
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
      visit_histogram_type(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        histogram_even(w.input<T>(), w.n, w.bins, w.lo, w.hi, w.counts.data(), stream);
      });
    })});

// Rung 8 — lane-atomics (uint8): the byte kernel production runs (counting.cuh), launched here by
// itself. Shared atomics into one 256 x 32 table per block, counter (value, lane) in the lane's
// own bank: no bank conflicts whatever the bytes, and no thread ever waits on shared memory (the
// atomics return nothing), so 48 warps per SM keep the atomic unit busy. It replaced
// lane-private counters bumped by load, add and store, which ran half as fast: each byte waited
// for its counter's load (docs/histogram.md has the four designs measured side by side).
std::string bytes_only(const Problem& problem) {
  if (problem.dtype == "uint8") return {};
  return "the lane-column table counts bytes (uint8)";
}

ROOFLAB_VARIANT(Variant{"histogram", 8, "lane-atomics",
                        "uint8: one 256 x 32 table per block, column = lane: conflict-free shared "
                        "atomics, 48 warps per SM",
                        Where::gpu, false, bytes_only,
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
                          zero_counts(w, stream);
                          detail::count_bytes(w.input<std::uint8_t>(), w.n, rule_of(w),
                                              detail::totals_for(w.device_counts(), w.n), stream,
                                              op_name);
                        })});

// CUB's counts are 32-bit ints (its usual use, and its fastest); widened to the lab's uint64.
__global__ void widen_counts(const int* narrow, std::uint64_t* wide, int bins) {
  const int bin = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (bin < bins) wide[bin] = std::uint64_t(narrow[bin]);
}

template <class T, class Level>
void cub_histogram(HistogramWorkspace& w, cudaStream_t stream) {
  const auto lower = Level(w.lo), upper = Level(w.hi);  // exact for the lab's bounds
  std::size_t temp_bytes = 0;
  ROOFLAB_CUDA(op_name, "sizing cub::DeviceHistogram::HistogramEven's temporary storage",
               cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, w.input<T>(),
                                                   static_cast<int*>(nullptr), w.bins + 1, lower,
                                                   upper, w.n, stream));
  const std::size_t counts_bytes = (std::size_t(w.bins) * sizeof(int) + 255) / 256 * 256;
  StreamBuffer temp(counts_bytes + temp_bytes, stream, op_name);
  int* narrow = temp.as<int>();
  ROOFLAB_CUDA(op_name, "running cub::DeviceHistogram::HistogramEven",
               cub::DeviceHistogram::HistogramEven(static_cast<char*>(temp.data()) + counts_bytes,
                                                   temp_bytes, w.input<T>(), narrow, w.bins + 1,
                                                   lower, upper, w.n, stream));
  widen_counts<<<unsigned((w.bins + 255) / 256), 256, 0, stream>>>(narrow, w.counts.data(), w.bins);
  detail::check_launch(op_name, "widen_counts");
  w.binned_by_cub = true;
}

// Rung 9 — rung 2's kernel launched as the memory-basics lab launches its hist (l. 115-119): a
// thread per value (blocks of 256: the lab does not give its threadsPerBlock), and every block adds
// every bin to the output, zero or not. Each block then counts only 256 values, and the blocks'
// adds to the output number blocks x bins: at 256 bins as many global atomics as rung 1's, though
// spread over the bins.
ROOFLAB_VARIANT(Variant{
    "histogram", 9, "shared-block-per-value",
    "rung 2 launched as the memory-basics lab launches hist: a thread per value, every bin added",
    Where::gpu, false, shared_counters_fit(1),
    on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
      zero_counts(w, stream);
      const std::size_t shared = std::size_t(w.bins) * 4;
      // Lets the kernel have its shared memory beyond 48 KB (the count of resident blocks unused).
      detail::resident_blocks(reinterpret_cast<const void*>(histogram_per_block<true>),
                              rung_threads, shared, op_name);
      const std::int64_t blocks =
          std::max<std::int64_t>(1, (w.n + rung_threads - 1) / rung_threads);
      histogram_per_block<true><<<unsigned(blocks), rung_threads, shared, stream>>>(
          w.input<std::int32_t>(), w.n, rule_of(w), w.device_counts());
      detail::check_launch(op_name, "histogram_per_block_every_bin");
    })});

// CUB HistogramEven: integer samples binned exactly in integers (int levels), floats and doubles
// as (v - lo) * (bins / (hi - lo)) in their own type; on the lab's data both agree with the rule.
ROOFLAB_VARIANT(Variant{"histogram", 20, "cub",
                        "CUB DeviceHistogram::HistogramEven (32-bit counts, widened)", Where::gpu,
                        true,
                        [](const Problem& problem) -> std::string {
                          if (problem.n >= (std::int64_t(1) << 31))
                            return "CUB's 32-bit counts could overflow (limit n < 2^31)";
                          return {};
                        },
                        on<HistogramWorkspace>([](HistogramWorkspace& w, cudaStream_t stream) {
                          switch (w.dtype) {
                            case DType::u8: return cub_histogram<std::uint8_t, int>(w, stream);
                            case DType::f32: return cub_histogram<float, float>(w, stream);
                            case DType::f64: return cub_histogram<double, double>(w, stream);
                            default: return cub_histogram<std::int32_t, int>(w, stream);
                          }
                        })});

}  // namespace
}  // namespace rooflab::bench
