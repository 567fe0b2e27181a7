// The histogram's CPU side: the bin rule at its edges, the CPU loop and the reference, the lab's
// data and op, and histogram_even's argument checks (which fail before any GPU work).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/histogram.hpp"
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
  } cases[] = {{-1.0, 0.1, 3}, {-1.0, 0.1, 10}, {0.2, 0.9, 1000}, {0.2, 0.9, (1 << 24) - 1}, {0.0, 1.0, 256}};
  for (const auto& c : cases) {
    const double v = std::nextafter(c.hi, c.lo);
    EXPECT_EQ(cpu::even_bin(v, c.lo, c.hi, c.bins), c.bins - 1) << c.lo << " " << c.hi << " " << c.bins;
  }
  const double unclamped = (std::nextafter(0.1, -1.0) - -1.0) * 10 / (0.1 - -1.0);
  EXPECT_GE(unclamped, 10.0);  // the case really needs the clamp
}

TEST(HistogramRule, OutOfRangeNaNAndInfinitiesAreNotCounted) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(cpu::even_bin(nan, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(inf, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(-inf, 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(1.0, 0, 1, 4), -1);  // hi is excluded
  EXPECT_EQ(cpu::even_bin(std::nextafter(0.0, -1.0), 0, 1, 4), -1);
  EXPECT_EQ(cpu::even_bin(0.0, 0, 1, 4), 0);   // lo is included
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

TEST(HistogramCpu, SerialLoopEqualsTheParallelReference) {
  std::mt19937 random(42);
  std::uniform_int_distribution<std::int32_t> value(-3000, 3000);
  std::vector<std::int32_t> data(300001);
  for (auto& v : data) v = value(random);
  for (const int bins : {1, 7, 256, 5000}) {
    std::vector<std::uint64_t> serial(bins, 99);
    cpu::histogram_serial(data.data(), std::int64_t(data.size()), bins, -1000.5, 2500.25, serial.data());
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
  for (std::int64_t i = 0; i < 1000; ++i) EXPECT_EQ(reference[cpu::even_bin(double(i) / 1000, 0, 1, bins)], 1u);
}

TEST(HistogramData, UniformValuesCoverTheRangeAndSpillAroundIt) {
  using bench::Distribution;
  using bench::HistogramData;
  int below = 0, inside = 0, above = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const float v = HistogramData<float>::sample(3, i, Distribution::uniform);
    EXPECT_EQ(std::ldexp(v, 23), std::trunc(std::ldexp(v, 23)));  // on the 2^-23 grid
    (v < 0 ? below : v < 1 ? inside : above) += 1;
  }
  EXPECT_GT(below, 4000);
  EXPECT_GT(above, 4000);
  EXPECT_GT(inside, 80000);
  const double d = HistogramData<double>::sample(3, 17, Distribution::uniform);
  EXPECT_GE(d, -1.0 / 16);
  EXPECT_LT(d, 17.0 / 16);
  const std::int32_t equal = HistogramData<std::int32_t>::sample(3, 5, Distribution::equal);
  EXPECT_GE(equal, HistogramData<std::int32_t>::lo);
  EXPECT_LT(equal, HistogramData<std::int32_t>::hi);
  EXPECT_EQ(HistogramData<std::uint8_t>::sample(9, 1, Distribution::equal),
            HistogramData<std::uint8_t>::sample(4, 1000, Distribution::equal));
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
  for (const bench::Variant* variant : bench::registry().variants("histogram")) names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-loop", "naive-global", "shared-block", "shared-warp",
                                             "vector-loads", "warp-aggregated", "packed-16bit", "production",
                                             "cub"}));
}

// histogram_even checks its arguments before it touches the GPU: these run without one.
TEST(HistogramBadInput, EveryBadArgumentThrowsNamingIt) {
  const auto* in = reinterpret_cast<const std::int32_t*>(std::uintptr_t(4096));
  auto* counts = reinterpret_cast<std::uint64_t*>(std::uintptr_t(8192));
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
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
  EXPECT_EQ(argument_of([&] { histogram_even(in, 10, 10, 0, 1, static_cast<std::uint64_t*>(nullptr)); }), "counts");
  EXPECT_EQ(argument_of([&] { histogram_even(static_cast<const std::int32_t*>(nullptr), 10, 10, 0, 1, counts); }), "in");
  const auto* misaligned = reinterpret_cast<const float*>(std::uintptr_t(4098));
  EXPECT_EQ(argument_of([&] { histogram_even(misaligned, 10, 10, 0, 1, counts); }), "in");
}

}  // namespace
}  // namespace rooflab
