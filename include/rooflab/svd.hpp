#pragma once
// Singular value decomposition by one-sided Jacobi. Column-major (LAPACK convention).
// Instantiated for float and double.
#include <cuda_runtime_api.h>

namespace rooflab {

struct SvdOptions {
  double tol = 0;        // 0: the per-type default
  int max_sweeps = 30;
  bool compute_uv = true;
};

struct SvdInfo {
  int sweeps = 0;
  bool converged = false;
  double off = 0;  // final max scaled off-diagonal measure
};

// A = U diag(S) V^T, k = min(m, n); S descending, U m x k, V n x k; A is not modified.
// Returns when done (synchronizes the stream). NaN or Inf in A -> rooflab::Error.
template <class T>
SvdInfo svd(const T* A, int m, int n, int lda, T* S, T* U, int ldu, T* V, int ldv,
            const SvdOptions& opt = {}, cudaStream_t stream = nullptr);

// batch matrices of m x n, packed column-major: A + b*m*n, S + b*k, U + b*m*k, V + b*n*k.
// info (host array of batch entries) may be null.
template <class T>
void svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V, SvdInfo* info = nullptr,
                 const SvdOptions& opt = {}, cudaStream_t stream = nullptr);

}  // namespace rooflab
