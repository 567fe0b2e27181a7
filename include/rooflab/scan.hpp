#pragma once
// Prefix sums. Device pointers; asynchronous on `stream`. Instantiated for float, double, int32_t,
// int64_t, uint32_t.
//
// - One pass over the data (n elements read, n written), with stream-ordered temporary storage of
//   about 8 bytes per 4096 elements (per 1024 for 8-byte types), zeroed by one memset.
// - in == out is allowed (in place); otherwise the two ranges must not overlap.
// - Any n >= 0 (n = 0 does nothing, whatever the pointers), any element-aligned pointers.
// - Deterministic: the same input at the same addresses gives the same bits on every run and every
//   GPU, floating point included (the partial sums between tiles are combined in a fixed tree).
// - Integer sums wrap modulo 2^bits, as two's complement.
// - Floating-point results err from the exact prefix sum by at most gamma(D) * sum_j |in[j]| over
//   the summed elements, gamma(D) = D u / (1 - D u), u the unit roundoff, D <= 64 (docs/scan.md).
// - Throws rooflab::Error naming the argument for n < 0, a null pointer when n > 0, a pointer not
//   aligned to its element size, or out overlapping in without being equal to it.
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
