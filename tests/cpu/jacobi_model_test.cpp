// The whole method run sequentially on the CPU, as each GPU team runs it (src/svd/jacobi_math.hpp's
// arithmetic, the sorted odd-even ring, the clearing of rounding noise, the completion of U, the
// second try's QR on the transposed triangle), against LAPACK's accuracy tests and sweep counts on
// the matrix classes users bring.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::jacobi {
namespace {

// The method run sequentially, as each GPU team runs it (pairs of a round are disjoint, so their
// order within the round does not matter): sort by tracked norm, placed on the ring as the columns
// as loaded decide (placement_as_loaded), odd-even rounds with the clearing of rounding noise,
// sigma, normalize (completing U where sigma is 0), order. Returns the sweeps,
// including the final one that finds nothing to rotate, and the columns cleared as noise.
struct ModelResult {
  std::vector<double> s;
  cpu::Matrix u, v;
  int sweeps = 0;
  bool converged = false;
  int cleared = 0;
};

double column_dot(const cpu::Matrix& x, int p, int q) {
  double sum = 0;
  for (int i = 0; i < x.m; ++i) sum += x(i, p) * x(i, q);
  return sum;
}

// The kernels' completion of W's columns of sigma 0 (jacobi.cuh, complete_zero_columns), run
// sequentially: the kept columns' Householder QR and H_1 ... H_r e_j for the others where
// completion_by_reflections takes them, else Gram-Schmidt a column at a time (the basis vector of
// least weight in the columns done, orthogonalized twice against them).
void complete_zero_columns_model(cpu::Matrix& w, const std::vector<double>& sigma) {
  const int M = w.m, N = w.n;
  int kept = 0;
  for (int c = 0; c < N; ++c) kept += sigma[c] > 0;
  if (kept == N) return;
  if (completion_by_reflections(kept, N - kept)) {
    std::vector<int> slot(N);
    for (int c = 0; c < N; ++c) slot[c] = completion_slot(sigma.data(), kept, c);
    cpu::Matrix y = cpu::zeros(M, kept);
    for (int c = 0; c < N; ++c)
      for (int i = 0; i < M && sigma[c] > 0; ++i) y(i, slot[c]) = w(i, c);
    std::vector<double> coefficients(kept);
    const auto reflect = [&](int k, cpu::Matrix& x, int j) {  // x_j <- H_k x_j
      double dot = 0;
      for (int i = k; i < M; ++i) dot += y(i, k) * x(i, j);
      dot *= coefficients[k];
      for (int i = k; i < M; ++i) x(i, j) -= dot * y(i, k);
    };
    for (int k = 0; k < kept; ++k) {
      const double alpha = y(k, k);
      double tail = 0;
      for (int i = k + 1; i < M; ++i) tail += y(i, k) * y(i, k);
      const double norm = std::sqrt(alpha * alpha + tail), beta = alpha >= 0 ? -norm : norm;
      y(k, k) = alpha - beta;
      coefficients[k] = norm > 0 ? 1 / (beta * (beta - alpha)) : 0;
      for (int j = k + 1; j < kept; ++j) reflect(k, y, j);
    }
    for (int c = 0; c < N; ++c) {
      if (sigma[c] > 0) continue;
      for (int i = 0; i < M; ++i) w(i, c) = i == slot[c];
      for (int k = kept - 1; k >= 0; --k) reflect(k, w, c);
    }
    return;
  }
  std::vector<bool> done(N);
  for (int c = 0; c < N; ++c) done[c] = sigma[c] > 0;
  for (int c = 0; c < N; ++c) {
    if (done[c]) continue;
    int chosen = 0;
    double least = std::numeric_limits<double>::infinity();
    for (int i = 0; i < M; ++i) {
      double weight = 0;
      for (int other = 0; other < N; ++other) weight += done[other] ? w(i, other) * w(i, other) : 0;
      if (weight < least) least = weight, chosen = i;
    }
    for (int i = 0; i < M; ++i) w(i, c) = i == chosen;
    for (int pass = 0; pass < 2; ++pass)
      for (int other = 0; other < N; ++other) {
        if (!done[other]) continue;
        const double projection = column_dot(w, other, c);
        for (int i = 0; i < M; ++i) w(i, c) -= projection * w(i, other);
      }
    const double norm = std::sqrt(column_dot(w, c, c));
    for (int i = 0; i < M; ++i) w(i, c) /= norm;
    done[c] = true;
  }
}

ModelResult sequential_model(const cpu::Matrix& a) {
  const int M = a.m, N = a.n;
  const int n_pad = N + (N & 1);
  const double tol = default_tolerance<double>(M, N, true);
  cpu::Matrix w = a, v = cpu::zeros(N, N);
  for (int i = 0; i < N; ++i) v(i, i) = 1;
  std::vector<double> norms(n_pad, -1), error_scales(n_pad, 0);
  for (int c = 0; c < N; ++c) {
    norms[c] = column_dot(w, c, c);
    error_scales[c] = initial_error_scale(norms[c], N);
  }
  const Placement placement = placement_as_loaded(norms.data(), N);
  ModelResult result;
  for (bool& converged = result.converged; !converged && result.sweeps < 30;) {
    ++result.sweeps;
    std::vector<int> ranked(n_pad), pos(n_pad);
    std::iota(ranked.begin(), ranked.end(), 0);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](int x, int y) { return norms[x] > norms[y]; });
    for (int rank = 0; rank < n_pad; ++rank)
      pos[ring_position(placement, rank, n_pad)] = ranked[rank];
    double off = 0;
    for (int round = 0; round < n_pad; ++round)
      for (int pair = 0; pair < pairs_in_round(round, n_pad); ++pair) {
        const int i = first_position(round, pair), p = pos[i], q = pos[i + 1];
        std::swap(pos[i], pos[i + 1]);
        if (p >= N || q >= N) continue;
        double alpha = column_dot(w, p, p), beta = column_dot(w, q, q), gamma = column_dot(w, p, q);
        for (const int c : {p, q}) {
          double& norm2 = c == p ? alpha : beta;
          if (!is_rounding_noise(norm2, error_scales[c])) continue;
          for (int row = 0; row < M; ++row) w(row, c) = 0;
          norm2 = gamma = 0;
          ++result.cleared;
        }
        Rotation<double> r;
        double cosine = 0;
        const bool rotate = jacobi_rotation(alpha, beta, gamma, tol, r, cosine);
        off = std::max(off, cosine);
        if (!rotate) continue;
        for (cpu::Matrix* x : {&w, &v})
          for (int row = 0; row < x->m; ++row) {
            const double xp = (*x)(row, p), xq = (*x)(row, q);
            (*x)(row, p) = r.c * xp - r.s * xq;
            (*x)(row, q) = r.s * xp + r.c * xq;
          }
        norms[p] = alpha - r.t * gamma;
        norms[q] = beta + r.t * gamma;
        rotate_error_scales(r, error_scales[p], error_scales[q]);
      }
    converged = !(off > tol);
  }
  std::vector<int> order(N);
  std::vector<double> sigma(N);
  for (int c = 0; c < N; ++c) sigma[c] = std::sqrt(column_dot(w, c, c));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return sigma[x] > sigma[y]; });
  // U: the columns over sigma, those of sigma 0 completed as the kernels do.
  for (int c = 0; c < N; ++c)
    for (int i = 0; i < M && sigma[c] > 0; ++i) w(i, c) /= sigma[c];
  complete_zero_columns_model(w, sigma);
  result.u = cpu::zeros(M, N);
  result.v = cpu::zeros(N, N);
  for (int r = 0; r < N; ++r) {
    result.s.push_back(sigma[order[r]]);
    for (int i = 0; i < M; ++i) result.u(i, r) = w(i, order[r]);
    for (int i = 0; i < N; ++i) result.v(i, r) = v(i, order[r]);
  }
  return result;
}

