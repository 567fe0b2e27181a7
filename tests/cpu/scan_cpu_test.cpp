// The scan op without a GPU: CPU baselines, the output check, the op's sizes and types, and the
// library's argument checks (which run before any CUDA call).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/scan.hpp"
#include "rooflab/error.hpp"
#include "rooflab/scan.hpp"

namespace rooflab {
namespace {

using cpu::RoundingBound;
using cpu::ScanKind;

std::vector<float> random_floats(std::int64_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> values(n);
  for (float& x : values) x = value(generator);
  return values;
}

TEST(CpuScan, SerialAndThreadsStayWithinTheRoundingBound) {
  const std::uint32_t seed = 7;
  const std::int64_t n = 300001;  // several thread ranges
  const std::vector<float> in = random_floats(n, seed);
  std::vector<float> serial(n), threads(n);
  cpu::inclusive_scan_serial(in.data(), serial.data(), n);
  cpu::inclusive_scan_threads(in.data(), threads.data(), n);
  const RoundingBound bound{64, 1};
  const auto serial_check =
      cpu::check_scan(in.data(), serial.data(), n, ScanKind::inclusive, bound);
  const auto threads_check =
      cpu::check_scan(in.data(), threads.data(), n, ScanKind::inclusive, bound);
  EXPECT_TRUE(serial_check.passed) << "seed " << seed << ": " << serial_check.describe();
  EXPECT_TRUE(threads_check.passed) << "seed " << seed << ": " << threads_check.describe();
}

TEST(CpuScan, ThreadsMatchSerialExactlyOnIntegersThatWrap) {
  const std::int64_t n = 500003;
  std::vector<std::int32_t> in(n);
  std::mt19937 generator(11);
  for (auto& x : in) x = std::int32_t(generator());  // full range: the sums wrap many times
  std::vector<std::int32_t> serial(n), threads(n);
  cpu::inclusive_scan_serial(in.data(), serial.data(), n);
  cpu::inclusive_scan_threads(in.data(), threads.data(), n);
  EXPECT_EQ(serial, threads);
  std::uint32_t sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += std::uint32_t(in[i]);
  EXPECT_EQ(serial.back(), std::int32_t(sum));
}

TEST(CpuScan, InPlaceGivesTheSameResult) {
  const std::vector<double> in = {0.5, -1.25, 3.0, 2.5, -0.75};
  std::vector<double> out(in.size()), in_place = in;
  cpu::inclusive_scan_threads(in.data(), out.data(), std::int64_t(in.size()));
  cpu::inclusive_scan_threads(in_place.data(), in_place.data(), std::int64_t(in.size()));
  EXPECT_EQ(out, in_place);
  EXPECT_EQ(out, (std::vector<double>{0.5, -0.75, 2.25, 4.75, 4.0}));
}

TEST(RoundingBound, AddsOneRoundingPerChunkOfEarlierElements) {
  const RoundingBound bound{128, 256};
  EXPECT_EQ(bound.depth(0), 129);
  EXPECT_EQ(bound.depth(255), 129);
  EXPECT_EQ(bound.depth(256), 130);
  EXPECT_EQ((RoundingBound{40, 0}.depth(1 << 30)), 40);
}

TEST(CheckScan, AcceptsErrorsWithinTheBoundAndRejectsThoseBeyond) {
  const std::int64_t n = 1000;
  const std::vector<float> in(n, 1.0f);  // exact prefix i + 1, sum of magnitudes i + 1
  const float u = std::numeric_limits<float>::epsilon() / 2;
  std::vector<float> out(n);
  for (std::int64_t i = 0; i < n; ++i) out[i] = float(i + 1);
  out[600] =
      601.0f * (1 + 2 * u);  // one ulp at 601: 2u relative, inside gamma(3), outside gamma(1)
  const auto within =
      cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, RoundingBound{3, 0});
  EXPECT_TRUE(within.passed) << within.describe();
  EXPECT_GT(within.error, 1.5);
  EXPECT_LE(within.error, within.tolerance);
  const auto beyond =
      cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, RoundingBound{1, 0});
  EXPECT_FALSE(beyond.passed);
  EXPECT_EQ(beyond.first_failure, 600);
  EXPECT_NE(beyond.describe().find("index 600"), std::string::npos) << beyond.describe();
}

