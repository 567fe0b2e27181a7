// The arithmetic of the sharded ops and of the interconnect ladder's units (no NCCL, no GPU):
// where each shard starts in the concatenation, the rank-order fold, and nccl-tests' bus bandwidth.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "distributed/shard_math.hpp"
#include "rooflab/operators.hpp"

namespace rooflab::dist {
namespace {

TEST(DistributedMath, ShardOffsetsArePrefixSumsWithTheTotalLast) {
  EXPECT_EQ(shard_offsets({5, 0, 7, 1}), (std::vector<std::int64_t>{0, 5, 5, 12, 13}));
}

TEST(DistributedMath, ShardOffsetsOfOnlyEmptyShardsAreZero) {
  EXPECT_EQ(shard_offsets({0, 0, 0}), (std::vector<std::int64_t>{0, 0, 0, 0}));
}

TEST(DistributedMath, ShardOffsetsPassTwoToThe32) {
  const std::int64_t big = (std::int64_t(1) << 31) + 3;
  EXPECT_EQ(shard_offsets({big, big, big}).back(), 3 * big);
}

TEST(DistributedMath, NegativeShardSizeIsRejected) {
  EXPECT_THROW(shard_offsets({3, -1}), std::invalid_argument);
}

TEST(DistributedMath, EvenSplitPutsTheRemainderFirst) {
  EXPECT_EQ(even_shard_sizes(10, 4), (std::vector<std::int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(even_shard_sizes(2, 4), (std::vector<std::int64_t>{1, 1, 0, 0}));
}

TEST(DistributedMath, FoldSkipsEmptyShardsAndGoesInRankOrder) {
  // Float addition is not associative: left to right, (1 + 1e8) + -1e8 is 0 (1e8 + 1 rounds to
  // 1e8); right to left, 1 + (1e8 + -1e8) would be 1. Rank 1's 123 is an empty shard's slot.
  const std::vector<float> values = {1.0f, 123.0f, 1e8f, -1e8f};
  const std::vector<bool> counted = {true, false, true, true};
  bool found = false;
  const float total = fold_in_rank_order(values, counted, Sum{}, found);
  EXPECT_TRUE(found);
  EXPECT_EQ(total, 0.0f);
}

TEST(DistributedMath, FoldOfNothingSaysSo) {
  bool found = true;
  fold_in_rank_order(std::vector<double>{1.0, 2.0}, {false, false}, Sum{}, found);
  EXPECT_FALSE(found);
}

TEST(DistributedMath, FoldKeepsALoneNegativeZero) {
  bool found = false;
  const double total =
      fold_in_rank_order(std::vector<double>{5.0, -0.0}, {false, true}, Sum{}, found);
  EXPECT_TRUE(std::signbit(total));
}

TEST(DistributedMath, AllReduceBusBandwidthIsTwoTimesNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
}

TEST(DistributedMath, AllGatherBusBandwidthIsNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 4), 0.75);
}

TEST(DistributedMath, CopiesAndBroadcastsHaveBusEqualToAlgorithmBandwidth) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::send_recv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
}

TEST(DistributedMath, BusBandwidthOfAOneGibAllReduceOnFourRanks) {
  // 1 GiB in 4 ms: algbw 268.4 GB/s, busbw 1.5 x that.
  const double bytes = double(1 << 30), seconds = 4e-3;
  EXPECT_DOUBLE_EQ(algorithm_bandwidth(bytes, seconds), bytes / seconds);
  EXPECT_DOUBLE_EQ(bus_bandwidth(Collective::all_reduce, 4, bytes, seconds), 1.5 * bytes / seconds);
}

TEST(DistributedMath, ZeroRanksAreRejected) {
  EXPECT_THROW(bus_bandwidth_factor(Collective::all_reduce, 0), std::invalid_argument);
}

TEST(DistributedMath, H100LinkTheoryIs18LinksOf25GBs) {
  EXPECT_DOUBLE_EQ(link_bandwidth(18, 25e9), 450e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(0, 25e9), 0.0);
}

TEST(DistributedMath, PerLinkRateFollowsTheNvlinkGeneration) {
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(9, 0), 25e9);       // H100, H200: NVLink 4
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(8, 0), 25e9);       // A100: NVLink 3
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(8, 6), 14.0625e9);  // GA102 (A40, RTX 3090): four x4 links
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(10, 0), 50e9);      // B200: NVLink 5
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(8, 9), 0.0);        // Ada: no NVLink
  EXPECT_DOUBLE_EQ(nvlink_per_link_rate(7, 5), 0.0);        // Turing: not known here
}

}  // namespace
}  // namespace rooflab::dist
