// rooflab::transpose, the production path: shared-memory tiles in column-major tile order,
// generalized to every element size, every row pitch, every shape and 64-bit sizes. A transpose
// only moves bytes, so there is one kernel per element size and shape class.
//
// Tile order (measured on an H200): consecutive blocks take consecutive tiles down the input,
// so they write consecutive segments of the same output rows. At an odd row pitch every output
// segment begins and ends inside a 32-byte sector, and the block that completes a sector runs
// right after the one that wrote it partly, while the sector is still in L2.
//
// 4- and 8-byte elements (aligned): a 64 x 64 padded tile moved with one element per access
// (scalar_tiles.cuh). At 16384^2 and 4097 x 4099 floats it beat the 16-byte packets below: one
// access per element costs nothing at those sizes, and a scalar row segment needs no packet
// assembly whatever the row pitch. Where a 4-byte pitch is not a whole number of sectors, the
// tile is 128 rows x 32 columns instead: its output segments are 512 bytes, so the partial
// sectors at their ends are half as many per byte written (4097 x 4099 floats on an H200: 44.0
// against 50.4 us; at 16384^2, where every sector is whole, 64 x 64 is faster, 536 against 552).
//
// 1-, 2- and 16-byte elements, and unaligned ones: square tiles of 16-byte packets. A block reads a
// side x side block of the input along its rows (coalesced), parks it in shared memory, and writes
// it along the input's columns, which are the output's rows (coalesced again). Every global access
// of a full tile of aligned elements moves 16 bytes whatever the row pitch (unaligned elements go
// one element, byte by byte, at a time): a row segment is moved as the aligned 16-byte packets
// inside it, the few elements before the first and after the last packet by one thread lane by lane
// (a Run, below). Edge tiles move exactly their valid elements, one per access.
//
// Bands: when one side is shorter than a tile (33 x 2^20), square tiles would be mostly empty.
// A block takes all of the short side and a slab of the long one instead; on the contiguous
// side of the transpose that slab is one run of consecutive elements (224 output rows of 33
// floats are 7392 consecutive floats), moved as one Run of 16-byte packets.
//
// 1 x N and N x 1 are copies and go to cudaMemcpyAsync.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/launch_bounds.cuh"
#include "rooflab/error.hpp"
#include "rooflab/transpose.hpp"
#include "transpose/scalar_tiles.cuh"

namespace rooflab {
namespace {

constexpr int transpose_threads = 256;

// An element of `Bytes` bytes whose pointers are not aligned to its size: moved byte by byte.
template <int Bytes>
struct UnalignedElement {
  unsigned char byte[Bytes];
};

// Plain words are moved several to a 16-byte access; 16-byte elements are one access each, and
// unaligned elements one element (byte by byte) at a time.
template <class E>
constexpr bool packs_into_16_bytes =
    std::is_same_v<E, std::uint8_t> || std::is_same_v<E, std::uint16_t> ||
    std::is_same_v<E, std::uint32_t> || std::is_same_v<E, unsigned long long>;

template <class E>
constexpr int lanes = packs_into_16_bytes<E> ? 16 / int(sizeof(E)) : 1;

// What a thread moves per global access: `lanes` elements, 16 aligned bytes for every type but
// the unaligned ones. 1- and 2-byte lanes stay packed in 4-byte words: as separate values, the
// 8 slots a band thread keeps in flight would take 128 registers.
template <class E>
struct alignas(lanes<E> * alignof(E)) Vector {
  using Word = std::conditional_t<packs_into_16_bytes<E> && (sizeof(E) < 4), std::uint32_t, E>;
  static constexpr int lanes_per_word = int(sizeof(Word) / sizeof(E));

  __device__ E get(int lane) const {
    if constexpr (lanes_per_word == 1)
      return word[lane];
    else
      return E(word[lane / lanes_per_word] >> shift(lane));
  }
  __device__ void set(int lane, E value) {
    if constexpr (lanes_per_word == 1) {
      word[lane] = value;
    } else {
      constexpr Word mask = (Word(1) << (8 * sizeof(E))) - 1;
      Word& w = word[lane / lanes_per_word];
      w = (w & ~(mask << shift(lane))) | (Word(value) << shift(lane));
    }
  }

