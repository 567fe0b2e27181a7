// The memory experiments of the lab without a GPU: the latency chains are single cycles through
// every line, the host's cache sizes and the CPU rungs' chains fit their levels, the shared-memory
// patterns have the conflict degrees their rungs are named after, the constant-memory reads are
// broadcasts or single lines as the rungs say, the ceiling model's arithmetic, and every new op's
// ladder as registered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "lab/constant_memory.hpp"
#include "lab/memory_latency.hpp"
#include "lab/shared_memory.hpp"
#include "rooflab/error.hpp"
#include "scratch_directory.hpp"

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
  const std::int64_t mib = std::int64_t(1) << 20, line = latency_lab::line_bytes;
  EXPECT_EQ(on_chip_chain_bytes, 127 * line);           // 15.9 KiB: 128 lines less one
  EXPECT_EQ(l2_chain_bytes(50 * mib), 4 * mib - line);  // H100: 50 MiB of L2
  EXPECT_EQ(l2_chain_bytes(mib), mib / 2 - line);       // a 1 MiB L2 (GTX 1650)
  EXPECT_EQ(device_chain_bytes(50 * mib), 200 * mib - line);
  EXPECT_EQ(device_chain_bytes(mib), 4 * mib - line);
  for (const std::int64_t l2 : {mib, 6 * mib, 40 * mib, 50 * mib, 60 * mib, 126 * mib}) {
    EXPECT_EQ(l2_chain_bytes(l2) % line, 0) << l2;
    EXPECT_EQ(device_chain_bytes(l2) % line, 0) << l2;
    EXPECT_GT(l2_chain_bytes(l2), 256 * 1024) << l2;  // past the largest L1 (256 KiB)
    EXPECT_LT(l2_chain_bytes(l2), l2) << l2;
    EXPECT_GE(device_chain_bytes(l2), 4 * l2 - line) << l2;
    // The workspace's buffer is sized from device_chain_bytes: every GPU chain must fit in it.
    EXPECT_LE(l2_chain_bytes(l2), device_chain_bytes(l2)) << l2;
    EXPECT_LE(on_chip_chain_bytes, device_chain_bytes(l2)) << l2;
  }
}

TEST(LabLatency, OddLinesBytesRoundsDownToAnOddNumberOfWholeLinesAndAtLeastOne) {
  const std::int64_t line = latency_lab::line_bytes;
  EXPECT_EQ(latency_lab::odd_lines_bytes(128 * line), 127 * line);
  EXPECT_EQ(latency_lab::odd_lines_bytes(128 * line + 100), 127 * line);
  EXPECT_EQ(latency_lab::odd_lines_bytes(127 * line), 127 * line);  // already odd: kept
  EXPECT_EQ(latency_lab::odd_lines_bytes(127 * line + 100), 127 * line);
  EXPECT_EQ(latency_lab::odd_lines_bytes(2 * line), line);
  EXPECT_EQ(latency_lab::odd_lines_bytes(line - 1), line);
  EXPECT_EQ(latency_lab::odd_lines_bytes(0), line);
}

// A cycle that divides 2^k puts a walk of 2^k loads back on the node it began from, where a kernel
// that never walked also leaves it: the check could not fail. Every GPU chain is an odd number of
// lines above one, walked at one node a line or (rung 5) at 32, so no power-of-two --n ends where
// it began.
TEST(LabLatency, EveryGpuChainIsAnOddNumberOfLinesSoNoPowerOfTwoWalkEndsWhereItBegan) {
  struct Chain {
    const char* rungs;
    std::int64_t lines;
    int nodes_per_line;
  };
  const std::int64_t mib = std::int64_t(1) << 20, line = latency_lab::line_bytes;
  for (const std::int64_t l2 : {4 * mib, 6 * mib, 40 * mib, 50 * mib, 60 * mib}) {
    const Chain chains[] = {
        {"shared, l1", on_chip_chain_bytes / line, 1},
        {"l2", l2_chain_bytes(l2) / line, 1},
        {"device", device_chain_bytes(l2) / line, 1},
        {"device-within-line", device_chain_bytes(l2) / line, latency_lab::line_words},
    };
    for (const Chain& chain : chains) {
      EXPECT_EQ(chain.lines % 2, 1) << chain.rungs << ", L2 " << l2 << ": " << chain.lines;
      EXPECT_GT(chain.lines, 1) << chain.rungs << ", L2 " << l2;
      const std::int64_t cycle = chain.lines * chain.nodes_per_line;
      for (int k = 10; k <= 20; ++k)
        EXPECT_NE((std::int64_t(1) << k) % cycle, 0)
            << chain.rungs << ", L2 " << l2 << ": 2^" << k << " loads go round a cycle of " << cycle
            << " nodes";
    }
  }
}

