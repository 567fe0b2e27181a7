// The memory-latency op: the chains, the workspace and the check. GPU rungs are in
// memory_latency.cu.
#include "lab/memory_latency.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "bench/random.hpp"
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
  const std::int64_t half = l2_bytes / 2 / latency_lab::line_bytes * latency_lab::line_bytes;
  return std::max(on_chip_chain_bytes, std::min(half, std::int64_t(4) << 20));
}

std::int64_t device_chain_bytes(std::int64_t l2_bytes) {
  return std::max(std::int64_t(4) << 20,
                  4 * l2_bytes / latency_lab::line_bytes * latency_lab::line_bytes);
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

std::string MemoryLatencyWorkspace::host_latency_note() const {
  return fmt::format("{} lines ({}) in host memory: {:.1f} ns per load (host clock over {} loads)",
                     shape.bytes / latency_lab::line_bytes,
                     detail::describe_bytes(std::size_t(shape.bytes)), host_ns_per_load, steps);
}

namespace {

ROOFLAB_OP(Op{
    "memory-latency",
    "one thread follows --n dependent loads through a random cycle sized for shared memory, L1, L2 "
    "and device memory",
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

// Rung 0 — one CPU core walks the device-memory rungs' chain (4 x L2, one node per line) in host
// memory: the host's DRAM latency, for scale (at these sizes its caches hold little of the chain).
ROOFLAB_VARIANT(Variant{
    "memory-latency", 0, "cpu-chase", "one CPU core walks the 4 x L2 chain: host memory latency",
    Where::cpu, false, no_limit,
    on<MemoryLatencyWorkspace>([](MemoryLatencyWorkspace& w, cudaStream_t) {
      ++w.host_walks;
      const auto begin = std::chrono::steady_clock::now();
      w.host_position = latency_lab::walk(w.host_chain, w.host_position, w.steps);
      const std::chrono::duration<double, std::nano> took =
          std::chrono::steady_clock::now() - begin;
      w.host_ns_per_load = took.count() / double(w.steps);
    }),
    on<MemoryLatencyWorkspace>([](MemoryLatencyWorkspace& w, cudaStream_t) {
      w.use_chain(ChainShape{device_chain_bytes(w.l2_bytes), 1, false, false});
    }),
    [](Workspace& w) { return static_cast<MemoryLatencyWorkspace&>(w).host_latency_note(); }});

}  // namespace
}  // namespace rooflab::bench
