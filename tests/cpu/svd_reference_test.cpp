#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(eigenvalues[i], s[i] * s[i], 1e-10 * s[0] * s[0]);
}

TEST(SvdReference, ZeroMatrixHasZeroResidual) {
  const Matrix a = zeros(5, 3);
  const Svd svd = lapack_svd(a);
  EXPECT_EQ(svd_accuracy(a, svd.s, svd.u, svd.v, double_ulp).residual, 0);
}

}  // namespace
}  // namespace rooflab::cpu