TEST(CheckScan, RejectsAnUnwrittenNaNElement) {
  const std::int64_t n = 200000;
  const std::vector<float> in = random_floats(n, 3);
  std::vector<float> out(n);
  cpu::inclusive_scan_serial(in.data(), out.data(), n);
  out[123456] = std::numeric_limits<float>::quiet_NaN();
  const auto check =
      cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, RoundingBound{64, 1});
  EXPECT_FALSE(check.passed);
  EXPECT_TRUE(check.not_finite);
  EXPECT_EQ(check.first_failure, 123456);
}

// An output whose writing stops partway (prefix sums, then zeros) fails the production bound that
// the GPU tests and the lab share, at the first element that was not written.
TEST(CheckScan, ProductionBoundRejectsAnOutputThatStopsBeingWritten) {
  const std::int64_t n = std::int64_t(1) << 20, written = n / 2;
  const std::vector<float> in = random_floats(n, 5);
  std::vector<float> out(n, 0.0f);
  double sum = 0;
  for (std::int64_t i = 0; i < written; ++i) out[i] = float(sum += in[i]);
  EXPECT_TRUE(cpu::check_scan(in.data(), out.data(), written, ScanKind::inclusive,
                              cpu::production_scan_rounding)
                  .passed);
  const auto check =
      cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, cpu::production_scan_rounding);
  EXPECT_FALSE(check.passed);
  EXPECT_GE(check.first_failure, written);
  EXPECT_LT(check.first_failure, written + 100) << check.describe();
}

TEST(CheckScan, ExclusiveScanStartsAtZero) {
  const std::vector<double> in = {1.5, 2.0, -0.5};
  const std::vector<double> right = {0.0, 1.5, 3.5};
  const std::vector<double> inclusive = {1.5, 3.5, 3.0};
  EXPECT_TRUE(
      cpu::check_scan(in.data(), right.data(), 3, ScanKind::exclusive, RoundingBound{2, 0}).passed);
  const auto wrong =
      cpu::check_scan(in.data(), inclusive.data(), 3, ScanKind::exclusive, RoundingBound{2, 0});
  EXPECT_FALSE(wrong.passed);
  EXPECT_EQ(wrong.first_failure, 0);
}

TEST(CheckScan, CountsIntegerMismatchesAndNamesTheFirst) {
  const std::int64_t n = 300000;
  std::vector<std::uint32_t> in(n, 3u), out(n);
  cpu::inclusive_scan_serial(in.data(), out.data(), n);
  EXPECT_TRUE(cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, {}).passed);
  out[70000] += 1;
  out[250000] -= 1;
  const auto check = cpu::check_scan(in.data(), out.data(), n, ScanKind::inclusive, {});
  EXPECT_FALSE(check.passed);
  EXPECT_EQ(check.error, 2);
  EXPECT_EQ(check.first_failure, 70000);
}

// The library validates its arguments before touching the GPU, so these run anywhere. The
// pointers are never dereferenced.
template <class T>
const T* fake_device_pointer(std::uintptr_t address) {
  return reinterpret_cast<const T*>(address);
}

std::string argument_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.argument();
  }
  return "(no error)";
}

TEST(ScanArguments, NegativeCountIsAnErrorNamingN) {
  const float* in = fake_device_pointer<float>(4096);
  float* out = const_cast<float*>(fake_device_pointer<float>(8192));
  EXPECT_EQ(argument_of([&] { inclusive_scan(in, out, -1); }), "n");
  EXPECT_EQ(argument_of([&] { exclusive_scan(in, out, -5); }), "n");
}

TEST(ScanArguments, NullPointersAreErrorsWhenThereIsWork) {
  const double* in = fake_device_pointer<double>(4096);
  double* out = const_cast<double*>(fake_device_pointer<double>(8192));
  EXPECT_EQ(argument_of([&] { inclusive_scan<double>(nullptr, out, 10); }), "in");
  EXPECT_EQ(argument_of([&] { inclusive_scan<double>(in, nullptr, 10); }), "out");
  EXPECT_EQ(argument_of([&] { exclusive_scan<double>(nullptr, out, 1); }), "in");
}

TEST(ScanArguments, ZeroElementsIsANoOpEvenWithNullPointers) {
  EXPECT_NO_THROW(inclusive_scan<std::int32_t>(nullptr, nullptr, 0));
  EXPECT_NO_THROW(exclusive_scan<std::uint32_t>(nullptr, nullptr, 0));
}

