// rooflab::histogram_even, the production path: the ladder's best rungs generalized to every
// type, any n (64-bit), unaligned inputs and up to 2^24 bins, with the exact bin rule.
//
//   uint8             count_bytes: the 256 byte values counted by shared atomics into a table
//                     with a column per lane (conflict-free whatever the bytes), folded into the
//                     bins at the end; the data's bins never matter to the hot loop.
//   int32, float,     count_values_shared with 32-bit counters (one copy per warp where they fit)
//   double            up to ~57K bins, 16-bit packed counters up to ~115K bins (the sizes follow
//                     the device's shared memory), count_values_global beyond.
// The counts are zeroed by a small kernel that the counting kernel overlaps (zero_counts_kernel,
// counting.cuh). Every value path reads 16-byte vectors, four a thread per round (the
// shared-counter kernels load the next round while they count one), and bins without a branch by
// the cheapest evaluation that provably gives the rule's bins (even_bins.hpp/.cuh,
// choose_bin_evaluation):
//   integer edges     lo an integer and a bin width of 2^s (one bin per integer: lo = 0,
//                     hi = bins): (floor(v) - lo) >> s. There every integer value lies
//                     on an edge, which the two evaluations below cannot decide, so each value
//                     went through the rule in double (exact_bin, a division) and a second pass:
//                     138 us against 74.8 us for 50M all-equal int32 on an H100.
//   integer quotient  int32 data between integer bounds, where a multiplier below 2^32 passes
//                     (most bin counts): the rule is then an integer division by an invariant,
//                     done by a multiply-high.
//   single precision  int32 and float data wherever its error bound allows.
//   double precision  the rest.
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

constexpr const char* op_name = "histogram_even";

void check_arguments(const void* in, std::size_t alignment, std::int64_t n, int bins, double lo,
                     double hi, const std::uint64_t* counts) {
  require(n >= 0, op_name, "n", "must not be negative, got " + std::to_string(n));
  require(bins >= 1 && bins <= (1 << 24), op_name, "bins",
          "must be in [1, 2^24], got " + std::to_string(bins));
  require(!std::isnan(lo), op_name, "lo", "is NaN");
  require(!std::isnan(hi), op_name, "hi", "is NaN");
  require(std::isfinite(lo), op_name, "lo", "must be finite");
  require(std::isfinite(hi), op_name, "hi", "must be finite");
  require(lo < hi, op_name, "hi", "must be greater than lo");
  // The rule computes (v - lo) * bins / (hi - lo): every step must stay finite.
  require(
      std::isfinite(hi - lo) && std::isfinite((hi - lo) * bins) && std::isfinite(bins / (hi - lo)),
      op_name, "hi", "hi - lo split into that many bins overflows double precision");
  require(counts != nullptr, op_name, "counts", "is null");
  require(n == 0 || in != nullptr, op_name, "in", "is null");
  require(reinterpret_cast<std::uintptr_t>(in) % alignment == 0, op_name, "in",
          "is not aligned to its element type");
}

