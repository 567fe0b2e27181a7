// reduce_rows' blocks-per-row path on its split rows: a row whose last part is empty, and extreme
// values (zeros, infinities, NaN, overflow, denormals) on both split plans and on that row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "bench/random.hpp"
#include "gpu_test.hpp"
#include "reduce_test_support.hpp"
#include "rooflab/rooflab.cuh"

namespace rooflab {
namespace {

using testing::expect_reduce_rows_matches;
using testing::op_name;
using testing::plan_on_this_gpu;
using testing::ReduceRows;
using testing::rows_by_blocks_resident;
using testing::Shape;

// Vectors in the last part of a row body of `vectors` cut in `splits` parts, where the
// blocks-per-row kernel cuts it (reduce.cuh): none where the parts before it, whole multiples of 8
// vectors, already cover the body.
std::int64_t last_part_vectors(std::int64_t vectors, std::int64_t splits) {
  const std::int64_t before = (splits - 1) * detail::split_part_vectors(vectors, splits);
  return before < vectors ? vectors - before : 0;
}

// The first shape of `rows` rows of whole 16-byte vectors whose plan on this GPU splits each row
// with an empty last part, for Sum, Min and Max (the plan counts the resident blocks of each
// operator's kernel); {0, 0} where there is none. An empty last part needs 258 parts or more
// (ReducePlan.AnEmptyLastPartNeedsAtLeast258Parts), so there is none where the GPU holds fewer
// than rows x 258 blocks of the blocks-per-row kernel. With 528 or more (132 SMs, an H100 or an
// H200) it is 2113540 floats or 1056770 doubles a row, one row or two: 258 parts of 2056 vectors,
// the first 257 of which hold 528392 vectors, more than the row's 528385.
template <class T>
Shape shape_with_empty_last_part(std::int64_t rows) {
  constexpr int width = detail::vector_width<T>();
  const int sm_count = current_sm_count();
  const int residents[] = {rows_by_blocks_resident<T, Sum>(), rows_by_blocks_resident<T, Min>(),
                           rows_by_blocks_resident<T, Max>()};
  const std::int64_t least =
      258 * detail::reduce_block_threads * detail::split_min_vectors_per_thread;
  for (std::int64_t vectors = least; vectors < 4 * least; ++vectors) {
    bool empty_for_every_op = true;
    for (const int resident : residents) {
      const detail::RowsPlan plan =
          detail::plan_reduce_rows(rows, vectors * width, width, true, sm_count, resident);
      empty_for_every_op &= plan.path == detail::RowsPath::blocks_per_row && plan.splits > 1 &&
                            last_part_vectors(vectors, plan.splits) == 0;
    }
    if (empty_for_every_op) return {rows, vectors * width};
  }
  return {0, 0};
}

// Checks on this GPU's plan for Op that `shape` (aligned rows of whole vectors) leaves every row's
// last part empty.
template <class T, class Op>
void expect_empty_last_part(Shape shape) {
  constexpr int width = detail::vector_width<T>();
  ASSERT_EQ(shape.cols % width, 0);
  const detail::RowsPlan plan = plan_on_this_gpu<T, Op>(shape, true);
  ASSERT_EQ(plan.path, detail::RowsPath::blocks_per_row);
  ASSERT_GT(plan.splits, 1);
  EXPECT_EQ(last_part_vectors(shape.cols / width, plan.splits), 0)
      << op_name<Op>() << ", " << shape.rows << " x " << shape.cols << " in " << plan.splits
      << " parts of " << detail::split_part_vectors(shape.cols / width, plan.splits) << " vectors";
}

// Sum, Min and Max over `shape`, which leaves every row's last part empty, against the CPU.
template <class T>
void expect_empty_last_parts_match(Shape shape, std::uint64_t& seed) {
  expect_empty_last_part<T, Sum>(shape);
  expect_empty_last_part<T, Min>(shape);
  expect_empty_last_part<T, Max>(shape);
  expect_reduce_rows_matches<T, Sum>(shape, 0, seed++);
  expect_reduce_rows_matches<T, Min>(shape, 0, seed++);
  expect_reduce_rows_matches<T, Max>(shape, 0, seed++);
}

// The last part's block folds nothing but its identity, takes its ticket like every part and may
// be the one that folds the row's partials. One row and two (each with its own ticket), float and
// double, every operator; skipped on a GPU too small to cut a row into 258 parts.
TEST_F(ReduceRows, SplitRowsWithAnEmptyLastPartEqualTheCpu) {
  std::uint64_t seed = 1400;
  int shapes = 0;
  for (const std::int64_t rows : {1, 2}) {
    const Shape floats = shape_with_empty_last_part<float>(rows);
    if (floats.rows != 0) {
      SCOPED_TRACE("float");
      expect_empty_last_parts_match<float>(floats, seed);
      ++shapes;
    }
    const Shape doubles = shape_with_empty_last_part<double>(rows);
    if (doubles.rows != 0) {
      SCOPED_TRACE("double");
      expect_empty_last_parts_match<double>(doubles, seed);
      ++shapes;
    }
  }
  if (shapes == 0)
    GTEST_SKIP() << "this GPU holds " << rows_by_blocks_resident<float>()
                 << " blocks of the blocks-per-row kernel: too few for a row of 258 parts";
}

// The kinds of row the extreme-value tests build; the elements not named are eighths in [-1, 1].
enum class Extreme {
  zeros,              // every element +0
  infinities,         // +Inf first, -Inf last: the sum is NaN in any order
  nan,                // a NaN in the middle: the sum, the least and the largest are NaN
  overflow,           // 0.75 x the largest finite value first, in the middle and last: +Inf
  negative_overflow,  // the same negated: -Inf
  denormals,          // every element k x the least denormal, |k| <= 8: exact, none flushed
};
constexpr Extreme extreme_kinds[] = {
    Extreme::zeros,    Extreme::infinities,        Extreme::nan,
    Extreme::overflow, Extreme::negative_overflow, Extreme::denormals};
constexpr int extreme_kind_count = int(sizeof(extreme_kinds) / sizeof(extreme_kinds[0]));

const char* extreme_name(Extreme kind) {
  switch (kind) {
    case Extreme::zeros: return "zeros";
    case Extreme::infinities: return "+Inf and -Inf";
    case Extreme::nan: return "a NaN";
    case Extreme::overflow: return "overflow to +Inf";
    case Extreme::negative_overflow: return "overflow to -Inf";
    case Extreme::denormals: return "denormals";
  }
  return "?";
}

// Element (col of cols) of a row of `kind`; `index`, its place in the matrix, draws the value.
template <class T>
T extreme_element(Extreme kind, std::int64_t col, std::int64_t cols, std::uint64_t seed,
                  std::int64_t index) {
  using limits = std::numeric_limits<T>;
  const T k = T(bench::random_integer(seed, std::uint64_t(index), -8, 8));
  const bool first = col == 0, middle = col == cols / 2, last = col == cols - 1;
  switch (kind) {
    case Extreme::zeros: return T(0);
    case Extreme::denormals: return k * limits::denorm_min();
    case Extreme::infinities:
      if (first) return limits::infinity();
      if (last) return -limits::infinity();
      break;
    case Extreme::nan:
      if (middle) return limits::quiet_NaN();
      break;
    case Extreme::overflow:
      if (first || middle || last) return T(0.75) * limits::max();
      break;
    case Extreme::negative_overflow:
      if (first || middle || last) return T(-0.75) * limits::max();
      break;
  }
  return k / T(8);
}

// x rounded to T as IEEE 754's round to nearest does: at or beyond the largest finite value plus
// half an ulp of it, an infinity (a plain conversion out of T's range is undefined in C++).
template <class T>
T rounded_to(long double x) {
  using limits = std::numeric_limits<T>;
  const long double overflow =
      static_cast<long double>(limits::max()) +
      std::ldexp(1.0L, limits::max_exponent - limits::digits - 1);  // 2^103 for float
  if (std::isfinite(x) && std::abs(x) >= overflow)
    return x > 0 ? limits::infinity() : -limits::infinity();
  return T(x);
}

// The reference of one row: its sum in long double (NaN and the infinities propagate as on the GPU;
// the eighths and denormals add exactly; an overflow of T shows when rounding to T), its least and
// largest values, NaN for a row holding a NaN (Min and Max propagate it, as NumPy's do).
template <class T>
struct ExtremeReference {
  T sum, min, max;
};

template <class T>
ExtremeReference<T> extreme_reference(const T* row, std::int64_t cols) {
  long double sum = 0;
  T least = std::numeric_limits<T>::infinity(), largest = -least;
  bool has_nan = false;
  for (std::int64_t c = 0; c < cols; ++c) {
    sum += row[c];
    has_nan |= std::isnan(row[c]);
    least = std::min(least, row[c]);
    largest = std::max(largest, row[c]);
  }
  if (has_nan) least = largest = std::numeric_limits<T>::quiet_NaN();
  return {rounded_to<T>(sum), least, largest};
}

template <class T>
bool same_value(T got, T want) {
  return std::isnan(want) ? std::isnan(got) : got == want;
}

// reduce_rows with Sum, Min and Max over a matrix whose row r is of kind extreme_kinds[(r + first)
// % kinds], each row against extreme_reference.
template <class T>
void expect_extreme_rows_follow_ieee(Shape shape, int first_kind, std::uint64_t seed) {
  const std::int64_t n = shape.rows * shape.cols;
  std::vector<T> values(static_cast<std::size_t>(n));
  const auto kind_of = [&](std::int64_t r) {
    return extreme_kinds[(r + first_kind) % extreme_kind_count];
  };
  for (std::int64_t r = 0; r < shape.rows; ++r)
    for (std::int64_t c = 0; c < shape.cols; ++c)
      values[std::size_t(r * shape.cols + c)] =
          extreme_element<T>(kind_of(r), c, shape.cols, seed, r * shape.cols + c);
  DeviceBuffer<T> in(values);
  // Poisoned with a finite value (0x7F bytes): an unwritten result would not pass for a NaN.
  DeviceBuffer<T> out(std::size_t(3 * shape.rows));
  out.fill_bytes(0x7F);
  reduce_rows(in.data(), shape.rows, shape.cols, out.data(), Sum{});
  reduce_rows(in.data(), shape.rows, shape.cols, out.data() + shape.rows, Min{});
  reduce_rows(in.data(), shape.rows, shape.cols, out.data() + 2 * shape.rows, Max{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = out.download();
  int wrong = 0;
  for (std::int64_t r = 0; r < shape.rows && wrong < 10; ++r) {
    const ExtremeReference<T> want = extreme_reference(values.data() + r * shape.cols, shape.cols);
    const T sum = got[std::size_t(r)], least = got[std::size_t(shape.rows + r)],
            largest = got[std::size_t(2 * shape.rows + r)];
    const bool right =
        same_value(sum, want.sum) && same_value(least, want.min) && same_value(largest, want.max);
    if (!right) {
      ADD_FAILURE() << shape.rows << " x " << shape.cols << " seed=" << seed << ": row " << r
                    << " (" << extreme_name(kind_of(r)) << ") sum " << sum << ", min " << least
                    << ", max " << largest << "; expected " << want.sum << ", " << want.min << ", "
                    << want.max;
      ++wrong;
    }
  }
}

// Checks that Op's plan on this GPU splits the rows of `shape`, with fewer rows than Op's kernel
// has resident blocks (each row split to fill one wave) or, with `many_rows`, at least as many
// (split so that the grid holds about 8 waves).
template <class T, class Op>
void expect_split(Shape shape, bool many_rows) {
  const detail::RowsPlan plan = plan_on_this_gpu<T, Op>(shape, true);
  ASSERT_EQ(plan.path, detail::RowsPath::blocks_per_row) << op_name<Op>();
  ASSERT_GT(plan.splits, 1) << op_name<Op>();
  const int resident = rows_by_blocks_resident<T, Op>();
  EXPECT_EQ(shape.rows >= resident, many_rows) << op_name<Op>() << ", " << resident << " resident";
}

template <class T>
void expect_split_for_every_op(Shape shape, bool many_rows) {
  expect_split<T, Sum>(shape, many_rows);
  expect_split<T, Min>(shape, many_rows);
  expect_split<T, Max>(shape, many_rows);
}

// Every kind of extreme row on both split paths: one row of each kind, split to fill one wave, and
// as many rows as the most resident blocks of the three operators' kernels, the kinds in turn.
template <class T>
void expect_extremes_on_both_split_paths(std::uint64_t seed) {
  constexpr int width = detail::vector_width<T>();
  const Shape one_wave{extreme_kind_count, 300007};
  expect_split_for_every_op<T>(one_wave, false);
  expect_extreme_rows_follow_ieee<T>(one_wave, 0, seed);
  // Rows of 2 x 256 threads x 8 vectors and 3 elements more, long enough for two parts each (and
  // starting off 16-byte boundaries).
  const Shape waves{
      std::max({rows_by_blocks_resident<T, Sum>(), rows_by_blocks_resident<T, Min>(),
                rows_by_blocks_resident<T, Max>()}),
      2 * detail::reduce_block_threads * detail::split_min_vectors_per_thread * width + 3};
  expect_split_for_every_op<T>(waves, true);
  expect_extreme_rows_follow_ieee<T>(waves, 1, seed + 1);
}

TEST_F(ReduceRows, ExtremeValuesOnSplitRowsFollowIeeeRules) {
  {
    SCOPED_TRACE("float");
    expect_extremes_on_both_split_paths<float>(1500);
  }
  {
    SCOPED_TRACE("double");
    expect_extremes_on_both_split_paths<double>(1510);
  }
}

// The same kinds of row where the last part is empty: one row each, float and double.
TEST_F(ReduceRows, ExtremeValuesInASplitRowWithAnEmptyLastPartFollowIeeeRules) {
  const Shape floats = shape_with_empty_last_part<float>(1);
  const Shape doubles = shape_with_empty_last_part<double>(1);
  if (floats.rows == 0 && doubles.rows == 0)
    GTEST_SKIP() << "this GPU holds " << rows_by_blocks_resident<float>()
                 << " blocks of the blocks-per-row kernel: too few for a row of 258 parts";
  if (floats.rows != 0) {
    expect_empty_last_part<float, Sum>(floats);
    expect_empty_last_part<float, Min>(floats);
    expect_empty_last_part<float, Max>(floats);
  }
  if (doubles.rows != 0) {
    expect_empty_last_part<double, Sum>(doubles);
    expect_empty_last_part<double, Min>(doubles);
    expect_empty_last_part<double, Max>(doubles);
  }
  std::uint64_t seed = 1600;
  for (int kind = 0; kind < extreme_kind_count; ++kind) {
    SCOPED_TRACE(extreme_name(extreme_kinds[kind]));
    if (floats.rows != 0) expect_extreme_rows_follow_ieee<float>(floats, kind, seed++);
    if (doubles.rows != 0) expect_extreme_rows_follow_ieee<double>(doubles, kind, seed++);
  }
}

}  // namespace
}  // namespace rooflab
