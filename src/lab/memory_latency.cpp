// The memory-latency op: the chains, the workspace, the check and the CPU rungs (the host's
// caches and memory). GPU rungs are in memory_latency.cu.
#include "lab/memory_latency.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "bench/random.hpp"
#include "bench/sizes.hpp"
#include "core/device_query.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

namespace latency_lab {

std::vector<std::uint32_t> random_cycle(std::int64_t lines, std::uint64_t seed) {
  require(lines >= 1 && lines <= (std::int64_t(1) << 32) / line_words, "bench memory-latency",
          "lines", "must be between 1 and 2^27");
  std::vector<std::uint32_t> next(static_cast<std::size_t>(lines));
  for (std::int64_t k = 0; k < lines; ++k) next[std::size_t(k)] = std::uint32_t(k);
  // Sattolo: swapping each position only with an earlier one leaves a single cycle.
  for (std::int64_t k = lines - 1; k > 0; --k)
    std::swap(next[std::size_t(k)],
              next[std::size_t(random_integer(seed, std::uint64_t(k), 0, k - 1))]);
  return next;
}

std::vector<std::uint32_t> chain_words(const std::vector<std::uint32_t>& line_cycle,
                                       int nodes_per_line) {
  require(nodes_per_line >= 1 && nodes_per_line <= line_words && line_words % nodes_per_line == 0,
          "bench memory-latency", "nodes_per_line", "must divide 32");
  const std::uint32_t spacing = std::uint32_t(line_words / nodes_per_line);
  std::vector<std::uint32_t> words(line_cycle.size() * line_words, 0xFFFFFFFFu);
  for (std::size_t line = 0; line < line_cycle.size(); ++line) {
    const std::uint32_t first = std::uint32_t(line * line_words);
    for (int node = 0; node + 1 < nodes_per_line; ++node)
      words[first + node * spacing] = first + (node + 1) * spacing;
    words[first + (nodes_per_line - 1) * spacing] = line_cycle[line] * std::uint32_t(line_words);
  }
  return words;
}

std::uint32_t walk(const std::vector<std::uint32_t>& words, std::uint32_t start,
                   std::int64_t steps) {
  std::uint32_t node = start;
  for (std::int64_t k = 0; k < steps; ++k) node = words[node];
  return node;
}

}  // namespace latency_lab

std::int64_t l2_chain_bytes(std::int64_t l2_bytes) {
  return std::max(on_chip_chain_bytes,
                  latency_lab::odd_lines_bytes(std::min(l2_bytes / 2, std::int64_t(4) << 20)));
}

std::int64_t device_chain_bytes(std::int64_t l2_bytes) {
  return latency_lab::odd_lines_bytes(std::max(std::int64_t(4) << 20, 4 * l2_bytes));
}

