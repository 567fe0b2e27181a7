#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "core/random_stream.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"

namespace rooflab::cpu {
namespace {

constexpr double double_ulp = std::numeric_limits<double>::epsilon();

TEST(SvdReference, LapackSvdPassesItsOwnAccuracyTests) {
  for (auto [m, n] : {std::pair{40, 25}, std::pair{25, 40}, std::pair{1, 7}, std::pair{7, 1}}) {
    const Matrix a = random_matrix(m, n, 17);
    const Svd svd = lapack_svd(a);
    const SvdAccuracy accuracy = svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp);
    EXPECT_TRUE(accuracy.s_descending_nonnegative) << m << "x" << n;
    EXPECT_LT(accuracy.worst(), 35) << m << "x" << n;
  }
}

TEST(SvdReference, AccuracyTestsCatchAWrongSingularValue) {
  const Matrix a = random_matrix(30, 20, 3);
  Svd svd = lapack_svd(a);
  svd.s[5] *= 1.001;
  EXPECT_GT(svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp).residual, 1000);
}

TEST(SvdReference, AccuracyTestsCatchNonOrthogonalVectors) {
  const Matrix a = random_matrix(30, 20, 4);
  Svd svd = lapack_svd(a);
  svd.v(0, 0) += 1e-9;
  EXPECT_GT(svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp).v_orthogonality, 1000);
}

TEST(SvdReference, UnsortedSingularValuesAreFlagged) {
  const Matrix a = random_matrix(6, 4, 5);
  Svd svd = lapack_svd(a);
  std::swap(svd.s[0], svd.s[1]);
  EXPECT_FALSE(svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp).s_descending_nonnegative);
}

TEST(SvdReference, JacobiAndBidiagonalLapackAgreeOnAWellConditionedMatrix) {
  const Matrix a = random_matrix(50, 30, 6);
  const auto jacobi = lapack_singular_values(a);
  const auto bidiagonal = lapack_svd(a).s;
  EXPECT_LT(max_relative_singular_value_error(jacobi, bidiagonal, 0), 1e-12);
  EXPECT_EQ(lapack_singular_values(transposed(a)).size(), 30u);
}

TEST(SvdReference, BidiagonalValuesAgreeWithJacobiOnTallAndWideMatrices) {
  for (const auto& [m, n] : {std::pair{50, 30}, std::pair{30, 50}}) {
    const Matrix a = random_matrix(m, n, 10);
    EXPECT_LT(max_relative_singular_value_error(lapack_bidiagonal_singular_values(a),
                                                lapack_singular_values(a), 0),
              1e-12);
  }
}

TEST(SvdReference, JacobiSweepsAreDgesvjsCountOnTheMatrixOrItsTranspose) {
  const Matrix a = random_matrix(100, 60, 12);
  const JacobiSweeps tall = lapack_jacobi_sweeps(a), wide = lapack_jacobi_sweeps(transposed(a));
  EXPECT_TRUE(tall.converged);
  EXPECT_GE(tall.sweeps, 5);  // a random matrix is not orthogonal after a sweep or two
  EXPECT_LE(tall.sweeps, 15);
  EXPECT_EQ(wide.sweeps, tall.sweeps);
  EXPECT_TRUE(wide.converged);
  // dgesvj's known failure: exactly proportional columns leave columns of rounding noise that it
  // keeps rotating until its 30 sweeps run out.
  const JacobiSweeps rank_one =
      lapack_jacobi_sweeps(svd_test_matrix<double>("rank-1-integer", 100, 100, 1));
  EXPECT_FALSE(rank_one.converged);
  EXPECT_GT(rank_one.sweeps, 30);
}

TEST(SvdReference, GradedMatrixSpansTheRequestedDecades) {
  const auto s = lapack_singular_values(graded_matrix(60, 20, 7, 10));
  EXPECT_GT(s.front() / s.back(), 1e8);
  EXPECT_GT(s.back(), 0);
}

TEST(SvdReference, RankDeficientMatrixHasThatManyNonzeroSingularValues) {
  const auto s = lapack_singular_values(rank_deficient_matrix(30, 20, 5, 8));
  EXPECT_GT(s[4], 1e-3 * s[0]);
  EXPECT_LT(s[5], 1e-12 * s[0]);
}

