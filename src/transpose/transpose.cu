// rooflab::transpose, the production path: the ladder's best rung (a padded shared-memory tile
// with 16-byte global accesses) generalized to every element size, every shape and 64-bit
// sizes. One kernel per element size; a transpose only moves bytes.
//
// Per tile, a block reads a side x side block of the input along its rows (coalesced), parks it
// in shared memory, and writes it out along the input's columns, which are the output's rows
// (coalesced again). Full tiles of 4- and 8-byte elements move 16 bytes per access where the
// rows are 16-byte aligned; edge tiles and odd shapes take a scalar path over exactly the
// tile's valid elements, linearized so that a tall-skinny output (33 x 2^20 transposed) is
// still written as one contiguous run. 1 x N and N x 1 are copies and go to cudaMemcpyAsync.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "rooflab/transpose.hpp"

namespace rooflab {
namespace {

constexpr int transpose_threads = 256;

// An element of `Bytes` bytes whose pointers are not aligned to its size: moved byte by byte.
template <int Bytes>
struct UnalignedElement {
  unsigned char byte[Bytes];
};

// 16 bytes of E, loaded and stored as one 128-bit access.
template <class E>
struct alignas(16) Packet {
  E lane[16 / sizeof(E)];
};

// Plain words are gathered into 16-byte packets where the rows allow it; 16-byte elements
// already are packets, and unaligned ones are moved byte by byte.
template <class E>
constexpr bool packs_into_16_bytes =
    std::is_same_v<E, std::uint8_t> || std::is_same_v<E, std::uint16_t> ||
    std::is_same_v<E, std::uint32_t> || std::is_same_v<E, unsigned long long>;

// Side of the square tile, in elements: 64 bytes of every tile per thread (128 for 8-byte
// elements), which with 4-8 resident blocks per SM keeps well over the ~30 KB per SM in flight
// that HBM latency asks for.
template <class E>
constexpr int tile_side() {
  return sizeof(E) == 1 ? 128 : sizeof(E) >= 16 ? 32 : 64;
}

// Row padding, in elements: it makes a tile row an odd number of 4-byte words (or of 8- and
// 16-byte units for the wider types), so that a column, which is what a warp reads to write
// the output, falls into distinct banks instead of one.
template <class E>
constexpr int tile_padding() {
  return sizeof(E) >= 4 ? 1 : 4 / int(sizeof(E));
}

// Blocks per SM the register budget is sized for (48 registers, 64 for 1- and 2-byte elements,
// whose packets take more registers to assemble): 5 x 256 threads keep 80 KB per SM in flight.
template <class E>
constexpr int resident_blocks() {
  return sizeof(E) <= 2 ? 4 : 5;
}

template <class E>
using Tile = E[tile_side<E>()][tile_side<E>() + tile_padding<E>()];

// Full tile, one element per access. Thread t owns column t % side of every
// (256 / side)-th row, so each pass of a warp reads whole row segments and each thread walks
// its rows with one pointer increment (no per-element index arithmetic).
template <class E>
__device__ void load_full_tile(Tile<E>& tile, const E* __restrict__ source, std::int64_t cols) {
  constexpr int side = tile_side<E>(), rows_per_pass = transpose_threads / side;
  const int column = int(threadIdx.x) % side, first_row = int(threadIdx.x) / side;
  const E* element = source + first_row * cols + column;
  const std::int64_t pass = rows_per_pass * cols;
#pragma unroll 16
  for (int row = first_row; row < side; row += rows_per_pass, element += pass)
    tile[row][column] = *element;
}

template <class E>
__device__ void store_full_tile(const Tile<E>& tile, E* __restrict__ target, std::int64_t rows) {
  constexpr int side = tile_side<E>(), columns_per_pass = transpose_threads / side;
  const int row = int(threadIdx.x) % side, first_column = int(threadIdx.x) / side;
  E* element = target + first_column * rows + row;
  const std::int64_t pass = columns_per_pass * rows;
#pragma unroll 16
  for (int column = first_column; column < side; column += columns_per_pass, element += pass)
    *element = tile[row][column];
}

// Full tile, 16 bytes per access: a thread reads a packet along an input row and, after the
// exchange, writes a packet gathered down a tile column along an output row.
template <class E>
__device__ void load_packed_tile(Tile<E>& tile, const E* __restrict__ source, std::int64_t cols) {
  constexpr int side = tile_side<E>(), width = 16 / sizeof(E), packets_per_row = side / width;
  constexpr int rows_per_pass = transpose_threads / packets_per_row;
  const int first = int(threadIdx.x) % packets_per_row * width;
  const int first_row = int(threadIdx.x) / packets_per_row;
  const E* packet = source + first_row * cols + first;
  const std::int64_t pass = rows_per_pass * cols;
#pragma unroll
  for (int row = first_row; row < side; row += rows_per_pass, packet += pass) {
    const Packet<E> values = *reinterpret_cast<const Packet<E>*>(packet);
#pragma unroll
    for (int e = 0; e < width; ++e) tile[row][first + e] = values.lane[e];
  }
}

template <class E>
__device__ void store_packed_tile(const Tile<E>& tile, E* __restrict__ target, std::int64_t rows) {
  constexpr int side = tile_side<E>(), width = 16 / sizeof(E), packets_per_row = side / width;
  constexpr int columns_per_pass = transpose_threads / packets_per_row;
  const int first = int(threadIdx.x) % packets_per_row * width;
  const int first_column = int(threadIdx.x) / packets_per_row;
  E* packet = target + first_column * rows + first;
  const std::int64_t pass = columns_per_pass * rows;
#pragma unroll
  for (int column = first_column; column < side; column += columns_per_pass, packet += pass) {
    Packet<E> values;
#pragma unroll
    for (int e = 0; e < width; ++e) values.lane[e] = tile[first + e][column];
    *reinterpret_cast<Packet<E>*>(packet) = values;
  }
}

// Edge tile of tile_rows x tile_cols valid elements: the valid elements are numbered row by row
// for the reads and column by column for the writes, so no thread idles on padding and a tile
// that spans all of a short dimension (33 x 2^20) writes one contiguous run. Each thread starts
// at element t and steps by 256 elements, carrying its (row, column) instead of dividing.
template <class E>
__device__ void load_edge_tile(Tile<E>& tile, const E* __restrict__ source, std::int64_t cols,
                               int tile_rows, int tile_cols) {
  constexpr int side = tile_side<E>();
  const int step_rows = transpose_threads / tile_cols, step_cols = transpose_threads % tile_cols;
  int row = int(threadIdx.x) / tile_cols, column = int(threadIdx.x) % tile_cols;
#pragma unroll 8
  for (int k = 0; k < side * side / transpose_threads; ++k) {
    if (row < tile_rows) tile[row][column] = source[row * cols + column];
    row += step_rows;
    column += step_cols;
    if (column >= tile_cols) column -= tile_cols, ++row;
  }
}

template <class E>
__device__ void store_edge_tile(const Tile<E>& tile, E* __restrict__ target, std::int64_t rows,
                                int tile_rows, int tile_cols) {
  constexpr int side = tile_side<E>();
  const int step_columns = transpose_threads / tile_rows, step_rows = transpose_threads % tile_rows;
  int column = int(threadIdx.x) / tile_rows, row = int(threadIdx.x) % tile_rows;
#pragma unroll 8
  for (int k = 0; k < side * side / transpose_threads; ++k) {
    if (column < tile_cols) target[column * rows + row] = tile[row][column];
    column += step_columns;
    row += step_rows;
    if (row >= tile_rows) row -= tile_rows, ++column;
  }
}

// One tile per block iteration; the loop only matters beyond 2^31 - 1 tiles.
template <class E>
__global__ void __launch_bounds__(transpose_threads, resident_blocks<E>())
    transpose_tiles(const E* __restrict__ in, E* __restrict__ out, std::int64_t rows,
                    std::int64_t cols, std::int64_t tiles_across, std::int64_t tiles,
                    bool packed_loads, bool packed_stores) {
  constexpr int side = tile_side<E>();
  __shared__ Tile<E> tile;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t row0 = t / tiles_across * side, col0 = t % tiles_across * side;
    const int tile_rows = int(rows - row0 < side ? rows - row0 : side);
    const int tile_cols = int(cols - col0 < side ? cols - col0 : side);
    const E* source = in + row0 * cols + col0;
    E* target = out + col0 * rows + row0;
    if (tile_rows == side && tile_cols == side) {
      if constexpr (packs_into_16_bytes<E>) {
        if (packed_loads) load_packed_tile<E>(tile, source, cols);
        else load_full_tile<E>(tile, source, cols);
        __syncthreads();
        if (packed_stores) store_packed_tile<E>(tile, target, rows);
        else store_full_tile<E>(tile, target, rows);
      } else {
        load_full_tile<E>(tile, source, cols);
        __syncthreads();
        store_full_tile<E>(tile, target, rows);
      }
    } else {
      load_edge_tile<E>(tile, source, cols, tile_rows, tile_cols);
      __syncthreads();
      store_edge_tile<E>(tile, target, rows, tile_rows, tile_cols);
    }
    __syncthreads();  // the next iteration overwrites the tile
  }
}

bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

template <class E>
void launch_tiles(const void* in, void* out, std::int64_t rows, std::int64_t cols,
                  cudaStream_t stream) {
  constexpr int side = tile_side<E>();
  const std::int64_t tiles_across = (cols + side - 1) / side;
  const std::int64_t tiles = (rows + side - 1) / side * tiles_across;
  bool packed_loads = false, packed_stores = false;
  if constexpr (packs_into_16_bytes<E>) {
    constexpr std::int64_t width = 16 / sizeof(E);
    packed_loads = aligned_to(in, 16) && cols % width == 0;
    packed_stores = aligned_to(out, 16) && rows % width == 0;
  }
  const auto blocks = unsigned(std::min<std::int64_t>(tiles, INT_MAX));
  transpose_tiles<E><<<blocks, transpose_threads, 0, stream>>>(
      static_cast<const E*>(in), static_cast<E*>(out), rows, cols, tiles_across, tiles,
      packed_loads, packed_stores);
  detail::check_launch("transpose", "transpose_tiles");
}

}  // namespace

