#pragma once
// cuSOLVER's SVDs as the ladders' comparators, each called the way a user would: A copied first
// (cuSOLVER overwrites it; rooflab does not), workspace queried and allocated stream-ordered
// inside the call, outputs in rooflab's layout (U m x k, V n x k, column-major, packed per matrix).
#include <cuda_runtime_api.h>

namespace rooflab::bench {

// cusolverDn<t>gesvdj (Jacobi, economy) on each of `batch` packed m x n matrices, one call each
// (what PyTorch does above 32 x 32).
template <class T>
void cusolver_gesvdj_loop(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                          cudaStream_t stream);

// cusolverDn<t>gesvdjBatched (m, n <= 32): one call for the batch; its full U (m x m) and V (n x n)
// are cut to their first k columns.
template <class T>
void cusolver_gesvdj_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                             cudaStream_t stream);

// cusolverDn<t>gesvd (QR iteration, m >= n): V from its V^T by a cuBLAS transpose.
template <class T>
void cusolver_gesvd(const T* A, int m, int n, T* S, T* U, T* V, cudaStream_t stream);

// cusolverDnXgesvdp (polar decomposition, economy, m >= n).
template <class T>
void cusolver_gesvdp(const T* A, int m, int n, T* S, T* U, T* V, cudaStream_t stream);

}  // namespace rooflab::bench
