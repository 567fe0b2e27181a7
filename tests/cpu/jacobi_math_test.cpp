// The arithmetic the GPU SVD kernels share (src/svd/jacobi_math.hpp), checked without a GPU: the
// rotation, the hand-over tests, the orderings and the ring's placements, the shared-memory layout,
// the completion's choice and its reflector. The whole method run sequentially is
// jacobi_model_test.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cpu/svd_reference.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::jacobi {
namespace {

template <class T>
struct Columns {
  std::vector<T> p, q;
  T alpha() const { return dot(p, p); }
  T beta() const { return dot(q, q); }
  T gamma() const { return dot(p, q); }
  static T dot(const std::vector<T>& x, const std::vector<T>& y) {
    T sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i) sum += x[i] * y[i];
    return sum;
  }
  void rotate(const Rotation<T>& r) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const T x = p[i], y = q[i];
      p[i] = r.c * x - r.s * y;
      q[i] = r.s * x + r.c * y;
    }
  }
};

template <class T>
Columns<T> random_columns(int rows, std::uint64_t seed, T q_scale) {
  const cpu::Matrix a = cpu::random_matrix(rows, 2, seed);
  Columns<T> columns;
  for (int i = 0; i < rows; ++i) {
    columns.p.push_back(T(a(i, 0)));
    columns.q.push_back(T(a(i, 1) * q_scale + 0.3 * a(i, 0) * q_scale));  // correlated with p
  }
  return columns;
}

template <class T>
void expect_rotation_orthogonalizes(T q_scale, std::uint64_t seed) {
  const T eps = std::numeric_limits<T>::epsilon();
  Columns<T> columns = random_columns<T>(50, seed, q_scale);
  const T alpha = columns.alpha(), beta = columns.beta(), gamma = columns.gamma();
  Rotation<T> r;
  T cosine = 0;
  ASSERT_TRUE(jacobi_rotation(alpha, beta, gamma, T(10) * eps, r, cosine)) << "seed " << seed;
  EXPECT_NEAR(cosine, std::abs(gamma) / std::sqrt(alpha * beta), 10 * eps);
  EXPECT_NEAR(r.c * r.c + r.s * r.s, 1, 4 * eps);
  columns.rotate(r);
  const T after = std::abs(columns.gamma()) / std::sqrt(columns.alpha() * columns.beta());
  EXPECT_LT(after, 100 * eps) << "seed " << seed << " scale " << q_scale;
  // The tracked norms: alpha - t gamma and beta + t gamma.
  EXPECT_NEAR(columns.alpha(), alpha - r.t * gamma, 100 * eps * (alpha + beta));
  EXPECT_NEAR(columns.beta(), beta + r.t * gamma, 100 * eps * (alpha + beta));
}

TEST(BinadeScale, BringsTheLargerOfTwoNumbersIntoHalfToOneExactly) {
  for (const double x : {Precision<double>::negligible, 1e-200, 0.3, 0.5, 1.0, 4096.0, 3e9}) {
    for (const double smaller : {0.0, x / 3, x}) {
      const double scale = binade_scale(x, smaller);
      EXPECT_EQ(scale, binade_scale(smaller, x)) << x;
      EXPECT_GE(x * scale, 0.5) << x;
      EXPECT_LT(x * scale, 1.0) << x;
      EXPECT_EQ(x * scale / scale, x) << x;  // a power of two: nothing rounded
    }
  }
  for (const float x : {Precision<float>::negligible, 1e-20f, 0.75f, 1.0f, 3e9f}) {
    const float scaled = x * binade_scale(x, x / 3);
    EXPECT_GE(scaled, 0.5f) << x;
    EXPECT_LT(scaled, 1.0f) << x;
  }
}

TEST(JacobiRotation, MakesTwoCorrelatedColumnsOrthogonalInBothPrecisions) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    expect_rotation_orthogonalizes<double>(1.0, seed);
    expect_rotation_orthogonalizes<double>(1e-6, seed);
    expect_rotation_orthogonalizes<float>(1.0f, seed);
    expect_rotation_orthogonalizes<float>(1e-3f, seed);
  }
}

TEST(JacobiRotation, LeavesPairsOrthogonalToTolAlone) {
  Rotation<double> r;
  double cosine = 0;
  EXPECT_FALSE(jacobi_rotation(1.0, 1.0, 1e-15, 1e-14, r, cosine));
  EXPECT_DOUBLE_EQ(cosine, 1e-15);
  EXPECT_TRUE(jacobi_rotation(1.0, 1.0, 1e-13, 1e-14, r, cosine));
}

TEST(JacobiRotation, EqualNormsTurnByAnEighthOfATurn) {
  // tau = 0: cos 2 theta = 0, so c = s = 1 / sqrt(2), the sign following gamma, and t = +-1.
  for (const double gamma : {0.25, -0.25, 1e-9}) {
    Rotation<double> r;
    double cosine = 0;
    ASSERT_TRUE(jacobi_rotation(3.0, 3.0, gamma, 1e-14, r, cosine)) << gamma;
    const double eps = std::numeric_limits<double>::epsilon();
    EXPECT_NEAR(r.c, std::sqrt(0.5), 4 * eps) << gamma;
    EXPECT_NEAR(r.s, std::copysign(std::sqrt(0.5), gamma), 4 * eps) << gamma;
    EXPECT_NEAR(r.t, std::copysign(1.0, gamma), 8 * eps) << gamma;
  }
}