// The CPU cache rungs' warm walk goes once round the whole cycle: it must end where it began, or
// the check's count of timed loads would no longer say where the walk stands.
TEST(LabLatency, AWalkOnceRoundTheCycleEndsWhereItBeganAndOneStepShortDoesNot) {
  for (const std::int64_t lines : {1, 2, 7, 128, 4096}) {
    const std::vector<std::uint32_t> words =
        latency_lab::chain_words(latency_lab::random_cycle(lines, 11), 1);
    for (const std::int64_t offset : {std::int64_t(0), std::int64_t(1), lines / 2}) {
      const std::uint32_t start = latency_lab::walk(words, 0, offset);
      EXPECT_EQ(latency_lab::walk(words, start, lines), start) << lines << " lines";
      if (lines > 1) {
        EXPECT_NE(latency_lab::walk(words, start, lines - 1), start) << lines << " lines";
      }
    }
  }
}

TEST(LabLatency, HostCacheSizesAreZeroOrPositiveAndGrowWithTheLevel) {
  const HostCacheSizes sizes = host_cache_sizes();
  const std::string reported = "L1d " + std::to_string(sizes.l1d) + ", L2 " +
                               std::to_string(sizes.l2) + ", L3 " + std::to_string(sizes.l3);
  EXPECT_GE(sizes.l1d, 0) << reported;
  EXPECT_GE(sizes.l2, 0) << reported;
  EXPECT_GE(sizes.l3, 0) << reported;
  // A level the host does not report (0) says nothing about the order.
  const auto ordered = [](std::int64_t lower, std::int64_t higher) {
    return lower == 0 || higher == 0 || lower <= higher;
  };
  EXPECT_TRUE(ordered(sizes.l1d, sizes.l2)) << reported;
  EXPECT_TRUE(ordered(sizes.l2, sizes.l3)) << reported;
  EXPECT_TRUE(ordered(sizes.l1d, sizes.l3)) << reported;
}

void write_cache_entry(const ScratchDirectory& scratch, int index, const std::string& level,
                       const std::string& type, const std::string& size) {
  const std::string entry = scratch.file("index" + std::to_string(index));
  std::filesystem::create_directories(entry);
  std::ofstream(entry + "/level") << level << "\n";
  std::ofstream(entry + "/type") << type << "\n";
  std::ofstream(entry + "/size") << size << "\n";
}

TEST(LabLatency, HostCacheSizesFromSysfsTakeDataAndUnifiedCachesNotInstruction) {
  ScratchDirectory scratch("rooflab_host_caches");
  write_cache_entry(scratch, 0, "1", "Data", "48K");
  write_cache_entry(scratch, 1, "1", "Instruction", "64K");  // larger: picking it would show
  write_cache_entry(scratch, 2, "2", "Unified", "2048K");
  write_cache_entry(scratch, 3, "3", "Unified", "105M");
  const HostCacheSizes sizes = host_cache_sizes_in(scratch.file(""));
  EXPECT_EQ(sizes.l1d, 48 * 1024);
  EXPECT_EQ(sizes.l2, 2048 * 1024);
  EXPECT_EQ(sizes.l3, std::int64_t(105) << 20);
  const HostCacheSizes none = host_cache_sizes_in(scratch.file("no-such-directory"));
  EXPECT_EQ(none.l1d, 0);
  EXPECT_EQ(none.l2, 0);
  EXPECT_EQ(none.l3, 0);
}

