// Behaviour that only shows in timings: what each timing method reads, that untimed set-up stays
// out of the timed region, that the host-link ceiling is plausible, that the memory-latency chains
// land in the levels their rungs name, and that no shared-memory rung beats its ceiling model (a
// rung that did would not be reading what it claims). Named *Measured* so that compute-sanitizer
// runs leave them out (the tools slow kernels down by design). The lab's speed ratios themselves
// are the benchmark's to report, not a test's to assert.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/runner.hpp"
#include "core/device_query.hpp"
#include "core/event_timer.hpp"
#include "gpu_test.hpp"
#include "lab/memcpy_sync.hpp"
#include "lab/memory_latency.hpp"
#include "lab/shared_memory.hpp"
#include "lab/timing.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {
namespace {

class TimingMeasured : public testing::GpuTest {};
class HarnessHooksMeasured : public testing::GpuTest {};
class CeilingsMeasured : public testing::GpuTest {};
class MemcpySyncMeasured : public testing::GpuTest {};
class MemoryLatencyMeasured : public testing::GpuTest {};
class SharedMemoryMeasured : public testing::GpuTest {};

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

const Variant& rung(const std::string& op, const std::string& name) {
  for (const Variant* variant : registry().variants(op))
    if (variant->name == name) return *variant;
  throw std::runtime_error("no rung " + op + "/" + name);
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
  Variant slow_to_prepare = testing::last_device_rung("add");
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

// The lecture's pattern against its pitfall, on a kernel long enough to be caught running.
TEST_F(MemcpySyncMeasured, OnlyTheReadAfterTheBlockingCopyFindsTheKernelsTime) {
  MemcpySyncWorkspace workspace(std::int64_t(1) << 25);
  std::map<std::string, double> read;
  std::map<std::string, int> not_ready;
  for (const char* name : {"read-after-memcpy", "read-before-memcpy"}) {
    workspace.refill(1);
    for (int run = 0; run < 11; ++run) rung("memcpy-sync", name).run(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;
    read[name] = median_of(workspace.self_ms);
    not_ready[name] = workspace.not_ready;
  }
  EXPECT_GT(read["read-after-memcpy"], 0);
  EXPECT_EQ(not_ready["read-after-memcpy"], 0);
  EXPECT_EQ(read["read-before-memcpy"], 0) << "a read before the copy should find nothing";
  EXPECT_GE(not_ready["read-before-memcpy"], 6)
      << "of 11 reads, cudaErrorNotReady only " << not_ready["read-before-memcpy"] << " times";
}

// Each chain sits where its rung says: a chain meant for L2 that stayed in L1, or one meant for
// device memory that stayed in L2, would show as no step up.
TEST_F(MemoryLatencyMeasured, EachWorkingSetLandsInTheLevelItsRungNames) {
  MemoryLatencyWorkspace workspace(std::int64_t(1) << 14);
  std::map<std::string, double> ns_per_load;
  for (const Variant* variant : registry().variants("memory-latency")) {
    if (variant->where != Where::gpu) continue;
    workspace.refill(1);
    std::vector<double> runs;
    for (int run = 0; run < 3; ++run) {
      variant->prepare(workspace, nullptr);
      variant->run(workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
      runs.push_back(double(workspace.clocks.download()[1]) / double(workspace.steps));
    }
    ns_per_load[variant->name] = median_of(runs);
  }
  const auto report = [&] {
    std::string text;
    for (const auto& [name, ns] : ns_per_load) text += " " + name + " " + std::to_string(ns);
    return "ns per load:" + text;
  };
  EXPECT_GT(ns_per_load["l1"], 1) << report();
  EXPECT_GT(ns_per_load["l2"], 1.5 * ns_per_load["l1"]) << report();
  EXPECT_GT(ns_per_load["l2"], 1.5 * ns_per_load["shared"]) << report();
  EXPECT_GT(ns_per_load["device"], 1.1 * ns_per_load["l2"]) << report();
  EXPECT_LT(ns_per_load["device-within-line"], 0.5 * ns_per_load["device"]) << report();
  EXPECT_LT(ns_per_load["device"], 1e4) << report();  // 10 us a load: something else was timed
}

// The harness's time includes the launch and every block's copy of the table, so a rung can only
// fall short of the model; one above it would be reading less than it claims.
TEST_F(SharedMemoryMeasured, NoRungReadsFasterThanTheCeilingModel) {
  int device = 0, clock_khz = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device), cudaSuccess);
  const double ceiling = shared_lab::shared_memory_ceiling(current_sm_count(), clock_khz);
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 5;
  Runner runner(registry(), environment, options);
  Problem problem;
  problem.n = std::int64_t(1) << 20;
  for (const Row& row : runner.run("shared-memory", problem)) {
    ASSERT_EQ(row.status, Status::ok) << row.name << ": " << row.note;
    if (row.cpu) continue;
    EXPECT_LE(row.gbps * 1e9, 1.05 * ceiling)
        << row.name << ": " << row.gbps << " GB/s against the model's " << ceiling * 1e-9;
  }
}

}  // namespace
}  // namespace rooflab::bench
