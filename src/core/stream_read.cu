#include "core/stream_read.hpp"

#include <cstdint>

#include "core/device_info.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab {
namespace {

// Four independent 16-byte loads in flight per thread: enough to cover HBM latency at full
// occupancy. The XOR fold keeps the loads live.
__global__ void stream_read_words(const uint4* __restrict__ in, std::size_t count, unsigned* sink) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned fold = 0;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    fold ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
            d.z ^ d.w;
  }
  for (; i < count; i += stride) fold ^= in[i].x ^ in[i].y ^ in[i].z ^ in[i].w;
  if (fold == 0x9E3779B9u) *sink = fold;
}

}  // namespace

void stream_read(const void* data, std::size_t bytes, unsigned* sink, cudaStream_t stream) {
  const int blocks = current_sm_count() * 8;  // 8 blocks of 256 = 2048 threads: a full Hopper SM
  stream_read_words<<<blocks, 256, 0, stream>>>(static_cast<const uint4*>(data), bytes / 16, sink);
  detail::check_launch("stream_read", "stream_read_words");
}

}  // namespace rooflab
