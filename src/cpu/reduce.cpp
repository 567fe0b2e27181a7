#include "cpu/reduce.hpp"

#include <algorithm>

namespace rooflab::cpu {

template <class T>
T sum_serial(const T* in, std::int64_t n) {
  SumAccumulator<T> sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += SumAccumulator<T>(in[i]);
  return T(sum);
}

template <class T>
T sum_parallel(const T* in, std::int64_t n) {
  return row_sums_of<T>(1, n, [in](std::int64_t, std::int64_t i) { return in[i]; })[0];
}

template <class T>
void row_sums_parallel(const T* in, std::int64_t rows, std::int64_t cols, T* out) {
  const std::vector<T> sums = row_sums_of<T>(
      rows, cols, [in, cols](std::int64_t r, std::int64_t c) { return in[r * cols + c]; });
  std::copy(sums.begin(), sums.end(), out);
}

#define ROOFLAB_CPU_SUMS(T)                           \
  template T sum_serial<T>(const T*, std::int64_t);   \
  template T sum_parallel<T>(const T*, std::int64_t); \
  template void row_sums_parallel<T>(const T*, std::int64_t, std::int64_t, T*);
ROOFLAB_CPU_SUMS(float)
ROOFLAB_CPU_SUMS(double)
ROOFLAB_CPU_SUMS(std::int32_t)
ROOFLAB_CPU_SUMS(std::int64_t)
ROOFLAB_CPU_SUMS(std::uint32_t)

}  // namespace rooflab::cpu
