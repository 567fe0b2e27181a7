// histogram_even and its ladder against the CPU reference, count for count: every rung at awkward
// sizes, values on and around bin edges, NaN and infinities, empty and unaligned inputs, one bin
// and more bins than values, 16-bit counters past their range, and more than 2^32 values.
// HistogramHuge.* moves gigabytes: leave it out of compute-sanitizer runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/runner.hpp"
#include "cpu/histogram.hpp"
#include "gpu_test.hpp"
#include "histogram/byte_candidates.hpp"
#include "histogram/histogram_workspace.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/histogram.hpp"

namespace rooflab::bench {
namespace {

class HistogramLadder : public testing::GpuTest {};
class Histogram : public testing::GpuTest {};
class HistogramHuge : public testing::GpuTest {};

Problem resolved(std::int64_t n, const char* dtype, std::int64_t bins, const char* dist) {
  Problem problem;
  problem.n = n;
  problem.dtype = dtype;
  problem.bins = bins;
  problem.dist = dist;
  return registry().op("histogram").resolve(problem);
}

// Runs each selected variant the problem's limits allow, twice (a rung must not accumulate
// across runs), and checks the counts against the CPU reference.
void expect_variants_exact(const Problem& problem, std::uint64_t& seed, const std::vector<std::string>& only = {}) {
  HistogramWorkspace w(problem);
  const std::string what = registry().op("histogram").describe(problem);
  for (const Variant* variant : registry().variants("histogram")) {
    if (!only.empty() && std::find(only.begin(), only.end(), variant->name) == only.end()) continue;
    if (variant->limit && !variant->limit(problem).empty()) continue;
    w.refill(seed++);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    variant->run(w, nullptr);
    variant->run(w, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name << ", " << what;
    const Check check = w.check(variant->where);
    EXPECT_TRUE(check.passed) << variant->name << ", " << what << ", seed " << seed - 1 << ": " << check.detail;
  }
}

// histogram_even on `values` (copied to the device at `offset` elements into a buffer) against
// the CPU rule on the same values.
template <class T>
void expect_device_equals_cpu(const std::vector<T>& values, int bins, double lo, double hi, std::size_t offset = 0,
                              const std::string& what = "") {
  std::vector<T> padded(values.size() + offset + 1);
  std::copy(values.begin(), values.end(), padded.begin() + std::ptrdiff_t(offset));
  const DeviceBuffer<T> in(padded);
  DeviceBuffer<std::uint64_t> counts{std::size_t(bins)};
  counts.fill_bytes(0xFF);
  histogram_even(in.data() + offset, std::int64_t(values.size()), bins, lo, hi, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto reference = cpu::histogram_reference<T>(std::int64_t(values.size()), bins, lo, hi,
                                                     [&](std::int64_t i) { return values[std::size_t(i)]; });
  const auto got = counts.download();
  std::int64_t differing = 0, first = -1;
  for (std::size_t b = 0; b < got.size(); ++b)
    if (got[b] != reference[b]) differing += 1, first = first < 0 ? std::int64_t(b) : first;
  EXPECT_EQ(differing, 0) << what << " lo " << lo << " hi " << hi << " bins " << bins << " n " << values.size()
                          << " offset " << offset << ": first bin " << first << " got "
                          << (first >= 0 ? got[std::size_t(first)] : 0) << " expected "
                          << (first >= 0 ? reference[std::size_t(first)] : 0);
}

// The uint8 candidate designs (variants 8-11) on `bytes` at `offset` bytes into a buffer against
// the CPU rule on the same bytes.
void expect_byte_candidates_equal_cpu(const std::vector<std::uint8_t>& bytes, int bins, double lo, double hi,
                                      std::size_t offset, const std::string& what) {
  using Count = void (*)(const std::uint8_t*, std::int64_t, const detail::EvenBins&, unsigned long long*,
                         cudaStream_t);
  const std::pair<const char*, Count> candidates[] = {{"lane-atomics", count_bytes_lane_atomics},
                                                      {"private-8bit", count_bytes_private_8bit},
                                                      {"private-16bit", count_bytes_private_16bit},
                                                      {"hybrid", count_bytes_hybrid_split}};
  std::vector<std::uint8_t> padded(bytes.size() + offset + 1);
  std::copy(bytes.begin(), bytes.end(), padded.begin() + std::ptrdiff_t(offset));
  const DeviceBuffer<std::uint8_t> in(padded);
  const auto reference = cpu::histogram_reference<std::uint8_t>(std::int64_t(bytes.size()), bins, lo, hi,
                                                                [&](std::int64_t i) { return bytes[std::size_t(i)]; });
  for (const auto& [name, count] : candidates) {
    DeviceBuffer<std::uint64_t> counts{std::size_t(bins)};
    counts.fill_bytes(0);
    count(in.data() + offset, std::int64_t(bytes.size()), detail::make_even_bins(bins, lo, hi),
          reinterpret_cast<unsigned long long*>(counts.data()), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;
    EXPECT_EQ(counts.download(), reference) << name << ", " << what << ", lo " << lo << " hi " << hi << " bins "
                                            << bins << " n " << bytes.size() << " offset " << offset;
  }
}

// The largest T below hi (the last value the rule counts).
template <class T>
T largest_below(double hi) {
  T v = T(hi);
  while (double(v) >= hi) v = std::nextafter(v, -std::numeric_limits<T>::infinity());
  return v;
}

// Values of T on and around each bin edge lo + k (hi - lo) / bins: the edge rounded to T and up
// to three neighbours on each side, each repeated so the vector paths see them too.
template <class T>
std::vector<T> values_around_edges(double lo, double hi, int bins, int stride) {
  std::vector<T> values;
  for (int k = 0; k <= bins; k += stride) {
    T v = T(lo + k * ((hi - lo) / bins));
    for (int step = 0; step < 3; ++step) v = std::nextafter(v, -std::numeric_limits<T>::infinity());
    for (int step = 0; step < 7; ++step, v = std::nextafter(v, std::numeric_limits<T>::infinity()))
      for (int copy = 0; copy < 3; ++copy) values.push_back(v);
  }
  return values;
}

TEST_F(HistogramLadder, EveryRungMatchesTheReferenceAtAwkwardSizes) {
  std::uint64_t seed = 2000;
  for (const std::int64_t n : {1, 2, 31, 33, 1000, 4097, (1 << 18) + 7})
    for (const std::int64_t bins : {1, 3, 256, 4096, 65536, 200000})
      expect_variants_exact(resolved(n, "int32", bins, "uniform"), seed);
  for (const std::int64_t bins : {1, 256, 65536, 200000})
    expect_variants_exact(resolved((1 << 18) + 7, "int32", bins, "equal"), seed);
}

TEST_F(HistogramLadder, ProductionAndCubMatchTheReferenceForEveryType) {
  std::uint64_t seed = 3000;
  const std::vector<std::string> production_and_cub{"cpu-loop", "production", "cub"};
  for (const char* dtype : {"uint8", "float", "double"})
    for (const std::int64_t n : {1, 15, 17, 4099, (1 << 20) + 3})
      for (const std::int64_t bins : {1, 7, 256, 5000, 65536, 200000}) {
        // CUB bins floats in float arithmetic: it agrees with the rule on the lab's [0, 1) data
        // only for power-of-two bin counts; elsewhere only production is held to the rule.
        const bool cub_agrees = std::string(dtype) != "float" || (bins & (bins - 1)) == 0;
        expect_variants_exact(resolved(n, dtype, bins, "uniform"), seed,
                              cub_agrees ? production_and_cub : std::vector<std::string>{"cpu-loop", "production"});
      }
  for (const char* dtype : {"uint8", "float", "double"})
    expect_variants_exact(resolved((1 << 20) + 1, dtype, 256, "equal"), seed, production_and_cub);
}

TEST_F(HistogramLadder, ByteCandidatesMatchTheReference) {
  // Uniform bytes at awkward sizes and bins; all-equal bytes put every count on one counter of
  // every lane, the most the candidates' flushes must absorb (2^24 + 5 bytes: many flushes).
  std::uint64_t seed = 6000;
  const std::vector<std::string> candidates{"lane-atomics", "private-8bit", "private-16bit", "hybrid"};
  for (const std::int64_t n : {1, 15, 17, 4099, (1 << 20) + 3, (1 << 24) + 5})
    for (const std::int64_t bins : {1, 7, 256, 5000})
      expect_variants_exact(resolved(n, "uint8", bins, "uniform"), seed, candidates);
  for (const std::int64_t bins : {7, 256}) {
    expect_variants_exact(resolved((1 << 20) + 1, "uint8", bins, "equal"), seed, candidates);
    expect_variants_exact(resolved((1 << 24) + 5, "uint8", bins, "equal"), seed, candidates);
  }
}

TEST_F(HistogramLadder, TheRunnerValidatesAndTimesEveryRung) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.warmup = 1;
  Runner runner(registry(), environment, options);
  for (const char* dist : {"uniform", "equal"}) {
    const auto rows = runner.run("histogram", resolved((1 << 20) + 5, "int32", 4096, dist));
    ASSERT_EQ(rows.size(), registry().variants("histogram").size());
    for (const Row& row : rows) {
      EXPECT_NE(row.status, Status::failed) << row.name << " (" << dist << "): " << row.note;
      if (row.status == Status::ok) EXPECT_GT(row.median_ms, 0) << row.name;
    }
  }
}

TEST_F(Histogram, ValueJustBelowHiLandsInLastBin) {
  // For these bounds the rule's quotient for the last value below hi rounds up to bins (or past
  // it): only the clamp to bins - 1 keeps it counted, on the device as on the host.
  const struct {
    double lo, hi;
    int bins;
  } cases[] = {{-1.0, 0.1, 10}, {0.2, 0.9, 1000}, {0.2, 0.9, (1 << 24) - 1}, {0.0, 1.0, 256}, {-1.0, 0.1, 65536}};
  for (const auto& c : cases) {
    const double last_double = largest_below<double>(c.hi);
    const float last_float = largest_below<float>(c.hi);
    expect_device_equals_cpu(std::vector<double>(100, last_double), c.bins, c.lo, c.hi, 0, "double");
    expect_device_equals_cpu(std::vector<float>(100, last_float), c.bins, c.lo, c.hi, 0, "float");
    DeviceBuffer<double> in(std::vector<double>{last_double});
    DeviceBuffer<std::uint64_t> counts{std::size_t(c.bins)};
    histogram_even(in.data(), 1, c.bins, c.lo, c.hi, counts.data());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(counts.download()[std::size_t(c.bins - 1)], 1u) << c.lo << " " << c.hi << " " << c.bins;
  }
  expect_device_equals_cpu(std::vector<std::int32_t>(50, 10), 3, -0.25, 10.5, 0, "int32");
  expect_device_equals_cpu(std::vector<std::uint8_t>(50, 255), 7, 0, 256, 0, "uint8");
}

TEST_F(Histogram, ValuesOnAndAroundBinEdgesMatchTheCpuRule) {
  const struct {
    double lo, hi;
    int bins;
  } floating[] = {{0, 0.3, 3}, {0.1, 0.7, 7}, {-1, 0.1, 10}, {-3.5, 1e6, 4096}, {0, 1, 65536}, {1e-3, 1.5e-3, 100000},
                  {-1e30, 1e30, 1 << 20}};
  for (const auto& c : floating) {
    const int stride = std::max(1, c.bins / 4096);
    expect_device_equals_cpu(values_around_edges<double>(c.lo, c.hi, c.bins, stride), c.bins, c.lo, c.hi, 0, "double");
    expect_device_equals_cpu(values_around_edges<float>(c.lo, c.hi, c.bins, stride), c.bins, c.lo, c.hi, 0, "float");
  }
  // Integers: width 1 (every value on an edge), integer widths, fractional bounds, the full range,
  // and ranges that hold no int32 at all.
  const struct {
    double lo, hi;
    int bins;
  } integer[] = {{0, 256, 256}, {-7, 1e6 - 7, 1000}, {0.5, 1000.5, 999}, {-2147483648.0, 2147483648.0, 65536},
                 {-3, 70000, 70003}, {-1e9, 1e9, 1 << 24}, {0.2, 0.7, 3}, {2147483647.5, 2147483650.0, 2}};
  for (const auto& c : integer) {
    std::vector<std::int32_t> values;
    const int stride = std::max(1, c.bins / 4096);
    for (int k = 0; k <= c.bins; k += stride) {
      const double edge = std::floor(c.lo + k * ((c.hi - c.lo) / c.bins));
      for (double v = edge - 2; v <= edge + 2; ++v)
        if (v >= -2147483648.0 && v <= 2147483647.0) values.push_back(std::int32_t(v));
    }
    expect_device_equals_cpu(values, c.bins, c.lo, c.hi, 0, "int32");
  }
  std::vector<std::uint8_t> bytes;
  for (int copy = 0; copy < 40; ++copy)
    for (int v = 0; v < 256; ++v) bytes.push_back(std::uint8_t(v));
  for (const auto& [lo, hi, bins] : {std::tuple{0.0, 256.0, 256}, std::tuple{0.0, 256.0, 3}, std::tuple{10.0, 250.0, 7},
                                     std::tuple{-0.5, 255.5, 256}, std::tuple{0.0, 0.3, 3}, std::tuple{0.0, 256.0, 1 << 24}})
    expect_device_equals_cpu(bytes, bins, lo, hi, 0, "uint8");
}

TEST_F(Histogram, RepeatedBytesWithinAWordAreAllCounted) {
  // The byte kernel loads the counters of a word's four bytes before it stores any; bytes 0 and 2
  // (1 and 3) share a counter copy, so equal bytes there must add up, not overwrite each other.
  std::mt19937 random(13);
  std::vector<std::uint8_t> bytes;
  for (int group = 0; group < 50000; ++group) {
    const std::uint8_t a = std::uint8_t(random()), b = std::uint8_t(random()), c = std::uint8_t(random());
    const std::uint8_t patterns[][4] = {{a, a, a, a}, {a, b, a, b}, {a, b, a, c}, {a, b, c, b},
                                        {a, a, b, b}, {a, b, b, a}, {a, b, c, a}, {a, b, c, c}};
    for (const std::uint8_t byte : patterns[group % 8]) bytes.push_back(byte);
  }
  for (std::size_t offset = 0; offset < 4; ++offset) {
    expect_device_equals_cpu(bytes, 256, 0, 256, offset, "repeated bytes (seed 13)");
    expect_device_equals_cpu(bytes, 7, 10, 250, offset, "repeated bytes (seed 13)");
  }
}

TEST_F(Histogram, ByteCandidatesCountUnalignedRepeatedAndEqualBytes) {
  // Random bytes at every offset of a 16-byte vector (heads and tails), runs of equal bytes
  // within words (the private counters' load-all-then-store-all), and long runs of one value.
  std::mt19937 random(14);
  for (const std::size_t n : {1, 5, 16, 17, 1000, 65539, 3000017}) {
    std::vector<std::uint8_t> bytes(n);
    for (auto& b : bytes) b = std::uint8_t(random());
    for (std::size_t offset = 0; offset < 16; ++offset)
      expect_byte_candidates_equal_cpu(bytes, 256, 0, 256, offset, "random bytes (seed 14)");
    expect_byte_candidates_equal_cpu(bytes, 7, 10, 250, 3, "random bytes (seed 14)");
  }
  std::vector<std::uint8_t> repeated;
  for (int group = 0; group < 50000; ++group) {
    const std::uint8_t a = std::uint8_t(random()), b = std::uint8_t(random()), c = std::uint8_t(random());
    const std::uint8_t patterns[][4] = {{a, a, a, a}, {a, b, a, b}, {a, b, a, c}, {a, b, c, b},
                                        {a, a, b, b}, {a, b, b, a}, {a, b, c, a}, {a, b, c, c}};
    for (const std::uint8_t byte : patterns[group % 8]) repeated.push_back(byte);
  }
  for (std::size_t offset = 0; offset < 4; ++offset)
    expect_byte_candidates_equal_cpu(repeated, 256, 0, 256, offset, "repeated bytes (seed 14)");
  const std::vector<std::uint8_t> equal((std::size_t(1) << 24) + 9, 200);
  expect_byte_candidates_equal_cpu(equal, 256, 0, 256, 7, "all bytes 200");
  expect_byte_candidates_equal_cpu(equal, 3, 0, 256, 0, "all bytes 200");
}

TEST_F(Histogram, NaNAndInfinitiesAreNotCounted) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> values;
  for (int copy = 0; copy < 100; ++copy)
    for (const double v : {nan, inf, -inf, -0.0, 0.0, 0.5, 1.0, std::nextafter(1.0, 0.0), -nan, 0.25})
      values.push_back(v);
  expect_device_equals_cpu(values, 8, 0, 1, 0, "double");
  std::vector<float> floats(values.begin(), values.end());
  expect_device_equals_cpu(floats, 8, 0, 1, 0, "float");
  expect_device_equals_cpu(floats, 100000, 0, 1, 0, "float, packed counters");
  expect_device_equals_cpu(floats, 1 << 22, 0, 1, 0, "float, global counters");
  // Only the finite values in [0, 1) are counted: 0.0, -0.0, 0.5, 0.25 and the one below 1.
  DeviceBuffer<double> in(values);
  DeviceBuffer<std::uint64_t> counts(1);
  histogram_even(in.data(), std::int64_t(values.size()), 1, 0, 1, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(counts.download()[0], 500u);
}

TEST_F(Histogram, EmptyInputGivesZeroCounts) {
  DeviceBuffer<std::uint64_t> counts(1000);
  counts.fill_bytes(0xFF);
  histogram_even(static_cast<const std::int32_t*>(nullptr), 0, 1000, 0, 1, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const auto c : counts.download()) EXPECT_EQ(c, 0u);
  DeviceBuffer<std::uint8_t> bytes(16);
  counts.fill_bytes(0xFF);
  histogram_even(bytes.data(), 0, 1000, 0, 256, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const auto c : counts.download()) EXPECT_EQ(c, 0u);
}

TEST_F(Histogram, OneBinAndMoreBinsThanValues) {
  std::mt19937 random(11);
  std::uniform_int_distribution<std::int32_t> value(-500, 1500);
  std::vector<std::int32_t> ints(100003);
  for (auto& v : ints) v = value(random);
  expect_device_equals_cpu(ints, 1, 0, 1000, 0, "int32, one bin (seed 11)");
  std::vector<double> few(1000);
  for (std::size_t i = 0; i < few.size(); ++i) few[i] = double(i) / 1000;
  expect_device_equals_cpu(few, 1 << 24, 0, 1, 0, "double, 2^24 bins");
  expect_device_equals_cpu(std::vector<double>(few.begin(), few.begin() + 50), 100000, 0, 1, 0, "double, packed");
  expect_device_equals_cpu(std::vector<std::uint8_t>{1, 2, 3}, 1 << 24, 0, 256, 0, "uint8, 2^24 bins");
}

TEST_F(Histogram, UnalignedInputsTakeTheHeadAndTailPaths) {
  std::mt19937 random(12);
  const auto check_type = [&](auto zero, double lo, double hi, int bins) {
    using T = decltype(zero);
    // Values from a little below lo to a little above hi, within what T holds.
    const double least = std::max(lo - 10, double(std::numeric_limits<T>::lowest()));
    const double most = std::min(hi + 10, double(std::numeric_limits<T>::max()));
    std::uniform_real_distribution<double> draw(least, most);
    for (const std::size_t n : {0, 1, 5, 17, 1000, 65539}) {
      std::vector<T> values(n);
      for (auto& v : values) v = T(draw(random));
      for (std::size_t offset = 0; offset < 16 / sizeof(T); ++offset)
        expect_device_equals_cpu(values, bins, lo, hi, offset, "unaligned (seed 12)");
    }
  };
  check_type(std::uint8_t{}, 0, 256, 256);
  check_type(std::int32_t{}, -100, 100, 64);
  check_type(float{}, -1, 1, 1000);
  check_type(double{}, -1, 1, 1000);
  check_type(float{}, -1, 1, 70000);
  check_type(double{}, -1, 1, 300000);
}

TEST_F(Histogram, CountsAreOverwrittenNotAccumulated) {
  std::vector<float> values(4099, 0.5f);
  DeviceBuffer<float> in(values);
  DeviceBuffer<std::uint64_t> counts(4);
  counts.fill_bytes(0x5A);
  for (int call = 0; call < 3; ++call) histogram_even(in.data(), std::int64_t(values.size()), 4, 0, 1, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(counts.download(), (std::vector<std::uint64_t>{0, 0, 4099, 0}));
}

TEST_F(Histogram, SixteenBitCountersFlushBeforeTheyWrap) {
  // 2^24 equal values put 2^24 counts into one bin: the packed counters must be flushed many
  // times; uniform data over 65536 and 100000 bins exercises the bound on the other side.
  std::uint64_t seed = 4000;
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 256, "equal"), seed, {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 65536, "equal"), seed, {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 65536, "uniform"), seed, {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 23) + 1, "float", 100000, "equal"), seed, {"production"});
  expect_variants_exact(resolved((1 << 23) + 1, "double", 65536, "uniform"), seed, {"production"});
}

TEST_F(HistogramHuge, MoreThanTwoTo32BytesAndTwoTo31Ints) {
  // 2^32 + 17 bytes: 64-bit indexing, and more bytes per lane than its 16-bit counters hold, so
  // the lane counters are merged during the run. 2^31 + 5 ints: past 32-bit element counts.
  std::uint64_t seed = 5000;
  expect_variants_exact(resolved((std::int64_t(1) << 32) + 17, "uint8", 256, "uniform"), seed, {"production"});
  expect_variants_exact(resolved((std::int64_t(1) << 31) + 5, "int32", 4096, "uniform"), seed, {"production"});
}

}  // namespace
}  // namespace rooflab::bench
