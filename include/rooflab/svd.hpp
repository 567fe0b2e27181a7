#pragma once
// Singular value decomposition by one-sided Jacobi. Column-major (LAPACK convention).
// Instantiated for float and double.
#include <cuda_runtime_api.h>

namespace rooflab {

struct SvdOptions {
  double tol = 0;  // 0: the per-type default; else at least the type's unit roundoff, epsilon / 2
  int max_sweeps = 30;
  bool compute_uv = true;
};

struct SvdInfo {
  int sweeps = 0;
  bool converged = false;
  double off = 0;  // final max scaled off-diagonal measure
};

// SvdInfo's fields for a batch, left in device memory: each pointer null or `batch` entries. For
// callers that keep the records on the GPU (a framework's info tensors) or read them only when
// something failed: on batches of small matrices, copying every record back to the host takes
// longer than the solve (docs/svd.md, "The production path": svd_batched).
struct SvdDeviceInfo {
  int* sweeps = nullptr;
  bool* converged = nullptr;
  double* off = nullptr;
};

// What svd_batched found, from the few bytes it reads back whatever info it fills.
struct SvdBatchOutcome {
  int unconverged = 0;         // matrices not converged after both tries
  int first_unconverged = -1;  // the first of them; -1: none
};

// A = U diag(S) V^T, k = min(m, n); S descending and non-negative, U m x k, V n x k, both with
// orthonormal columns also where S has zeros (a rank-deficient A gets an orthonormal completion); A
// is not modified. Returns when done (synchronizes the stream). What is checked (the ratios of
// LAPACK's SVD tests, ddrvbd, with rooflab's bound 35, on every path, float and double, for every
// input class of the tests: exact ranks, duplicated and zero columns and rows, LAPACK's dlatms
// modes at condition 1/sqrt(eps) and 1/eps, matrices scaled to the underflow and overflow
// thresholds, graded and clustered ones): ||A - U S V^T|| / (||A|| max(m, n) eps), ||U^T U - I|| /
// (m eps) and ||V^T V - I|| / (n eps) within 35, and (rooflab's own test) S within 35 max(m, n) eps
// ||A|| of LAPACK's. A column that rotations cancel down to the rounding error a sweep's rotations
// may leave, max(32, k) eps of its share of ||A||_F, is taken as zero (docs/svd.md, structured
// inputs): all those columns together change A by at most max(32, k) eps ||A||_F, and singular
// values under about sqrt(k) eps ||A||_F may come out as 0. High relative accuracy: for a
// column-graded A = B D with m >= n (D diagonal, B with unit columns and condition kappa(B)), every
// singular value, the smallest included, is within 100 n eps kappa(B) of the exact one, relatively,
// on every path (tested against LAPACK's dgejsv with D from 1 down to 1e-30 in double, 1e-12 in
// float, its columns falling and rising); gesvd, gesvdj and gesvdp lose the small ones
// (docs/svd.md). A wide A (m < n) is factored through A^T, whose rows carry the grading: its values
// below about eps sigma_max keep only that absolute accuracy, and may come out as 0 (as LAPACK's
// dgesvj on A^T; dgejsv with row pivoting, JOBA = 'F' or 'G', keeps them). NaN or Inf in A ->
// rooflab::Error (argument "A"). A matrix that the first path leaves unconverged after
// opt.max_sweeps sweeps (30 or more; a smaller max_sweeps bounds the work and gets no second try),
// or whose sweeps stall there (from sweep 10, most pairs still above tol on a spectrum wider than
// 1/sqrt(eps): the hand-over), or, double and of more than 64 columns, whose spectrum they unfold
// slowly (after sweep 4, nearly every pair above tol and the columns' squared norms spread over at
// least 24 binades, under 2.5 times their spread after sweep 1: the early hand-over, docs/svd.md),
// or, double and of 56 to 64 columns in the register ring, likewise after sweep 2 (no zero column,
// squared norms spread over at least 20 binades, 1.1 to 1.8 times sweep 1's), is solved again from
// A on the transposed triangle (its columns sorted by norm, Householder QR, the sweeps on R^T, the
// first preconditioning of LAPACK's dgejsv), with opt.max_sweeps more; SvdInfo.sweeps counts both
// tries. Not converged then either -> SvdInfo.converged = false. U and V may be null when
// opt.compute_uv is false. tol 0 means LAPACK dgesvj's default: sqrt(max(m, n)) * u with vectors,
// max(m, n) * u without, u = std::numeric_limits<T>::epsilon() / 2, the unit roundoff (a given tol
// must be at least u). Converged: every pair's scaled off-diagonal is within tol, or, on the Gram
// schedule (its cluster, fused rounds or three kernels a round; docs/svd.md, "The production
// path"), two sweeps in a row ended within 16 sqrt(max(m, n)) epsilon, the rounding floor of its
// Gram products, which clustered spectra do not get under (docs/svd.md, "The Gram products'
// floor"); SvdInfo.off is then the last sweep's largest. A sweep is n(n-1)/2 column-pair tests, but
// for the pairs of a column taken as zero or as rounding noise, which no sweep rotates again (a
// single matrix on the Gram schedule's rounds whose columns still rotating fit one pair of
// 16-column blocks sweeps them in a few rounds, docs/svd.md); the count includes the last sweep,
// which finds every pair orthogonal (once the sweeps meet only small off-diagonals, that last sweep
// is a single test of every pair, with nothing left to rotate). The first call on a host thread
// allocates a few bytes of page-locked host memory for the status, kept until the thread exits. QR
// preconditioning and the second try form Q on a stream of the library's own (one per host thread
// and device), forked from `stream` and joined back into it.
template <class T>
SvdInfo svd(const T* A, int m, int n, int lda, T* S, T* U, int ldu, T* V, int ldv,
            const SvdOptions& opt = {}, cudaStream_t stream = nullptr);

// batch matrices of m x n, packed column-major: A + b*m*n, S + b*k, U + b*m*k, V + b*n*k.
// info (host array of batch entries) may be null. Returns when done (synchronizes the stream).
// Matrices holding NaN or Inf get NaN outputs and, once every other matrix is done, a
// rooflab::Error naming the first of them. Each matrix left unconverged gets the second try that
// svd gives (of a batch of more than one, only those out of sweeps or stalled, not the early
// hand-over's); without info, a matrix that did not converge then either is an error too (with
// info, its entry says so, and so does the outcome returned). Up to 8 second tries run at once:
// the calling thread queues them on `stream` beside at most 7 host threads of the library's own,
// started by the first batch that needs them and kept for the process, each queuing on a stream of
// its own (created on that thread, as are its handles) and waiting for it; calls from several
// threads take turns there. Those threads work in the device's primary context (the CUDA
// runtime's, which PyTorch, CuPy, JAX and Numba use): a batch in memory of a context of the
// caller's own, made current through the driver API, needs opt.max_sweeps below 30 (no second
// try) or the primary context. The first call with info on a host thread allocates 1 MiB of
// page-locked host memory for the statuses' copies, kept until the thread exits.
template <class T>
SvdBatchOutcome svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                            SvdInfo* info = nullptr, const SvdOptions& opt = {},
                            cudaStream_t stream = nullptr);

// The same with the per-matrix info written to device memory on `stream`, not copied back: an
// unconverged matrix is not an error (the outcome counts them, and info.converged says which).
template <class T>
SvdBatchOutcome svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                            const SvdDeviceInfo& info, const SvdOptions& opt = {},
                            cudaStream_t stream = nullptr);

}  // namespace rooflab
