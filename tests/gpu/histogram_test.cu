// histogram_even and its ladder against the CPU reference, count for count: every rung at awkward
// sizes, values on and around bin edges, NaN and infinities, empty and unaligned inputs, one bin
// and more bins than values, both sides of the 32-bit/16-bit counter boundary, 16-bit counters
// past their range, calls among a stream's kernels and in a CUDA graph, and more than 2^32
// values.
// HistogramHuge.* moves gigabytes: leave it out of compute-sanitizer runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/runner.hpp"
#include "core/device_features.hpp"
#include "histogram/even_bins.hpp"
#include "cpu/histogram.hpp"
#include "gpu_test.hpp"
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
void expect_variants_exact(const Problem& problem, std::uint64_t& seed,
                           const std::vector<std::string>& only = {}) {
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
    EXPECT_TRUE(check.passed) << variant->name << ", " << what << ", seed " << seed - 1 << ": "
                              << check.detail;
  }
}

// histogram_even on `values` (copied to the device at `offset` elements into a buffer) against
// the CPU rule on the same values.
template <class T>
void expect_device_equals_cpu(const std::vector<T>& values, int bins, double lo, double hi,
                              std::size_t offset = 0, const std::string& what = "") {
  std::vector<T> padded(values.size() + offset + 1);
  std::copy(values.begin(), values.end(), padded.begin() + std::ptrdiff_t(offset));
  const DeviceBuffer<T> in(padded);
  DeviceBuffer<std::uint64_t> counts{std::size_t(bins)};
  counts.fill_bytes(0xFF);
  histogram_even(in.data() + offset, std::int64_t(values.size()), bins, lo, hi, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto reference =
      cpu::histogram_reference<T>(std::int64_t(values.size()), bins, lo, hi,
                                  [&](std::int64_t i) { return values[std::size_t(i)]; });
  const auto got = counts.download();
  std::int64_t differing = 0, first = -1;
  for (std::size_t b = 0; b < got.size(); ++b)
    if (got[b] != reference[b]) differing += 1, first = first < 0 ? std::int64_t(b) : first;
  EXPECT_EQ(differing, 0) << what << " lo " << lo << " hi " << hi << " bins " << bins << " n "
                          << values.size() << " offset " << offset << ": first bin " << first
                          << " got " << (first >= 0 ? got[std::size_t(first)] : 0) << " expected "
                          << (first >= 0 ? reference[std::size_t(first)] : 0);
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

// int32 values on and two either side of every stride-th bin edge lo + k (hi - lo) / bins (the
// edge rounded down), each repeated so the vector paths see them too; values beyond int32 are
// left out.
std::vector<std::int32_t> ints_around_edges(double lo, double hi, int bins, int stride) {
  std::vector<std::int32_t> ints;
  for (int k = 0; k <= bins; k += stride) {
    const double edge = std::floor(lo + k * ((hi - lo) / bins));
    for (double v = edge - 2; v <= edge + 2; ++v)
      if (v >= -2147483648.0 && v <= 2147483647.0)
        for (int copy = 0; copy < 3; ++copy) ints.push_back(std::int32_t(v));
  }
  return ints;
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
        expect_variants_exact(
            resolved(n, dtype, bins, "uniform"), seed,
            cub_agrees ? production_and_cub : std::vector<std::string>{"cpu-loop", "production"});
      }
  for (const char* dtype : {"uint8", "float", "double"})
    expect_variants_exact(resolved((1 << 20) + 1, dtype, 256, "equal"), seed, production_and_cub);
}

// Issue 38's inputs: every distribution at both bin mappings (histogram_data.hpp).
const char* const distributions[] = {"uniform", "equal", "sorted", "zipf", "hot", "normal"};

TEST_F(HistogramLadder, EveryDistributionAndMappingMatchesTheReferenceForEveryType) {
  // At sizes that fill neither a block's round nor the last 16-byte vector (4099, 2^16 + 7;
  // small, for the sanitizers: the distributions script checks every case at full size):
  // production and CUB (lane-atomics for bytes) at 256 bins for every type; 32-bit, packed
  // 16-bit and global counters (4096, 65536, 2^18 bins: powers of two, where CUB's float
  // arithmetic agrees with the rule); every rung for int32 at 256 bins.
  std::uint64_t seed = 7000;
  const std::vector<std::string> production_and_cub{"production", "cub", "lane-atomics"};
  for (const char* dist : distributions) {
    for (const char* mapping : {"", ":identity"}) {
      const std::string name = std::string(dist) + mapping;
      for (const char* dtype : {"int32", "float", "uint8", "double"})
        for (const std::int64_t n : {4099, (1 << 16) + 7})
          expect_variants_exact(resolved(n, dtype, 256, name.c_str()), seed, production_and_cub);
      for (const char* dtype : {"int32", "float", "double"})
        for (const std::int64_t bins : {4096, 65536, 1 << 18})
          expect_variants_exact(resolved((1 << 16) + 7, dtype, bins, name.c_str()), seed,
                                production_and_cub);
      expect_variants_exact(resolved((1 << 16) + 7, "int32", 256, name.c_str()), seed);
    }
  }
}

TEST_F(Histogram, InputsAreDrawnOnTheDeviceFromTheSeed) {
  for (const char* dist : distributions) {
    HistogramWorkspace w(resolved(100003, "float", 256, dist));
    w.refill(21);
    const auto first = w.in.download();
    w.refill(21);
    EXPECT_EQ(w.in.download(), first) << dist << ": the same seed draws the same values";
    w.refill(22);
    if (std::string(dist) != "equal" && std::string(dist) != "sorted")
      EXPECT_NE(w.in.download(), first) << dist << ": another seed draws other values";
  }
}

TEST_F(Histogram, IntegerEdgesGiveTheRulesBinsAtEveryOffset) {
  // One bin per integer and bin widths of 2^s (even_bins.hpp's integer edges) for every type
  // that takes that evaluation: values on and beside every edge (floats and doubles also just
  // below and above each integer, NaN, infinities and values past hi), at unaligned starts so
  // that heads and tails are binned one by one as well as in vectors.
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  const struct {
    int bins;
    double lo, hi;
  } ranges[] = {{256, 0, 256},         {4096, 0, 4096},
                {65536, 0, 65536},     {1 << 18, 0, 1 << 18},
                {256, 0, 1 << 20},     {25, -5, 20},
                {300, 3, 3 + 300 * 8}, {65536, -2147483648.0, 2147483648.0}};
  for (const auto& r : ranges) {
    const int stride = std::max(1, r.bins / 2048);
    const std::vector<std::int32_t> ints = ints_around_edges(r.lo, r.hi, r.bins, stride);
    for (const std::size_t offset : {0, 1, 3})
      expect_device_equals_cpu(ints, r.bins, r.lo, r.hi, offset, "int32 edges");
    if (r.lo < -1e9) continue;  // floats there take the other evaluations
    std::vector<float> floats = values_around_edges<float>(r.lo, r.hi, r.bins, stride);
    std::vector<double> doubles = values_around_edges<double>(r.lo, r.hi, r.bins, stride);
    for (const double odd : {nan, inf, -inf, r.hi, r.hi + 0.5, r.lo - 0.5, 1e30}) {
      floats.push_back(float(odd));
      doubles.push_back(odd);
    }
    for (const std::size_t offset : {0, 1, 3}) {
      expect_device_equals_cpu(floats, r.bins, r.lo, r.hi, offset, "float edges");
      expect_device_equals_cpu(doubles, r.bins, r.lo, r.hi, offset % 2, "double edges");
    }
  }
}

TEST_F(Histogram, IntegerQuotientGivesTheRulesBinsAtEveryOffset) {
  // int32 data between integer bounds whose bin width is not a power of two (even_bins.hpp's
  // integer quotient): values on and beside every edge, beside lo and hi, the int32 extremes,
  // through 32-bit and packed 16-bit counters, at unaligned starts.
  const struct {
    int bins;
    double lo, hi;
  } ranges[] = {{256, -1e6, 2e6},
                {4096, -1e6, 2e6},
                {65536, -1e6, 2e6},
                {7, 0, 100},
                {3, -2147483648.0, 2147483647.0},
                {77, 2147483000, 2147483648.0},
                {100000, 0, 1e6},
                {1000, -5, 12345}};
  for (const auto& r : ranges) {
    ASSERT_TRUE(detail::make_even_bins(r.bins, r.lo, r.hi).integer_quotient)
        << r.lo << " " << r.hi << " " << r.bins;
    std::vector<std::int32_t> ints =
        ints_around_edges(r.lo, r.hi, r.bins, std::max(1, r.bins / 2048));
    for (const std::int32_t v :
         {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::min() + 1,
          -1, 0, std::numeric_limits<std::int32_t>::max() - 1,
          std::numeric_limits<std::int32_t>::max()})
      ints.insert(ints.end(), 3, v);
    for (const std::size_t offset : {0, 1, 3})
      expect_device_equals_cpu(ints, r.bins, r.lo, r.hi, offset, "int32 quotient");
  }
}

TEST_F(Histogram, WidthsBelowOneGiveTheRulesBinsForFloat) {
  // Float data in bins of width 2^s < 1 (even_bins.hpp's integer edges for float): values on and
  // beside every edge, -0.0, negatives, NaN, infinities and values past hi, at unaligned starts.
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  const struct {
    int bins;
    double lo, hi;
  } ranges[] = {{256, 0, 1}, {128, 0.5, 1}, {1 << 20, 0, 1}, {512, 0, 256}, {1000, 3, 3 + 125}};
  for (const auto& r : ranges) {
    ASSERT_TRUE(detail::make_even_bins(r.bins, r.lo, r.hi).integer_edges_float)
        << r.lo << " " << r.hi << " " << r.bins;
    std::vector<float> floats =
        values_around_edges<float>(r.lo, r.hi, r.bins, std::max(1, r.bins / 2048));
    for (const double odd :
         {nan, -nan, inf, -inf, -0.0, -1e-30, -0.5, r.hi, r.hi + 0.5, r.lo - 1e-3, 1e30})
      floats.push_back(float(odd));
    for (const std::size_t offset : {0, 1, 3})
      expect_device_equals_cpu(floats, r.bins, r.lo, r.hi, offset, "float widths below 1");
  }
}

TEST_F(HistogramLadder, ByteRungsMatchTheReference) {
  // Uniform bytes at awkward sizes and bins (300: more bins than byte values); all-equal bytes
  // put every count on one counter of every lane (2^24 + 5 bytes: the most any counter holds
  // at this size).
  std::uint64_t seed = 6000;
  const std::vector<std::string> byte_rungs{"lane-atomics", "production"};
  for (const std::int64_t n : {1, 15, 17, 4099, (1 << 20) + 3, (1 << 24) + 5})
    for (const std::int64_t bins : {1, 7, 256, 300, 5000})
      expect_variants_exact(resolved(n, "uint8", bins, "uniform"), seed, byte_rungs);
  for (const std::int64_t bins : {1, 7, 256, 300}) {
    expect_variants_exact(resolved((1 << 20) + 1, "uint8", bins, "equal"), seed, byte_rungs);
    expect_variants_exact(resolved((1 << 24) + 5, "uint8", bins, "equal"), seed, byte_rungs);
  }
}

TEST_F(Histogram, RepeatedBytesWithinAWordAreAllCounted) {
  // Equal bytes within a word and within a warp's 16-byte loads hit one lane-column counter with
  // several atomics in a row: every one must count.
  std::mt19937 random(13);
  std::vector<std::uint8_t> bytes;
  for (int group = 0; group < 50000; ++group) {
    const std::uint8_t a = std::uint8_t(random()), b = std::uint8_t(random()),
                       c = std::uint8_t(random());
    const std::uint8_t patterns[][4] = {{a, a, a, a}, {a, b, a, b}, {a, b, a, c}, {a, b, c, b},
                                        {a, a, b, b}, {a, b, b, a}, {a, b, c, a}, {a, b, c, c}};
    for (const std::uint8_t byte : patterns[group % 8]) bytes.push_back(byte);
  }
  for (std::size_t offset = 0; offset < 4; ++offset) {
    expect_device_equals_cpu(bytes, 256, 0, 256, offset, "repeated bytes (seed 13)");
    expect_device_equals_cpu(bytes, 7, 10, 250, offset, "repeated bytes (seed 13)");
  }
}

TEST_F(Histogram, BytesAtEveryOffsetAndTailAreCounted) {
  // Random bytes starting at every offset of a 16-byte vector with lengths that leave every
  // tail (heads and tails are counted apart from the vectors), over ranges that count every
  // byte, leave bytes below lo and at or above hi uncounted, or split bytes unevenly.
  std::mt19937 random(14);
  const struct {
    int bins;
    double lo, hi;
  } ranges[] = {{256, 0, 256},      {1, 0, 256},     {7, 10, 250},
                {300, -0.5, 255.5}, {300, 20, 21.5}, {3, 100.25, 101}};
  for (const std::size_t n : {1, 5, 16, 17, 31, 1000, 65539, 3000017}) {
    std::vector<std::uint8_t> bytes(n);
    for (auto& b : bytes) b = std::uint8_t(random());
    for (std::size_t offset = 0; offset < 16; ++offset)
      expect_device_equals_cpu(bytes, 256, 0, 256, offset, "random bytes (seed 14)");
    for (const auto& r : ranges)
      expect_device_equals_cpu(bytes, r.bins, r.lo, r.hi, n % 16, "random bytes (seed 14)");
  }
}

TEST_F(Histogram, AllEqualBytesAreCounted) {
  // One value on one counter of every lane, at an unaligned start, inside and outside [lo, hi).
  const std::vector<std::uint8_t> equal((std::size_t(1) << 24) + 9, 200);
  for (const auto& [bins, lo, hi] :
       {std::tuple{256, 0.0, 256.0}, std::tuple{3, 0.0, 256.0}, std::tuple{1, 0.0, 256.0},
        std::tuple{300, -0.5, 255.5}, std::tuple{7, 0.0, 200.0}})
    expect_device_equals_cpu(equal, bins, lo, hi, 7, "all bytes 200");
}

TEST_F(Histogram, NaNAndInfinitiesAreNotCounted) {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  std::vector<double> values;
  for (int copy = 0; copy < 100; ++copy)
    for (const double v :
         {nan, inf, -inf, -0.0, 0.0, 0.5, 1.0, std::nextafter(1.0, 0.0), -nan, 0.25})
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
  expect_device_equals_cpu(std::vector<double>(few.begin(), few.begin() + 50), 100000, 0, 1, 0,
                           "double, packed");
  expect_device_equals_cpu(std::vector<std::uint8_t>{1, 2, 3}, 1 << 24, 0, 256, 0,
                           "uint8, 2^24 bins");
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
  for (int call = 0; call < 3; ++call)
    histogram_even(in.data(), std::int64_t(values.size()), 4, 0, 1, counts.data());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(counts.download(), (std::vector<std::uint64_t>{0, 0, 4099, 0}));
}

// Sets n bytes to `value`, slowly enough (one byte a thread) that a kernel started too early would
// still find the previous value.
__global__ void set_bytes(std::uint8_t* data, std::int64_t n, std::uint8_t value) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    data[i] = value;
}

