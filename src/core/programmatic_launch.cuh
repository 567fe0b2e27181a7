#pragma once
// Programmatic dependent launch (Hopper on): a kernel launched by launch_after_previous may start
// while the stream's kernel before it still runs, and waits in wait_for_previous_kernel() for that
// kernel's results, so consecutive launches do not each pay the whole launch latency. Outside
// such a launch, and in code compiled for GPUs before sm_90, the wait returns at once.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device_features.hpp"
#include "rooflab/cuda_check.hpp"

// In device code compiled for sm_90 on, and in the host pass, which sees every kernel. The host
// asks for the launch only where DeviceFeatures says the loaded code has it.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define ROOFLAB_HAS_PROGRAMMATIC_LAUNCH 1
#else
#define ROOFLAB_HAS_PROGRAMMATIC_LAUNCH 0
#endif

namespace rooflab::detail {

// Every block waits here before it reads what the kernel before it writes, or writes what that
// kernel reads, so a kernel also completes only after the one before it did.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if ROOFLAB_HAS_PROGRAMMATIC_LAUNCH
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The next kernel may launch once every block of this one has called this (or exited). Called
// late in a long kernel, before a block's last stores: called first thing, the next kernel's
// waiting blocks took the SMs early and the SVD of 2048 x 2048 doubles went from 127 to 149 ms on
// the H200 (no early start: 133). A small kernel calls it first thing.
__device__ __forceinline__ void let_next_kernel_start() {
#if ROOFLAB_HAS_PROGRAMMATIC_LAUNCH
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// Launches a kernel that calls wait_for_previous_kernel() with programmatic dependent launch where
// the device and the loaded code have it: it may start before the stream's previous kernel
// completes (elsewhere it starts after, as any launch). Blocks go in clusters of `cluster`, which
// only a device with clusters is asked for. `op` and `name` go into the error of a failed launch.
template <class... Parameters, class... Arguments>
void launch_after_previous(const char* op, void (*kernel)(Parameters...), std::int64_t blocks,
                           int threads, std::size_t shared_bytes, int cluster, cudaStream_t stream,
                           const char* name, Arguments... arguments) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (current_device_features().programmatic_launch()) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count++].val.clusterDim = {unsigned(cluster), 1, 1};
  }
  config.attrs = attributes;
  config.numAttrs = count;
  ROOFLAB_CUDA(op, std::string("launching ") + name,
               cudaLaunchKernelEx(&config, kernel, arguments...));
  check_launch(op, name);
}

}  // namespace rooflab::detail
