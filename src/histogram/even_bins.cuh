#pragma once
// The bin rule of rooflab::histogram_even on the device, shared by the production path and every
// rung of the ladder (the ladder is about counting, not about binning):
//
//   a value v with lo <= v < hi falls into bin min(bins - 1, floor((double(v) - lo) * bins / (hi - lo)))
//
// evaluated in double precision exactly as written. exact_bin does that, one IEEE operation at a
// time; fast_bin replaces the division by a multiplication and falls back to exact_bin only where
// the two could disagree. The argument, for every v in [lo, hi) (and lo, hi, bins validated by
// the caller so that nothing below overflows):
//   d = fl(v - lo) is shared by both; 0 <= d <= fl(hi - lo) = range.
//   rule:  q = fl(fl(d * bins) / range)       fast: t = fl(d * scale), scale = fl(bins / range)
//   Each is d * bins / range times two factors (1 + e), |e| <= 2^-53 (d * bins is exact when it
//   is subnormal), so |q - t| <= 4.01 * 2^-53 * bins * (1 + 2^-52) < 2^-27 for bins <= 2^24.
//   If t is at least near_edge = 2^-20 away from the nearest integer k, q lies on the same side
//   of k and within the same unit interval: floor(q) = floor(t). Otherwise exact_bin decides.
// The fast path is 5 double additions and multiplications; the exact one adds a division, which
// only values within 2^-20 of a bin edge pay (or every value, for integer data whose edges fall
// on integers: still exact, only slower).
#include <cuda_runtime.h>

namespace rooflab::detail {

struct EvenBins {
  double lo = 0;
  double hi = 0;
  double range = 0;   // hi - lo, rounded as the rule rounds it
  double bins_d = 0;  // bins, as the rule multiplies by it
  double scale = 0;   // bins / range, for the fast evaluation
  int bins = 0;
};

// lo < hi finite, 1 <= bins <= 2^24, range * bins and bins / range finite (histogram_even checks).
inline EvenBins make_even_bins(int bins, double lo, double hi) {
  EvenBins rule;
  rule.lo = lo;
  rule.hi = hi;
  rule.range = hi - lo;
  rule.bins_d = double(bins);
  rule.scale = rule.bins_d / rule.range;
  rule.bins = bins;
  return rule;
}

// NaN compares false: never counted.
__device__ __forceinline__ bool is_counted(double v, const EvenBins& rule) {
  return v >= rule.lo && v < rule.hi;
}

// The rule as the API states it. The intrinsics round each operation once and keep nvcc from
// contracting any of them into a fused multiply-add, so the host's plain expression gives the
// same bits. Not inlined: it is the rare path, and a call keeps the unrolled loops small.
static __device__ __noinline__ int exact_bin(double v, EvenBins rule) {
  const double t = __ddiv_rn(__dmul_rn(__dsub_rn(v, rule.lo), rule.bins_d), rule.range);
  const int bin = int(t);  // t >= 0, so truncation is floor
  return bin < rule.bins - 1 ? bin : rule.bins - 1;
}

// For a counted v: the same bin as exact_bin (see the argument at the top).
__device__ __forceinline__ int fast_bin(double v, const EvenBins& rule) {
  // Adding 1.5 * 2^52 rounds a double in [0, 2^51) to the nearest integer, which then sits in
  // the low 32 bits of the sum's encoding: a rounding without a conversion instruction.
  constexpr double round_shift = 6755399441055744.0;
  constexpr double near_edge = 0x1p-20;
  const double t = __dmul_rn(__dsub_rn(v, rule.lo), rule.scale);
  const double shifted = __dadd_rn(t, round_shift);
  const int nearest = __double2loint(shifted);
  const double offset = __dsub_rn(t, __dsub_rn(shifted, round_shift));  // t - nearest, exactly
  if (fabs(offset) < near_edge) return exact_bin(v, rule);
  const int bin = nearest - (offset < 0);
  return bin < rule.bins - 1 ? bin : rule.bins - 1;
}

}  // namespace rooflab::detail