  Word word[lanes<E> / lanes_per_word];

 private:
  __device__ static int shift(int lane) { return 8 * int(sizeof(E)) * (lane % lanes_per_word); }
};

template <class E>
constexpr bool moves_16_bytes = alignof(Vector<E>) == 16;

// A run of `length` consecutive elements in global memory (a row segment of a tile, or a band's
// contiguous slab), moved in slots of lanes<E> elements, one slot per thread. Slot s holds the
// run's elements (head + lanes * s + lane) mod length, where head is the number of elements
// before the first 16-byte boundary: each slot that does not wrap past the end is one aligned
// 16-byte access wherever the run starts, and the elements around the two ends (one slot when
// length is a multiple of lanes, at most two otherwise) are moved lane by lane. Without this, a
// row pitch that is not a multiple of 16 bytes (4097 x 4099 floats) would cost every access its
// width.
template <class E>  // E or const E
struct Run {
  using Element = std::remove_const_t<E>;
  static constexpr int width = lanes<Element>;

  __device__ Run(E* first, int length)
      : first(first), length(length), head(rotation(first, length)) {}

  __device__ int slots() const { return (length + width - 1) / width; }
  // The slot is one aligned 16-byte access.
  __device__ bool whole(int slot) const { return head + width * (slot + 1) <= length; }
  // The lane holds an element (only the last slot has empty lanes, when lanes does not divide
  // length).
  __device__ bool holds(int slot, int lane) const { return width * slot + lane < length; }
  // Index in the run of the lane's element; head <= length keeps it below 2 x length.
  __device__ int position(int slot, int lane) const {
    const int p = head + width * slot + lane;
    return p < length ? p : p - length;
  }

  E* first;
  int length;
  int head;