namespace detail {

void transpose_bytes(const void* in, std::int64_t rows, std::int64_t cols, std::size_t element_bytes,
                     void* out, cudaStream_t stream) {
  const char* op = "transpose";
  require(element_bytes == 1 || element_bytes == 2 || element_bytes == 4 || element_bytes == 8 ||
              element_bytes == 16,
          op, "T", "elements must have 1, 2, 4, 8 or 16 bytes, got " + std::to_string(element_bytes));
  require(rows >= 1, op, "rows", "must be at least 1, got " + std::to_string(rows));
  require(cols >= 1, op, "cols", "must be at least 1, got " + std::to_string(cols));
  require(rows <= INT64_MAX / cols / std::int64_t(element_bytes), op, "rows",
          "rows x cols x element size overflows 64 bits");
  require(in != nullptr, op, "in", "is null");
  require(out != nullptr, op, "out", "is null");
  const auto bytes = std::uint64_t(rows) * std::uint64_t(cols) * element_bytes;
  const auto first_in = reinterpret_cast<std::uintptr_t>(in);
  const auto first_out = reinterpret_cast<std::uintptr_t>(out);
  require(first_in + bytes <= first_out || first_out + bytes <= first_in, op, "out",
          "must not overlap in");

  if (rows == 1 || cols == 1) {  // the same bytes in the same order
    ROOFLAB_CUDA(op, cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const bool aligned = aligned_to(in, element_bytes) && aligned_to(out, element_bytes);
  switch (element_bytes) {
    case 1: return launch_tiles<std::uint8_t>(in, out, rows, cols, stream);
    case 2:
      return aligned ? launch_tiles<std::uint16_t>(in, out, rows, cols, stream)
                     : launch_tiles<UnalignedElement<2>>(in, out, rows, cols, stream);
    case 4:
      return aligned ? launch_tiles<std::uint32_t>(in, out, rows, cols, stream)
                     : launch_tiles<UnalignedElement<4>>(in, out, rows, cols, stream);
    case 8:
      return aligned ? launch_tiles<unsigned long long>(in, out, rows, cols, stream)
                     : launch_tiles<UnalignedElement<8>>(in, out, rows, cols, stream);
    default:
      return aligned ? launch_tiles<uint4>(in, out, rows, cols, stream)
                     : launch_tiles<UnalignedElement<16>>(in, out, rows, cols, stream);
  }
}

}  // namespace detail
}  // namespace rooflab