TEST(JacobiRotation, NeverRotatesANegligibleColumn) {
  Rotation<float> r;
  float cosine = 1;
  const float tiny = Precision<float>::negligible / 2;
  EXPECT_FALSE(jacobi_rotation(tiny, 1.0f, 1e-20f, 1e-6f, r, cosine));
  EXPECT_EQ(cosine, 0);
  EXPECT_FALSE(jacobi_rotation(0.0f, 0.0f, 0.0f, 1e-6f, r, cosine));
}

TEST(JacobiRotation, ExtremeNormRatiosGiveAFiniteOrthogonalRotation) {
  // The largest |zeta| scaling allows: one column at the negligible limit, the other of norm^2 M.
  for (const double tol : {1e-15, 1e-8}) {
    const double alpha = Precision<double>::negligible * 2, beta = 4096;
    const double gamma = 2 * tol * std::sqrt(alpha * beta);
    Rotation<double> r;
    double cosine = 0;
    ASSERT_TRUE(jacobi_rotation(alpha, beta, gamma, tol, r, cosine));
    EXPECT_TRUE(std::isfinite(r.t) && std::isfinite(r.c) && std::isfinite(r.s));
    EXPECT_NEAR(r.c * r.c + r.s * r.s, 1, 1e-15);
    EXPECT_NEAR(r.t, gamma / (beta - alpha), 1e-12 * std::abs(r.t));  // t ~ 1 / (2 zeta)
    EXPECT_GE(alpha - r.t * gamma, 0);  // the small column stays non-negative
  }
  const float alpha = Precision<float>::negligible * 2, beta = 4096;
  const float gamma = 2e-6f * std::sqrt(alpha) * std::sqrt(beta);
  Rotation<float> r;
  float cosine = 0;
  ASSERT_TRUE(jacobi_rotation(alpha, beta, gamma, 1e-6f, r, cosine));
  EXPECT_TRUE(std::isfinite(r.t) && std::isfinite(r.c) && std::isfinite(r.s));
  EXPECT_NEAR(r.c * r.c + r.s * r.s, 1, 1e-6);
}

// The form without the cosine tests by squares; away from cosine ~ tol it decides alike and gives
// the same rotation, bit for bit.
template <class T>
void expect_squared_test_agrees(T tol, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int rotated = 0, kept = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const T alpha = T(std::ldexp(1.5 + unit(random), int(40 * unit(random))));
    const T beta = T(std::ldexp(1.5 + unit(random), int(40 * unit(random))));
    // cosines spread over 10^-16 .. 1, both signs
    const T gamma =
        T(unit(random) * std::pow(10.0, 8 * (unit(random) - 1)) * std::sqrt(double(alpha) * beta));
    Rotation<T> with_cosine, by_squares;
    T cosine = 0;
    const bool first = jacobi_rotation(alpha, beta, gamma, tol, with_cosine, cosine);
    const bool second = jacobi_rotation(alpha, beta, gamma, tol, by_squares);
    if (std::abs(cosine / tol - 1) < 1e-3) continue;  // the forms may round either way here
    ASSERT_EQ(first, second) << alpha << " " << beta << " " << gamma;
    EXPECT_EQ(with_cosine.c, by_squares.c);
    EXPECT_EQ(with_cosine.s, by_squares.s);
    EXPECT_EQ(with_cosine.t, by_squares.t);
    (first ? rotated : kept) += 1;
  }
  EXPECT_GT(rotated, 100);  // both outcomes exercised
  EXPECT_GT(kept, 100);
}

TEST(JacobiRotation, SquaredTestDecidesAsTheCosine) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    expect_squared_test_agrees<double>(1e-8, seed);
    expect_squared_test_agrees<double>(1e-13, seed);
    expect_squared_test_agrees<float>(1e-5f, seed);
  }
  Rotation<double> r;
  EXPECT_FALSE(jacobi_rotation(Precision<double>::negligible / 2, 1.0, 1e-200, 1e-14, r));
  EXPECT_FALSE(jacobi_rotation(0.0, 0.0, 0.0, 1e-14, r));
  EXPECT_EQ(r.c, 1.0);
  EXPECT_EQ(r.s, 0.0);
}

TEST(ScaledOffDiagonal, IsTheRotationsCosineAndZeroForANegligibleColumn) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const Columns<double> pair = random_columns<double>(40, seed, 1e3);
    Rotation<double> r;
    double cosine = -1;
    jacobi_rotation(pair.alpha(), pair.beta(), pair.gamma(), 1e-15, r, cosine);
    EXPECT_NEAR(scaled_off_diagonal(pair.alpha(), pair.beta(), pair.gamma()), cosine,
                1e-15 * cosine);
  }
  EXPECT_EQ(scaled_off_diagonal(Precision<double>::negligible / 2, 1.0, 1e-170), 0.0);
  EXPECT_EQ(scaled_off_diagonal(1.0f, 0.0f, 0.5f), 0.0f);
  EXPECT_EQ(scaled_off_diagonal(4.0f, 9.0f, -3.0f), 0.5f);
}

