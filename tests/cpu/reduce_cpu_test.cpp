// The reductions' CPU side: references and baselines, the production path's launch plan, the lab's
// inputs and the two ops' definitions. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/reduce.hpp"
#include "reduce/reduce_workspace.hpp"
#include "rooflab/detail/reduce_plan.hpp"
#include "rooflab/error.hpp"
#include "rooflab/operators.hpp"

namespace rooflab {
namespace {

// Min and Max return a NaN operand whichever side it is on, so folding in any order returns NaN
// where any element is one (the GPU's tree combines in the launch's order); otherwise the least or
// largest value, integers and signed zeros as < orders them.
template <class T>
void expect_min_max_propagate_nan() {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (const T x : {T(1), T(-2.5), std::numeric_limits<T>::infinity(),
                    -std::numeric_limits<T>::infinity(), Min::identity<T>(), Max::identity<T>()}) {
    EXPECT_TRUE(std::isnan(Min{}(nan, x))) << x;
    EXPECT_TRUE(std::isnan(Min{}(x, nan))) << x;
    EXPECT_TRUE(std::isnan(Max{}(nan, x))) << x;
    EXPECT_TRUE(std::isnan(Max{}(x, nan))) << x;
  }
  EXPECT_TRUE(std::isnan(Min{}(nan, nan)));
  EXPECT_TRUE(std::isnan(Max{}(nan, nan)));
  const std::vector<T> values{T(3), T(-1), nan, T(7), T(0.5)};
  for (std::size_t rotate = 0; rotate < values.size(); ++rotate) {
    T least = Min::identity<T>(), largest = Max::identity<T>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      least = Min{}(least, values[(i + rotate) % values.size()]);
      largest = Max{}(values[(i + rotate) % values.size()], largest);
    }
    EXPECT_TRUE(std::isnan(least)) << rotate;
    EXPECT_TRUE(std::isnan(largest)) << rotate;
  }
  EXPECT_EQ(Min{}(T(2), T(-3)), T(-3));
  EXPECT_EQ(Max{}(T(2), T(-3)), T(2));
}

TEST(ReduceOperators, MinAndMaxPropagateNanInEitherOperand) {
  expect_min_max_propagate_nan<float>();
  expect_min_max_propagate_nan<double>();
}

TEST(ReduceOperators, IntegerMinAndMaxAreUnchanged) {
  EXPECT_EQ(Min{}(std::int32_t(-5), std::int32_t(4)), -5);
  EXPECT_EQ(Max{}(std::int64_t(-5), std::int64_t(4)), 4);
  EXPECT_EQ(Min{}(std::uint32_t(0), Min::identity<std::uint32_t>()), 0u);
  EXPECT_EQ(Max{}(Max::identity<std::int32_t>(), std::int32_t(-7)), -7);
}

TEST(CpuSums, Int32SumWrapsLikeTheGpu) {
  const std::vector<std::int32_t> values{std::numeric_limits<std::int32_t>::max(), 1, 5};
  const std::int32_t expected = std::numeric_limits<std::int32_t>::min() + 5;
  EXPECT_EQ(cpu::sum_serial(values.data(), 3), expected);
  EXPECT_EQ(cpu::sum_parallel(values.data(), 3), expected);
}

TEST(CpuSums, Int64AndUint32SumsWrapModulo2ToTheBits) {
  const std::vector<std::int64_t> big{std::numeric_limits<std::int64_t>::max(), 2};
  EXPECT_EQ(cpu::sum_serial(big.data(), 2), std::numeric_limits<std::int64_t>::min() + 1);
  const std::vector<std::uint32_t> unsigned_values{std::numeric_limits<std::uint32_t>::max(), 3};
  EXPECT_EQ(cpu::sum_parallel(unsigned_values.data(), 2), 2u);
}

TEST(CpuSums, FloatSumIsAccumulatedInDouble) {
  // A float accumulator would round 2^24 + 1 back to 2^24 twice; double keeps both ones.
  const std::vector<float> values{16777216.0f, 1.0f, 1.0f};
  EXPECT_EQ(cpu::sum_serial(values.data(), 3), 16777218.0f);
  EXPECT_EQ(cpu::sum_parallel(values.data(), 3), 16777218.0f);
}

TEST(CpuSums, ParallelSumEqualsSerialSumForWrappingIntegers) {
  const std::uint64_t seed = 7;
  std::mt19937_64 random(seed);
  std::vector<std::int32_t> values((1 << 20) + 7);
  for (auto& value : values) value = std::int32_t(std::uint32_t(random()));
  EXPECT_EQ(cpu::sum_parallel(values.data(), std::int64_t(values.size())),
            cpu::sum_serial(values.data(), std::int64_t(values.size())))
      << "seed " << seed;
}

TEST(CpuSums, RowSumsMatchAPlainLoopForEveryShape) {
  const std::uint64_t seed = 11;
  std::mt19937_64 random(seed);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{
      {1, 1}, {1, 300007}, {100003, 1}, {7, 13}, {1000, 3}, {3, 100003}, {257, 4099}};
  for (const auto& [rows, cols] : shapes) {
    std::vector<std::int64_t> values(std::size_t(rows * cols));
    for (auto& value : values) value = std::int64_t(random());
    std::vector<std::int64_t> sums(std::size_t(rows), -1);
    cpu::row_sums_parallel(values.data(), rows, cols, sums.data());
    for (std::int64_t r = 0; r < rows; ++r) {
      std::uint64_t expected = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        expected += std::uint64_t(values[std::size_t(r * cols + c)]);
      ASSERT_EQ(sums[std::size_t(r)], std::int64_t(expected))
          << rows << " x " << cols << ", row " << r << ", seed " << seed;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The production path's plan.

struct Twelve {
  int a, b, c;
};

TEST(ReducePlan, VectorWidthIsSixteenBytesOfElements) {
  EXPECT_EQ(detail::vector_width<float>(), 4);
  EXPECT_EQ(detail::vector_width<double>(), 2);
  EXPECT_EQ(detail::vector_width<std::int64_t>(), 2);
  EXPECT_EQ(detail::vector_width<std::uint8_t>(), 16);
  EXPECT_EQ(detail::vector_width<Twelve>(), 1);
}

TEST(ReducePlan, ReduceGridGrowsWithNUpToOneWave) {
  const int wave = 132 * 8;
  EXPECT_EQ(detail::reduce_blocks(1, 4, wave), 1);
  EXPECT_EQ(detail::reduce_blocks(4096, 4, wave), 1);  // 4 float4 for each of 256 threads
  EXPECT_EQ(detail::reduce_blocks(4097, 4, wave), 2);
  EXPECT_EQ(detail::reduce_blocks(std::int64_t(1) << 24, 4, wave), wave);
  EXPECT_EQ(detail::reduce_blocks(std::int64_t(1) << 40, 2, wave), wave);
}

// An H100 SXM: 132 SMs, 8 resident blocks of 256 each (of the 1-D reduce's kernel), 4 of the
// blocks-per-row kernel (the minimum its launch bounds promise, which its registers allow).
constexpr int h100_sms = 132;
constexpr int h100_resident = 132 * 8;
constexpr int h100_rows_by_blocks_resident = 132 * detail::rows_by_blocks_min_blocks_per_sm;

detail::RowsPlan plan_floats(std::int64_t rows, std::int64_t cols, bool aligned_base = true) {
  return detail::plan_reduce_rows(rows, cols, 4, aligned_base && cols % 4 == 0, h100_sms,
                                  h100_rows_by_blocks_resident);
}

TEST(ReducePlan, TinyRowsShareAWarp) {
  const detail::RowsPlan plan = plan_floats(1 << 20, 32);
  EXPECT_EQ(plan.path, detail::RowsPath::lanes_per_row);
  EXPECT_TRUE(plan.vector_units);
  EXPECT_EQ(plan.lanes_per_row, 8);  // 8 float4 per row
}

TEST(ReducePlan, TinyUnalignedRowsFallBackToOneElementPerLane) {
  const detail::RowsPlan plan = plan_floats(1 << 20, 32, false);
  EXPECT_EQ(plan.path, detail::RowsPath::lanes_per_row);
  EXPECT_FALSE(plan.vector_units);
  EXPECT_EQ(plan.lanes_per_row, 32);
  EXPECT_EQ(plan_floats(100003, 1).lanes_per_row, 1);
  EXPECT_EQ(plan_floats(7919, 13).lanes_per_row, 16);
}

TEST(ReducePlan, ManyMediumRowsGetAWarpEach) {
  EXPECT_EQ(plan_floats(256 << 10, 1024).path, detail::RowsPath::warp_per_row);
  EXPECT_EQ(plan_floats(64 << 10, 4096).path, detail::RowsPath::warp_per_row);
  EXPECT_EQ(plan_floats(4099, 1001).path, detail::RowsPath::warp_per_row);
}

TEST(ReducePlan, FewMediumRowsGetABlockEachUnsplit) {
  const detail::RowsPlan plan = plan_floats(100, 5003);
  EXPECT_EQ(plan.path, detail::RowsPath::blocks_per_row);
  EXPECT_EQ(plan.splits, 1);  // 1251 vectors: too few to split
}

TEST(ReducePlan, FewLongRowsAreSplitIntoOneWaveAndManyIntoAboutEight) {
  static_assert(h100_rows_by_blocks_resident == 528);
  const detail::RowsPlan eight = plan_floats(8, 32 << 20);
  EXPECT_EQ(eight.path, detail::RowsPath::blocks_per_row);
  EXPECT_EQ(eight.splits, 66);
  EXPECT_EQ(eight.splits * 8, h100_rows_by_blocks_resident);
  EXPECT_EQ(plan_floats(9, 32 << 20).splits, 58);  // 522 parts: the most that fit one wave
  EXPECT_EQ(plan_floats(527, 256 << 10).splits, 1);
  // As many rows as resident blocks or more: about 8 waves.
  EXPECT_EQ(plan_floats(528, 256 << 10).splits, 8);
  EXPECT_EQ(plan_floats(1024, 256 << 10).splits, 5);  // ceil(8 x 528 / 1024)
  EXPECT_EQ(plan_floats(2000, 256 << 10).splits, 3);
  EXPECT_EQ(plan_floats(10000, 256 << 10).splits, 1);
}

TEST(ReducePlan, SplitPartsStartOn128ByteLinesAndCoverTheRow) {
  for (const auto& [vectors, splits] : {std::pair<std::int64_t, std::int64_t>{8 << 20, 132},
                                        {75002, 36},
                                        {8 << 20, 1},
                                        {2049, 1}}) {
    const std::int64_t part = detail::split_part_vectors(vectors, splits);
    EXPECT_EQ(part % 8, 0) << vectors << " vectors in " << splits << " parts";
    EXPECT_GE(part * splits, vectors);
    EXPECT_LT(part * (splits - 1), vectors) << "the last part is empty";
  }
  EXPECT_EQ(detail::split_part_vectors(8 << 20, 132), 63552);  // 63551 rounded up
}

// Vectors in the last part of a row body cut in `splits` parts, where the blocks-per-row kernel
// cuts it (reduce.cuh: part p begins at p x split_part_vectors, at most at the row's end).
std::int64_t last_part_vectors(std::int64_t vectors, std::int64_t splits) {
  const std::int64_t before = (splits - 1) * detail::split_part_vectors(vectors, splits);
  return before < vectors ? vectors - before : 0;
}

// Parts are rounded up to whole multiples of 8 vectors, so the parts before the last can cover
// the whole row: 1 row of 2113560 floats (528390 vectors) on an H100 is cut into 258 parts of 2056
// vectors (2048.02 rounded up to a multiple of 8), and the first 257 of them hold 528392. The
// kernel's last block then folds nothing (ReduceRows.SplitRowsWithAnEmptyLastPartEqualTheCpu in
// tests/gpu/reduce_test.cu).
TEST(ReducePlan, OneRowOf2113560FloatsLeavesItsLastPartEmptyOnAnH100) {
  const detail::RowsPlan plan = plan_floats(1, 2113560);
  EXPECT_EQ(plan.path, detail::RowsPath::blocks_per_row);
  EXPECT_EQ(plan.splits, 258);  // 528390 / (256 threads x 8), fewer than the 528 resident blocks
  EXPECT_EQ(detail::split_part_vectors(528390, 258), 2056);
  EXPECT_EQ(last_part_vectors(528390, 258), 0);
  EXPECT_EQ(plan_floats(2, 2113560).splits, 258);  // two rows: 264 would fill the wave; 258 most
  EXPECT_EQ(last_part_vectors(528385, plan_floats(1, 2113540).splits), 0);  // the first such row
  EXPECT_GT(last_part_vectors(528384, plan_floats(1, 2113536).splits), 0);
  EXPECT_GT(last_part_vectors(528390, plan_floats(3, 2113560).splits), 0);  // 176 parts
}

// A plan cuts a row into s parts only when each has at least 2048 vectors (8 per thread of 256),
// and rounding a part up to a multiple of 8 adds at most 7: the first s - 1 parts cover the row
// only when 8 (s - 1) reaches about 2048, that is from 258 parts on. So a GPU holding fewer than
// 258 blocks of the kernel per row never leaves a last part empty (the GPU tests skip there).
TEST(ReducePlan, AnEmptyLastPartNeedsAtLeast258Parts) {
  const std::int64_t least = std::int64_t(detail::reduce_block_threads) *
                             detail::split_min_vectors_per_thread;  // vectors in the least part
  std::int64_t fewest = 0;
  for (std::int64_t splits = 2; splits <= 300 && fewest == 0; ++splits)
    for (std::int64_t vectors = least * splits; vectors <= 8 * splits * splits; ++vectors)
      if (last_part_vectors(vectors, splits) == 0) {
        fewest = splits;
        break;
      }
  EXPECT_EQ(fewest, 258);
}

TEST(ReducePlan, SplitPartsKeepEightVectorsPerThread) {
  const detail::RowsPlan plan = plan_floats(3, 300007);
  EXPECT_EQ(plan.path, detail::RowsPath::blocks_per_row);
  EXPECT_EQ(plan.splits, 36);  // 75002 vectors / (256 threads x 8)
}

TEST(ReducePlan, SmallRowsGridIsAWarpPerPassUpToOneWave) {
  EXPECT_EQ(detail::small_rows_per_pass(8), 32);  // 8 loads of 4 rows
  EXPECT_EQ(detail::small_rows_per_pass(1), 256);
  EXPECT_EQ(detail::small_rows_per_pass(32), 8);
  EXPECT_EQ(detail::small_rows_blocks(1, 8, h100_resident), 1);
  EXPECT_EQ(detail::small_rows_blocks(256, 8, h100_resident), 1);  // 8 warps x 32 rows
  EXPECT_EQ(detail::small_rows_blocks(257, 8, h100_resident), 2);
  EXPECT_EQ(detail::small_rows_blocks(1 << 20, 8, h100_resident), h100_resident);
  EXPECT_EQ(detail::small_rows_blocks(std::int64_t(1) << 40, 1, 0), 1);
}

// The small-rows kernel's reduce-scatter (reduce.cuh), modelled on the host: every lane starts
// with 8 values, value k holding its unit of row small_row_of(lanes, group, k); each step
// across lanes `mask` apart keeps the lower half of the values where the mask bit is clear, the
// upper half where it is set, each joined with the partner's copy; lanes still sharing a total
// (more than 8 lanes per row) then join theirs. Every lane must end with exactly the rows that
// small_row_stored says it stores, each holding every unit of its row exactly once, and every row
// of the pass must be stored exactly once.
TEST(ReducePlan, SmallRowsReduceScatterLeavesEachLaneTheRowsItStores) {
  using Contributions = std::multiset<std::pair<int, int>>;  // (row, unit)
  constexpr int steps = detail::small_rows_in_flight;
  for (const int lanes : {1, 2, 4, 8, 16, 32}) {
    std::vector<std::vector<Contributions>> values(32, std::vector<Contributions>(steps));
    for (int lane = 0; lane < 32; ++lane)
      for (int k = 0; k < steps; ++k)
        values[lane][k] = {{detail::small_row_of(lanes, lane / lanes, k), lane % lanes}};
    const int kept = detail::small_rows_kept(lanes);
    for (int mask = lanes / 2, size = steps; size > kept; mask /= 2, size /= 2) {
      std::vector<std::vector<Contributions>> halves(32, std::vector<Contributions>(size / 2));
      for (int lane = 0; lane < 32; ++lane) {
        const int partner = lane ^ mask;
        const bool upper = (lane & mask) != 0;
        for (int i = 0; i < size / 2; ++i) {
          halves[lane][i] = values[lane][upper ? i + size / 2 : i];
          const Contributions& received = values[partner][upper ? i + size / 2 : i];
          halves[lane][i].insert(received.begin(), received.end());
        }
      }
      values = halves;
    }
    for (int mask = lanes / steps / 2; mask > 0; mask /= 2) {
      std::vector<std::vector<Contributions>> joined = values;
      for (int lane = 0; lane < 32; ++lane)
        joined[lane][0].insert(values[lane ^ mask][0].begin(), values[lane ^ mask][0].end());
      values = joined;
    }
    std::map<int, int> stores;
    for (int lane = 0; lane < 32; ++lane) {
      ASSERT_EQ(int(values[lane].size()), kept) << lanes << " lanes per row";
      for (int i = 0; i < kept; ++i) {
        const int row = detail::small_row_stored(lanes, lane, i);
        if (row < 0) continue;
        ++stores[row];
        Contributions whole_row;
        for (int unit = 0; unit < lanes; ++unit) whole_row.insert({row, unit});
        EXPECT_EQ(values[lane][i], whole_row)
            << lanes << " lanes per row: lane " << lane << ", kept value " << i;
      }
    }
    ASSERT_EQ(std::int64_t(stores.size()), detail::small_rows_per_pass(lanes)) << lanes;
    for (const auto& [row, count] : stores) {
      EXPECT_GE(row, 0);
      EXPECT_LT(row, detail::small_rows_per_pass(lanes));
      EXPECT_EQ(count, 1) << lanes << " lanes per row: row " << row;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The lab's inputs and ops.

TEST(ReduceInputs, FloatsAreEighthsInMinusOneToOneAndNotAllZero) {
  std::set<float> seen;
  for (std::int64_t i = 0; i < 4096; ++i) {
    const float value = bench::reduce_input<float>(3, i);
    ASSERT_GE(value, -1.0f);
    ASSERT_LE(value, 1.0f);
    ASSERT_EQ(value * 8, float(int(value * 8))) << "index " << i;
    seen.insert(value);
  }
  EXPECT_EQ(seen.size(), 17u);  // every eighth from -1 to 1
}

TEST(ReduceInputs, Int32InputsCoverBothSignsAndWrapWhenSummed) {
  bool negative = false, positive = false;
  std::uint64_t magnitude = 0;
  for (std::int64_t i = 0; i < 1024; ++i) {
    const std::int32_t value = bench::reduce_input<std::int32_t>(5, i);
    negative |= value < 0;
    positive |= value > 0;
    magnitude += std::uint64_t(value < 0 ? -std::int64_t(value) : value);
  }
  EXPECT_TRUE(negative && positive);
  EXPECT_GT(magnitude, std::uint64_t(std::numeric_limits<std::int32_t>::max()));
}

// The seeds' rungs, production, the rungs that measure its L2 hint and CUB's dealing, CUB.
TEST(ReduceOps, LadderHasTheSeedsRungsInStoryOrder) {
  std::vector<std::string> names;
  for (const bench::Variant* variant : bench::registry().variants("reduce"))
    names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-serial",
                                             "cpu-parallel",
                                             "atomic-global",
                                             "interleaved-divergent",
                                             "interleaved-strided",
                                             "sequential",
                                             "first-add",
                                             "last-warp-volatile",
                                             "last-warp-syncwarp",
                                             "complete-unroll",
                                             "multiple-adds",
                                             "unroll2",
                                             "unroll4",
                                             "unroll8",
                                             "unroll8-complete",
                                             "unroll8-template",
                                             "shuffle-one-pass",
                                             "production",
                                             "plain-grid-stride",
                                             "even-share",
                                             "cub",
                                             "unroll8-last-warp",  // 002's step, numbered last
                                             "neighboured-in-place"}));  // 002's starting point
}

// Rung 22 adds in place, so it needs its prepare (a fresh copy of the input before every run,
// outside the timed region); like the documents' other rungs it takes float and int32.
TEST(ReduceOps, InPlaceRungCopiesItsInputInItsPrepare) {
  const bench::Variant* in_place = nullptr;
  for (const bench::Variant* variant : bench::registry().variants("reduce"))
    if (variant->name == "neighboured-in-place") in_place = variant;
  ASSERT_NE(in_place, nullptr);
  EXPECT_EQ(in_place->rung, 22);
  EXPECT_TRUE(in_place->prepare);
  bench::Problem problem;
  problem.n = 1000;
  for (const char* dtype : {"float", "int32"}) {
    problem.dtype = dtype;
    EXPECT_EQ(in_place->limit(problem), "") << dtype;
  }
}

// The naive rungs, a block per row (after the Harris's reduction document's template), production,
// CUB.
TEST(ReduceOps, RowsLadderEndsWithProductionAndCub) {
  std::vector<std::string> names;
  for (const bench::Variant* variant : bench::registry().variants("reduce-rows"))
    names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-parallel", "thread-per-row", "block-per-row",
                                             "production", "cub-segmented"}));
}

TEST(ReduceOps, SeedRungsSkipOtherTypesSayingWhy) {
  bench::Problem problem;
  problem.n = 1000;
  problem.dtype = "double";
  for (const bench::Variant* variant : bench::registry().variants("reduce")) {
    const std::string note = variant->limit ? variant->limit(problem) : "";
    const bool every_type = variant->where == bench::Where::cpu || variant->name == "production" ||
                            variant->name == "cub";
    EXPECT_EQ(note.empty(), every_type) << variant->name << ": " << note;
  }
}

TEST(ReduceOps, ModelCountsTheBytesReadOfTheElementType) {
  const bench::Op& reduce = bench::registry().op("reduce");
  bench::Problem problem;
  problem.n = 1000;
  problem.dtype = "int64";
  const bench::Model model = reduce.model(reduce.resolve(problem));
  EXPECT_EQ(model.bytes, 8000);
  EXPECT_EQ(model.ceiling, bench::Ceiling::read_bandwidth);
  const bench::Op& rows = bench::registry().op("reduce-rows");
  const bench::Problem defaults = rows.resolve(bench::Problem{});
  EXPECT_EQ(rows.describe(defaults), "rows = 65536, cols = 4096, float");
  EXPECT_EQ(rows.model(defaults).bytes, 4.0 * 65536 * 4096);
}

TEST(ReduceOps, UnknownTypeAndOverflowingShapeAreRejected) {
  bench::Problem problem;
  problem.dtype = "uint8";
  EXPECT_THROW(bench::registry().op("reduce").resolve(problem), Error);
  bench::Problem huge;
  huge.rows = std::int64_t(1) << 40;
  huge.cols = std::int64_t(1) << 30;
  try {
    bench::registry().op("reduce-rows").resolve(huge);
    FAIL() << "a shape of 2^70 elements was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "--rows");
  }
}

}  // namespace
}  // namespace rooflab
