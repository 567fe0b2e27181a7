#pragma once
// Reduction operators of the public API. Each has identity<T>() and operator()(T, T), callable on
// host and device; a custom operator for rooflab.cuh's templates has the same two members and
// must be associative and commutative (the GPU combines in a tree whose shape and order depend on
// the launch, not left to right).
#if defined(__CUDACC__)
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#define ROOFLAB_OPERATOR_QUALIFIERS __host__ __device__
namespace rooflab::detail {
namespace limits = ::cuda::std;
namespace traits = ::cuda::std;
}  // namespace rooflab::detail
#else
#include <limits>
#include <type_traits>
#define ROOFLAB_OPERATOR_QUALIFIERS
namespace rooflab::detail {
namespace limits = ::std;
namespace traits = ::std;
}  // namespace rooflab::detail
#endif

namespace rooflab {

// Integer sums wrap modulo 2^bits (two's complement), whatever the order of the additions: signed
// values are added as their unsigned counterparts, which is defined behaviour where a signed
// overflow would not be.
struct Sum {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() {
    return T(0);
  }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const {
    if constexpr (detail::traits::is_integral_v<T> && detail::traits::is_signed_v<T>) {
      using Unsigned = detail::traits::make_unsigned_t<T>;
      return T(Unsigned(a) + Unsigned(b));
    } else {
      return a + b;
    }
  }
};

// Min and Max propagate NaN, as NumPy's and PyTorch's min and max do: a NaN operand is the result
// (b != b holds only for a NaN, and is false at compile time for integers), so a NaN anywhere in
// the input is the result whatever the order of combination.
struct Min {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() {
    return detail::limits::numeric_limits<T>::has_infinity
               ? detail::limits::numeric_limits<T>::infinity()
               : detail::limits::numeric_limits<T>::max();
  }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const {
    return b < a || b != b ? b : a;
  }
};

struct Max {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() {
    return detail::limits::numeric_limits<T>::has_infinity
               ? -detail::limits::numeric_limits<T>::infinity()
               : detail::limits::numeric_limits<T>::lowest();
  }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const {
    return a < b || b != b ? b : a;
  }
};

}  // namespace rooflab
