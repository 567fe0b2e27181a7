#include "cpu/svd_reference.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "core/random_stream.hpp"
#include "cpu/parallel.hpp"

namespace rooflab::cpu {
namespace {

void require_lapack(lapack_int info, const char* routine) {
  if (info != 0)
    throw std::runtime_error(std::string(routine) + " failed with info " + std::to_string(info));
}

double one_norm(const Matrix& a) {
  double norm = 0;
  for (int j = 0; j < a.n; ++j) {
    double column = 0;
    for (int i = 0; i < a.m; ++i) column += std::abs(a(i, j));
    norm = std::max(norm, column);
  }
  return norm;
}

// Columns per thread so that each thread gets about 2^16 multiply-adds: a column of these checks
// costs `work_per_column` of them.
std::int64_t columns_per_part(std::int64_t work_per_column) {
  return std::max<std::int64_t>(
      1, (std::int64_t(1) << 16) / std::max<std::int64_t>(1, work_per_column));
}

// ||I - Q^T Q||_1 for Q with k columns.
double orthogonality_defect(const Matrix& q) {
  const int k = q.n;
  std::vector<double> column_sums(k, 0);
  parallel_ranges(
      k,
      [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t j = begin; j < end; ++j)
          for (int i = 0; i < k; ++i) {
            double dot = 0;
            for (int r = 0; r < q.m; ++r) dot += q(r, i) * q(r, int(j));
            column_sums[j] += std::abs((i == j ? 1.0 : 0.0) - dot);
          }
      },
      columns_per_part(std::int64_t(k) * q.m));
  return k > 0 ? *std::max_element(column_sums.begin(), column_sums.end()) : 0;
}

std::vector<double> descending(std::vector<double> values) {
  std::sort(values.begin(), values.end(), std::greater<double>());
  return values;
}

}  // namespace

Matrix zeros(int m, int n) { return Matrix{m, n, std::vector<double>(std::size_t(m) * n, 0.0)}; }

Matrix random_matrix(int m, int n, std::uint64_t seed) {
  Matrix a = zeros(m, n);
  for (std::size_t i = 0; i < a.values.size(); ++i) a.values[i] = bench::random_double(seed, i);
  return a;
}

Matrix graded_columns(Matrix a, double decades) {
  for (int j = 0; j < a.n; ++j) {
    const double scale = a.n > 1 ? std::pow(10.0, -decades * j / (a.n - 1)) : 1.0;
    for (int i = 0; i < a.m; ++i) a(i, j) *= scale;
  }
  return a;
}

Matrix graded_matrix(int m, int n, std::uint64_t seed, double decades) {
  return graded_columns(random_matrix(m, n, seed), decades);
}

Matrix rank_deficient_matrix(int m, int n, int rank, std::uint64_t seed) {
  const Matrix x = random_matrix(m, rank, seed);
  const Matrix y = random_matrix(n, rank, seed + 1);
  Matrix a = zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int l = 0; l < rank; ++l)
      for (int i = 0; i < m; ++i) a(i, j) += x(i, l) * y(j, l);
  return a;
}

Matrix gram_matrix(int m, int n, std::uint64_t seed) {
  const Matrix b = random_matrix(m, n, seed);
  Matrix g = zeros(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= j; ++i) {
      double dot = 0;
      for (int r = 0; r < m; ++r) dot += b(r, i) * b(r, j);
      g(i, j) = g(j, i) = dot;
    }
  return g;
}

Matrix transposed(const Matrix& a) {
  Matrix t = zeros(a.n, a.m);
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.m; ++i) t(j, i) = a(i, j);
  return t;
}

std::vector<double> lapack_singular_values(const Matrix& a) {
  Matrix work = a.m >= a.n ? a : transposed(a);
  if (work.n == 0) return {};
  std::vector<double> sva(work.n), stat(6);
  double unused_v = 0;
  require_lapack(LAPACKE_dgesvj(LAPACK_COL_MAJOR, 'G', 'N', 'N', work.m, work.n, work.values.data(),
                                work.m, sva.data(), 0, &unused_v, 1, stat.data()),
                 "LAPACKE_dgesvj");
  for (double& value : sva) value *= stat[0];  // dgesvj returns scaled values: SCALE * SVA
  return descending(sva);
}

JacobiSweeps lapack_jacobi_sweeps(const Matrix& a) {
  Matrix work = a.m >= a.n ? a : transposed(a);
  if (work.n == 0) return {0, true};
  std::vector<double> sva(work.n), v(std::size_t(work.n) * work.n), stat(6);
  const lapack_int info =
      LAPACKE_dgesvj(LAPACK_COL_MAJOR, 'G', 'U', 'V', work.m, work.n, work.values.data(), work.m,
                     sva.data(), 0, v.data(), work.n, stat.data());
  if (info < 0) require_lapack(info, "LAPACKE_dgesvj");
  return {int(stat[3]), info == 0};
}

ThinQr householder_qr(const Matrix& a) {
  if (a.m < a.n) throw std::invalid_argument("householder_qr takes m >= n");
  ThinQr qr{a, zeros(a.n, a.n)};
  std::vector<double> tau(std::max(1, a.n));
  if (a.n == 0) return qr;
  require_lapack(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, a.m, a.n, qr.q.values.data(), a.m, tau.data()),
                 "LAPACKE_dgeqrf");
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i <= j; ++i) qr.r(i, j) = qr.q(i, j);
  require_lapack(
      LAPACKE_dorgqr(LAPACK_COL_MAJOR, a.m, a.n, a.n, qr.q.values.data(), a.m, tau.data()),
      "LAPACKE_dorgqr");
  return qr;
}

