// The transpose ladder (the memory-basics lab): the same bytes moved seven ways. First with strided
// reads, then through a shared-memory tile, without and with bank conflicts, then with more work
// and wider accesses per thread, then in another tile order; the production path, the taller tile
// it takes for floats at an odd pitch, and cuBLAS geam for comparison.
#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "core/vendor.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/transpose.hpp"
#include "transpose/scalar_tiles.cuh"
#include "transpose/transpose_workspace.hpp"

namespace rooflab::bench {
namespace {

// The rungs' tiles are 32 x 32 elements (the memory-basics lab's blocks), numbered row-major over
// the input.
constexpr int tile = 32;

struct TileGrid {
  std::int64_t tiles_across = 0;
  std::int64_t tiles = 0;
  // One block per tile; a block loops only past 2^31 - 1 tiles.
  unsigned blocks() const { return unsigned(tiles < INT_MAX ? tiles : INT_MAX); }
};

TileGrid tile_grid(const TransposeWorkspace& w, int side) {
  const std::int64_t across = (w.cols + side - 1) / side;
  return TileGrid{across, (w.rows + side - 1) / side * across};
}

// Rung 1 — naive (the memory-basics lab's naiveTranspose).
// Thread x of a warp takes input row r0 + x: its writes along the output row are consecutive
// (coalesced), but its reads are `cols` elements apart, one 32-byte sector fetched for every
// 4 or 8 useful bytes.
template <class T>
__global__ void transpose_naive(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                                std::int64_t cols, TileGrid grid) {
  for (std::int64_t t = blockIdx.x; t < grid.tiles; t += gridDim.x) {
    const std::int64_t i = t / grid.tiles_across * tile + threadIdx.x;
    const std::int64_t j = t % grid.tiles_across * tile + threadIdx.y;
    if (i < rows && j < cols) out[j * rows + i] = in[i * cols + j];
  }
}

// Rungs 2 and 3 — a shared-memory tile (the memory-basics lab's transpose), unpadded and padded;
// the conflict on the read, as the lab's prose puts it (its code's is on the store).
// The block reads a 32 x 32 tile along input rows and writes it along output rows, both
// coalesced; the exchange happens in shared memory. Unpadded, the write phase reads a tile
// column: 32 words 32 words apart, all in one bank, served one at a time (a 32-way conflict).
// One padding word per row ([32][33]) shifts each row by one bank: the column is conflict-free.
template <class T, int Padding>
__global__ void transpose_shared(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                                 std::int64_t cols, TileGrid grid) {
  __shared__ T block_tile[tile][tile + Padding];
  for (std::int64_t t = blockIdx.x; t < grid.tiles; t += gridDim.x) {
    const std::int64_t row0 = t / grid.tiles_across * tile, col0 = t % grid.tiles_across * tile;
    if (row0 + threadIdx.y < rows && col0 + threadIdx.x < cols)
      block_tile[threadIdx.y][threadIdx.x] = in[(row0 + threadIdx.y) * cols + col0 + threadIdx.x];
    __syncthreads();
    if (col0 + threadIdx.y < cols && row0 + threadIdx.x < rows)
      out[(col0 + threadIdx.y) * rows + row0 + threadIdx.x] = block_tile[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
}

// Rung 4 — several rows per thread (tile 32, 8 block rows).
// A 32 x 8 block moves the 32 x 32 tile in 4 passes: four loads in flight per thread instead
// of one, a quarter of the threads paying the index arithmetic and the barrier.
constexpr int block_rows = 8;
template <class T>
__global__ void transpose_block_rows(const T* __restrict__ in, T* __restrict__ out,
                                     std::int64_t rows, std::int64_t cols, TileGrid grid) {
  __shared__ T block_tile[tile][tile + 1];
  for (std::int64_t t = blockIdx.x; t < grid.tiles; t += gridDim.x) {
    const std::int64_t row0 = t / grid.tiles_across * tile, col0 = t % grid.tiles_across * tile;
#pragma unroll
    for (int k = 0; k < tile; k += block_rows)
      if (row0 + threadIdx.y + k < rows && col0 + threadIdx.x < cols)
        block_tile[threadIdx.y + k][threadIdx.x] =
            in[(row0 + threadIdx.y + k) * cols + col0 + threadIdx.x];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < tile; k += block_rows)
      if (col0 + threadIdx.y + k < cols && row0 + threadIdx.x < rows)
        out[(col0 + threadIdx.y + k) * rows + row0 + threadIdx.x] =
            block_tile[threadIdx.x][threadIdx.y + k];
    __syncthreads();
  }
}

// Rung 5 — 16-byte accesses (a 64 x 64 tile, 256 threads).
// A thread reads a float4 (double2) along an input row and writes one gathered down a tile
// column: a quarter (half) of the memory instructions, 64 (128) bytes in flight per thread, and
// 256-byte (512-byte) row segments per warp instead of 128. Needs rows and cols in multiples of 64.
constexpr int wide_side = 64, wide_threads = 256;
template <class T>
__global__ void __launch_bounds__(wide_threads)
    transpose_wide(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                   std::int64_t cols, TileGrid grid) {
  constexpr int width = 16 / sizeof(T), per_row = wide_side / width,
                rows_per_pass = wide_threads / per_row;
  struct alignas(16) Wide {
    T lane[width];
  };
  __shared__ T block_tile[wide_side][wide_side + 1];
  const int first = int(threadIdx.x) % per_row * width, first_row = int(threadIdx.x) / per_row;
  for (std::int64_t t = blockIdx.x; t < grid.tiles; t += gridDim.x) {
    const std::int64_t row0 = t / grid.tiles_across * wide_side,
                       col0 = t % grid.tiles_across * wide_side;
#pragma unroll
    for (int r = first_row; r < wide_side; r += rows_per_pass) {
      const Wide values = *reinterpret_cast<const Wide*>(in + (row0 + r) * cols + col0 + first);
#pragma unroll
      for (int e = 0; e < width; ++e) block_tile[r][first + e] = values.lane[e];
    }
    __syncthreads();
#pragma unroll
    for (int c = first_row; c < wide_side; c += rows_per_pass) {
      Wide values;
#pragma unroll
      for (int e = 0; e < width; ++e) values.lane[e] = block_tile[first + e][c];
      *reinterpret_cast<Wide*>(out + (col0 + c) * rows + row0 + first) = values;
    }
    __syncthreads();
  }
}

std::string float_or_double(const Problem& problem) {
  if (problem.dtype == "float" || problem.dtype == "double") return {};
  return "the ladder's rungs are built for float and double; the production rung takes every "
         "element size";
}

// fn(T{}) with T float or double, the workspace's element.
template <class Fn>
void on_float_or_double(const TransposeWorkspace& w, Fn fn) {
  if (w.element.bytes == 4)
    fn(float{});
  else
    fn(double{});
}

ROOFLAB_VARIANT(Variant{
    "transpose", 1, "naive",
    "one element per thread: coalesced writes, reads cols apart (the memory-basics lab)",
    Where::gpu, false, float_or_double,
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
      on_float_or_double(w, [&](auto zero) {
        using T = decltype(zero);
        const TileGrid grid = tile_grid(w, tile);
        transpose_naive<T><<<grid.blocks(), dim3(tile, tile), 0, stream>>>(
            w.input<T>(), w.output<T>(), w.rows, w.cols, grid);
        detail::check_launch("bench transpose", "transpose_naive");
      });
    })});

ROOFLAB_VARIANT(Variant{"transpose", 2, "shared-tile",
                        "32 x 32 shared-memory tile: both sides coalesced, 32-way bank conflicts",
                        Where::gpu, false, float_or_double,
                        on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
                          on_float_or_double(w, [&](auto zero) {
                            using T = decltype(zero);
                            const TileGrid grid = tile_grid(w, tile);
                            transpose_shared<T, 0><<<grid.blocks(), dim3(tile, tile), 0, stream>>>(
                                w.input<T>(), w.output<T>(), w.rows, w.cols, grid);
                            detail::check_launch("bench transpose", "transpose_shared<0>");
                          });
                        })});

