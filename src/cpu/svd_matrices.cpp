#include "cpu/svd_matrices.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "core/random_stream.hpp"
#include "cpu/parallel.hpp"

namespace rooflab::cpu {
namespace {

// What a class takes from the type the SVD computes in.
struct Precision {
  double eps;        // std::numeric_limits<T>::epsilon(): LAPACK's ulp ('P')
  double underflow;  // std::numeric_limits<T>::min(): LAPACK's safe minimum ('S')
  double overflow;   // std::numeric_limits<T>::max(): LAPACK's overflow threshold ('O')
  double graded_decades;
  bool single;  // random entries on float's 2^-23 grid, as the device fills a float batch
};

template <class T>
Precision precision_of() {
  // Graded columns fall by 30 decades in double and 12 in float: far below eps (1e-16, 1e-7), so
  // that only a method with high relative accuracy gets the small singular values right.
  return Precision{std::numeric_limits<T>::epsilon(), std::numeric_limits<T>::min(),
                   std::numeric_limits<T>::max(), sizeof(T) == 4 ? 12.0 : 30.0, sizeof(T) == 4};
}

// The independent streams of one matrix, keyed by a hash of (seed, purpose) rather than by
// seed + 1, seed + 2: a batch draws matrix b with seed + b, and neighbours must share no stream.
enum class Purpose : std::uint64_t { factors, left, right, diagonal, spectrum };

std::uint64_t stream_for(std::uint64_t seed, Purpose purpose) {
  return bench::random_bits(seed, std::uint64_t(purpose));
}

void require_lapack(lapack_int info, const char* routine) {
  if (info != 0)
    throw std::runtime_error(std::string(routine) + " failed with info " + std::to_string(info));
}

// Elements first ... first + m n - 1 of stream `seed` as an m x n matrix, in the grid of the
// device fill (bench/random.hpp) of the type: what the bench's random inputs are.
Matrix stream_matrix(int m, int n, std::uint64_t seed, std::uint64_t first, bool single) {
  Matrix a = zeros(m, n);
  for (std::size_t e = 0; e < a.values.size(); ++e)
    a.values[e] = single ? double(bench::random_float(seed, first + e))
                         : bench::random_double(seed, first + e);
  return a;
}

// Standard normal entries by Box-Muller from the uniform stream.
Matrix gaussian_matrix(int m, int n, std::uint64_t seed) {
  constexpr double pi = 3.14159265358979323846;
  Matrix a = zeros(m, n);
  for (std::size_t e = 0; e < a.values.size(); ++e) {
    const double radius_uniform = 0.5 * (1 - bench::random_double(seed, 2 * e));  // in (0, 1]
    const double angle = pi * bench::random_double(seed, 2 * e + 1);
    a.values[e] = std::sqrt(-2 * std::log(radius_uniform)) * std::cos(angle);
  }
  return a;
}

// rows x cols (rows >= cols) with orthonormal columns, distributed as the first columns of a
// Haar-random orthogonal matrix: Q of the QR of a Gaussian matrix, each column's sign made that
// of R's diagonal entry (without it, LAPACK's sign convention would bias Q).
Matrix random_orthonormal_columns(int rows, int cols, std::uint64_t seed) {
  Matrix q = gaussian_matrix(rows, cols, seed);
  std::vector<double> tau(cols), signs(cols);
  require_lapack(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, rows, cols, q.values.data(), rows, tau.data()),
                 "LAPACKE_dgeqrf");
  for (int j = 0; j < cols; ++j) signs[j] = q(j, j) < 0 ? -1 : 1;
  require_lapack(
      LAPACKE_dorgqr(LAPACK_COL_MAJOR, rows, cols, cols, q.values.data(), rows, tau.data()),
      "LAPACKE_dorgqr");
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) q(i, j) *= signs[j];
  return q;
}

// U diag(d) V^T with U (m x k) and V (n x k) random orthonormal columns, k = d.size() = min(m, n):
// singular values exactly d up to the rounding of the product.
Matrix with_singular_values(int m, int n, const std::vector<double>& d, std::uint64_t seed) {
  const int k = int(d.size());
  const Matrix u = random_orthonormal_columns(m, k, stream_for(seed, Purpose::left));
  const Matrix v = random_orthonormal_columns(n, k, stream_for(seed, Purpose::right));
  Matrix a = zeros(m, n);
  // Column j is sum_l (d_l v(j, l)) u(:, l); a thread gets columns worth about 2^16 multiply-adds.
  parallel_ranges(
      n,
      [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t j = begin; j < end; ++j)
          for (int l = 0; l < k; ++l) {
            const double coefficient = d[l] * v(int(j), l);
            for (int i = 0; i < m; ++i) a(i, int(j)) += u(i, l) * coefficient;
          }
      },
      std::max<std::int64_t>(1, (std::int64_t(1) << 16) / (std::int64_t(m) * k)));
  return a;
}