TEST(LabLatency, HostChainIsHalfTheLevelInAnOddNumberOfWholeLinesAndAtLeastOneLine) {
  const std::int64_t kib = 1024, mib = kib * kib, line = latency_lab::line_bytes;
  EXPECT_EQ(host_chain_bytes(32 * kib), 16 * kib - line);  // 127 lines, not 128
  EXPECT_EQ(host_chain_bytes(48 * kib), 24 * kib - line);
  EXPECT_EQ(host_chain_bytes(2 * mib), mib - line);
  EXPECT_EQ(host_chain_bytes(3 * line * 2), 3 * line);  // already odd: kept
  EXPECT_EQ(host_chain_bytes(1), line);
  EXPECT_EQ(host_chain_bytes(300), line);
  for (const std::int64_t level :
       {std::int64_t(1), std::int64_t(255), std::int64_t(256), std::int64_t(1000), 48 * kib,
        1280 * kib, 1280 * kib + 1, 3 * mib + 1000, 105 * mib, 256 * mib}) {
    const std::int64_t bytes = host_chain_bytes(level);
    EXPECT_EQ(bytes % line, 0) << level;
    EXPECT_EQ(bytes / line % 2, 1) << level;
    EXPECT_GE(bytes, line) << level;
    EXPECT_LE(bytes, std::max<std::int64_t>(level / 2, line)) << level;
    EXPECT_GT(bytes, level / 2 - 2 * line) << level;  // less than two lines short of half
    // 2^16 loads never end on the node they began from.
    EXPECT_TRUE(bytes == line || (std::int64_t(1) << 16) % (bytes / line) != 0) << level;
  }
  EXPECT_THROW(host_chain_bytes(0), Error);
}

TEST(LabLatency, HostChainIsCappedAtTheWorkspacesBuffer) {
  const std::int64_t mib = std::int64_t(1) << 20, line = latency_lab::line_bytes;
  EXPECT_EQ(host_chain_bytes(512 * mib, 200 * mib), 200 * mib - line);
  EXPECT_EQ(host_chain_bytes(32 * mib, 200 * mib), host_chain_bytes(32 * mib));
  EXPECT_EQ(host_chain_bytes(32 * mib, 1000), 7 * line);
  EXPECT_EQ(host_chain_bytes(32 * mib, 200), line);
}

TEST(LabLatency, HostL3ChainIsHalfTheL3ButAtMostFourL2s) {
  const std::int64_t kib = 1024, mib = kib * kib, line = latency_lab::line_bytes;
  const std::int64_t buffer = 240 * mib;
  EXPECT_EQ(host_l3_chain_bytes(300 * mib, 2 * mib, buffer), 8 * mib - line);  // a server L3
  EXPECT_EQ(host_l3_chain_bytes(32 * mib, mib, buffer), 4 * mib - line);
  EXPECT_EQ(host_l3_chain_bytes(4 * mib, mib, buffer), 2 * mib - line);  // half is the smaller
  EXPECT_EQ(host_l3_chain_bytes(32 * mib, 0, buffer), 16 * mib - line);  // L2 unknown: half
  EXPECT_EQ(host_l3_chain_bytes(300 * mib, 2 * mib, 4 * mib), 4 * mib - line);  // the buffer
  for (const std::int64_t l2 : {256 * kib, mib, 2 * mib, 3 * mib}) {
    const std::int64_t bytes = host_l3_chain_bytes(256 * mib, l2, buffer);
    EXPECT_GT(bytes, 2 * l2) << l2;  // past L2 even if only the node's half of a line is cached
    EXPECT_EQ(bytes / line % 2, 1) << l2;
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
                                      "device-within-line", "cpu-l1", "cpu-l2", "cpu-l3"}));
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

TEST(LabRegistry, HostCacheRungsRunOnOneCoreAndAreSkippedOnlyWhereTheHostReportsNoSize) {
  const HostCacheSizes sizes = host_cache_sizes();
  const std::map<std::string, std::pair<int, std::int64_t>> expected{
      {"cpu-l1", {6, sizes.l1d}}, {"cpu-l2", {7, sizes.l2}}, {"cpu-l3", {8, sizes.l3}}};
  int found = 0;
  for (const Variant* variant : registry().variants("memory-latency")) {
    const auto level = expected.find(variant->name);
    if (level == expected.end()) continue;
    ++found;
    EXPECT_EQ(variant->rung, level->second.first) << variant->name;
    EXPECT_EQ(variant->where, Where::cpu) << variant->name;
    ASSERT_TRUE(bool(variant->limit)) << variant->name;
    const std::string why = variant->limit(Problem{});
    EXPECT_EQ(why.empty(), level->second.second > 0) << variant->name << ": " << why;
  }
  EXPECT_EQ(found, 3);
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
