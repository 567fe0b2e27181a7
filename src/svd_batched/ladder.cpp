// The svd-batched ladder: from a loop over the single-matrix SVD to a warp or a thread per
// matrix. The kernels live in the library (src/svd/on_chip.cu and the other schedules, built from
// src/svd/jacobi.cuh), because rooflab::svd_batched dispatches to them.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "core/device_features.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"
#include "svd/svd_workspace.hpp"

namespace rooflab::bench {
namespace {

int element_bytes(const Problem& problem) { return problem.dtype == "float" ? 4 : 8; }

// Rung 1 — rooflab::svd in a loop, one matrix at a time.
// Each call is a launch, an allocation and a synchronization; a small matrix keeps one SM busy
// for a few microseconds while the other 131 idle.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        1,
                        "loop-svd",
                        "rooflab::svd on one matrix after another",
                        Where::gpu,
                        false,
                        [](const Problem& problem) -> std::string {
                          if (problem.batch <= 10000) return {};
                          return "one synchronizing call per matrix: limit batch <= 10000";
                        },
                        [](Workspace& workspace, cudaStream_t stream) {
                          visit_svd_workspace(workspace, [stream](auto& w) {
                            const std::int64_t size = std::int64_t(w.m) * w.n;
                            int fewest = std::numeric_limits<int>::max(), most = 0;
                            for (int b = 0; b < w.batch; ++b) {
                              const int sweeps = svd(w.a.data() + b * size, w.m, w.n, w.m,
                                                     w.s.data() + std::int64_t(b) * w.k,
                                                     w.u.data() + std::int64_t(b) * w.m * w.k, w.m,
                                                     w.v.data() + std::int64_t(b) * w.n * w.k, w.n,
                                                     SvdOptions{}, stream)
                                                     .sweeps;
                              fewest = std::min(fewest, sweeps);
                              most = std::max(most, sweeps);
                            }
                            w.record_library_sweeps(fewest, most);
                          });
                        },
                        {},
                        svd_sweeps_note});

// Rung 2 — a warp per matrix (src/svd/on_chip.cu's svd_warp_per_matrix).
// The matrix's W and V sit in its warp's slice of shared memory; groups of lanes take the column
// pairs of a round and reduce their dot products with shuffles; rounds end with __syncwarp, not a
// block barrier, and a warp whose matrix converged simply takes no more work.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        2,
                        "warp-per-matrix",
                        "a warp per matrix, W and V in its shared memory slice",
                        Where::gpu,
                        false,
                        [](const Problem& problem) -> std::string {
                          const auto layout = jacobi::on_chip_layout(
                              int(problem.m), int(problem.n), element_bytes(problem), true, false);
                          if (layout.bytes <= shared_per_block_for_rungs()) return {};
                          return "one matrix exceeds a block's shared memory";
                        },
                        run_on_path(jacobi::Path::warp_per_matrix),
                        {},
                        svd_sweeps_note});

// Rung 3 — a block per matrix in shared memory (src/svd/on_chip.cu's svd_block_per_matrix).
// Many lanes per column pair shorten each round of a larger matrix; the 227 KB of shared memory a
// Hopper block may opt in to (cudaFuncSetAttribute beyond 48 KB) hold square matrices with their
// vectors up to 111 x 111 in double and 160 x 160 in float (99 KB on sm_86 and sm_89, 64 KB on
// sm_75: less).
ROOFLAB_VARIANT(Variant{"svd-batched",
                        3,
                        "block-per-matrix",
                        "a block per matrix, W and V in its shared memory",
                        Where::gpu,
                        false,
                        [](const Problem& problem) -> std::string {
                          const auto layout = jacobi::on_chip_layout(
                              int(problem.m), int(problem.n), element_bytes(problem), true, true);
                          if (layout.bytes <= shared_per_block_for_rungs()) return {};
                          return "one matrix exceeds a block's shared memory";
                        },
                        run_on_path(jacobi::Path::block_per_matrix),
                        {},
                        svd_sweeps_note});

// Rung 4 — the register ring per matrix (src/svd/register_ring.cu).
// A block per matrix with W and V in registers (two ring positions per lane, 7 to 16 rows per
// warp): up to 64 x 64, rounds cost one block barrier and no pass of the columns through shared
// memory, but each block holds one matrix, so it pays while the batch is too small to fill the
// GPU with warp-per-matrix teams.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        4,
                        "register-ring",
                        "a block per matrix, W and V in registers",
                        Where::gpu,
                        false,
                        register_ring_limit,
                        run_on_path(jacobi::Path::register_ring),
                        {},
                        svd_sweeps_note});

