#include "distributed/lab/nvml_links.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

#include "distributed/shard_math.hpp"

namespace rooflab::dist::lab {
namespace {

// The few NVML entry points used, declared here (nvml.h is not part of every toolkit install).
using NvmlDevice = void*;
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlByPciBusId = int (*)(const char*, NvmlDevice*);
using NvmlLinkState = int (*)(NvmlDevice, unsigned, int*);
constexpr unsigned max_links = 18;  // NVML_NVLINK_MAX_LINKS

}  // namespace

LinkTheory nvlink_theory(int cuda_device) {
  LinkTheory theory;
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    theory.why = "unknown: NVML (libnvidia-ml.so.1) not found";
    return theory;
  }
  const auto init = reinterpret_cast<NvmlInit>(dlsym(library, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(library, "nvmlShutdown"));
  const auto by_bus =
      reinterpret_cast<NvmlByPciBusId>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
  const auto state = reinterpret_cast<NvmlLinkState>(dlsym(library, "nvmlDeviceGetNvLinkState"));
  char bus_id[32] = {};
  NvmlDevice device = nullptr;
  if (!init || !shutdown || !by_bus || !state || init() != 0) {
    theory.why = "unknown: NVML did not start";
  } else {
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), cuda_device) != cudaSuccess ||
        by_bus(bus_id, &device) != 0) {
      theory.why = "unknown: NVML does not know GPU " + std::to_string(cuda_device);
    } else {
      for (unsigned link = 0; link < max_links; ++link) {
        int active = 0;
        if (state(device, link, &active) == 0 && active == 1) ++theory.active_links;
      }
      cudaDeviceProp properties{};
      cudaGetDeviceProperties(&properties, cuda_device);
      theory.per_link_bytes_per_second = nvlink_per_link_rate(properties.major, properties.minor);
      if (theory.active_links == 0) {
        theory.why = "unknown: no active NVLink (PCIe only?)";
      } else if (theory.per_link_bytes_per_second == 0) {
        theory.why = "unknown: NVLink rate of compute capability " +
                     std::to_string(properties.major) + "." + std::to_string(properties.minor);
      } else {
        theory.known = true;
        theory.bytes_per_second = theory.active_links * theory.per_link_bytes_per_second;
        char rate[32];  // GB/s, as many digits as it has (14.0625 on GA102)
        std::snprintf(rate, sizeof rate, "%g", theory.per_link_bytes_per_second / 1e9);
        theory.why = std::to_string(theory.active_links) + " active NVLinks (NVML) x " + rate +
                     " GB/s a direction";
      }
    }
    shutdown();
  }
  dlclose(library);
  return theory;
}

}  // namespace rooflab::dist::lab