void expect_lapack_accurate(const cpu::Matrix& a, const ModelResult& model,
                            const std::string& what) {
  const cpu::SvdAccuracy accuracy =
      cpu::svd_accuracy(a, model.s, model.u, model.v, std::numeric_limits<double>::epsilon());
  EXPECT_LE(accuracy.worst(), 35) << what;
  EXPECT_TRUE(accuracy.s_descending_nonnegative) << what;
  EXPECT_TRUE(model.converged) << what;
}

// Only columns that spread over at least graded_least_binades as loaded go zigzag: the graded class
// in both precisions, no other class of the bench's (jacobi_math.hpp gives their spreads).
TEST(RingPosition, OnlyGradedColumnsGoZigzag) {
  for (const auto& [m, n] : {std::pair{16, 16}, {25, 25}, {64, 64}, {64, 40}, {100, 100}})
    for (const cpu::SvdMatrixClass& matrix_class : cpu::svd_matrix_classes())
      for (const bool single : {true, false}) {
        const cpu::Matrix a = single ? cpu::svd_test_matrix<float>(matrix_class.name, m, n, 1)
                                     : cpu::svd_test_matrix<double>(matrix_class.name, m, n, 1);
        std::vector<double> norms(n);
        for (int c = 0; c < n; ++c) norms[c] = column_dot(a, c, c);
        const bool graded = std::string(matrix_class.name) == "graded";
        EXPECT_EQ(placement_as_loaded(norms.data(), n),
                  graded ? Placement::zigzag : Placement::sorted)
            << matrix_class.name << " " << m << " x " << n << (single ? " float" : " double");
      }
  const double spread[] = {1, 0.5, 0x1p-30, 0};  // 30 binades apart, a zero column aside
  EXPECT_EQ(placement_as_loaded(spread, 4), Placement::zigzag);
  EXPECT_EQ(placement_as_loaded(spread, 3), Placement::zigzag);
  EXPECT_EQ(placement_as_loaded(spread, 2), Placement::sorted);
  const double zeros[] = {0, 0};
  EXPECT_EQ(placement_as_loaded(zeros, 2), Placement::sorted);
}

