#pragma once
// Matrix transpose. Device pointers; asynchronous on `stream`.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rooflab {

namespace detail {
// The library's entry point: a transpose only moves bytes, so one implementation per element
// size serves every type of that size.
void transpose_bytes(const void* in, std::int64_t rows, std::int64_t cols,
                     std::size_t element_bytes, void* out, cudaStream_t stream);
}  // namespace detail

// in: rows x cols row-major; out: cols x rows row-major. Any trivially copyable T of 1, 2, 4, 8
// or 16 bytes (uint8_t, uint16_t, float, int32_t, double, int64_t, float4, double2, your own
// structs ...), usable from plain C++. rows >= 1 and cols >= 1; 1 x N and N x 1 are copies.
// in and out must not overlap. Pointers aligned to sizeof(T) take the fast path; others (a
// 16-byte struct of floats at an 8-byte boundary, say) are still correct, only slower.
// Throws rooflab::Error on rows or cols < 1, null or overlapping pointers.
template <class T>
void transpose(const T* in, std::int64_t rows, std::int64_t cols, T* out,
               cudaStream_t stream = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>, "rooflab::transpose moves raw bytes");
  static_assert(
      sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
      "rooflab::transpose supports elements of 1, 2, 4, 8 or 16 bytes");
  detail::transpose_bytes(in, rows, cols, sizeof(T), out, stream);
}

}  // namespace rooflab
