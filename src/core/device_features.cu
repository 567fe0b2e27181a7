// The half of device_features that asks the GPU: the probe kernel's attributes and the device's.
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "core/device_features.hpp"
#include "core/device_query.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab {
namespace {

// Compiled like every kernel of the library, so its attributes tell which of the build's
// architectures the driver loaded for this device.
__global__ void feature_probe() {}

DeviceFeatures query_features(int device) {
  const char* op = "device_features";
  const std::string of_device = " of device " + std::to_string(device);
  int major = 0, minor = 0, shared_per_block = 0, shared_per_sm = 0;
  ROOFLAB_CUDA(op, "reading the compute capability" + of_device,
               cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ROOFLAB_CUDA(op, "reading the compute capability" + of_device,
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  ROOFLAB_CUDA(
      op, "reading the opt-in shared memory per block" + of_device,
      cudaDeviceGetAttribute(&shared_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  ROOFLAB_CUDA(
      op, "reading the shared memory per SM" + of_device,
      cudaDeviceGetAttribute(&shared_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  // ptxVersion is the virtual architecture the kernel was compiled from (its __CUDA_ARCH__);
  // binaryVersion the machine code's, the device's own when the driver compiled PTX.
  cudaFuncAttributes attributes{};
  ROOFLAB_CUDA(op, "reading which architecture the library's kernels were built for" + of_device,
               cudaFuncGetAttributes(&attributes, feature_probe));
  return plan_device_features(10 * major + minor, attributes.ptxVersion, attributes.binaryVersion,
                              parse_treat_as_sm(std::getenv("ROOFLAB_TREAT_AS_SM")),
                              shared_per_block, shared_per_sm);
}

}  // namespace

const DeviceFeatures& current_device_features() {
  static std::mutex mutex;
  static std::map<int, DeviceFeatures> known;
  int device = 0;
  ROOFLAB_CUDA("device_features", "finding the current device", cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found == known.end()) found = known.emplace(device, query_features(device)).first;
  return found->second;
}

int shared_per_block_for_rungs() {
  if (!cuda_device_unavailable_reason().empty()) return shared_per_block_of_arch(90);
  return current_device_features().shared_per_block;
}

}  // namespace rooflab
