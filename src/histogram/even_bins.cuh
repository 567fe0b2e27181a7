#pragma once
// The bin rule of rooflab::histogram_even on the device, shared by the production path and every
// rung of the ladder (the ladder is about counting, not about binning). The rule, the constants
// and the single-precision evaluation (with its error argument) are in even_bins.hpp; here are
// the rule itself in double, the double-precision fast evaluation, and the per-type helpers.
//
// Double (fast_bin_double): t = fl(fl(v - lo) * scale), with the same first step as the rule.
//   Both are fl(v - lo) * bins / range times two rounding factors (1 + u), |u| <= 2^-53 (a
//   subnormal product d * bins is exact), so |t - q| <= 4.01 * 2^-53 * bins < 2^-26 for
//   bins <= 2^24. Where t lies at least 2^-20 from the nearest integer, floor(t) = floor(q),
//   and t >= 0 and floor(q) <= bins - 1 there (a q at bins puts t next to an integer).
//   Next to 0 and bins, the histogram's own edges at lo and hi, the bin needs no rule: floor(q)
//   is 0 there (q >= 0) and bins - 1 (a q at bins is clamped), which the bin, clamped at
//   bins - 1, is. Only the edges inside, 1 to bins - 1, are called near. (Integer tests: a
//   clamp of t in double, two more FP64 instructions, cost 11% at 65536 bins instead: 151
//   against 136 us for 50M int32 on an H100.)
// Values a fast evaluation calls near an edge are binned by exact_bin: rarely for random data,
// for every value when integer data has its edges on integers (bin width 1, say). Slower,
// never wrong.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "histogram/even_bins.hpp"

