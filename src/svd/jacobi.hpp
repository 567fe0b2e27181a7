#pragma once
// The one-sided Jacobi SVD's internal entry points, shared by rooflab::svd (src/svd/svd.cu),
// rooflab::svd_batched (src/svd_batched/svd_batched.cu), the two ladders and the tests. Plain C++:
// the kernels behind them are compiled once, in the library. The layers: the entry points call
// the dispatch (production_path, run_path: src/svd/dispatch.cpp), which calls one schedule's
// run_* function; the schedules never call the entry points.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "rooflab/svd.hpp"

namespace rooflab::jacobi {

// One or many m x n matrices and where their factors go. Matrix b starts at A + b * a_stride
// (column-major, leading dimension lda); its outputs at S + b * s_stride, U + b * u_stride (m x k,
// leading dimension ldu) and V + b * v_stride (n x k, leading dimension ldv), k = min(m, n). U and
// V are ignored when uv is false.
template <class T>
struct Problem {
  const T* A = nullptr;
  int lda = 0;
  std::int64_t a_stride = 0;
  int m = 0, n = 0, batch = 0;
  T* S = nullptr;
  T* U = nullptr;
  T* V = nullptr;
  int ldu = 0, ldv = 0;
  std::int64_t s_stride = 0, u_stride = 0, v_stride = 0;
  T tol = 0;  // resolved: > 0
  int max_sweeps = 0;
  bool uv = true;
  // A matrix that does not converge here is solved again on the transposed triangle
  // (tries_again_on_transposed_triangle): the Gram schedule may then hand a stalled matrix over
  // early (hands_over, global_state.cuh).
  bool second_try_follows = false;
};

// What happened to one matrix, written by the device.
struct MatrixStatus {
  int sweeps;
  int converged;  // 1 when a sweep found every pair orthogonal to tol
  int bad_input;  // 1 when the matrix held NaN or Inf (its S, U, V are then NaN)
  int reserved;
  double off;  // max over the last sweep's pairs of |a_p . a_q| / (||a_p|| ||a_q||)
};

// The whole batch at a glance, so that callers who want no per-matrix info copy 16 bytes back.
// A "key" is batch - index of the first such matrix (0: none), kept with atomicMax.
struct BatchSummary {
  unsigned bad_count;
  unsigned first_bad_key;
  unsigned unconverged_count;
  unsigned first_unconverged_key;
};

// Where the device reports: statuses (batch entries, may be null) and the summary (zeroed before
// the run; null when the caller reads the statuses alone).
struct Report {
  MatrixStatus* status = nullptr;
  BatchSummary* summary = nullptr;
};

// How the global-memory path schedules its work (the single-matrix ladder's rungs 1, 2, 5, 6, 7, 13
// and 14).
enum class GlobalSchedule {
  launch_per_round,    // one kernel per round of disjoint column pairs
  launch_per_sweep,    // one cooperative kernel per sweep, a grid-wide barrier between rounds
  blocked,             // one kernel per round of disjoint pairs of column blocks, each pair's
                       // columns swept in one block's shared memory
  blocked_persistent,  // the same rounds in one cooperative kernel for the whole iteration
                       // (per-round launches where the blocks cannot all be resident)
  gram,        // the blocked ring with pairs of 16-column blocks diagonalized through their 32 x 32
               // Gram matrices, the rotations applied to W and V as products
  gram_fused,  // the same rounds, each in one launch of a cluster of blocks per pair where every
               // pair's cluster fits on the GPU at once (else as gram)
  gram_cluster,  // every sweep in one launch of a cluster per matrix, the columns in its shared
                 // memory, where the matrices fit such clusters and these fit on the GPU at once
                 // (else as gram_fused)
};

// Where a matrix is solved; production_path picks by shape and batch. qr_preconditioned factors
// one tall matrix by QR first and solves R on the path production_path picks for it;
// qr_transposed_triangle sorts the columns by norm first and solves R^T (the ladder's rung 15,
// which production_path does not pick: the entry points' second try for a matrix left
// unconverged).
enum class Path {
  thread_per_matrix,
  warp_per_matrix,
  block_per_matrix,
  register_ring,
  gram,
  qr_preconditioned,
  qr_transposed_triangle
};

// The per-type default tolerance, LAPACK dgesvj's: sqrt(rows) * u when the vectors are wanted,
// rows * u otherwise; rows is max(m, n), the length of the columns being rotated, and u the type's
// unit roundoff, epsilon / 2 (LAPACK's eps, dlamch('E')).
template <class T>
T default_tolerance(int m, int n, bool uv);

// Checks the arguments shared by svd and svd_batched (throws rooflab::Error naming the argument)
// and returns the resolved tolerance.
template <class T>
T resolve_options(const char* op, int m, int n, const SvdOptions& options);

// One m x n matrix as the paths take it, its options checked and its tolerance resolved
// (resolve_options): rooflab::svd's problem, and the tests' when they run one path on its own.
template <class T>
Problem<T> single_matrix_problem(const char* op, const T* A, int m, int n, int lda, T* S, T* U,
                                 int ldu, T* V, int ldv, const SvdOptions& options);

// `batch` m x n matrices packed column-major as svd_batched takes them (A + b m n, S + b k,
// U + b m k, V + b n k); tol, max_sweeps and uv are the caller's to set (src/svd/problem.cpp).
template <class T>
Problem<T> packed_batch_problem(const T* A, int m, int n, int batch, T* S, T* U, T* V);

// The current device's shared memory per block, with the opt-in beyond 48 KB (227 KB on Hopper).
int shared_memory_optin();

// Whole matrices in one block's (or one warp's) shared memory: does an m x n matrix fit?
template <class T>
bool fits_on_chip(int m, int n, bool uv);

// Does an m x n matrix fit a thread's slice of shared memory (32 such slices in a block)?
template <class T>
bool fits_in_a_thread(int m, int n, bool uv);

// Who owns a matrix whose working set lies in shared memory.
enum class OnChipTeam { thread, warp, block };

// Runs every matrix of `problem` with each matrix's working set in shared memory, owned by one
// thread, one warp or one block. Asynchronous on `stream`. Defined in src/svd/on_chip.cu.
template <class T>
void run_on_chip(const Problem<T>& problem, OnChipTeam team, const Report& report,
                 cudaStream_t stream);

// The register ring (src/svd/register_ring.cu): a block per matrix, W and V in registers, for at
// most 64 columns of at most 64 rows. fits_in_registers says whether an m x n matrix qualifies,
// ring_restarts_here whether the ring's kernel restarts it on its transposed triangle once handed
// over (ring_restarts, jacobi_math.hpp, where that kernel's shared memory fits this device).
constexpr int register_ring_max_columns = 64;
constexpr int register_ring_max_rows = 64;
template <class T>
bool fits_in_registers(int m, int n, bool uv);
template <class T>
bool ring_restarts_here(int m, int n, bool uv);
template <class T>
void run_in_registers(const Problem<T>& problem, const Report& report, cudaStream_t stream);

// Runs every matrix of `problem` with its columns in global memory, any size (the blocked
// schedules: while a pair of 4-column blocks fits in shared memory). Waits on `stream` once per
// sweep for the count of matrices still sweeping (the next sweep already queued behind it). Defined
// in src/svd/run_global.cu, the schedules' kernels in global_rounds.cu, blocked.cu, gram.cu,
// fused.cu and cluster.cu.
template <class T>
void run_global(const Problem<T>& problem, GlobalSchedule schedule, const Report& report,
                cudaStream_t stream);

// Can the blocked schedule take columns of max(m, n) rows?
template <class T>
bool blocked_fits(int m, int n);

// Does GlobalSchedule::gram_cluster take `batch` m x n matrices in one cluster each (rather than
// falling back to the fused rounds)?
template <class T>
bool runs_in_one_cluster(int m, int n, bool uv, int batch);

// Householder QR of one M x N matrix W (M >= N, leading dimension M) in one block's shared memory
// (src/svd/block_qr.cu), asynchronous on `stream`: W <- its factors in LAPACK geqrf's layout (R on
// and above the diagonal, the reflectors' vectors below it, their first entry 1 not stored), tau <-
// the reflectors' factors. block_qr_fits says whether W fits the block.
template <class T>
bool block_qr_fits(int M, int N);
template <class T>
void block_qr(T* W, int M, int N, T* tau, cudaStream_t stream);
// The fastest path for `batch` m x n matrices (estimates from the ladders' measurements), and
// the call that runs a problem on a path.
template <class T>
Path production_path(int m, int n, int batch, bool uv);
template <class T>
void run_path(const Problem<T>& problem, Path path, const Report& report, cudaStream_t stream);

// The second try: matrix b of a problem that its first path left unconverged, solved again from A
// on the transposed triangle (rung 15), which took 8 to 12 sweeps where the production paths ran
// out of sweeps (src/svd/dispatch.cpp). Its status goes to report.status[0] (report.summary is
// not used); the first path's outputs for the matrix are overwritten. False, and nothing runs,
// where tries_again_on_transposed_triangle does not hold: `first` already was that path, or the
// caller's max_sweeps is below the default (30).
bool tries_again_on_transposed_triangle(Path first, int max_sweeps);
template <class T>
bool solve_again_on_transposed_triangle(const Problem<T>& problem, int b, Path first,
                                        const Report& report, cudaStream_t stream);

// One matrix (batch 1) factored by QR first, R solved on the path production_path picks for it;
// on_transposed_triangle: its columns sorted by norm first and R^T solved instead
// (src/svd/qr_preconditioning.cu).
template <class T>
void run_qr_preconditioned(const Problem<T>& problem, bool on_transposed_triangle,
                           const Report& report, cudaStream_t stream);

// Inline: svd_batched converts a whole batch's statuses one after the other.
inline SvdInfo to_info(const MatrixStatus& status) {
  SvdInfo info;
  info.sweeps = status.sweeps;
  info.converged = status.converged != 0;
  info.off = status.off;
  return info;
}

}  // namespace rooflab::jacobi
