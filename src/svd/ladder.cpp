// The svd ladder: one-sided Jacobi on one matrix, from a launch per round to the whole SVD in one
// kernel. The kernels live in the library (src/svd/: a file per schedule, built from jacobi.cuh and
// gram.cuh), because rooflab::svd dispatches to them; each rung here runs one of them on its own.
#include <string>

#include "bench/registry.hpp"
#include "core/device_features.hpp"
#include "core/device_info.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"
#include "svd/svd_workspace.hpp"

namespace rooflab::bench {
namespace {

// Rungs 13 and 14 stand on thread-block clusters: where the device or the loaded code lacks them
// (before sm_90, a PTX build for an older architecture, ROOFLAB_TREAT_AS_SM) they are not run.
std::string needs_clusters(const Problem&) {
  if (!cuda_device_unavailable_reason().empty() || current_device_features().clusters()) return {};
  return "needs thread-block clusters (sm_90 on); planned here for sm_" +
         std::to_string(current_device_features().arch);
}

// Rung 1 — one launch per round (jacobi.cuh's process_pair, global_rounds.cu's global_round).
// Columns stay in global memory; a warp per column pair, n/2 pairs a launch, n launches a sweep
// and a host round trip per sweep to test convergence. Every round re-reads both columns from L2
// and pays a launch (~3 us): launch overhead and L2 traffic bound it.
ROOFLAB_VARIANT(Variant{"svd",
                        1,
                        "round-per-launch",
                        "a warp per column pair in global memory, one launch per round",
                        Where::gpu,
                        false,
                        no_limit,
                        run_schedule(jacobi::GlobalSchedule::launch_per_round),
                        {},
                        svd_sweeps_note});

// Rung 2 — a whole sweep per launch (global_rounds.cu's global_sweep_cooperative).
// The same rounds inside one cooperative kernel, a grid-wide barrier between them: the launch
// cost per round becomes a barrier (~1 us), but the columns still cross L2 every round.
ROOFLAB_VARIANT(Variant{"svd",
                        2,
                        "sweep-per-launch",
                        "one cooperative kernel per sweep, a grid barrier per round",
                        Where::gpu,
                        false,
                        no_limit,
                        run_schedule(jacobi::GlobalSchedule::launch_per_sweep),
                        {},
                        svd_sweeps_note});

// Rung 3 — the whole SVD in one kernel (on_chip.cu's svd_block_per_matrix, batch 1).
// W, V, norms and positions in one block's shared memory (up to 227 KB on Hopper): rounds are
// separated by __syncthreads instead of launches, and every column access is an on-chip load.
// One SM does all the work, so it only pays while the matrix is small.
ROOFLAB_VARIANT(Variant{"svd",
                        3,
                        "one-kernel",
                        "the whole SVD in one block's shared memory, one launch",
                        Where::gpu,
                        false,
                        [](const Problem& problem) -> std::string {
                          const int m = int(problem.m), n = int(problem.n);
                          if (problem.dtype == "float" ? jacobi::fits_on_chip<float>(m, n, true)
                                                       : jacobi::fits_on_chip<double>(m, n, true))
                            return {};
                          return "W and V exceed one block's shared memory";
                        },
                        run_on_path(jacobi::Path::block_per_matrix),
                        {},
                        svd_sweeps_note});

// Rung 4 — the register ring (src/svd/register_ring.cu).
// The same sweeps with W and V in registers: a lane holds two positions of the ring, a warp 7 to 16
// rows of them (the rows split evenly over up to 4 warps); odd rounds swap columns between
// neighbouring lanes with shuffles, and only three partial dot products per pair and warp cross
// shared memory. A round is one block barrier and the rotation's latency instead of a pass of W and
// V through one SM's shared memory.
ROOFLAB_VARIANT(Variant{
    "svd",
    4,
    "register-ring",
    "W and V in registers, a lane per two ring positions, a warp per 7 to 16 rows",
    Where::gpu,
    false,
    register_ring_limit,
    run_on_path(jacobi::Path::register_ring),
    {},
    svd_sweeps_note});

// Rung 5 — blocked one-sided Jacobi (blocked.cu's blocked_round).
// The odd-even ring runs over blocks of b columns; a block of threads takes each pair of blocks,
// sweeps its 2b columns once in shared memory, and applies the accumulated 2b x 2b rotation to
// V's columns. Column data crosses L2 once per pair of blocks instead of once per pair of
// columns, and n / (2b) blocks of threads work at once on different SMs.
ROOFLAB_VARIANT(Variant{"svd",
                        5,
                        "blocked",
                        "pairs of column blocks swept in shared memory, V updated by the 2b x 2b Q",
                        Where::gpu,
                        false,
                        blocked_limit,
                        run_schedule(jacobi::GlobalSchedule::blocked),
                        {},
                        svd_sweeps_note});

// Rung 6 — blocked, persistent (blocked.cu's blocked_persistent).
// The same pairs of blocks in one cooperative kernel for the whole iteration: a grid-wide barrier
// (about a microsecond) instead of a launch per round, and the convergence test on the device
// instead of a host round trip per sweep. For one matrix the rounds are short, so what they
// cost between them is most of the time.
ROOFLAB_VARIANT(Variant{"svd",
                        6,
                        "blocked-persistent",
                        "the blocked rounds in one cooperative launch, grid barriers between",
                        Where::gpu,
                        false,
                        blocked_limit,
                        run_schedule(jacobi::GlobalSchedule::blocked_persistent),
                        {},
                        svd_sweeps_note});

// Rung 7 — blocked through Gram matrices (gram.cu's gram_partials, gram_solve, gram_apply).
// The blocked ring with 16-column blocks, but a pair of blocks is diagonalized through its 32 x 32
// Gram matrix (formed over all rows at once, then two-sided Jacobi by a block of 256 threads) and
// the rotation reaches W and V as one product: the inner rounds touch 1024 numbers instead of 32
// columns of M rows, and the columns cross memory three times per pair of blocks.
ROOFLAB_VARIANT(Variant{
    "svd",
    7,
    "gram",
    "pairs of column blocks through their Gram matrices, rotations applied as products",
    Where::gpu,
    false,
    no_limit,
    run_schedule(jacobi::GlobalSchedule::gram),
    {},
    svd_sweeps_note});

// Rung 8 — rooflab::svd: the library's dispatch by shape (jacobi::production_path: QR
// preconditioning for a tall matrix where it pays, the register ring up to 64 x 64, the Gram
// schedule beyond 64 columns or from 49 columns, in one cluster per matrix where it fits, else its
// rounds fused where their clusters fit, one block's shared memory for the rest), with its argument
// checks, scratch allocation and the final synchronization a caller sees.
ROOFLAB_VARIANT(Variant{"svd",
                        8,
                        "rooflab-svd",
                        "the library call: best rung for the shape",
                        Where::gpu,
                        false,
                        no_limit,
                        [](Workspace& workspace, cudaStream_t stream) {
                          visit_svd_workspace(workspace, [stream](auto& w) {
                            const int sweeps =
                                svd(w.a.data(), w.m, w.n, w.m, w.s.data(), w.u.data(), w.m,
                                    w.v.data(), w.n, SvdOptions{}, stream)
                                    .sweeps;
                            w.record_library_sweeps(sweeps, sweeps);
                          });
                        },
                        {},
                        svd_sweeps_note});

// Rung 9 — QR preconditioning (qr_preconditioning.cu's run_qr_preconditioned), after LAPACK
// dgejsv's first step. The Householder QR of the tall matrix (cuSOLVER's; one block's for a square
// matrix that fits, block_qr.cu), the Jacobi SVD of the N x N triangle R on the path the library
// picks for it, and U = Q U_r (Q formed, then one product): the sweeps rotate N rows instead of M,
// so it pays once M is well above N (a square matrix only pays the QR).
ROOFLAB_VARIANT(Variant{"svd",
                        9,
                        "qr-preconditioned",
                        "Householder QR first, the Jacobi SVD of R, then U = Q U_r",
                        Where::gpu,
                        false,
                        no_limit,
                        run_on_path(jacobi::Path::qr_preconditioned),
                        {},
                        svd_sweeps_note});

// Rung 13 — the Gram rounds fused (fused.cu's gram_round_fused). A round of rung 7 is three kernels
// one after another, each paying its launch, a trip of G or Q through L2 and the wait for its
// slowest block; here a cluster of blocks per pair loads its rows once, adds the blocks' parts of G
// through distributed shared memory, solves, and applies Q to its rows in one launch. (Numbered
// after the cuSOLVER rungs, which kept their numbers.)
ROOFLAB_VARIANT(Variant{
    "svd",
    13,
    "gram-fused",
    "the Gram rung's round in one launch: a cluster of blocks per pair of blocks",
    Where::gpu,
    false,
    needs_clusters,
    run_schedule(jacobi::GlobalSchedule::gram_fused),
    {},
    svd_sweeps_note});

// Rung 14 — the whole Gram iteration in one cluster per matrix (cluster.cu's gram_cluster_sweeps).
// Where a matrix's pairs of blocks and rows fit one cluster of 8 blocks (with the vectors, up to
// 128 columns of up to a few hundred rows), or for a single double matrix one of 16 blocks (up to
// 256 columns on Hopper, which runs that size when asked), its blocks keep their columns in shared
// memory for every sweep and trade the ring's halves through each other's shared memory: a round is
// two cluster barriers and the solve, with no launch, no trip of the columns through L2 and no host
// round trip between sweeps. (Elsewhere it runs rung 13.) Rungs 13 and 14 need sm_90.
ROOFLAB_VARIANT(Variant{"svd",
                        14,
                        "gram-cluster",
                        "every sweep in one cluster per matrix, the columns in shared memory",
                        Where::gpu,
                        false,
                        needs_clusters,
                        run_schedule(jacobi::GlobalSchedule::gram_cluster),
                        {},
                        svd_sweeps_note});

// Rung 15 — QR preconditioning on the transposed triangle (qr_preconditioning.cu), as LAPACK's
// dgejsv runs it without pivoting: the columns sorted by norm, their Householder QR, and the
// Jacobi SVD of R^T, whose R R^T is nearer diagonal than R^T R: fewer sweeps where the ring on A
// converges slowly (geometric and log-uniform spectra), at the price of the QR, Q and one product
// on any matrix. The library's dispatch does not pick it; svd and svd_batched run it as the second
// try for a matrix its path left unconverged (dispatch.cpp).
ROOFLAB_VARIANT(Variant{"svd",
                        15,
                        "qr-transposed-triangle",
                        "columns sorted by norm, Householder QR, the Jacobi SVD of R^T, U = Q V_2",
                        Where::gpu,
                        false,
                        no_limit,
                        run_on_path(jacobi::Path::qr_transposed_triangle),
                        {},
                        svd_sweeps_note});

}  // namespace
}  // namespace rooflab::bench
