// Core pieces that need no GPU: errors, the ceiling arithmetic, the random streams, comparison,
// the worker pool.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench/dtype.hpp"
#include "core/random_stream.hpp"
#include "core/device_features.hpp"
#include "core/device_info.hpp"
#include "core/worker_pool.hpp"
#include "cpu/add.hpp"
#include "cpu/compare.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab {
namespace {

TEST(Error, MessageNamesOpArgumentAndProblem) {
  const Error error("reduce", "n", "must be >= 0, got -5");
  EXPECT_STREQ(error.what(), "rooflab::reduce: argument 'n': must be >= 0, got -5");
  EXPECT_EQ(error.op(), "reduce");
  EXPECT_EQ(error.argument(), "n");
  EXPECT_EQ(error.cuda_error(), "");
}

TEST(Error, CudaFailureSaysWhatWasBeingDoneAndTheCudaError) {
  try {
    const std::size_t bytes = std::size_t(3) << 29;
    ROOFLAB_CUDA("DeviceBuffer",
                 "allocating " + detail::describe_bytes(bytes) + " of device memory",
                 cudaErrorMemoryAllocation);
    FAIL();
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "rooflab::DeviceBuffer: allocating 1.5 GiB of device memory failed: out of memory "
                 "(cudaErrorMemoryAllocation)");
    EXPECT_EQ(error.op(), "DeviceBuffer");
    EXPECT_EQ(error.argument(), "");
    EXPECT_EQ(error.cuda_error(), "cudaErrorMemoryAllocation");
  }
}

TEST(Error, CudaSuccessThrowsNothingAndNeverBuildsTheDescription) {
  bool described = false;
  EXPECT_NO_THROW(ROOFLAB_CUDA("reduce", (described = true, "never shown"), cudaSuccess));
  EXPECT_FALSE(described);
}

TEST(Error, SizesInMessagesUseBinaryUnits) {
  EXPECT_EQ(detail::describe_bytes(0), "0 bytes");
  EXPECT_EQ(detail::describe_bytes(1), "1 byte");
  EXPECT_EQ(detail::describe_bytes(1023), "1023 bytes");
  EXPECT_EQ(detail::describe_bytes(1024), "1.0 KiB");
  EXPECT_EQ(detail::describe_bytes(1536), "1.5 KiB");
  EXPECT_EQ(detail::describe_bytes((std::size_t(1) << 20) - 1), "1.0 MiB");
  EXPECT_EQ(detail::describe_bytes(std::size_t(3) << 29), "1.5 GiB");
  EXPECT_EQ(detail::describe_bytes(std::size_t(1) << 50), "1.0 PiB");
}

TEST(Error, RequireThrowsOnlyWhenTheConditionFails) {
  EXPECT_NO_THROW(require(true, "scan", "n", "never"));
  EXPECT_THROW(require(false, "scan", "n", "must be positive"), Error);
}

TEST(DeviceArithmetic, HopperCoresPerSm) {
  EXPECT_EQ(fp32_cores_per_sm(9, 0), 128);
  EXPECT_EQ(fp64_cores_per_sm(9, 0), 64);
  EXPECT_EQ(fp32_cores_per_sm(8, 0), 64);
  EXPECT_EQ(fp32_cores_per_sm(1, 0), 0);
}

TEST(DeviceArithmetic, LectureFormulasOnAnH100LikeDevice) {
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  device.sm_clock_khz = 1980000;
  device.memory_clock_khz = 2619000;
  device.memory_bus_bits = 5120;
  EXPECT_NEAR(device.theoretical_bandwidth(), 2 * 2.619e9 * 5120 / 8, 1);
  EXPECT_NEAR(device.fp32_peak(), 132.0 * 128 * 2 * 1.98e9, 1);
  EXPECT_NEAR(device.fp64_peak(), 132.0 * 64 * 2 * 1.98e9, 1);
}

TEST(DeviceArithmetic, VersionString) { EXPECT_EQ(cuda_version_string(13000), "13.0"); }

