#pragma once
// What the dispatch may use on the current device. Two things decide it: what the device supports
// (its compute capability and shared memory) and what the loaded kernels were compiled for. A
// build that holds only PTX for an older architecture runs on a newer GPU through the driver's
// JIT, with the old __CUDA_ARCH__: its kernels have the Hopper-only code compiled out, so the host
// must not launch them as clusters or with programmatic dependent launch, whatever the GPU.
//
// ROOFLAB_TREAT_AS_SM=<compute capability x 10> (75, 80, 86, 89, ...) makes the dispatch plan for
// that older architecture on a newer GPU: no clusters and no programmatic launch below 90, and the
// shared memory of that architecture where it has less. The tests run the fallback paths with it.
#include <string>

namespace rooflab {

struct DeviceFeatures {
  int device_arch = 0;  // the device's compute capability, 10 x major + minor
  int kernel_arch =
      0;  // the virtual architecture the loaded kernels came from (__CUDA_ARCH__ / 10)
  int binary_arch = 0;  // the architecture of the machine code that runs (the device's after a JIT)
  int treat_as = 0;     // ROOFLAB_TREAT_AS_SM, 0 where unset
  int arch = 0;  // what the dispatch plans for: the least of device_arch, kernel_arch and treat_as
  int shared_per_block = 0;  // bytes of shared memory one block may opt in to
  int shared_per_sm = 0;     // bytes of shared memory per multiprocessor

  // Thread-block clusters with distributed shared memory, and programmatic dependent launch
  // (griddepcontrol): compute capability 9.0 on.
  bool clusters() const { return arch >= 90; }
  bool programmatic_launch() const { return arch >= 90; }
};

// The features for a device of compute capability `device_arch` with the given shared memory,
// running kernels compiled from `kernel_arch`, under ROOFLAB_TREAT_AS_SM = `treat_as` (0: unset).
// Under treat_as, below the device's architecture, the shared memory is capped at that of the
// architecture planned for, where it is known; the kernels' own architecture does not cap it.
DeviceFeatures plan_device_features(int device_arch, int kernel_arch, int binary_arch, int treat_as,
                                    int shared_per_block, int shared_per_sm);

// The shared memory per block (opt-in) and per SM of an architecture, from NVIDIA's tables; 0 for
// an architecture not listed.
int shared_per_block_of_arch(int arch);
int shared_per_sm_of_arch(int arch);

// ROOFLAB_TREAT_AS_SM's value: 0 when unset or empty; an Error naming the variable for anything
// but a compute capability from 7.5 on, written as 75, 80, 86, ...
int parse_treat_as_sm(const char* value);

// The current device's features, found once per device (the probe kernel's attributes, the
// device's attributes and the environment) and cached.
const DeviceFeatures& current_device_features();

// The shared memory a block may opt in to, for a ladder's limits: the current device's, or the
// most any supported GPU has (227 KB) where there is no device, so that `rooflab list` needs none.
int shared_per_block_for_rungs();

// "sm_90 code from compute_90" or "compute_80 PTX, compiled by the driver for sm_90": how the
// loaded kernels were built, for `rooflab info` and results files.
std::string describe_kernel_build(const DeviceFeatures& features);

}  // namespace rooflab