namespace rooflab::detail {

// The rule as the API states it. The intrinsics round each operation once and keep nvcc from
// contracting any of them into a fused multiply-add, so the host's plain expression gives the
// same bits. Not inlined: it is the rare path, and a call keeps the unrolled loops small.
static __device__ __noinline__ int exact_bin(double v, double lo, double bins_d, double range,
                                             int bins) {
  const double t = __ddiv_rn(__dmul_rn(__dsub_rn(v, lo), bins_d), range);
  const int bin = int(t);  // t >= 0, so truncation is floor
  return bin < bins - 1 ? bin : bins - 1;
}

__device__ __forceinline__ int exact_bin(double v, const EvenBins& rule) {
  return exact_bin(v, rule.lo, rule.bins_d, rule.range, rule.bins);
}

// For a counted v: the argument at the top.
__device__ __forceinline__ FastBin fast_bin_double(double v, const EvenBins& rule) {
  // Adding 1.5 * 2^52 rounds a double in [0, 2^51) to the nearest integer, which then sits in
  // the low 32 bits of the sum's encoding: a rounding without a conversion instruction.
  constexpr double round_shift = 6755399441055744.0;
  constexpr double near_edge = 0x1p-20;
  const double t = __dmul_rn(__dsub_rn(v, rule.lo), rule.scale);
  const double shifted = __dadd_rn(t, round_shift);
  const double offset = __dsub_rn(t, __dsub_rn(shifted, round_shift));  // t - nearest, exactly
  const std::uint32_t nearest = std::uint32_t(__double2loint(shifted));
  const int bin = int(nearest - std::uint32_t(offset < 0));
  FastBin result;
  result.bin = min(bin, rule.bins - 1);
  result.near_edge = !(fabs(offset) >= near_edge) && nearest - 1u < std::uint32_t(rule.bins - 1);
  return result;
}

// Whether a value of the histogram's element types lies in [lo, hi), tested in its own type.
// NaN compares false: never counted.
__device__ __forceinline__ bool is_counted(std::int32_t v, const EvenBins& rule) {
  return v >= rule.first_int && v <= rule.last_int;
}

__device__ __forceinline__ bool is_counted(float v, const EvenBins& rule) {
  return v >= rule.first_float && v < rule.end_float;
}

__device__ __forceinline__ bool is_counted(double v, const EvenBins& rule) {
  return v >= rule.lo && v < rule.hi;
}

// Whether the single-precision evaluation may be used for T: never for double data, whose
// values float cannot hold.
template <class T>
constexpr bool single_precision_type = !std::is_same_v<T, double>;

// Whether the integer-edge evaluation (even_bins.hpp) may be used for data of type T.
template <class T>
__host__ __device__ inline bool integer_edges_for(const EvenBins& rule) {
  if constexpr (std::is_same_v<T, std::int32_t>)
    return rule.integer_edges_int;
  else if constexpr (std::is_same_v<T, float>)
    return rule.integer_edges_float;
  else if constexpr (std::is_same_v<T, double>)
    return rule.integer_edges_double;
  else
    return false;
}

// The fast evaluations, chosen per call on the host (a template argument, so that the counting
// loops carry no branch on it).
enum class BinEvaluation {
  double_precision,  // fast_bin_double: every case
  single_precision,  // fast_bin_single: int32 and float data where rule.single_precision
  integer_edges,     // integer_edge_bin: where integer_edges_for<T>(rule); never near an edge
  integer_quotient,  // integer_quotient_slot: int32 data where rule.integer_quotient; never near
};

// The evaluation histogram_even takes for T under `rule`, cheapest first; every one gives the
// rule's bins, so the order is by cost alone (sm_90 SASS of count_values_shared, instructions a
// round of 16 int32 values; docs/histogram.md):
//   integer edges     115, no edge test;
//   integer quotient  131, no edge test (rooflab's scaled int32 took single precision before);
//   single precision  363, with the near-edge values sent to the rule; taken wherever its band
//                     is at most 2^-8 of a bin (make_even_bins), where it beat double precision:
//                     77.7-83.0 against 94.4-99.8 us for 50M int32 at 1024-4096 bins, H100;
//   double precision  the rest (double data, wide ranges, many bins).
template <class T>
__host__ __device__ inline BinEvaluation choose_bin_evaluation(const EvenBins& rule) {
  if (integer_edges_for<T>(rule)) return BinEvaluation::integer_edges;
  if (std::is_same_v<T, std::int32_t> && rule.integer_quotient)
    return BinEvaluation::integer_quotient;
  if (single_precision_type<T> && rule.single_precision) return BinEvaluation::single_precision;
  return BinEvaluation::double_precision;
}

// Calls f(std::integral_constant<BinEvaluation, E>{}) with the E that choose_bin_evaluation<T>
// picks: how the host turns the choice into a kernel's template argument.
template <class T, class F>
void with_bin_evaluation(const EvenBins& rule, F&& f) {
  using E = BinEvaluation;
  switch (choose_bin_evaluation<T>(rule)) {
    case E::integer_edges: return f(std::integral_constant<E, E::integer_edges>{});
    case E::integer_quotient:
      if constexpr (std::is_same_v<T, std::int32_t>)
        return f(std::integral_constant<E, E::integer_quotient>{});
      break;
    case E::single_precision:
      if constexpr (single_precision_type<T>)
        return f(std::integral_constant<E, E::single_precision>{});
      break;
    case E::double_precision: break;
  }
  f(std::integral_constant<E, E::double_precision>{});
}

// A fast evaluation's answer for any value: the counter slot it is added to, its bin or
// rule.bins (the spare slot, even_bins.hpp) when it is not counted or lies near an edge, and
// whether it is a counted value near an edge, which the rule itself must bin.
struct FastSlot {
  int slot;
  bool near_edge;
};

template <BinEvaluation E, class T>
__device__ __forceinline__ FastSlot fast_slot(T v, const EvenBins& rule) {
  constexpr bool int32 = std::is_same_v<T, std::int32_t>;
  if constexpr (E == BinEvaluation::integer_edges && int32) {
    return {integer_edge_slot(v, rule), false};  // the range test is the clamp
  } else if constexpr (E == BinEvaluation::integer_quotient && int32) {
    return {integer_quotient_slot(v, rule), false};
  } else if constexpr (E == BinEvaluation::integer_edges) {
    const int bin = integer_edge_bin(v, rule);  // any number for a value that is not counted
    return {is_counted(v, rule) ? bin : rule.bins, false};
  } else {
    const bool counted = is_counted(v, rule);
    FastBin fast;
    if constexpr (E == BinEvaluation::single_precision && single_precision_type<T>)
      fast = fast_bin_single(to_single(v), rule);
    else
      fast = fast_bin_double(double(v), rule);
    return {counted && !fast.near_edge ? fast.bin : rule.bins, counted && fast.near_edge};
  }
}

// The bin of a value, or -1 when it is not counted: for code that bins one value at a time
// (the ladder's rungs, unaligned heads and tails).
template <class T>
__device__ __forceinline__ int bin_of(T v, const EvenBins& rule) {
  FastSlot fast;
  switch (choose_bin_evaluation<T>(rule)) {
    case BinEvaluation::integer_edges:
      fast = fast_slot<BinEvaluation::integer_edges>(v, rule);
      break;
    case BinEvaluation::integer_quotient:
      fast = fast_slot<BinEvaluation::integer_quotient>(v, rule);
      break;
    case BinEvaluation::single_precision:
      fast = fast_slot<BinEvaluation::single_precision>(v, rule);
      break;
    default: fast = fast_slot<BinEvaluation::double_precision>(v, rule);
  }
  if (fast.slot < rule.bins) return fast.slot;
  return fast.near_edge ? exact_bin(double(v), rule) : -1;
}

__device__ __forceinline__ int bin_of(std::uint8_t v, const EvenBins& rule) {
  return is_counted(double(v), rule) ? exact_bin(double(v), rule) : -1;
}

}  // namespace rooflab::detail