// LAPACK dlatm1's singular values of `mode` (1-5) for condition number `cond`, largest 1 (mode 5
// is scaled to it, as dlatms scales D to DMAX = 1).
std::vector<double> dlatms_spectrum(int mode, int k, double cond, std::uint64_t seed) {
  std::vector<double> d(k, 1.0);
  if (k == 1) return d;
  for (int i = 0; i < k; ++i) {
    const double t = double(i) / (k - 1);  // 0 at the largest, 1 at the smallest
    switch (mode) {
      case 1: d[i] = i == 0 ? 1 : 1 / cond; break;
      case 2: d[i] = i == k - 1 ? 1 / cond : 1; break;
      case 3: d[i] = std::pow(cond, -t); break;
      case 4: d[i] = 1 - t * (1 - 1 / cond); break;
      case 5: {
        const double uniform =
            0.5 * (1 + bench::random_double(stream_for(seed, Purpose::spectrum), i));
        d[i] = std::exp(-std::log(cond) * uniform);
      }
    }
  }
  std::sort(d.begin(), d.end(), std::greater<double>());
  const double largest = d[0];
  for (double& value : d) value /= largest;
  return d;
}

Matrix random_class(int m, int n, std::uint64_t seed, const Precision& p) {
  return stream_matrix(m, n, seed, 0, p.single);
}

Matrix zero_class(int m, int n, std::uint64_t, const Precision&) { return zeros(m, n); }

Matrix identity_class(int m, int n, std::uint64_t, const Precision&) {
  Matrix a = zeros(m, n);
  for (int i = 0; i < std::min(m, n); ++i) a(i, i) = 1;
  return a;
}

Matrix diagonal_class(int m, int n, std::uint64_t seed, const Precision&) {
  Matrix a = zeros(m, n);
  for (int i = 0; i < std::min(m, n); ++i) {
    // One draw of six outcomes: a sign and a magnitude of 1, 2 or 3.
    const std::int64_t outcome =
        bench::random_integer(stream_for(seed, Purpose::diagonal), i, 0, 5);
    a(i, i) = double(outcome / 2 + 1) * (outcome % 2 ? -1 : 1);
  }
  return a;
}

Matrix rank_class(int m, int n, std::uint64_t seed, int rank) {
  return rank_deficient_matrix(m, n, rank, stream_for(seed, Purpose::factors));
}
Matrix rank_1_class(int m, int n, std::uint64_t seed, const Precision&) {
  return rank_class(m, n, seed, 1);
}
Matrix rank_2_class(int m, int n, std::uint64_t seed, const Precision&) {
  return rank_class(m, n, seed, std::min(2, std::min(m, n)));
}
Matrix rank_quarter_class(int m, int n, std::uint64_t seed, const Precision&) {
  return rank_class(m, n, seed, std::max(1, std::min(m, n) / 4));
}
Matrix rank_minus_1_class(int m, int n, std::uint64_t seed, const Precision&) {
  return rank_class(m, n, seed, std::min(m, n) - 1);
}

// Exact in double, and in float while (i + 1) (j + 2) < 2^24 (m and n below about 4000).
Matrix rank_1_integer_class(int m, int n, std::uint64_t, const Precision&) {
  Matrix a = zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a(i, j) = double(i + 1) * double(j + 2) / 2;
  return a;
}

Matrix duplicated_columns_class(int m, int n, std::uint64_t seed, const Precision& p) {
  const int distinct = std::max(1, n / 2);
  const Matrix columns = stream_matrix(m, distinct, seed, 0, p.single);
  Matrix a = zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a(i, j) = columns(i, j % distinct);
  return a;
}

Matrix zero_columns_class(int m, int n, std::uint64_t seed, const Precision& p) {
  Matrix a = random_class(m, n, seed, p);
  for (int j = 1; j < n; j += 2)
    for (int i = 0; i < m; ++i) a(i, j) = 0;
  return a;
}

