#pragma once
// Checked CUDA calls. Every runtime call and every launch in rooflab goes through these, so a
// failure surfaces as rooflab::Error saying, in words, what the operation was doing when CUDA
// failed, and CUDA's error: "rooflab::DeviceBuffer: allocating 1.5 GiB of device memory failed:
// out of memory (cudaErrorMemoryAllocation)".
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace rooflab::detail {

// Throws Error(op, "", "<doing> failed: <CUDA's description>", "<cudaErrorName>").
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* op, const std::string& doing);

// Call right after a kernel launch: a bad configuration or an earlier asynchronous fault shows up
// in cudaGetLastError, which this turns into Error naming the kernel.
void check_launch(const char* op, const char* kernel);

// A size for a message: "12 bytes", "3.0 KiB", "1.5 GiB".
std::string describe_bytes(std::size_t bytes);

}  // namespace rooflab::detail

// ROOFLAB_CUDA(op, doing, call) runs `call` and, if it fails, throws rooflab::Error from `op`
// saying that `doing` failed. `doing` is anything a std::string can be made from ("recording the
// stop event", "allocating " + detail::describe_bytes(bytes) + " of device memory"), and is
// evaluated only on failure, so that a description costs nothing on the path that succeeds.
#define ROOFLAB_CUDA(op, doing, call)                                             \
  do {                                                                            \
    if (const cudaError_t rooflab_status = (call); rooflab_status != cudaSuccess) \
      ::rooflab::detail::throw_cuda_error(rooflab_status, (op), (doing));         \
  } while (false)
