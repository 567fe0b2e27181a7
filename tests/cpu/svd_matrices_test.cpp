// The SVD's test matrices: every class, in float and double, at square, tall, wide and tiny
// sizes, has the shape, the entries and the singular values its description states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "core/random_stream.hpp"
#include "cpu/svd_matrices.hpp"

namespace rooflab::cpu {
namespace {

struct Shape {
  int m, n;
};
// Square, tall and wide: what the spectrum checks run on (LAPACK's values of each in microseconds).
constexpr Shape checked_shapes[] = {{24, 24}, {40, 16}, {16, 40}};
// Where an off-by-one in k = min(m, n), in a half or a quarter of k, would show.
constexpr Shape tiny_shapes[] = {{1, 1}, {1, 6}, {6, 1}, {2, 2}, {2, 5}, {5, 3}};

std::string shape_text(const Shape& shape) {
  return std::to_string(shape.m) + " x " + std::to_string(shape.n);
}

template <class T>
class SvdMatrices : public testing::Test {
 protected:
  static constexpr double eps = std::numeric_limits<T>::epsilon();
};
using Types = testing::Types<float, double>;
TYPED_TEST_SUITE(SvdMatrices, Types);

// LAPACK's singular values of the class's matrix, descending: dgesvd's, accurate to eps ||A||,
// which is what the checks below need (dgesvj, one-sided Jacobi, does not converge on square
// rank-1-integer and zero-rows matrices).
template <class T>
std::vector<double> singular_values(const std::string& name, const Shape& shape,
                                    std::uint64_t seed) {
  return lapack_bidiagonal_singular_values(svd_test_matrix<T>(name, shape.m, shape.n, seed));
}

// The largest |sigma_i - expected_i| over the sorted values.
double largest_difference(const std::vector<double>& sigma, std::vector<double> expected) {
  std::sort(expected.begin(), expected.end(), std::greater<double>());
  double worst = 0;
  for (std::size_t i = 0; i < sigma.size(); ++i)
    worst = std::max(worst, std::abs(sigma[i] - expected[i]));
  return worst;
}

TEST(SvdMatrixClasses, RandomComesFirstAndEveryNameIsKnownAndUnique) {
  const auto& classes = svd_matrix_classes();
  ASSERT_FALSE(classes.empty());
  EXPECT_STREQ(classes.front().name, "random");
  std::set<std::string> names;
  for (const SvdMatrixClass& entry : classes) {
    EXPECT_TRUE(is_svd_matrix_class(entry.name)) << entry.name;
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name << " twice";
    EXPECT_GT(std::string(entry.description).size(), 8u) << entry.name;
    EXPECT_NE(svd_matrix_class_names().find(entry.name), std::string::npos) << entry.name;
  }
  EXPECT_FALSE(is_svd_matrix_class("nosuch"));
  EXPECT_FALSE(is_svd_matrix_class(""));
}

TEST(SvdMatrixClasses, UnknownNameThrowsNamingTheValidClasses) {
  try {
    svd_test_matrix<double>("nosuch", 4, 4, 1);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'nosuch'"), std::string::npos) << message;
    EXPECT_NE(message.find(svd_matrix_class_names()), std::string::npos) << message;
  }
  EXPECT_THROW(svd_test_matrix<float>("Random", 4, 4, 1), std::invalid_argument);
  EXPECT_THROW(svd_batch_test_matrix<float>("nosuch", 4, 4, 1, 3), std::invalid_argument);
}

TEST(SvdMatrixClasses, EmptyShapeThrows) {
  EXPECT_THROW(svd_test_matrix<double>("mode3", 0, 4, 1), std::invalid_argument);
  EXPECT_THROW(svd_batch_test_matrix<double>("random", 4, 0, 1, 2), std::invalid_argument);
}

TYPED_TEST(SvdMatrices, EveryClassHasItsShapeAndFiniteEntriesExactInTheType) {
  using T = TypeParam;
  for (const SvdMatrixClass& entry : svd_matrix_classes())
    for (const auto& shapes :
         {std::vector<Shape>(std::begin(checked_shapes), std::end(checked_shapes)),
          std::vector<Shape>(std::begin(tiny_shapes), std::end(tiny_shapes))})
      for (const Shape& shape : shapes) {
        const Matrix a = svd_test_matrix<T>(entry.name, shape.m, shape.n, 7);
        ASSERT_EQ(a.m, shape.m) << entry.name;
        ASSERT_EQ(a.n, shape.n) << entry.name;
        ASSERT_EQ(a.values.size(), std::size_t(shape.m) * shape.n) << entry.name;
        for (const double value : a.values) {
          ASSERT_TRUE(std::isfinite(value)) << entry.name << " " << shape_text(shape);
          ASSERT_EQ(double(T(value)), value)
              << entry.name << " " << shape_text(shape) << ": not in the type";
        }
      }
}

TYPED_TEST(SvdMatrices, SameSeedGivesTheSameMatrixAndRandomClassesChangeWithIt) {
  using T = TypeParam;
  const std::set<std::string> fixed{"zero", "identity", "rank-1-integer", "mixed"};
  for (const SvdMatrixClass& entry : svd_matrix_classes())
    for (const Shape& shape : checked_shapes) {
      const Matrix first = svd_test_matrix<T>(entry.name, shape.m, shape.n, 11);
      EXPECT_EQ(svd_test_matrix<T>(entry.name, shape.m, shape.n, 11).values, first.values)
          << entry.name;
      EXPECT_EQ(svd_test_matrix<T>(entry.name, shape.m, shape.n, 12).values != first.values,
                fixed.count(entry.name) == 0)
          << entry.name << " " << shape_text(shape);
    }
}

// Batches draw matrix b with seed + b: were a class's second factor drawn with seed + 1, the row
// space of one matrix would be the column space of the next.
TYPED_TEST(SvdMatrices, NeighbouringSeedsShareNoFactor) {
  using T = TypeParam;
  const Matrix first = svd_test_matrix<T>("rank-1", 8, 8, 40),
               next = svd_test_matrix<T>("rank-1", 8, 8, 41);
  double dot = 0, row_norm = 0, column_norm = 0;
  for (int i = 0; i < 8; ++i) {
    dot += first(0, i) * next(i, 0);
    row_norm += first(0, i) * first(0, i);
    column_norm += next(i, 0) * next(i, 0);
  }
  EXPECT_LT(std::abs(dot) / std::sqrt(row_norm * column_norm), 0.99);
}

TYPED_TEST(SvdMatrices, RandomIsTheBenchsDeviceFillInTheTypesGrid) {
  using T = TypeParam;
  const Matrix a = svd_test_matrix<T>("random", 5, 3, 42);
  for (std::size_t e = 0; e < a.values.size(); ++e) {
    const double expected =
        sizeof(T) == 4 ? double(bench::random_float(42, e)) : bench::random_double(42, e);
    EXPECT_EQ(a.values[e], expected) << e;
    EXPECT_GE(a.values[e], -1);
    EXPECT_LT(a.values[e], 1);
  }
}

TYPED_TEST(SvdMatrices, ZeroAndIdentityAreExact) {
  using T = TypeParam;
  for (const Shape& shape : tiny_shapes) {
    const Matrix zero = svd_test_matrix<T>("zero", shape.m, shape.n, 1);
    const Matrix identity = svd_test_matrix<T>("identity", shape.m, shape.n, 1);
    for (int j = 0; j < shape.n; ++j)
      for (int i = 0; i < shape.m; ++i) {
        EXPECT_EQ(zero(i, j), 0);
        EXPECT_EQ(identity(i, j), i == j ? 1 : 0) << shape_text(shape);
      }
  }
}

TYPED_TEST(SvdMatrices, DiagonalHasRandomSignsAndTiedMagnitudesOneTwoThree) {
  using T = TypeParam;
  for (const Shape& shape : checked_shapes) {
    const Matrix a = svd_test_matrix<T>("diagonal", shape.m, shape.n, 3);
    std::set<double> magnitudes;
    int negative = 0;
    for (int j = 0; j < shape.n; ++j)
      for (int i = 0; i < shape.m; ++i) {
        if (i != j) {
          EXPECT_EQ(a(i, j), 0);
          continue;
        }
        const double magnitude = std::abs(a(i, i));
        EXPECT_TRUE(magnitude == 1 || magnitude == 2 || magnitude == 3) << a(i, i);
        magnitudes.insert(magnitude);
        negative += a(i, i) < 0;
      }
    const int k = std::min(shape.m, shape.n);
    EXPECT_EQ(magnitudes.size(), 3u)
        << shape_text(shape);  // 16 or more draws of 3: ties for certain
    EXPECT_GT(negative, 0);
    EXPECT_LT(negative, k);
  }
}

TYPED_TEST(SvdMatrices, RankClassesHaveTheirStatedRank) {
  using T = TypeParam;
  const double eps = TestFixture::eps;
  for (const Shape& shape : checked_shapes) {
    const int k = std::min(shape.m, shape.n);
    for (const auto& [name, rank] :
         {std::pair{"rank-1", 1}, std::pair{"rank-2", 2}, std::pair{"rank-quarter", k / 4},
          std::pair{"rank-minus-1", k - 1}, std::pair{"rank-1-integer", 1},
          std::pair{"duplicated-columns", std::min(k, shape.n / 2)}, std::pair{"mixed", 1}}) {
      const std::vector<double> sigma = singular_values<T>(name, shape, 5);
      const double noise = k * eps * sigma[0];
      if (rank < k) {
        EXPECT_LE(sigma[rank], noise) << name << " " << shape_text(shape) << ": sigma_" << rank + 1;
      }
      EXPECT_GT(sigma[rank - 1], 100 * noise)
          << name << " " << shape_text(shape) << ": sigma_" << rank;
    }
  }
}

TYPED_TEST(SvdMatrices, RankClassesOfTinyShapesKeepTheirRankInRange) {
  using T = TypeParam;
  for (const Shape& shape : tiny_shapes) {
    const int k = std::min(shape.m, shape.n);
    const std::vector<double> rank_2 = singular_values<T>("rank-2", shape, 9);
    EXPECT_GT(rank_2[std::min(2, k) - 1], 0) << shape_text(shape);
    const Matrix minus_one = svd_test_matrix<T>("rank-minus-1", shape.m, shape.n, 9);
    if (k == 1) {
      for (const double value : minus_one.values)
        EXPECT_EQ(value, 0) << shape_text(shape);  // rank 0
    }
  }
}

TYPED_TEST(SvdMatrices, RankOneIntegerEntriesAreExact) {
  using T = TypeParam;
  const Matrix a = svd_test_matrix<T>("rank-1-integer", 40, 16, 1);
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.m; ++i) EXPECT_EQ(a(i, j), (i + 1) * (j + 2) / 2.0);
}

TYPED_TEST(SvdMatrices, DuplicatedZeroColumnsAndZeroRowsHoldExactCopiesAndZeros) {
  using T = TypeParam;
  const Matrix duplicated = svd_test_matrix<T>("duplicated-columns", 6, 7, 2);
  const Matrix zero_columns = svd_test_matrix<T>("zero-columns", 6, 7, 2);
  const Matrix zero_rows = svd_test_matrix<T>("zero-rows", 6, 7, 2);
  for (int j = 0; j < 7; ++j)
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(duplicated(i, j), duplicated(i, j % 3));
      EXPECT_EQ(zero_columns(i, j) == 0, j % 2 == 1) << i << ", " << j;
      EXPECT_EQ(zero_rows(i, j) == 0, i % 2 == 1) << i << ", " << j;
    }
}