ROOFLAB_VARIANT(Variant{
    "transpose", 3, "padded-tile",
    "tile[32][33]: one padding word per row, no bank conflicts (the memory-basics lab)", Where::gpu,
    false, float_or_double, on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
      on_float_or_double(w, [&](auto zero) {
        using T = decltype(zero);
        const TileGrid grid = tile_grid(w, tile);
        transpose_shared<T, 1><<<grid.blocks(), dim3(tile, tile), 0, stream>>>(
            w.input<T>(), w.output<T>(), w.rows, w.cols, grid);
        detail::check_launch("bench transpose", "transpose_shared<1>");
      });
    })});

ROOFLAB_VARIANT(Variant{
    "transpose", 4, "block-rows",
    "32 x 8 threads move a 32 x 32 tile: 4 elements in flight per thread", Where::gpu, false,
    float_or_double, on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
      on_float_or_double(w, [&](auto zero) {
        using T = decltype(zero);
        const TileGrid grid = tile_grid(w, tile);
        transpose_block_rows<T><<<grid.blocks(), dim3(tile, block_rows), 0, stream>>>(
            w.input<T>(), w.output<T>(), w.rows, w.cols, grid);
        detail::check_launch("bench transpose", "transpose_block_rows");
      });
    })});

ROOFLAB_VARIANT(Variant{
    "transpose", 5, "wide-access",
    "64 x 64 tile, 16-byte loads and stores: 64 bytes in flight per thread (128 for double)",
    Where::gpu, false,
    [](const Problem& problem) {
      std::string why = float_or_double(problem);
      if (why.empty() && (problem.rows % wide_side != 0 || problem.cols % wide_side != 0))
        why = "needs rows and cols in multiples of 64 (the production rung takes any shape)";
      return why;
    },
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
      on_float_or_double(w, [&](auto zero) {
        using T = decltype(zero);
        const TileGrid grid = tile_grid(w, wide_side);
        transpose_wide<T><<<grid.blocks(), wide_threads, 0, stream>>>(w.input<T>(), w.output<T>(),
                                                                      w.rows, w.cols, grid);
        detail::check_launch("bench transpose", "transpose_wide");
      });
    })});