TEST(RandomStreams, FloatsAreOnTheExactGridInMinusOneToOne) {
  std::set<float> distinct;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const float value = bench::random_float(3, i);
    EXPECT_GE(value, -1.0f);
    EXPECT_LT(value, 1.0f);
    EXPECT_EQ(std::ldexp(value, 23), std::trunc(std::ldexp(value, 23)));
    distinct.insert(value);
  }
  EXPECT_GT(distinct.size(), 9900u);  // not zeros, not a constant
}

TEST(RandomStreams, SeedsGiveDifferentStreams) {
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i)
    same += bench::random_float(1, i) == bench::random_float(2, i);
  EXPECT_LT(same, 5);
}

TEST(RandomStreams, DoublesAndIntegersStayInRange) {
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const double value = bench::random_double(5, i);
    EXPECT_GE(value, -1.0);
    EXPECT_LT(value, 1.0);
    const auto integer = bench::random_integer(5, i, -3, 7);
    EXPECT_GE(integer, -3);
    EXPECT_LE(integer, 7);
  }
}

TEST(Compare, ExactOutputHasZeroError) {
  const std::vector<float> out{1, 2, 3};
  const auto comparison = cpu::compare_relative(
      out.data(), 3, [&](std::int64_t i) { return double(out[i]); }, 1e-30);
  EXPECT_TRUE(comparison.within(0));
}

TEST(Compare, FindsTheWorstElement) {
  const std::vector<float> out{1, 2.5f, 3};
  const auto comparison = cpu::compare_relative(
      out.data(), 3, [](std::int64_t i) { return double(i + 1); }, 1e-30);
  EXPECT_EQ(comparison.worst_index, 1);
  EXPECT_DOUBLE_EQ(comparison.max_error, 0.25);
  EXPECT_FALSE(comparison.within(0.2));
  EXPECT_TRUE(comparison.within(0.25));
}

TEST(Compare, AnUnwrittenNaNNeverPassesEvenInALargeArray) {
  std::vector<float> out(1 << 20, 1.0f);
  out[777777] = std::numeric_limits<float>::quiet_NaN();
  const auto comparison = cpu::compare_relative(
      out.data(), std::int64_t(out.size()), [](std::int64_t) { return 1.0; }, 1e-30);
  EXPECT_TRUE(comparison.has_nan);
  EXPECT_EQ(comparison.worst_index, 777777);
  EXPECT_FALSE(comparison.within(1e300));
}

TEST(Compare, ExactCountsMismatchesAndFindsTheFirst) {
  std::vector<std::int64_t> out(200000);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::int64_t(i) * 3;
  const auto reference = [](std::int64_t i) { return i * 3; };
  EXPECT_TRUE(cpu::compare_exact(out.data(), std::int64_t(out.size()), reference).within(0));
  out[150001] += 1;
  out[199999] -= 1;
  const auto comparison = cpu::compare_exact(out.data(), std::int64_t(out.size()), reference);
  EXPECT_EQ(comparison.max_error, 2);
  EXPECT_EQ(comparison.worst_index, 150001);
  EXPECT_FALSE(comparison.within(0));
}

TEST(Compare, ExactSeesDifferencesBeyondDoublePrecision) {
  const std::vector<std::int64_t> out{(std::int64_t(1) << 60) + 1};
  const auto comparison =
      cpu::compare_exact(out.data(), 1, [](std::int64_t) { return std::int64_t(1) << 60; });
  EXPECT_EQ(comparison.max_error, 1);
}

TEST(CpuAdd, AddsElementwise) {
  const std::vector<float> a{1, 2, 3}, b{0.5f, -2, 4};
  std::vector<float> out(3, std::numeric_limits<float>::quiet_NaN());
  cpu::add_serial(a.data(), b.data(), out.data(), 3);
  EXPECT_EQ(out, (std::vector<float>{1.5f, 0, 7}));
}

// Large enough to split across threads (2^16 elements a part at the least), odd so that the last
// range is short: every element summed once, by one of the ranges.
TEST(CpuAdd, EveryCoreAddsEveryElementOnce) {
  const std::int64_t n = (std::int64_t(1) << 20) + 7;
  std::vector<float> a(n), b(n), out(n, std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = float(i % 1000);
    b[i] = 0.25f * float(i % 7);
  }
  cpu::add_threads(a.data(), b.data(), out.data(), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "at " << i;
}

}  // namespace
}  // namespace rooflab

