#include "cpu/transpose.hpp"

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

}  // namespace

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
