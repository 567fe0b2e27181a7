#pragma once
// Memory latency (the limiting-factors lecture, the memory-basics lab): one thread follows a chain
// of dependent loads, each address read from the word the load before returned, through a random
// cycle sized to sit in shared memory, L1, L2 or device memory. Nothing overlaps, so the time per
// load is the latency of the level that served it; the kernel times its walk with its own clocks.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

namespace latency_lab {

constexpr int line_bytes = 128;
constexpr int line_words = line_bytes / 4;

// A random cyclic permutation of 0 .. lines - 1 (Sattolo's algorithm): next[k] is the line after
// line k, and following it from any line visits every line once before coming back.
std::vector<std::uint32_t> random_cycle(std::int64_t lines, std::uint64_t seed);

// The chain as memory: `nodes_per_line` nodes in each 128-byte line (1: one word per line; 32:
// every word), the word of each node holding the word index of the next. Inside a line the nodes
// follow in address order; the last node of a line leads to the first node of the next line of
// `line_cycle`. One cycle through lines x nodes_per_line nodes; the words that are no node hold
// 0xFFFFFFFF.
std::vector<std::uint32_t> chain_words(const std::vector<std::uint32_t>& line_cycle,
                                       int nodes_per_line);

// Where `steps` loads from word `start` end.
std::uint32_t walk(const std::vector<std::uint32_t>& words, std::uint32_t start,
                   std::int64_t steps);

}  // namespace latency_lab

// One chain of the ladder: how many bytes it spans, how densely, and where it is walked.
struct ChainShape {
  std::int64_t bytes = 0;
  int nodes_per_line = 1;
  bool warm = true;        // the kernel walks the whole cycle once before its timed walk
  bool in_shared = false;  // copied into shared memory and walked there
  bool operator==(const ChainShape& other) const {
    return bytes == other.bytes && nodes_per_line == other.nodes_per_line && warm == other.warm &&
           in_shared == other.in_shared;
  }
};

// The working sets, from the device's L2 size: 16 KiB (inside every L1 and every block's shared
// memory), min(L2 / 2, 4 MiB) (past every L1, inside L2), 4 x L2 (device memory).
constexpr std::int64_t on_chip_chain_bytes = std::int64_t(16) << 10;
std::int64_t l2_chain_bytes(std::int64_t l2_bytes);
std::int64_t device_chain_bytes(std::int64_t l2_bytes);

class MemoryLatencyWorkspace : public Workspace {
 public:
  explicit MemoryLatencyWorkspace(std::int64_t steps);
  // Remembers the seed; the chain itself is built by the rung's prepare (use_chain), which knows
  // its shape.
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Builds and uploads the chain of `shape` unless it is the one in place for this seed, and
  // puts the walk back at node 0. Outside the timed region (Variant::prepare).
  void use_chain(const ChainShape& shape);
  // "32768 lines (4.0 MiB), 1 node per line: 412 cycles, 240.3 ns per load (...)"
  std::string latency_note() const;
  // The CPU rung's: "... in host memory: 95.2 ns per load (host clock over 65536 loads)"
  std::string host_latency_note() const;

  std::int64_t steps;  // timed loads per run
  std::int64_t l2_bytes;
  ChainShape shape;
  std::int64_t cycle_length = 0;         // nodes in the chain
  std::int64_t walks = 0;                // runs since the chain was built: where the walk must be
  DeviceBuffer<std::uint32_t> chain;     // sized for the largest chain
  DeviceBuffer<std::uint32_t> position;  // the node a run starts from, and ends at
  DeviceBuffer<unsigned long long> clocks;  // the last run's timed walk: SM cycles, nanoseconds
  std::vector<std::uint32_t> host_chain;
  // The CPU rung's walk of host_chain: where it stands, its runs, its last time per load.
  std::uint32_t host_position = 0;
  std::int64_t host_walks = 0;
  double host_ns_per_load = 0;

 private:
  std::uint64_t seed_ = 0;
  bool built_ = false;
};

}  // namespace rooflab::bench
