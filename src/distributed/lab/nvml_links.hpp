#pragma once
// The NVLink theory of a GPU from NVML, loaded at run time (dlopen of libnvidia-ml.so.1: the
// program neither links against NVML nor needs it).
#include <string>

namespace rooflab::dist::lab {

struct LinkTheory {
  bool known = false;
  int active_links = 0;
  double per_link_bytes_per_second = 0;  // one direction
  double bytes_per_second = 0;           // one direction, all active links
  std::string why;                       // where the numbers come from, or why unknown
};

// Active NVLinks (nvmlDeviceGetNvLinkState) times the per-link rate of the GPU's NVLink
// generation, from its compute capability (nvlink_per_link_rate, distributed/shard_math.hpp).
// Unknown without NVML, without active links or for other GPUs.
LinkTheory nvlink_theory(int cuda_device);

}  // namespace rooflab::dist::lab
