// The memory experiments of the lab without a GPU: the latency chains are single cycles through
// every line, the shared-memory patterns have the conflict degrees their rungs are named after,
// the constant-memory reads are broadcasts or single lines as the rungs say, the ceiling model's
// arithmetic, and every new op's ladder as registered.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "lab/constant_memory.hpp"
#include "lab/memory_latency.hpp"
#include "lab/shared_memory.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

// The nodes met from word 0 until the walk comes back to it (capped at `limit`).
std::vector<std::uint32_t> nodes_of_cycle(const std::vector<std::uint32_t>& words,
                                          std::size_t limit) {
  std::vector<std::uint32_t> nodes{0};
  for (std::uint32_t node = words[0]; node != 0 && nodes.size() <= limit; node = words[node])
    nodes.push_back(node);
  return nodes;
}

TEST(LabLatency, RandomCycleVisitsEveryLineOnceBeforeReturning) {
  for (const std::int64_t lines : {1, 2, 3, 128, 1000, 32768})
    for (const std::uint64_t seed : {1u, 2u, 77u}) {
      const std::vector<std::uint32_t> next = latency_lab::random_cycle(lines, seed);
      ASSERT_EQ(std::int64_t(next.size()), lines);
      std::set<std::uint32_t> seen;
      std::uint32_t line = 0;
      for (std::int64_t k = 0; k < lines; ++k) {
        EXPECT_TRUE(seen.insert(line).second) << lines << " lines, seed " << seed;
        line = next[line];
      }
      EXPECT_EQ(line, 0u) << lines << " lines, seed " << seed;
      EXPECT_EQ(std::int64_t(seen.size()), lines);
    }
}

TEST(LabLatency, RandomCycleDependsOnTheSeedAndRepeatsForIt) {
  EXPECT_EQ(latency_lab::random_cycle(1000, 5), latency_lab::random_cycle(1000, 5));
  EXPECT_NE(latency_lab::random_cycle(1000, 5), latency_lab::random_cycle(1000, 6));
  EXPECT_THROW(latency_lab::random_cycle(0, 1), Error);
}

TEST(LabLatency, OneNodePerLineStepsFromLineToLineAtTheirFirstWords) {
  const std::int64_t lines = 512;
  const std::vector<std::uint32_t> next = latency_lab::random_cycle(lines, 9);
  const std::vector<std::uint32_t> words = latency_lab::chain_words(next, 1);
  ASSERT_EQ(std::int64_t(words.size()), lines * latency_lab::line_words);
  const std::vector<std::uint32_t> nodes = nodes_of_cycle(words, std::size_t(lines) * 32);
  ASSERT_EQ(std::int64_t(nodes.size()), lines);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    EXPECT_EQ(nodes[k] % latency_lab::line_words, 0u) << k;
    const std::uint32_t following = k + 1 < nodes.size() ? nodes[k + 1] : 0;
    EXPECT_EQ(following / latency_lab::line_words, next[nodes[k] / latency_lab::line_words]) << k;
  }
  EXPECT_EQ(words[1], 0xFFFFFFFFu);  // not a node
}

TEST(LabLatency, EveryWordANodeVisitsALinesWordsInOrderThenJumps) {
  const std::int64_t lines = 64;
  const std::vector<std::uint32_t> next = latency_lab::random_cycle(lines, 3);
  const std::vector<std::uint32_t> words = latency_lab::chain_words(next, latency_lab::line_words);
  const std::vector<std::uint32_t> nodes = nodes_of_cycle(words, words.size());
  ASSERT_EQ(nodes.size(), words.size());  // one cycle through every word
  for (std::size_t k = 0; k + 1 < nodes.size(); ++k) {
    if (nodes[k] % latency_lab::line_words + 1 < std::uint32_t(latency_lab::line_words))
      EXPECT_EQ(nodes[k + 1], nodes[k] + 1) << k;
    else
      EXPECT_EQ(nodes[k + 1], next[nodes[k] / latency_lab::line_words] * 32u) << k;
  }
  EXPECT_THROW(latency_lab::chain_words(next, 3), Error);
}

