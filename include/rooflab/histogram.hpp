#pragma once
// Histograms with evenly spaced bins. Device pointers; asynchronous on `stream`.
// Instantiated for uint8_t, int32_t, float, double, in any spelling (unsigned char, int, ...);
// other types are a compile-time error.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "rooflab/detail/element_type.hpp"

namespace rooflab {

namespace detail {

// The implementation, for the element type a caller's type maps to (element_type.hpp); compiled
// for uint8_t, int32_t, float and double (src/histogram/histogram.cu).
template <class T>
void histogram_even_elements(const T* in, std::int64_t n, int bins, double lo, double hi,
                             std::uint64_t* counts, cudaStream_t stream);

}  // namespace detail

// counts[b], b in [0, bins), is overwritten. A value v with lo <= v < hi falls into bin
// min(bins - 1, floor((double(v) - lo) * bins / (hi - lo))), evaluated in double precision;
// values outside [lo, hi) and NaN are not counted. lo and hi are doubles so that every value of
// T can be bounded (uint8 data: lo = 0, hi = 256). 1 <= bins <= 2^24; lo < hi, both finite, and
// (hi - lo) * bins and bins / (hi - lo) finite, so that the rule never overflows. n >= 0 (64-bit;
// n = 0 gives all counts zero); in may start at any address aligned to T.
// Throws rooflab::Error naming the argument on bad input.
template <class T>
void histogram_even(const T* in, std::int64_t n, int bins, double lo, double hi,
                    std::uint64_t* counts, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(detail::is_one_of_v<Element, std::uint8_t, std::int32_t, float, double>,
                "rooflab::histogram_even takes uint8 (unsigned char), int32 (int), float and "
                "double values");
  detail::histogram_even_elements(reinterpret_cast<const Element*>(in), n, bins, lo, hi, counts,
                                  stream);
}

}  // namespace rooflab
