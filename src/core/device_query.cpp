// The device queries the library makes: whether a device can be used, and the SM count and L2
// size, cached per device.
#include "core/device_query.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

std::string cuda_device_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return {};
  cudaGetLastError();  // clear it: the absence of a device is an answer here, not a fault
  // Without a driver the runtime reports cudaErrorInsufficientDriver ("CUDA driver version is
  // insufficient"), as it does for a driver that is too old; the driver version tells them apart:
  // cudaDriverGetVersion gives 0 where no driver is installed.
  int driver_version = 0;
  if (cudaDriverGetVersion(&driver_version) != cudaSuccess) driver_version = 0;
  if (driver_version == 0) return "no CUDA device (no NVIDIA driver)";
  if (status == cudaErrorInsufficientDriver) {
    int runtime_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    return "no CUDA device (the NVIDIA driver supports CUDA " +
           cuda_version_string(driver_version) + ", older than this build's CUDA " +
           cuda_version_string(runtime_version) + ")";
  }
  if (status == cudaSuccess || status == cudaErrorNoDevice)
    return "no CUDA device (the NVIDIA driver finds none)";
  return std::string("no CUDA device (") + cudaGetErrorString(status) + ", " +
         cudaGetErrorName(status) + ")";
}

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

int current_sm_count() {
  constexpr int max_devices = 64;
  static int cached[max_devices] = {};
  int device = 0;
  ROOFLAB_CUDA("current_sm_count", "finding the current device", cudaGetDevice(&device));
  if (device >= max_devices) device = max_devices - 1;
  if (cached[device] == 0)
    ROOFLAB_CUDA("current_sm_count", "reading the SM count of device " + std::to_string(device),
                 cudaDeviceGetAttribute(&cached[device], cudaDevAttrMultiProcessorCount, device));
  return cached[device];
}

std::int64_t current_l2_bytes() {
  constexpr int max_devices = 64;
  static int cached[max_devices] = {};
  int device = 0;
  ROOFLAB_CUDA("current_l2_bytes", "finding the current device", cudaGetDevice(&device));
  if (device >= max_devices) device = max_devices - 1;
  if (cached[device] == 0)
    ROOFLAB_CUDA("current_l2_bytes", "reading the L2 size of device " + std::to_string(device),
                 cudaDeviceGetAttribute(&cached[device], cudaDevAttrL2CacheSize, device));
  return cached[device];
}

}  // namespace rooflab
