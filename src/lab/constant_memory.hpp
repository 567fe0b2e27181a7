#pragma once
// Constant memory (the memory-basics lab, the limiting-factors lecture): every thread sums
// `reads_per_thread` words of one small table, which lives twice, in __constant__ memory and in
// global memory. The rungs differ only in which copy a warp reads and whether its 32 lanes read one
// word (a broadcast) or 32 different words at each step.
#include <cstdint>
#include <vector>

#include "bench/registry.hpp"
#include "lab/patterns.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

namespace constant_lab {

// 256 words (1 KiB): small enough to stay in the constant cache of every SM on every supported
// GPU, so that the rungs measure broadcast and serialization, not constant-cache misses.
constexpr int table_words = 256;
constexpr int lines = table_words / lab::warp_size;  // 8 groups of 32 consecutive words
// Not a multiple of 8: a thread's sum then depends on the group its warp starts at, so a warp that
// read the wrong groups fails the check.
constexpr int reads_per_thread = 252;
// Table values lie in [0, 2^16): 252 of them sum below 2^24, so a sum is exact in 32 bits and
// never equals the poison 0xFFFFFFFF.
constexpr std::int64_t largest_value = (1 << 16) - 1;

// The word lane `lane` of warp `warp` reads at step r. The warp's step picks one group of 32
// consecutive words (group (warp + r) mod 8); a broadcast read takes the group's first word in
// every lane, a divergent read takes word `lane` of the group: 32 different words, one 128-byte
// line of global memory.
ROOFLAB_LAB_HD constexpr int table_word(std::int64_t warp, int r, int lane, bool divergent) {
  return int((warp + r) % lines) * lab::warp_size + (divergent ? lane : 0);
}

// What thread i's sum must be: the table words its reads name, added in 32 bits.
std::uint32_t sum_of_reads(const std::vector<std::uint32_t>& table, std::int64_t i, bool divergent);

}  // namespace constant_lab

class ConstantMemoryWorkspace : public Workspace {
 public:
  explicit ConstantMemoryWorkspace(std::int64_t n);
  // A fresh random table, copied to global memory and to the __constant__ table; poisoned sums.
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  std::int64_t n;                     // threads, one sum each
  bool divergent = true;              // set by each rung: which pattern its sums followed
  DeviceBuffer<std::uint32_t> table;  // the global-memory copy
  DeviceBuffer<std::uint32_t> sums;
  std::vector<std::uint32_t> host_table;
  std::vector<std::uint32_t> host_sums;  // the CPU rung's
};

// Copies `words` (constant_lab::table_words of them) into the __constant__ table the rungs read.
void upload_constant_table(const std::vector<std::uint32_t>& words);

}  // namespace rooflab::bench
