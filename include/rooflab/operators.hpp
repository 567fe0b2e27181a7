#pragma once
// Reduction operators of the public API. Each has identity<T>() and operator()(T, T), callable on
// host and device; a custom operator for rooflab.cuh's templates has the same two members and
// must be associative (the GPU combines in a tree, not left to right).
#if defined(__CUDACC__)
#include <cuda/std/limits>
#define ROOFLAB_OPERATOR_QUALIFIERS __host__ __device__
namespace rooflab::detail {
namespace limits = ::cuda::std;
}
#else
#include <limits>
#define ROOFLAB_OPERATOR_QUALIFIERS
namespace rooflab::detail {
namespace limits = ::std;
}
#endif

namespace rooflab {

struct Sum {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() { return T(0); }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const { return a + b; }
};

struct Min {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() {
    return detail::limits::numeric_limits<T>::has_infinity ? detail::limits::numeric_limits<T>::infinity()
                                                : detail::limits::numeric_limits<T>::max();
  }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const { return b < a ? b : a; }
};

struct Max {
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS static constexpr T identity() {
    return detail::limits::numeric_limits<T>::has_infinity ? -detail::limits::numeric_limits<T>::infinity()
                                                : detail::limits::numeric_limits<T>::lowest();
  }
  template <class T>
  ROOFLAB_OPERATOR_QUALIFIERS constexpr T operator()(T a, T b) const { return a < b ? b : a; }
};

}  // namespace rooflab
