// What the limiting-factor lab must show on a real GPU (issue: "What it must show"), measured by
// the harness in one run. Named *Measured* so that compute-sanitizer runs leave them out: the
// tools slow kernels down by design and would distort the ratios.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/runner.hpp"
#include "core/event_timer.hpp"
#include "gpu_test.hpp"
#include "lab/timing.hpp"
#include "lab/transfer.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {
namespace {

class TransferMeasured : public testing::GpuTest {};
class CoalescingMeasured : public testing::GpuTest {};
class DivergenceMeasured : public testing::GpuTest {};
class AtomicsMeasured : public testing::GpuTest {};
class OccupancyMeasured : public testing::GpuTest {};
class TimingMeasured : public testing::GpuTest {};
class HarnessHooksMeasured : public testing::GpuTest {};
class CeilingsMeasured : public testing::GpuTest {};

Environment environment_without_ceilings() {
  Environment environment;
  environment.device = query_device();
  environment.commit = "test";
  return environment;
}

// Median times (ms) of the named rungs of `op`, in the order asked; each must validate.
std::vector<double> median_ms(const std::string& op, std::int64_t n, const std::vector<std::string>& names,
                              std::int64_t m = 0) {
  const Environment environment = environment_without_ceilings();
  RunOptions options;
  options.reps = 10;
  options.only = names;
  Runner runner(registry(), environment, options);
  Problem problem;
  problem.n = n;
  problem.m = m;
  const auto rows = runner.run(op, problem);
  std::vector<double> medians;
  for (const std::string& name : names) {
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == name; });
    EXPECT_NE(row, rows.end()) << op << " " << name;
    if (row == rows.end()) return std::vector<double>(names.size(), 0);
    EXPECT_EQ(row->status, Status::ok) << op << " " << name << ": " << row->note;
    medians.push_back(row->median_ms);
  }
  return medians;
}

TEST_F(TransferMeasured, PinnedHostToDeviceIsAtLeast1p5TimesPageableAt256MiB) {
  const auto ms = median_ms("transfer", std::int64_t(256) << 20, {"pageable-h2d", "pinned-h2d"});
  EXPECT_GE(ms[0], 1.5 * ms[1]) << "pageable " << ms[0] << " ms, pinned " << ms[1] << " ms";
}

TEST_F(TransferMeasured, ManagedFirstTouchIsSlowerThanPrefetching) {
  if (!device_migrates_managed_memory()) GTEST_SKIP() << "the device does not migrate managed memory";
  const auto ms = median_ms("transfer", std::int64_t(256) << 20, {"managed-first-touch", "managed-prefetch"});
  EXPECT_GE(ms[0], 1.25 * ms[1]) << "first touch " << ms[0] << " ms, prefetched " << ms[1] << " ms";
}

TEST_F(CoalescingMeasured, ContiguousChunkOf8IsAtLeastTwiceAsSlowAsBlockStride) {
  const auto ms = median_ms("coalescing", std::int64_t(1) << 27, {"block-stride-8", "contiguous-8"});
  EXPECT_GE(ms[1], 2.0 * ms[0]) << "block-stride " << ms[0] << " ms, contiguous " << ms[1] << " ms";
}

TEST_F(DivergenceMeasured, BranchingPerWarpBeatsBranchingPerLane) {
  const auto half = median_ms("divergence", std::int64_t(1) << 22, {"lane-branch", "warp-branch"}, 16);
  EXPECT_GE(half[0], 1.5 * half[1]) << "16 heavy per warp: lane " << half[0] << " ms, warp " << half[1] << " ms";
  const auto one = median_ms("divergence", std::int64_t(1) << 22, {"lane-branch", "warp-branch"}, 1);
  EXPECT_GE(one[0], 4.0 * one[1]) << "1 heavy per warp: lane " << one[0] << " ms, warp " << one[1] << " ms";
}

TEST_F(AtomicsMeasured, BlockPrivatizedIsAtLeast10TimesFasterThanGlobalAtomics) {
  const auto ms = median_ms("atomics", std::int64_t(1) << 24, {"global-atomic", "block-privatized"});
  EXPECT_GE(ms[0], 10.0 * ms[1]) << "global " << ms[0] << " ms, block-privatized " << ms[1] << " ms";
}

