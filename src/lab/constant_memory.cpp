// The constant-memory op: problem, workspace and the check. GPU rungs are in constant_memory.cu.
#include "lab/constant_memory.hpp"

#include <string>

#include "bench/random.hpp"
#include "cpu/compare.hpp"
#include "cpu/parallel.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

std::uint32_t constant_lab::sum_of_reads(const std::vector<std::uint32_t>& table, std::int64_t i,
                                         bool divergent) {
  std::uint32_t sum = 0;
  for (int r = 0; r < reads_per_thread; ++r)
    sum +=
        table[std::size_t(table_word(i / lab::warp_size, r, int(i % lab::warp_size), divergent))];
  return sum;
}

ConstantMemoryWorkspace::ConstantMemoryWorkspace(std::int64_t n)
    : n(n), table(constant_lab::table_words), sums(std::size_t(n)) {}

void ConstantMemoryWorkspace::refill(std::uint64_t seed) {
  host_table.resize(constant_lab::table_words);
  for (int k = 0; k < constant_lab::table_words; ++k)
    host_table[k] =
        std::uint32_t(random_integer(seed, std::uint64_t(k), 0, constant_lab::largest_value));
  table.upload(host_table);
  upload_constant_table(host_table);
  sums.fill_bytes(0xFF);  // 0xFFFFFFFF: no sum of the table reaches it
  host_sums.assign(std::size_t(n), 0xFFFFFFFFu);
}

Check ConstantMemoryWorkspace::check(Where where) {
  const std::vector<std::uint32_t> result = where == Where::gpu ? sums.download() : host_sums;
  const auto comparison = cpu::compare_exact(result.data(), n, [&](std::int64_t i) {
    return constant_lab::sum_of_reads(host_table, i, divergent);
  });
  return Check{comparison.within(0), comparison.max_error, 0, comparison.describe()};
}

namespace {

ROOFLAB_OP(Op{
    "constant-memory",
    "each thread sums 252 words of a 1 KiB table: __constant__ against global memory, one word "
    "per warp (broadcast) or 32",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 22;
      require(problem.n >= 1, "bench constant-memory", "--n", "must be at least 1");
      problem.dtype = "uint32";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + " threads, " +
             std::to_string(constant_lab::reads_per_thread) + " reads each";
    },
    [](const Problem& problem) {
      // The bytes the lanes receive (4 per read, every lane counted even when a warp's lanes
      // share one word) and the sums written: rates above the read ceiling are served on chip.
      const double threads = double(problem.n);
      return Model{4.0 * constant_lab::reads_per_thread * threads + 4.0 * threads, 0,
                   Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<ConstantMemoryWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 18 : 22);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — every CPU core, the same sums from the host's copy of the table (in its L1).
ROOFLAB_VARIANT(Variant{
    "constant-memory", 0, "cpu-parallel", "all CPU cores, the same reads from a host table",
    Where::cpu, false, no_limit,
    on<ConstantMemoryWorkspace>([](ConstantMemoryWorkspace& w, cudaStream_t) {
      w.divergent = true;
      cpu::parallel_ranges(w.n, [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t i = begin; i < end; ++i)
          w.host_sums[std::size_t(i)] = constant_lab::sum_of_reads(w.host_table, i, true);
      });
    })});

}  // namespace
}  // namespace rooflab::bench