// dlatm1's singular values, largest 1, for modes 1-4 (mode 5 is random).
std::vector<double> dlatms_values(int mode, int k, double cond) {
  std::vector<double> d(k, 1.0);
  for (int i = 0; i < k && k > 1; ++i) {
    const double t = double(i) / (k - 1);
    if (mode == 1) d[i] = i == 0 ? 1 : 1 / cond;
    if (mode == 2) d[i] = i == k - 1 ? 1 / cond : 1;
    if (mode == 3) d[i] = std::pow(cond, -t);
    if (mode == 4) d[i] = 1 - t * (1 - 1 / cond);
  }
  return d;
}

TYPED_TEST(SvdMatrices, DlatmsModesHaveTheirSingularValues) {
  using T = TypeParam;
  const double eps = TestFixture::eps;
  for (const Shape& shape : checked_shapes) {
    const int k = std::min(shape.m, shape.n);
    for (const bool at_eps : {false, true}) {
      const double cond = at_eps ? 1 / eps : 1 / std::sqrt(eps);
      for (int mode = 1; mode <= 4; ++mode) {
        const std::string name = "mode" + std::to_string(mode) + (at_eps ? "-eps" : "");
        const std::vector<double> sigma = singular_values<T>(name, shape, 13);
        EXPECT_LE(largest_difference(sigma, dlatms_values(mode, k, cond)), 300 * eps)
            << name << " " << shape_text(shape);
      }
      const std::string mode5 = at_eps ? "mode5-eps" : "mode5";
      const std::vector<double> sigma = singular_values<T>(mode5, shape, 13);
      EXPECT_NEAR(sigma[0], 1, 300 * eps) << mode5;
      EXPECT_GE(sigma[k - 1], 1 / cond - 300 * eps) << mode5;
      EXPECT_LT(sigma[k / 2], 1 - 0.01) << mode5 << ": log-uniform values are not all near 1";
    }
  }
}

