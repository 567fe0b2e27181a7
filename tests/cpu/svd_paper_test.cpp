// Paper 004's algorithm on the CPU against LAPACK, and the svd-paper op's sizes and limits (no
// GPU).
#include "cpu/svd_paper.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bench/registry.hpp"
#include "svd_paper/svd_paper_workspace.hpp"

namespace rooflab::cpu {
namespace {

constexpr double tolerance = bench::SvdPaperWorkspace::tolerance;

std::vector<double> descending(std::vector<double> values) {
  std::sort(values.begin(), values.end(), std::greater<double>());
  return values;
}

TEST(PaperJacobi, ValuesMatchLapackEigenvaluesOfGramMatrices) {
  for (const int n : {1, 2, 3, 8, 25, 33, 64}) {
    const std::uint64_t seed = 100 + n;
    const Matrix a = gram_matrix(n, n, seed);
    const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40);
    ASSERT_TRUE(result.converged) << "n=" << n << " seed=" << seed;
    const std::vector<double> reference = lapack_symmetric_eigenvalues(a);
    const std::vector<double> values = descending(result.values);
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(values[i], reference[i], tolerance * reference[0])
          << "n=" << n << " seed=" << seed << " i=" << i;
  }
}

// Rounding leaves a_kj a few ulps away from a_jk. On these inputs, with the rotation decided by
// a_jk alone, one a_kj ends just above the threshold beside an a_jk just below it (n = 67: from
// the tenth sweep on, 2.61487e-11 against 2.61468e-11), and the iteration ran into its sweep limit.
TEST(PaperJacobi, ConvergesWhereRoundingLeavesOnlyOneElementOfAPairAboveTheThreshold) {
  for (const auto& [n, seed] : {std::pair{67, 4200}, std::pair{47, 51007}}) {
    const Matrix a = gram_matrix(n, n, seed);
    const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40);
    ASSERT_TRUE(result.converged) << "n=" << n << " seed=" << seed;
    EXPECT_LE(result.sweeps, 12) << "n=" << n << " seed=" << seed;
    const std::vector<double> reference = lapack_symmetric_eigenvalues(a);
    const std::vector<double> values = descending(result.values);
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(values[i], reference[i], tolerance * reference[0])
          << "n=" << n << " seed=" << seed << " i=" << i;
  }
}

TEST(PaperJacobi, APairIsAboveTheThresholdWhenEitherElementIs) {
  EXPECT_TRUE(pair_above_threshold(1.1, 0.9, 1.0));
  EXPECT_TRUE(pair_above_threshold(0.9, -1.1, 1.0));
  EXPECT_FALSE(pair_above_threshold(-1.0, 0.9, 1.0));  // "above": equal is not
  EXPECT_FALSE(pair_above_threshold(0.0, 0.0, 0.0));
}

TEST(PaperJacobi, ValuesAreTheSquaredSingularValuesOfB) {
  const int n = 20;
  const std::uint64_t seed = 13;  // gram_matrix(n, n, seed) is B^T B for this B
  const std::vector<double> singular = lapack_singular_values(random_matrix(n, n, seed));
  const Matrix a = gram_matrix(n, n, seed);
  const std::vector<double> values = descending(paper_jacobi(a, paper_threshold(a), 40).values);
  for (int i = 0; i < n; ++i)
    EXPECT_NEAR(values[i], singular[i] * singular[i], tolerance * values[0]) << "i=" << i;
}

TEST(PaperJacobi, ColumnsOfUAreOrthonormalEigenvectors) {
  const int n = 30;
  const std::uint64_t seed = 7;
  const Matrix a = gram_matrix(n, n, seed);
  const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40);
  ASSERT_TRUE(result.converged);
  const double largest = lapack_symmetric_eigenvalues(a)[0];
  for (int column = 0; column < n; ++column) {
    for (int row = 0; row < n; ++row) {
      double aq = 0;
      for (int l = 0; l < n; ++l) aq += a(row, l) * result.u(l, column);
      EXPECT_NEAR(aq, result.values[column] * result.u(row, column), tolerance * largest)
          << "seed=" << seed << " column=" << column << " row=" << row;
    }
    for (int other = 0; other < n; ++other) {
      double dot = 0;
      for (int l = 0; l < n; ++l) dot += result.u(l, column) * result.u(l, other);
      EXPECT_NEAR(dot, other == column ? 1.0 : 0.0, tolerance)
          << "columns " << column << ", " << other;
    }
  }
}