// x = [a, a, c], y = [b, -b, d]: the products cancel exactly but for c d, while a plain sum in
// row order keeps the rounding of the first half's sum. The compensated sum, row by row or as two
// halves added, recovers c d.
template <class T>
void expect_compensated_dot_recovers_the_small_term(T small) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<T> uniform(-1, 1);
  const int n = 500;
  std::vector<T> x, y;
  for (int i = 0; i < n; ++i) {
    x.push_back(uniform(rng));
    y.push_back(uniform(rng));
  }
  for (int i = 0; i < n; ++i) {
    x.push_back(x[i]);
    y.push_back(-y[i]);
  }
  x.push_back(3);
  y.push_back(small);
  const T exact = 3 * small;
  CompensatedSum<T> whole, front, back;
  T plain = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    whole.add_product(x[i], y[i]);
    (i < x.size() / 2 ? front : back).add_product(x[i], y[i]);
    plain += x[i] * y[i];
  }
  front.add(back);
  EXPECT_NEAR(whole.value(), exact, 1e-3 * exact);
  EXPECT_NEAR(front.value(), exact, 1e-3 * exact);
  EXPECT_GT(std::fabs(plain - exact), exact);  // the case is one a plain sum gets wrong
}

TEST(CompensatedSum, RecoversWhatAPlainSumLosesToRounding) {
  expect_compensated_dot_recovers_the_small_term<double>(std::ldexp(1.0, -70));
  expect_compensated_dot_recovers_the_small_term<float>(std::ldexp(1.0f, -40));
  CompensatedSum<double> sum;
  sum.add_product(1e16, 1);
  sum.add_product(1, 1);
  sum.add_product(-1e16, 1);
  EXPECT_EQ(sum.value(), 1.0);
  // a^2 - b^2 with a = 1 + 2^-30, b = 1 + 2^-31: each square loses its last term to rounding, and
  // only the products' own errors (TwoProduct) give the exact 2^-30 + 3 2^-62.
  const double a = 1 + std::ldexp(1.0, -30), b = 1 + std::ldexp(1.0, -31);
  CompensatedSum<double> squares;
  squares.add_product(a, a);
  squares.add_product(-b, b);
  EXPECT_EQ(squares.value(), std::ldexp(1.0, -30) + 3 * std::ldexp(1.0, -62));
  EXPECT_NE(a * a - b * b, squares.value());
}

TEST(UpperTrianglePair, NamesEveryPairOfGroupsOnceInRowOrder) {
  for (const int groups : {1, 2, 7, 32}) {
    std::vector<std::pair<int, int>> expected;
    for (int first = 0; first < groups; ++first)
      for (int second = first; second < groups; ++second) expected.emplace_back(first, second);
    ASSERT_EQ(int(expected.size()), groups * (groups + 1) / 2);
    for (int index = 0; index < int(expected.size()); ++index) {
      const GroupPair pair = upper_triangle_pair(index, groups);
      EXPECT_EQ(std::make_pair(pair.first, pair.second), expected[index]) << groups << " " << index;
    }
  }
}

// The test's slices as the H200 plans them for a 512 x 512 matrix (136 pairs of groups; a wave of
// 396 blocks in double, 792 in float): 2 slices of 4 tiles, 4 of 2; none below 8 tiles, nor where
// the pairs fill the wave; a tall matrix up to two tiles a slice. Every plan covers the rows with
// slices of two tiles at least, as many as the wave holds.
TEST(AllPairsTestSlices, FillOneWaveFromEightTilesWithTwoTilesASliceAtLeast) {
  EXPECT_EQ(test_slice_tiles(8, 396, 136, 8), 4);
  EXPECT_EQ(test_slice_tiles(8, 792, 136, 8), 2);
  EXPECT_EQ(test_slice_tiles(4, 792, 36, 8), 4);
  EXPECT_EQ(test_slice_tiles(16, 396, 528, 8), 16);
  EXPECT_EQ(test_slice_tiles(64, 396, 3, 8), 2);
  for (const int row_tiles : {1, 7, 8, 9, 15, 16, 33, 1000, 100000})
    for (const long long wave : {132LL, 396LL, 792LL, 4224LL, 1LL << 20})
      for (const long long pairs : {1LL, 3LL, 136LL, 1000LL, 1LL << 24}) {
        const int tiles = test_slice_tiles(row_tiles, wave, pairs, 8);
        const int slices = (row_tiles + tiles - 1) / tiles;
        const std::string where = std::to_string(row_tiles) + " tiles, wave " +
                                  std::to_string(wave) + ", " + std::to_string(pairs) + " pairs";
        if (row_tiles < 8) {
          EXPECT_EQ(tiles, row_tiles) << where;
          continue;
        }
        EXPECT_GE(tiles, 2) << where;
        EXPECT_LT(slices, 1 << 15) << where;
        EXPECT_LE(slices, std::max(1LL, wave / pairs)) << where;
        EXPECT_GE(std::int64_t(slices) * tiles, row_tiles) << where;
      }
}