TEST(SvdReference, GramEigenvaluesAreSquaredSingularValues) {
  const auto eigenvalues = lapack_symmetric_eigenvalues(gram_matrix(40, 12, 9));
  const auto s = lapack_singular_values(random_matrix(40, 12, 9));
  for (std::size_t i = 0; i < s.size(); ++i)
    EXPECT_NEAR(eigenvalues[i], s[i] * s[i], 1e-10 * s[0] * s[0]);
}

// ---------------------------------------------------------------------------------------------
// The high-relative-accuracy reference (LAPACK dgejsv) on matrices whose singular values are known
// to a few ulps whatever their range.

// 10^(-decades * j / (k - 1)), j = 0 .. k - 1: from 1 down to 10^-decades.
std::vector<double> decades_down(int k, double decades) {
  std::vector<double> d(k);
  for (int j = 0; j < k; ++j) d[j] = k > 1 ? std::pow(10.0, -decades * j / (k - 1)) : 1.0;
  return d;
}

// Q diag(d), m x n (m >= n = d.size()), Q the first n columns of the reflector I - 2 v v^T / v^T v
// (v random): orthonormal columns, so sigma = |d|. Each entry is rounded once, a relative change of
// at most eps: that is (Q + E) diag(d) with |E| <= eps |Q| column by column, which moves each
// sigma_j by at most about sqrt(m) eps relative (Demmel and Veselic; kappa(Q) = 1).
Matrix reflector_times_diagonal(int m, const std::vector<double>& d, std::uint64_t seed) {
  const int n = int(d.size());
  std::vector<double> v(m);
  for (int i = 0; i < m; ++i) v[i] = bench::random_double(seed, std::uint64_t(i));
  const double vv = std::inner_product(v.begin(), v.end(), v.begin(), 0.0);
  Matrix a = zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a(i, j) = ((i == j ? 1.0 : 0.0) - 2 * v[i] * v[j] / vv) * d[j];
  return a;
}

std::vector<double> descending_magnitudes(std::vector<double> d) {
  for (double& value : d) value = std::abs(value);
  std::sort(d.begin(), d.end(), std::greater<double>());
  return d;
}

// max_j |s_j - exact_j| / exact_j in units of double's epsilon.
double relative_error_in_ulps(const std::vector<double>& s, const std::vector<double>& exact) {
  return max_relative_singular_value_error(s, exact, 0) / double_ulp;
}

TEST(SvdReference, HighAccuracyValuesOfAGradedDiagonalMatrixAreItsEntries) {
  // Entries from 1 down to 1e-30 with random signs, in shuffled positions; square, tall (zero rows
  // below) and wide (the transpose of the tall one).
  for (const auto& [m, n] : {std::pair{40, 40}, std::pair{55, 40}, std::pair{40, 55}}) {
    const int k = std::min(m, n);
    std::vector<double> d = decades_down(k, 30);
    std::vector<int> place(k);
    std::iota(place.begin(), place.end(), 0);
    for (int i = k - 1; i > 0; --i)
      std::swap(place[i], place[bench::random_integer(71, std::uint64_t(i), 0, i)]);
    Matrix a = zeros(m, n);
    for (int j = 0; j < k; ++j)
      a(place[j], place[j]) = d[j] * (bench::random_double(72, j) < 0 ? -1 : 1);
    const std::vector<double> s = lapack_high_accuracy_singular_values(a);
    ASSERT_EQ(s.size(), std::size_t(k));
    EXPECT_LE(relative_error_in_ulps(s, descending_magnitudes(d)), 4) << m << " x " << n;
  }
}

// dgejsv scales a matrix whose columns' norms pass the largest double, and returns SVA with the
// factor apart: the singular values are SVA * (WORK(1) / WORK(2)) (dgejsv.f: "multiply the computed
// singular values with USCAL2 / USCAL1"; WORK(1) = USCAL2 * SCALEM, WORK(2) = USCAL1). A 50 x 4
// matrix of entries in [0.75, 1) times 1e308: its largest singular value is past the range (and
// must come back as infinity), the others within it, against dgesvd on the matrix times 1e-10.
TEST(SvdReference, HighAccuracyValuesOfAMatrixBeyondTheRangeAreInItsScale) {
  const double within = 1e-10;
  Matrix a = zeros(50, 4), a_within = zeros(50, 4);
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.m; ++i) {
      const double entry = 0.75 + 0.25 * bench::random_double(73, i + 50 * j);
      a(i, j) = 1e308 * entry;
      a_within(i, j) = 1e298 * entry;
    }
  const std::vector<double> s = lapack_high_accuracy_singular_values(a);
  const std::vector<double> expected = lapack_bidiagonal_singular_values(a_within);
  ASSERT_EQ(s.size(), expected.size());
  ASSERT_GT(expected[0], std::numeric_limits<double>::max() * within);
  EXPECT_EQ(s[0], INFINITY);
  for (std::size_t i = 1; i < s.size(); ++i)
    EXPECT_NEAR(s[i] * within / expected[i], 1.0, 1e-10) << "value " << i;
}