TEST(PaperJacobi, VIsExactlyTheTransposeOfU) {
  const Matrix a = gram_matrix(17, 17, 3);
  const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40);
  ASSERT_GT(result.rotations, 0);
  for (int i = 0; i < 17; ++i)
    for (int j = 0; j < 17; ++j) EXPECT_EQ(result.v(i, j), result.u(j, i)) << i << ", " << j;
}

// The rotations a run records, applied again alone, give the run's U, V and column sums bit for
// bit: the replay is the same arithmetic in the same order, without the tests in between.
TEST(PaperJacobi, ReplayedRotationsGiveTheRunsMatricesBitForBit) {
  const Matrix a = gram_matrix(30, 30, 11);
  std::vector<RotationStep> steps;
  const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40, &steps);
  ASSERT_TRUE(result.converged);
  ASSERT_GT(result.rotations, 0);
  ASSERT_EQ(std::int64_t(steps.size()), result.rotations);
  const RotatedMatrices replayed = replay_rotations(a, steps);
  EXPECT_EQ(replayed.u.values, result.u.values);
  EXPECT_EQ(replayed.v.values, result.v.values);
  for (int column = 0; column < a.n; ++column) {
    double sum = 0;
    for (int i = 0; i < a.n; ++i) sum += replayed.a(i, column);
    EXPECT_EQ(sum, result.values[column]) << "column " << column;
  }
}

TEST(PaperJacobi, RotationZeroesThePairItRotates) {
  // (a_jj, a_kk, a_jk): generic, equal diagonal (tau = 0, sign(0) = 1), tiny and huge tau.
  const double cases[][3] = {{3.0, -1.5, 0.7},
                             {2.0, 2.0, 0.5},
                             {1.0, 5.0, -2.0},
                             {1e6, -1e6, 1e-3},
                             {1.0, 1.0 + 1e-12, 4.0}};
  for (const auto& pair : cases) {
    const double a = pair[0], d = pair[1], b = pair[2];
    const Rotation r = paper_rotation(a, d, b);
    EXPECT_NEAR(r.c * r.c + r.s * r.s, 1.0, 1e-15);
    // Entry (j, k) of R [[a, b], [b, d]] R^T with R = [[c, s], [-s, c]].
    const double rotated = -r.c * r.s * a + (r.c * r.c - r.s * r.s) * b + r.c * r.s * d;
    EXPECT_NEAR(rotated, 0.0, 1e-15 * std::max({std::abs(a), std::abs(b), std::abs(d)}))
        << a << " " << d << " " << b;
    EXPECT_LE(std::abs(r.s), r.c + 1e-15);  // the smaller angle, |t| <= 1
  }
}

TEST(PaperJacobi, DiagonalMatrixNeedsNoSweep) {
  Matrix a = zeros(5, 5);
  for (int i = 0; i < 5; ++i) a(i, i) = 1.0 + i;
  const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 40);
  EXPECT_TRUE(result.converged);
  EXPECT_EQ(result.sweeps, 0);
  EXPECT_EQ(result.rotations, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(result.values[i], 1.0 + i);
}

TEST(PaperJacobi, StopsAtTheSweepLimitAndSaysItDidNotConverge) {
  const Matrix a = gram_matrix(25, 25, 11);
  const PaperJacobiResult result = paper_jacobi(a, paper_threshold(a), 1);
  EXPECT_FALSE(result.converged);
  EXPECT_EQ(result.sweeps, 1);
  EXPECT_EQ(result.rotations, 25 * 24 / 2);  // the first sweep rotates every pair
}

TEST(PaperJacobi, RejectsANonSymmetricMatrixNamingTheElement) {
  Matrix a = gram_matrix(6, 6, 5);
  a(1, 4) += 1e-9;
  try {
    paper_jacobi(a, paper_threshold(a), 40);
    FAIL() << "accepted a non-symmetric matrix";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("symmetric"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("a(1, 4)"), std::string::npos) << error.what();
  }
}

TEST(PaperJacobi, RejectsANonSquareMatrix) {
  EXPECT_THROW(paper_jacobi(random_matrix(4, 3, 1), 1e-12, 40), std::invalid_argument);
}

