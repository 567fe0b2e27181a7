// rooflab::reduce and rooflab::reduce_rows: every type and operator at awkward sizes and shapes,
// unaligned inputs, NaN propagation, more than 2^31 elements, wrapping integer sums, float
// accuracy, bitwise reproducibility, custom operators, concurrent streams and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/random.hpp"
#include "cpu/reduce.hpp"
#include "gpu_test.hpp"
#include "reduce_test_support.hpp"
#include "rooflab/rooflab.cuh"

namespace rooflab {
namespace {

using testing::expect_reduce_rows_matches;
using testing::expected;
using testing::op_name;
using testing::plan_on_this_gpu;
using testing::poison;
using testing::random_values;
using testing::ReduceRows;
using testing::rows_by_blocks_resident;
using testing::Shape;

// rooflab::reduce over values[offset, offset + n) copied to the device, into an output poisoned
// with `poisoned` (all bits set, a NaN for floats, unless the caller expects one).
template <class T, class Op>
T reduce_on_device(const std::vector<T>& values, std::size_t offset, std::int64_t n, Op op,
                   T poisoned = poison<T>()) {
  DeviceBuffer<T> in(values);
  DeviceBuffer<T> out(std::vector<T>{poisoned});
  reduce(in.data() + offset, n, out.data(), op);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return out.download()[0];
}

class Reduce : public testing::GpuTest {};
template <class T>
class ReduceEveryType : public testing::GpuTest {};
template <class T>
class ReduceRowsEveryType : public testing::GpuTest {};
using ApiTypes = ::testing::Types<float, double, std::int32_t, std::int64_t, std::uint32_t>;
TYPED_TEST_SUITE(ReduceEveryType, ApiTypes);
TYPED_TEST_SUITE(ReduceRowsEveryType, ApiTypes);

const std::int64_t awkward_sizes[] = {1, 2, 31, 32, 33, 1023, 1025, (1 << 20) + 7};

template <class T, class Op>
void expect_reduce_matches(std::int64_t n, std::size_t offset, std::uint64_t seed) {
  const std::vector<T> values = random_values<T>(std::size_t(n) + offset, seed);
  const T got = reduce_on_device(values, offset, n, Op{});
  const T want = expected(values.data() + offset, n, Op{});
  EXPECT_EQ(got, want) << op_name<Op>() << " n=" << n << " offset=" << offset << " seed=" << seed;
}

TYPED_TEST(ReduceEveryType, SumMinMaxEqualTheCpuAtAwkwardSizes) {
  std::uint64_t seed = 100;
  for (const std::int64_t n : awkward_sizes) {
    expect_reduce_matches<TypeParam, Sum>(n, 0, seed++);
    expect_reduce_matches<TypeParam, Min>(n, 0, seed++);
    expect_reduce_matches<TypeParam, Max>(n, 0, seed++);
  }
}

TYPED_TEST(ReduceEveryType, UnalignedStartsEqualTheCpu) {
  std::uint64_t seed = 200;
  for (const std::size_t offset : {std::size_t(1), std::size_t(3)})
    for (const std::int64_t n : {std::int64_t(1), std::int64_t(5), std::int64_t(33),
                                 std::int64_t(1025), std::int64_t((1 << 20) + 7)}) {
      expect_reduce_matches<TypeParam, Sum>(n, offset, seed++);
      expect_reduce_matches<TypeParam, Min>(n, offset, seed++);
      expect_reduce_matches<TypeParam, Max>(n, offset, seed++);
    }
}

// A NaN anywhere is the result of Sum, Min and Max, as in NumPy and PyTorch: planted first, in the
// middle, last and (on the larger sizes) in the last few elements, past the 16-byte vectors, at
// every awkward size, aligned and not, into an output poisoned with a finite value.
template <class T>
void expect_planted_nan_is_the_result(std::int64_t n, std::size_t offset, std::uint64_t seed) {
  const T poisoned = T(12345);
  for (const std::int64_t at : {std::int64_t(0), n / 2, n - 1, std::max<std::int64_t>(0, n - 3)}) {
    std::vector<T> values = random_values<T>(std::size_t(n) + offset, seed);
    values[offset + std::size_t(at)] = std::numeric_limits<T>::quiet_NaN();
    EXPECT_TRUE(std::isnan(reduce_on_device(values, offset, n, Sum{}, poisoned)))
        << "Sum n=" << n << " offset=" << offset << " NaN at " << at;
    EXPECT_TRUE(std::isnan(reduce_on_device(values, offset, n, Min{}, poisoned)))
        << "Min n=" << n << " offset=" << offset << " NaN at " << at;
    EXPECT_TRUE(std::isnan(reduce_on_device(values, offset, n, Max{}, poisoned)))
        << "Max n=" << n << " offset=" << offset << " NaN at " << at;
  }
}

TEST_F(Reduce, APlantedNanIsTheResultOfEveryOperator) {
  std::uint64_t seed = 250;
  for (const std::int64_t n : awkward_sizes)
    for (const std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      expect_planted_nan_is_the_result<float>(n, offset, seed);
      expect_planted_nan_is_the_result<double>(n, offset, seed++);
    }
}

// ---------------------------------------------------------------------------------------------
// reduce_rows

// Awkward shapes (1 x 1, 1 x N, N x 1, primes) and shapes for every path of the dispatch: small
// rows with vector and with scalar units, a warp per row with aligned and unaligned rows, a block
// per row whole and split, with fewer rows than resident blocks and with more (1200 rows of 20011:
// split in about 8 waves) (ShapesCoverEveryPathOnThisGpu checks that they do).
const Shape row_shapes[] = {{1, 1},       {1, (1 << 20) + 7}, {100003, 1}, {1009, 997},
                            {7919, 13},   {13, 7919},         {20000, 32}, {20000, 8},
                            {4099, 1000}, {4099, 1001},       {100, 5003}, {3, 300007},
                            {1200, 20011}};

TYPED_TEST(ReduceRowsEveryType, EveryShapeEqualsTheCpu) {
  std::uint64_t seed = 300;
  for (const Shape shape : row_shapes) {
    expect_reduce_rows_matches<TypeParam, Sum>(shape, 0, seed++);
    expect_reduce_rows_matches<TypeParam, Min>(shape, 0, seed++);
    expect_reduce_rows_matches<TypeParam, Max>(shape, 0, seed++);
  }
}

TYPED_TEST(ReduceRowsEveryType, UnalignedMatrixEqualsTheCpu) {
  std::uint64_t seed = 400;
  for (const Shape shape :
       {Shape{20000, 32}, Shape{4099, 1000}, Shape{3, 300007}, Shape{100, 5003}})
    for (const std::size_t offset : {std::size_t(1), std::size_t(3)}) {
      expect_reduce_rows_matches<TypeParam, Sum>(shape, offset, seed++);
      expect_reduce_rows_matches<TypeParam, Max>(shape, offset, seed++);
    }
}

// Rows holding a NaN (every third row, at a place that moves from row to row) reduce to NaN with
// Sum, Min and Max, the other rows to the CPU's value, on every shape (so every path), into
// outputs poisoned with a finite value.
template <class T, class Op>
void expect_rows_with_a_nan_return_it(Shape shape, std::uint64_t seed) {
  std::vector<T> values = random_values<T>(std::size_t(shape.rows * shape.cols), seed);
  const auto has_nan = [](std::int64_t r) { return r % 3 == 1; };
  for (std::int64_t r = 0; r < shape.rows; ++r)
    if (has_nan(r))
      values[std::size_t(r * shape.cols + (r * 7919 + 13) % shape.cols)] =
          std::numeric_limits<T>::quiet_NaN();
  DeviceBuffer<T> in(values);
  DeviceBuffer<T> out(std::vector<T>(std::size_t(shape.rows), T(12345)));
  reduce_rows(in.data(), shape.rows, shape.cols, out.data(), Op{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = out.download();
  for (std::int64_t r = 0; r < shape.rows; ++r) {
    const T g = got[std::size_t(r)];
    const bool right = has_nan(r) ? std::isnan(g)
                                  : g == expected(values.data() + r * shape.cols, shape.cols, Op{});
    if (!right) {
      ADD_FAILURE() << op_name<Op>() << " " << shape.rows << " x " << shape.cols << ": row " << r
                    << (has_nan(r) ? " (holds a NaN)" : "") << " got " << g;
      return;
    }
  }
}

TEST_F(ReduceRows, RowsWithANanReturnItOnEveryPath) {
  std::uint64_t seed = 350;
  for (const Shape shape : row_shapes) {
    expect_rows_with_a_nan_return_it<float, Sum>(shape, seed);
    expect_rows_with_a_nan_return_it<float, Min>(shape, seed);
    expect_rows_with_a_nan_return_it<float, Max>(shape, seed);
    expect_rows_with_a_nan_return_it<double, Min>(shape, seed);
    expect_rows_with_a_nan_return_it<double, Max>(shape, seed++);
  }
}

// Enough tiny rows that every warp of the small-rows path's grid (one wave at most) takes at
// least two passes, plus a ragged last pass: 8, 16 and 32 lanes per row (float and double rows
// of 32, and unaligned rows of 32 floats, one element per lane).
TEST_F(ReduceRows, ManyTinyRowsStrideOverTheSmallRowsGrid) {
  const auto rows_for = [](int lanes, int resident_blocks) {
    const std::int64_t blocks =
        detail::small_rows_blocks(std::numeric_limits<std::int64_t>::max(), lanes, resident_blocks);
    EXPECT_EQ(blocks, resident_blocks);
    return 2 * detail::small_rows_per_pass(lanes) * blocks *
               (detail::reduce_block_threads / detail::warp_size) +
           13;
  };
  const std::int64_t float_rows =
      rows_for(8, detail::resident_blocks<detail::reduce_small_rows_kernel<8, float, Sum>>("test"));
  const std::int64_t double_rows = rows_for(
      16, detail::resident_blocks<detail::reduce_small_rows_kernel<16, double, Sum>>("test"));
  const std::int64_t scalar_rows = rows_for(
      32, detail::resident_blocks<detail::reduce_small_rows_kernel<32, float, Sum>>("test"));
  ASSERT_EQ(plan_on_this_gpu<float>({float_rows, 32}, true).lanes_per_row, 8);
  ASSERT_EQ(plan_on_this_gpu<double>({double_rows, 32}, true).lanes_per_row, 16);
  ASSERT_EQ(plan_on_this_gpu<float>({scalar_rows, 32}, false).lanes_per_row, 32);
  expect_reduce_rows_matches<float, Sum>({float_rows, 32}, 0, 450);
  expect_reduce_rows_matches<float, Max>({float_rows, 32}, 0, 451);
  expect_reduce_rows_matches<double, Sum>({double_rows, 32}, 0, 452);
  expect_reduce_rows_matches<float, Sum>({scalar_rows, 32}, 1, 453);
}

// Matrices of four times the L2 size, streamed from device memory on every path: small rows,
// rows of a warp each, and few long rows split across blocks, each also starting one element
// off a 16-byte boundary. Named Large: too slow under compute-sanitizer, where the smaller shapes
// above run the same paths.
TEST_F(ReduceRows, LargeMatricesFourTimesTheL2SizeAreExactOnEveryPath) {
  const std::int64_t floats = 4 * current_l2_bytes() / std::int64_t(sizeof(float)) + 4099;
  const Shape shapes[] = {{floats / 32 + 1, 32}, {floats / 1000 + 1, 1000}, {3, floats / 3 + 1}};
  std::uint64_t seed = 470;
  for (const Shape& shape : shapes) {
    expect_reduce_rows_matches<float, Sum>(shape, 0, seed++);
    expect_reduce_rows_matches<float, Max>(shape, 1, seed++);
  }
}

TEST_F(ReduceRows, ShapesCoverEveryPathOnThisGpu) {
  std::set<std::string> seen;
  const auto describe = [](const detail::RowsPlan& plan, bool more_rows_than_resident) {
    switch (plan.path) {
      case detail::RowsPath::lanes_per_row:
        return plan.vector_units ? "lanes/vector" : "lanes/scalar";
      case detail::RowsPath::warp_per_row: return "warp";
      case detail::RowsPath::blocks_per_row:
        if (plan.splits == 1) return "blocks/whole";
        return more_rows_than_resident ? "blocks/split/waves" : "blocks/split/one wave";
    }
    return "?";
  };
  for (const Shape shape : row_shapes) {
    seen.insert(describe(plan_on_this_gpu<float>(shape, true),
                         shape.rows >= rows_by_blocks_resident<float>()));
    seen.insert(describe(plan_on_this_gpu<double>(shape, true),
                         shape.rows >= rows_by_blocks_resident<double>()));
  }
  EXPECT_EQ(seen,
            (std::set<std::string>{"lanes/vector", "lanes/scalar", "warp", "blocks/split/one wave",
                                   "blocks/split/waves", "blocks/whole"}));
}

// ---------------------------------------------------------------------------------------------
// Accuracy, wrapping, reproducibility

// For general floating-point values every addition rounds, and every element passes through at
// most `depth` additions of rooflab::reduce's tree: its thread's chain over its share (one vector
// per grid-stride step, plus a head and a tail element), then at most 24 levels of trees (within
// a 16-byte vector, the warp's and the block's shuffles, and the same again when the last block
// folds the per-block partials). So |computed - exact| <= gamma(depth) * sum|x|, with
// gamma(d) = d*u / (1 - d*u) and u the unit roundoff (Higham, "Accuracy and Stability of
// Numerical Algorithms", 4.2). The exact sum is taken in long double with Neumaier's
// compensation, whose own error is far below that bound.
template <class T>
void expect_sum_within_tree_bound(std::int64_t n, std::uint64_t seed) {
  const std::vector<T> values = random_values<T>(std::size_t(n), seed, true);
  const T got = reduce_on_device(values, 0, n, Sum{});
  long double sum = 0, compensation = 0;
  double magnitude = 0;
  for (const T value : values) {
    const long double x = value, next = sum + x;
    compensation += std::abs(sum) >= std::abs(x) ? (sum - next) + x : (x - next) + sum;
    sum = next;
    magnitude += std::abs(double(value));
  }
  const double exact = double(sum + compensation);
  constexpr int width = detail::vector_width<T>();
  const int blocks = detail::reduce_blocks(
      n, width, detail::resident_blocks<detail::reduce_kernel<T, Sum>>("test"));
  const std::int64_t lanes = std::int64_t(blocks) * detail::reduce_block_threads;
  const double depth = double(n / (width * lanes) + 3 + 24 + blocks / detail::reduce_block_threads);
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double bound = depth * u / (1 - depth * u) * magnitude;
  EXPECT_LE(std::abs(double(got) - exact), bound)
      << "n=" << n << " seed=" << seed << " got " << got << " exact " << exact;
}

TEST_F(Reduce, FloatAndDoubleSumsOfGeneralValuesStayWithinTheTreeBound) {
  std::uint64_t seed = 500;
  for (const std::int64_t n :
       {std::int64_t(1025), std::int64_t((1 << 20) + 7), std::int64_t((1 << 24) + 3)}) {
    expect_sum_within_tree_bound<float>(n, seed++);
    expect_sum_within_tree_bound<double>(n, seed++);
  }
}

TEST_F(Reduce, IntegerSumsWrapModulo2ToTheBits) {
  const std::int64_t n = 100003;
  const std::vector<std::int32_t> big32(n, std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(reduce_on_device(big32, 0, n, Sum{}), std::int32_t(std::uint32_t(n) * 0x7FFFFFFFu));
  const std::vector<std::int64_t> big64(n, std::numeric_limits<std::int64_t>::min() + 3);
  EXPECT_EQ(
      reduce_on_device(big64, 0, n, Sum{}),
      std::int64_t(std::uint64_t(n) * std::uint64_t(std::numeric_limits<std::int64_t>::min() + 3)));
  const std::vector<std::uint32_t> bigu(n, 0xFFFFFFF0u);
  EXPECT_EQ(reduce_on_device(bigu, 0, n, Sum{}), std::uint32_t(std::uint64_t(n) * 0xFFFFFFF0u));
}

TEST_F(Reduce, TenRunsGiveTheSameBits) {
  const std::int64_t n = (1 << 24) + 3;  // many blocks: the last block folds in index order
  const std::vector<float> values = random_values<float>(std::size_t(n), 600, true);
  DeviceBuffer<float> in(values);
  DeviceBuffer<float> out(10);
  for (int run = 0; run < 10; ++run) reduce(in.data() + 1, n - 1, out.data() + run, Sum{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> results = out.download();
  for (int run = 1; run < 10; ++run)
    EXPECT_EQ(std::memcmp(&results[run], &results[0], sizeof(float)), 0)
        << "run " << run << ": " << results[run] << " vs " << results[0];
}

// Inputs of four times the L2 size, streamed from device memory: aligned and not, every operator,
// a float and a 64-bit integer type, exact; and reproducible to the bit on general floats. Named
// Large: too slow under compute-sanitizer, where the smaller inputs above run the same kernels.
TEST_F(Reduce, LargeInputsFourTimesTheL2SizeAreExactAndReproducible) {
  const std::int64_t bytes = 4 * current_l2_bytes();
  ASSERT_GT(bytes, 0);
  std::uint64_t seed = 650;
  const std::int64_t float_n = bytes / std::int64_t(sizeof(float)) + 5;
  for (const std::size_t offset : {std::size_t(0), std::size_t(1)}) {
    SCOPED_TRACE("float, offset " + std::to_string(offset));
    expect_reduce_matches<float, Sum>(float_n, offset, seed++);
    expect_reduce_matches<float, Max>(float_n, offset, seed++);
  }
  const std::int64_t int64_n = bytes / std::int64_t(sizeof(std::int64_t)) + 5;
  expect_reduce_matches<std::int64_t, Sum>(int64_n, 1, seed++);
  expect_reduce_matches<std::int64_t, Min>(int64_n, 0, seed++);

  const std::vector<float> values = random_values<float>(std::size_t(float_n) + 1, 660, true);
  DeviceBuffer<float> in(values);
  DeviceBuffer<float> out(3);
  for (int run = 0; run < 3; ++run) reduce(in.data() + 1, float_n, out.data() + run, Sum{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> results = out.download();
  for (int run = 1; run < 3; ++run)
    EXPECT_EQ(std::memcmp(&results[run], &results[0], sizeof(float)), 0)
        << "run " << run << ": " << results[run] << " vs " << results[0];
}

TEST_F(ReduceRows, TenRunsGiveTheSameBitsOnEveryPath) {
  for (const Shape shape :
       {Shape{20000, 32}, Shape{4099, 1001}, Shape{100, 5003}, Shape{3, 300007}}) {
    const std::int64_t n = shape.rows * shape.cols;
    const std::vector<double> values = random_values<double>(std::size_t(n), 700, true);
    DeviceBuffer<double> in(values);
    DeviceBuffer<double> out(std::size_t(10 * shape.rows));
    for (int run = 0; run < 10; ++run)
      reduce_rows(in.data(), shape.rows, shape.cols, out.data() + run * shape.rows, Sum{});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<double> results = out.download();
    for (int run = 1; run < 10; ++run)
      EXPECT_EQ(std::memcmp(&results[std::size_t(run * shape.rows)], &results[0],
                            sizeof(double) * shape.rows),
                0)
          << shape.rows << " x " << shape.cols << ", run " << run;
  }
}

// ---------------------------------------------------------------------------------------------
// More than 2^31 elements: 64-bit indexing in every kernel, with exactly checkable results.

__global__ void fill_small_integers(float* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = float(bench::random_integer(seed, std::uint64_t(i), -2, 2));
}

TEST_F(Reduce, MoreThan2To31ElementsSumExactlyAndFindPlantedExtremes) {
  // Integers in [-2, 2]: every partial sum is an integer far below 2^24 in magnitude (random walk
  // of ~65000 at the end), so the float sums are exact. 8.6 GB of floats.
  const std::int64_t n = (std::int64_t(1) << 31) + (1 << 20) + 6;
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  if (free_bytes < std::size_t(n) * sizeof(float) + (std::size_t(1) << 30))
    GTEST_SKIP() << "needs " << n * 4 / (1 << 20) << " MiB of free device memory";
  const std::uint64_t seed = 800;
  DeviceBuffer<float> in(static_cast<std::size_t>(n));
  fill_small_integers<<<65536, 256>>>(in.data(), n, seed);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::int64_t max_at = (std::int64_t(1) << 31) + 12345, min_at = n - 2;
  const float planted_max = 3.0f, planted_min = -3.0f;
  ASSERT_EQ(cudaMemcpy(in.data() + max_at, &planted_max, sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in.data() + min_at, &planted_min, sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);

  const std::int64_t cols = n / 2;  // two rows; the second starts 12 bytes past a 16-byte boundary
  const auto value = [&](std::int64_t i) {
    return i == max_at   ? planted_max
           : i == min_at ? planted_min
                         : float(bench::random_integer(seed, std::uint64_t(i), -2, 2));
  };
  const std::vector<float> row_sums = cpu::row_sums_of<float>(
      2, cols, [&](std::int64_t r, std::int64_t c) { return value(r * cols + c); });

  DeviceBuffer<float> out(3), rows_out(6);
  out.fill_bytes(0xFF);
  rows_out.fill_bytes(0xFF);
  reduce(in.data(), n, out.data() + 0, Sum{});
  reduce(in.data(), n, out.data() + 1, Min{});
  reduce(in.data(), n, out.data() + 2, Max{});
  reduce_rows(in.data(), 2, cols, rows_out.data() + 0, Sum{});
  reduce_rows(in.data(), 2, cols, rows_out.data() + 2, Min{});
  reduce_rows(in.data(), 2, cols, rows_out.data() + 4, Max{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> total = out.download(), per_row = rows_out.download();
  EXPECT_EQ(total[0], row_sums[0] + row_sums[1]);
  EXPECT_EQ(total[1], planted_min);
  EXPECT_EQ(total[2], planted_max);
  EXPECT_EQ(per_row[0], row_sums[0]);
  EXPECT_EQ(per_row[1], row_sums[1]);
  EXPECT_EQ(per_row[2], -2.0f);
  EXPECT_EQ(per_row[3], planted_min);
  EXPECT_EQ(per_row[4], 2.0f);
  EXPECT_EQ(per_row[5], planted_max);
}

// ---------------------------------------------------------------------------------------------
// Custom operators and types through rooflab.cuh

struct Range {
  float lo, hi;
};

// Both extremes in one pass: an 8-byte type without a native shuffle, two to a 16-byte load.
struct RangeOp {
  template <class T>
  __host__ __device__ static T identity() {
    return T{std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  }
  __host__ __device__ Range operator()(Range a, Range b) const {
    return Range{b.lo < a.lo ? b.lo : a.lo, a.hi < b.hi ? b.hi : a.hi};
  }
};

// A 12-byte type: no 16-byte vectors at all, three shuffled words.
struct Triple {
  std::uint32_t a, b, c;
};
struct TripleSum {
  template <class T>
  __host__ __device__ static T identity() {
    return T{0, 0, 0};
  }
  __host__ __device__ Triple operator()(Triple x, Triple y) const {
    return Triple{x.a + y.a, x.b + y.b, x.c + y.c};
  }
};

TEST_F(Reduce, CustomOperatorsAndTypesThroughTheGenericTemplates) {
  const std::uint64_t seed = 900;
  std::mt19937_64 random(seed);
  const std::int64_t n = (1 << 20) + 7;
  std::vector<Range> ranges(std::size_t(n) + 1);
  std::vector<Triple> triples(static_cast<std::size_t>(n));
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  Triple sum{0, 0, 0};
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = float(std::uniform_real_distribution<double>(-1e6, 1e6)(random));
    ranges[std::size_t(i) + 1] = Range{x, x};
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    triples[std::size_t(i)] =
        Triple{std::uint32_t(random()), std::uint32_t(random()), std::uint32_t(random())};
    sum = TripleSum{}(sum, triples[std::size_t(i)]);
  }
  DeviceBuffer<Range> range_in(ranges), range_out(std::size_t(2));
  DeviceBuffer<Triple> triple_in(triples), triple_out(std::size_t(2));
  reduce(range_in.data() + 1, n, range_out.data(), RangeOp{});  // 8 bytes past a 16-byte boundary
  reduce_rows(range_in.data() + 1, 1, n, range_out.data() + 1, RangeOp{});
  reduce(triple_in.data(), n, triple_out.data(), TripleSum{});
  reduce_rows(triple_in.data(), 1, n, triple_out.data() + 1, TripleSum{});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const Range& got : range_out.download()) {
    EXPECT_EQ(got.lo, lo) << "seed " << seed;
    EXPECT_EQ(got.hi, hi) << "seed " << seed;
  }
  for (const Triple& got : triple_out.download()) {
    EXPECT_EQ(got.a, sum.a) << "seed " << seed;
    EXPECT_EQ(got.b, sum.b) << "seed " << seed;
    EXPECT_EQ(got.c, sum.c) << "seed " << seed;
  }
}

// Each stream has its own partials and tickets: interleaved calls on two streams never mix them.
TEST_F(Reduce, CallsOnTwoStreamsKeepTheirOwnScratch) {
  const std::int64_t n = (1 << 22) + 1;
  const Shape split{3, 300007};
  const std::vector<std::int64_t> a = random_values<std::int64_t>(std::size_t(n), 1000);
  const std::vector<std::int64_t> b = random_values<std::int64_t>(std::size_t(n), 1001);
  const std::int64_t sum_a = expected(a.data(), n, Sum{}), sum_b = expected(b.data(), n, Sum{});
  const std::vector<std::int64_t> rows_a = cpu::row_sums_of<std::int64_t>(
      split.rows, split.cols,
      [&](std::int64_t r, std::int64_t c) { return a[std::size_t(r * split.cols + c)]; });
  DeviceBuffer<std::int64_t> in_a(a), in_b(b);
  constexpr int calls = 20;
  DeviceBuffer<std::int64_t> out_a(calls), out_b(calls), out_rows(std::size_t(calls * split.rows));
  cudaStream_t first = nullptr, second = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), cudaSuccess);
  for (int call = 0; call < calls; ++call) {
    reduce(in_a.data(), n, out_a.data() + call, Sum{}, first);
    reduce(in_b.data(), n, out_b.data() + call, Sum{}, second);
    reduce_rows(in_a.data(), split.rows, split.cols, out_rows.data() + call * split.rows, Sum{},
                second);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStreamDestroy(first);
  cudaStreamDestroy(second);
  const auto got_a = out_a.download(), got_b = out_b.download(), got_rows = out_rows.download();
  for (int call = 0; call < calls; ++call) {
    EXPECT_EQ(got_a[call], sum_a) << "call " << call;
    EXPECT_EQ(got_b[call], sum_b) << "call " << call;
    for (std::int64_t r = 0; r < split.rows; ++r)
      EXPECT_EQ(got_rows[std::size_t(call * split.rows + r)], rows_a[std::size_t(r)])
          << "call " << call << " row " << r;
  }
}

// A stream's scratch starts small and grows (more partials, more row tickets, wider elements);
// every call before and after a growth must see zeroed tickets and room for its partials.
TEST_F(Reduce, StreamScratchGrowsWithoutDisturbingEarlierOrLaterCalls) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const std::vector<Shape> shapes{{1, 300007}, {3, 300007}, {8, 1 << 20}, {2, 1 << 21}};
  const std::int64_t largest = 8 << 20;
  const std::vector<std::int64_t> values = random_values<std::int64_t>(std::size_t(largest), 1100);
  const std::vector<float> floats = random_values<float>(std::size_t(largest), 1101);
  DeviceBuffer<std::int64_t> in(values), out(64);
  DeviceBuffer<float> float_in(floats), float_out(1);
  out.fill_bytes(0xFF);
  // The poison is queued on the default stream, which a non-blocking stream does not wait for.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::int64_t slot = 0;
  std::vector<std::int64_t> want;
  for (const Shape shape : shapes) {
    reduce(float_in.data(), shape.rows * shape.cols, float_out.data(), Sum{}, stream);
    reduce_rows(in.data(), shape.rows, shape.cols, out.data() + slot, Sum{}, stream);
    const auto sums = cpu::row_sums_of<std::int64_t>(
        shape.rows, shape.cols,
        [&](std::int64_t r, std::int64_t c) { return values[std::size_t(r * shape.cols + c)]; });
    want.insert(want.end(), sums.begin(), sums.end());
    slot += shape.rows;
  }
  reduce(in.data(), largest, out.data() + slot, Sum{}, stream);
  want.push_back(expected(values.data(), largest, Sum{}));
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  const std::vector<std::int64_t> got = out.download();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
  EXPECT_EQ(float_out.download()[0], expected(floats.data(), 2 << 21, Sum{}));
}

// More streams than the scratch keeps slots for: short-lived streams (destroyed while their work
// may still be queued) and, at once, more live streams than slots, called round robin so that
// every call takes over the slot of another stream. Every result must be right, and the number
// of slots must stay bounded.
TEST_F(Reduce, ScratchStaysBoundedAcrossManyStreams) {
  const std::int64_t n = (1 << 20) + 3;
  const Shape split{3, 300007};
  const std::vector<std::int64_t> values = random_values<std::int64_t>(std::size_t(n), 1200);
  const std::int64_t sum = expected(values.data(), n, Sum{});
  const std::vector<std::int64_t> row_sums = cpu::row_sums_of<std::int64_t>(
      split.rows, split.cols,
      [&](std::int64_t r, std::int64_t c) { return values[std::size_t(r * split.cols + c)]; });
  DeviceBuffer<std::int64_t> in(values);
  ASSERT_LE(split.rows * split.cols, n);
  ASSERT_GT(plan_on_this_gpu<std::int64_t>(split, true).splits, 1);  // the rows path uses scratch

  const int short_lived = int(2 * detail::stream_scratch_slots) + 5;
  const int live = int(detail::stream_scratch_slots) + 16, rounds = 3;
  const int calls = short_lived + live * rounds;
  DeviceBuffer<std::int64_t> out(static_cast<std::size_t>(calls)),
      rows_out(static_cast<std::size_t>(calls * split.rows));
  out.fill_bytes(0xFF);
  rows_out.fill_bytes(0xFF);
  // The poison is queued on the default stream, which a non-blocking stream does not wait for.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int call = 0;
  for (int s = 0; s < short_lived; ++s, ++call) {
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    reduce(in.data(), n, out.data() + call, Sum{}, stream);
    reduce_rows(in.data(), split.rows, split.cols, rows_out.data() + call * split.rows, Sum{},
                stream);
    ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
  std::vector<cudaStream_t> streams(std::size_t(live), nullptr);
  for (cudaStream_t& stream : streams)
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (int round = 0; round < rounds; ++round)
    for (cudaStream_t stream : streams) {
      reduce(in.data(), n, out.data() + call, Sum{}, stream);
      reduce_rows(in.data(), split.rows, split.cols, rows_out.data() + call * split.rows, Sum{},
                  stream);
      ++call;
    }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (cudaStream_t stream : streams) cudaStreamDestroy(stream);
  EXPECT_LE(detail::stream_scratch_slots_in_use(), detail::stream_scratch_slots);
  const std::vector<std::int64_t> got = out.download(), got_rows = rows_out.download();
  for (int c = 0; c < calls; ++c) {
    EXPECT_EQ(got[std::size_t(c)], sum) << "call " << c;
    for (std::int64_t r = 0; r < split.rows; ++r)
      EXPECT_EQ(got_rows[std::size_t(c * split.rows + r)], row_sums[std::size_t(r)])
          << "call " << c << " row " << r;
  }
}

// Captured into a CUDA graph, the reductions get scratch that the graph owns (allocation and
// memset nodes): the graph gives the right results launch after launch, for new input contents,
// while the same stream keeps using its own scratch outside the graph.
TEST_F(Reduce, CapturedGraphsOwnTheirScratch) {
  const std::int64_t n = (1 << 20) + 5;  // eighths: every partial sum exact
  const Shape split{3, 300007};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // Filled before the warm-up calls below, which read it (initcheck reports a read of unwritten
  // memory).
  DeviceBuffer<float> in(random_values<float>(std::size_t(n), 1299));
  DeviceBuffer<float> out(1), rows_out(std::size_t(split.rows)), eager_out(1);
  // The upload went through the default stream, which a non-blocking stream does not wait for.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // First calls outside the capture: the kernels are loaded and the grid size queries made and
  // cached then.
  reduce(in.data(), n, eager_out.data(), Sum{}, stream);
  reduce_rows(in.data(), split.rows, split.cols, rows_out.data(), Sum{}, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  reduce(in.data(), n, out.data(), Sum{}, stream);
  reduce_rows(in.data(), split.rows, split.cols, rows_out.data(), Sum{}, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (std::uint64_t seed = 1300; seed < 1303; ++seed) {
    const std::vector<float> values = random_values<float>(std::size_t(n), seed);
    ASSERT_EQ(
        cudaMemcpy(in.data(), values.data(), sizeof(float) * values.size(), cudaMemcpyHostToDevice),
        cudaSuccess);
    out.fill_bytes(0xFF);
    rows_out.fill_bytes(0xFF);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    reduce(in.data(), n, eager_out.data(), Sum{}, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const float sum = expected(values.data(), n, Sum{});
    EXPECT_EQ(out.download()[0], sum) << "seed " << seed;
    EXPECT_EQ(eager_out.download()[0], sum) << "seed " << seed;
    const std::vector<float> row_sums = cpu::row_sums_of<float>(
        split.rows, split.cols,
        [&](std::int64_t r, std::int64_t c) { return values[std::size_t(r * split.cols + c)]; });
    EXPECT_EQ(rows_out.download(), row_sums) << "seed " << seed;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// ---------------------------------------------------------------------------------------------
// Bad input

template <class Call>
void expect_error_naming(Call call, const std::string& argument, const std::string& words) {
  try {
    call();
    ADD_FAILURE() << "no rooflab::Error for argument " << argument;
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
  }
}

TEST_F(Reduce, BadInputThrowsErrorNamingTheArgument) {
  DeviceBuffer<float> in(16), out(1);
  expect_error_naming([&] { reduce(in.data(), 0, out.data()); }, "n", "must be at least 1, got 0");
  expect_error_naming([&] { reduce(in.data(), -5, out.data()); }, "n", "got -5");
  expect_error_naming([&] { reduce<float>(nullptr, 16, out.data()); }, "in", "null pointer");
  expect_error_naming([&] { reduce<float>(in.data(), 16, nullptr); }, "out", "null pointer");
  const auto* misaligned =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(in.data()) + 2);
  expect_error_naming([&] { reduce(misaligned, 4, out.data()); }, "in", "not aligned");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // nothing was launched
}

TEST_F(ReduceRows, BadInputThrowsErrorNamingTheArgument) {
  DeviceBuffer<double> in(16), out(4);
  expect_error_naming([&] { reduce_rows(in.data(), 0, 4, out.data()); }, "rows",
                      "must be at least 1");
  expect_error_naming([&] { reduce_rows(in.data(), -1, 4, out.data()); }, "rows", "got -1");
  expect_error_naming([&] { reduce_rows(in.data(), 4, 0, out.data()); }, "cols",
                      "must be at least 1");
  expect_error_naming([&] { reduce_rows(in.data(), 4, -3, out.data()); }, "cols", "got -3");
  expect_error_naming([&] { reduce_rows<double>(nullptr, 4, 4, out.data()); }, "in",
                      "null pointer");
  expect_error_naming([&] { reduce_rows<double>(in.data(), 4, 4, nullptr); }, "out",
                      "null pointer");
  expect_error_naming(
      [&] { reduce_rows(in.data(), std::int64_t(1) << 40, std::int64_t(1) << 30, out.data()); },
      "rows", "does not fit in 64 bits");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace rooflab
