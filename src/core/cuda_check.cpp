#include "rooflab/cuda_check.hpp"

#include <cstdio>
#include <string>

#include "rooflab/error.hpp"

namespace rooflab::detail {

void throw_cuda_error(cudaError_t status, const char* op, const std::string& doing) {
  // The runtime also records a failed call as the last error; clear it here, where it is reported,
  // so that the next launch check does not blame a kernel for it.
  cudaGetLastError();
  throw Error(op, "", doing + " failed: " + cudaGetErrorString(status), cudaGetErrorName(status));
}

void check_launch(const char* op, const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw Error(op, "", std::string("launching ") + kernel + " failed: " + cudaGetErrorString(status),
              cudaGetErrorName(status));
}

std::string describe_bytes(std::size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double size = double(bytes) / 1024;
  int unit = 0;
  while (size >= 1023.95 && unit < 5) {  // what %.1f would print as 1024.0 takes the next unit
    size /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", size, units[unit]);
  return text;
}

}  // namespace rooflab::detail