TEST_F(Histogram, CallsKeepTheirPlaceAmongTheStreamsKernels) {
  // The counting kernel may start before the kernel that zeroes the counts ahead of it ends
  // (programmatic dependent launch, sm_90 on); it must still count the input as the kernel
  // before the call left it, and the next kernel must find the finished counts. Rewritten input,
  // through every path: bytes, 32-bit counters, packed counters, counts on the output.
  const std::int64_t n = (std::int64_t(1) << 24) + 12;  // bytes, a multiple of 4: int32 too
  DeviceBuffer<std::uint8_t> in{std::size_t(n)};
  const auto* ints = reinterpret_cast<const std::int32_t*>(in.data());
  struct Call {
    std::uint8_t byte;  // every byte of the input
    bool as_ints;       // counted as int32 (n / 4 values) instead of bytes
    int bins;
  };
  const std::vector<Call> calls{{3, false, 256}, {200, false, 7},    {3, true, 256},
                                {9, true, 4096}, {100, true, 65536}, {1, true, 200000},
                                {77, false, 256}};
  std::vector<DeviceBuffer<std::uint64_t>> counts;
  for (const Call& call : calls) {
    counts.emplace_back(std::size_t(call.bins));
    counts.back().fill_bytes(0xFF);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the poison went to the default stream
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer<std::uint64_t> copied{std::size_t(calls.front().bins)};
  for (std::size_t c = 0; c < calls.size(); ++c) {
    set_bytes<<<64, 256, 0, stream>>>(in.data(), n, calls[c].byte);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    // An int32 of four bytes b < 128 is b * 0x01010101, counted over [0, 2^31).
    if (calls[c].as_ints)
      histogram_even(ints, n / 4, calls[c].bins, 0, 2147483648.0, counts[c].data(), stream);
    else
      histogram_even(in.data(), n, calls[c].bins, 0, 256, counts[c].data(), stream);
    if (c == 0)
      ASSERT_EQ(cudaMemcpyAsync(copied.data(), counts[0].data(), copied.bytes(),
                                cudaMemcpyDeviceToDevice, stream),
                cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const Call& call = calls[c];
    const std::int64_t values = call.as_ints ? n / 4 : n;
    const double value = call.as_ints ? double(std::uint32_t(call.byte) * 0x01010101u) : call.byte;
    const double hi = call.as_ints ? 2147483648.0 : 256;
    const auto bin =
        std::size_t(std::min(double(call.bins - 1), std::floor(value * call.bins / hi)));
    std::vector<std::uint64_t> want(std::size_t(call.bins), 0);
    want[bin] = std::uint64_t(values);
    EXPECT_EQ(counts[c].download(), want) << "call " << c;
  }
  std::vector<std::uint64_t> want_copied(std::size_t(calls.front().bins), 0);
  want_copied[calls.front().byte] = std::uint64_t(n);
  EXPECT_EQ(copied.download(), want_copied) << "the copy queued after the first call";
}

// Captured into a CUDA graph, a call's zeroing kernel and the counting kernel chained behind it by
// programmatic dependent launch become two nodes and a programmatic edge: the graph must count new
// input contents launch after launch, through every path, and calls on the same stream outside
// the graph must still find their counts.
TEST_F(Histogram, CapturedCallsCountLaunchAfterLaunch) {
  const std::int64_t n = (std::int64_t(1) << 22) + 36;  // bytes, a multiple of 4: int32 too
  DeviceBuffer<std::uint8_t> in{std::size_t(n)};
  const auto* ints = reinterpret_cast<const std::int32_t*>(in.data());
  // Bytes, 32-bit counters, packed counters, counts on the output.
  const std::vector<std::pair<bool, int>> paths{
      {false, 256}, {true, 256}, {true, 65536}, {true, 200000}};  // (as int32, bins)
  std::vector<DeviceBuffer<std::uint64_t>> counts;
  for (const auto& path : paths) counts.emplace_back(std::size_t(path.second));
  DeviceBuffer<std::uint64_t> eager{256};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const auto queue_calls = [&] {
    for (std::size_t p = 0; p < paths.size(); ++p) {
      if (paths[p].first)
        histogram_even(ints, n / 4, paths[p].second, 0, 2147483648.0, counts[p].data(), stream);
      else
        histogram_even(in.data(), n, paths[p].second, 0, 256, counts[p].data(), stream);
    }
  };
  set_bytes<<<64, 256, 0, stream>>>(in.data(), n, 1);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  queue_calls();  // outside the capture: kernels loaded, grid sizes queried and cached
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  queue_calls();
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (const std::uint8_t byte : {5, 90, 127}) {
    for (auto& c : counts) c.fill_bytes(0xFF);
    eager.fill_bytes(0xFF);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the poison went to the default stream
    set_bytes<<<64, 256, 0, stream>>>(in.data(), n, byte);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    histogram_even(in.data(), n, 256, 0, 256, eager.data(), stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (std::size_t p = 0; p < paths.size(); ++p) {
      const bool as_ints = paths[p].first;
      const int bins = paths[p].second;
      // An int32 of four bytes b < 128 is b * 0x01010101, counted over [0, 2^31).
      const double value = as_ints ? double(std::uint32_t(byte) * 0x01010101u) : byte;
      const double hi = as_ints ? 2147483648.0 : 256;
      std::vector<std::uint64_t> want(std::size_t(bins), 0);
      want[std::size_t(std::floor(value * bins / hi))] = std::uint64_t(as_ints ? n / 4 : n);
      EXPECT_EQ(counts[p].download(), want) << "byte " << int(byte) << ", path " << p;
    }
    std::vector<std::uint64_t> want_eager(256, 0);
    want_eager[byte] = std::uint64_t(n);
    EXPECT_EQ(eager.download(), want_eager) << "byte " << int(byte) << ", after the graph";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_F(Histogram, BinCountsOnBothSidesOfTheCounterWidthBoundary) {
  // 32-bit counters, one copy, while they fit a block's shared memory beside 1 KB of static
  // arrays; one bin more takes the 16-bit packed counters. Both sides, on data that spreads over
  // the bins and data that piles into a few. The block's shared memory is what the dispatch plans
  // with (Turing's 64 KB under ROOFLAB_TREAT_AS_SM=75).
  const int shared_per_block = current_device_features().shared_per_block;
  const std::int64_t widest = (shared_per_block - 1024) / 4 - 1;  // bins of 32-bit counters
  std::uint64_t seed = 4100;
  for (const std::int64_t bins : {widest, widest + 1, std::int64_t(20000)})
    for (const char* dist : {"uniform", "equal", "hot", "zipf:identity"})
      expect_variants_exact(resolved((1 << 22) + 5, "int32", bins, dist), seed, {"production"});
  expect_variants_exact(resolved((1 << 21) + 3, "float", widest, "normal"), seed, {"production"});
  expect_variants_exact(resolved((1 << 21) + 3, "double", widest + 1, "hot"), seed, {"production"});
}

TEST_F(Histogram, SixteenBitCountersFlushBeforeTheyWrap) {
  // 2^24 equal values put 2^24 counts into one bin: the packed counters must be flushed many
  // times; uniform data over 65536 and 100000 bins exercises the bound on the other side.
  std::uint64_t seed = 4000;
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 256, "equal"), seed,
                        {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 65536, "equal"), seed,
                        {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 24) + 5, "int32", 65536, "uniform"), seed,
                        {"packed-16bit", "production"});
  // Four hot bins cross 2^15 again and again while the others stay small, and Zipf-skewed data
  // brings counters of every size: each flush clears a few and bounds the rest by their OR.
  for (const char* dist : {"hot", "zipf", "hot:identity"})
    expect_variants_exact(resolved((1 << 24) + 5, "int32", 65536, dist), seed,
                          {"packed-16bit", "production"});
  expect_variants_exact(resolved((1 << 23) + 1, "float", 100000, "equal"), seed, {"production"});
  expect_variants_exact(resolved((1 << 23) + 1, "double", 65536, "uniform"), seed, {"production"});
  // Values that are not counted go to a spare counter beside the bins, which fills as fast:
  // 2^24 values below lo, then every other one inside, through 16-bit and 32-bit counters.
  std::vector<std::int32_t> outside((1 << 24) + 5, -7);
  for (const int bins : {65536, 4096})
    expect_device_equals_cpu(outside, bins, 0, 1e6, 1, "int32 below lo");
  for (std::size_t i = 0; i < outside.size(); i += 2) outside[i] = 123457;
  expect_device_equals_cpu(outside, 65536, 0, 1e6, 1, "int32 half below lo");
  const std::vector<float> nans((1 << 24) + 5, std::numeric_limits<float>::quiet_NaN());
  expect_device_equals_cpu(nans, 65536, 0, 1, 0, "float NaN");
}

TEST_F(Histogram, AWarpsAddsToOnePackedWordAreCombinedExactly) {
  // 16-bit counters (65536 bins): where every lane of a warp hits one word (here its two bins,
  // in turn), lane 0 adds the warp's counts to both halves at once; where a lane strays, each
  // lane adds its own. 2^24 values also cross the flush many times.
  std::vector<std::int32_t> pair((1 << 24) + 5);
  for (std::size_t i = 0; i < pair.size(); ++i) pair[i] = 6 + std::int32_t(i % 3 == 0);
  expect_device_equals_cpu(pair, 65536, 0, 65536, 1, "bins 6 and 7, one word");
  for (std::size_t i = 0; i < pair.size(); i += 97) pair[i] = 40001;
  expect_device_equals_cpu(pair, 65536, 0, 65536, 1, "and one value in 97 elsewhere");
}

TEST_F(HistogramHuge, MoreThanTwoTo32BytesAndTwoTo31Ints) {
  // 2^32 + 17 bytes: 64-bit indexing, and on a GPU of up to ~150 SMs more than 256 rounds per
  // block, so the lane-column table is merged during the run (counting.cuh) as well as at its
  // end, with spread and with all-equal bytes. 2^31 + 5 ints: past 32-bit element counts.
  // Each case moves 4-8 GiB and takes seconds (the host reference dominates).
  std::uint64_t seed = 5000;
  expect_variants_exact(resolved((std::int64_t(1) << 32) + 17, "uint8", 256, "uniform"), seed,
                        {"production"});
  expect_variants_exact(resolved((std::int64_t(1) << 32) + 17, "uint8", 7, "equal"), seed,
                        {"production"});
  expect_variants_exact(resolved((std::int64_t(1) << 31) + 5, "int32", 4096, "uniform"), seed,
                        {"production"});
}

}  // namespace
}  // namespace rooflab::bench