TYPED_TEST(SvdMatrices, TinyShapesOfDlatmsModesHaveLargestSingularValueOne) {
  using T = TypeParam;
  for (const Shape& shape : tiny_shapes)
    for (const char* name : {"mode1", "mode3-eps", "mode5", "clustered"})
      EXPECT_NEAR(singular_values<T>(name, shape, 2)[0], 1, 300 * TestFixture::eps)
          << name << " " << shape_text(shape);
}

TYPED_TEST(SvdMatrices, ScaledClassesSitAtTheEdgesOfTheTypesRange) {
  using T = TypeParam;
  const double eps = TestFixture::eps;
  const double tiny = std::numeric_limits<T>::min() / eps,
               huge = std::numeric_limits<T>::max() * eps;
  for (const Shape& shape : checked_shapes) {
    const std::vector<double> small = singular_values<T>("scaled-tiny", shape, 4);
    const std::vector<double> large = singular_values<T>("scaled-huge", shape, 4);
    EXPECT_NEAR(small[0] / tiny, 1, 300 * eps) << shape_text(shape);
    EXPECT_NEAR(large[0] / huge, 1, 300 * eps) << shape_text(shape);
    // Below the largest, the values are mode 4's evenly spaced ones, scaled.
    const int k = std::min(shape.m, shape.n);
    const double second = 1 - (1 - eps) / (k - 1);
    EXPECT_NEAR(large[1] / huge, second, 300 * eps) << shape_text(shape);
  }
}

