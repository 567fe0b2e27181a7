// The limiting-factor lab without a GPU: every access pattern is a bijection (a rung can be slow
// because of its pattern, never wrong), the formulas' float error stays within the tolerances
// the checks use, and the CPU baselines compute what the references say.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/lab.hpp"
#include "lab/coalescing.hpp"
#include "lab/patterns.hpp"
#include "rooflab/error.hpp"

namespace rooflab {
namespace {

TEST(LabPatterns, StridedOffsetIsABijectionOnEveryTile) {
  for (const int stride : {1, 2, 3, 4, 8, 16, 32}) {
    std::set<int> offsets;
    for (int r = 0; r < lab::warp_size * stride; ++r) {
      const int offset = lab::strided_offset(r, stride);
      EXPECT_GE(offset, 0) << "stride " << stride;
      EXPECT_LT(offset, lab::warp_size * stride) << "stride " << stride;
      offsets.insert(offset);
    }
    EXPECT_EQ(int(offsets.size()), lab::warp_size * stride) << "stride " << stride;
  }
}

TEST(LabPatterns, StridedOffsetPutsAWarpsLanesStrideApart) {
  for (const int stride : {2, 8, 32})
    for (int warp = 0; warp < stride; ++warp)
      for (int lane = 1; lane < lab::warp_size; ++lane)
        EXPECT_EQ(lab::strided_offset(warp * lab::warp_size + lane, stride) -
                      lab::strided_offset(warp * lab::warp_size + lane - 1, stride),
                  stride);
}

TEST(LabPatterns, IsHeavyMarksOneElementInEverySpacing) {
  for (const int spacing : {1, 2, 4, 8, 16, 32}) {
    int heavy = 0;
    for (std::int64_t i = 0; i < 64; ++i) heavy += lab::is_heavy(i, spacing);
    EXPECT_EQ(heavy, 64 / spacing) << "spacing " << spacing;
    EXPECT_TRUE(lab::is_heavy(0, spacing));
  }
  EXPECT_TRUE(lab::is_heavy(std::int64_t(1) << 40, 32));  // 64-bit indices
  EXPECT_FALSE(lab::is_heavy((std::int64_t(1) << 40) + 2, 4));
}

TEST(LabPatterns, WarpSortedOffsetGivesTheFirstWarpExactlyTheHeavyElements) {
  for (const int spacing : {1, 2, 4, 8, 16, 32}) {
    const int tile = lab::warp_size * spacing;
    std::set<int> offsets;
    for (int r = 0; r < tile; ++r) {
      const int offset = lab::warp_sorted_offset(r, spacing);
      ASSERT_GE(offset, 0) << "spacing " << spacing << " r " << r;
      ASSERT_LT(offset, tile) << "spacing " << spacing << " r " << r;
      EXPECT_EQ(lab::is_heavy(offset, spacing), r < lab::warp_size)
          << "spacing " << spacing << " r " << r;
      offsets.insert(offset);
    }
    EXPECT_EQ(int(offsets.size()), tile) << "spacing " << spacing;
  }
}

TEST(LabPatterns, HeavyWorkInFloatStaysWithinTheCheckTolerance) {
  std::mt19937 generator(1234);
  std::uniform_int_distribution<int> grid(-(1 << 23), (1 << 23) - 1);  // random_float's grid
  const double tolerance = std::ldexp(1.0, -20);  // DivergenceWorkspace::check's
  for (int sample = 0; sample < 200; ++sample) {
    const float y = float(grid(generator)) / float(1 << 23);
    const double exact = lab::heavy_work(double(y), lab::heavy_iterations);
    // The CPU rung's two roundings per step, and the GPU's fused multiply-add.
    const float separate = lab::heavy_work(y, lab::heavy_iterations);
    float fused = y;
    for (int k = 0; k < lab::heavy_iterations; ++k) fused = std::fma(fused, 0.75f, y);
    const double scale = std::max(std::abs(exact), std::ldexp(1.0, -100));
    EXPECT_LE(std::abs(separate - exact) / scale, tolerance) << "y = " << y << " (seed 1234)";
    EXPECT_LE(std::abs(fused - exact) / scale, tolerance) << "y = " << y << " (seed 1234)";
  }
}

TEST(LabPatterns, SmoothColumnInFloatErrsAtMostOneUlpOfOnePerPass) {
  std::mt19937 generator(99);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int sample = 0; sample < 100; ++sample) {
    float x[lab::tile_rows];
    double exact[lab::tile_rows];
    for (int k = 0; k < lab::tile_rows; ++k) exact[k] = x[k] = value(generator);
    lab::smooth_column(x, lab::smoothing_passes);
    lab::smooth_column(exact, lab::smoothing_passes);
    for (int k = 0; k < lab::tile_rows; ++k) {
      EXPECT_LE(std::abs(exact[k]), 1.0);
      EXPECT_LE(std::abs(x[k] - exact[k]), lab::smoothing_passes * std::ldexp(1.0, -24))
          << "seed 99";
    }
  }
}

TEST(LabCpu, HeavyOrCopyTransformsOnlyTheHeavyElements) {
  const std::int64_t n = 1000;
  std::vector<float> in(n), out(n, std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < n; ++i) in[i] = float(i % 17 - 8) / 16.0f;
  cpu::heavy_or_copy(in.data(), out.data(), n, 4, 10);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0)
      EXPECT_FLOAT_EQ(out[i], lab::heavy_work(in[i], 10)) << i;
    else
      EXPECT_EQ(out[i], in[i]) << i;
  }
}

