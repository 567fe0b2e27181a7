#pragma once
// Memory latency (the limiting-factors lecture, the memory-basics lab): one thread follows a chain
// of dependent loads, each address read from the word the load before returned, through a random
// cycle sized to sit in shared memory, L1, L2 or device memory. Nothing overlaps, so the time per
// load is the latency of the level that served it; the kernel times its walk with its own clocks.
// The CPU rungs walk the same kind of chain on one host core, through the host's caches and memory.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

namespace latency_lab {

constexpr int line_bytes = 128;
constexpr int line_words = line_bytes / 4;

// `bytes` rounded down to an odd number of whole lines, at least one line: the size of every
// chain, GPU and CPU. A cycle of an odd number of lines above one, at 1 or 32 nodes a line, never
// divides a power of two, so a power-of-two --n (2^16 by default) never ends a walk on the node it
// began from, and the check can tell a walk from no walk.
constexpr std::int64_t odd_lines_bytes(std::int64_t bytes) {
  std::int64_t lines = bytes / line_bytes;
  if (lines % 2 == 0) --lines;  // 0 becomes -1, and then one line
  return (lines < 1 ? 1 : lines) * line_bytes;
}

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
  bool warm = true;        // the whole cycle is walked once before the timed walk (kernel, prepare)
  bool in_shared = false;  // copied into shared memory and walked there
  bool operator==(const ChainShape& other) const {
    return bytes == other.bytes && nodes_per_line == other.nodes_per_line && warm == other.warm &&
           in_shared == other.in_shared;
  }
};

// The working sets, from the device's L2 size, each rounded down to an odd number of lines
// (odd_lines_bytes): 127 lines, 15.9 KiB (inside every L1 and every block's shared memory);
// min(L2 / 2, 4 MiB) (past every L1, inside L2); 4 x L2, at least 4 MiB (device memory; the
// workspace's buffer is sized for it, and every other chain fits in it).
constexpr std::int64_t on_chip_chain_bytes = latency_lab::odd_lines_bytes(std::int64_t(16) << 10);
std::int64_t l2_chain_bytes(std::int64_t l2_bytes);
std::int64_t device_chain_bytes(std::int64_t l2_bytes);

// The host's data caches in bytes, as cpu0 sees them; 0 for a level the host does not report.
// From sysfs first, which gives the L3 that cpu0 shares (on processors whose L3 is split between
// core complexes, sysconf may give the whole package's); from sysconf(_SC_LEVEL*_CACHE_SIZE) where
// sysfs has none.
struct HostCacheSizes {
  std::int64_t l1d = 0;
  std::int64_t l2 = 0;
  std::int64_t l3 = 0;
};
HostCacheSizes host_cache_sizes();
// The sysfs part alone, from a directory laid out as /sys/devices/system/cpu/cpu0/cache (index0,
// index1, ..., each with level, type and size).
HostCacheSizes host_cache_sizes_in(const std::string& cache_directory);
// A CPU rung's chain for a host cache level of `level_bytes`: half the level, at most `max_bytes`,
// rounded down to an odd number of whole lines (odd_lines_bytes). Half leaves the level room for
// the rest of the program.
std::int64_t host_chain_bytes(std::int64_t level_bytes,
                              std::int64_t max_bytes = std::numeric_limits<std::int64_t>::max());
// cpu-l3's chain: as host_chain_bytes, but at most 4 x L2 where L2 is known. That is past L2 even
// where only the 64-byte half of a 128-byte line that holds the node is cached, and inside the L3:
// half of a large server L3 (hundreds of MiB, every core's slices) can take as long as host memory
// from one core.
constexpr std::int64_t host_l3_chain_l2s = 4;
std::int64_t host_l3_chain_bytes(std::int64_t l3_bytes, std::int64_t l2_bytes,
                                 std::int64_t max_bytes);
// The core's maximum clock (cpufreq's cpuinfo_max_freq, cpu0) in kHz; 0 where it is not readable.
std::int64_t host_max_clock_khz();

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
  // "32767 lines (4.0 MiB), 1 node per line: 412 cycles, 240.3 ns per load (...)"
  std::string latency_note() const;
  // A CPU rung's, `where` naming what holds the chain: "32767 lines (4.0 MiB) in host memory:
  // 95.2 ns per load (host clock over 65536 loads), about 333 cycles at 3.5 GHz, the core's
  // maximum clock" (the cycles only where the maximum clock is readable).
  std::string host_latency_note(const std::string& where) const;

  std::int64_t steps;  // timed loads per run
  std::int64_t l2_bytes;
  ChainShape shape;
  std::int64_t cycle_length = 0;         // nodes in the chain
  std::int64_t walks = 0;                // runs since the chain was built: where the walk must be
  DeviceBuffer<std::uint32_t> chain;     // sized for the largest chain
  DeviceBuffer<std::uint32_t> position;  // the node a run starts from, and ends at
  DeviceBuffer<unsigned long long> clocks;  // the last run's timed walk: SM cycles, nanoseconds
  std::vector<std::uint32_t> host_chain;
  // The CPU rungs' walk of host_chain: where it stands, its runs, its last time per load.
  std::uint32_t host_position = 0;
  std::int64_t host_walks = 0;
  double host_ns_per_load = 0;

 private:
  std::uint64_t seed_ = 0;
  bool built_ = false;
};

}  // namespace rooflab::bench