TEST(PaperJacobi, ThresholdScalesWithTheFrobeniusNorm) {
  Matrix a = zeros(2, 2);
  a(0, 0) = 3;
  a(1, 1) = 4;
  EXPECT_DOUBLE_EQ(paper_threshold(a), 5e-13);
}

}  // namespace
}  // namespace rooflab::cpu

namespace rooflab::bench {
namespace {

const Variant& svd_paper_rung(const std::string& name) {
  for (const Variant* variant : registry().variants("svd-paper"))
    if (variant->name == name) return *variant;
  throw std::runtime_error("no svd-paper rung " + name);
}

std::string limit_at(const std::string& name, std::int64_t n) {
  Problem problem;
  problem.n = n;
  return svd_paper_rung(name).limit(registry().op("svd-paper").resolve(problem));
}

TEST(SvdPaperOp, ReportSizesAreTheFourTablesSizesAscending) {
  const std::vector<std::int64_t> expected{25,  32,  50,  64,  75,  96,  100, 125, 128,
                                           160, 192, 200, 224, 256, 300, 400, 500};
  EXPECT_EQ(paper_report_sizes(), expected);
  std::vector<std::int64_t> reported;
  for (const Problem& problem : registry().op("svd-paper").report_problems(false))
    reported.push_back(problem.n);
  EXPECT_EQ(reported, expected);
  EXPECT_LT(registry().op("svd-paper").report_problems(true).size(), expected.size());
}

TEST(SvdPaperOp, EachRungRunsAtItsTablesSizesAndSkipsTheOthersSayingWhy) {
  EXPECT_EQ(limit_at("cpu", 125), "");             // Table 1
  EXPECT_EQ(limit_at("managed-host", 25), "");     // Tables 1 and 2
  EXPECT_EQ(limit_at("device-malloc", 75), "");    // Table 2
  EXPECT_EQ(limit_at("threads-4x32", 64), "");     // Table 3
  EXPECT_EQ(limit_at("step-threads", 100), "");    // Table 4
  EXPECT_EQ(limit_at("carveout-0", 100), "");      // beside Table 4
  EXPECT_EQ(limit_at("cusolver-syevj", 500), "");  // every table

  const std::string other_table = limit_at("device-malloc", 64);
  EXPECT_NE(other_table.find("n = 64 is a size of Table 3 only"), std::string::npos) << other_table;
  EXPECT_NE(other_table.find("belongs to Table 2"), std::string::npos) << other_table;
  EXPECT_NE(limit_at("threads-1x32", 25).find("belongs to Table 3"), std::string::npos);
  EXPECT_NE(limit_at("cpu", 500).find("belongs to Table 1"), std::string::npos);
}

TEST(SvdPaperOp, SlowRungsStopAtTheirCostLimitSayingWhy) {
  EXPECT_NE(limit_at("managed-host", 75).find("(limit n <= 50)"), std::string::npos);
  EXPECT_NE(limit_at("device-malloc", 100).find("(limit n <= 75)"), std::string::npos);
  EXPECT_NE(limit_at("threads-1x32", 96).find("(limit n <= 64)"), std::string::npos);
  EXPECT_NE(limit_at("step-1", 200).find("(limit n <= 100)"), std::string::npos);
  // A size of no table runs wherever the cost allows.
  EXPECT_EQ(limit_at("threads-2x64", 40), "");
  EXPECT_EQ(limit_at("device-managed", 40), "");
  EXPECT_NE(limit_at("device-managed", 150).find("(limit n <= 75)"), std::string::npos);
}

TEST(SvdPaperOp, ResolveRejectsBadSizesAndTypesNamingTheArgument) {
  const Op& op = registry().op("svd-paper");
  EXPECT_EQ(op.resolve(Problem{}).n, 100);
  EXPECT_EQ(op.resolve(Problem{}).dtype, "double");
  Problem negative;
  negative.n = -3;
  EXPECT_THROW(op.resolve(negative), std::runtime_error);
  Problem huge;
  huge.n = 4096;
  try {
    op.resolve(huge);
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("--n"), std::string::npos) << error.what();
  }
  Problem single;
  single.dtype = "float";
  try {
    op.resolve(single);
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("--dtype"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace rooflab::bench
