#pragma once
// The bin rule of rooflab::histogram_even on the device, shared by the production path and every
// rung of the ladder (the ladder is about counting, not about binning):
//
//   a value v with lo <= v < hi falls into bin min(bins - 1, floor((double(v) - lo) * bins / (hi - lo)))
//
// evaluated in double precision exactly as written. exact_bin does that, one IEEE operation at a
// time. The fast evaluations replace the division by a multiplication with scale = bins / range
// and fall back to exact_bin only where they could disagree with it. Let q be the rule's
// quotient, r = (v - lo) * bins / (hi - lo) the real one, and t a fast value; whenever |t - q| < e
// and t is at least e away from the nearest integer, q lies on the same side of that integer
// and within the same unit interval, so floor(q) = floor(t); otherwise exact_bin decides.
//
// Double (fast_bin): t = fl(fl(v - lo) * scale), with the same first step as the rule. Both are
//   fl(v - lo) * bins / range times two rounding factors (1 + u), |u| <= 2^-53 (a subnormal
//   product d * bins is exact), so |t - q| <= 4.01 * 2^-53 * bins < 2^-27 for bins <= 2^24:
//   e = 2^-20. Five additions and multiplications per value.
// Float (fast_bin_float, int32 and float data where make_even_bins allows it): t is evaluated in
//   float from float(v), float(lo) and float(scale). Each of the three inputs and two operations
//   is off by a factor (1 + u), |u| <= 2^-24, so
//     |t - r| <= (3 r + scale * (|v| + |lo|)) * 2^-24 (1 + 2^-20)   and   |q - r| <= 5 * 2^-53 * bins,
//   and with r < bins and |v| <= M = max(|lo|, |hi|), |t - q| < E = (3.02 bins + 1.02 scale (M + |lo|)) 2^-24.
//   The threshold is e = 2E, used only when e <= 2^-8 (at most a few values in a thousand near an
//   edge), bins <= 2^21 and every magnitude within 2^100 (no overflow, no subnormal surprises).
//   Half the work of the double path, on the FP32 units.
// Values whose fast value lies within e of an edge pay for a division: rarely for random data,
// for every value when integer data has its edges on integers (bin width 1, say). Slower, never
// wrong.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

namespace rooflab::detail {

struct EvenBins {
  double lo = 0;
  double hi = 0;
  double range = 0;   // hi - lo, rounded as the rule rounds it
  double bins_d = 0;  // bins, as the rule multiplies by it
  double scale = 0;   // bins / range
  int bins = 0;
  // The counted range in the data's own type: int32 data is counted iff first_int <= v < end_int,
  // float data iff first_float <= v < end_float (the same test as lo <= v < hi in double).
  long long first_int = 0, end_int = 0;
  float first_float = 0, end_float = 0;
  // The float evaluation, where the argument above holds.
  bool float_path = false;
  float lo_float = 0, scale_float = 0, near_edge_float = 0;
};

// The smallest float that is >= x (x finite).
inline float float_at_or_above(double x) {
  if (x > FLT_MAX) return INFINITY;
  if (x < -FLT_MAX) return -FLT_MAX;
  float f = float(x);
  if (double(f) < x) f = std::nextafter(f, INFINITY);
  return f;
}

// lo < hi finite, 1 <= bins <= 2^24, range * bins and bins / range finite (histogram_even checks).
inline EvenBins make_even_bins(int bins, double lo, double hi) {
  EvenBins rule;
  rule.lo = lo;
  rule.hi = hi;
  rule.range = hi - lo;
  rule.bins_d = double(bins);
  rule.scale = rule.bins_d / rule.range;
  rule.bins = bins;
  const double int_range_end = 2147483648.0;  // one past INT32_MAX
  rule.first_int = (long long)std::min(std::max(std::ceil(lo), -int_range_end), int_range_end);
  rule.end_int = (long long)std::min(std::max(std::ceil(hi), -int_range_end), int_range_end);
  rule.first_float = float_at_or_above(lo);
  rule.end_float = float_at_or_above(hi);
  const double largest = std::max(std::fabs(lo), std::fabs(hi));
  if (bins <= (1 << 21) && largest <= 0x1p100 && rule.scale >= 0x1p-100 && rule.scale <= 0x1p100) {
    const double error = (3.02 * bins + 1.02 * rule.scale * (largest + std::fabs(lo))) * 0x1p-24;
    if (2 * error <= 0x1p-8) {
      rule.float_path = true;
      rule.lo_float = float(lo);
      rule.scale_float = float(rule.scale);
      rule.near_edge_float = float(2 * error);  // rounding to float keeps it above the error
    }
  }
  return rule;
}

// The rule as the API states it. The intrinsics round each operation once and keep nvcc from
// contracting any of them into a fused multiply-add, so the host's plain expression gives the
// same bits. Not inlined: it is the rare path, and a call keeps the unrolled loops small.
static __device__ __noinline__ int exact_bin(double v, double lo, double bins_d, double range, int bins) {
  const double t = __ddiv_rn(__dmul_rn(__dsub_rn(v, lo), bins_d), range);
  const int bin = int(t);  // t >= 0, so truncation is floor
  return bin < bins - 1 ? bin : bins - 1;
}

__device__ __forceinline__ int exact_bin(double v, const EvenBins& rule) {
  return exact_bin(v, rule.lo, rule.bins_d, rule.range, rule.bins);
}

// NaN compares false: never counted.
__device__ __forceinline__ bool is_counted(double v, const EvenBins& rule) {
  return v >= rule.lo && v < rule.hi;
}

// For a counted v: the same bin as exact_bin.
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

// For a counted v with rule.float_path: the same bin as exact_bin. v_float is float(v).
__device__ __forceinline__ int fast_bin_float(double v, float v_float, const EvenBins& rule) {
  // As in fast_bin, with 1.5 * 2^23 for floats in [0, 2^22): the integer is the encoding minus
  // that of 1.5 * 2^23.
  constexpr float round_shift = 12582912.0f;
  constexpr int round_shift_bits = 0x4B400000;
  const float t = __fmul_rn(__fsub_rn(v_float, rule.lo_float), rule.scale_float);
  const float shifted = __fadd_rn(t, round_shift);
  const int nearest = __float_as_int(shifted) - round_shift_bits;
  const float offset = __fsub_rn(t, __fsub_rn(shifted, round_shift));
  if (fabsf(offset) < rule.near_edge_float) return exact_bin(v, rule);
  const int bin = nearest - (offset < 0);
  return bin < rule.bins - 1 ? bin : rule.bins - 1;
}

// The bin of a value of the histogram's element types, or -1 when it is not counted.
__device__ __forceinline__ int bin_of(std::int32_t v, const EvenBins& rule) {
  if (v < rule.first_int || v >= rule.end_int) return -1;
  return rule.float_path ? fast_bin_float(double(v), float(v), rule) : fast_bin(double(v), rule);
}

__device__ __forceinline__ int bin_of(float v, const EvenBins& rule) {
  if (!(v >= rule.first_float && v < rule.end_float)) return -1;
  return rule.float_path ? fast_bin_float(double(v), v, rule) : fast_bin(double(v), rule);
}

__device__ __forceinline__ int bin_of(double v, const EvenBins& rule) {
  return is_counted(v, rule) ? fast_bin(v, rule) : -1;
}

}  // namespace rooflab::detail