TEST(LabLatency, WalkFollowsTheWordsStepByStep) {
  const std::vector<std::uint32_t> words{2, 0, 1};  // 0 -> 2 -> 1 -> 0
  EXPECT_EQ(latency_lab::walk(words, 0, 0), 0u);
  EXPECT_EQ(latency_lab::walk(words, 0, 1), 2u);
  EXPECT_EQ(latency_lab::walk(words, 0, 2), 1u);
  EXPECT_EQ(latency_lab::walk(words, 0, 3 * 1000 + 1), 2u);
  EXPECT_EQ(latency_lab::walk(words, 1, 1), 0u);
}

TEST(LabLatency, WorkingSetsSitInL1L2AndDeviceMemory) {
  const std::int64_t mib = std::int64_t(1) << 20;
  EXPECT_EQ(on_chip_chain_bytes, 16 * 1024);
  EXPECT_EQ(l2_chain_bytes(50 * mib), 4 * mib);  // H100: 50 MiB of L2
  EXPECT_EQ(l2_chain_bytes(mib), mib / 2);       // a 1 MiB L2 (GTX 1650)
  EXPECT_EQ(device_chain_bytes(50 * mib), 200 * mib);
  EXPECT_EQ(device_chain_bytes(mib), 4 * mib);
  for (const std::int64_t l2 : {mib, 6 * mib, 40 * mib, 50 * mib, 60 * mib, 126 * mib}) {
    EXPECT_EQ(l2_chain_bytes(l2) % latency_lab::line_bytes, 0) << l2;
    EXPECT_EQ(device_chain_bytes(l2) % latency_lab::line_bytes, 0) << l2;
    EXPECT_GT(l2_chain_bytes(l2), 256 * 1024) << l2;  // past the largest L1 (256 KiB)
    EXPECT_LT(l2_chain_bytes(l2), l2) << l2;
    EXPECT_GE(device_chain_bytes(l2), 4 * l2 - latency_lab::line_bytes) << l2;
  }
}

TEST(LabSharedMemory, ConflictDegreeOfAStrideIsItsLargestPowerOfTwoUpTo32) {
  const std::map<int, int> expected{{0, 1}, {1, 1},   {2, 2},  {3, 1},   {4, 4},  {6, 2},
                                    {8, 8}, {16, 16}, {24, 8}, {32, 32}, {33, 1}, {64, 32}};
  for (const auto& [stride, degree] : expected)
    EXPECT_EQ(shared_lab::bank_conflict_degree(stride), degree) << "stride " << stride;
}

TEST(LabSharedMemory, EveryRungsWordsStayInTheTableWithTheirStridesConflictDegree) {
  for (const int stride : {1, 2, 4, 8, 16, 32, 33})
    for (int warp = 0; warp < shared_lab::block_threads / lab::warp_size; ++warp)
      for (int column = 0; column < shared_lab::words_per_pass; ++column) {
        std::map<int, std::set<int>> words_by_bank;
        for (int lane = 0; lane < lab::warp_size; ++lane) {
          const int word = shared_lab::strided_word(warp, lane, column, stride);
          ASSERT_GE(word, 0);
          ASSERT_LT(word, shared_lab::table_words) << "stride " << stride;
          words_by_bank[word % shared_lab::banks].insert(word);
        }
        std::size_t degree = 0;
        for (const auto& bank : words_by_bank) degree = std::max(degree, bank.second.size());
        EXPECT_EQ(int(degree), shared_lab::bank_conflict_degree(stride))
            << "stride " << stride << " warp " << warp << " column " << column;
      }
  for (int warp = 0; warp < shared_lab::block_threads / lab::warp_size; ++warp)
    for (int v = 0; v < shared_lab::chunks_per_pass; ++v) {
      EXPECT_LT(4 * shared_lab::vector_chunk(warp, lab::warp_size - 1, v) + 3,
                shared_lab::table_words);
      // A quarter-warp's 8 chunks are 32 consecutive words: every bank once.
      for (int quarter = 0; quarter < 4; ++quarter) {
        std::set<int> banks;
        for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane)
          for (int k = 0; k < 4; ++k)
            banks.insert((4 * shared_lab::vector_chunk(warp, lane, v) + k) % shared_lab::banks);
        EXPECT_EQ(banks.size(), 32u);
      }
    }
}

