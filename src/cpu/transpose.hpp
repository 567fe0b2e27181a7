#pragma once
// CPU side of the transpose: the CPU loop that stands in for the memory-basics lab's (not shown
// there), the careful tiled baselines and the element-exact check.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/parallel.hpp"

namespace rooflab::cpu {

// The CPU baseline: one core, the textbook double loop (reads along rows, writes down columns).
// in: rows x cols row-major, out: cols x rows row-major; elements of 1, 2, 4, 8 or 16 bytes.
void transpose_serial(const void* in, std::int64_t rows, std::int64_t cols,
                      std::size_t element_bytes, void* out);

// The careful CPU baseline: the same copy in square tiles small enough that a tile's source rows
// and target rows both stay in L1 while it is copied, so every cache line fetched is used whole.
// One core, or every core taking a band of tile rows.
void transpose_tiled(const void* in, std::int64_t rows, std::int64_t cols,
                     std::size_t element_bytes, void* out, bool every_core);

struct TransposeMismatches {
  std::int64_t count = 0;   // output elements that differ from the input element they must hold
  std::int64_t first = -1;  // the first of them, as an index into out
};

// Compares out (cols x rows) with the transpose of an input given by input_byte(b), the b-th
// byte of the row-major input, so that the input need not be copied back from the device.
template <class InputByte>
TransposeMismatches compare_transposed(const unsigned char* out, std::int64_t rows,
                                       std::int64_t cols, std::size_t element_bytes,
                                       InputByte input_byte) {
  std::vector<std::int64_t> counts(cpu_threads(), 0), firsts(cpu_threads(), -1);
  parallel_ranges(rows * cols, [&](std::int64_t begin, std::int64_t end, int part) {
    for (std::int64_t o = begin; o < end; ++o) {
      const std::int64_t i = o % rows, j = o / rows;  // out[j][i] must be in[i][j]
      const std::int64_t source = (i * cols + j) * std::int64_t(element_bytes);
      for (std::size_t b = 0; b < element_bytes; ++b) {
        if (out[o * std::int64_t(element_bytes) + std::int64_t(b)] !=
            input_byte(source + std::int64_t(b))) {
          if (firsts[part] < 0) firsts[part] = o;
          ++counts[part];
          break;
        }
      }
    }
  });
  TransposeMismatches total;
  for (std::size_t part = 0; part < counts.size(); ++part) {
    total.count += counts[part];
    if (firsts[part] >= 0 && (total.first < 0 || firsts[part] < total.first))
      total.first = firsts[part];
  }
  return total;
}

}  // namespace rooflab::cpu