TEST(HandOver, PairsAcrossBlocksCountEveryPairOfColumnsInDifferentBlocks) {
  for (const int n : {1, 2, 15, 16, 17, 32, 100, 512, 1000}) {
    long long across = 0;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) across += p / 16 != q / 16;
    EXPECT_EQ(pairs_across_blocks(n, 16), across) << n;
  }
}

TEST(HandOver, TakesOnlyLateSweepsWithMostPairsAboveTolOnSpectraWiderThanOneOverSqrtEps) {
  const long long pairs = pairs_across_blocks(512, 16);
  const long long most = (pairs * 9 + 9) / 10;
  EXPECT_TRUE(still_rotating_late(hand_over_first_sweep, most, pairs));
  EXPECT_TRUE(still_rotating_late(29, pairs, pairs));
  EXPECT_FALSE(still_rotating_late(hand_over_first_sweep - 1, pairs, pairs));
  EXPECT_FALSE(still_rotating_late(hand_over_first_sweep, most - 1, pairs));
  // Squared norms: sigma spread 1e9 is beyond 1 / sqrt(eps) in double, 1e7 is not; in float
  // (1 / sqrt(eps) ~ 2900) 1e4 is.
  EXPECT_TRUE(wider_than_the_gram_resolves(1.0, 1e-18));
  EXPECT_FALSE(wider_than_the_gram_resolves(1.0, 1e-14));
  EXPECT_TRUE(wider_than_the_gram_resolves(1.0, 0.0));  // a zero column
  EXPECT_TRUE(wider_than_the_gram_resolves(1.0f, 1e-8f));
  EXPECT_FALSE(wider_than_the_gram_resolves(1.0f, 1e-6f));
}

// The early hand-over's bounds against the spreads and shares the classes showed after sweeps 1
// and 4 (docs/results/h100-svd-sweep-trace.txt, 256 x 256 unless said, seed 1;
// h100-svd-unfolding-trace.txt at 136 to 240 columns, seeds 1 to 3).
TEST(HandOver, UnfoldingSpectraGoEarlyAndEveryOtherClassStays) {
  const long long pairs = pairs_across_blocks(256, 16);
  const auto goes = [&](int binades1, long long above4, int binades4) {
    return unfolding_applies<GramUnfolding, double>(256) &&
           unfolding_looks_at<GramUnfolding>(GramUnfolding::sweep, above4, pairs) &&
           spectrum_unfolding<GramUnfolding>(binades4, binades1);
  };
  EXPECT_TRUE(goes(17, pairs, 32));   // mode 3
  EXPECT_TRUE(goes(18, pairs, 31));   // mode 5
  EXPECT_TRUE(goes(24, pairs, 44));   // mode 3 at 1/eps
  EXPECT_TRUE(goes(25, pairs, 46));   // mode 5 at 1/eps
  EXPECT_TRUE(goes(17, pairs, 29));   // mode 5, 160 x 160, seed 3: the least spread and growth
  EXPECT_TRUE(goes(21, pairs, 43));   // mode 5 at 1/eps, 160 x 160, seed 2: the most growth
  EXPECT_FALSE(goes(6, pairs, 14));   // random
  EXPECT_FALSE(goes(52, pairs, 52));  // mode 1
  EXPECT_FALSE(goes(9, pairs, 33));   // duplicated columns
  EXPECT_FALSE(goes(9, pairs, 31));   // zero rows
  EXPECT_FALSE(goes(16, pairs, 76));  // rank n / 4
  EXPECT_FALSE(goes(10, pairs, 34));  // zero rows, 200 x 200, seed 2: the least growth of these
  EXPECT_FALSE(goes(201, pairs * 859 / 1000, 208));  // graded
  // At 100 x 100 (docs/results/h100-svd-sweep-trace.txt, seed 1).
  EXPECT_TRUE(goes(18, pairs, 33));   // mode 3 and mode 5
  EXPECT_TRUE(goes(25, pairs, 48));   // mode 5 at 1/eps
  EXPECT_FALSE(goes(16, pairs, 69));  // rank n / 4
  EXPECT_FALSE(goes(9, pairs, 40));   // duplicated columns
  EXPECT_FALSE(goes(10, pairs, 46));  // zero rows
  // Only at sweep 4, with nearly every pair above tol, and not from a first sweep not looked at.
  EXPECT_FALSE(spectrum_unfolding<GramUnfolding>(32, 0));
  EXPECT_FALSE(unfolding_looks_at<GramUnfolding>(GramUnfolding::sweep, pairs * 98 / 100, pairs));
  EXPECT_FALSE(unfolding_looks_at<GramUnfolding>(GramUnfolding::sweep - 1, pairs, pairs));
  EXPECT_FALSE(unfolding_looks_at<GramUnfolding>(GramUnfolding::sweep + 1, pairs, pairs));
  EXPECT_FALSE((unfolding_applies<GramUnfolding, float>(256)));  // double only
  EXPECT_TRUE((unfolding_applies<GramUnfolding, double>(65)));   // from 65 columns
  EXPECT_FALSE((unfolding_applies<GramUnfolding, double>(64)));
}