 private:
  __device__ static int rotation(E* first, int length) {
    const int misaligned = int(reinterpret_cast<std::uintptr_t>(first) / sizeof(Element) % width);
    return misaligned == 0 ? 0 : min(width - misaligned, length);
  }
};

template <class E>
__device__ Vector<E> load_slot(const Run<const E>& run, int slot) {
  if (run.whole(slot))
    return *reinterpret_cast<const Vector<E>*>(run.first + run.head + Run<const E>::width * slot);
  Vector<E> values{};
#pragma unroll
  for (int lane = 0; lane < lanes<E>; ++lane)
    if (run.holds(slot, lane)) values.set(lane, run.first[run.position(slot, lane)]);
  return values;
}

template <class E>
__device__ void store_slot(const Run<E>& run, int slot, const Vector<E>& values) {
  if (run.whole(slot)) {
    *reinterpret_cast<Vector<E>*>(run.first + run.head + Run<E>::width * slot) = values;
    return;
  }
#pragma unroll
  for (int lane = 0; lane < lanes<E>; ++lane)
    if (run.holds(slot, lane)) run.first[run.position(slot, lane)] = values.get(lane);
}

// ---- Square tiles -------------------------------------------------------------------------

// Side of the square tile, in elements: 64 bytes of every tile per thread for 1- and 16-byte
// elements (32 for 2-byte ones, 128 for unaligned 8-byte ones), which with 4-5 resident blocks
// per SM keeps well over the ~30 KB per SM in flight that HBM latency asks for.
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

// Full tile: thread t owns slot t % slots_per_row of every (256 / slots_per_row)-th row, so a
// warp reads whole row segments. All of a thread's loads are issued before the first lands in
// shared memory: 64 bytes in flight per thread for 1- and 16-byte elements, 32 for 2-byte ones.
// Unaligned elements would sit in registers byte by byte, so they go one row at a time.
template <class E>
__device__ void load_full_tile(Tile<E>& tile, const E* __restrict__ source, std::int64_t cols) {
  constexpr int side = tile_side<E>(), slots_per_row = side / lanes<E>;
  constexpr int rows_per_pass = transpose_threads / slots_per_row, passes = side / rows_per_pass;
  constexpr int batch = moves_16_bytes<E> ? passes : 1;
  const int slot = int(threadIdx.x) % slots_per_row, first_row = int(threadIdx.x) / slots_per_row;
#pragma unroll
  for (int pass = 0; pass < passes; pass += batch) {
    Vector<E> values[batch];
#pragma unroll
    for (int k = 0; k < batch; ++k) {
      const int row = first_row + (pass + k) * rows_per_pass;
      values[k] = load_slot(Run<const E>(source + row * cols, side), slot);
    }
#pragma unroll
    for (int k = 0; k < batch; ++k) {
      const int row = first_row + (pass + k) * rows_per_pass;
      const Run<const E> run(source + row * cols, side);
#pragma unroll
      for (int lane = 0; lane < lanes<E>; ++lane)
        tile[row][run.position(slot, lane)] = values[k].get(lane);
    }
  }
}

// The output row of tile column c is a run too: its slots gather lanes<E> elements down the
// tile column (2-way bank conflicts for 4-byte lanes, 4-way at some pitches).
template <class E>
__device__ void store_full_tile(const Tile<E>& tile, E* __restrict__ target, std::int64_t rows) {
  constexpr int side = tile_side<E>(), slots_per_row = side / lanes<E>;
  constexpr int columns_per_pass = transpose_threads / slots_per_row;
  const int slot = int(threadIdx.x) % slots_per_row,
            first_column = int(threadIdx.x) / slots_per_row;
#pragma unroll
  for (int column = first_column; column < side; column += columns_per_pass) {
    const Run<E> run(target + column * rows, side);
    Vector<E> values{};
#pragma unroll
    for (int lane = 0; lane < lanes<E>; ++lane)
      values.set(lane, tile[run.position(slot, lane)][column]);
    store_slot(run, slot, values);
  }
}

// Edge tile of tile_rows x tile_cols valid elements: the valid elements are numbered row by row
// for the reads and column by column for the writes, so no thread idles on padding. Each thread
// starts at element t and steps by 256 elements, carrying its (row, column) instead of dividing.
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

// One tile per block iteration, tiles numbered column-major (down the input first); the loop
// only matters beyond 2^31 - 1 tiles.
template <class E>
__global__ void __launch_bounds__(transpose_threads,
                                  detail::min_blocks_per_sm(transpose_threads,
                                                            resident_blocks<E>()))
    transpose_tiles(const E* __restrict__ in, E* __restrict__ out, std::int64_t rows,
                    std::int64_t cols, std::int64_t tiles_down, std::int64_t tiles) {
  constexpr int side = tile_side<E>();
  __shared__ Tile<E> tile;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t row0 = t % tiles_down * side, col0 = t / tiles_down * side;
    const int tile_rows = int(rows - row0 < side ? rows - row0 : side);
    const int tile_cols = int(cols - col0 < side ? cols - col0 : side);
    const E* source = in + row0 * cols + col0;
    E* target = out + col0 * rows + row0;
    if (tile_rows == side && tile_cols == side) {
      load_full_tile<E>(tile, source, cols);
      __syncthreads();
      store_full_tile<E>(tile, target, rows);
    } else {
      load_edge_tile<E>(tile, source, cols, tile_rows, tile_cols);
      __syncthreads();
      store_edge_tile<E>(tile, target, rows, tile_rows, tile_cols);
    }
    __syncthreads();  // the next iteration overwrites the tile
  }
}

template <class E>
void launch_tiles(const E* in, E* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  constexpr int side = tile_side<E>();
  const std::int64_t tiles_down = (rows + side - 1) / side;
  const std::int64_t tiles = (cols + side - 1) / side * tiles_down;
  const auto blocks = unsigned(std::min<std::int64_t>(tiles, INT_MAX));
  transpose_tiles<E>
      <<<blocks, transpose_threads, 0, stream>>>(in, out, rows, cols, tiles_down, tiles);
  detail::check_launch("transpose", "transpose_tiles");
}

// ---- Bands --------------------------------------------------------------------------------
//
// A band's block holds `count` rows (the short side) of a slab of `length` elements of the
// long side in shared memory, tile rows `pitch` elements apart. On one side of the transpose
// the slab is `count` runs `stride` elements apart in global memory (the rows of the short
// side); on the other it is one contiguous chunk of length x count elements, group l of `count`
// elements being column l of the tile.

// 32 KB of slab per block, 128 bytes (8 slots) per thread in flight while a block loads.
constexpr int band_bytes = 32768;
constexpr int band_slots_per_thread = band_bytes / 16 / transpose_threads;

template <class E>
constexpr int band_elements = band_bytes / int(sizeof(E));

// Registers sized for 4 blocks per SM (64 per thread; 128 KB per SM in flight), 2 for bytes,
// whose 16 lanes per slot take more to assemble (104 registers; 64 KB in flight).
template <class E>
constexpr int band_resident_blocks() {
  return sizeof(E) == 1 ? 2 : 4;
}

// Slots of runs of slots_per_run slots each, numbered run by run: thread t takes slots t,
// t + 256, ..., tracked as (run, slot) without dividing at each step.
struct SlotCursor {
  __device__ explicit SlotCursor(int slots_per_run)
      : run(int(threadIdx.x) / slots_per_run),
        slot(int(threadIdx.x) % slots_per_run),
        runs_per_step(transpose_threads / slots_per_run),
        slots_per_step(transpose_threads % slots_per_run),
        slots_per_run(slots_per_run) {}
  __device__ void step() {
    run += runs_per_step;
    slot += slots_per_step;
    if (slot >= slots_per_run) slot -= slots_per_run, ++run;
  }
  int run, slot;
  int runs_per_step, slots_per_step, slots_per_run;
};

// Calls visit(lane, tile_row, tile_column) for each element of a chunk's slot. Chunk element k
// is tile element (k % count, k / count); whole slots divide once and step, the one or two
// slots around the chunk's ends divide per lane.
template <class R, class Visit>
__device__ void visit_chunk_slot(const R& chunk, int slot, int count, Visit visit) {
  constexpr int width = R::width;
  if (chunk.whole(slot)) {
    const int first = chunk.position(slot, 0);
    int row = first % count, column = first / count;
#pragma unroll
    for (int lane = 0; lane < width; ++lane) {
      visit(lane, row, column);
      if (++row == count) row = 0, ++column;
    }
    return;
  }
#pragma unroll
  for (int lane = 0; lane < width; ++lane) {
    if (!chunk.holds(slot, lane)) continue;
    const int k = chunk.position(slot, lane);
    visit(lane, k % count, k / count);
  }
}

// `count` runs `stride` apart -> tile rows. All of a thread's loads (at most 8 slots) are issued
// before the first lands in shared memory.
template <class E>
__device__ void runs_to_tile(E* tile, int pitch, const E* first, std::int64_t stride, int count,
                             int length) {
  const int slots_per_run = (length + lanes<E> - 1) / lanes<E>;
  Vector<E> values[band_slots_per_thread];
  SlotCursor cursor(slots_per_run);
#pragma unroll
  for (int k = 0; k < band_slots_per_thread; ++k, cursor.step())
    if (cursor.run < count)
      values[k] = load_slot(Run<const E>(first + cursor.run * stride, length), cursor.slot);
  cursor = SlotCursor(slots_per_run);
#pragma unroll
  for (int k = 0; k < band_slots_per_thread; ++k, cursor.step()) {
    if (cursor.run >= count) break;
    const Run<const E> run(first + cursor.run * stride, length);
#pragma unroll
    for (int lane = 0; lane < lanes<E>; ++lane)
      if (run.holds(cursor.slot, lane))
        tile[cursor.run * pitch + run.position(cursor.slot, lane)] = values[k].get(lane);
  }
}

template <class E>
__device__ void tile_to_runs(const E* tile, int pitch, E* first, std::int64_t stride, int count,
                             int length) {
  const int slots_per_run = (length + lanes<E> - 1) / lanes<E>;
  for (SlotCursor cursor(slots_per_run); cursor.run < count; cursor.step()) {
    const Run<E> run(first + cursor.run * stride, length);
    Vector<E> values{};
#pragma unroll
    for (int lane = 0; lane < lanes<E>; ++lane)
      if (run.holds(cursor.slot, lane))
        values.set(lane, tile[cursor.run * pitch + run.position(cursor.slot, lane)]);
    store_slot(run, cursor.slot, values);
  }
}

// The contiguous chunk -> tile, loads batched as in runs_to_tile.
template <class E>
__device__ void chunk_to_tile(E* tile, int pitch, const E* first, int count, int length) {
  const Run<const E> chunk(first, count * length);
  const int slots = chunk.slots();
  Vector<E> values[band_slots_per_thread];
#pragma unroll
  for (int k = 0; k < band_slots_per_thread; ++k) {
    const int slot = int(threadIdx.x) + k * transpose_threads;
    if (slot < slots) values[k] = load_slot(chunk, slot);
  }
#pragma unroll
  for (int k = 0; k < band_slots_per_thread; ++k) {
    const int slot = int(threadIdx.x) + k * transpose_threads;
    if (slot >= slots) break;
    visit_chunk_slot(chunk, slot, count, [&](int lane, int row, int column) {
      tile[row * pitch + column] = values[k].get(lane);
    });
  }
}

template <class E>
__device__ void tile_to_chunk(const E* tile, int pitch, E* first, int count, int length) {
  const Run<E> chunk(first, count * length);
  for (int slot = int(threadIdx.x); slot < chunk.slots(); slot += transpose_threads) {
    Vector<E> values{};
    visit_chunk_slot(chunk, slot, count, [&](int lane, int row, int column) {
      values.set(lane, tile[row * pitch + column]);
    });
    store_slot(chunk, slot, values);
  }
}

// One slab per block iteration. ShortRows: in is short_side x long_side, its rows are the runs
// and the output slab is the chunk; otherwise in is long_side x short_side, the chunk is read
// and the output rows are the runs.
template <class E, bool ShortRows>
__global__ void __launch_bounds__(transpose_threads,
                                  detail::min_blocks_per_sm(transpose_threads,
                                                            band_resident_blocks<E>()))
    transpose_band(const E* __restrict__ in, E* __restrict__ out, int short_side,
                   std::int64_t long_side, int slab, int pitch, std::int64_t slabs) {
  // Room for short_side < tile_side rows of up to 2 padding elements each.
  __shared__ E tile[band_elements<E> + 2 * tile_side<E>()];
  for (std::int64_t s = blockIdx.x; s < slabs; s += gridDim.x) {
    const std::int64_t start = s * slab;
    const int length = int(long_side - start < slab ? long_side - start : slab);
    if constexpr (ShortRows) {
      runs_to_tile(tile, pitch, in + start, long_side, short_side, length);
      __syncthreads();
      tile_to_chunk(tile, pitch, out + start * short_side, short_side, length);
    } else {
      chunk_to_tile(tile, pitch, in + start * short_side, short_side, length);
      __syncthreads();
      tile_to_runs(tile, pitch, out + start, long_side, short_side, length);
    }
    __syncthreads();  // the next iteration overwrites the tile
  }
}

template <class E>
void launch_band(const E* in, E* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const bool short_rows = rows <= cols;
  const int short_side = int(short_rows ? rows : cols);
  const std::int64_t long_side = short_rows ? cols : rows;
  // The slab: as many whole 128-byte lines of each short-side row as fit in band_bytes (224
  // floats for 33 rows), so that with aligned rows every slab starts on a line on both sides.
  constexpr int line = 128 / int(sizeof(E));
  const int slab = band_elements<E> / short_side / line * line;
  // The chunk side reads (writes) tile columns, lanes<E> consecutive rows per thread. Pitches
  // odd for an even count of rows and 2 mod 4 for an odd one keep those accesses within 4-way
  // bank conflicts (2.5 on average) for every count and element size of 2 to 16 bytes, 7.5 at
  // worst for bytes, against 16-24 way unpadded (counted by simulating every count).
  const int pitch = slab + 1 + short_side % 2;
  const std::int64_t slabs = (long_side + slab - 1) / slab;
  const auto blocks = unsigned(std::min<std::int64_t>(slabs, INT_MAX));
  if (short_rows)
    transpose_band<E, true><<<blocks, transpose_threads, 0, stream>>>(
        in, out, short_side, long_side, slab, pitch, slabs);
  else
    transpose_band<E, false><<<blocks, transpose_threads, 0, stream>>>(
        in, out, short_side, long_side, slab, pitch, slabs);
  detail::check_launch("transpose", "transpose_band");
}

bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

// Whether the input's and the output's rows both start on 32-byte sector boundaries.
template <class E>
bool sector_aligned_pitches(std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t sector = 32;
  return cols * std::int64_t(sizeof(E)) % sector == 0 &&
         rows * std::int64_t(sizeof(E)) % sector == 0;
}

// Shapes with a side shorter than a tile take the band kernel; the others take the scalar tiles
// (aligned 4- and 8-byte elements) or the packet tiles. Unaligned elements, which move one at a
// time anyway, always take the packet tiles.
template <class E>
void launch(const void* in, void* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  const auto* source = static_cast<const E*>(in);
  auto* target = static_cast<E*>(out);
  if constexpr (moves_16_bytes<E>) {
    if (std::min(rows, cols) < tile_side<E>())
      return launch_band<E>(source, target, rows, cols, stream);
  }
  if constexpr (std::is_same_v<E, std::uint32_t>) {
    using scalar_transpose::TileOrder;
    if (sector_aligned_pitches<E>(rows, cols))
      scalar_transpose::launch_scalar_tiles<E, 64, 64, transpose_threads, TileOrder::column_major>(
          source, target, rows, cols, stream, "transpose");
    else
      scalar_transpose::launch_scalar_tiles<E, 128, 32, transpose_threads, TileOrder::column_major>(
          source, target, rows, cols, stream, "transpose");
  } else if constexpr (std::is_same_v<E, unsigned long long>) {
    using scalar_transpose::TileOrder;
    scalar_transpose::launch_scalar_tiles<E, 64, 64, transpose_threads, TileOrder::column_major>(
        source, target, rows, cols, stream, "transpose");
  } else {
    launch_tiles<E>(source, target, rows, cols, stream);
  }
}

}  // namespace

