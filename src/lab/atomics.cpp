// The atomics op: problem, workspace and the CPU rung. GPU rungs are in atomics.cu.
#include "lab/atomics.hpp"

#include <cmath>
#include <string>

#include "bench/random.hpp"
#include "cpu/lab.hpp"
#include "cpu/parallel.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t smallest_value = 1, largest_value = 4;

}  // namespace

AtomicsWorkspace::AtomicsWorkspace(std::int64_t n) : n(n), values(n), counter(1) {}

void AtomicsWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  fill_random_integers(values.data(), n, seed, smallest_value, largest_value, nullptr);
  counter.fill_bytes(0xFF);
  host_values.clear();
  host_counter = ~std::uint64_t(0);
}

void AtomicsWorkspace::prepare_host() {
  if (host_values.empty()) host_values = values.download();
}

Check AtomicsWorkspace::check(Where where) {
  const std::uint64_t got =
      where == Where::gpu ? std::uint64_t(counter.download()[0]) : host_counter;
  std::vector<std::uint64_t> parts(cpu::cpu_threads(), 0);
  cpu::parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    std::uint64_t sum = 0;
    for (std::int64_t i = begin; i < end; ++i)
      sum += std::uint64_t(random_integer(seed_, std::uint64_t(i), smallest_value, largest_value));
    parts[part] = sum;
  });
  std::uint64_t expected = 0;
  for (const std::uint64_t part : parts) expected += part;
  // Error: the share of the total that went missing (or appeared from nowhere).
  const double error = std::abs(double(got) - double(expected)) / double(expected);
  const std::string detail = "counted " + std::to_string(got) + " of " + std::to_string(expected);
  return Check{got == expected, error, 0, detail};
}

namespace {

ROOFLAB_OP(Op{
    "atomics",
    "every thread adds its value (1-4) to one counter: races, atomics, warp and block aggregation",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 24;
      require(problem.n >= 1, "bench atomics", "--n", "must be at least 1");
      problem.dtype = "uint32";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + " threads, one counter";
    },
    [](const Problem& problem) {
      return Model{4.0 * double(problem.n), double(problem.n), Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<AtomicsWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 20 : 24);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — every CPU core sums its own range, then adds it to the total once (a CPU core's
// privatization: the only shared write is one atomic per core).
ROOFLAB_VARIANT(Variant{"atomics", 0, "cpu-parallel", "all CPU cores, one atomic add per core",
                        Where::cpu, false, no_limit,
                        on<AtomicsWorkspace>([](AtomicsWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          w.host_counter = cpu::sum_privatized(w.host_values.data(), w.n);
                        })});

}  // namespace
}  // namespace rooflab::bench
