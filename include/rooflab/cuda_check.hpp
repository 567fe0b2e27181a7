#pragma once
// Checked CUDA calls. Every runtime call and every launch in rooflab goes through these, so a
// failure surfaces as rooflab::Error naming the operation and the call, never as a silent status.
#include <cuda_runtime_api.h>

namespace rooflab::detail {

// Throws Error(op, "", "<call> failed", "<cudaErrorName>: <description>") unless status is
// cudaSuccess.
void check_cuda(cudaError_t status, const char* op, const char* call);

// Call right after a kernel launch: a bad configuration or an earlier asynchronous fault shows up
// in cudaGetLastError, which this turns into Error naming the kernel.
void check_launch(const char* op, const char* kernel);

}  // namespace rooflab::detail

#define ROOFLAB_CUDA(op, call) ::rooflab::detail::check_cuda((call), (op), #call)
