#pragma once
// Shared memory (the memory-basics lab, the limiting-factors lecture): every block copies one 16 KiB
// table into shared memory, then each thread sums the same 256 bytes of it `passes` times. The
// rungs read the same bytes per thread and differ only in how a warp's 32 requests fall on the
// 32 banks: 16-byte loads, then 4-byte words `stride` words apart per lane.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "lab/patterns.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

namespace shared_lab {

constexpr int banks = 32;                            // every GPU since Maxwell: 32 banks of 4 bytes
constexpr int table_words = 4096;                    // 16 KiB of shared memory per block
constexpr int block_threads = 256;                   // 8 warps
constexpr int words_per_pass = 64;                   // 256 bytes per lane per pass
constexpr int chunks_per_pass = words_per_pass / 4;  // the same bytes as 16-byte loads
constexpr int passes = 64;

// Word `column` of lane `lane` in warp `warp` (of its block), the lanes `stride` words apart:
// bank (lane * stride + column + warp) mod 32. The warp's offset shifts every lane alike, so the
// conflict degree is the stride's; it makes each warp's sums differ, for the check.
ROOFLAB_LAB_HD constexpr int strided_word(int warp, int lane, int column, int stride) {
  return lane * stride + column + warp;
}

// The 16-byte chunk (4 words from word 4 x chunk) lane `lane` of warp `warp` reads at step v:
// 32 consecutive chunks per warp, so each quarter-warp reads 128 consecutive bytes.
ROOFLAB_LAB_HD constexpr int vector_chunk(int warp, int lane, int v) {
  return v * lab::warp_size + lane + warp;
}

// How many different words of one bank a warp asks for when lane l reads word l x stride: the
// number of passes the request takes (1: conflict-free; lanes reading the same word share one).
int bank_conflict_degree(int stride_words);

// What thread i's sum must be (32-bit, wrapping): the words of its pattern (`stride` words apart,
// or the 16-byte chunks when stride is 0), each read once per pass.
std::uint32_t thread_sum(const std::vector<std::uint32_t>& table, std::int64_t i, int stride);

// The shared-memory ceiling as a model: every SM serves one word from each of its 32 banks per
// clock, SMs x 32 x 4 bytes x clock (bytes/s).
double shared_memory_ceiling(int sm_count, int sm_clock_khz);

}  // namespace shared_lab

class SharedMemoryWorkspace : public Workspace {
 public:
  explicit SharedMemoryWorkspace(std::int64_t n);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // "2-way bank conflicts; shared-memory ceiling (model) 132 SMs x 32 banks x 4 B x 1980 MHz =
  // 33454 GB/s: these bytes take 514 us at it"
  std::string ceiling_note() const;

  std::int64_t n;  // threads, one sum each
  int stride = 0;  // set by each rung: its lanes' stride in words, 0 for the 16-byte loads
  DeviceBuffer<std::uint32_t> table;  // global copy, loaded into shared memory by every block
  DeviceBuffer<std::uint32_t> sums;
  std::vector<std::uint32_t> host_table;
  std::vector<std::uint32_t> host_sums;  // the CPU rung's
};

}  // namespace rooflab::bench
