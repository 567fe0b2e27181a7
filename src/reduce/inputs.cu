// The device side of the reduction ops' floating-point inputs (reduce_workspace.hpp).
#include <algorithm>

#include "reduce/reduce_workspace.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

template <class T>
__global__ void fill_eighths_kernel(T* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = reduce_input<T>(seed, i);
}

template <class T>
void fill(T* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  constexpr int threads = 256;
  // Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
  const std::int64_t blocks =
      std::min<std::int64_t>(65536, std::max<std::int64_t>(1, (n + threads - 1) / threads));
  fill_eighths_kernel<<<unsigned(blocks), threads, 0, stream>>>(device, n, seed);
  detail::check_launch("fill_eighths", "fill_eighths_kernel");
}

}  // namespace

void fill_eighths(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  fill(device, n, seed, stream);
}

void fill_eighths(double* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  fill(device, n, seed, stream);
}

}  // namespace rooflab::bench