// The value kernels with the bin evaluation E (even_bins.cuh).
template <class T, detail::BinEvaluation E>
void histogram_values(const T* in, std::int64_t n, const EvenBins& rule, unsigned long long* counts,
                      cudaStream_t stream) {
  const detail::DeviceLimits& limits = detail::device_limits(op_name);
  const VectorSplit split = detail::split_into_vectors(in, n);
  const detail::Totals totals = detail::totals_for(counts, n);
  const std::size_t bins = std::size_t(rule.bins);
  constexpr int threads = detail::shared_value_threads;
  // 1 KB of the block's shared memory kept for the kernels' static arrays.
  constexpr std::size_t static_shared = 1024;
  // 32-bit counters wherever one copy fits a block (about 57K bins on Hopper), 16-bit packed ones
  // beyond. With one copy of 32-bit counters, 50M int32 took 52.4-72.5 us at 12288 to 56000 bins
  // on an H200, the packed counters 60.5-82.5 us on uniform and normal data and 98.6-232.0 us
  // where most values share a bin (equal, hot, Zipf); on an H100 72.3-92.3 against 80.6-234.1 us.
  // The packed kernel adds 1 or 1 << 16 (ATOMS.ADD in sm_90 SASS) where the 32-bit one
  // increments (ATOMS.POPC.INC), and that is the cost: made increments of 1, its adds counted
  // all-equal data at 65536 bins in 60-62 us instead of 233 (docs/histogram.md). Since a warp
  // whose lanes share one word adds it once (count_values_shared), all-equal and sorted data
  // take 86-101 us there, and only a few hot bins (225-231 us) are left that slow (H200).
  if ((bins + 1) * 4 + static_shared <= std::size_t(limits.shared_per_block)) {
    // 32-bit counters, a copy per warp while the copies take at most a quarter of the SM's
    // shared memory (32 copies of 256 bins, 3 of 4096, 1 of 16384), leaving the rest of the
    // unified L1 to the loads in flight: on an H200, 4096 bins of uniform int32 took 53.6-55.8
    // us with 1 to 6 copies (16-99 KB) and 57.1-57.8 us with 13 (213 KB).
    const int copies = int(std::max<std::size_t>(
        1, std::min<std::size_t>(threads / 32,
                                 std::size_t(limits.shared_per_sm) / 4 / ((bins + 1) * 4))));
    const std::size_t shared =
        std::size_t(detail::shared_counter_words<false>(rule.bins, copies)) * 4;
    const auto kernel = detail::count_values_shared<T, false, E>;
    const unsigned blocks =
        detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                split.vectors, threads * detail::value_loads, op_name);
    detail::launch_after_previous(op_name, kernel, blocks, threads, shared, 1, stream,
                                  "count_values_shared<32-bit>", in, split, rule, copies, totals);
  } else if (const std::size_t shared =
                 std::size_t(detail::shared_counter_words<true>(rule.bins, 1)) * 4;
             shared + static_shared <= std::size_t(limits.shared_per_block)) {
    const auto kernel = detail::count_values_shared<T, true, E>;
    const unsigned blocks =
        detail::persistent_grid(reinterpret_cast<const void*>(kernel), threads, shared,
                                split.vectors, threads * detail::value_loads, op_name);
    detail::launch_after_previous(op_name, kernel, blocks, threads, shared, 1, stream,
                                  "count_values_shared<16-bit>", in, split, rule, 1, totals);
  } else {
    constexpr int global_threads = detail::global_value_threads;
    const auto kernel = detail::count_values_global<T, E>;
    const unsigned blocks =
        detail::persistent_grid(reinterpret_cast<const void*>(kernel), global_threads, 0,
                                split.vectors, global_threads * detail::value_loads, op_name);
    detail::launch_after_previous(op_name, kernel, blocks, global_threads, 0, 1, stream,
                                  "count_values_global", in, split, rule, totals);
  }
}

}  // namespace

namespace detail {

template <class T>
void histogram_even_elements(const T* in, std::int64_t n, int bins, double lo, double hi,
                             std::uint64_t* counts, cudaStream_t stream) {
  check_arguments(in, alignof(T), n, bins, lo, hi, counts);
  auto* const output = reinterpret_cast<unsigned long long*>(counts);  // atomicAdd's 64-bit type
  if (n == 0) {
    ROOFLAB_CUDA(op_name, "zeroing " + std::to_string(bins) + " counts",
                 cudaMemsetAsync(counts, 0, std::size_t(bins) * sizeof(std::uint64_t), stream));
    return;
  }
  // Zeroed by a kernel that the counting kernel may overlap (detail::zero_counts_kernel).
  detail::queue_zero_counts(output, bins, stream, op_name);
  const EvenBins rule = detail::make_even_bins(bins, lo, hi);
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    detail::count_bytes(in, n, rule, detail::totals_for(output, n), stream, op_name);
  } else {
    detail::with_bin_evaluation<T>(rule, [&](auto evaluation) {
      histogram_values<T, decltype(evaluation)::value>(in, n, rule, output, stream);
    });
  }
}

#define ROOFLAB_INSTANTIATE_HISTOGRAM(T)                                                \
  template void histogram_even_elements<T>(const T*, std::int64_t, int, double, double, \
                                           std::uint64_t*, cudaStream_t);
ROOFLAB_INSTANTIATE_HISTOGRAM(std::uint8_t)
ROOFLAB_INSTANTIATE_HISTOGRAM(std::int32_t)
ROOFLAB_INSTANTIATE_HISTOGRAM(float)
ROOFLAB_INSTANTIATE_HISTOGRAM(double)
#undef ROOFLAB_INSTANTIATE_HISTOGRAM

}  // namespace detail
}  // namespace rooflab