Matrix zero_rows_class(int m, int n, std::uint64_t seed, const Precision& p) {
  Matrix a = random_class(m, n, seed, p);
  for (int j = 0; j < n; ++j)
    for (int i = 1; i < m; i += 2) a(i, j) = 0;
  return a;
}

template <int mode, bool at_eps>
Matrix dlatms_class(int m, int n, std::uint64_t seed, const Precision& p) {
  const double cond = at_eps ? 1 / p.eps : 1 / std::sqrt(p.eps);
  return with_singular_values(m, n, dlatms_spectrum(mode, std::min(m, n), cond, seed), seed);
}

// After LAPACK ddrvbd's types 4 and 5: its type 3 as its comments describe it (dlatms mode 4, 1
// down to ulp; its code passes dlatms a condition of min(m, n)) scaled to the edge of the type's
// range, where an SVD that squares or sums squares of entries under- or overflows. ddrvbd scales
// type 5 to (1 / underflow) * ulp, a quarter of overflow * eps as here.
Matrix scaled_class(int m, int n, std::uint64_t seed, const Precision& p, double scale) {
  Matrix a = dlatms_class<4, true>(m, n, seed, p);
  for (double& value : a.values) value *= scale;
  return a;
}
Matrix scaled_tiny_class(int m, int n, std::uint64_t seed, const Precision& p) {
  return scaled_class(m, n, seed, p, p.underflow / p.eps);
}
Matrix scaled_huge_class(int m, int n, std::uint64_t seed, const Precision& p) {
  return scaled_class(m, n, seed, p, p.overflow * p.eps);
}

Matrix graded_class(int m, int n, std::uint64_t seed, const Precision& p) {
  return graded_matrix(m, n, seed, p.graded_decades);
}

Matrix clustered_class(int m, int n, std::uint64_t seed, const Precision& p) {
  const int k = std::min(m, n), half = (k + 1) / 2;
  std::vector<double> d(k);
  for (int i = 0; i < k; ++i) d[i] = (i < half ? 1.0 : 0.5) * (1 + i * p.eps);
  return with_singular_values(m, n, d, seed);
}

using Generator = Matrix (*)(int m, int n, std::uint64_t seed, const Precision& p);

struct Definition {
  SvdMatrixClass name_and_description;
  Generator make;
};

const std::vector<Definition>& definitions() {
  static const std::vector<Definition> all{
      {{"random", "entries uniform in [-1, 1) (the bench's default)"}, random_class},
      {{"zero", "all zeros"}, zero_class},
      {{"identity", "ones on the diagonal"}, identity_class},
      {{"diagonal", "diagonal, random signs, magnitudes 1, 2 or 3 (many exact ties)"},
       diagonal_class},
      {{"rank-1", "X Y^T with X m x 1 and Y n x 1 random"}, rank_1_class},
      {{"rank-2", "X Y^T of rank min(2, m, n), X and Y random"}, rank_2_class},
      {{"rank-quarter", "X Y^T of rank max(1, min(m, n) / 4)"}, rank_quarter_class},
      {{"rank-minus-1", "X Y^T of rank min(m, n) - 1"}, rank_minus_1_class},
      {{"rank-1-integer",
        "A(i, j) = (i + 1) (j + 2) / 2: exactly rank one, exact entries (known to break one-sided "
        "Jacobi)"},
       rank_1_integer_class},
      {{"duplicated-columns",
        "r = max(1, n / 2) random columns, column j a copy of column j mod r"},
       duplicated_columns_class},
      {{"zero-columns", "random, every odd column zero"}, zero_columns_class},
      {{"zero-rows", "random, every odd row zero"}, zero_rows_class},
      {{"mode1", "U diag(d) V^T, LAPACK dlatms mode 1: d = (1, 1/c, ..., 1/c), c = 1/sqrt(eps)"},
       dlatms_class<1, false>},
      {{"mode2", "dlatms mode 2: d = (1, ..., 1, 1/c), c = 1/sqrt(eps)"}, dlatms_class<2, false>},
      {{"mode3", "dlatms mode 3: d geometric from 1 to 1/c, c = 1/sqrt(eps)"},
       dlatms_class<3, false>},
      {{"mode4", "dlatms mode 4: d arithmetic from 1 to 1/c, c = 1/sqrt(eps)"},
       dlatms_class<4, false>},
      {{"mode5", "dlatms mode 5: d log-uniform in [1/c, 1], largest 1, c = 1/sqrt(eps)"},
       dlatms_class<5, false>},
      {{"mode1-eps", "mode1 with c = 1/eps"}, dlatms_class<1, true>},
      {{"mode2-eps", "mode2 with c = 1/eps"}, dlatms_class<2, true>},
      {{"mode3-eps", "mode3 with c = 1/eps"}, dlatms_class<3, true>},
      {{"mode4-eps", "mode4 with c = 1/eps (LAPACK ddrvbd's type 3 as its comments give it)"},
       dlatms_class<4, true>},
      {{"mode5-eps", "mode5 with c = 1/eps"}, dlatms_class<5, true>},
      {{"scaled-tiny", "mode4-eps times underflow / eps (after LAPACK ddrvbd's type 4)"},
       scaled_tiny_class},
      {{"scaled-huge", "mode4-eps times overflow * eps (after ddrvbd's type 5: 4x its scale)"},
       scaled_huge_class},
      {{"graded",
        "random times diag(10^(-g j / (n - 1))): columns scaled from 1 to 1e-30 (1e-12 in float)"},
       graded_class},
      {{"clustered",
        "U diag(d) V^T, d_i = 1 + i eps in the first half, 0.5 (1 + i eps) in the rest"},
       clustered_class},
      {{"mixed",
        "every 4th matrix of a batch (b % 4 == 0) rank-1-integer, the others random (one matrix: "
        "rank-1-integer)"},
       rank_1_integer_class},
  };
  return all;
}