TEST(SvdReference, HighAccuracyValuesKeepEveryDecadeOfAGradedMatrix) {
  // Q D with D over 30 decades, the columns decreasing and increasing, tall and wide (the wide one
  // is the transpose: row-graded, which dgejsv's row pivoting keeps accurate too). Measured: 7 to
  // 11 ulps at 100 columns.
  for (const bool increasing : {false, true})
    for (const auto& [m, n] : {std::pair{100, 100}, std::pair{150, 60}, std::pair{60, 150}}) {
      const int k = std::min(m, n);
      std::vector<double> d = decades_down(k, 30);
      if (increasing) std::reverse(d.begin(), d.end());
      const Matrix tall = reflector_times_diagonal(std::max(m, n), d, 73 + m);
      const Matrix a = m >= n ? tall : transposed(tall);
      EXPECT_LE(
          relative_error_in_ulps(lapack_high_accuracy_singular_values(a), descending_magnitudes(d)),
          k)
          << m << " x " << n << (increasing ? " increasing" : " decreasing");
    }
}

// Bidiagonalization mixes the large columns into the small ones with absolute errors of about eps
// ||A||: small singular values of a graded matrix come out as noise. Not always, nor always the
// smallest: with the columns in decreasing order, as the "graded" class has them, LAPACK's dgesvd
// measured within 475 ulps at 100 x 100 and 2e4 at 256 x 256; in increasing order, as here, some
// values were off by 20 orders of magnitude while the smallest was right.
TEST(SvdReference, BidiagonalLapackLosesTheSmallValuesOfAGradedMatrix) {
  std::vector<double> d = decades_down(60, 30);
  std::reverse(d.begin(), d.end());
  const Matrix a = reflector_times_diagonal(80, d, 74);
  const std::vector<double> exact = descending_magnitudes(d);
  EXPECT_GT(max_relative_singular_value_error(lapack_bidiagonal_singular_values(a), exact, 0),
            1e-3);
  EXPECT_LE(relative_error_in_ulps(lapack_high_accuracy_singular_values(a), exact), 60);
  // Where the values are not graded, the two agree to a few ulps of the largest.
  const Matrix plain = reflector_times_diagonal(80, decades_down(60, 1), 74);
  EXPECT_LT(max_relative_singular_value_error(lapack_bidiagonal_singular_values(plain),
                                              lapack_high_accuracy_singular_values(plain), 0),
            1e-13);
}

TEST(SvdReference, ColumnScaledConditionIgnoresTheGrading) {
  for (const auto& [m, n] : {std::pair{60, 20}, std::pair{20, 60}, std::pair{50, 50}}) {
    // graded_matrix with 0 decades is B itself (the same stream).
    const double ungraded = column_scaled_condition(graded_matrix(m, n, 75, 0));
    EXPECT_GT(ungraded, 1.5) << m << " x " << n;
    EXPECT_NEAR(column_scaled_condition(graded_matrix(m, n, 75, 30)), ungraded, 1e-10 * ungraded)
        << m << " x " << n;
  }
  EXPECT_NEAR(column_scaled_condition(reflector_times_diagonal(40, decades_down(30, 30), 76)), 1,
              1e-13);
  Matrix dependent = random_matrix(30, 10, 77);
  for (int i = 0; i < 30; ++i) dependent(i, 4) = 1e-20 * dependent(i, 4) + dependent(i, 7);
  EXPECT_GT(column_scaled_condition(dependent), 1e10);
  Matrix zero_column = random_matrix(30, 10, 78);
  for (int i = 0; i < 30; ++i) zero_column(i, 2) = 0;
  EXPECT_TRUE(std::isinf(column_scaled_condition(zero_column)));
}

TEST(SvdReference, ZeroMatrixHasZeroResidual) {
  const Matrix a = zeros(5, 3);
  const Svd svd = lapack_svd(a);
  EXPECT_EQ(svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp).residual, 0);
}

}  // namespace
}  // namespace rooflab::cpu
