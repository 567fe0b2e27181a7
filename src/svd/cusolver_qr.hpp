#pragma once
// The cuSOLVER and cuBLAS calls of the QR steps, overloaded on the element type: Householder QR
// (geqrf), the formation of Q from its reflectors (orgqr), a product and a product with a vector.
// Shared by QR preconditioning (qr_preconditioning.cu) and the completion of a single matrix's
// columns of sigma 0 (global_ends.cu). Plain C++.
#include <cublas_v2.h>
#include <cusolverDn.h>

namespace rooflab::jacobi {

// The typed cuSOLVER calls, overloaded on the element type.
inline cusolverStatus_t geqrf_buffer_size(cusolverDnHandle_t h, int m, int n, float* A, int lda,
                                          int* lwork) {
  return cusolverDnSgeqrf_bufferSize(h, m, n, A, lda, lwork);
}
inline cusolverStatus_t geqrf_buffer_size(cusolverDnHandle_t h, int m, int n, double* A, int lda,
                                          int* lwork) {
  return cusolverDnDgeqrf_bufferSize(h, m, n, A, lda, lwork);
}
inline cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, float* A, int lda, float* tau,
                              float* work, int lwork, int* info) {
  return cusolverDnSgeqrf(h, m, n, A, lda, tau, work, lwork, info);
}
inline cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, double* A, int lda, double* tau,
                              double* work, int lwork, int* info) {
  return cusolverDnDgeqrf(h, m, n, A, lda, tau, work, lwork, info);
}
// The m x n Q with orthonormal columns from the n reflectors geqrf left in A and tau (cuSOLVER's
// ormqr, which would apply them to [U_r; 0] directly, took 1.2 ms at 1000 x 64 on the H200 against
// 45 us for this and a few for the product after it).
// The first n columns of Q = H_1 ... H_k (k <= n <= m).
inline cusolverStatus_t form_q_buffer_size(cusolverDnHandle_t h, int m, int n, int k,
                                           const float* A, int lda, const float* tau, int* lwork) {
  return cusolverDnSorgqr_bufferSize(h, m, n, k, A, lda, tau, lwork);
}
inline cusolverStatus_t form_q_buffer_size(cusolverDnHandle_t h, int m, int n, int k,
                                           const double* A, int lda, const double* tau,
                                           int* lwork) {
  return cusolverDnDorgqr_bufferSize(h, m, n, k, A, lda, tau, lwork);
}
inline cusolverStatus_t form_q(cusolverDnHandle_t h, int m, int n, int k, float* A, int lda,
                               const float* tau, float* work, int lwork, int* info) {
  return cusolverDnSorgqr(h, m, n, k, A, lda, tau, work, lwork, info);
}
inline cusolverStatus_t form_q(cusolverDnHandle_t h, int m, int n, int k, double* A, int lda,
                               const double* tau, double* work, int lwork, int* info) {
  return cusolverDnDorgqr(h, m, n, k, A, lda, tau, work, lwork, info);
}
// C = A B (A m x k, B k x n).
inline cublasStatus_t product(cublasHandle_t h, int m, int n, int k, const float* A, int lda,
                              const float* B, int ldb, float* C, int ldc) {
  const float one = 1, zero = 0;
  return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
}
inline cublasStatus_t product(cublasHandle_t h, int m, int n, int k, const double* A, int lda,
                              const double* B, int ldb, double* C, int ldc) {
  const double one = 1, zero = 0;
  return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
}

// y = alpha op(A) x + beta y (A m x n; x and y contiguous).
inline cublasStatus_t product_with_vector(cublasHandle_t h, cublasOperation_t op, int m, int n,
                                          float alpha, const float* A, int lda, const float* x,
                                          float beta, float* y) {
  return cublasSgemv(h, op, m, n, &alpha, A, lda, x, 1, &beta, y, 1);
}
inline cublasStatus_t product_with_vector(cublasHandle_t h, cublasOperation_t op, int m, int n,
                                          double alpha, const double* A, int lda, const double* x,
                                          double beta, double* y) {
  return cublasDgemv(h, op, m, n, &alpha, A, lda, x, 1, &beta, y, 1);
}

}  // namespace rooflab::jacobi
