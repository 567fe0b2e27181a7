// The histogram op's inputs, drawn on the device (histogram_data.hpp): 50M values or 1 GiB of
// bytes take a few milliseconds.
#include <cstdint>

#include "histogram/histogram_workspace.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

template <class T>
__global__ void fill_samples(T* out, std::int64_t n, std::uint64_t seed, InputShape shape) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = sample_histogram_value<T>(seed, std::uint64_t(i), shape);
}

}  // namespace

void fill_histogram_input(DType dtype, void* device, std::int64_t n, std::uint64_t seed,
                          const InputShape& shape) {
  constexpr int threads = 256;
  // Enough blocks to fill any GPU of today; the grid-stride loop covers the rest.
  const auto blocks = unsigned(n / threads < 65536 ? n / threads + 1 : 65536);
  visit_histogram_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    fill_samples<T><<<blocks, threads>>>(static_cast<T*>(device), n, seed, shape);
  });
  detail::check_launch("bench histogram", "fill_samples");
}

}  // namespace rooflab::bench
