#pragma once
// Prefix sums. Device pointers; asynchronous on `stream`; in == out allowed; deterministic.
// Instantiated for float, double, int32_t, int64_t, uint32_t.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace rooflab {

// out[i] = in[0] + ... + in[i].
template <class T>
void inclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream = nullptr);

// out[0] = 0, out[i] = in[0] + ... + in[i - 1].
template <class T>
void exclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream = nullptr);

}  // namespace rooflab