namespace rooflab::bench {
namespace {

TEST(DType, ParsesLongAndShortNamesOfAllowedTypes) {
  const std::vector<DType> allowed{DType::f32, DType::i64};
  EXPECT_EQ(parse_dtype("float", allowed, DType::f32, "reduce"), DType::f32);
  EXPECT_EQ(parse_dtype("i64", allowed, DType::f32, "reduce"), DType::i64);
  EXPECT_EQ(parse_dtype("", allowed, DType::i64, "reduce"), DType::i64);
}

TEST(DType, RejectsTypesTheOpDoesNotHaveListingThoseItHas) {
  try {
    parse_dtype("double", {DType::f32, DType::u8}, DType::f32, "histogram");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("(float, uint8)"), std::string::npos) << error.what();
  }
}

TEST(DType, VisitGivesTheMatchingCppType) {
  EXPECT_EQ(visit_dtype(DType::f64, [](auto value) { return sizeof(value); }), sizeof(double));
  EXPECT_EQ(visit_dtype(DType::u8, [](auto value) { return sizeof(value); }), 1u);
  EXPECT_EQ(visit_dtype(DType::i32, [](auto value) { return dtype_of<decltype(value)>(); }),
            DType::i32);
}

}  // namespace
}  // namespace rooflab::bench