// The register ring's hand-over after sweep 2 against the spreads the classes showed after sweeps 1
// and 2 in the sequential model of the ring (docs/results/cpu-svd-ring-unfolding-model.txt, 16 to 64
// columns, seeds 1 to 3).
TEST(HandOver, TheRingHandsOverUnfoldingSpectraAfterTwoSweeps) {
  const auto goes = [](int binades1, int binades2, bool zero_column = false) {
    return ring_spectrum_unfolding(binades2, binades1, zero_column);
  };
  EXPECT_TRUE(goes(19, 29));          // mode 3, 25 x 25
  EXPECT_TRUE(goes(17, 21));          // mode 3, 64 x 64, seed 3: the least spread
  EXPECT_TRUE(goes(15, 21));          // mode 5, 48 x 48, seed 3: the least first spread
  EXPECT_TRUE(goes(22, 26));          // mode 3, 16 x 16, seed 2: the least growth (1.18)
  EXPECT_TRUE(goes(30, 53));          // mode 5 at 1/eps, 16 x 16, seed 2: the most growth
  EXPECT_FALSE(goes(6, 10));          // random
  EXPECT_FALSE(goes(8, 11));          // rank n - 1
  EXPECT_FALSE(goes(52, 52));         // mode 1
  EXPECT_FALSE(goes(202, 203));       // graded: 1.005 times
  EXPECT_FALSE(goes(22, 46));         // rank n / 4, 25 x 25: the least growth of these (2.09)
  EXPECT_FALSE(goes(10, 19));         // zero rows, 25 x 25
  EXPECT_FALSE(goes(1, 2));           // clustered
  EXPECT_FALSE(goes(16, 31, true));   // duplicated columns, 25 x 25, seed 2: one zero column
  EXPECT_FALSE(goes(72, 108, true));  // rank 2
  EXPECT_TRUE((unfolding_applies<RingUnfolding, double>(56)));
  EXPECT_TRUE((unfolding_applies<RingUnfolding, double>(64)));
  // Below 56 columns the second try pays less than the sweeps it saves, or not at all.
  EXPECT_FALSE((unfolding_applies<RingUnfolding, double>(55)));
  EXPECT_FALSE((unfolding_applies<RingUnfolding, float>(64)));  // double only
  // From 32 to 55 columns the ring's kernel restarts them itself; the two ranges do not meet.
  EXPECT_TRUE(ring_restarts<double>(RingRestart::least_columns));
  EXPECT_TRUE(ring_restarts<double>(55));
  EXPECT_FALSE(ring_restarts<double>(RingRestart::least_columns - 1));
  EXPECT_FALSE(ring_restarts<double>(56));
  EXPECT_FALSE(ring_restarts<float>(48));  // double only
  for (int columns = 1; columns <= 64; ++columns)
    EXPECT_FALSE(ring_restarts<double>(columns) &&
                 (unfolding_applies<RingUnfolding, double>(columns)))
        << columns;
}

TEST(HandOver, BinadesCountFromTheLeastPositiveSquaredNorm) {
  EXPECT_EQ(binades_between(1.0, 1.0), 0);
  EXPECT_EQ(binades_between(1.0, 0.25), 2);
  EXPECT_EQ(binades_between(1e16, 1.0), 53);
  EXPECT_EQ(binades_between(3.0f, 0.5f), 2);
  EXPECT_EQ(binades_between(1.0, 0.0), 0);               // no positive one: nothing spread
  EXPECT_EQ(binades_between(0.0, double(INFINITY)), 0);  // a zero matrix
}

TEST(GramFloor, IsSixteenTimesSqrtRowsEpsilonOfTheType) {
  EXPECT_TRUE(at_the_gram_floor<double>(16 * 32 * DBL_EPSILON, 1024));
  EXPECT_FALSE(at_the_gram_floor<double>(17 * 32 * DBL_EPSILON, 1024));
  EXPECT_TRUE(at_the_gram_floor<float>(1e-5, 1024));  // 16 x 32 x 1.19e-7 = 6.1e-5
  EXPECT_FALSE(at_the_gram_floor<float>(1e-4, 1024));
  EXPECT_FALSE(at_the_gram_floor<double>(1e-10, 4096));
}

TEST(OddEvenRing, EveryTwoColumnsMeetExactlyOncePerSweep) {
  for (int n_pad = 2; n_pad <= 64; n_pad += 2) {
    std::vector<int> pos(n_pad);
    std::iota(pos.begin(), pos.end(), 0);
    std::set<std::pair<int, int>> met;
    int meetings = 0;
    for (int round = 0; round < n_pad; ++round)
      for (int pair = 0; pair < pairs_in_round(round, n_pad); ++pair) {
        const int i = first_position(round, pair);
        ASSERT_LT(i + 1, n_pad);
        met.insert({std::min(pos[i], pos[i + 1]), std::max(pos[i], pos[i + 1])});
        std::swap(pos[i], pos[i + 1]);
        ++meetings;
      }
    EXPECT_EQ(meetings, n_pad * (n_pad - 1) / 2) << n_pad;
    EXPECT_EQ(int(met.size()), n_pad * (n_pad - 1) / 2) << n_pad;
  }
}