// Rungs 6 and 7 — scalar tiles in row-major and column-major tile order (the kernel of
// scalar_tiles.cuh at 32 x 32, 32 x 4 threads, 8 elements each, all loads issued before the
// first lands in shared memory). Row-major: consecutive blocks read consecutive tiles of an
// input row. Column-major: consecutive blocks write consecutive segments of the same output
// rows, so at an odd pitch the block that completes a 32-byte sector another one wrote partly
// runs right after it, while the sector is in L2 (on the H200: 4097 x 4099 63.3 -> 56.3 us).
template <int TileRows, int TileCols, int Threads, scalar_transpose::TileOrder Order, class T>
void run_scalar_tiles_as(TransposeWorkspace& w, cudaStream_t stream) {
  scalar_transpose::launch_scalar_tiles<T, TileRows, TileCols, Threads, Order>(
      w.input<T>(), w.output<T>(), w.rows, w.cols, stream, "bench transpose");
}

template <int TileRows, int TileCols, int Threads, scalar_transpose::TileOrder Order>
void run_scalar_tiles(TransposeWorkspace& w, cudaStream_t stream) {
  on_float_or_double(w, [&](auto zero) {
    run_scalar_tiles_as<TileRows, TileCols, Threads, Order, decltype(zero)>(w, stream);
  });
}

using scalar_transpose::TileOrder;

ROOFLAB_VARIANT(Variant{
    "transpose", 6, "tile32-rows8",
    "32 x 32 padded tile, 32 x 4 threads, 8 elements each, tiles row-major", Where::gpu, false,
    float_or_double, on<TransposeWorkspace>(run_scalar_tiles<32, 32, 128, TileOrder::row_major>)});

