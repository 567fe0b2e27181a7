// The synchronization op: problem and workspace (the check is the atomics lab's exact count). GPU
// rungs are in synchronization.cu.
#include "lab/synchronization.hpp"

#include <string>

#include "cpu/lab.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

SynchronizationWorkspace::SynchronizationWorkspace(std::int64_t n)
    : AtomicsWorkspace(n), lock(1), ticket(1), partials(blocks()) {}

void SynchronizationWorkspace::refill(std::uint64_t seed) {
  AtomicsWorkspace::refill(seed);
  lock.fill_bytes(0);
  ticket.fill_bytes(0);
  partials.fill_bytes(0xFF);
}

namespace {

ROOFLAB_OP(Op{
    "synchronization",
    "every block adds its total to one counter: a CAS spin lock, a CAS loop, atomicAdd, and a "
    "ticket after __threadfence",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 22;
      require(problem.n >= 1, "bench synchronization", "--n", "must be at least 1");
      problem.dtype = "uint32";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + " threads, " +
             std::to_string((problem.n + sync_lab::block_threads - 1) / sync_lab::block_threads) +
             " blocks, one counter";
    },
    [](const Problem& problem) {
      return Model{4.0 * double(problem.n), double(problem.n), Ceiling::read_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<SynchronizationWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 18 : 22);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — every CPU core sums its own range, then adds it to the total once (the atomics lab's
// CPU rung: one shared update per core).
ROOFLAB_VARIANT(Variant{"synchronization", 0, "cpu-parallel",
                        "all CPU cores, one atomic add per core", Where::cpu, false, no_limit,
                        on<SynchronizationWorkspace>([](SynchronizationWorkspace& w, cudaStream_t) {
                          w.prepare_host();
                          w.host_counter = cpu::sum_privatized(w.host_values.data(), w.n);
                        })});

}  // namespace
}  // namespace rooflab::bench
