// The problem the paths take: the options checked and the tolerance resolved, and the Problem of
// one matrix (rooflab::svd) or of a packed batch (rooflab::svd_batched, the ladders, the tests).
// Plain C++.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "rooflab/error.hpp"
#include "svd/jacobi.hpp"

namespace rooflab::jacobi {

template <class T>
T unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

template <class T>
T default_tolerance(int m, int n, bool uv) {
  const double rows = std::max(m, n);
  return T((uv ? std::sqrt(rows) : rows) * unit_roundoff<T>());
}

template <class T>
T resolve_options(const char* op, int m, int n, const SvdOptions& options) {
  require(m >= 1, op, "m", "must be at least 1, got " + std::to_string(m));
  require(n >= 1, op, "n", "must be at least 1, got " + std::to_string(n));
  require(options.max_sweeps >= 1, op, "opt.max_sweeps",
          "must be at least 1, got " + std::to_string(options.max_sweeps));
  // As LAPACK's dgesvj (CTOL >= 1): orthogonality below the unit roundoff is not asked for, and
  // the rotations' arithmetic relies on it (rsqrt_of_normal).
  require(options.tol == 0 || (std::isfinite(options.tol) && T(options.tol) >= unit_roundoff<T>()),
          op, "opt.tol",
          "must be 0 (the default) or at least the type's unit roundoff, epsilon / 2");
  return options.tol > 0 ? T(options.tol) : default_tolerance<T>(m, n, options.compute_uv);
}

template <class T>
Problem<T> single_matrix_problem(const char* op, const T* A, int m, int n, int lda, T* S, T* U,
                                 int ldu, T* V, int ldv, const SvdOptions& options) {
  Problem<T> problem;
  problem.tol = resolve_options<T>(op, m, n, options);
  problem.A = A;
  problem.lda = lda;
  problem.m = m;
  problem.n = n;
  problem.batch = 1;
  problem.S = S;
  problem.U = U;
  problem.V = V;
  problem.ldu = ldu;
  problem.ldv = ldv;
  problem.max_sweeps = options.max_sweeps;
  problem.uv = options.compute_uv;
  return problem;
}

template <class T>
Problem<T> packed_batch_problem(const T* A, int m, int n, int batch, T* S, T* U, T* V) {
  const int k = std::min(m, n);
  Problem<T> problem;
  problem.A = A;
  problem.lda = m;
  problem.a_stride = std::int64_t(m) * n;
  problem.m = m;
  problem.n = n;
  problem.batch = batch;
  problem.S = S;
  problem.U = U;
  problem.V = V;
  problem.ldu = m;
  problem.ldv = n;
  problem.s_stride = k;
  problem.u_stride = std::int64_t(m) * k;
  problem.v_stride = std::int64_t(n) * k;
  return problem;
}

template float default_tolerance<float>(int, int, bool);
template double default_tolerance<double>(int, int, bool);
template float resolve_options<float>(const char*, int, int, const SvdOptions&);
template double resolve_options<double>(const char*, int, int, const SvdOptions&);
template Problem<float> single_matrix_problem<float>(const char*, const float*, int, int, int,
                                                     float*, float*, int, float*, int,
                                                     const SvdOptions&);
template Problem<float> packed_batch_problem<float>(const float*, int, int, int, float*, float*,
                                                    float*);
template Problem<double> packed_batch_problem<double>(const double*, int, int, int, double*,
                                                      double*, double*);
template Problem<double> single_matrix_problem<double>(const char*, const double*, int, int, int,
                                                       double*, double*, int, double*, int,
                                                       const SvdOptions&);

}  // namespace rooflab::jacobi
