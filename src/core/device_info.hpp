#pragma once
// What the device is and what it can do at most: the numbers every table is measured against.
// The lab's (src/core/device_info.cpp, ceilings.cu); the queries the library itself makes are in
// device_query.hpp, included here.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device_query.hpp"

namespace rooflab {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  int sm_clock_khz = 0;      // peak SM clock
  int memory_clock_khz = 0;  // peak memory clock
  int memory_bus_bits = 0;
  std::size_t global_memory_bytes = 0;
  int shared_memory_per_block_optin = 0;
  int driver_version = 0;  // e.g. 13000 for 13.0
  int runtime_version = 0;

  // The lecture's arithmetic, clock x transfers per clock x bus width / 8, with the clock the
  // driver reports, for which 2 transfers per clock (double data rate) is right.
  double theoretical_bandwidth() const;  // bytes/s
  // SMs x cores per SM x 2 (a fused multiply-add is two flops) x clock.
  double fp32_peak() const;  // flop/s
  double fp64_peak() const;
};

// Cores per SM by compute capability (from NVIDIA's architecture whitepapers); 0 when unknown.
int fp32_cores_per_sm(int cc_major, int cc_minor);
int fp64_cores_per_sm(int cc_major, int cc_minor);

DeviceInfo query_device(int ordinal = 0);

// Bandwidth ceilings measured on the device (bytes/s): a device-to-device cudaMemcpy counting the
// bytes read plus the bytes written, and a kernel that only streams reads. Each is the median of
// timed runs over buffers several times larger than L2. Host-device transfers are bounded by the
// host link instead: host_to_device_bandwidth is a cudaMemcpy from pinned (cudaHostAlloc) memory.
// launch_seconds is the floor under every timed kernel: an empty kernel of one warp, timed with
// events the way the benchmark times a rung (queued behind work that keeps the GPU busy, as a rung
// is behind the L2 flush); 0 when not measured. A bigger grid adds the dispatch of its blocks,
// which a real kernel overlaps with its work, so one warp keeps the floor a lower bound.
struct MeasuredCeilings {
  double copy_bandwidth = 0;
  double read_bandwidth = 0;
  std::size_t buffer_bytes = 0;
  double host_to_device_bandwidth = 0;
  std::size_t host_buffer_bytes = 0;
  double launch_seconds = 0;
};
MeasuredCeilings measure_ceilings(const DeviceInfo& device);

}  // namespace rooflab
