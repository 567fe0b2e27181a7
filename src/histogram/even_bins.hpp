#pragma once
// The bin rule of rooflab::histogram_even, the constants of its fast evaluations, and the
// single-precision evaluation itself, in plain C++ where nvcc is not compiling: the CPU tests run
// the very same steps on the host against the rule (the device-only parts are in even_bins.cuh).
//
//   a value v with lo <= v < hi falls into bin
//     min(bins - 1, floor((double(v) - lo) * bins / (hi - lo)))
//
// evaluated in double precision exactly as written; call its quotient q.
//
// Single precision (fast_bin_single, int32 and float data where make_even_bins allows it):
//   t = fl(float(v) * float(scale) + float(1 - lo * scale)), one fused multiply-add,
//   scale = bins / (hi - lo).
//   t estimates q + 1; the + 1 keeps t >= 1/2 for every counted value, so that one addition of
//   2^23 rounded down gives 2^23 + floor(t) exactly (the integer sits in the encoding's low bits,
//   no conversion instruction), and one more subtraction gives d = t - floor(t) - 1/2 exactly.
//   Error: float(v) (int32 data only), float(scale) and the FMA each round once (2^-24), the
//   offset twice in double and once to float; with r = (v - lo) bins / (hi - lo) the real quotient,
//   |q - r| <= 4 * 2^-53 * bins, and |v| <= M = max(|lo|, |hi|) for counted values,
//     |t - (q + 1)| < E = 2^-24 (2 M scale + |lo| scale + bins + 2) (1 + 2^-22).
//   Whenever |d| < 1/2 - E, t is more than E away from both neighbouring integers, so q + 1 lies
//   in the same unit interval: floor(q) = floor(t) - 1, and that is at most bins - 1 and at least
//   0 (a q at or just above bins puts t within E of bins + 1), so no clamp. Values with
//   |d| >= 1/2 - 2E (the limit keeps a factor 2 of margin) are binned by the rule itself.
//   t is clamped to [3/2, bins + 1/2] first: next to the histogram's own edges (t near 1 and
//   bins + 1, v near lo and hi) no rule is needed, since floor(q) is 0 for t < 3/2 (q >= 0 for a
//   counted value) and bins - 1 for t > bins + 1/2 (a q at bins is clamped), and the clamped t
//   lies mid-bin there. So data piled up at lo, as the smallest value of a skewed distribution
//   is, never waits for the rule; the edges inside are untouched.
//   The host takes this path only when 2E <= 2^-8 (at most a few values in a thousand near an
//   edge), bins <= 2^21 and the magnitudes stay far from float's range. Seven FP32 instructions
//   (the FMA, its clamp to [1.5, top] in two, the add that floors, two adds and the comparison
//   with the edge margin) per value, no division, no branch on the common path.
// Double precision (fast_bin_double in even_bins.cuh, every other case): the same idea in double.
//
// Integer edges (integer_edge_bin; the one-bin-per-integer mapping, lo = 0, hi = bins):
//   where lo is an integer and the bin width w = (hi - lo) / bins is exactly 2^s, every edge is an
//   integer, and both evaluations above put every integer that lies on an edge (all of them at
//   w = 1) next to an integer t: near the edge, so to the rule, for every value. There the rule
//   itself is exact: m = v - lo is exact, m * bins is exact and (m * bins) / (w * bins) = m / 2^s
//   is exact (enabling conditions per type below), so q = m / 2^s and its floor is
//   (floor(v) - lo) >> s, taking floor(v) - lo in 32-bit unsigned arithmetic:
//     int32   lo in [-2^31, 2^31), hi <= 2^31 and range * bins <= 2^53 (m * bins exact);
//     float   also lo >= 0 and hi <= 2^24: v - lo has at most 24 significant bits, times bins
//             (<= 2^24) at most 48. Float data also takes widths 2^s below 1 (s >= -126, the
//             [0, 1) of normalized data in 2^k bins): where lo is a multiple of 2^s, lo >= 0 and
//             hi <= 2^(24 + s), v - lo is a multiple of ulp(v) (which is at most 2^s) below
//             2^(e_v + 1), so again 24 bits, and q = (v - lo) 2^-s; on the device v 2^-s is
//             exact in float, so the bin is floor(v 2^-s) - lo 2^-s;
//     double  also lo >= 0, hi <= 2^31 and bins a power of two: v - lo is exact (v >= lo >= 0,
//             Sterbenz's lemma for v in [lo, 2 lo], else v's own grid), and the product and the
//             quotient only scale it by powers of two (a quotient below 1 may round, its floor
//             stays 0).
//   Three integer instructions a value (the subtraction, the clamp to the spare slot, the shift)
//   and no edge test: never slower than the other evaluations.
//
// Integer quotient (integer_quotient_slot; int32 data, lo and hi integers, a multiplier passing):
//   with x = v - lo and R = hi - lo integers, m = x * bins and R are exact in double and
//   x * bins <= R * bins <= 2^53, so floor(fl(m / R)) = floor(m / R): a quotient that is not an
//   integer lies at least 1/R below the next one, and rounding moves it by at most
//   (m / R) 2^-53 < 1/R. That is an integer division by an invariant, which a multiply-high
//   does exactly: with g = gcd(R, bins), R' = R / g, b' = bins / g and a multiplier
//   c = ceil(2^k b' / R') < 2^32, the error e = c R' - 2^k b' (0 <= e < R') adds x e / (2^k R')
//   to x b' / R', whose fraction is at most (R' - 1) / R'; where x e < 2^k for the largest x,
//   the floor cannot change: bin = (x c) >> k = umulhi(x, c) >> (k - 32). The host searches
//   k from 32 up for the first c that passes (make_even_bins). Over rooflab's 3 * 10^6 integers
//   ([-10^6, 2 * 10^6)) 3515 bin counts of 1 to 4096 find one (k from 32 to 44; the powers of two
//   from 256 to 4096 take k = 37) and 581, the first 811, none below 2^32: those take another
//   evaluation. Four integer instructions a value, no edge test, no range test (below).
//
// Counter slots (the counting kernels): each copy of the counters has one more, the spare slot
// `bins`, which takes every value that is not counted there (outside [lo, hi), or near an edge
// and sent to the rule), so that every value's shared-memory add is unconditional. For int32 data
// with hi <= 2^31, x = v - first_int in 32-bit unsigned arithmetic is at least R for every value
// outside [lo, hi) (above: v - lo >= hi - lo; below: 2^32 + v - lo >= 2^31 - lo >= R), so
// min(x, R) is the range test: R lands in slot bins under both integer evaluations.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "core/random_stream.hpp"  // ROOFLAB_HOST_DEVICE

