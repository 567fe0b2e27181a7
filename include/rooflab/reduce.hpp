#pragma once
// Reductions. Device pointers; asynchronous on `stream`. Instantiated in the library for T in
// {float, double, int32_t, int64_t, uint32_t}, in any spelling (long long, unsigned, ...), and Op
// in {Sum, Min, Max}; from plain C++ anything else is a compile-time error. Custom operators and
// types through rooflab.cuh. Results are bitwise reproducible: the same input on the same GPU
// gives the same bits on every run (no floating-point atomics on the result path; the summation
// tree depends only on the sizes, the alignment and the device).
//  - Integer sums wrap modulo 2^bits (rooflab::Sum).
//  - Floating-point sums are tree sums: an element passes through at most n / (elements the
//    whole grid loads per step) + 32 additions (about 280 for 2^28 floats on an H100), so the
//    error is at most that many unit roundoffs times sum|x| (docs/reduce.md derives the bound).
//  - `in` may start anywhere its element type may (16-byte vectors are used on the aligned part,
//    scalars on the head and tail); `out` must not overlap `in`.
//  - The first call on a stream allocates a few KiB of scratch for that stream, kept for later
//    calls, which then need no allocation, memset or second launch. At most 64 streams per device
//    keep scratch: the 65th takes over the slot of the least recently used stream (after that
//    stream's last use, through an event), so destroyed streams hold nothing for long. Inside a
//    stream capture the graph gets scratch of its own (allocation and memset nodes).
//  - The input is read once, through the read-only path (`__ldg`) where the type allows, with no
//    L2 cache-policy hint: an input larger than L2 displaces what L2 held, as any stream does.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "rooflab/detail/element_type.hpp"
#include "rooflab/operators.hpp"

namespace rooflab {

namespace detail {

// The implementations, for the element type a caller's type maps to (element_type.hpp). The
// library compiles them for float, double, int32_t, int64_t and uint32_t with Sum, Min and Max
// (src/reduce/reduce.cu); rooflab.cuh defines them for every type and operator.
template <class T, class Op>
void reduce_elements(const T* in, std::int64_t n, T* out, Op op, cudaStream_t stream);
template <class T, class Op>
void reduce_rows_elements(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op,
                          cudaStream_t stream);

template <class T, class Op>
inline constexpr bool library_reduces_v =
    is_one_of_v<T, float, double, std::int32_t, std::int64_t, std::uint32_t>&&
        is_one_of_v<Op, Sum, Min, Max>;

// A plain C++ caller can only use what the library compiled: anything else is a compile-time
// error here rather than a link error. nvcc callers may have included rooflab.cuh, whose templates
// take any type and operator, so the check is left to the linker there.
template <class T, class Op>
constexpr void require_library_reduces() {
#if !defined(__CUDACC__)
  static_assert(library_reduces_v<T, Op>,
                "rooflab::reduce and rooflab::reduce_rows from plain C++ take float, double and "
                "32- or 64-bit signed or 32-bit unsigned integers (int, long, long long, "
                "std::int64_t, unsigned ...) with rooflab::Sum, Min or Max; other element types "
                "and operators need rooflab.cuh and nvcc");
#endif
}

}  // namespace detail

// *out = op over in[0, n), n >= 1 (beyond 2^31 too). Throws rooflab::Error on n < 1, null or
// misaligned pointers.
template <class T, class Op = Sum>
void reduce(const T* in, std::int64_t n, T* out, Op op = {}, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  detail::require_library_reduces<Element, Op>();
  detail::reduce_elements(reinterpret_cast<const Element*>(in), n, reinterpret_cast<Element*>(out),
                          op, stream);
}

// in: rows x cols, row-major; out[r] = op over row r. Any rows >= 1, cols >= 1 (rows * cols may
// exceed 2^31). Throws rooflab::Error on rows or cols < 1, null or misaligned pointers.
template <class T, class Op = Sum>
void reduce_rows(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op = {},
                 cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  detail::require_library_reduces<Element, Op>();
  detail::reduce_rows_elements(reinterpret_cast<const Element*>(in), rows, cols,
                               reinterpret_cast<Element*>(out), op, stream);
}

}  // namespace rooflab