// The player in each seat in round `round` of an ordering of `rounds` rounds (seat_of(player,
// round), next_seat(seat)), checking that the seats are a permutation and that next_seat takes
// every player to its seat of the next round.
template <class SeatOf, class NextSeat>
void seat_players(SeatOf seat_of, NextSeat next_seat, int players, int round, int rounds,
                  std::vector<int>& at) {
  at.assign(players, -1);
  for (int player = 0; player < players; ++player) {
    const int seat = seat_of(player, round);
    ASSERT_GE(seat, 0);
    ASSERT_LT(seat, players);
    ASSERT_EQ(at[seat], -1) << players << " round " << round << ": seat " << seat << " taken";
    at[seat] = player;
    EXPECT_EQ(next_seat(seat), seat_of(player, (round + 1) % rounds))
        << players << " round " << round << " player " << player;
  }
}

TEST(CircleMethod, SeatsPairEveryTwoPlayersOnceAndFollowOnePermutation) {
  for (int players = 2; players <= 64; players += 2) {
    std::set<std::pair<int, int>> met;
    for (int round = 0; round < players - 1; ++round) {
      std::vector<int> at;  // the player in each seat
      ASSERT_NO_FATAL_FAILURE(
          seat_players([&](int player, int r) { return circle_seat(player, r, players); },
                       [&](int seat) { return next_circle_seat(seat, players); }, players, round,
                       players - 1, at));
      for (int pair = 0; pair < players / 2; ++pair) {
        const int low = std::min(at[2 * pair], at[2 * pair + 1]);
        const int high = std::max(at[2 * pair], at[2 * pair + 1]);
        // The circle's rule: two meet when their sum is the round (mod n - 1), or one is the
        // middle and the other doubled is the round.
        if (high == players - 1)
          EXPECT_EQ(2 * low % (players - 1), round) << players;
        else
          EXPECT_EQ((low + high) % (players - 1), round) << players;
        met.insert({low, high});
      }
    }
    EXPECT_EQ(int(met.size()), players * (players - 1) / 2) << players;
  }
}

TEST(CrossOrdering, SeatsPairEachHalfWithTheOtherOnceAndFollowOnePermutation) {
  for (int players = 2; players <= 64; players += 2) {
    const int half = players / 2;
    std::set<std::pair<int, int>> met;
    for (int round = 0; round < half; ++round) {
      std::vector<int> at;  // the player in each seat
      ASSERT_NO_FATAL_FAILURE(seat_players(
          [&](int player, int r) { return cross_seat(player, r, players); },
          [&](int seat) { return next_cross_seat(seat, players); }, players, round, half, at));
      for (int pair = 0; pair < half; ++pair) {
        EXPECT_EQ(at[2 * pair], pair) << players;  // the first half stays
        EXPECT_EQ(at[2 * pair + 1], half + (pair + round) % half) << players << " round " << round;
        met.insert({at[2 * pair], at[2 * pair + 1]});
      }
    }
    EXPECT_EQ(int(met.size()), half * half) << players;
  }
}

TEST(CrossOrdering, RoundZeroAndEveryPeriodthRoundSweepAllPairs) {
  for (int block_positions = 2; block_positions <= 130; block_positions += 2)
    for (int period = 1; period <= 6; ++period) {
      const int every = std::min(period, block_positions / 2);
      int full = 0, last = -1;
      for (int round = 0; round < block_positions; ++round) {
        if (!inner_sweep_is_full(round, block_positions, period)) continue;
        ++full;
        if (last >= 0) {
          EXPECT_EQ(round - last, std::max(every, 1)) << block_positions << " " << period;
        }
        last = round;
      }
      EXPECT_TRUE(inner_sweep_is_full(0, block_positions, period)) << block_positions;
      EXPECT_EQ(full, (block_positions + std::max(every, 1) - 1) / std::max(every, 1))
          << block_positions << " " << period;
      EXPECT_GE(full, std::min(2, block_positions)) << block_positions << " " << period;
    }
  EXPECT_FALSE(inner_sweep_is_full(1, 64, 5));
  EXPECT_TRUE(inner_sweep_is_full(30, 64, 5));
  EXPECT_TRUE(inner_sweep_is_full(4, 8, 5));  // at most half the ring: twice a sweep
  EXPECT_FALSE(inner_sweep_is_full(5, 8, 5));
}

TEST(DescendingOrder, RanksArePermutationsWithTiesByIndex) {
  const std::vector<double> keys = {2.0, 5.0, 2.0, -1.0, 5.0, 0.0};
  std::vector<int> order(keys.size(), -1);
  for (int c = 0; c < int(keys.size()); ++c) {
    int rank = 0;
    for (int other = 0; other < int(keys.size()); ++other)
      rank += ahead_when_descending(keys[other], other, keys[c], c);
    order[rank] = c;
  }
  EXPECT_EQ(order, (std::vector<int>{1, 4, 0, 2, 5, 3}));
}

