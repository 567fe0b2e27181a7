// Behaviour that only shows in timings: what each timing method reads, that untimed set-up stays
// out of the timed region, and that the host-link ceiling is plausible. Named *Measured* so that
// compute-sanitizer runs leave them out (the tools slow kernels down by design). The lab's speed
// ratios themselves are the benchmark's to report, not a test's to assert.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/runner.hpp"
#include "core/event_timer.hpp"
#include "gpu_test.hpp"
#include "lab/timing.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {
namespace {

class TimingMeasured : public testing::GpuTest {};
class HarnessHooksMeasured : public testing::GpuTest {};
class CeilingsMeasured : public testing::GpuTest {};

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// What each timing rung's own clock reads for the same kernel, against the synchronized events.
TEST_F(TimingMeasured, OnlySynchronizedMethodsReadTheKernelsTime) {
  TimingWorkspace workspace(std::int64_t(1) << 25);
  std::vector<double> read;
  int not_ready = 0;
  for (const char* name : {"events-synchronized", "events-unsynchronized",
                           "host-clock-synchronized", "host-clock-unsynchronized"}) {
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
  EXPECT_GE(read[2], 0.9 * kernel)
      << "host clock with sync " << read[2] << " ms, events " << kernel << " ms";
  EXPECT_LT(read[3], 0.25 * kernel)
      << "host clock without sync " << read[3] << " ms, events " << kernel << " ms";
}

TEST_F(HarnessHooksMeasured, PrepareWorkStaysOutsideTheTimedRegion) {
  DeviceBuffer<unsigned char> ballast(std::size_t(1) << 30);
  const auto queue_ballast = [&ballast](cudaStream_t stream) {
    for (int k = 0; k < 8; ++k) ballast.fill_bytes(k, stream);  // 8 GiB written: milliseconds
  };
  Registry local;
  local.add_op(registry().op("add"));
  Variant slow_to_prepare = *registry().variants("add").back();
  slow_to_prepare.prepare = [&queue_ballast](Workspace&, cudaStream_t stream) {
    queue_ballast(stream);
  };
  local.add_variant(slow_to_prepare);
  const Environment environment = testing::environment_without_ceilings();
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
      << "add of 4097 floats " << rows[0].median_ms << " ms; the prepare's memsets " << ballast_ms
      << " ms";
}

TEST_F(CeilingsMeasured, HostToDeviceRateAndLaunchFloorArePlausible) {
  const MeasuredCeilings ceilings = measure_ceilings(query_device());
  // PCIe 4/5 x16 moves 20-60 GB/s, NVLink-C2C hosts a few hundred: this catches a miscount or an
  // unsynchronized timing, not a slow link.
  EXPECT_GT(ceilings.host_to_device_bandwidth, 1e9);
  EXPECT_LT(ceilings.host_to_device_bandwidth, 1e12);
  EXPECT_EQ(ceilings.host_buffer_bytes, std::size_t(64) << 20);
  // An empty kernel's launch: a microsecond or a few on current GPUs. Below 100 ns the events
  // timed nothing; above 100 us they timed something besides the launch.
  EXPECT_GT(ceilings.launch_seconds, 1e-7);
  EXPECT_LT(ceilings.launch_seconds, 1e-4);
}

}  // namespace
}  // namespace rooflab::bench
