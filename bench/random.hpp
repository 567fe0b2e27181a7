#pragma once
// Device fills of the counter-based random streams (src/core/random_stream.hpp), asynchronous on
// `stream`; the host regenerates any element with the same functions.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/random_stream.hpp"

namespace rooflab::bench {

// Device fills, asynchronous on `stream`. Floating types: random_float / random_double.
void fill_random(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);
void fill_random(double* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);
// Integer types: random_integer in [lo, hi].
template <class T>
void fill_random_integers(T* device, std::int64_t n, std::uint64_t seed, std::int64_t lo,
                          std::int64_t hi, cudaStream_t stream);

}  // namespace rooflab::bench
