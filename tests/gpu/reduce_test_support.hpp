#pragma once
// What the reduce GPU tests share (reduce_test.cu, reduce_rows_split_test.cu): seeded inputs, a
// poisoned value, the CPU reference of each operator, and reduce_rows on a host matrix against it,
// with the plan this GPU makes for a shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "cpu/reduce.hpp"
#include "gpu_test.hpp"
#include "rooflab/rooflab.cuh"

namespace rooflab::testing {

// Values for T from a seeded generator. Floating types: multiples of 1/8 in [-1, 1] (every
// partial sum of up to 2^21 of them is exact in float, so any summation order gives the exact
// sum) or, with `general`, any double in [-1, 1) rounded to T. Integers: every bit random, so
// sums wrap.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed, bool general = false) {
  std::mt19937_64 random(seed);
  std::vector<T> values(n);
  for (T& value : values) {
    if constexpr (std::is_floating_point_v<T>) {
      if (general)
        value = T(std::uniform_real_distribution<double>(-1.0, 1.0)(random));
      else
        value = T(std::int64_t(random() % 17) - 8) / T(8);
    } else {
      value = T(random());
    }
  }
  return values;
}

template <class T>
T poison() {
  T value;
  std::memset(&value, 0xFF, sizeof(T));
  return value;
}

// The reference: sums in cpu::SumAccumulator (exact for the eighths, wrapping for integers),
// Min and Max as the standard library finds them.
template <class T, class Op>
T expected(const T* values, std::int64_t n, Op) {
  if constexpr (std::is_same_v<Op, Sum>) {
    return cpu::row_sums_of<T>(1, n,
                               [values](std::int64_t, std::int64_t i) { return values[i]; })[0];
  } else if constexpr (std::is_same_v<Op, Min>) {
    return *std::min_element(values, values + n);
  } else {
    return *std::max_element(values, values + n);
  }
}

template <class Op>
const char* op_name() {
  return std::is_same_v<Op, Sum> ? "Sum" : std::is_same_v<Op, Min> ? "Min" : "Max";
}

struct Shape {
  std::int64_t rows, cols;
};

template <class T, class Op = Sum>
int rows_by_blocks_resident() {
  return detail::resident_blocks<detail::reduce_rows_by_blocks_kernel<T, Op>>("test");
}

template <class T, class Op = Sum>
detail::RowsPlan plan_on_this_gpu(Shape shape, bool aligned_base) {
  constexpr int width = detail::vector_width<T>();
  return detail::plan_reduce_rows(shape.rows, shape.cols, width,
                                  width > 1 && aligned_base && shape.cols % width == 0,
                                  current_sm_count(), rows_by_blocks_resident<T, Op>());
}

template <class T, class Op>
void expect_reduce_rows_matches(Shape shape, std::size_t offset, std::uint64_t seed) {
  const std::int64_t n = shape.rows * shape.cols;
  const std::vector<T> values = random_values<T>(std::size_t(n) + offset, seed);
  DeviceBuffer<T> in(values);
  DeviceBuffer<T> out(std::size_t(shape.rows));
  out.fill_bytes(0xFF);
  reduce_rows(in.data() + offset, shape.rows, shape.cols, out.data(), Op{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = out.download();
  for (std::int64_t r = 0; r < shape.rows; ++r) {
    const T want = expected(values.data() + offset + r * shape.cols, shape.cols, Op{});
    if (got[std::size_t(r)] != want) {
      ADD_FAILURE() << op_name<Op>() << " " << shape.rows << " x " << shape.cols
                    << " offset=" << offset << " seed=" << seed << ": row " << r << " got "
                    << +got[std::size_t(r)] << ", expected " << +want;
      return;
    }
  }
}

class ReduceRows : public GpuTest {};

}  // namespace rooflab::testing