TEST(LabSharedMemory, CeilingModelIsSmsTimesBanksTimesFourBytesTimesClock) {
  // An H100 SXM: 132 SMs at 1980 MHz.
  EXPECT_DOUBLE_EQ(shared_lab::shared_memory_ceiling(132, 1980000), 132.0 * 32 * 4 * 1.98e9);
  EXPECT_DOUBLE_EQ(shared_lab::shared_memory_ceiling(1, 1000), 128.0 * 1e6);
}

TEST(LabSharedMemory, ThreadSumsDependOnWarpLaneAndStride) {
  std::vector<std::uint32_t> table(shared_lab::table_words);
  for (std::size_t k = 0; k < table.size(); ++k) table[k] = std::uint32_t(k * 7 + 1);
  // Thread 0 (warp 0, lane 0) at stride 1 reads words 0..63 once per pass.
  std::uint32_t words = 0;
  for (int c = 0; c < shared_lab::words_per_pass; ++c) words += table[std::size_t(c)];
  EXPECT_EQ(shared_lab::thread_sum(table, 0, 1), words * std::uint32_t(shared_lab::passes));
  EXPECT_NE(shared_lab::thread_sum(table, 1, 1), shared_lab::thread_sum(table, 0, 1));
  EXPECT_NE(shared_lab::thread_sum(table, 32, 1), shared_lab::thread_sum(table, 0, 1));
  EXPECT_EQ(shared_lab::thread_sum(table, 256, 2), shared_lab::thread_sum(table, 0, 2));
  EXPECT_NE(shared_lab::thread_sum(table, 5, 0), shared_lab::thread_sum(table, 5, 1));
}

TEST(LabConstantMemory, BroadcastReadsOneWordPerWarpStepAndDivergentReadsOneLine) {
  for (const std::int64_t warp : {std::int64_t(0), std::int64_t(5), std::int64_t(1) << 40})
    for (int r = 0; r < constant_lab::reads_per_thread; r += 7) {
      const int broadcast = constant_lab::table_word(warp, r, 0, false);
      std::set<int> divergent;
      for (int lane = 0; lane < lab::warp_size; ++lane) {
        EXPECT_EQ(constant_lab::table_word(warp, r, lane, false), broadcast);
        const int word = constant_lab::table_word(warp, r, lane, true);
        EXPECT_GE(word, 0);
        EXPECT_LT(word, constant_lab::table_words);
        divergent.insert(word);
      }
      EXPECT_EQ(divergent.size(), 32u);
      // 32 consecutive words from a multiple of 32: one 128-byte line of global memory.
      EXPECT_EQ(*divergent.begin() % lab::warp_size, 0);
      EXPECT_EQ(*divergent.rbegin() - *divergent.begin(), lab::warp_size - 1);
    }
}

TEST(LabConstantMemory, ThreadSumsDependOnTheWarpSoAWrongGroupFailsTheCheck) {
  std::vector<std::uint32_t> table(constant_lab::table_words);
  for (std::size_t k = 0; k < table.size(); ++k) table[k] = std::uint32_t(k * k % 1009);
  const std::int64_t lane3_of_warp0 = 3, lane3_of_warp1 = 32 + 3;
  EXPECT_NE(constant_lab::sum_of_reads(table, lane3_of_warp0, true),
            constant_lab::sum_of_reads(table, lane3_of_warp1, true));
  EXPECT_NE(constant_lab::sum_of_reads(table, 0, false),
            constant_lab::sum_of_reads(table, 32, false));
  // The broadcast sum is the same for every lane of a warp.
  EXPECT_EQ(constant_lab::sum_of_reads(table, 32, false),
            constant_lab::sum_of_reads(table, 63, false));
}