TEST(JacobiModel, SortedOddEvenSweepsPassLapackAccuracyTestsInFewSweeps) {
  // Sweeps, including the final check, on random square matrices (the kernels' comment quotes
  // these): the sorted odd-even ring needs no more than this.
  const std::pair<int, int> sizes_and_sweeps[] = {{8, 8}, {32, 10}, {64, 11}, {128, 11}};
  for (const auto& [n, max_sweeps] : sizes_and_sweeps) {
    const cpu::Matrix a = cpu::random_matrix(n, n, 40 + n);
    const ModelResult model = sequential_model(a);
    const cpu::SvdAccuracy accuracy =
        cpu::svd_accuracy(a, model.s, model.u, model.v, std::numeric_limits<double>::epsilon());
    EXPECT_LE(accuracy.worst(), 35) << n;
    EXPECT_TRUE(accuracy.s_descending_nonnegative) << n;
    EXPECT_LE(model.sweeps, max_sweeps) << n;
    const auto reference = cpu::lapack_singular_values(a);
    EXPECT_LT(cpu::max_relative_singular_value_error(model.s, reference, 0), 1e-12) << n;
  }
}

TEST(JacobiModel, GradedColumnsKeepRelativeAccuracyInTheSmallestSingularValues) {
  // 200 columns: the noise factor is N there (initial_error_scale), 32 at 20.
  for (const auto& [m, n, decades] : {std::tuple{40, 20, 10.0}, {40, 20, 30.0}, {300, 200, 30.0}}) {
    const cpu::Matrix a = cpu::graded_matrix(m, n, 77, decades);
    const ModelResult model = sequential_model(a);
    const auto reference = cpu::lapack_singular_values(a);
    EXPECT_LT(cpu::max_relative_singular_value_error(model.s, reference, 0), 1e-12) << decades;
    EXPECT_LT(model.s.back(), 1e-8 * model.s.front()) << decades;
    EXPECT_EQ(model.cleared, 0) << decades << " decades: no small column is rounding noise";
  }
}

// A rank-one matrix of exact integers, (i + 1)(j + 2) / 2: its columns are exactly proportional,
// and the rotations that combine them leave columns of pure rounding error along the first.
cpu::Matrix integer_rank_one(int m, int n) {
  cpu::Matrix a = cpu::zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a(i, j) = (i + 1.0) * (j + 2.0) / 2;
  return a;
}

