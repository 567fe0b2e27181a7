// The device queries the library makes: whether a device can be used, and the SM count and L2
// size, cached per device.
#include "core/device_query.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
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

namespace {

constexpr int max_cached_devices = 64;
using AttributeCache = std::atomic<int>[max_cached_devices];

// `attribute` of the current device, asked of CUDA once per device and process (where the device
// number is below max_cached_devices; above, every time). Threads that ask at once may each read
// it; they store the same value.
int current_device_attribute(cudaDeviceAttr attribute, AttributeCache& cached, const char* function,
                             const char* what) {
  int device = 0;
  ROOFLAB_CUDA(function, "finding the current device", cudaGetDevice(&device));
  const bool cacheable = device < max_cached_devices;
  if (cacheable) {
    const int known = cached[device].load(std::memory_order_relaxed);
    if (known != 0) return known;
  }
  int value = 0;
  ROOFLAB_CUDA(function,
               std::string("reading the ") + what + " of device " + std::to_string(device),
               cudaDeviceGetAttribute(&value, attribute, device));
  if (cacheable) cached[device].store(value, std::memory_order_relaxed);
  return value;
}

}  // namespace

int current_sm_count() {
  static AttributeCache cached;
  return current_device_attribute(cudaDevAttrMultiProcessorCount, cached, "current_sm_count",
                                  "SM count");
}

std::int64_t current_l2_bytes() {
  static AttributeCache cached;
  return current_device_attribute(cudaDevAttrL2CacheSize, cached, "current_l2_bytes", "L2 size");
}

}  // namespace rooflab