namespace {

// A sysfs file's first word ("1", "Data", "32K"); empty where the file cannot be read.
std::string first_word_of(const std::string& path) {
  std::ifstream file(path);
  std::string word;
  file >> word;
  return word;
}

// A cache's size from sysfs, which writes it as "32K" (K = 1024, as parse_size reads it); 0 where
// the file is missing or says something else.
std::int64_t cache_size_in(const std::string& path) {
  const std::string text = first_word_of(path);
  if (text.empty()) return 0;
  try {
    return parse_size(text, "size", "bench memory-latency");
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace

HostCacheSizes host_cache_sizes_in(const std::string& cache_directory) {
  HostCacheSizes sizes;
  // Linux numbers the caches index0, index1, ... without gaps.
  for (int index = 0;; ++index) {
    const std::string entry = cache_directory + "/index" + std::to_string(index) + "/";
    const std::string level = first_word_of(entry + "level");
    if (level.empty()) break;
    const std::string type = first_word_of(entry + "type");
    if (type != "Data" && type != "Unified") continue;  // not the instruction cache
    const std::int64_t bytes = cache_size_in(entry + "size");
    if (level == "1") sizes.l1d = bytes;
    if (level == "2") sizes.l2 = bytes;
    if (level == "3") sizes.l3 = bytes;
  }
  return sizes;
}

HostCacheSizes host_cache_sizes() {
  HostCacheSizes sizes = host_cache_sizes_in("/sys/devices/system/cpu/cpu0/cache");
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
  const auto or_sysconf = [](std::int64_t& bytes, int name) {
    if (bytes > 0) return;
    const long reported = sysconf(name);  // 0 or -1 where the C library does not know
    bytes = reported > 0 ? std::int64_t(reported) : 0;
  };
  or_sysconf(sizes.l1d, _SC_LEVEL1_DCACHE_SIZE);
  or_sysconf(sizes.l2, _SC_LEVEL2_CACHE_SIZE);
  or_sysconf(sizes.l3, _SC_LEVEL3_CACHE_SIZE);
#endif
  return sizes;
}

std::int64_t host_chain_bytes(std::int64_t level_bytes, std::int64_t max_bytes) {
  require(level_bytes >= 1 && max_bytes >= 1, "bench memory-latency", "level_bytes",
          "the level and the cap must be at least 1 byte");
  return latency_lab::odd_lines_bytes(std::min(level_bytes / 2, max_bytes));
}

std::int64_t host_l3_chain_bytes(std::int64_t l3_bytes, std::int64_t l2_bytes,
                                 std::int64_t max_bytes) {
  if (l2_bytes > 0) max_bytes = std::min(max_bytes, host_l3_chain_l2s * l2_bytes);
  return host_chain_bytes(l3_bytes, max_bytes);
}

std::int64_t host_max_clock_khz() {
  const std::string text = first_word_of("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  const long long khz = std::strtoll(text.c_str(), nullptr, 10);
  return khz > 0 ? std::int64_t(khz) : 0;
}

MemoryLatencyWorkspace::MemoryLatencyWorkspace(std::int64_t steps)
    : steps(steps),
      l2_bytes(current_l2_bytes()),
      chain(std::size_t(device_chain_bytes(l2_bytes) / 4)),
      position(1),
      clocks(2) {}

void MemoryLatencyWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  built_ = false;
  walks = 0;
  host_chain.clear();
  clocks.fill_bytes(0);
}

void MemoryLatencyWorkspace::use_chain(const ChainShape& wanted) {
  if (built_ && shape == wanted) return;
  const char* op = "bench memory-latency";
  require(
      wanted.bytes % latency_lab::line_bytes == 0 && wanted.bytes <= std::int64_t(chain.bytes()),
      op, "chain", "must be whole lines within the workspace's buffer");
  const std::int64_t lines = wanted.bytes / latency_lab::line_bytes;
  host_chain =
      latency_lab::chain_words(latency_lab::random_cycle(lines, seed_), wanted.nodes_per_line);
  ROOFLAB_CUDA(
      op, "copying the chain to the device",
      cudaMemcpy(chain.data(), host_chain.data(), host_chain.size() * 4, cudaMemcpyHostToDevice));
  position.upload({0u});
  // A copy from pageable memory may return before its DMA lands: the rung's stream must not
  // overtake it.
  ROOFLAB_CUDA(op, "waiting for the chain", cudaDeviceSynchronize());
  shape = wanted;
  cycle_length = lines * wanted.nodes_per_line;
  walks = 0;
  host_position = 0;
  host_walks = 0;
  built_ = true;
}

Check MemoryLatencyWorkspace::check(Where where) {
  if (!built_) return Check{false, 0, 0, "no chain was built (the rung's prepare did not run)"};
  const bool gpu = where == Where::gpu;
  const std::uint32_t got = gpu ? position.download()[0] : host_position;
  const std::int64_t runs = gpu ? walks : host_walks;
  const std::uint32_t expected = latency_lab::walk(host_chain, 0, runs * steps % cycle_length);
  const std::string detail = "ended at word " + std::to_string(got) + ", expected " +
                             std::to_string(expected) + " after " + std::to_string(runs) +
                             " walks of " + std::to_string(steps) + " loads";
  return Check{got == expected, got == expected ? 0.0 : 1.0, 0, detail};
}

std::string MemoryLatencyWorkspace::latency_note() const {
  const std::vector<unsigned long long> measured = clocks.download();
  const std::int64_t lines = shape.bytes / latency_lab::line_bytes;
  return fmt::format(
      "{} lines ({}), {} node{} per line{}: {:.0f} cycles, {:.1f} ns per load (the kernel's "
      "clocks over {} loads)",
      lines, detail::describe_bytes(std::size_t(shape.bytes)), shape.nodes_per_line,
      shape.nodes_per_line == 1 ? "" : "s", shape.in_shared ? ", in shared memory" : "",
      double(measured[0]) / double(steps), double(measured[1]) / double(steps), steps);
}

std::string MemoryLatencyWorkspace::host_latency_note(const std::string& where) const {
  std::string note =
      fmt::format("{} lines ({}) in {}: {:.1f} ns per load (host clock over {} loads)",
                  shape.bytes / latency_lab::line_bytes,
                  detail::describe_bytes(std::size_t(shape.bytes)), where, host_ns_per_load, steps);
  // At the maximum clock: a core that ran slower took fewer cycles than this says.
  const std::int64_t khz = host_max_clock_khz();
  if (khz > 0)
    note += fmt::format(", about {:.0f} cycles at {:.1f} GHz, the core's maximum clock",
                        host_ns_per_load * double(khz) * 1e-6, double(khz) * 1e-6);
  return note;
}

namespace {

ROOFLAB_OP(Op{
    "memory-latency",
    "one thread follows --n dependent loads through a random cycle sized for shared memory, L1, L2 "
    "and device memory; one CPU core does the same through the host's caches and memory",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 16;
      require(problem.n >= 1, "bench memory-latency", "--n", "must be at least 1");
      problem.dtype = "uint32";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + " dependent loads by one thread";
    },
    [](const Problem& problem) {
      // The words the chain reads; a latency ladder is far from any bandwidth ceiling by design,
      // and its result is each row's note (cycles and nanoseconds per load).
      return Model{4.0 * double(problem.n), 0, Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<MemoryLatencyWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 12 : 16);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Every CPU rung's timed walk: one core goes on from where the last run stopped, timed by the
// host's steady clock.
void walk_on_host(MemoryLatencyWorkspace& w, cudaStream_t) {
  ++w.host_walks;
  const auto begin = std::chrono::steady_clock::now();
  w.host_position = latency_lab::walk(w.host_chain, w.host_position, w.steps);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - begin;
  w.host_ns_per_load = took.count() / double(w.steps);
}

// Rung 0 — one CPU core walks the device-memory rungs' chain (4 x L2, one node per line) in host
// memory: the host's DRAM latency, for scale (at these sizes its caches hold little of the chain).
ROOFLAB_VARIANT(Variant{
    "memory-latency", 0, "cpu-chase", "one CPU core walks the 4 x L2 chain: host memory latency",
    Where::cpu, false, no_limit, on<MemoryLatencyWorkspace>(walk_on_host),
    on<MemoryLatencyWorkspace>([](MemoryLatencyWorkspace& w, cudaStream_t) {
      w.use_chain(ChainShape{device_chain_bytes(w.l2_bytes), 1, false, false});
    }),
    [](Workspace& w) {
      return static_cast<MemoryLatencyWorkspace&>(w).host_latency_note("host memory");
    }});

// Read once: the host's caches do not change while rooflab runs, and a rung's limit, prepare
// (before every run) and note must see the same sizes.
const HostCacheSizes& this_host_caches() {
  static const HostCacheSizes sizes = host_cache_sizes();
  return sizes;
}

// A CPU cache rung's chain: half the level (L3: at most 4 x L2), one node per line, within the
// workspace's buffer (4 x the GPU's L2).
ChainShape host_cache_shape(const MemoryLatencyWorkspace& w, const char* level,
                            std::int64_t HostCacheSizes::*size) {
  const HostCacheSizes& sizes = this_host_caches();
  require(sizes.*size > 0, "bench memory-latency", level,
          "the host reports no size for this cache (neither sysfs nor sysconf)");
  const std::int64_t buffer = std::int64_t(w.chain.bytes());
  const std::int64_t bytes = size == &HostCacheSizes::l3
                                 ? host_l3_chain_bytes(sizes.l3, sizes.l2, buffer)
                                 : host_chain_bytes(sizes.*size, buffer);
  return ChainShape{bytes, 1, true, false};
}

// The note's "where": the level and its size, and what kept the chain below half of it.
std::string host_cache_where(const MemoryLatencyWorkspace& w, const char* level,
                             std::int64_t HostCacheSizes::*size) {
  const HostCacheSizes& sizes = this_host_caches();
  std::string where =
      fmt::format("host {} ({}", level, detail::describe_bytes(std::size_t(sizes.*size)));
  if (w.shape.bytes < host_chain_bytes(sizes.*size)) {
    const std::int64_t l2_cap =
        size == &HostCacheSizes::l3 && sizes.l2 > 0 ? host_l3_chain_l2s * sizes.l2 : 0;
    where += l2_cap > 0 && l2_cap <= std::int64_t(w.chain.bytes())
                 ? fmt::format("; chain at most {} x L2", host_l3_chain_l2s)
                 : fmt::format("; chain capped at the workspace's {} buffer",
                               detail::describe_bytes(w.chain.bytes()));
  }
  return where + ")";
}

Variant host_cache_rung(int rung, const char* name, const char* level,
                        std::int64_t HostCacheSizes::*size, const char* idea) {
  return Variant{
      "memory-latency",
      rung,
      name,
      idea,
      Where::cpu,
      false,
      [level, size](const Problem&) -> std::string {
        if (this_host_caches().*size > 0) return {};
        return fmt::format(
            "the host reports no {} size (neither /sys/devices/system/cpu/cpu0/cache nor sysconf)",
            level);
      },
      on<MemoryLatencyWorkspace>(walk_on_host),
      on<MemoryLatencyWorkspace>([level, size](MemoryLatencyWorkspace& w, cudaStream_t) {
        w.use_chain(host_cache_shape(w, level, size));
        // The warm walk: a whole cycle ends on the node it started from, so host_walks x steps
        // still says where the timed walks must stand (and a miscounted warm walk fails the check).
        w.host_position = latency_lab::walk(w.host_chain, w.host_position, w.cycle_length);
      }),
      [level, size](Workspace& workspace) {
        const auto& w = static_cast<MemoryLatencyWorkspace&>(workspace);
        return w.host_latency_note(host_cache_where(w, level, size));
      }};
}

// Rung 6 — half the host's L1d: after the warm walk every load hits the core's nearest data cache
// (the lecture puts L1 and L2 together at 5-12 cycles, 44:57-45:12).
ROOFLAB_VARIANT(host_cache_rung(6, "cpu-l1", "L1d", &HostCacheSizes::l1d,
                                "one CPU core walks a chain of half its L1d: host L1d hits"));

// Rung 7 — half the host's L2: the chain is several times L1d and comes round in the same order, so
// each line has left L1d before it is needed again: L1d misses, L2 hits (the lecture: 5-12 cycles).
ROOFLAB_VARIANT(host_cache_rung(7, "cpu-l2", "L2", &HostCacheSizes::l2,
                                "one CPU core walks a chain of half its L2: L1d misses, L2 hits"));

// Rung 8 — half the host's L3 (the cache most processors share between cores), at most 4 x L2:
// L2 misses, L3 hits (the lecture: 35 cycles). Some loads may also miss the TLBs; the time
// includes those page walks.
ROOFLAB_VARIANT(
    host_cache_rung(8, "cpu-l3", "L3", &HostCacheSizes::l3,
                    "one CPU core walks a chain of min(L3/2, 4 x L2): L2 misses, L3 hits"));

}  // namespace
}  // namespace rooflab::bench