const Definition& definition(const std::string& name) {
  for (const Definition& candidate : definitions())
    if (name == candidate.name_and_description.name) return candidate;
  throw std::invalid_argument("'" + name + "' is not an SVD matrix class (" +
                              svd_matrix_class_names() + ")");
}

void require_at_least_one_by_one(int m, int n) {
  if (m < 1 || n < 1)
    throw std::invalid_argument("an SVD test matrix is at least 1 x 1, not " + std::to_string(m) +
                                " x " + std::to_string(n));
}

}  // namespace

const std::vector<SvdMatrixClass>& svd_matrix_classes() {
  static const std::vector<SvdMatrixClass> classes = [] {
    std::vector<SvdMatrixClass> list;
    for (const Definition& entry : definitions()) list.push_back(entry.name_and_description);
    return list;
  }();
  return classes;
}

bool is_svd_matrix_class(const std::string& name) {
  const auto& classes = svd_matrix_classes();
  return std::any_of(classes.begin(), classes.end(),
                     [&](const SvdMatrixClass& candidate) { return name == candidate.name; });
}

std::string svd_matrix_class_names() {
  std::string names;
  for (const SvdMatrixClass& entry : svd_matrix_classes())
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

template <class T>
Matrix svd_test_matrix(const std::string& name, int m, int n, std::uint64_t seed) {
  const Definition& entry = definition(name);
  require_at_least_one_by_one(m, n);
  Matrix a = entry.make(m, n, seed, precision_of<T>());
  for (double& value : a.values) value = double(T(value));
  return a;
}

std::string svd_batch_member_class(const std::string& name, std::int64_t b) {
  if (name != "mixed") return name;
  return b % 4 == 0 ? "rank-1-integer" : "random";
}

template <class T>
Matrix svd_batch_test_matrix(const std::string& name, int m, int n, std::uint64_t seed,
                             std::int64_t b) {
  const std::string member = svd_batch_member_class(name, b);
  if (member != "random") return svd_test_matrix<T>(member, m, n, seed + std::uint64_t(b));
  require_at_least_one_by_one(m, n);
  return stream_matrix(m, n, seed, std::uint64_t(b) * std::uint64_t(m) * std::uint64_t(n),
                       sizeof(T) == 4);
}

template Matrix svd_test_matrix<float>(const std::string&, int, int, std::uint64_t);
template Matrix svd_test_matrix<double>(const std::string&, int, int, std::uint64_t);
template Matrix svd_batch_test_matrix<float>(const std::string&, int, int, std::uint64_t,
                                             std::int64_t);
template Matrix svd_batch_test_matrix<double>(const std::string&, int, int, std::uint64_t,
                                              std::int64_t);

}  // namespace rooflab::cpu
