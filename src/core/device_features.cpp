#include "core/device_features.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "rooflab/error.hpp"

namespace rooflab {

namespace {

struct SharedMemory {
  int per_block = 0;  // what one block may opt in to
  int per_sm = 0;
};

// From the CUDA C++ Programming Guide's table of technical specifications per compute capability.
SharedMemory shared_memory_of_arch(int arch) {
  constexpr int kb = 1024;
  switch (arch) {
    case 75: return {64 * kb, 64 * kb};
    case 80:
    case 87: return {163 * kb, 164 * kb};
    case 86:
    case 89:
    case 120:
    case 121: return {99 * kb, 100 * kb};
    case 90:
    case 100:
    case 103:
    case 110: return {227 * kb, 228 * kb};
    default: return {};
  }
}

}  // namespace

int shared_per_block_of_arch(int arch) { return shared_memory_of_arch(arch).per_block; }
int shared_per_sm_of_arch(int arch) { return shared_memory_of_arch(arch).per_sm; }

DeviceFeatures plan_device_features(int device_arch, int kernel_arch, int binary_arch, int treat_as,
                                    int shared_per_block, int shared_per_sm) {
  DeviceFeatures features;
  features.device_arch = device_arch;
  features.kernel_arch = kernel_arch;
  features.binary_arch = binary_arch;
  features.treat_as = treat_as;
  features.arch = std::min(device_arch, kernel_arch);
  if (treat_as > 0) features.arch = std::min(features.arch, treat_as);
  features.shared_per_block = shared_per_block;
  features.shared_per_sm = shared_per_sm;
  // Only a planned architecture older than the device's narrows its shared memory: the kernels'
  // own architecture does not (a PTX-only build for sm_80 may use all of an H100's).
  if (treat_as > 0 && treat_as < device_arch) {
    if (const int cap = shared_per_block_of_arch(treat_as); cap > 0)
      features.shared_per_block = std::min(features.shared_per_block, cap);
    if (const int cap = shared_per_sm_of_arch(treat_as); cap > 0)
      features.shared_per_sm = std::min(features.shared_per_sm, cap);
  }
  return features;
}

int parse_treat_as_sm(const char* value) {
  if (value == nullptr || *value == '\0') return 0;
  const std::string text = value;
  const bool digits = text.size() <= 3 && text.find_first_not_of("0123456789") == std::string::npos;
  const int arch = digits ? std::atoi(value) : 0;
  if (arch < 75)
    throw Error(
        "device_features", "ROOFLAB_TREAT_AS_SM",
        "must be a compute capability from 7.5 on written as 10 x major + minor (75, 80, 86, "
        "89, 90, ...), got '" +
            text + "'");
  return arch;
}

std::string describe_kernel_build(const DeviceFeatures& features) {
  const std::string compiled = std::to_string(features.kernel_arch);
  const std::string machine = std::to_string(features.binary_arch);
  std::string text = features.kernel_arch == features.binary_arch
                         ? "sm_" + machine + " code from compute_" + compiled
                         : "compute_" + compiled + " PTX, compiled by the driver for sm_" + machine;
  if (features.treat_as > 0)
    text += ", planned as sm_" + std::to_string(features.arch) + " (ROOFLAB_TREAT_AS_SM)";
  return text;
}

}  // namespace rooflab