namespace detail {

void transpose_bytes(const void* in, std::int64_t rows, std::int64_t cols,
                     std::size_t element_bytes, void* out, cudaStream_t stream) {
  const char* op = "transpose";
  require(element_bytes == 1 || element_bytes == 2 || element_bytes == 4 || element_bytes == 8 ||
              element_bytes == 16,
          op, "T",
          "elements must have 1, 2, 4, 8 or 16 bytes, got " + std::to_string(element_bytes));
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
    ROOFLAB_CUDA(op, "copying " + detail::describe_bytes(bytes) + " (a single row or column)",
                 cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const bool aligned = aligned_to(in, element_bytes) && aligned_to(out, element_bytes);
  switch (element_bytes) {
    case 1: return launch<std::uint8_t>(in, out, rows, cols, stream);
    case 2:
      return aligned ? launch<std::uint16_t>(in, out, rows, cols, stream)
                     : launch<UnalignedElement<2>>(in, out, rows, cols, stream);
    case 4:
      return aligned ? launch<std::uint32_t>(in, out, rows, cols, stream)
                     : launch<UnalignedElement<4>>(in, out, rows, cols, stream);
    case 8:
      return aligned ? launch<unsigned long long>(in, out, rows, cols, stream)
                     : launch<UnalignedElement<8>>(in, out, rows, cols, stream);
    default:
      return aligned ? launch<uint4>(in, out, rows, cols, stream)
                     : launch<UnalignedElement<16>>(in, out, rows, cols, stream);
  }
}

}  // namespace detail
}  // namespace rooflab