namespace rooflab {
namespace {

TEST(DeviceArithmetic, PeaksFollowEachArchitecturesCoresAndFp64Rate) {
  // FP32 lanes per FP64 lane: 32 on Turing, 64 on the consumer and workstation parts of Ampere,
  // Ada and Blackwell, 2 on the data-center parts (sm_80, 90, 100).
  const std::vector<std::tuple<int, int, int, int>> expected = {
      {7, 5, 64, 32}, {8, 6, 128, 64}, {8, 9, 128, 64}, {12, 0, 128, 64},
      {8, 0, 64, 2},  {9, 0, 128, 2},  {10, 0, 128, 2}};
  for (const auto& [major, minor, fp32, ratio] : expected) {
    EXPECT_EQ(fp32_cores_per_sm(major, minor), fp32) << major << "." << minor;
    EXPECT_EQ(fp32_cores_per_sm(major, minor), ratio * fp64_cores_per_sm(major, minor))
        << major << "." << minor;
  }
}

TEST(DeviceFeatures, ClustersAndProgrammaticLaunchNeedBothTheDeviceAndTheLoadedCode) {
  const DeviceFeatures hopper = plan_device_features(90, 90, 90, 0, 232448, 233472);
  EXPECT_TRUE(hopper.clusters());
  EXPECT_TRUE(hopper.programmatic_launch());
  EXPECT_EQ(hopper.shared_per_block, 232448);
  // A PTX-only build for sm_80, compiled by the driver for an H100: the Hopper code is not in it.
  const DeviceFeatures jit = plan_device_features(90, 80, 90, 0, 232448, 233472);
  EXPECT_EQ(jit.arch, 80);
  EXPECT_FALSE(jit.clusters());
  EXPECT_FALSE(jit.programmatic_launch());
  EXPECT_EQ(jit.shared_per_block, 232448)
      << "the kernels' architecture does not narrow the device's memory";
  const DeviceFeatures ampere = plan_device_features(86, 90, 86, 0, 101376, 102400);
  EXPECT_EQ(ampere.arch, 86);
  EXPECT_FALSE(ampere.clusters());
}

TEST(DeviceFeatures, TreatAsSmPlansForTheOlderArchitectureAndItsSharedMemory) {
  const DeviceFeatures as_sm86 = plan_device_features(90, 90, 90, 86, 232448, 233472);
  EXPECT_EQ(as_sm86.arch, 86);
  EXPECT_FALSE(as_sm86.clusters());
  EXPECT_EQ(as_sm86.shared_per_block, 99 * 1024);
  EXPECT_EQ(as_sm86.shared_per_sm, 100 * 1024);
  const DeviceFeatures as_sm75 = plan_device_features(90, 90, 90, 75, 232448, 233472);
  EXPECT_EQ(as_sm75.shared_per_block, 64 * 1024);
  // A newer architecture than the device's changes nothing.
  const DeviceFeatures as_newer = plan_device_features(80, 80, 80, 120, 166912, 167936);
  EXPECT_EQ(as_newer.arch, 80);
  EXPECT_EQ(as_newer.shared_per_block, 166912);
}

TEST(DeviceFeatures, TreatAsSmAcceptsOnlyACompatibleComputeCapability) {
  EXPECT_EQ(parse_treat_as_sm(nullptr), 0);
  EXPECT_EQ(parse_treat_as_sm(""), 0);
  EXPECT_EQ(parse_treat_as_sm("80"), 80);
  EXPECT_EQ(parse_treat_as_sm("120"), 120);
  for (const char* bad : {"8.0", "sm_80", "70", "-80", "80x", "1000"}) {
    try {
      parse_treat_as_sm(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("ROOFLAB_TREAT_AS_SM"), std::string::npos)
          << error.what();
    }
  }
}

TEST(DeviceFeatures, DescribesHowTheKernelsWereBuilt) {
  EXPECT_EQ(describe_kernel_build(plan_device_features(90, 90, 90, 0, 1, 1)),
            "sm_90 code from compute_90");
  EXPECT_EQ(describe_kernel_build(plan_device_features(90, 80, 90, 0, 1, 1)),
            "compute_80 PTX, compiled by the driver for sm_90");
  EXPECT_EQ(describe_kernel_build(plan_device_features(90, 90, 90, 80, 1, 1)),
            "sm_90 code from compute_90, planned as sm_80 (ROOFLAB_TREAT_AS_SM)");
}

TEST(WorkerPool, CallsEveryIndexOnceOnThePoolsThreadsAndTheCallers) {
  WorkerPool pool(3);
  ASSERT_EQ(pool.threads(), 3);
  for (int round = 0; round < 20; ++round) {  // the same pool again: every run wakes the threads
    const int count = round % 7 * 5;
    std::vector<std::atomic<int>> calls(static_cast<std::size_t>(count));
    std::mutex mutex;
    std::set<int> workers;
    pool.run(count, [&](int index, int worker) {
      calls[std::size_t(index)]++;
      std::lock_guard<std::mutex> lock(mutex);
      workers.insert(worker);
    });
    for (int i = 0; i < count; ++i) EXPECT_EQ(calls[std::size_t(i)], 1) << i;
    for (int worker : workers) EXPECT_TRUE(worker >= 0 && worker <= 3) << worker;
  }
}

TEST(WorkerPool, RunsCallsAtTheSameTime) {
  // Four calls that each wait for all four to have started end only if they overlap.
  WorkerPool pool(3);
  std::atomic<int> started{0};
  pool.run(4, [&](int, int) {
    ++started;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started < 4 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    EXPECT_EQ(started, 4);
  });
}

TEST(WorkerPool, WithoutThreadsTheCallerMakesEveryCall) {
  WorkerPool pool(0);
  std::vector<int> order;
  pool.run(5, [&](int index, int worker) {
    EXPECT_EQ(worker, 0);
    order.push_back(index);
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(WorkerPool, RethrowsTheFirstErrorAfterTheOtherCallsAndStaysUsable) {
  WorkerPool pool(2);
  std::atomic<int> running{0};
  const auto task = [&](int index, int) {
    ++running;
    if (index == 3) {
      --running;
      throw std::runtime_error("matrix 3");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --running;
  };
  try {
    pool.run(50, task);
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "matrix 3");
  }
  EXPECT_EQ(running, 0);  // every call under way had returned
  // Runs right after one that threw: a thread that wakes late finds none of its indices left.
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> calls{0};
    try {
      pool.run(9, [&](int index, int) {
        ++calls;
        if (round % 2 == 0 && index == 1) throw std::runtime_error("even round");
      });
      EXPECT_EQ(round % 2, 1);
      EXPECT_EQ(calls, 9);
    } catch (const std::runtime_error&) {
      EXPECT_EQ(round % 2, 0);
    }
  }
}

}  // namespace
}  // namespace rooflab
