#include "core/device_info.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

double DeviceInfo::theoretical_bandwidth() const {
  return 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8.0;
}

double DeviceInfo::fp32_peak() const {
  return double(sm_count) * fp32_cores_per_sm(cc_major, cc_minor) * 2.0 * sm_clock_khz * 1e3;
}

double DeviceInfo::fp64_peak() const {
  return double(sm_count) * fp64_cores_per_sm(cc_major, cc_minor) * 2.0 * sm_clock_khz * 1e3;
}

int fp32_cores_per_sm(int cc_major, int cc_minor) {
  switch (cc_major * 10 + cc_minor) {
    case 70:
    case 72:
    case 75:
    case 80: return 64;
    case 86:
    case 87:
    case 89:
    case 90:
    case 100:
    case 103:
    case 110:
    case 120:
    case 121: return 128;
    default: return 0;
  }
}

int fp64_cores_per_sm(int cc_major, int cc_minor) {
  switch (cc_major * 10 + cc_minor) {
    case 70:
    case 80: return 32;
    case 90:
    case 100:
    case 103: return 64;
    case 72:
    case 75:
    case 86:
    case 87:
    case 89:
    case 110:
    case 120:
    case 121: return 2;
    default: return 0;
  }
}

DeviceInfo query_device(int ordinal) {
  const char* op = "query_device";
  cudaDeviceProp props{};
  ROOFLAB_CUDA(op, "reading the properties of device " + std::to_string(ordinal),
               cudaGetDeviceProperties(&props, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = props.name;
  info.cc_major = props.major;
  info.cc_minor = props.minor;
  info.sm_count = props.multiProcessorCount;
  info.l2_bytes = props.l2CacheSize;
  info.memory_bus_bits = props.memoryBusWidth;
  info.global_memory_bytes = props.totalGlobalMem;
  info.shared_memory_per_block_optin = int(props.sharedMemPerBlockOptin);
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes still carry them.
  ROOFLAB_CUDA(op, "reading the SM clock of device " + std::to_string(ordinal),
               cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, ordinal));
  ROOFLAB_CUDA(op, "reading the memory clock of device " + std::to_string(ordinal),
               cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  ROOFLAB_CUDA(op, "reading the driver version", cudaDriverGetVersion(&info.driver_version));
  ROOFLAB_CUDA(op, "reading the runtime version", cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

}  // namespace rooflab