TEST(OnChipLayout, PiecesAreAlignedAndDisjoint) {
  for (const auto& [m, n] :
       {std::pair{8, 8}, std::pair{33, 17}, std::pair{5, 40}, std::pair{1, 1}}) {
    const OnChipLayout L = on_chip_layout(m, n, 8, true, true);
    EXPECT_EQ(L.M, std::max(m, n));
    EXPECT_EQ(L.N, std::min(m, n));
    EXPECT_EQ(L.n_pad % 2, 0);
    EXPECT_GE(L.ldw, L.M);
    EXPECT_GE(L.ldv, L.N);
    const int offsets[] = {
        L.w_offset,   L.v_offset,    L.norms_offset, L.coefficients_offset, L.error_scales_offset,
        L.pos_offset, L.team_offset, L.bytes};
    for (const int offset : offsets) EXPECT_EQ(offset % 16, 0);
    EXPECT_GE(L.v_offset - L.w_offset, L.ldw * L.N * 8);
    EXPECT_GE(L.norms_offset - L.v_offset, L.ldv * L.N * 8);
    EXPECT_GE(L.error_scales_offset - L.coefficients_offset, L.n_pad * 8);
    EXPECT_GE(L.pos_offset - L.error_scales_offset, L.n_pad * 8);
    EXPECT_GE(L.bytes - L.team_offset, 32 * 8);
  }
}

TEST(OnChipLayout, HopperSharedMemoryHoldsTheExpectedSizes) {
  constexpr int hopper_optin = 227 * 1024;
  EXPECT_LE(on_chip_layout(32, 32, 8, true, false).bytes, 48 * 1024);
  EXPECT_LE(on_chip_layout(64, 64, 4, true, false).bytes, 48 * 1024);
  EXPECT_LE(on_chip_layout(100, 100, 8, true, true).bytes, hopper_optin);
  EXPECT_LE(on_chip_layout(160, 160, 4, true, true).bytes, hopper_optin);
  EXPECT_GT(on_chip_layout(128, 128, 8, true, true).bytes, hopper_optin);
  EXPECT_EQ(on_chip_layout(100000, 100000, 8, true, true).bytes, 1 << 30);  // no overflow
}

// A thread team's slice holds the warp's layout, and an odd number of elements, so that 32 threads
// reading the same element of their own matrices meet 32 different banks (float) or 16 different
// pairs of banks per half warp (double).
TEST(ThreadSlice, HoldsTheLayoutInAnOddNumberOfElementsWithoutBankConflicts) {
  for (const int element : {4, 8})
    for (int m = 1; m <= 40; ++m)
      for (int n = 1; n <= 12; ++n)
        for (const bool uv : {true, false}) {
          const int slice = thread_slice_bytes(m, n, element, uv);
          EXPECT_GE(slice, on_chip_layout(m, n, element, uv, false).bytes) << m << " x " << n;
          EXPECT_LT(slice, on_chip_layout(m, n, element, uv, false).bytes + 2 * element);
          ASSERT_EQ(slice % element, 0);
          EXPECT_EQ(slice / element % 2, 1) << m << " x " << n;
          const int words = slice / 4, lanes_a_wavefront = element == 4 ? 32 : 16;
          std::set<int> banks;
          for (int t = 0; t < lanes_a_wavefront; ++t) banks.insert(t * words % 32);
          EXPECT_EQ(int(banks.size()) * (element / 4), 32) << m << " x " << n;
        }
  EXPECT_EQ(thread_slice_bytes(3, 3, 8, true), 280);  // the dispatch's bound is in these bytes
  EXPECT_EQ(thread_slice_bytes(8, 8, 8, true), 1256);
  EXPECT_EQ(thread_slice_bytes(32, 4, 8, true), 1272);
}

// The odd-even ring's rounds over n_pad positions holding ranks as `placement` puts them: for each
// rank, the ranks it meets in order. Every two must meet exactly once.
std::vector<std::vector<int>> partners_in_rounds(Placement placement, int n_pad) {
  std::vector<int> at(n_pad, -1);
  for (int rank = 0; rank < n_pad; ++rank) {
    const int position = ring_position(placement, rank, n_pad);
    EXPECT_GE(position, 0);
    EXPECT_LT(position, n_pad);
    if (position < 0 || position >= n_pad) continue;
    EXPECT_EQ(at[position], -1) << n_pad << ": two ranks at position " << position;
    at[position] = rank;
  }
  std::vector<std::vector<int>> partners(n_pad);
  for (int round = 0; round < n_pad; ++round)
    for (int pair = 0; pair < pairs_in_round(round, n_pad); ++pair) {
      const int i = first_position(round, pair);
      if (at[i] < 0 || at[i + 1] < 0) continue;
      partners[at[i]].push_back(at[i + 1]);
      partners[at[i + 1]].push_back(at[i]);
      std::swap(at[i], at[i + 1]);
    }
  return partners;
}

