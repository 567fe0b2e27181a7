// Scalar shared-memory tiles in column-major tile order: production's kernel for 4- and 8-byte
// elements (64 x 64, and 128 x 32 for 4-byte elements at an odd pitch: the ladder's rung 9), and
// the ladder's tile32 rungs (the same kernel at other tile shapes and orders, so that the ladder
// measures exactly what production runs).
//
// A block of Threads threads moves a TileRows x TileCols tile of the input: it reads it along
// input rows (TileCols consecutive elements per warp row, coalesced) into a padded shared tile
// and writes its columns as output row segments of TileRows consecutive elements. Every
// thread issues all its loads before the first lands in shared memory.
//
// Tile order: in column-major order consecutive blocks take consecutive tiles DOWN the input,
// so they write consecutive segments of the same output rows. At a row pitch that is not a
// multiple of 32 bytes (4097 x 4099 floats) every output segment starts and ends inside a
// 32-byte sector; the block that completes the sector another block wrote partly runs right
// after it, while the sector is still in L2, instead of a whole tile row of blocks later
// (a partial sector evicted before it is completed costs HBM a read-modify-write).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/launch_bounds.cuh"

namespace rooflab::scalar_transpose {

enum class TileOrder { row_major, column_major };

// Registers sized for a full SM (2048 threads, 32 registers each), or half of it where a
// thread's loads take more than 16 registers (16 doubles, 32 floats).
template <class T, int TileRows, int TileCols, int Threads>
constexpr int resident_blocks() {
  constexpr int words_per_thread = TileRows * TileCols / Threads * int(sizeof(T)) / 4;
  return (words_per_thread > 16 ? 1024 : 2048) / Threads;
}

// The block loops over the tiles past the grid's limits (2^31 - 1 in x, 65535 in y). In
// column-major order the grid's x runs down the tile rows, y across the tile columns.
template <class T, int TileRows, int TileCols, int Threads, TileOrder Order>
__global__ void __launch_bounds__(
    Threads,
    (detail::min_blocks_per_sm(Threads, resident_blocks<T, TileRows, TileCols, Threads>())))
    scalar_tiles(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                 std::int64_t cols, std::int64_t tiles_x, std::int64_t tiles_y) {
  // Reads: thread t takes column t % TileCols of every (Threads / TileCols)-th tile row; writes:
  // element t % TileRows of every (Threads / TileRows)-th tile column (an output row).
  constexpr int load_step = Threads / TileCols, store_step = Threads / TileRows;
  constexpr int loads = TileRows / load_step, stores = TileCols / store_step;
  static_assert(Threads % TileCols == 0 && Threads % TileRows == 0,
                "threads cover whole tile rows and columns");
  static_assert(TileRows % load_step == 0 && TileCols % store_step == 0,
                "every thread moves the same count");
  static_assert(TileCols % 32 == 0 && TileRows % 32 == 0, "a warp moves whole row segments");
  // One padding element per row: TileCols + 1 is odd, so a tile column, which a warp reads to
  // write an output row, falls into 32 distinct banks (16 bank pairs for doubles).
  __shared__ T block_tile[TileRows][TileCols + 1];
  const int load_x = int(threadIdx.x) % TileCols, load_y = int(threadIdx.x) / TileCols;
  const int store_x = int(threadIdx.x) % TileRows, store_y = int(threadIdx.x) / TileRows;
  for (std::int64_t ty = blockIdx.y; ty < tiles_y; ty += gridDim.y)
    for (std::int64_t tx = blockIdx.x; tx < tiles_x; tx += gridDim.x) {
      const std::int64_t tile_row = Order == TileOrder::column_major ? tx : ty;
      const std::int64_t tile_column = Order == TileOrder::column_major ? ty : tx;
      const std::int64_t row0 = tile_row * TileRows, col0 = tile_column * TileCols;
      const T* source = in + row0 * cols + col0;
      T* target = out + col0 * rows + row0;
      if (row0 + TileRows <= rows && col0 + TileCols <= cols) {
        T values[loads];
#pragma unroll
        for (int k = 0; k < loads; ++k)
          values[k] = source[(load_y + k * load_step) * cols + load_x];
#pragma unroll
        for (int k = 0; k < loads; ++k) block_tile[load_y + k * load_step][load_x] = values[k];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < stores; ++k)
          target[(store_y + k * store_step) * rows + store_x] =
              block_tile[store_x][store_y + k * store_step];
      } else {  // edge tile: only its valid elements
        const int tile_rows = int(rows - row0 < TileRows ? rows - row0 : TileRows);
        const int tile_cols = int(cols - col0 < TileCols ? cols - col0 : TileCols);
#pragma unroll
        for (int k = 0; k < loads; ++k)
          if (load_y + k * load_step < tile_rows && load_x < tile_cols)
            block_tile[load_y + k * load_step][load_x] =
                source[(load_y + k * load_step) * cols + load_x];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < stores; ++k)
          if (store_y + k * store_step < tile_cols && store_x < tile_rows)
            target[(store_y + k * store_step) * rows + store_x] =
                block_tile[store_x][store_y + k * store_step];
      }
      __syncthreads();  // the next tile overwrites block_tile
    }
}

// Launches scalar_tiles over a rows x cols matrix; `op` names the caller in launch errors.
template <class T, int TileRows, int TileCols, int Threads, TileOrder Order>
void launch_scalar_tiles(const T* in, T* out, std::int64_t rows, std::int64_t cols,
                         cudaStream_t stream, const char* op) {
  const std::int64_t tiles_down = (rows + TileRows - 1) / TileRows,
                     tiles_across = (cols + TileCols - 1) / TileCols;
  const std::int64_t tiles_x = Order == TileOrder::column_major ? tiles_down : tiles_across;
  const std::int64_t tiles_y = Order == TileOrder::column_major ? tiles_across : tiles_down;
  const dim3 blocks(unsigned(std::min<std::int64_t>(tiles_x, INT_MAX)),
                    unsigned(std::min<std::int64_t>(tiles_y, 65535)));
  scalar_tiles<T, TileRows, TileCols, Threads, Order>
      <<<blocks, Threads, 0, stream>>>(in, out, rows, cols, tiles_x, tiles_y);
  detail::check_launch(op, "scalar_tiles");
}

}  // namespace rooflab::scalar_transpose