TEST(JacobiModel, RankOneColumnsAreClearedAsRoundingNoiseWithinTwoSweeps) {
  // Without the clearing this matrix ran 17 sweeps at 100 x 100 in the model and 30, unconverged,
  // on the GPU; LAPACK's dgesvj stops unconverged at 100 and 256.
  for (const int n : {32, 100}) {
    const cpu::Matrix a = integer_rank_one(n, n);
    const ModelResult model = sequential_model(a);
    expect_lapack_accurate(a, model, "rank one " + std::to_string(n));
    EXPECT_LE(model.sweeps, 2) << n;
    EXPECT_GT(model.cleared, 0) << n;  // the others cancel exactly
    for (int l = 1; l < n; ++l) EXPECT_EQ(model.s[l], 0) << n << " sigma " << l;
  }
}

TEST(JacobiModel, ColumnsOfSizeEpsBesideALargeValueAreClearedAsRoundingNoise) {
  // dlatms mode 1 at condition 1/eps: sigma = 1, eps, ..., eps. What is left of a column once the
  // large value is rotated out is eps sigma_max, about sqrt(N) eps of its starting norm: with the
  // noise factor 32 at every size the model kept a third of those columns at 256 x 256 and took 10
  // sweeps to make them orthogonal.
  const int n = 256;
  const cpu::Matrix a = cpu::svd_test_matrix<double>("mode1-eps", n, n, 1);
  const ModelResult model = sequential_model(a);
  expect_lapack_accurate(a, model, "mode1-eps");
  EXPECT_LE(model.sweeps, 6);
  EXPECT_GE(model.cleared, n - 8);
}

TEST(JacobiModel, RankDeficientMatricesNeedNoMoreSweepsThanRandomOnes) {
  const int n = 64;
  const int random_sweeps = sequential_model(cpu::random_matrix(n, n, 3)).sweeps;
  cpu::Matrix duplicated = cpu::random_matrix(n, n, 4);
  for (int j = n / 2; j < n; ++j)
    for (int i = 0; i < n; ++i) duplicated(i, j) = duplicated(i, j - n / 2);
  const std::pair<const char*, cpu::Matrix> cases[] = {
      {"rank 5", cpu::rank_deficient_matrix(n, n, 5, 5)},
      {"rank n / 2", cpu::rank_deficient_matrix(n, n, n / 2, 6)},
      {"duplicated columns", duplicated}};
  for (const auto& [what, a] : cases) {
    const ModelResult model = sequential_model(a);
    expect_lapack_accurate(a, model, what);
    EXPECT_LE(model.sweeps, random_sweeps) << what;
    EXPECT_GT(model.cleared, 0) << what;
  }
}

// The first step of LAPACK's dgejsv before the sweeps, without its pivoting, run sequentially: A's
// columns sorted by squared norm, descending (A P), their Householder QR, A P = Q R, and the sweeps
// on R^T = U_2 S V_2^T (sequential_model), so that A = (Q V_2) S (P U_2)^T. Row j of R holds q_j^T
// a_k for the sorted columns k >= j, each off by about eps |a_k|: a row whose squared norm is
// rounding noise against sum_{k >= j} |a_k|^2 (triangle_row_is_noise) is cleared before the sweeps
// (without it, R^T's columns of noise took error scales of their own size and sweeps to clear).
ModelResult transposed_triangle_model(const cpu::Matrix& a) {
  const int M = a.m, N = a.n;
  std::vector<double> norm2(N);
  for (int c = 0; c < N; ++c) norm2[c] = column_dot(a, c, c);
  std::vector<int> order(N);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return norm2[x] > norm2[y]; });
  cpu::Matrix sorted = cpu::zeros(M, N);
  for (int k = 0; k < N; ++k)
    for (int i = 0; i < M; ++i) sorted(i, k) = a(i, order[k]);
  const cpu::ThinQr qr = cpu::householder_qr(sorted);
  cpu::Matrix rt = cpu::zeros(N, N);
  int cleared_rows = 0;
  double suffix = 0;
  for (int j = N - 1; j >= 0; --j) {
    suffix += norm2[order[j]];
    double row2 = 0;
    for (int k = j; k < N; ++k) row2 += qr.r(j, k) * qr.r(j, k);
    if (triangle_row_is_noise(row2, suffix)) {
      ++cleared_rows;
      continue;
    }
    for (int k = j; k < N; ++k) rt(k, j) = qr.r(j, k);
  }
  const ModelResult inner = sequential_model(rt);
  ModelResult result = inner;
  result.cleared += cleared_rows;
  result.u = cpu::zeros(M, N);
  result.v = cpu::zeros(N, N);
  for (int c = 0; c < N; ++c) {
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < N; ++k) result.u(i, c) += qr.q(i, k) * inner.v(k, c);
    for (int k = 0; k < N; ++k) result.v(order[k], c) = inner.u(k, c);
  }
  return result;
}

