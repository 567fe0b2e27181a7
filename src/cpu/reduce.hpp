#pragma once
// CPU references and baselines of the reductions (sums). They add up T in SumAccumulator<T>:
//  - floating types in double. Where the inputs make every partial sum exact in double (the lab's
//    inputs do), the result is the exact sum rounded once to T; otherwise the double sum is
//    within n * 2^-53 * sum|x| of the exact one, far inside any float tolerance.
//  - integer types in their unsigned counterpart, so that sums wrap modulo 2^bits, exactly as
//    rooflab::Sum does on the GPU in any order (addition modulo 2^bits is associative and
//    commutative, so every summation order gives the same bits).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"

namespace rooflab::cpu {

template <class T, bool = std::is_floating_point_v<T>>
struct SumAccumulatorOf {
  using type = double;
};
template <class T>
struct SumAccumulatorOf<T, false> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using SumAccumulator = typename SumAccumulatorOf<T>::type;

// out[r] = sum of element(r, c) over c in [0, cols), for r in [0, rows): the elements are split
// evenly over all cores whatever the shape (one long row or many short ones).
template <class T, class Element>
std::vector<T> row_sums_of(std::int64_t rows, std::int64_t cols, Element element) {
  using Accumulator = SumAccumulator<T>;
  const std::int64_t n = rows * cols;
  std::vector<std::int64_t> first_row(cpu_threads(), 0);
  std::vector<std::vector<Accumulator>> part_sums(cpu_threads());
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    if (begin >= end) return;
    const std::int64_t first = begin / cols, last = (end - 1) / cols;
    std::vector<Accumulator> sums(std::size_t(last - first + 1), Accumulator(0));
    for (std::int64_t row = first; row <= last; ++row) {
      const std::int64_t row_begin = std::max(begin, row * cols) - row * cols;
      const std::int64_t row_end = std::min(end, (row + 1) * cols) - row * cols;
      Accumulator sum = 0;
      for (std::int64_t col = row_begin; col < row_end; ++col)
        sum += Accumulator(element(row, col));
      sums[std::size_t(row - first)] = sum;
    }
    first_row[part] = first;
    part_sums[part] = std::move(sums);
  });
  std::vector<Accumulator> totals(std::size_t(rows), Accumulator(0));
  for (std::size_t part = 0; part < part_sums.size(); ++part)
    for (std::size_t k = 0; k < part_sums[part].size(); ++k)
      totals[std::size_t(first_row[part]) + k] += part_sums[part][k];
  return std::vector<T>(totals.begin(), totals.end());
}

// The baselines the lab times, on host arrays. One core, one loop:
template <class T>
T sum_serial(const T* in, std::int64_t n);
// Every core, a contiguous range each, the parts' sums added in order:
template <class T>
T sum_parallel(const T* in, std::int64_t n);
template <class T>
void row_sums_parallel(const T* in, std::int64_t rows, std::int64_t cols, T* out);

}  // namespace rooflab::cpu
