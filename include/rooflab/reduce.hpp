#pragma once
// Reductions. Device pointers; asynchronous on `stream`. Instantiated in the library for T in
// {float, double, int32_t, int64_t, uint32_t} and Op in {Sum, Min, Max}; custom operators and
// types through rooflab.cuh. Results are bitwise reproducible: the same input on the same GPU
// gives the same bits on every run (no floating-point atomics on the result path).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "rooflab/operators.hpp"

namespace rooflab {

// *out = op over in[0, n). n >= 1; in may be unaligned. Throws rooflab::Error on n < 1 or null
// pointers.
template <class T, class Op = Sum>
void reduce(const T* in, std::int64_t n, T* out, Op op = {}, cudaStream_t stream = nullptr);

// in: rows x cols, row-major; out[r] = op over row r. Any rows >= 1, cols >= 1.
template <class T, class Op = Sum>
void reduce_rows(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op = {},
                 cudaStream_t stream = nullptr);

}  // namespace rooflab
