#pragma once
// Matrix transpose. Device pointers; asynchronous on `stream`.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace rooflab {

// in: rows x cols row-major; out: cols x rows row-major. Any trivially copyable T of 1, 2, 4, 8
// or 16 bytes; instantiated for uint8_t, uint16_t, float, double, int32_t, int64_t and float4-sized
// types through rooflab.cuh.
template <class T>
void transpose(const T* in, std::int64_t rows, std::int64_t cols, T* out,
               cudaStream_t stream = nullptr);

}  // namespace rooflab
