// The shared-memory op: problem, workspace, the check and the ceiling model. GPU rungs are in
// shared_memory.cu.
#include "lab/shared_memory.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "bench/random.hpp"
#include "core/device_query.hpp"
#include "cpu/compare.hpp"
#include "cpu/parallel.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

namespace shared_lab {

int bank_conflict_degree(int stride_words) {
  std::map<int, std::set<std::int64_t>> words_by_bank;
  for (int lane = 0; lane < lab::warp_size; ++lane) {
    const std::int64_t word = std::int64_t(lane) * stride_words;
    words_by_bank[int(word % banks)].insert(word);
  }
  std::size_t degree = 0;
  for (const auto& bank : words_by_bank) degree = std::max(degree, bank.second.size());
  return int(degree);
}

std::uint32_t thread_sum(const std::vector<std::uint32_t>& table, std::int64_t i, int stride) {
  const int warp = int(i % block_threads) / lab::warp_size;
  const int lane = int(i % lab::warp_size);
  std::uint32_t pass_sum = 0;
  if (stride == 0) {
    for (int v = 0; v < chunks_per_pass; ++v)
      for (int k = 0; k < 4; ++k)
        pass_sum += table[std::size_t(4 * vector_chunk(warp, lane, v) + k)];
  } else {
    for (int c = 0; c < words_per_pass; ++c)
      pass_sum += table[std::size_t(strided_word(warp, lane, c, stride))];
  }
  return pass_sum * std::uint32_t(passes);
}

double shared_memory_ceiling(int sm_count, int sm_clock_khz) {
  return double(sm_count) * banks * 4.0 * sm_clock_khz * 1e3;
}

}  // namespace shared_lab

namespace {

double bytes_read(std::int64_t threads) {
  return 4.0 * shared_lab::words_per_pass * shared_lab::passes * double(threads);
}

}  // namespace

SharedMemoryWorkspace::SharedMemoryWorkspace(std::int64_t n)
    : n(n), table(shared_lab::table_words), sums(std::size_t(n)) {}

void SharedMemoryWorkspace::refill(std::uint64_t seed) {
  host_table.resize(shared_lab::table_words);
  for (int k = 0; k < shared_lab::table_words; ++k)
    host_table[k] = std::uint32_t(random_integer(seed, std::uint64_t(k), 0, (1 << 16) - 1));
  table.upload(host_table);
  sums.fill_bytes(0xFF);
  host_sums.assign(std::size_t(n), 0xFFFFFFFFu);
}

Check SharedMemoryWorkspace::check(Where where) {
  const std::vector<std::uint32_t> result = where == Where::gpu ? sums.download() : host_sums;
  const auto comparison = cpu::compare_exact(result.data(), n, [&](std::int64_t i) {
    return shared_lab::thread_sum(host_table, i, stride);
  });
  return Check{comparison.within(0), comparison.max_error, 0, comparison.describe()};
}

std::string SharedMemoryWorkspace::ceiling_note() const {
  int device = 0, clock_khz = 0;
  ROOFLAB_CUDA("bench shared-memory", "finding the current device", cudaGetDevice(&device));
  ROOFLAB_CUDA("bench shared-memory", "reading the SM clock",
               cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const int sms = current_sm_count();
  const double ceiling = shared_lab::shared_memory_ceiling(sms, clock_khz);
  const int degree = stride == 0 ? 1 : shared_lab::bank_conflict_degree(stride);
  const std::string conflicts = stride == 0   ? "16-byte loads, conflict-free"
                                : degree == 1 ? "conflict-free"
                                              : fmt::format("{}-way bank conflicts", degree);
  return fmt::format(
      "{}; shared-memory ceiling (model) {} SMs x {} banks x 4 B x {:.0f} MHz = {:.0f} GB/s: "
      "these bytes take {:.1f} us at it",
      conflicts, sms, shared_lab::banks, clock_khz / 1e3, ceiling * 1e-9,
      bytes_read(n) / ceiling * 1e6);
}

namespace {

ROOFLAB_OP(Op{
    "shared-memory",
    "each thread sums 256 bytes of shared memory 64 times: bandwidth, and bank conflicts by "
    "stride",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 20;
      require(problem.n >= 1, "bench shared-memory", "--n", "must be at least 1");
      problem.dtype = "uint32";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + " threads, " +
             std::to_string(4 * shared_lab::words_per_pass) + " bytes x " +
             std::to_string(shared_lab::passes) + " passes each";
    },
    [](const Problem& problem) {
      // The bytes read from shared memory; the read ceiling (device memory's) is the comparison
      // the memory-basics lab makes (more bandwidth in shared memory, by no stated factor).
      return Model{bytes_read(problem.n), 0, Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<SharedMemoryWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 17 : 20);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — every CPU core, each thread's 256 bytes (stride 1) read 64 times from the core's L1.
// The same reload mask as the kernels (a volatile 0) keeps the compiler from reading once.
ROOFLAB_VARIANT(Variant{
    "shared-memory", 0, "cpu-parallel", "all CPU cores, the same bytes from each core's L1",
    Where::cpu, false, no_limit,
    on<SharedMemoryWorkspace>([](SharedMemoryWorkspace& w, cudaStream_t) {
      static volatile int zero = 0;
      const int pass_mask = zero;
      w.stride = 1;
      cpu::parallel_ranges(w.n, [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t i = begin; i < end; ++i) {
          const int warp = int(i % shared_lab::block_threads) / lab::warp_size;
          const int lane = int(i % lab::warp_size);
          std::uint32_t sum = 0;
          for (int pass = 0; pass < shared_lab::passes; ++pass)
            for (int c = 0; c < shared_lab::words_per_pass; ++c)
              sum += w.host_table[std::size_t(shared_lab::strided_word(warp, lane, c, 1) +
                                              (pass & pass_mask))];
          w.host_sums[std::size_t(i)] = sum;
        }
      });
    })});

}  // namespace
}  // namespace rooflab::bench