TEST_F(OccupancyMeasured, SpillingMostOfTheTileIsSlowerThanTheCompilersChoice) {
  const auto ms = median_ms("occupancy", std::int64_t(1) << 24, {"block-256", "block-256-regs-24"});
  EXPECT_GT(ms[1], 1.1 * ms[0]) << "block-256 " << ms[0] << " ms, regs-24 " << ms[1] << " ms";
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// What each timing rung's own clock reads for the same kernel, against the synchronized events.
TEST_F(TimingMeasured, OnlySynchronizedMethodsReadTheKernelsTime) {
  TimingWorkspace workspace(std::int64_t(1) << 25);
  std::vector<double> read;
  int not_ready = 0;
  for (const char* name : {"events-synchronized", "events-unsynchronized", "host-clock-synchronized",
                           "host-clock-unsynchronized"}) {
    const Variant* variant = nullptr;
    for (const Variant* candidate : registry().variants("timing"))
      if (candidate->name == name) variant = candidate;
    ASSERT_NE(variant, nullptr) << name;
    workspace.refill(1);
    for (int run = 0; run < 11; ++run) {
      variant->run(workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;
    }
    read.push_back(median_of(workspace.self_ms));
    if (std::string(name) == "events-unsynchronized") not_ready = workspace.not_ready;
  }
  const double kernel = read[0];
  EXPECT_GT(kernel, 0);
  EXPECT_EQ(read[1], 0) << "an unsynchronized event read should find nothing";
  EXPECT_GE(not_ready, 6) << "of 11 reads, cudaErrorNotReady only " << not_ready << " times";
  EXPECT_GE(read[2], 0.9 * kernel) << "host clock with sync " << read[2] << " ms, events " << kernel << " ms";
  EXPECT_LT(read[3], 0.25 * kernel) << "host clock without sync " << read[3] << " ms, events " << kernel << " ms";
}

TEST_F(HarnessHooksMeasured, PrepareWorkStaysOutsideTheTimedRegion) {
  DeviceBuffer<unsigned char> ballast(std::size_t(1) << 30);
  const auto queue_ballast = [&ballast](cudaStream_t stream) {
    for (int k = 0; k < 8; ++k) ballast.fill_bytes(k, stream);  // 8 GiB written: milliseconds
  };
  Registry local;
  local.add_op(registry().op("add"));
  Variant slow_to_prepare = *registry().variants("add").back();
  slow_to_prepare.prepare = [&queue_ballast](Workspace&, cudaStream_t stream) { queue_ballast(stream); };
  local.add_variant(slow_to_prepare);
  const Environment environment = environment_without_ceilings();
  RunOptions options;
  options.reps = 5;
  Runner runner(local, environment, options);
  Problem problem;
  problem.n = 4097;
  const auto rows = runner.run("add", problem);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].status, Status::ok) << rows[0].note;

  EventTimer timer;
  timer.start(nullptr);
  queue_ballast(nullptr);
  timer.stop(nullptr);
  const float ballast_ms = timer.elapsed_ms();
  EXPECT_LT(rows[0].median_ms, 0.25 * ballast_ms)
      << "add of 4097 floats " << rows[0].median_ms << " ms; the prepare's memsets " << ballast_ms << " ms";
}

TEST_F(CeilingsMeasured, PinnedHostToDeviceRateIsPlausible) {
  const MeasuredCeilings ceilings = measure_ceilings(query_device());
  // PCIe 4/5 x16 moves 20-60 GB/s, NVLink-C2C hosts a few hundred: this catches a miscount or an
  // unsynchronized timing, not a slow link.
  EXPECT_GT(ceilings.host_to_device_bandwidth, 1e9);
  EXPECT_LT(ceilings.host_to_device_bandwidth, 1e12);
  EXPECT_EQ(ceilings.host_buffer_bytes, std::size_t(64) << 20);
}

}  // namespace
}  // namespace rooflab::bench
