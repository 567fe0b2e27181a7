#pragma once
// CPU side of every SVD check: LAPACK references, LAPACK's own accuracy measures (ddrvbd) and the
// test matrices (random, graded, rank-deficient). Column-major throughout, like LAPACK.
#include <cstdint>
#include <vector>

namespace rooflab::cpu {

// A column-major m x n matrix with leading dimension m.
struct Matrix {
  int m = 0;
  int n = 0;
  std::vector<double> values;  // values[i + j * m]
  double& operator()(int i, int j) { return values[std::size_t(i) + std::size_t(j) * m]; }
  double operator()(int i, int j) const { return values[std::size_t(i) + std::size_t(j) * m]; }
};

Matrix zeros(int m, int n);
// Entries uniform in [-1, 1) from the counter-based stream `seed` (core/random_stream.hpp).
Matrix random_matrix(int m, int n, std::uint64_t seed);
// a * D with D = diag(10^(-decades * j / (n - 1))): a's columns scaled from 1 down to 10^-decades.
Matrix graded_columns(Matrix a, double decades);
// B * D for a random B (graded_columns): columns graded from 1 down to 10^-decades.
// One-sided Jacobi keeps high relative accuracy in the small singular values of such matrices.
Matrix graded_matrix(int m, int n, std::uint64_t seed, double decades = 10);
// X * Y^T with X m x rank and Y n x rank random: exactly rank `rank` (up to rounding).
Matrix rank_deficient_matrix(int m, int n, int rank, std::uint64_t seed);
// B^T B for a random m x n B: symmetric positive semi-definite n x n, eigenvalues sigma_i(B)^2.
Matrix gram_matrix(int m, int n, std::uint64_t seed);
Matrix transposed(const Matrix& a);

// Singular values, descending, by LAPACK dgesvj (one-sided Jacobi: high relative accuracy),
// through the transpose when m < n. k = min(m, n) values.
std::vector<double> lapack_singular_values(const Matrix& a);
// The sweeps LAPACK's dgesvj takes on `a` computing U and V at its default tolerance (sqrt(M) times
// LAPACK's eps, the unit roundoff: half of rooflab's default, docs/svd.md "Convergence"), through
// the transpose when m < n: the bar of the SVD's sweep count on the same matrix. dgesvj counts, as
// rooflab does, the last sweep, which finds every pair orthogonal. `converged` is false where
// dgesvj ran out of sweeps (INFO > 0; sweeps is then 31).
struct JacobiSweeps {
  int sweeps = 0;
  bool converged = false;
};
JacobiSweeps lapack_jacobi_sweeps(const Matrix& a);
// The Householder QR of an m x n matrix with m >= n, by LAPACK dgeqrf and dorgqr: Q (m x n,
// orthonormal columns) and the upper triangle R (n x n), A = Q R.
struct ThinQr {
  Matrix q, r;
};
ThinQr householder_qr(const Matrix& a);
// Singular values, descending, by LAPACK dgesvd without vectors (bidiagonalization: much faster
// than dgesvj on large matrices, accurate to eps * ||A|| rather than relatively).
std::vector<double> lapack_bidiagonal_singular_values(const Matrix& a);
// Singular values, descending, by LAPACK dgejsv (Drmac and Veselic's preconditioned Jacobi SVD,
// JOBA = 'F': QR with row and column pivoting, then one-sided Jacobi), through the transpose when
// m < n: high relative accuracy for A = D1 C D2 with D1, D2 diagonal and C well conditioned, so for
// column-graded matrices A = B D whether tall or wide (the transpose of a wide one is row-graded).
// The reference of the SVD's relative-accuracy tests; a float matrix is checked against this on
// its values promoted to double (exact), a better reference than LAPACK's sgejsv. Restricted
// range (JOBR = 'R', LAPACK's recommendation): values below about sqrt(underflow) times the
// largest are not resolved.
std::vector<double> lapack_high_accuracy_singular_values(const Matrix& a);
// kappa(B) = sigma_max(B) / sigma_min(B) of A with its columns scaled to unit 2-norm: for A = B D
// with D diagonal, that is B's condition with B's columns scaled to unit norm, whatever D is, the
// kappa of Demmel and Veselic's bound on the relative error of one-sided Jacobi's singular values
// (a multiple of n eps kappa(B)). Infinite when a column is zero or sigma_min(B) comes out 0;
// computed by dgesvd on B, so meaningful while kappa(B) is well below 1 / eps.
double column_scaled_condition(const Matrix& a);
// Eigenvalues of a symmetric matrix, descending, by LAPACK dsyev.
std::vector<double> lapack_symmetric_eigenvalues(const Matrix& a);
// A full SVD by LAPACK dgesvd: S descending, U m x k, V n x k (k = min(m, n)).
struct Svd {
  std::vector<double> s;
  Matrix u;
  Matrix v;
};
Svd lapack_svd(const Matrix& a);

// LAPACK's SVD tests (ddrvbd), each a multiple of the unit roundoff `ulp` of the type computed in:
//   residual      = ||A - U diag(S) V^T||_1 / (||A||_1 max(m, n) ulp)
//   orthogonality = ||I - U^T U||_1 / (m ulp) and ||I - V^T V||_1 / (n ulp)
// LAPACK's threshold for passing is 30-35. A zero A gives residual 0 when U S V^T is zero.
struct SvdAccuracy {
  double residual = 0;
  double u_orthogonality = 0;
  double v_orthogonality = 0;
  bool s_descending_nonnegative = false;
  double worst() const;
};
// s has k entries; u is m x k (ldu = m) and v is n x k (ldv = n), column-major, in any type
// convertible to double.
SvdAccuracy svd_accuracy(const Matrix& a, const std::vector<double>& s, const Matrix& u,
                         const Matrix& v, double ulp);

// max_i |s_i - reference_i| / reference_i over reference_i > floor * reference_0 (relative error
// of each singular value that is not negligible).
double max_relative_singular_value_error(const std::vector<double>& s,
                                         const std::vector<double>& reference, double floor);

}  // namespace rooflab::cpu
