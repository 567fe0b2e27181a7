#include "cpu/transpose.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace rooflab::cpu {
namespace {

template <std::size_t Bytes>
void transpose_elements(const unsigned char* in, std::int64_t rows, std::int64_t cols,
                        unsigned char* out) {
  using Element = std::array<unsigned char, Bytes>;  // a fixed-size copy the compiler inlines
  const auto* source = reinterpret_cast<const Element*>(in);
  auto* target = reinterpret_cast<Element*>(out);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) target[j * rows + i] = source[i * cols + j];
}

// 32 x 32 elements a tile: at most 16 KB a side (16-byte elements), so that the tile's source and
// target lines stay in a core's L1 until every element of them is used.
constexpr std::int64_t tile = 32;

template <std::size_t Bytes>
void transpose_tiles(const unsigned char* in, std::int64_t rows, std::int64_t cols,
                     std::int64_t first_row, std::int64_t end_row, unsigned char* out) {
  using Element = std::array<unsigned char, Bytes>;
  const auto* source = reinterpret_cast<const Element*>(in);
  auto* target = reinterpret_cast<Element*>(out);
  for (std::int64_t i0 = first_row; i0 < end_row; i0 += tile)
    for (std::int64_t j0 = 0; j0 < cols; j0 += tile) {
      const std::int64_t i_end = std::min(i0 + tile, end_row), j_end = std::min(j0 + tile, cols);
      for (std::int64_t i = i0; i < i_end; ++i)
        for (std::int64_t j = j0; j < j_end; ++j) target[j * rows + i] = source[i * cols + j];
    }
}

template <std::size_t Bytes>
void transpose_tiled_elements(const unsigned char* in, std::int64_t rows, std::int64_t cols,
                              unsigned char* out, bool every_core) {
  if (!every_core) return transpose_tiles<Bytes>(in, rows, cols, 0, rows, out);
  // Bands of whole tile rows: each core reads its own rows and writes its own range of every
  // output row.
  const std::int64_t tile_rows = (rows + tile - 1) / tile;
  parallel_ranges(
      tile_rows,
      [&](std::int64_t begin, std::int64_t end, int) {
        transpose_tiles<Bytes>(in, rows, cols, begin * tile, std::min(rows, end * tile), out);
      },
      std::max<std::int64_t>(1,
                             (std::int64_t(1) << 16) / (tile * std::max<std::int64_t>(cols, 1))));
}

}  // namespace

void transpose_tiled(const void* in, std::int64_t rows, std::int64_t cols,
                     std::size_t element_bytes, void* out, bool every_core) {
  const auto* source = static_cast<const unsigned char*>(in);
  auto* target = static_cast<unsigned char*>(out);
  switch (element_bytes) {
    case 1: return transpose_tiled_elements<1>(source, rows, cols, target, every_core);
    case 2: return transpose_tiled_elements<2>(source, rows, cols, target, every_core);
    case 4: return transpose_tiled_elements<4>(source, rows, cols, target, every_core);
    case 8: return transpose_tiled_elements<8>(source, rows, cols, target, every_core);
    case 16: return transpose_tiled_elements<16>(source, rows, cols, target, every_core);
  }
  throw std::invalid_argument("transpose_tiled: element size " + std::to_string(element_bytes));
}

void transpose_serial(const void* in, std::int64_t rows, std::int64_t cols,
                      std::size_t element_bytes, void* out) {
  const auto* source = static_cast<const unsigned char*>(in);
  auto* target = static_cast<unsigned char*>(out);
  switch (element_bytes) {
    case 1: return transpose_elements<1>(source, rows, cols, target);
    case 2: return transpose_elements<2>(source, rows, cols, target);
    case 4: return transpose_elements<4>(source, rows, cols, target);
    case 8: return transpose_elements<8>(source, rows, cols, target);
    case 16: return transpose_elements<16>(source, rows, cols, target);
  }
  throw std::invalid_argument("transpose_serial: element size " + std::to_string(element_bytes));
}

}  // namespace rooflab::cpu