namespace rooflab::detail {

struct EvenBins {
  double lo = 0;
  double hi = 0;
  double range = 0;   // hi - lo, rounded as the rule rounds it
  double bins_d = 0;  // bins, as the rule multiplies by it
  double scale = 0;   // bins / range
  int bins = 0;
  // The counted range in the data's own type: int32 data is counted iff first_int <= v <= last_int
  // (first_int = 1, last_int = 0 when no integer is counted), float data iff
  // first_float <= v < end_float (the same test as lo <= v < hi in double).
  std::int32_t first_int = 0, last_int = 0;
  float first_float = 0, end_float = 0;
  // The single-precision evaluation, where the argument above holds.
  bool single_precision = false;
  float scale_single = 0, offset_single = 0;  // t = v * scale_single + offset_single
  float middle_limit = 0;                     // fast only where |t - floor(t) - 1/2| < middle_limit
  float top_single = 0;                       // bins + 1/2, where t is clamped (fast_bin_single)
  // Integer edges (the argument at the top), per data type: the width's log2 where it is at
  // least 0; for float data the scale 2^-s and lo 2^-s where it is below (else 1 and lo).
  bool integer_edges_int = false, integer_edges_float = false, integer_edges_double = false;
  int width_shift = 0;
  float edge_scale_float = 1;
  std::uint32_t edge_base_float = 0;
  // Integer quotient (the argument at the top), int32 data: bin = umulhi(x, multiplier) >> shift.
  bool integer_quotient = false;
  std::uint32_t quotient_multiplier = 0;
  int quotient_shift = 0;
  // The x = v - first_int that int32 values outside [lo, hi) are clamped to: min(R, 2^32 - 1)
  // under the integer evaluations (R = 2^32 counts every int32: nothing is clamped).
  std::uint32_t int_spare_x = 0;
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
  // Integers in [lo, hi): from ceil(lo) to ceil(hi) - 1, within int32.
  const double first = std::max(std::ceil(lo), -2147483648.0),
               last = std::min(std::ceil(hi) - 1, 2147483647.0);
  if (first <= last) {
    rule.first_int = std::int32_t(first);
    rule.last_int = std::int32_t(last);
  } else {
    rule.first_int = 1;
    rule.last_int = 0;
  }
  rule.first_float = float_at_or_above(lo);
  rule.end_float = float_at_or_above(hi);
  const double largest = std::max(std::fabs(lo), std::fabs(hi));
  if (bins <= (1 << 21) && largest <= 0x1p100 && rule.scale >= 0x1p-100 && rule.scale <= 0x1p100) {
    const double error = (2 * largest * rule.scale + std::fabs(lo) * rule.scale + bins + 2) *
                         0x1p-24 * (1 + 0x1p-22);
    if (2 * error <= 0x1p-8) {
      rule.single_precision = true;
      rule.scale_single = float(rule.scale);
      rule.offset_single = float(1 - lo * rule.scale);
      rule.top_single = float(bins) + 0.5f;  // exact: bins <= 2^21
      // The largest float at most 1/2 - 2 error: rounding must not widen the fast band.
      const double limit = 0.5 - 2 * error;
      rule.middle_limit = float(limit);
      if (double(rule.middle_limit) > limit)
        rule.middle_limit = std::nextafter(rule.middle_limit, 0.0f);
    }
  }
  // Integer edges: an integer lo and a width of exactly 2^s, s in [0, 31] (float: [-126, 31]).
  const bool integer_bounds =
      lo == std::floor(lo) && hi == std::floor(hi) && lo >= -2147483648.0 && hi <= 2147483648.0;
  if (rule.range <= 4294967296.0 && rule.range * bins <= 0x1p53) {
    for (int shift = -126; shift < 32; ++shift) {
      if (std::ldexp(rule.bins_d, shift) != rule.range) continue;
      const double scale = std::ldexp(1.0, std::max(-shift, 0));  // 2^-s below width 1
      rule.width_shift = std::max(shift, 0);
      rule.integer_edges_int = shift >= 0 && integer_bounds;
      rule.integer_edges_float =
          lo >= 0 && lo * scale == std::floor(lo * scale) && hi * scale <= 0x1p24;
      rule.integer_edges_double =
          shift >= 0 && integer_bounds && lo >= 0 && hi <= 0x1p31 && (bins & (bins - 1)) == 0;
      rule.edge_scale_float = float(scale);
      rule.edge_base_float = rule.integer_edges_float ? std::uint32_t(lo * scale) : 0;
    }
  }
  if (integer_bounds && rule.range * bins <= 0x1p53) {
    rule.int_spare_x = std::uint32_t(std::min(rule.range, 4294967295.0));
    // The integer quotient, where a multiplier below 2^32 passes (the argument at the top).
    const auto range = std::uint64_t(rule.range), common = std::gcd(range, std::uint64_t(bins));
    const std::uint64_t denominator = range / common, numerator = std::uint64_t(bins) / common;
    using Wide = unsigned __int128;
    for (int shift = 32; shift < 64 && range < 4294967296u; ++shift) {
      const Wide scaled = Wide(numerator) << shift;
      const Wide multiplier = (scaled + denominator - 1) / denominator;
      if (multiplier >= (Wide(1) << 32)) break;  // a larger shift only makes it larger
      if (Wide(range) * (multiplier * denominator - scaled) < (Wide(1) << shift)) {
        rule.integer_quotient = true;
        rule.quotient_multiplier = std::uint32_t(multiplier);
        rule.quotient_shift = shift - 32;
        break;
      }
    }
  }
  return rule;
}

// The bin of a counted value where the edges are integers (rule.integer_edges_*, the argument at
// the top). A value that is not counted may give any number.
ROOFLAB_HOST_DEVICE inline int integer_edge_bin(std::int32_t v, const EvenBins& rule) {
  return int((std::uint32_t(v) - std::uint32_t(rule.first_int)) >> rule.width_shift);
}

ROOFLAB_HOST_DEVICE inline int integer_edge_bin(float v, const EvenBins& rule) {
  const float scaled = v * rule.edge_scale_float;  // exact: a power of two, no overflow
#if defined(__CUDA_ARCH__)
  const std::uint32_t floor_v = __float2uint_rd(scaled);  // counted: 0 <= scaled < 2^24
#else
  const std::uint32_t floor_v =
      scaled >= 0 && scaled < 0x1p32f ? std::uint32_t(std::floor(scaled)) : 0;
#endif
  return int((floor_v - rule.edge_base_float) >> rule.width_shift);
}

ROOFLAB_HOST_DEVICE inline int integer_edge_bin(double v, const EvenBins& rule) {
#if defined(__CUDA_ARCH__)
  const std::uint32_t floor_v = __double2uint_rd(v);  // counted: 0 <= v < 2^31
#else
  const std::uint32_t floor_v = v >= 0 && v < 0x1p32 ? std::uint32_t(std::floor(v)) : 0;
#endif
  return int((floor_v - std::uint32_t(rule.first_int)) >> rule.width_shift);
}

// The high 32 bits of a 32 x 32-bit product.
ROOFLAB_HOST_DEVICE inline std::uint32_t multiply_high(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return std::uint32_t((std::uint64_t(a) * b) >> 32);
#endif
}

// The counter slot of any int32 value under the integer evaluations (the argument at the top):
// its bin where it is counted, else bins. Both take x = v - first_int clamped at int_spare_x.
ROOFLAB_HOST_DEVICE inline std::uint32_t clamped_offset(std::int32_t v, const EvenBins& rule) {
  const std::uint32_t x = std::uint32_t(v) - std::uint32_t(rule.first_int);
  return x < rule.int_spare_x ? x : rule.int_spare_x;
}

// Where rule.integer_edges_int.
ROOFLAB_HOST_DEVICE inline int integer_edge_slot(std::int32_t v, const EvenBins& rule) {
  return int(clamped_offset(v, rule) >> rule.width_shift);
}

// Where rule.integer_quotient.
ROOFLAB_HOST_DEVICE inline int integer_quotient_slot(std::int32_t v, const EvenBins& rule) {
  return int(multiply_high(clamped_offset(v, rule), rule.quotient_multiplier) >>
             rule.quotient_shift);
}

// IEEE single-precision steps, each rounded once, with the same results on the host and the
// device (the intrinsics also keep nvcc from contracting or reassociating them).
ROOFLAB_HOST_DEVICE inline float fused_multiply_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

ROOFLAB_HOST_DEVICE inline float add_nearest(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// a + b rounded towards minus infinity. On the host from the double sum, which is exact for the
// operands used here (a in [1/2, 2^22), b = 2^23: 48 significant bits at most).
ROOFLAB_HOST_DEVICE inline float add_down(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rd(a, b);
#else
  const double sum = double(a) + double(b);
  float rounded = float(sum);
  if (double(rounded) > sum) rounded = std::nextafter(rounded, -INFINITY);
  return rounded;
#endif
}

ROOFLAB_HOST_DEVICE inline std::int32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(f);
#else
  std::int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

// int32 data in single precision: float(v) rounded to nearest, as the error bound assumes.
ROOFLAB_HOST_DEVICE inline float to_single(std::int32_t v) {
#if defined(__CUDA_ARCH__)
  return __int2float_rn(v);
#else
  return float(v);
#endif
}

ROOFLAB_HOST_DEVICE inline float to_single(float v) { return v; }

// A fast evaluation's answer for a counted value: its bin, unless the value lies too close to
// an edge for the evaluation to decide, in which case the rule itself must.
struct FastBin {
  int bin;
  bool near_edge;
};

// For a counted value v (as a float) with rule.single_precision: the argument at the top.
ROOFLAB_HOST_DEVICE inline FastBin fast_bin_single(float v, const EvenBins& rule) {
  constexpr float two_to_23 = 0x1p23f;
  constexpr float two_to_23_less_half = 0x1.fffffep22f;  // 2^23 - 1/2, a float
  const float t = fminf(fmaxf(fused_multiply_add(v, rule.scale_single, rule.offset_single), 1.5f),
                        rule.top_single);
  const float floor_shifted = add_down(t, two_to_23);                     // 2^23 + floor(t)
  const float middle = add_nearest(floor_shifted, -two_to_23_less_half);  // floor(t) + 1/2
  const float from_middle = add_nearest(t, -middle);
  FastBin result;
  // In unsigned arithmetic: a value that is not counted may give anything, but no overflow.
  result.bin =
      int(std::uint32_t(float_bits(floor_shifted)) - std::uint32_t(float_bits(two_to_23)) - 1u);
  result.near_edge = !(std::fabs(from_middle) < rule.middle_limit);
  return result;
}

}  // namespace rooflab::detail