TEST(ScanArguments, MisalignedAndOverlappingPointersAreErrors) {
  const auto* in = fake_device_pointer<std::int64_t>(4096);
  auto* out = const_cast<std::int64_t*>(fake_device_pointer<std::int64_t>(1 << 20));
  auto* misaligned_out =
      const_cast<std::int64_t*>(fake_device_pointer<std::int64_t>((1 << 20) + 4));
  EXPECT_EQ(argument_of([&] { inclusive_scan(fake_device_pointer<std::int64_t>(4100), out, 8); }),
            "in");
  EXPECT_EQ(argument_of([&] { inclusive_scan(in, misaligned_out, 8); }), "out");
  EXPECT_EQ(argument_of([&] { inclusive_scan(in, const_cast<std::int64_t*>(in) + 3, 8); }), "out");
  EXPECT_EQ(argument_of([&] { exclusive_scan(in + 3, const_cast<std::int64_t*>(in), 8); }), "out");
}

}  // namespace

namespace bench {
namespace {

TEST(ScanOp, ResolvesItsDefaults) {
  const Op& op = registry().op("scan");
  const Problem problem = op.resolve(Problem{});
  EXPECT_EQ(problem.n, std::int64_t(1) << 28);
  EXPECT_EQ(problem.dtype, "float");
  EXPECT_EQ(op.describe(problem), "n = 268435456, float");
  EXPECT_EQ(op.model(problem).bytes, 2.0 * 4 * double(1 << 28));  // read n + write n
  EXPECT_EQ(op.model(problem).ceiling, Ceiling::copy_bandwidth);
}

TEST(ScanOp, AcceptsItsFiveTypesAndRejectsOthersNamingDtype) {
  const Op& op = registry().op("scan");
  Problem problem;
  problem.n = 1000;
  for (const char* dtype : {"float", "double", "int32", "int64", "uint32", "i64"}) {
    problem.dtype = dtype;
    EXPECT_NO_THROW(op.resolve(problem)) << dtype;
  }
  problem.dtype = "int64";
  EXPECT_EQ(op.model(op.resolve(problem)).bytes, 2.0 * 8 * 1000);
  problem.dtype = "uint8";
  try {
    op.resolve(problem);
    FAIL() << "uint8 accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "--dtype");
  }
}

TEST(ScanOp, ReportsFloatAndInt32AtTwoTo20AndTwoTo28) {
  const Op& op = registry().op("scan");
  std::vector<std::string> full, quick;
  for (const Problem& problem : op.report_problems(false))
    full.push_back(problem.dtype + "/" + std::to_string(problem.n));
  for (const Problem& problem : op.report_problems(true))
    quick.push_back(problem.dtype + "/" + std::to_string(problem.n));
  EXPECT_EQ(full, (std::vector<std::string>{"float/1048576", "float/268435456", "int32/1048576",
                                            "int32/268435456"}));
  EXPECT_EQ(quick, (std::vector<std::string>{"float/1048576", "int32/1048576"}));
}

TEST(ScanOp, LadderHasEveryRungInOrder) {
  std::vector<std::string> names;
  for (const Variant* variant : registry().variants("scan")) names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "cpu-serial", "cpu-threads", "hillis-steele", "blelloch", "blelloch-padded",
                       "warp-shuffle", "reduce-then-scan", "decoupled-lookback",
                       "lookback-blockidx-8k", "production", "production-16k", "cub"}));
}

TEST(ScanOp, LadderRungsSkipTypesTheyAreNotBuiltFor) {
  Problem problem;
  problem.n = 1000;
  problem.dtype = "double";
  for (const Variant* variant : registry().variants("scan")) {
    const std::string note = variant->limit ? variant->limit(problem) : "";
    const bool built_for_every_type =
        variant->where == Where::cpu || variant->name == "production" || variant->name == "cub";
    EXPECT_EQ(note.empty(), built_for_every_type) << variant->name << ": " << note;
  }
  problem.dtype = "int32";
  for (const Variant* variant : registry().variants("scan"))
    EXPECT_TRUE(!variant->limit || variant->limit(problem).empty()) << variant->name;
}

}  // namespace
}  // namespace bench
}  // namespace rooflab
