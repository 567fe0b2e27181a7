// The add ladder (the limiting-factors lecture): the same 12 bytes per element, moved three ways.
#include <cstdint>

#include "add/add_workspace.hpp"
#include "core/device_info.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr int add_threads = 256;
// 8 resident blocks of 256 threads fill a Hopper SM; 4 such waves give the scheduler slack to
// balance the tail without launching a block per element.
int filling_grid() { return current_sm_count() * 8 * 4; }

// Rung 1 — grid-stride, coalesced (the lecture's add strides by the block, 2 per thread on its
// slide, its timed count not stated: the coalescing op's k = 2 rung).
// Consecutive threads touch consecutive floats, so each warp load is one 128-byte line; the grid
// is sized to the GPU and each thread strides by the whole grid, so any n is covered.
__global__ void add_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ out, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
#pragma unroll 4
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a[i] + b[i];
}

// Rung 2 — contiguous chunk per thread (the lecture's "stupid add" pattern; its slide shows 2 per
// thread, 8 is from a remark in its questions). Each thread adds 8 neighbouring elements, so at
// each step a warp's 32 loads fall 32 bytes apart: 8 lines touched per instruction instead of 1,
// and the memory system replays them.
constexpr int chunk = 8;
__global__ void add_contiguous_chunk(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out, std::int64_t n) {
  const std::int64_t first = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * chunk;
  for (int k = 0; k < chunk; ++k) {
    const std::int64_t i = first + k;
    if (i < n) out[i] = a[i] + b[i];
  }
}

// Rung 3 — float4: 16-byte loads and stores.
// A quarter of the instructions for the same bytes, and each thread keeps more bytes in flight,
// which is what hides HBM latency; the last n % 4 elements take the scalar path.
__global__ void add_float4(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t start = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = n / 4;
  const auto* a4 = reinterpret_cast<const float4*>(a);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  auto* out4 = reinterpret_cast<float4*>(out);
#pragma unroll 2
  for (std::int64_t v = start; v < vectors; v += stride) {
    const float4 x = a4[v], y = b4[v];
    out4[v] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (std::int64_t i = vectors * 4 + start; i < n; i += stride) out[i] = a[i] + b[i];
}

ROOFLAB_VARIANT(Variant{
    "add", 1, "grid-stride", "consecutive threads, consecutive floats: one line per warp load",
    Where::gpu, false, no_limit, on<AddWorkspace>([](AddWorkspace& w, cudaStream_t stream) {
      add_grid_stride<<<filling_grid(), add_threads, 0, stream>>>(w.a.data(), w.b.data(),
                                                                  w.out.data(), w.n);
      detail::check_launch("bench add", "add_grid_stride");
    })});

ROOFLAB_VARIANT(Variant{"add", 2, "contiguous-chunk",
                        "8 neighbouring elements per thread: 8 lines per warp load", Where::gpu,
                        false, no_limit, on<AddWorkspace>([](AddWorkspace& w, cudaStream_t stream) {
                          const std::int64_t threads = (w.n + chunk - 1) / chunk;
                          const auto blocks = unsigned((threads + add_threads - 1) / add_threads);
                          add_contiguous_chunk<<<blocks, add_threads, 0, stream>>>(
                              w.a.data(), w.b.data(), w.out.data(), w.n);
                          detail::check_launch("bench add", "add_contiguous_chunk");
                        })});

ROOFLAB_VARIANT(Variant{"add", 3, "float4",
                        "16-byte loads and stores: a quarter of the instructions", Where::gpu,
                        false, no_limit, on<AddWorkspace>([](AddWorkspace& w, cudaStream_t stream) {
                          add_float4<<<filling_grid(), add_threads, 0, stream>>>(
                              w.a.data(), w.b.data(), w.out.data(), w.n);
                          detail::check_launch("bench add", "add_float4");
                        })});

}  // namespace
}  // namespace rooflab::bench