std::vector<double> lapack_bidiagonal_singular_values(const Matrix& a) {
  const int k = std::min(a.m, a.n);
  Matrix work = a;
  std::vector<double> s(k), superb(std::max(1, k - 1));
  double unused = 0;
  require_lapack(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', a.m, a.n, work.values.data(), a.m,
                                s.data(), &unused, 1, &unused, 1, superb.data()),
                 "LAPACKE_dgesvd");
  return s;
}

std::vector<double> lapack_high_accuracy_singular_values(const Matrix& a) {
  Matrix work = a.m >= a.n ? a : transposed(a);  // dgejsv takes m >= n
  if (work.n == 0) return {};
  std::vector<double> sva(work.n), stat(7);
  std::vector<lapack_int> istat(3);
  double unused_u = 0, unused_v = 0;
  require_lapack(LAPACKE_dgejsv(LAPACK_COL_MAJOR, 'F', 'N', 'N', 'R', 'N', 'N', work.m, work.n,
                                work.values.data(), work.m, sva.data(), &unused_u, 1, &unused_v, 1,
                                stat.data(), istat.data()),
                 "LAPACKE_dgejsv");
  // dgejsv returns the values scaled where A's columns pass the largest double: the singular
  // values are SVA * (WORK(1) / WORK(2)) (dgejsv.f, "multiply the computed singular values with
  // USCAL2 / USCAL1", WORK(1) = USCAL2 * SCALEM, WORK(2) = USCAL1). The ratio first: a value
  // within the range is then not lost to an overflow on the way.
  const double scale = stat[0] / stat[1];
  for (double& value : sva) value *= scale;
  return descending(sva);
}

double column_scaled_condition(const Matrix& a) {
  Matrix unit = a;
  for (int j = 0; j < a.n; ++j) {
    double norm = 0;
    for (int i = 0; i < a.m; ++i) norm = std::hypot(norm, a(i, j));
    if (norm == 0) return INFINITY;
    for (int i = 0; i < a.m; ++i) unit(i, j) /= norm;
  }
  // Unit columns: ||B|| <= sqrt(n), so dgesvd's absolute accuracy resolves sigma_min well while
  // kappa is far below 1 / eps (and dgesvd converges where dgesvj may not).
  const std::vector<double> s = lapack_bidiagonal_singular_values(unit);
  if (s.empty()) return INFINITY;
  return s.back() > 0 ? s.front() / s.back() : INFINITY;
}

std::vector<double> lapack_symmetric_eigenvalues(const Matrix& a) {
  Matrix work = a;
  std::vector<double> w(a.n);
  require_lapack(LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'U', a.n, work.values.data(), a.n, w.data()),
                 "LAPACKE_dsyev");
  return descending(w);
}

Svd lapack_svd(const Matrix& a) {
  const int k = std::min(a.m, a.n);
  Matrix work = a;
  Svd result{std::vector<double>(k), zeros(a.m, k), zeros(a.n, k)};
  Matrix vt = zeros(k, a.n);
  std::vector<double> superb(std::max(1, k - 1));
  require_lapack(
      LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', a.m, a.n, work.values.data(), a.m, result.s.data(),
                     result.u.values.data(), a.m, vt.values.data(), std::max(1, k), superb.data()),
      "LAPACKE_dgesvd");
  result.v = transposed(vt);
  return result;
}

double SvdAccuracy::worst() const { return std::max({residual, u_orthogonality, v_orthogonality}); }

SvdAccuracy svd_accuracy(const Matrix& a, const std::vector<double>& s, const Matrix& u,
                         const Matrix& v, double ulp) {
  const int k = int(s.size());
  SvdAccuracy accuracy;
  accuracy.s_descending_nonnegative = true;
  for (int l = 0; l < k; ++l)
    if (!(s[l] >= 0) || (l > 0 && s[l] > s[l - 1])) accuracy.s_descending_nonnegative = false;

  // Column j of A - U diag(S) V^T is a(:, j) - sum_l (s_l v(j, l)) u(:, l): contiguous columns.
  std::vector<double> column_sums(a.n, 0);
  parallel_ranges(
      a.n,
      [&](std::int64_t begin, std::int64_t end, int) {
        std::vector<double> residual(a.m);
        for (std::int64_t j = begin; j < end; ++j) {
          for (int i = 0; i < a.m; ++i) residual[i] = a(i, int(j));
          for (int l = 0; l < k; ++l) {
            const double coefficient = s[l] * v(int(j), l);
            for (int i = 0; i < a.m; ++i) residual[i] -= u(i, l) * coefficient;
          }
          for (int i = 0; i < a.m; ++i) column_sums[j] += std::abs(residual[i]);
        }
      },
      columns_per_part(std::int64_t(a.m) * k));
  const double residual_norm =
      a.n > 0 ? *std::max_element(column_sums.begin(), column_sums.end()) : 0;
  const double a_norm = one_norm(a);
  const double size = std::max(a.m, a.n);
  if (a_norm > 0)
    accuracy.residual = residual_norm / a_norm / (size * ulp);
  else
    accuracy.residual = residual_norm > 0 ? 1 / ulp : 0;  // LAPACK's convention for A = 0
  accuracy.u_orthogonality = orthogonality_defect(u) / (std::max(a.m, 1) * ulp);
  accuracy.v_orthogonality = orthogonality_defect(v) / (std::max(a.n, 1) * ulp);
  return accuracy;
}

double max_relative_singular_value_error(const std::vector<double>& s,
                                         const std::vector<double>& reference, double floor) {
  if (s.size() != reference.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (reference[i] > floor * reference[0])
      worst = std::max(worst, std::abs(s[i] - reference[i]) / reference[i]);
  return worst;
}

}  // namespace rooflab::cpu