ROOFLAB_VARIANT(Variant{
    "transpose", 7, "tile32-col-order",
    "tile32-rows8 with tiles column-major: consecutive blocks complete each other's output sectors",
    Where::gpu, false, float_or_double,
    on<TransposeWorkspace>(run_scalar_tiles<32, 32, 128, TileOrder::column_major>)});

// Rung 8 — production: rooflab::transpose. 4- and 8-byte elements: the scalar tiles in
// column-major order, 64 x 64 (256-byte row segments for 4-byte elements, 512 for 8-byte ones),
// and for 4-byte elements at a row pitch that is not sector-aligned rung 9's 128 x 32; other
// sizes: 16-byte packets at any row pitch in the same tile order; bands for a short side, 1 x N
// as a copy.
ROOFLAB_VARIANT(Variant{"transpose", 8, "production",
                        "rooflab::transpose: any shape and element size, 64-bit sizes", Where::gpu,
                        false, no_limit,
                        on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
                          const auto run = [&](auto zero) {
                            using T = decltype(zero);
                            transpose(w.input<T>(), w.rows, w.cols, w.output<T>(), stream);
                          };
                          switch (w.element.bytes) {
                            case 1: return run(std::uint8_t{});
                            case 2: return run(std::uint16_t{});
                            case 4: return run(float{});
                            case 8: return run(double{});
                            default: return run(float4{});
                          }
                        })});

// Rung 9 — a taller tile in column-major order, production's tile for floats at an odd pitch.
// An output row segment is a tile column, TileRows elements: 128 rows make it 512 bytes, so a
// segment that starts and ends inside a sector leaves 2 partial sectors per 17 instead of 2 per
// 9 (on the H200, 4097 x 4099: 44.0 us against 50.4 for 64 x 64 and cuBLAS's 46.6; a 128 x 64
// tile, 4 blocks per SM, measured 46.5). Where every sector is whole, 64 x 64 wins (16384^2:
// 552 against 536 us).
std::string float_only(const Problem& problem) {
  if (problem.dtype == "float") return {};
  return "production's tile for 4-byte elements at an odd pitch, built for float";
}

ROOFLAB_VARIANT(Variant{
    "transpose", 9, "tile128x32-col-order",
    "128 x 32 tile column-major: 512-byte output segments, half the partial sectors per byte "
    "written",
    Where::gpu, false, float_only,
    on<TransposeWorkspace>(run_scalar_tiles_as<128, 32, 256, TileOrder::column_major, float>)});

// cuBLAS geam, C = alpha op(A) + beta op(B), with op(A) = A^T, beta = 0 and B = C (cuBLAS's
// documented in-place form): the vendor's transpose. A row-major rows x cols matrix is a
// column-major cols x rows one, so the output is column-major rows x cols with ldc = rows.
ROOFLAB_VARIANT(Variant{
    "transpose", 10, "cublas-geam", "cuBLAS Sgeam / Dgeam with op(A) = A^T, beta = 0", Where::gpu,
    true,
    [](const Problem& problem) -> std::string {
      if (problem.dtype != "float" && problem.dtype != "double")
        return "the rung calls Sgeam and Dgeam: float and double only";
      if (problem.rows > INT_MAX || problem.cols > INT_MAX)
        return "the rung calls the 32-bit-size geam";
      return {};
    },
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t stream) {
      const cublasHandle_t handle = cublas_handle(stream);
      const int m = int(w.rows), n = int(w.cols);
      if (w.element.bytes == 4) {
        const float one = 1, zero = 0;
        ROOFLAB_CUBLAS("bench transpose",
                       cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, w.input<float>(),
                                   n, &zero, w.output<float>(), m, w.output<float>(), m));
      } else {
        const double one = 1, zero = 0;
        ROOFLAB_CUBLAS("bench transpose",
                       cublasDgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, w.input<double>(),
                                   n, &zero, w.output<double>(), m, w.output<double>(), m));
      }
    })});

}  // namespace
}  // namespace rooflab::bench