TYPED_TEST(SvdMatrices, GradedColumnNormsFallByTheStatedDecades) {
  using T = TypeParam;
  const double decades = sizeof(T) == 4 ? 12 : 30;
  for (const Shape& shape : checked_shapes) {
    const Matrix a = svd_test_matrix<T>("graded", shape.m, shape.n, 6);
    const auto column_norm = [&](int j) {
      double sum = 0;
      for (int i = 0; i < a.m; ++i) sum += a(i, j) * a(i, j);
      return std::sqrt(sum);
    };
    // Random columns of 16 or more entries differ in norm by well under a decade.
    EXPECT_NEAR(std::log10(column_norm(0) / column_norm(a.n - 1)), decades, 1) << shape_text(shape);
    EXPECT_NEAR(std::log10(column_norm(0) / column_norm(a.n / 2)), decades * (a.n / 2) / (a.n - 1),
                1)
        << shape_text(shape);
  }
}

TYPED_TEST(SvdMatrices, ClusteredSingularValuesLieInTwoTightClusters) {
  using T = TypeParam;
  const double eps = TestFixture::eps;
  for (const Shape& shape : checked_shapes) {
    const int k = std::min(shape.m, shape.n), half = (k + 1) / 2;
    const std::vector<double> sigma = singular_values<T>("clustered", shape, 8);
    for (int i = 0; i < k; ++i)
      EXPECT_NEAR(sigma[i], i < half ? 1 : 0.5, 300 * eps) << i << " of " << shape_text(shape);
  }
}

TYPED_TEST(SvdMatrices, MixedBatchesHoldRankOneIntegerEveryFourthMatrixAndRandomBetween) {
  using T = TypeParam;
  EXPECT_EQ(svd_batch_member_class("mixed", 0), "rank-1-integer");
  EXPECT_EQ(svd_batch_member_class("mixed", 8), "rank-1-integer");
  EXPECT_EQ(svd_batch_member_class("mixed", 3), "random");
  EXPECT_EQ(svd_batch_member_class("mode3", 3), "mode3");
  const Matrix integer = svd_test_matrix<T>("rank-1-integer", 5, 4, 0);
  for (std::int64_t b = 0; b < 8; ++b) {
    const Matrix member = svd_batch_test_matrix<T>("mixed", 5, 4, 21, b);
    const Matrix random = svd_batch_test_matrix<T>("random", 5, 4, 21, b);
    EXPECT_EQ(member.values, b % 4 == 0 ? integer.values : random.values) << b;
  }
}

TYPED_TEST(SvdMatrices, RandomBatchMembersAreConsecutiveStretchesOfTheDeviceFill) {
  using T = TypeParam;
  const Matrix member = svd_batch_test_matrix<T>("random", 3, 2, 17, 5);
  for (std::size_t e = 0; e < member.values.size(); ++e) {
    const std::uint64_t index = 5 * 6 + e;
    EXPECT_EQ(member.values[e], sizeof(T) == 4 ? double(bench::random_float(17, index))
                                               : bench::random_double(17, index));
  }
}

TYPED_TEST(SvdMatrices, OtherBatchMembersAreTheClassAtSeedPlusTheirIndex) {
  using T = TypeParam;
  for (const SvdMatrixClass& entry : svd_matrix_classes()) {
    EXPECT_EQ(svd_batch_test_matrix<T>(entry.name, 6, 4, 30, 0).values,
              svd_test_matrix<T>(entry.name, 6, 4, 30).values)
        << entry.name;
    if (svd_batch_member_class(entry.name, 3) != "random") {
      EXPECT_EQ(svd_batch_test_matrix<T>(entry.name, 6, 4, 30, 3).values,
                svd_test_matrix<T>(entry.name, 6, 4, 33).values)
          << entry.name;
    }
  }
}

}  // namespace
}  // namespace rooflab::cpu