std::vector<std::string> rung_names(const std::string& op) {
  std::vector<std::string> names;
  for (const Variant* variant : registry().variants(op)) names.push_back(variant->name);
  return names;
}

TEST(LabRegistry, TheMemoryExperimentsAreRegisteredWithTheirRungs) {
  EXPECT_EQ(rung_names("constant-memory"),
            (std::vector<std::string>{"cpu-parallel", "global-broadcast", "constant-broadcast",
                                      "constant-divergent", "global-divergent"}));
  EXPECT_EQ(
      rung_names("shared-memory"),
      (std::vector<std::string>{"cpu-parallel", "chunks-16B", "stride-1", "stride-2", "stride-4",
                                "stride-8", "stride-16", "stride-32", "stride-33"}));
  EXPECT_EQ(rung_names("memory-latency"),
            (std::vector<std::string>{"cpu-chase", "shared", "l1", "l2", "device",
                                      "device-within-line"}));
  EXPECT_EQ(rung_names("synchronization"),
            (std::vector<std::string>{"cpu-parallel", "cas-lock", "cas-loop", "atomic-add",
                                      "ticket-fence", "ticket-fence-system"}));
  EXPECT_EQ(
      rung_names("memcpy-sync"),
      (std::vector<std::string>{"cpu-host-clock", "read-after-memcpy", "read-before-memcpy"}));
  EXPECT_EQ(
      rung_names("pageable-access"),
      (std::vector<std::string>{"host-memcpy", "pinned-kernel-read", "pageable-kernel-read"}));
}

TEST(LabRegistry, LatencyRungsBuildTheirChainFirstAndEveryRowExplainsItself) {
  for (const Variant* variant : registry().variants("memory-latency")) {
    EXPECT_TRUE(bool(variant->prepare)) << variant->name;  // the chain is built outside the timing
    EXPECT_TRUE(bool(variant->note)) << variant->name;
  }
  for (const Variant* variant : registry().variants("shared-memory"))
    EXPECT_EQ(bool(variant->note), variant->where == Where::gpu) << variant->name;
  for (const Variant* variant : registry().variants("memcpy-sync"))
    EXPECT_TRUE(bool(variant->note)) << variant->name;
}

TEST(LabOps, OnlyTheLockRungHasASizeLimitAndItCountsBlocks) {
  Problem at_limit, past_limit;
  at_limit.n = std::int64_t(1) << 24;  // 65536 blocks of 256
  past_limit.n = at_limit.n + 1;
  for (const Variant* variant : registry().variants("synchronization")) {
    EXPECT_EQ(variant->limit(at_limit), "") << variant->name;
    EXPECT_EQ(variant->limit(past_limit).empty(), variant->name != "cas-lock") << variant->name;
  }
}

TEST(LabOps, PageableAccessCountsBytesAgainstTheHostLinkAndRefusesOddSizes) {
  const Op& op = registry().op("pageable-access");
  const Problem problem = op.resolve(Problem{});
  EXPECT_EQ(problem.n, std::int64_t(64) << 20);
  EXPECT_EQ(op.model(problem).bytes, double(problem.n));
  EXPECT_EQ(op.model(problem).ceiling, Ceiling::host_transfer_bandwidth);
  Problem odd;
  odd.n = 1001;
  EXPECT_THROW(op.resolve(odd), Error);
}

TEST(LabOps, MemoryOpsCountWhatTheirRowsRead) {
  Problem problem;
  problem.n = 1000;
  EXPECT_EQ(registry().op("shared-memory").model(problem).bytes,
            1000.0 * shared_lab::passes * shared_lab::words_per_pass * 4);
  EXPECT_EQ(registry().op("constant-memory").model(problem).bytes,
            1000.0 * 4 * (constant_lab::reads_per_thread + 1));
  EXPECT_EQ(registry().op("memory-latency").model(problem).bytes, 4000.0);
  EXPECT_EQ(registry().op("memcpy-sync").model(problem).ceiling, Ceiling::host_transfer_bandwidth);
}

}  // namespace
}  // namespace rooflab::bench