// The sweeps on R^T, against LAPACK's dgesvj on the same matrix: the sequential ring on A itself
// took 25 sweeps on mode 3 at 100 x 100 (dgesvj 13), 38 on mode 3 at 1/eps (dgesvj 20) and 12 on
// rank n - 1 (a random matrix 10); on R^T every class stays within dgesvj + 2 (where dgesvj runs
// out of its sweeps, within a random matrix's), a rank-deficient one within a random one's, and
// each passes LAPACK's tests. Each matrix is scaled by a power of two to a largest entry in
// [1/2, 1), as the kernels scale it (load_scaled): the model's squares would leave the range of
// double on the scaled classes.
TEST(JacobiModel, SweepsOnTheTransposedTriangleOfASortedQrStayWithinDgesvjPlusTwo) {
  const std::set<std::string> rank_deficient = {
      "zero",         "rank-1",         "rank-2", "rank-quarter",
      "rank-minus-1", "rank-1-integer", "mixed",  "duplicated-columns",
      "zero-columns", "zero-rows"};
  for (const auto& [m, n] : {std::pair{100, 100}, std::pair{150, 100}}) {
    const auto scaled = [&](const std::string& name) {
      cpu::Matrix a = cpu::svd_test_matrix<double>(name, m, n, 1);
      double largest = 0;
      for (const double x : a.values) largest = std::max(largest, std::fabs(x));
      if (largest > 0)
        for (double& x : a.values) x = std::ldexp(x, -std::ilogb(largest) - 1);
      return a;
    };
    const int random_sweeps = transposed_triangle_model(scaled("random")).sweeps;
    for (const cpu::SvdMatrixClass& matrix_class : cpu::svd_matrix_classes()) {
      const std::string what =
          std::string(matrix_class.name) + " " + std::to_string(m) + " x " + std::to_string(n);
      const cpu::Matrix a = scaled(matrix_class.name);
      const ModelResult model = transposed_triangle_model(a);
      expect_lapack_accurate(a, model, what);
      const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(a);
      EXPECT_LE(model.sweeps, dgesvj.converged ? dgesvj.sweeps + 2 : random_sweeps)
          << what << ", dgesvj " << dgesvj.sweeps;
      if (rank_deficient.count(matrix_class.name) > 0) {
        EXPECT_LE(model.sweeps, random_sweeps) << what;
      }
    }
  }
}

// The completion's two forms, each on the ranks that take it: U orthonormal in LAPACK's test and
// A rebuilt, 80 x 60 (the reflections up to rank 40 of 60, Gram-Schmidt beyond).
TEST(JacobiModel, EachCompletionFormGivesOrthonormalLeftVectors) {
  const int m = 80, n = 60;
  ASSERT_TRUE(completion_by_reflections(40, n - 40));
  ASSERT_FALSE(completion_by_reflections(41, n - 41));
  expect_lapack_accurate(cpu::zeros(m, n), sequential_model(cpu::zeros(m, n)), "zero");
  for (const int rank : {1, 2, 20, 40, 41, 57, 59}) {
    const cpu::Matrix a = cpu::rank_deficient_matrix(m, n, rank, 40 + rank);
    const ModelResult model = sequential_model(a);
    expect_lapack_accurate(a, model, "rank " + std::to_string(rank));
    EXPECT_LT(model.s[rank], 1e-13 * model.s[0]) << "rank " << rank;
  }
}

}  // namespace
}  // namespace rooflab::jacobi
