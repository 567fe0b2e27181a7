#include "rooflab/cuda_check.hpp"

#include <string>

#include "rooflab/error.hpp"

namespace rooflab::detail {

void check_cuda(cudaError_t status, const char* op, const char* call) {
  if (status == cudaSuccess) return;
  // The runtime also records a failed call as the last error; clear it here, where it is reported,
  // so that the next launch check does not blame a kernel for it.
  cudaGetLastError();
  throw Error(op, "", std::string(call) + " failed",
              std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

void check_launch(const char* op, const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw Error(op, "", std::string("launch of ") + kernel + " failed",
              std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

}  // namespace rooflab::detail