// Zigzag is a placement (each rank on its own position), every two columns still meet once a
// sweep, and each column meets the others in increasing rank order but for one wrap: n_pad - 2
// steps down in all, against n_pad (n_pad - 2) / 2 when sorted.
TEST(RingPosition, ZigzagMeetsThePartnersInRankOrderButForOneWrap) {
  for (int n_pad = 2; n_pad <= 130; n_pad += 2)
    for (const Placement placement : {Placement::sorted, Placement::zigzag}) {
      const std::vector<std::vector<int>> partners = partners_in_rounds(placement, n_pad);
      int steps_down = 0;
      for (int rank = 0; rank < n_pad; ++rank) {
        std::vector<int> met = partners[rank];
        for (std::size_t k = 1; k < met.size(); ++k) steps_down += met[k] < met[k - 1];
        std::sort(met.begin(), met.end());
        std::vector<int> others;
        for (int other = 0; other < n_pad; ++other)
          if (other != rank) others.push_back(other);
        EXPECT_EQ(met, others) << n_pad << " rank " << rank;
      }
      EXPECT_EQ(steps_down, placement == Placement::zigzag ? n_pad - 2 : n_pad * (n_pad - 2) / 2)
          << n_pad;
    }
}

TEST(LanesPerPair, GroupsArePowersOfTwoWithinAWarpAndCoverTheRound) {
  for (int threads = 32; threads <= 1024; threads *= 2)
    for (int n_pad = 2; n_pad <= 400; n_pad += 2) {
      const int lanes = lanes_per_pair(threads, n_pad);
      EXPECT_GE(lanes, 1);
      EXPECT_LE(lanes, 32);
      EXPECT_EQ(32 % lanes, 0);
      if (threads / lanes < n_pad / 2) {
        EXPECT_EQ(lanes, 1) << threads << " " << n_pad;
      }
    }
}

// Where the reflections are taken, they cost no more multiply-adds than Gram-Schmidt (about
// 5 M N per missing column), and a zero matrix and a rank-one one always take them.
TEST(Completion, ReflectionsAreTakenOnlyWhereTheyCostLessThanGramSchmidt) {
  for (const int M : {8, 100, 1000})
    for (int N = 1; N <= M; N += 1 + N / 4)
      for (int kept = 0; kept < N; ++kept) {
        const bool reflections = completion_by_reflections(kept, N - kept);
        if (kept <= 1) {
          EXPECT_TRUE(reflections) << M << " " << N << " " << kept;
        }
        if (reflections) {
          EXPECT_LE(reflection_completion_work(M, N, kept), 5.0 * M * N * (N - kept))
              << M << " " << N << " " << kept;
        }
      }
}

// The reflector maps [alpha; x] to [beta; 0] with |beta| = ||[alpha; x]||, beta's sign opposite
// alpha's, tau in [1, 2] (LAPACK's dlarfg), across the range its callers keep; a zero x gives tau 0
// and leaves alpha; NaN or infinity gives NaN.
TEST(HouseholderReflector, MapsTheColumnOntoItsFirstAxisAcrossItsRange) {
  std::mt19937_64 random(5);
  std::uniform_real_distribution<double> entry(-1, 1);
  // The range the callers keep: alpha^2 + ||x||^2 up to max / 4, ||x||^2 a normal number (1e-150
  // squared is 1e-300); block_qr.cu scales the columns outside it.
  for (const double scale : {1.0, 1e-30, 1e30, 1e-150, 1e150}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<double> x(1 + trial % 7);
      for (double& e : x) e = entry(random) * scale;
      const double alpha = trial % 5 == 0 ? 0.0 : entry(random) * scale;
      long double sum = 0;
      for (const double e : x) sum += (long double)e * e;
      const Reflector<double> r = householder_reflector(alpha, double(sum));
      ASSERT_GE(r.tau, 1) << scale << " " << trial;
      ASSERT_LE(r.tau, 2) << scale << " " << trial;
      const long double norm = std::sqrt((long double)alpha * alpha + sum);
      EXPECT_NEAR(std::fabs(r.beta), double(norm), 4e-16 * std::fabs(r.beta));
      EXPECT_TRUE(alpha == 0 || std::signbit(r.beta) != std::signbit(alpha));
      // tau and the inverse of alpha - beta as the two divisions give them, to a few ulps.
      const long double divisor = (long double)alpha - r.beta;
      EXPECT_NEAR(r.tau, double((r.beta - (long double)alpha) / r.beta), 4e-16 * r.tau);
      EXPECT_NEAR(r.inverse, double(1 / divisor), 4e-16 * std::fabs(r.inverse));
      // H [alpha; x] with v = [1; x inverse]: the first entry beta, the others zero, to a few
      // ulps of beta.
      const double bound = 2e-15 * std::fabs(r.beta);
      long double dot = alpha;
      for (const double e : x) dot += (long double)(e * r.inverse) * e;
      const long double w = r.tau * dot;
      EXPECT_NEAR(double(alpha - w), r.beta, bound);
      for (const double e : x) EXPECT_NEAR(double(e - w * (e * r.inverse)), 0, bound);
    }
  }
  const Reflector<double> identity = householder_reflector(-3.0, 0.0);
  EXPECT_EQ(identity.tau, 0);
  EXPECT_EQ(identity.beta, -3.0);
  // Non-finite input carries on into tau.
  EXPECT_TRUE(std::isnan(householder_reflector(1.0, std::numeric_limits<double>::quiet_NaN()).tau));
  EXPECT_TRUE(std::isnan(householder_reflector(1.0, std::numeric_limits<double>::infinity()).tau));
}
}  // namespace
}  // namespace rooflab::jacobi