// Rung 5 — the global-memory rounds for the whole batch (global_rounds.cu's global_round).
// Beyond shared memory: every matrix's pairs of a round in one launch, so the launches are shared
// by the batch; converged matrices drop out of later sweeps.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        5,
                        "global-rounds",
                        "the batch's column pairs in global memory, a launch per round",
                        Where::gpu,
                        false,
                        no_limit,
                        run_schedule(jacobi::GlobalSchedule::launch_per_round),
                        {},
                        svd_sweeps_note});

// Rung 6 — blocked (blocked.cu's blocked_step in the persistent kernel), beyond shared memory.
// Pairs of b-column blocks of every matrix in each round, each swept in a block's shared memory,
// the rotations reaching V as one 2b x 2b product; one cooperative launch for the whole iteration.
// A 256 x 256 batch in double runs 8 pairs of 16-column blocks per matrix at once.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        6,
                        "blocked",
                        "pairs of column blocks swept in shared memory, every matrix at once",
                        Where::gpu,
                        false,
                        blocked_limit,
                        run_schedule(jacobi::GlobalSchedule::blocked_persistent),
                        {},
                        svd_sweeps_note});

// Rung 7 — the Gram schedule (the svd ladder's rung 7) for every matrix at once: each round's
// pairs of 16-column blocks of all matrices go through their Gram matrices together, so a batch
// of 256 x 256 matrices runs 8 pairs per matrix and round, a block of 256 threads each for the
// inner solve.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        7,
                        "gram",
                        "pairs of column blocks of every matrix through their Gram matrices",
                        Where::gpu,
                        false,
                        no_limit,
                        run_schedule(jacobi::GlobalSchedule::gram),
                        {},
                        svd_sweeps_note});

// Rung 8 — rooflab::svd_batched: the library's dispatch (jacobi::production_path: the register
// ring for fewer matrices than SMs, the Gram schedule for wide matrices too few to fill half the
// SMs, a thread, warp or block per matrix where the matrix fits on chip, the Gram schedule beyond
// shared memory), with its checks and the final synchronization.
ROOFLAB_VARIANT(Variant{
    "svd-batched",
    8,
    "rooflab-svd-batched",
    "the library call: best rung for the shape",
    Where::gpu,
    false,
    no_limit,
    [](Workspace& workspace, cudaStream_t stream) {
      visit_svd_workspace(workspace, [stream](auto& w) {
        svd_batched(w.a.data(), w.m, w.n, w.batch, w.s.data(), w.u.data(), w.v.data(), nullptr,
                    SvdOptions{}, stream);
      });
    },
    {},
    // The timed call asks for no info, as most callers do; the sweeps come from one more call on
    // the same input, untimed, with the per-matrix sweeps left in device memory.
    [](Workspace& workspace) {
      std::string note;
      visit_svd_workspace(workspace, [&note](auto& w) {
        DeviceBuffer<int> sweeps(std::size_t(w.batch));
        svd_batched(w.a.data(), w.m, w.n, w.batch, w.s.data(), w.u.data(), w.v.data(),
                    SvdDeviceInfo{sweeps.data()}, SvdOptions{}, nullptr);
        const std::vector<int> counts = sweeps.download();
        const auto [fewest, most] = std::minmax_element(counts.begin(), counts.end());
        w.record_library_sweeps(*fewest, *most);
        note = w.sweeps_note();
      });
      return note;
    }});

// Rung 9 — a thread per matrix (src/svd/on_chip.cu's svd_thread_per_matrix), for the smallest
// matrices (3 x 3 rotations, 3 x 2 point sets): a warp per matrix leaves most of its lanes idle on
// them and pays five shuffle steps a sum; one thread runs the pairs one after the other in its own
// slice of shared memory, 32 matrices a warp. Added after the production rung, which now calls it.
ROOFLAB_VARIANT(Variant{"svd-batched",
                        9,
                        "thread-per-matrix",
                        "a thread per matrix, W and V in its slice of shared memory",
                        Where::gpu,
                        false,
                        [](const Problem& problem) -> std::string {
                          const bool fits = problem.dtype == "float"
                                                ? jacobi::fits_in_a_thread<float>(
                                                      int(problem.m), int(problem.n), true)
                                                : jacobi::fits_in_a_thread<double>(
                                                      int(problem.m), int(problem.n), true);
                          if (fits) return {};
                          return "32 matrices exceed a block's shared memory";
                        },
                        run_on_path(jacobi::Path::thread_per_matrix),
                        {},
                        svd_sweeps_note});

}  // namespace
}  // namespace rooflab::bench
