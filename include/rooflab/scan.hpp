#pragma once
// Prefix sums. Device pointers; asynchronous on `stream`. Instantiated for float, double, int32_t,
// int64_t, uint32_t, in any spelling (long long, unsigned, ...); other types are a compile-time
// error.
//
// - One pass over the data (n elements read, n written), with stream-ordered temporary storage of
//   about 8 bytes per 8192 elements (per 2048 for 8-byte types), zeroed by one memset.
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

#include "rooflab/detail/element_type.hpp"

namespace rooflab {

namespace detail {

// The implementations, for the element type a caller's type maps to (element_type.hpp); compiled
// for float, double, int32_t, int64_t and uint32_t (src/scan/scan.cu).
template <class T>
void inclusive_scan_elements(const T* in, T* out, std::int64_t n, cudaStream_t stream);
template <class T>
void exclusive_scan_elements(const T* in, T* out, std::int64_t n, cudaStream_t stream);
// The same scans continued from `carry`, the end of a scan of what comes before `in`: out[i] =
// carry + (the scan above)[i], in the same single pass. The sharded scans of rooflab::dist
// (distributed.hpp) call them with the totals of the earlier ranks' shards.
template <class T>
void inclusive_scan_elements_after(const T* in, T* out, std::int64_t n, T carry,
                                   cudaStream_t stream);
template <class T>
void exclusive_scan_elements_after(const T* in, T* out, std::int64_t n, T carry,
                                   cudaStream_t stream);

template <class T>
constexpr void require_library_scans() {
  static_assert(is_one_of_v<T, float, double, std::int32_t, std::int64_t, std::uint32_t>,
                "rooflab::inclusive_scan and rooflab::exclusive_scan take float, double and 32- or "
                "64-bit signed or 32-bit unsigned integers (int, long, long long, std::int64_t, "
                "unsigned ...)");
}

}  // namespace detail

// out[i] = in[0] + ... + in[i].
template <class T>
void inclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  detail::require_library_scans<Element>();
  detail::inclusive_scan_elements(reinterpret_cast<const Element*>(in),
                                  reinterpret_cast<Element*>(out), n, stream);
}

// out[0] = 0, out[i] = in[0] + ... + in[i - 1].
template <class T>
void exclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  detail::require_library_scans<Element>();
  detail::exclusive_scan_elements(reinterpret_cast<const Element*>(in),
                                  reinterpret_cast<Element*>(out), n, stream);
}

}  // namespace rooflab
