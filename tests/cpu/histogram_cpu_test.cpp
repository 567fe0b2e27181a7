// The histogram's CPU side: the bin rule at its edges, the CPU loop and the reference, the lab's
// data and op, and histogram_even's argument checks (which fail before any GPU work).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/histogram.hpp"
#include "histogram/even_bins.hpp"
#include "histogram/histogram_data.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"

namespace rooflab {
namespace {

TEST(HistogramRule, ValueJustBelowHiLandsInLastBin) {
  // (v - lo) * bins / (hi - lo) rounds up to exactly bins (or past it) for the largest double
  // below hi in these cases: only the clamp keeps the value in the last bin.
  const struct {
    double lo, hi;
    int bins;
  } cases[] = {{-1.0, 0.1, 3},
               {-1.0, 0.1, 10},
               {0.2, 0.9, 1000},
               {0.2, 0.9, (1 << 24) - 1},
               {0.0, 1.0, 256}};
  for (const auto& c : cases) {
    const double v = std::nextafter(c.hi, c.lo);
    EXPECT_EQ(cpu::even_bin(v, c.lo, c.hi, c.bins), c.bins - 1)
        << c.lo << " " << c.hi << " " << c.bins;
  }
  const double unclamped = (std::nextafter(0.1, -1.0) - -1.0) * 10 / (0.1 - -1.0);
  EXPECT_GE(unclamped, 10.0);  // the case really needs the clamp
}

TEST(HistogramRule, OutOfRangeNaNAndInfinitiesAreNotCounted) {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(cpu::even_bin(nan, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(inf, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(-inf, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(1.0, 0, 1, 4), -1);  // hi is excluded
  EXPECT_EQ(cpu::even_bin(std::nextafter(0.0, -1.0), 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(0.0, 0, 1, 4), 0);  // lo is included
  EXPECT_EQ(cpu::even_bin(-0.0, 0, 1, 4), 0);
}

TEST(HistogramRule, BinEdgesFollowDoubleArithmetic) {
  // lo = 0, hi = 0.3, 3 bins. The real edge of bin 1, 0.3 / 3 = 0.0999999999999999963 (0.3 as
  // a double), lies above the double 0.1 - 2^-56, yet the rule rounds (0.1 - 2^-56) * 3 / 0.3 to
  // exactly 1.0: the double arithmetic, not the real numbers, decides, and every implementation
  // must agree with it.
  const double below_tenth = std::nextafter(0.1, 0.0);
  EXPECT_EQ(cpu::even_bin(0.1, 0, 0.3, 3), 1);
  EXPECT_EQ(cpu::even_bin(below_tenth, 0, 0.3, 3), 1);
  EXPECT_EQ(cpu::even_bin(std::nextafter(below_tenth, 0.0), 0, 0.3, 3), 0);
  EXPECT_EQ(cpu::even_bin(0.2, 0, 0.3, 3), 2);
  // Integers on integer edges: width 1 puts every value on an edge.
  for (int v = -5; v < 20; ++v) EXPECT_EQ(cpu::even_bin(v, -5, 20, 25), v + 5) << v;
}

// The single-precision bin evaluation (even_bins.hpp) runs on the host with the same IEEE steps
// as on the device: wherever it does not defer to the rule, its bin must be the rule's.
struct FastBinCheck {
  std::int64_t checked = 0, deferred = 0, wrong = 0;
  std::string first_wrong;
};

template <class T>
void check_fast_bin(const detail::EvenBins& rule, T v, FastBinCheck& check) {
  if (!(double(v) >= rule.lo && double(v) < rule.hi)) return;  // only counted values reach it
  const detail::FastBin fast = detail::fast_bin_single(detail::to_single(v), rule);
  check.checked += 1;
  if (fast.near_edge) {
    check.deferred += 1;
    return;
  }
  const int expected = cpu::even_bin(double(v), rule.lo, rule.hi, rule.bins);
  if (fast.bin != expected && check.wrong++ == 0) {
    char text[100];
    std::snprintf(text, sizeof text, "%.17g gave bin %d, the rule %d", double(v), fast.bin,
                  expected);
    check.first_wrong = text;
  }
}

// Values of T on and around every bin edge (up to `edges` of them) and random ones in [lo, hi).
template <class T>
FastBinCheck check_fast_bins(double lo, double hi, int bins, int edges, std::uint32_t seed) {
  const detail::EvenBins rule = detail::make_even_bins(bins, lo, hi);
  FastBinCheck check;
  const int stride = std::max(1, bins / edges);
  for (int k = 0; k <= bins; k += stride) {
    const double edge = lo + k * ((hi - lo) / bins);
    if constexpr (std::is_same_v<T, float>) {
      float v = float(edge);
      for (int step = 0; step < 4; ++step) v = std::nextafter(v, -INFINITY);
      for (int step = 0; step < 9; ++step, v = std::nextafter(v, INFINITY))
        check_fast_bin(rule, v, check);
    } else {
      const double start = std::floor(edge) - 3;
      for (double v = start; v <= start + 6; ++v)
        if (v >= -2147483648.0 && v <= 2147483647.0) check_fast_bin(rule, std::int32_t(v), check);
    }
  }
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> draw(std::max(lo, -2147483648.0),
                                              std::min(hi, 2147483647.0));
  for (int i = 0; i < 200000; ++i) check_fast_bin(rule, T(draw(random)), check);
  return check;
}

TEST(HistogramFastBins, TheLabsTargetsUseSinglePrecision) {
  // Up to 4096 bins; at 65536 bins over [0, 1) float's rounding (2^-24 of t <= bins + 1) is
  // already 1/256 of a bin, and the double evaluation is the faster one.
  for (const int bins : {256, 4096}) {
    using bench::HistogramData, bench::Mapping;
    EXPECT_TRUE(detail::make_even_bins(bins, HistogramData<std::int32_t>::lo(Mapping::scaled, bins),
                                       HistogramData<std::int32_t>::hi(Mapping::scaled, bins))
                    .single_precision)
        << bins;
    EXPECT_TRUE(detail::make_even_bins(bins, HistogramData<float>::lo(Mapping::scaled, bins),
                                       HistogramData<float>::hi(Mapping::scaled, bins))
                    .single_precision)
        << bins;
  }
  // Where float cannot resolve the bins (2^20 bins over 2 * 10^30), double takes over.
  EXPECT_FALSE(detail::make_even_bins(65536, 0, 1).single_precision);
  EXPECT_FALSE(detail::make_even_bins(1 << 20, -1e30, 1e30).single_precision);
  EXPECT_FALSE(detail::make_even_bins(1 << 22, 0, 1).single_precision);
}

TEST(HistogramFastBins, SinglePrecisionGivesTheRulesBinOrDefersToIt) {
  const struct {
    double lo, hi;
    int bins;
  } floating[] = {{0, 1, 256},   {0, 1, 4096},     {0, 1, 65536},      {0, 0.3, 3},
                  {0.1, 0.7, 7}, {-1, 0.1, 10},    {-3.5, 1e6, 4096},  {1e-3, 1.5e-3, 100000},
                  {-1, 1, 1000}, {0.2, 0.9, 1000}, {-1e-30, 3e-30, 77}},
    integer[] = {{-1e6, 2e6, 256},
                 {-1e6, 2e6, 4096},
                 {-1e6, 2e6, 65536},
                 {0, 256, 256},
                 {-7, 1e6 - 7, 1000},
                 {0.5, 1000.5, 999},
                 {-2147483648.0, 2147483648.0, 65536},
                 {-100, 100, 64},
                 {-0.25, 10.5, 3},
                 {-3, 70000, 70003}};
  std::uint32_t seed = 100;
  for (const auto& c : floating) {
    if (!detail::make_even_bins(c.bins, c.lo, c.hi).single_precision) continue;
    const FastBinCheck check = check_fast_bins<float>(c.lo, c.hi, c.bins, 4096, seed++);
    EXPECT_GT(check.checked, 100000);
    EXPECT_EQ(check.wrong, 0) << "float, lo " << c.lo << " hi " << c.hi << " bins " << c.bins
                              << ": " << check.first_wrong << " (seed " << seed - 1 << ")";
  }
  for (const auto& c : integer) {
    if (!detail::make_even_bins(c.bins, c.lo, c.hi).single_precision) continue;
    const FastBinCheck check = check_fast_bins<std::int32_t>(c.lo, c.hi, c.bins, 4096, seed++);
    EXPECT_GT(check.checked, 100000);
    EXPECT_EQ(check.wrong, 0) << "int32, lo " << c.lo << " hi " << c.hi << " bins " << c.bins
                              << ": " << check.first_wrong << " (seed " << seed - 1 << ")";
  }
}

// Values at lo and just below hi lie on the histogram's own edges, where the bin is 0 or
// bins - 1 without asking the rule: data piled up at lo (the smallest value of a skewed
// distribution) must not take the slow path. Edges inside are still deferred.
TEST(HistogramFastBins, TheHistogramsOwnEdgesNeverNeedTheRule) {
  for (const auto& [lo, hi, bins] : {std::tuple{0.0, 1.0, 256}, std::tuple{-1e6, 2e6, 256},
                                     std::tuple{0.1, 0.7, 7}, std::tuple{-1e6, 2e6, 4096}}) {
    const detail::EvenBins rule = detail::make_even_bins(bins, lo, hi);
    ASSERT_TRUE(rule.single_precision) << lo << " " << hi << " " << bins;
    float at_lo = rule.first_float;
    float below_hi = std::nextafter(rule.end_float, -INFINITY);
    for (int step = 0; step < 4; ++step) {
      for (const float v : {at_lo, below_hi}) {
        const detail::FastBin fast = detail::fast_bin_single(v, rule);
        EXPECT_FALSE(fast.near_edge) << v << " in [" << lo << ", " << hi << ") " << bins;
        EXPECT_EQ(fast.bin, cpu::even_bin(double(v), lo, hi, bins)) << v;
      }
      at_lo = std::nextafter(at_lo, INFINITY);
      below_hi = std::nextafter(below_hi, -INFINITY);
    }
    const std::int32_t first = rule.first_int, last = rule.last_int;
    if (first <= last && lo == std::floor(lo)) {
      for (const std::int32_t v : {first, last}) {
        const detail::FastBin fast = detail::fast_bin_single(detail::to_single(v), rule);
        EXPECT_FALSE(fast.near_edge) << v;
        EXPECT_EQ(fast.bin, cpu::even_bin(double(v), lo, hi, bins)) << v;
      }
    }
    // An edge inside: the value on it is still the rule's to bin.
    const float inside = float(lo + (hi - lo) / bins * (bins / 2));
    if (double(inside) == lo + (hi - lo) / bins * (bins / 2)) {
      EXPECT_TRUE(detail::fast_bin_single(inside, rule).near_edge) << inside;
    }
  }
}

TEST(HistogramFastBins, RandomDataRarelyNeedsTheRule) {
  // The lab's problems: at 256 bins a few values in ten thousand lie close enough to an edge to
  // need the division, at 4096 bins a few in a thousand (the band is 4 E wide, E growing with
  // the bins). The edge values themselves add to the count in check_fast_bins, so use few.
  for (const auto& [bins, most] : {std::pair{256, 0.001}, std::pair{4096, 0.01}}) {
    const FastBinCheck ints = check_fast_bins<std::int32_t>(-1e6, 2e6, bins, 16, 7);
    EXPECT_LT(double(ints.deferred) / double(ints.checked), most) << bins;
    const FastBinCheck floats = check_fast_bins<float>(0, 1, bins, 16, 8);
    EXPECT_LT(double(floats.deferred) / double(floats.checked), most) << bins;
  }
}

TEST(HistogramFastBins, IntegerRangeIsTestedInInt32) {
  auto rule = detail::make_even_bins(3, -0.5, 10.5);
  EXPECT_EQ(rule.first_int, 0);
  EXPECT_EQ(rule.last_int, 10);
  rule = detail::make_even_bins(3, 0.2, 0.7);  // no integer inside
  EXPECT_GT(rule.first_int, rule.last_int);
  rule = detail::make_even_bins(3, -1e12, 1e12);
  EXPECT_EQ(rule.first_int, std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(rule.last_int, std::numeric_limits<std::int32_t>::max());
  rule = detail::make_even_bins(3, 2147483647.5, 1e12);  // above every int32
  EXPECT_GT(rule.first_int, rule.last_int);
  rule = detail::make_even_bins(3, -1e12, -2147483648.5);  // below every int32
  EXPECT_GT(rule.first_int, rule.last_int);
  rule = detail::make_even_bins(3, -2147483648.0, -2147483647.0);  // exactly INT32_MIN
  EXPECT_EQ(rule.first_int, std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(rule.last_int, std::numeric_limits<std::int32_t>::min());
}

// The integer-edge evaluation (even_bins.hpp) on values of T around every edge (up to `edges`
// of them) and random ones in [lo, hi): its bin must be the rule's, always (it never defers).
template <class T>
std::int64_t wrong_integer_edge_bins(double lo, double hi, int bins, int edges, std::uint32_t seed,
                                     std::string& first_wrong) {
  const detail::EvenBins rule = detail::make_even_bins(bins, lo, hi);
  std::int64_t wrong = 0, checked = 0;
  const auto check = [&](T v) {
    if (!(double(v) >= lo && double(v) < hi)) return;
    checked += 1;
    const int got = detail::integer_edge_bin(v, rule),
              expected = cpu::even_bin(double(v), lo, hi, bins);
    if (got != expected && wrong++ == 0)
      first_wrong = std::to_string(double(v)) + " gave bin " + std::to_string(got) + ", the rule " +
                    std::to_string(expected);
  };
  const int stride = std::max(1, bins / edges);
  for (int k = 0; k <= bins; k += stride) {
    const double edge = lo + k * ((hi - lo) / bins);
    if constexpr (std::is_integral_v<T>) {
      for (double v = std::floor(edge) - 4; v <= std::floor(edge) + 4; ++v)
        if (v >= -2147483648.0 && v <= 2147483647.0) check(T(v));
    } else {
      T v = T(edge);
      for (int step = 0; step < 4; ++step) v = std::nextafter(v, std::numeric_limits<T>::lowest());
      for (int step = 0; step < 9; ++step, v = std::nextafter(v, std::numeric_limits<T>::max()))
        check(v);
    }
  }
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> draw(std::max(lo, -2147483648.0),
                                              std::min(hi, 2147483647.0));
  for (int i = 0; i < 100000; ++i) check(T(draw(random)));
  EXPECT_GT(checked, 50000) << lo << " " << hi << " " << bins;
  return wrong;
}

TEST(HistogramIntegerEdges, TakenWhereEveryEdgeIsAnIntegerAPowerOfTwoApart) {
  // One bin per integer (the identity mapping) and widths 2^s, for each type's limits.
  auto rule = detail::make_even_bins(256, 0, 256);
  EXPECT_TRUE(rule.integer_edges_int && rule.integer_edges_float && rule.integer_edges_double);
  EXPECT_EQ(rule.width_shift, 0);
  rule = detail::make_even_bins(256, 0, 1 << 20);  // width 4096
  EXPECT_TRUE(rule.integer_edges_int && rule.integer_edges_float && rule.integer_edges_double);
  EXPECT_EQ(rule.width_shift, 12);
  rule = detail::make_even_bins(65536, -2147483648.0, 2147483648.0);  // width 2^16, every int32
  EXPECT_TRUE(rule.integer_edges_int);
  EXPECT_FALSE(rule.integer_edges_float);  // float needs lo >= 0, hi <= 2^24
  EXPECT_FALSE(rule.integer_edges_double);
  rule = detail::make_even_bins(300, 0, 300);  // double needs a power-of-two bin count
  EXPECT_TRUE(rule.integer_edges_int && rule.integer_edges_float);
  EXPECT_FALSE(rule.integer_edges_double);
  // Widths 2^s below 1: float data only, where lo is a multiple of 2^s and hi <= 2^(24 + s).
  for (const auto& [bins, lo, hi] :
       {std::tuple{512, 0.0, 256.0}, std::tuple{256, 0.0, 1.0}, std::tuple{128, 0.5, 1.0},
        std::tuple{1 << 24, 0.0, 1.0}, std::tuple{3, 0x1p-100, 0x1p-100 + 3 * 0x1p-120},
        std::tuple{1 << 20, 0.0, 0.5}}) {
    rule = detail::make_even_bins(bins, lo, hi);
    EXPECT_TRUE(rule.integer_edges_float) << lo << " " << hi << " " << bins;
    EXPECT_FALSE(rule.integer_edges_int || rule.integer_edges_double) << lo << " " << hi;
    EXPECT_EQ(rule.width_shift, 0);
  }
  rule = detail::make_even_bins(256, 0, 1);
  EXPECT_EQ(rule.edge_scale_float, 256.0f);
  EXPECT_EQ(rule.edge_base_float, 0u);
  rule = detail::make_even_bins(128, 0.5, 1.0);
  EXPECT_EQ(rule.edge_base_float, 128u);
  // Not integer edges: a fractional lo, a width of 3, negative data below width 1, a lo off the
  // width's grid, too wide a range, hi above 2^31 for int32, too fine a float grid.
  for (const auto& [bins, lo, hi] :
       {std::tuple{256, 0.5, 256.5}, std::tuple{256, 0.0, 768.0}, std::tuple{256, -1.0, 1.0},
        std::tuple{4, 0.3, 1.3}, std::tuple{256, -1e6, 2e6}, std::tuple{2, 0.0, 8589934592.0},
        std::tuple{2, 2147483648.0, 2147483650.0}, std::tuple{4, 1073741824.0, 1073741825.0}}) {
    rule = detail::make_even_bins(bins, lo, hi);
    EXPECT_FALSE(rule.integer_edges_int || rule.integer_edges_float || rule.integer_edges_double)
        << lo << " " << hi << " " << bins;
  }
}

TEST(HistogramIntegerEdges, GiveTheRulesBinForEveryType) {
  const struct {
    double lo, hi;
    int bins;
  } cases[] = {{0, 256, 256},
               {0, 4096, 4096},
               {0, 65536, 65536},
               {0, 1 << 20, 256},
               {0, 1 << 20, 65536},
               {-5, 20, 25},
               {-1024, 1024, 64},
               {3, 3 + 300 * 8, 300},
               {-2147483648.0, 2147483648.0, 65536},
               {0, 1 << 24, 1 << 24},
               {7, 7 + (1 << 23), 1 << 21}};
  std::uint32_t seed = 300;
  for (const auto& c : cases) {
    const detail::EvenBins rule = detail::make_even_bins(c.bins, c.lo, c.hi);
    ASSERT_TRUE(rule.integer_edges_int) << c.lo << " " << c.hi << " " << c.bins;
    std::string first;
    EXPECT_EQ(wrong_integer_edge_bins<std::int32_t>(c.lo, c.hi, c.bins, 4096, seed++, first), 0)
        << "int32 " << c.lo << " " << c.hi << " " << c.bins << ": " << first;
    if (rule.integer_edges_float) {
      EXPECT_EQ(wrong_integer_edge_bins<float>(c.lo, c.hi, c.bins, 4096, seed++, first), 0)
          << "float " << c.lo << " " << c.hi << " " << c.bins << ": " << first;
    }
    if (rule.integer_edges_double) {
      EXPECT_EQ(wrong_integer_edge_bins<double>(c.lo, c.hi, c.bins, 4096, seed++, first), 0)
          << "double " << c.lo << " " << c.hi << " " << c.bins << ": " << first;
    }
  }
}

TEST(HistogramIntegerEdges, WidthsBelowOneGiveTheRulesBinForFloat) {
  const struct {
    double lo, hi;
    int bins;
  } cases[] = {{0, 1, 256},
               {0, 1, 1 << 24},
               {0.5, 1, 128},
               {0, 256, 512},
               {0.25, 0.25 + 0x1p-4, 64},
               {0, 1000 * 0x1p-70, 1000},
               {3, 3 + 1000 * 0.125, 1000}};
  std::uint32_t seed = 400;
  for (const auto& c : cases) {
    ASSERT_TRUE(detail::make_even_bins(c.bins, c.lo, c.hi).integer_edges_float)
        << c.lo << " " << c.hi << " " << c.bins;
    std::string first;
    EXPECT_EQ(wrong_integer_edge_bins<float>(c.lo, c.hi, c.bins, 4096, seed++, first), 0)
        << "float " << c.lo << " " << c.hi << " " << c.bins << ": " << first;
  }
}

// The counter slot of T values under `slot` (integer_edge_slot or integer_quotient_slot) against
// the rule: the rule's bin for a counted value, the spare slot `bins` for any other; over values
// around every edge (up to `edges` of them), around lo and hi, the int32 extremes and random
// values in and around [lo, hi).
template <class Slot>
std::int64_t wrong_int_slots(double lo, double hi, int bins, int edges, std::uint32_t seed,
                             Slot slot, std::string& first_wrong) {
  const detail::EvenBins rule = detail::make_even_bins(bins, lo, hi);
  std::int64_t wrong = 0;
  const auto check = [&](double value) {
    if (value < -2147483648.0 || value > 2147483647.0) return;
    const auto v = std::int32_t(value);
    const int expected = cpu::even_bin(double(v), lo, hi, bins), got = slot(v, rule);
    if (got != (expected < 0 ? bins : expected) && wrong++ == 0)
      first_wrong = std::to_string(v) + " gave slot " + std::to_string(got) + ", the rule " +
                    std::to_string(expected);
  };
  const int stride = std::max(1, bins / edges);
  for (int k = 0; k <= bins; k += stride) {
    const double edge = std::floor(lo + k * ((hi - lo) / bins));
    for (double v = edge - 3; v <= edge + 3; ++v) check(v);
  }
  for (const double v : {-2147483648.0, -2147483647.0, -1.0, 0.0, 1.0, 2147483646.0, 2147483647.0})
    check(v);
  std::mt19937_64 random(seed);
  const double spread = (hi - lo) / 4;
  std::uniform_real_distribution<double> draw(lo - spread, hi + spread);
  for (int i = 0; i < 100000; ++i) check(std::floor(draw(random)));
  return wrong;
}

TEST(HistogramIntegerQuotient, TakenForIntegerBoundsWhereAMultiplierPasses) {
  auto rule = detail::make_even_bins(256, -1e6, 2e6);  // the lab's int32 bounds
  EXPECT_TRUE(rule.integer_quotient);
  EXPECT_EQ(rule.int_spare_x, 3000000u);
  EXPECT_TRUE(detail::make_even_bins(4096, -1e6, 2e6).integer_quotient);
  EXPECT_TRUE(detail::make_even_bins(7, 0, 100).integer_quotient);
  EXPECT_TRUE(detail::make_even_bins(3, -2147483648.0, 2147483647.0).integer_quotient);
  // Not: a fractional bound, hi above 2^31, a range of 2^32, range * bins above 2^53, no
  // multiplier below 2^32 (more bins than integers; range * bins near 2^42 and 2^47).
  for (const auto& [bins, lo, hi] :
       {std::tuple{256, -1e6, 2e6 + 0.5}, std::tuple{256, 0.5, 100.0},
        std::tuple{3, 0.0, 2147483651.0}, std::tuple{3, -2147483648.0, 2147483648.0},
        std::tuple{1 << 24, -2147483648.0, 2147483647.0}, std::tuple{100, 0.0, 10.0},
        std::tuple{1000, -2147483648.0, 2147483647.0},
        std::tuple{99991, -123456789.0, 987654321.0}}) {
    EXPECT_FALSE(detail::make_even_bins(bins, lo, hi).integer_quotient)
        << lo << " " << hi << " " << bins;
  }
}

TEST(HistogramIntegerQuotient, GivesTheRulesBinOrTheSpareSlot) {
  const struct {
    double lo, hi;
    int bins;
  } cases[] = {{-1e6, 2e6, 256},
               {-1e6, 2e6, 4096},
               {-1e6, 2e6, 65536},
               {0, 100, 7},
               {-5, 12345, 1000},
               {-2147483648.0, 2147483647.0, 3},
               {2147483000, 2147483648.0, 77},
               {0, 1 << 24, (1 << 24) - 1},
               {0, 1e6, 100000},
               {0, 1e9, 256}};
  std::uint32_t seed = 500;
  for (const auto& c : cases) {
    ASSERT_TRUE(detail::make_even_bins(c.bins, c.lo, c.hi).integer_quotient)
        << c.lo << " " << c.hi << " " << c.bins;
    std::string first;
    EXPECT_EQ(
        wrong_int_slots(c.lo, c.hi, c.bins, 4096, seed++, detail::integer_quotient_slot, first), 0)
        << c.lo << " " << c.hi << " " << c.bins << ": " << first;
  }
  // Random integer bounds and bin counts: wherever the quotient is taken, it is exact.
  std::mt19937_64 random(501);
  std::uniform_int_distribution<int> magnitude(1, 31), bins_log(0, 24);
  for (int trial = 0; trial < 300; ++trial) {
    const double range = std::floor(
        std::ldexp(1.0 + std::uniform_real_distribution<double>()(random), magnitude(random) - 1));
    const double lo = std::floor(
        std::uniform_real_distribution<double>(-2147483648.0, 2147483648.0 - range)(random));
    const int bins = std::max(
        1,
        int(std::ldexp(std::uniform_real_distribution<double>(0.5, 1)(random), bins_log(random))));
    if (!detail::make_even_bins(bins, lo, lo + range).integer_quotient) continue;
    std::string first;
    EXPECT_EQ(
        wrong_int_slots(lo, lo + range, bins, 64, seed++, detail::integer_quotient_slot, first), 0)
        << lo << " " << lo + range << " " << bins << ": " << first;
  }
}

TEST(HistogramIntegerEdges, Int32SlotIsTheBinOrTheSpare) {
  for (const auto& [bins, lo, hi] :
       {std::tuple{256, 0.0, 256.0}, std::tuple{65536, -2147483648.0, 2147483648.0},
        std::tuple{25, -5.0, 20.0}, std::tuple{300, 3.0, 2403.0},
        std::tuple{64, 2147483648.0 - 64 * 1024, 2147483648.0}}) {
    ASSERT_TRUE(detail::make_even_bins(bins, lo, hi).integer_edges_int) << lo << " " << hi;
    std::string first;
    EXPECT_EQ(wrong_int_slots(lo, hi, bins, 4096, 600, detail::integer_edge_slot, first), 0)
        << lo << " " << hi << " " << bins << ": " << first;
  }
}

TEST(HistogramCpu, SerialLoopEqualsTheParallelReference) {
  std::mt19937 random(42);
  std::uniform_int_distribution<std::int32_t> value(-3000, 3000);
  std::vector<std::int32_t> data(300001);
  for (auto& v : data) v = value(random);
  for (const int bins : {1, 7, 256, 5000}) {
    std::vector<std::uint64_t> serial(bins, 99);
    cpu::histogram_serial(data.data(), std::int64_t(data.size()), bins, -1000.5, 2500.25,
                          serial.data());
    const auto reference = cpu::histogram_reference<std::int32_t>(
        std::int64_t(data.size()), bins, -1000.5, 2500.25, [&](std::int64_t i) { return data[i]; });
    EXPECT_EQ(serial, reference) << "bins " << bins << " (seed 42)";
    std::uint64_t total = 0;
    for (const auto c : reference) total += c;
    std::uint64_t inside = 0;
    for (const auto v : data) inside += v >= -1000.5 && v < 2500.25;
    EXPECT_EQ(total, inside);
  }
}

// The careful baselines (one core and every core) give the rule's counts for every type, at
// scaled bins, one bin per integer and awkward bounds (the rule's edge far from the real one in
// doubles, fewer doubles than bins, a far offset, integers on every third edge), on values a few
// doubles and floats around every edge and random ones, out-of-range values, infinities, signed
// zeros and NaN included.
TEST(HistogramCpu, FastBaselinesEqualTheSerialLoop) {
  const struct {
    double lo, hi;
    int bins;
  } rules[] = {{-1e6, 2e6, 256},   {0, 256, 256},         {0, 1, 4096},           {0.1, 0.7, 7},
               {-3.5, 1e6, 65536}, {0, 4096, 1024},       {10, 250, 24},          {-1, 1, 2},
               {0, 768, 256},      {1e15, 1e15 + 1e3, 7}, {1, 1 + 0x1p-40, 65536}};
  std::mt19937_64 random(5);
  for (const auto& r : rules) {
    std::vector<double> values;
    for (int k = 0; k <= r.bins; k += std::max(1, r.bins / 64)) {
      const double edge = r.lo + k * ((r.hi - r.lo) / r.bins);
      for (double d : {-1.0, -0.5, 0.0, 0.5, 1.0}) values.push_back(std::floor(edge) + d);
      double below = edge, above = edge;
      float below_float = float(edge), above_float = float(edge);
      for (int step = 0; step < 3; ++step) {
        values.insert(values.end(), {below, above, double(below_float), double(above_float)});
        below = std::nextafter(below, -INFINITY);
        above = std::nextafter(above, INFINITY);
        below_float = std::nextafter(below_float, -INFINITY);
        above_float = std::nextafter(above_float, INFINITY);
      }
    }
    std::uniform_real_distribution<double> spread(r.lo - (r.hi - r.lo) / 8,
                                                  r.hi + (r.hi - r.lo) / 8);
    for (int i = 0; i < 300000; ++i) values.push_back(spread(random));
    values.insert(values.end(), {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e300, -1e300});
    const auto check = [&](auto zero, const char* type) {
      using T = decltype(zero);
      std::vector<T> data;
      for (const double v : values) {
        if constexpr (std::is_same_v<T, std::uint8_t>)
          data.push_back(T(std::isnan(v) ? 0 : std::clamp(v, 0.0, 255.0)));
        else if constexpr (std::is_same_v<T, std::int32_t>)
          data.push_back(T(std::isnan(v) ? 0 : std::clamp(v, -2147483648.0, 2147483647.0)));
        else
          data.push_back(T(v));
      }
      std::vector<std::uint64_t> expected(r.bins), one_core(r.bins, 7), every_core(r.bins, 7);
      cpu::histogram_serial(data.data(), std::int64_t(data.size()), r.bins, r.lo, r.hi,
                            expected.data());
      cpu::histogram_fast(data.data(), std::int64_t(data.size()), r.bins, r.lo, r.hi,
                          one_core.data(), false);
      cpu::histogram_fast(data.data(), std::int64_t(data.size()), r.bins, r.lo, r.hi,
                          every_core.data(), true);
      EXPECT_EQ(one_core, expected) << type << " [" << r.lo << ", " << r.hi << ") " << r.bins;
      EXPECT_EQ(every_core, expected) << type << " [" << r.lo << ", " << r.hi << ") " << r.bins;
    };
    check(std::uint8_t{}, "uint8");
    check(std::int32_t{}, "int32");
    check(float{}, "float");
    check(double{}, "double");
  }
}

TEST(HistogramCpu, FastBaselinesFindTheRulesEdgeFarFromTheRealOne) {
  // lo = -1, hi = 1, 2 bins: v - lo rounds to 1 for every v in [-2^-54, 0) (a tie to even at
  // -2^-54), so the rule puts those values in bin 1, not 0: its edge lies 2^62 doubles below the
  // real edge, 0.
  const std::vector<double> data{-0x1p-53, std::nextafter(-0x1p-54, -1.0), -0x1p-54, -1e-300, -0.0,
                                 0.0};
  const std::vector<std::uint64_t> expected{2, 4};
  std::vector<std::uint64_t> serial(2), one_core(2), every_core(2);
  cpu::histogram_serial(data.data(), std::int64_t(data.size()), 2, -1, 1, serial.data());
  cpu::histogram_fast(data.data(), std::int64_t(data.size()), 2, -1, 1, one_core.data(), false);
  cpu::histogram_fast(data.data(), std::int64_t(data.size()), 2, -1, 1, every_core.data(), true);
  EXPECT_EQ(serial, expected);
  EXPECT_EQ(one_core, expected);
  EXPECT_EQ(every_core, expected);
}

TEST(HistogramCpu, ByteReferenceFoldsValueCountsByTheRule) {
  std::mt19937 random(7);
  std::vector<std::uint8_t> data(200003);
  for (auto& v : data) v = std::uint8_t(random());
  for (const auto& [lo, hi, bins] : {std::tuple{0.0, 256.0, 256}, std::tuple{10.5, 200.25, 7},
                                     std::tuple{-100.0, 300.0, 1000}, std::tuple{3.0, 4.0, 1}}) {
    std::vector<std::uint64_t> serial(bins);
    cpu::histogram_serial(data.data(), std::int64_t(data.size()), bins, lo, hi, serial.data());
    EXPECT_EQ(cpu::histogram_reference<std::uint8_t>(std::int64_t(data.size()), bins, lo, hi,
                                                     [&](std::int64_t i) { return data[i]; }),
              serial)
        << lo << " " << hi << " " << bins << " (seed 7)";
  }
}

TEST(HistogramCpu, ManyBinsReferenceStaysExact) {
  const int bins = 1 << 24;
  const auto reference = cpu::histogram_reference<double>(
      1000, bins, 0, 1, [](std::int64_t i) { return double(i) / 1000; });
  ASSERT_EQ(reference.size(), std::size_t(bins));
  for (std::int64_t i = 0; i < 1000; ++i)
    EXPECT_EQ(reference[cpu::even_bin(double(i) / 1000, 0, 1, bins)], 1u);
}

TEST(HistogramData, UniformValuesCoverTheRangeAndSpillAroundIt) {
  using bench::Distribution;
  using bench::HistogramData;
  using bench::sample_histogram_value;
  const bench::InputShape uniform{Distribution::uniform, bench::Mapping::scaled, 256, 100000};
  int below = 0, inside = 0, above = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const float v = sample_histogram_value<float>(3, i, uniform);
    EXPECT_EQ(std::ldexp(v, 23), std::trunc(std::ldexp(v, 23)));  // on the 2^-23 grid
    (v < 0 ? below : v < 1 ? inside : above) += 1;
  }
  EXPECT_GT(below, 4000);
  EXPECT_GT(above, 4000);
  EXPECT_GT(inside, 80000);
  const double d = sample_histogram_value<double>(3, 17, uniform);
  EXPECT_GE(d, -1.0 / 16);
  EXPECT_LT(d, 17.0 / 16);
  bench::InputShape equal = uniform;
  equal.dist = Distribution::equal;
  const std::int32_t one = sample_histogram_value<std::int32_t>(3, 5, equal);
  EXPECT_GE(one, HistogramData<std::int32_t>::lo(bench::Mapping::scaled, 256));
  EXPECT_LT(one, HistogramData<std::int32_t>::hi(bench::Mapping::scaled, 256));
  EXPECT_EQ(sample_histogram_value<std::uint8_t>(9, 1, equal),
            sample_histogram_value<std::uint8_t>(4, 1000, equal));
}

// The generators' shapes, on the host (the device runs the same functions): every distribution
// at both mappings, for each type, binned by the rule.
template <class T>
void expect_distribution_shapes(int bins) {
  using bench::Distribution, bench::Mapping, bench::HistogramData;
  constexpr std::int64_t n = 20011;
  for (const Mapping mapping : {Mapping::scaled, Mapping::identity}) {
    const double lo = HistogramData<T>::lo(mapping, bins), hi = HistogramData<T>::hi(mapping, bins);
    for (const Distribution dist :
         {Distribution::uniform, Distribution::equal, Distribution::sorted, Distribution::zipf,
          Distribution::hot, Distribution::normal}) {
      const bench::InputShape shape{dist, mapping, bins, n};
      const std::string what = std::string(sizeof(T) == 1                    ? "uint8"
                                           : std::is_same_v<T, std::int32_t> ? "int32"
                                           : std::is_same_v<T, float>        ? "float"
                                                                             : "double") +
                               ", dist " + std::to_string(int(dist)) + ", " +
                               (mapping == Mapping::identity ? "identity" : "scaled") + ", " +
                               std::to_string(bins) + " bins";
      std::vector<std::uint64_t> counts(std::size_t(bins), 0);
      std::int64_t counted = 0, integers = 0;
      T previous = std::numeric_limits<T>::lowest();
      bool ascending = true;
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = bench::sample_histogram_value<T>(11, std::uint64_t(i), shape);
        ASSERT_FALSE(std::isnan(double(v))) << what;
        ascending = ascending && v >= previous;
        previous = v;
        integers += double(v) == std::floor(double(v));
        if (const int bin = cpu::even_bin(double(v), lo, hi, bins); bin >= 0)
          counts[std::size_t(bin)] += 1, counted += 1;
      }
      std::vector<std::uint64_t> sorted_counts = counts;
      std::sort(sorted_counts.rbegin(), sorted_counts.rend());
      if (mapping == Mapping::identity) {
        EXPECT_EQ(counted, n) << what << ": identity values are all counted";
        EXPECT_EQ(integers, n) << what << ": identity values are integers";
      }
      switch (dist) {
        case Distribution::equal: EXPECT_EQ(sorted_counts[0], std::uint64_t(n)) << what; break;
        case Distribution::sorted: EXPECT_TRUE(ascending) << what; break;
        case Distribution::hot:
          EXPECT_GE(sorted_counts[0] + sorted_counts[1] + sorted_counts[2] + sorted_counts[3],
                    std::uint64_t(0.88 * n))
              << what;
          break;
        case Distribution::zipf:
          // Rank 1 is the counted range's smallest value: the first bin is the fullest.
          EXPECT_EQ(counted, n) << what;
          EXPECT_EQ(counts[0], sorted_counts[0]) << what;
          EXPECT_GT(counts[0], std::uint64_t(n / 20)) << what;
          break;
        case Distribution::normal:
          EXPECT_GT(counts[std::size_t(bins / 2)],
                    2 * std::max(counts[0], counts[std::size_t(bins - 1)]))
              << what;
          break;
        default:
          EXPECT_LT(sorted_counts[0], std::uint64_t(4 * n / bins + 50)) << what;
          if (mapping == Mapping::scaled && sizeof(T) > 1) {
            EXPECT_LT(counted, n) << what << ": some fall outside";
          }
      }
      EXPECT_GT(counted, n / 2) << what;
    }
  }
}

TEST(HistogramData, EveryDistributionHasItsShapeAtBothMappings) {
  expect_distribution_shapes<std::int32_t>(256);
  expect_distribution_shapes<std::int32_t>(4096);
  expect_distribution_shapes<float>(256);
  expect_distribution_shapes<double>(256);
  expect_distribution_shapes<std::uint8_t>(256);
  expect_distribution_shapes<std::uint8_t>(7);
}

TEST(HistogramData, SortedInputsAscendOverTheWholeSpread) {
  const bench::InputShape shape{bench::Distribution::sorted, bench::Mapping::identity, 256, 1000};
  EXPECT_EQ(bench::sample_histogram_value<std::int32_t>(1, 0, shape), 0);
  EXPECT_EQ(bench::sample_histogram_value<std::int32_t>(1, 999, shape), 255);
  EXPECT_EQ(bench::sample_histogram_value<std::int32_t>(1, 501, shape), 128);  // 501 * 256 / 1000
}

TEST(HistogramOp, DistributionsParseWithAnOptionalMapping) {
  const bench::Op& op = bench::registry().op("histogram");
  for (const char* name : {"uniform", "equal", "sorted", "zipf", "hot", "normal"}) {
    bench::Problem problem;
    problem.dist = name;
    EXPECT_EQ(op.resolve(problem).dist, name);
    problem.dist = std::string(name) + ":scaled";
    EXPECT_EQ(op.resolve(problem).dist, name);
    problem.dist = std::string(name) + ":identity";
    EXPECT_EQ(op.resolve(problem).dist, std::string(name) + ":identity");
    EXPECT_EQ(op.describe(op.resolve(problem)),
              "n = 50000000, int32, 256 bins, " + std::string(name) + ":identity");
  }
  for (const char* bad : {"zipf:", "zipf:linear", ":identity", "Zipf", "hot:identity:scaled"}) {
    bench::Problem problem;
    problem.dist = bad;
    EXPECT_THROW(op.resolve(problem), Error) << bad;
  }
}

TEST(HistogramOp, ResolvesSeed000DefaultsAndRejectsBadOptions) {
  const bench::Op& op = bench::registry().op("histogram");
  const bench::Problem problem = op.resolve(bench::Problem{});
  EXPECT_EQ(problem.n, 50'000'000);
  EXPECT_EQ(problem.bins, 256);
  EXPECT_EQ(problem.dtype, "int32");
  EXPECT_EQ(problem.dist, "uniform");
  EXPECT_EQ(op.describe(problem), "n = 50000000, int32, 256 bins, uniform");
  EXPECT_DOUBLE_EQ(op.model(problem).bytes, 50'000'000.0 * 4 + 256 * 8);
  bench::Problem bad;
  bad.bins = (1 << 24) + 1;
  EXPECT_THROW(op.resolve(bad), Error);
  bad = bench::Problem{};
  bad.dist = "skewed";
  EXPECT_THROW(op.resolve(bad), Error);
  bad = bench::Problem{};
  bad.dtype = "int64";
  EXPECT_THROW(op.resolve(bad), Error);
  bench::Problem bytes;
  bytes.dtype = "u8";
  bytes.dist = "equal";
  EXPECT_EQ(op.resolve(bytes).dtype, "uint8");
}

TEST(HistogramOp, ReportRegeneratesSeed000sTableFirst) {
  const auto problems = bench::registry().op("histogram").report_problems(false);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].n, 50'000'000);
  EXPECT_EQ(problems[0].dtype, "int32");
  std::vector<std::string> names;
  for (const bench::Variant* variant : bench::registry().variants("histogram"))
    names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "cpu-loop", "naive-global", "shared-block", "shared-warp", "vector-loads",
                       "warp-aggregated", "packed-16bit", "production", "lane-atomics",
                       "shared-block-per-value", "cub", "cpu-fast-bins", "cpu-threads"}));
}

// histogram_even checks its arguments before it touches the GPU: these run without one.
TEST(HistogramBadInput, EveryBadArgumentThrowsNamingIt) {
  const auto* in = reinterpret_cast<const std::int32_t*>(std::uintptr_t(4096));
  auto* counts = reinterpret_cast<std::uint64_t*>(std::uintptr_t(8192));
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  const auto argument_of = [](auto call) -> std::string {
    try {
      call();
    } catch (const Error& error) {
      return error.argument();
    }
    return "(nothing thrown)";
  };
  EXPECT_EQ(argument_of([&] { histogram_even(in, -1, 10, 0, 1, counts); }), "n");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 0, 0, 1, counts); }), "bins");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, -3, 0, 1, counts); }), "bins");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, (1 << 24) + 1, 0, 1, counts); }), "bins");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, nan, 1, counts); }), "lo");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, 0, nan, counts); }), "hi");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, -inf, 1, counts); }), "lo");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, 0, inf, counts); }), "hi");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, 1, 1, counts); }), "hi");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, 2, 1, counts); }), "hi");
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, -1e308, 1e308, counts); }), "hi");
  EXPECT_EQ(
      argument_of([&] { histogram_even(in, 10, 10, 0, 1, static_cast<std::uint64_t*>(nullptr)); }),
      "counts");
  EXPECT_EQ(argument_of([&] {
              histogram_even(static_cast<const std::int32_t*>(nullptr), 10, 10, 0, 1, counts);
            }),
            "in");
  const auto* misaligned = reinterpret_cast<const float*>(std::uintptr_t(4098));
  EXPECT_EQ(argument_of([&] { histogram_even(misaligned, 10, 10, 0, 1, counts); }), "in");
}

}  // namespace
}  // namespace rooflab