TEST(LabCpu, SmoothTilesPadsAPartialTileWithZerosAndWritesNothingPastN) {
  const std::int64_t n = 2 * 1024 + 45;  // two whole tiles and a partial one
  std::vector<float> in(n);
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& x : in) x = value(generator);
  std::vector<float> out(n + 64, 42.0f);
  cpu::smooth_tiles(in.data(), out.data(), n, 8);
  for (std::int64_t i = n; i < n + 64; ++i) EXPECT_EQ(out[i], 42.0f) << "wrote past n at " << i;
  const std::vector<double> reference = cpu::smooth_tiles_reference(in.data(), n, 8);
  // Element i of the partial tile, column lane: the column padded with zeros, smoothed by hand.
  const std::int64_t i = 2 * 1024 + 7;  // row 0, lane 7 of the partial tile
  double column[lab::tile_rows] = {};
  column[0] = in[i];
  column[1] = in[i + 32];  // row 1, lane 7: 2048 + 39 < n; rows 2.. are past n
  lab::smooth_column(column, 8);
  EXPECT_DOUBLE_EQ(reference[i], column[0]);
  for (std::int64_t k = 0; k < n; ++k)
    EXPECT_NEAR(out[k], reference[k], 8 * std::ldexp(1.0, -24)) << k << " (seed 7)";
}

TEST(LabCpu, SumPrivatizedMatchesASerialSum) {
  const std::int64_t n = (1 << 20) + 3;
  std::vector<std::uint32_t> values(n);
  std::uint64_t expected = 0;
  for (std::int64_t i = 0; i < n; ++i) expected += values[i] = std::uint32_t(1 + i % 4);
  EXPECT_EQ(cpu::sum_privatized(values.data(), n), expected);
}

TEST(LabCoalescing, RandomLanePermutationIsAPermutationThatDependsOnTheSeed) {
  const auto first = bench::random_lane_permutation(1);
  const auto second = bench::random_lane_permutation(2);
  ASSERT_EQ(first.size(), 32u);
  EXPECT_EQ(std::set<std::uint8_t>(first.begin(), first.end()).size(), 32u);
  EXPECT_EQ(*std::max_element(first.begin(), first.end()), 31);
  EXPECT_NE(first, second);
  EXPECT_EQ(first, bench::random_lane_permutation(1));
}

TEST(LabRegistry, EveryLabOpIsRegisteredWithItsRungs) {
  const auto names = [](const std::string& op) {
    std::vector<std::string> list;
    for (const bench::Variant* variant : bench::registry().variants(op))
      list.push_back(variant->name);
    return list;
  };
  EXPECT_EQ(names("atomics"),
            (std::vector<std::string>{"cpu-parallel", "plain-add", "global-atomic",
                                      "warp-aggregated", "block-privatized"}));
  EXPECT_EQ(names("divergence"),
            (std::vector<std::string>{"cpu-parallel", "lane-branch", "warp-branch"}));
  EXPECT_EQ(names("timing"), (std::vector<std::string>{
                                 "cpu-host-clock", "events-synchronized", "events-unsynchronized",
                                 "host-clock-synchronized", "host-clock-unsynchronized",
                                 "after-write-flush", "after-read-flush"}));
  EXPECT_EQ(names("transfer").size(), 9u);
  EXPECT_EQ(names("coalescing").size(), 17u);
  EXPECT_EQ(names("occupancy").size(), 9u);
}

TEST(LabRegistry, OnlyThePlainAddRaceIsExpectedToFail) {
  for (const std::string& op : bench::registry().op_names())
    for (const bench::Variant* variant : bench::registry().variants(op)) {
      const bool racy = op == "atomics" && variant->name == "plain-add";
      EXPECT_EQ(variant->expected_failure.empty(), !racy) << op << " " << variant->name;
    }
}

TEST(LabRegistry, FirstTouchRungsRestoreTheirStartingStateAndNotesExplainRows) {
  for (const bench::Variant* variant : bench::registry().variants("transfer"))
    EXPECT_EQ(bool(variant->prepare), variant->name.rfind("managed-", 0) == 0) << variant->name;
  for (const bench::Variant* variant : bench::registry().variants("occupancy"))
    EXPECT_EQ(bool(variant->note), variant->where == bench::Where::gpu) << variant->name;
  for (const bench::Variant* variant : bench::registry().variants("timing"))
    EXPECT_TRUE(bool(variant->note)) << variant->name;
}

TEST(LabOps, TransferCountsBytesAgainstTheHostLink) {
  const bench::Op& op = bench::registry().op("transfer");
  const bench::Problem problem = op.resolve(bench::Problem{});
  EXPECT_EQ(problem.n, std::int64_t(256) << 20);
  EXPECT_EQ(op.model(problem).bytes, double(problem.n));
  EXPECT_EQ(op.model(problem).ceiling, bench::Ceiling::host_transfer_bandwidth);
  bench::Problem odd;
  odd.n = 1001;
  EXPECT_THROW(op.resolve(odd), Error);
  EXPECT_EQ(op.report_problems(false).size(), 4u);  // 1 MiB to 1 GiB
  EXPECT_EQ(op.report_problems(false).back().n, std::int64_t(1) << 30);
}

TEST(LabOps, DivergenceTakesHeavyElementsPerWarpAsM) {
  const bench::Op& op = bench::registry().op("divergence");
  bench::Problem problem = op.resolve(bench::Problem{});
  EXPECT_EQ(problem.m, 16);
  problem.n = 64;
  problem.m = 1;
  // 64 elements, 1 heavy in every 32: 2 heavy elements of 2 flops per iteration.
  EXPECT_EQ(op.model(op.resolve(problem)).flops, 2.0 * 2 * lab::heavy_iterations);
  problem.m = 3;
  EXPECT_THROW(op.resolve(problem), Error);
  const auto problems = op.report_problems(true);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].m, 16);
  EXPECT_EQ(problems[1].m, 1);
}

}  // namespace
}  // namespace rooflab
