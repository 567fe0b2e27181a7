// The reduce-rows ladder: one sum per row of a row-major rows x cols matrix, from a thread per row
// to the shape-adaptive production path, against CUB's segmented reduction.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "reduce/block_trees.cuh"
#include "reduce/float4_loads.cuh"
#include "reduce/reduce_workspace.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/reduce.hpp"

namespace rooflab::bench {
namespace {

using FloatWorkspace = TypedReduceWorkspace<float>;
constexpr const char* op_name = "bench reduce-rows";
constexpr unsigned row_threads = 256;

std::string float_only(const Problem& problem) {
  return problem.dtype == "float" ? std::string()
                                  : "written for float (production and CUB take every type)";
}

unsigned grid_of(std::int64_t blocks) {
  return unsigned(std::clamp<std::int64_t>(blocks, 1, std::numeric_limits<int>::max()));
}

// Rung 1 — a thread per row (naive).
// Each thread walks its own row. At every step the 32 threads of a warp read 32 different rows,
// cols apart: 32 memory segments per warp load instead of one, and only L1 hits on lines fetched
// for earlier steps save it. Tolerable for a few columns, hopeless for long rows (and few rows
// leave the GPU idle).
__global__ void reduce_rows_thread_per_row(const float* in, std::int64_t rows, std::int64_t cols,
                                           float* out) {
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* start = in + row * cols;
  float sum = 0.0f;
  for (std::int64_t c = 0; c < cols; ++c) sum += start[c];
  out[row] = sum;
}

// Rung 2 — a block per row (seed 001's ready-to-use batched reduction).
// Seed 001's template: one block per row, each thread folding every 256th element (the seed's
// "fold"), then the complete-unroll tree. The seed required rows a multiple of the block size,
// powers of two, at most a grid's worth; here any cols (threads past the end fold nothing) and
// any rows (the grid strides over them). Coalesced and busy for long rows, but a short row leaves
// most of its block idle and a few rows leave most of the GPU idle.
__global__ void reduce_rows_block_per_row(const float* in, std::int64_t rows, std::int64_t cols,
                                          float* out) {
  __shared__ float s[row_threads];
  const unsigned t = threadIdx.x;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* start = in + row * cols;
    float sum = 0.0f;
    for (std::int64_t c = t; c < cols; c += row_threads) sum += start[c];
    s[t] = sum;
    __syncthreads();
    sum = complete_tree<row_threads>(s, t);
    if (t == 0) out[row] = sum;
    __syncthreads();  // s is rewritten for the next row
  }
}

// Where each row starts, for CUB's segment offsets, computed instead of stored.
struct RowStart {
  std::int64_t cols;
  __host__ __device__ std::int64_t operator()(std::int64_t row) const { return row * cols; }
};

ROOFLAB_VARIANT(Variant{
    "reduce-rows", 1, "thread-per-row", "each thread walks a row: 32 rows per warp load",
    Where::gpu, false,
    [](const Problem& problem) {
      const std::string why = float_only(problem);
      if (!why.empty()) return why;
      return problem.cols <= 4096 ? std::string()
                                  : "a thread walks a whole row alone (limit cols <= 4096)";
    },
    on<FloatWorkspace>([](FloatWorkspace& w, cudaStream_t stream) {
      reduce_rows_thread_per_row<<<grid_of((w.rows + row_threads - 1) / row_threads), row_threads,
                                   0, stream>>>(w.in.data(), w.rows, w.cols, w.out.data());
      detail::check_launch(op_name, "reduce_rows_thread_per_row");
    })});

ROOFLAB_VARIANT(Variant{
    "reduce-rows", 2, "block-per-row", "seed 001's batched template: a block per row, any shape",
    Where::gpu, false, float_only, on<FloatWorkspace>([](FloatWorkspace& w, cudaStream_t stream) {
      reduce_rows_block_per_row<<<grid_of(w.rows), row_threads, 0, stream>>>(w.in.data(), w.rows,
                                                                             w.cols, w.out.data());
      detail::check_launch(op_name, "reduce_rows_block_per_row");
    })});

// Rung 3 — rooflab::reduce_rows: a group of lanes per tiny row, a warp per medium row, blocks per
// long row (split across blocks when rows are few), 16-byte loads on every aligned body.
ROOFLAB_VARIANT(Variant{
    "reduce-rows", 3, "production", "rooflab::reduce_rows: lanes, warp or blocks per row by shape",
    Where::gpu, false, no_limit, [](Workspace& workspace, cudaStream_t stream) {
      with_element_type(workspace, [&](auto& w) {
        rooflab::reduce_rows(w.in.data(), w.rows, w.cols, w.out.data(), Sum{}, stream);
      });
    }});

// Rungs 4-6 — candidates for rows of 32 floats (production reached 71% of the read bandwidth at
// 1M x 32 on an H200, against 94-99% on the other shapes). A warp reads the matrix as one flat
// stream: each load instruction covers 512 contiguous bytes, 4 whole rows of 8 vectors (8 lanes a
// row), and a pass issues Loads of them (4 x Loads rows) before it adds any. A reduce-scatter
// across each row's 8 lanes (production's, 7 shuffles for 8 values, 14 for 16) leaves each lane
// with Loads / 8 rows' totals, and the loads are ordered so that those are rows 32 i + 4 m + g for
// lane (g, m) = (lane / 8, lane % 8): each of the pass's Loads / 8 stores writes 32 consecutive
// totals. One wave of warps strides over the passes. They need a 16-byte-aligned matrix (the
// workspace's is 256-byte aligned); the winner gets production's generality.

template <int Loads, bool EvictFirst>
__global__ void __launch_bounds__(row_threads)
    reduce_rows_of_32_flat(const float* in, std::int64_t rows, float* out) {
  constexpr int lanes_per_row = 8;             // 32 floats = 8 vectors
  constexpr int kept = Loads / lanes_per_row;  // totals per lane after the reduce-scatter
  constexpr std::int64_t rows_per_pass = 4 * Loads;
  static_assert(Loads % lanes_per_row == 0, "whole reduce-scatters");
  const int lane = int(threadIdx.x) % 32;
  const int group = lane / lanes_per_row, member = lane % lanes_per_row;
  const auto* in4 = reinterpret_cast<const float4*>(in);
  const std::int64_t warp = (std::int64_t(blockIdx.x) * row_threads + threadIdx.x) / 32;
  const std::int64_t warps = std::int64_t(gridDim.x) * (row_threads / 32);
  // The 4-row quad, counted from the pass's first row, that load k reads.
  const auto quad = [](int k) { return 8 * (k % kept) + k / kept; };
  // `first` is the same for the whole warp, so every lane reaches the shuffles.
  for (std::int64_t first = warp * rows_per_pass; first < rows; first += warps * rows_per_pass) {
    const float4* pass = in4 + first * lanes_per_row + lane;
    float4 loaded[Loads];
    if (first + rows_per_pass <= rows) {
#pragma unroll
      for (int k = 0; k < Loads; ++k) loaded[k] = load_float4<EvictFirst>(pass + 32 * quad(k));
    } else {
#pragma unroll
      for (int k = 0; k < Loads; ++k)
        loaded[k] = first + 4 * quad(k) + group < rows
                        ? load_float4<EvictFirst>(pass + 32 * quad(k))
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float value[Loads];
#pragma unroll
    for (int k = 0; k < Loads; ++k) value[k] = sum_of(loaded[k]);
    float total[kept];
    detail::reduce_scatter<lanes_per_row / 2, Loads, kept>(value, total, Sum{});
#pragma unroll
    for (int i = 0; i < kept; ++i) {
      const std::int64_t row = first + 32 * i + 4 * member + group;
      if (row < rows) out[row] = total[i];
    }
  }
}

std::string rows_of_32_floats(const Problem& problem) {
  const std::string why = float_only(problem);
  if (!why.empty()) return why;
  return problem.cols == 32 ? std::string()
                            : "a candidate for rows of exactly 32 floats (the 1M x 32 shape)";
}

// Runs a flat candidate on a warp per pass of rows: at most blocks_per_sm blocks per SM, never more
// than fit at once (one wave at most).
template <int Loads, bool EvictFirst>
std::function<void(Workspace&, cudaStream_t)> flat_rows_of_32(int blocks_per_sm) {
  static_assert(row_threads == detail::reduce_block_threads, "production's occupancy query");
  return on<FloatWorkspace>([blocks_per_sm](FloatWorkspace& w, cudaStream_t stream) {
    constexpr auto kernel = reduce_rows_of_32_flat<Loads, EvictFirst>;
    const std::int64_t rows_per_block = 4 * Loads * (row_threads / 32);
    const int most =
        std::min(detail::resident_blocks<kernel>(op_name), blocks_per_sm * current_sm_count());
    const int blocks =
        int(std::clamp<std::int64_t>((w.rows + rows_per_block - 1) / rows_per_block, 1, most));
    kernel<<<blocks, row_threads, 0, stream>>>(w.in.data(), w.rows, w.out.data());
    detail::check_launch(op_name, "reduce_rows_of_32_flat");
  });
}

// Rung 4 — the flat stream with production's 8 loads per pass and grid, plain loads: production's
// small-rows path less its evict-first hint, with 512-byte runs per load instruction (production
// reads 4 rows 1 KiB apart per instruction).
ROOFLAB_VARIANT(Variant{"reduce-rows", 4, "flat-32-plain",
                        "rows of 32 floats as one flat stream, 8 loads per pass, plain loads",
                        Where::gpu, false, rows_of_32_floats, flat_rows_of_32<8, false>(8)});

// Rung 5 — 16 loads per pass: 8 KiB per warp in flight, half the passes (each a round trip that
// nothing overlaps inside the warp), two 32-total stores per pass; more registers, fewer warps.
ROOFLAB_VARIANT(Variant{"reduce-rows", 5, "flat-32-16-loads",
                        "flat stream, 16 loads per pass (8 KiB per warp), plain loads", Where::gpu,
                        false, rows_of_32_floats, flat_rows_of_32<16, false>(8)});

// Rung 6 — the evict-first hint with a cap on bytes in flight: 2 blocks of 256 per SM, 64 KiB per
// SM (enough for HBM's latency at full rate). 128 MiB is short enough that write-backs of the
// dirty lines the lab's L2 flush leaves can cost a third of the time; the hint makes a miss evict
// the stream's own lines first, but every line still in flight holds a way, so fewer bytes in
// flight evict fewer dirty lines.
ROOFLAB_VARIANT(Variant{"reduce-rows", 6, "flat-32-evict-first-64k",
                        "flat stream, 8 loads per pass, evict-first hint, 64 KiB in flight per SM",
                        Where::gpu, false, rows_of_32_floats, flat_rows_of_32<8, true>(2)});

// Rung 7 — CUB's DeviceSegmentedReduce::Sum, one segment per row. This toolkit's CUB has no
// fixed-size-segment overload, so the offsets come from an iterator (row * cols), not an array.
ROOFLAB_VARIANT(Variant{
    "reduce-rows", 7, "cub-segmented", "cub::DeviceSegmentedReduce::Sum, a segment per row",
    Where::gpu, true, no_limit, [](Workspace& workspace, cudaStream_t stream) {
      with_element_type(workspace, [&](auto& w) {
        const auto begins = thrust::make_transform_iterator(
            thrust::make_counting_iterator<std::int64_t>(0), RowStart{w.cols});
        std::size_t bytes = 0;
        ROOFLAB_CUDA(op_name,
                     cub::DeviceSegmentedReduce::Sum(nullptr, bytes, w.in.data(), w.out.data(),
                                                     w.rows, begins, begins + 1, stream));
        StreamBuffer temp(bytes, stream, op_name);
        ROOFLAB_CUDA(op_name,
                     cub::DeviceSegmentedReduce::Sum(temp.data(), bytes, w.in.data(), w.out.data(),
                                                     w.rows, begins, begins + 1, stream));
      });
    }});

}  // namespace
}  // namespace rooflab::bench
