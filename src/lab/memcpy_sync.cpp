// The memcpy-sync op: problem and workspace. GPU rungs are in memcpy_sync.cu.
#include "lab/memcpy_sync.hpp"

#include <limits>
#include <string>

#include "rooflab/error.hpp"

namespace rooflab::bench {

MemcpySyncWorkspace::MemcpySyncWorkspace(std::int64_t n) : TimingWorkspace(n) {}

void MemcpySyncWorkspace::refill(std::uint64_t seed) {
  TimingWorkspace::refill(seed);
  host_out.assign(std::size_t(n), std::numeric_limits<float>::quiet_NaN());
}

Check MemcpySyncWorkspace::check(Where) { return AddWorkspace::check(Where::cpu); }

namespace {

ROOFLAB_OP(Op{
    "memcpy-sync",
    "The limiting-factors lecture's timing: events around the add, read after the blocking "
    "copy of the sum to the host, or before it",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 25;
      require(problem.n >= 1, "bench memcpy-sync", "--n", "must be at least 1");
      problem.dtype = "float";
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", float, sum copied to pageable memory";
    },
    [](const Problem& problem) {
      // The copy of the sum to the host dominates a run (the kernel itself moves 12 bytes per
      // element at HBM speed): 4 bytes per element over the host link.
      return Model{4.0 * double(problem.n), double(problem.n), Ceiling::host_transfer_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<MemcpySyncWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = std::int64_t(1) << (quick ? 22 : 25);
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — the CPU loop writes the host's copy itself, timed by a host clock around it: no
// device, no copy, nothing to wait for.
ROOFLAB_VARIANT(cpu_host_clock_rung("memcpy-sync",
                                    "one CPU core adds into host memory: a host clock times it"));

}  // namespace
}  // namespace rooflab::bench
