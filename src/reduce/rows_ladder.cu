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

// Rung 2 — a block per row, after the Harris's reduction document's ready-to-use batched reduction.
// The document flattens the matrix by rows and returns one value a row; which block takes which row
// it does not say, and a block per row is rooflab's reading. Each thread first folds its share at
// load (fold_num times, the caller's choice there; here 256 threads, each taking every 256th
// element), then the complete-unroll tree. The document's template has limits (a power-of-two block
// size, and a size requirement on it whose formula is lost from the text, most likely the data
// length divisible by it; batches over 1024 and other sizes it leaves to other code); here any cols
// (threads past the end fold nothing) and any rows (the grid strides over them). Coalesced and busy
// for long rows, but a short row leaves most of its block idle and a few rows leave most of the GPU
// idle.
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
    "reduce-rows", 2, "block-per-row",
    "A block per row, after the Harris's reduction document's batched template, to any shape",
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

// Rung 4 — CUB's DeviceSegmentedReduce::Sum, one segment per row. This toolkit's CUB has no
// fixed-size-segment overload, so the offsets come from an iterator (row * cols), not an array.
ROOFLAB_VARIANT(Variant{
    "reduce-rows", 4, "cub-segmented", "cub::DeviceSegmentedReduce::Sum, a segment per row",
    Where::gpu, true, no_limit, [](Workspace& workspace, cudaStream_t stream) {
      with_element_type(workspace, [&](auto& w) {
        const auto begins = thrust::make_transform_iterator(
            thrust::make_counting_iterator<std::int64_t>(0), RowStart{w.cols});
        std::size_t bytes = 0;
        ROOFLAB_CUDA(op_name, "sizing cub::DeviceSegmentedReduce::Sum's temporary storage",
                     cub::DeviceSegmentedReduce::Sum(nullptr, bytes, w.in.data(), w.out.data(),
                                                     w.rows, begins, begins + 1, stream));
        StreamBuffer temp(bytes, stream, op_name);
        ROOFLAB_CUDA(op_name, "running cub::DeviceSegmentedReduce::Sum",
                     cub::DeviceSegmentedReduce::Sum(temp.data(), bytes, w.in.data(), w.out.data(),
                                                     w.rows, begins, begins + 1, stream));
      });
    }});

}  // namespace
}  // namespace rooflab::bench
