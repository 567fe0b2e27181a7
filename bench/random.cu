#include <cstdint>

#include "bench/random.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr int fill_threads = 256;

int fill_blocks(std::int64_t n) {
  // Enough blocks for any GPU of today to be full; the grid-stride loop covers the rest.
  const std::int64_t needed = (n + fill_threads - 1) / fill_threads;
  return int(needed < 65536 ? (needed > 0 ? needed : 1) : 65536);
}

template <class T>
__global__ void fill_floating(T* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if constexpr (sizeof(T) == 4)
      out[i] = random_float(seed, i);
    else
      out[i] = random_double(seed, i);
  }
}

template <class T>
__global__ void fill_integer(T* out, std::int64_t n, std::uint64_t seed, std::int64_t lo,
                             std::int64_t hi) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = T(random_integer(seed, i, lo, hi));
}

}  // namespace

void fill_random(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  fill_floating<<<fill_blocks(n), fill_threads, 0, stream>>>(device, n, seed);
  detail::check_launch("fill_random", "fill_floating<float>");
}

void fill_random(double* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  fill_floating<<<fill_blocks(n), fill_threads, 0, stream>>>(device, n, seed);
  detail::check_launch("fill_random", "fill_floating<double>");
}

template <class T>
void fill_random_integers(T* device, std::int64_t n, std::uint64_t seed, std::int64_t lo,
                          std::int64_t hi, cudaStream_t stream) {
  fill_integer<<<fill_blocks(n), fill_threads, 0, stream>>>(device, n, seed, lo, hi);
  detail::check_launch("fill_random_integers", "fill_integer");
}

template void fill_random_integers<std::int32_t>(std::int32_t*, std::int64_t, std::uint64_t,
                                                 std::int64_t, std::int64_t, cudaStream_t);
template void fill_random_integers<std::int64_t>(std::int64_t*, std::int64_t, std::uint64_t,
                                                 std::int64_t, std::int64_t, cudaStream_t);
template void fill_random_integers<std::uint32_t>(std::uint32_t*, std::int64_t, std::uint64_t,
                                                  std::int64_t, std::int64_t, cudaStream_t);
template void fill_random_integers<std::uint8_t>(std::uint8_t*, std::int64_t, std::uint64_t,
                                                 std::int64_t, std::int64_t, cudaStream_t);

}  // namespace rooflab::bench
