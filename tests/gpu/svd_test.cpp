// rooflab::svd against LAPACK's SVD tests (ddrvbd's ratios, <= 35 ulps) and LAPACK's singular
// values, on every path (one kernel in shared memory, a warp per matrix, the
// register ring, global memory with either schedule), with the awkward inputs: graded,
// rank-deficient, zero, NaN/Inf, scaled near overflow and underflow, 1 x n, n x 1, wide and tall,
// padded leading dimensions, too few sweeps. Tests named *Large* are too slow for
// compute-sanitizer.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "gpu_test.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"
#include "svd_test_support.hpp"

namespace rooflab {
namespace {

using testing::clusters_unavailable;
using testing::expect_accurate;
using testing::expect_values_match_lapack;
using testing::Factors;
using testing::name;
using testing::orthogonal_neighbours;
using testing::rounded;
using testing::Route;
using testing::route_runs_here;
using testing::route_shapes;
using testing::RouteShape;
using testing::run_svd;
using testing::scaled_diagonal;
using testing::structured_classes;
using testing::svd_on_path;
using testing::threshold;

class Svd : public testing::GpuTest {};

// Shapes on both sides of the shared-memory limit (double 100 x 100 fits, 130 x 130 does not),
// each row count per warp of the register ring: 7 (25 rows), 8 (32), 10 (33), 13 (50; and 52,
// where the fourth warp's rows are all real) and 16 (64), and tall and wide ones that QR
// preconditioning takes.
const std::pair<int, int> shapes[] = {{1, 1},     {1, 7},     {7, 1},     {2, 2},    {3, 5},
                                      {25, 25},   {33, 17},   {17, 33},   {64, 64},  {100, 100},
                                      {130, 130}, {1000, 10}, {10, 1000}, {160, 90}, {50, 50},
                                      {41, 52},   {32, 32},   {300, 20},  {20, 300}, {500, 64}};

TEST_F(Svd, RandomMatricesPassLapackTestsInBothPrecisions) {
  std::uint64_t seed = 100;
  for (const auto& [m, n] : shapes) {
    ++seed;
    const cpu::Matrix a = cpu::random_matrix(m, n, seed);
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info), name("double", m, n, seed));
    EXPECT_TRUE(info.converged) << name("double", m, n, seed);
    EXPECT_GE(info.sweeps, 1);
    const cpu::Matrix af = rounded<float>(a);
    expect_accurate<float>(af, run_svd<float>(af, {}, 0, &info), name("float", m, n, seed));
    EXPECT_TRUE(info.converged) << name("float", m, n, seed);
  }
}

TEST_F(Svd, GradedMatrixKeepsHighRelativeAccuracyInTheSmallSingularValues) {
  for (const auto& [m, n] : {std::pair{60, 20}, std::pair{20, 60}, std::pair{150, 140}}) {
    const std::uint64_t seed = 7 + m;
    // Graded along the longer side, so that all min(m, n) singular values span the decades.
    const cpu::Matrix a = m >= n ? cpu::graded_matrix(m, n, seed, 10)
                                 : cpu::transposed(cpu::graded_matrix(n, m, seed, 10));
    const std::vector<double> reference = cpu::lapack_singular_values(a);
    const Factors f = run_svd<double>(a);
    EXPECT_LT(cpu::max_relative_singular_value_error(f.s, reference, 0), 1e-11)
        << name("double", m, n, seed);
    EXPECT_LT(reference.back(), 1e-8 * reference.front());
    expect_accurate<double>(a, f, name("graded double", m, n, seed));
    if (std::max(m, n) > 60)
      continue;  // float's relative error grows with cond(B) ~ 60 at 150 x 140
    const cpu::Matrix af = rounded<float>(a);
    const Factors ff = run_svd<float>(af);
    EXPECT_LT(cpu::max_relative_singular_value_error(ff.s, cpu::lapack_singular_values(af), 0),
              1e-4)
        << name("float", m, n, seed);
  }
}

TEST_F(Svd, RankDeficientMatrixGetsOrthonormalSingularVectors) {
  for (const auto& [m, n] : {std::pair{40, 30}, std::pair{30, 40}, std::pair{140, 130}}) {
    const cpu::Matrix a = cpu::rank_deficient_matrix(m, n, 5, 9);
    const Factors f = run_svd<double>(a);
    expect_accurate<double>(a, f, name("rank 5 double", m, n, 9));
    EXPECT_LT(f.s[5], 1e-13 * f.s[0]);
    const cpu::Matrix af = rounded<float>(a);
    expect_accurate<float>(af, run_svd<float>(af), name("rank 5 float", m, n, 9));
  }
}

// The completion of one matrix's columns of sigma 0 takes one of four forms by the count r of
// columns kept and z of columns to complete (jacobi_math.hpp, completion_by_reflections;
// global_ends.cu, complete_single_matrix): reflections (r <= 2 z), the kept columns factored in one
// block while that is little enough work (M r^2 <= 2^19) and the missing ones formed over the GPU;
// Gram-Schmidt (r > 2 z) over the GPU for at most 8 columns past 2^15 multiply-adds (M N z), in one
// block for a few columns below; cuSOLVER's Householder QR beyond these.
// These single matrices take the Gram route and each form, tall and wide, the reflections at the
// factoring's bound and where their missing columns are many.
TEST_F(Svd, LargeEveryFormOfTheCompletionGivesOrthonormalVectors) {
  const struct {
    int m, n, rank;
    const char* form;
  } cases[] = {{300, 280, 1, "reflections"},
               {100, 100, 20, "reflections, many kept"},
               {512, 512, 32, "reflections at the factoring's bound"},
               {1000, 900, 2, "reflections, 898 columns formed"},
               {100, 100, 97, "Gram-Schmidt in one block"},
               {600, 600, 599, "Gram-Schmidt over the GPU, one column"},
               {520, 500, 492, "Gram-Schmidt over the GPU, 8 columns"},
               {520, 500, 491, "cuSOLVER, 9 columns for Gram-Schmidt"},
               {512, 512, 33, "cuSOLVER, past the factoring's bound"},
               {560, 600, 150, "cuSOLVER, after too much work for the reflections"},
               {600, 600, 450, "cuSOLVER, after too much work for Gram-Schmidt"}};
  for (const auto& c : cases)
    for (const bool transposed : {false, true}) {
      const int m = transposed ? c.n : c.m, n = transposed ? c.m : c.n;
      const cpu::Matrix a = cpu::rank_deficient_matrix(m, n, c.rank, 30 + c.rank);
      const std::string what =
          name(std::string(c.form) + " rank " + std::to_string(c.rank), m, n, 30 + c.rank);
      SvdInfo info;
      const Factors f = run_svd<double>(a, {}, 0, &info);
      expect_accurate<double>(a, f, what);
      EXPECT_TRUE(info.converged) << what;
      EXPECT_LT(f.s[c.rank], 1e-13 * f.s[0]) << what;
    }
}

TEST_F(Svd, ZeroMatrixGivesZeroValuesAndOrthonormalVectors) {
  for (const auto& [m, n] : {std::pair{1, 1}, std::pair{20, 12}, std::pair{12, 20},
                             std::pair{130, 130}, std::pair{600, 520}}) {
    const cpu::Matrix a = cpu::zeros(m, n);
    for (const bool single : {false, true}) {
      const Factors f = single ? run_svd<float>(a) : run_svd<double>(a);
      for (const double value : f.s) EXPECT_EQ(value, 0);
      const double ulp =
          single ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
      const cpu::SvdAccuracy accuracy = cpu::svd_accuracy(a, f.s, f.u, f.v, ulp);
      EXPECT_EQ(accuracy.residual, 0) << m << " x " << n;
      EXPECT_LE(accuracy.u_orthogonality, threshold) << m << " x " << n;
      EXPECT_LE(accuracy.v_orthogonality, threshold) << m << " x " << n;
    }
  }
}

TEST_F(Svd, ZeroAndRepeatedColumnsStillGiveOrthonormalVectors) {
  for (const auto& [m, n] : {std::pair{30, 12}, std::pair{12, 30}, std::pair{140, 125}}) {
    cpu::Matrix a = cpu::random_matrix(m, n, 21);
    for (int i = 0; i < m; ++i) {
      a(i, 3) = 0;
      a(i, n - 1) = 0;
      a(i, 5) = a(i, 2);
    }
    expect_accurate<double>(a, run_svd<double>(a), name("zero columns double", m, n, 21));
    expect_accurate<float>(rounded<float>(a), run_svd<float>(rounded<float>(a)),
                           name("zero columns float", m, n, 21));
  }
}

TEST_F(Svd, EntriesNearOverflowAndUnderflowAreScaledExactly) {
  for (const double scale : {1e300, 1e-300}) {
    cpu::Matrix a = cpu::random_matrix(30, 20, 31);
    for (double& value : a.values) value *= scale;
    expect_accurate<double>(a, run_svd<double>(a), "double scaled by " + std::to_string(scale));
  }
  for (const double scale : {1e35, 1e-35}) {
    cpu::Matrix a = cpu::random_matrix(30, 20, 32);
    for (double& value : a.values) value *= scale;
    a = rounded<float>(a);
    expect_accurate<float>(a, run_svd<float>(a), "float scaled by " + std::to_string(scale));
  }
}

TEST_F(Svd, PaddedLeadingDimensionsAreHonoredAndANotModified) {
  for (const auto& [m, n] : {std::pair{25, 17}, std::pair{17, 25}, std::pair{130, 120}}) {
    const cpu::Matrix a = cpu::random_matrix(m, n, 41);
    expect_accurate<double>(a, run_svd<double>(a, {}, 5), name("padded double", m, n, 41));
    expect_accurate<float>(rounded<float>(a), run_svd<float>(rounded<float>(a), {}, 3),
                           name("padded float", m, n, 41));
  }
}

TEST_F(Svd, ValuesOnlyMatchTheFullDecomposition) {
  for (const auto& [m, n] : {std::pair{40, 25}, std::pair{25, 40}, std::pair{130, 130}}) {
    const cpu::Matrix a = cpu::random_matrix(m, n, 51);
    SvdOptions values_only;
    values_only.compute_uv = false;
    expect_values_match_lapack<double>(a, run_svd<double>(a, values_only).s,
                                       name("double", m, n, 51));
  }
}

TEST_F(Svd, NanOrInfInAIsAnErrorNamingA) {
  for (const auto& [m, n] : {std::pair{10, 10}, std::pair{6, 9}, std::pair{130, 130}})
    for (const double bad :
         {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
      cpu::Matrix a = cpu::random_matrix(m, n, 61);
      a(m / 2, n - 1) = bad;
      try {
        run_svd<double>(a);
        ADD_FAILURE() << "no error for " << bad << " in " << m << " x " << n;
      } catch (const Error& error) {
        EXPECT_EQ(error.argument(), "A") << error.what();
        EXPECT_NE(std::string(error.what()).find("NaN or Inf"), std::string::npos) << error.what();
      }
    }
}

TEST_F(Svd, TooFewSweepsAreReportedAsNotConverged) {
  for (const int n : {64, 130}) {
    const cpu::Matrix a = cpu::random_matrix(n, n, 71);
    SvdOptions options;
    options.max_sweeps = 1;
    SvdInfo info;
    run_svd<double>(a, options, 0, &info);
    EXPECT_FALSE(info.converged) << n;
    EXPECT_EQ(info.sweeps, 1) << n;
    EXPECT_GT(info.off, 1e-10) << n;
  }
}

// QR preconditioning on its own (whatever the dispatch sends it), solving R and, columns sorted
// first, R^T: tall and wide, square, padded, graded, rank-deficient, zero, scaled near overflow and
// underflow, NaN and Inf, values only and too few sweeps.
void expect_qr_path_handles_awkward_matrices(jacobi::Path qr) {
  const std::string tag = qr == jacobi::Path::qr_preconditioned ? "qr" : "qr on R^T";
  std::uint64_t seed = 300;
  for (const auto& [m, n] :
       {std::pair{300, 20}, std::pair{20, 300}, std::pair{65, 64}, std::pair{1000, 10},
        std::pair{130, 100}, std::pair{90, 90}, std::pair{7, 1}, std::pair{1, 7}}) {
    ++seed;
    const cpu::Matrix a = cpu::random_matrix(m, n, seed);
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, int(seed % 2) * 3, &info, qr),
                            name(tag + " double", m, n, seed));
    EXPECT_TRUE(info.converged) << name(tag + " double", m, n, seed);
    const cpu::Matrix af = rounded<float>(a);
    expect_accurate<float>(af, run_svd<float>(af, {}, 0, &info, qr),
                           name(tag + " float", m, n, seed));
    EXPECT_TRUE(info.converged) << name(tag + " float", m, n, seed);
  }
  for (const auto& [m, n] : {std::pair{300, 20}, std::pair{20, 300}}) {
    const cpu::Matrix a = m >= n ? cpu::graded_matrix(m, n, 17, 10)
                                 : cpu::transposed(cpu::graded_matrix(n, m, 17, 10));
    const Factors f = run_svd<double>(a, {}, 0, nullptr, qr);
    EXPECT_LT(cpu::max_relative_singular_value_error(f.s, cpu::lapack_singular_values(a), 0), 1e-11)
        << name(tag + " graded", m, n, 17);
    expect_accurate<double>(a, f, name(tag + " graded", m, n, 17));
  }
  for (const auto& [m, n] : {std::pair{300, 40}, std::pair{40, 300}}) {
    const cpu::Matrix a = cpu::rank_deficient_matrix(m, n, 5, 19);
    const Factors f = run_svd<double>(a, {}, 0, nullptr, qr);
    expect_accurate<double>(a, f, name(tag + " rank 5", m, n, 19));
    EXPECT_LT(f.s[5], 1e-13 * f.s[0]);
  }
  for (const auto& [m, n] : {std::pair{200, 12}, std::pair{12, 200}}) {
    const cpu::Matrix a = cpu::zeros(m, n);
    const Factors f = run_svd<double>(a, {}, 0, nullptr, qr);
    for (const double value : f.s) EXPECT_EQ(value, 0);
    const cpu::SvdAccuracy accuracy =
        cpu::svd_accuracy(a, f.s, f.u, f.v, std::numeric_limits<double>::epsilon());
    EXPECT_EQ(accuracy.residual, 0) << m << " x " << n;
    EXPECT_LE(accuracy.u_orthogonality, threshold) << m << " x " << n;
    EXPECT_LE(accuracy.v_orthogonality, threshold) << m << " x " << n;
  }
  for (const double scale : {1e300, 1e-300}) {
    cpu::Matrix a = cpu::random_matrix(300, 20, 23);
    for (double& value : a.values) value *= scale;
    expect_accurate<double>(a, run_svd<double>(a, {}, 0, nullptr, qr),
                            tag + " double scaled by " + std::to_string(scale));
  }
  for (const double scale : {1e35, 1e-35}) {
    cpu::Matrix a = cpu::random_matrix(20, 300, 29);
    for (double& value : a.values) value *= scale;
    a = rounded<float>(a);
    expect_accurate<float>(a, run_svd<float>(a, {}, 0, nullptr, qr),
                           tag + " float scaled by " + std::to_string(scale));
  }
  for (const auto& [m, n] : {std::pair{200, 10}, std::pair{10, 200}})
    for (const double bad :
         {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
      cpu::Matrix a = cpu::random_matrix(m, n, 37);
      a(m - 1, n / 2) = bad;
      DeviceBuffer<double> A(a.values), S(std::min(m, n)), U(std::size_t(m) * std::min(m, n)),
          V(std::size_t(n) * std::min(m, n));
      const jacobi::MatrixStatus status =
          svd_on_path<double>(qr, A.data(), m, n, m, S.data(), U.data(), m, V.data(), n, {});
      EXPECT_EQ(status.bad_input, 1) << bad << " in " << m << " x " << n;
      for (const double value : S.download())
        EXPECT_TRUE(std::isnan(value)) << bad << " in " << m << " x " << n;
    }
  {
    const cpu::Matrix a = cpu::random_matrix(200, 30, 41);
    SvdOptions values_only;
    values_only.compute_uv = false;
    expect_values_match_lapack<double>(a, run_svd<double>(a, values_only, 0, nullptr, qr).s,
                                       name("values double", 200, 30, 41));
  }
  for (const int n : {50, 100}) {
    SvdOptions options;
    options.max_sweeps = 1;
    SvdInfo info;
    run_svd<double>(cpu::random_matrix(300, n, 43), options, 0, &info, qr);
    EXPECT_FALSE(info.converged) << n;
    EXPECT_EQ(info.sweeps, 1) << n;
  }
}

TEST_F(Svd, QrPreconditioningPassesLapackTestsOnAwkwardMatrices) {
  expect_qr_path_handles_awkward_matrices(jacobi::Path::qr_preconditioned);
}

TEST_F(Svd, QrOnTheTransposedTrianglePassesLapackTestsOnAwkwardMatrices) {
  expect_qr_path_handles_awkward_matrices(jacobi::Path::qr_transposed_triangle);
}

// The sweeps on R^T against LAPACK's dgesvj on the same matrix (double): at most dgesvj's + 2 on
// the classes where the sweeps on A take more and R^T takes fewer (dlatms's geometric and
// log-uniform spectra at conditions 1/sqrt(eps) and 1/eps, graded values; docs/svd.md, the sweep
// table), and on the random and rank-deficient ones; where dgesvj runs out of sweeps, at most a
// random matrix's. Clustered values are solved and checked, not bounded: R^T does not cut their
// sweeps (100 x 100: 12 on an H100's cluster schedule, 13 on the three Gram kernels a round that
// GPUs before sm_90 run, against dgesvj's 10; 13 on A), docs/svd.md, "Limits". The sequential
// model's (tests/cpu/jacobi_model_test.cpp) on the GPU's block ring.
TEST_F(Svd, LargeQrOnTheTransposedTriangleSweepsWithinDgesvjPlusTwo) {
  for (const int n : {100, 256}) {
    SvdInfo random_info;
    run_svd<double>(cpu::svd_test_matrix<double>("random", n, n, 1), {}, 0, &random_info,
                    jacobi::Path::qr_transposed_triangle);
    for (const char* matrix_class :
         {"random", "mode3", "mode5", "mode3-eps", "mode5-eps", "graded", "clustered",
          "rank-minus-1", "duplicated-columns", "zero-rows", "rank-1-integer"}) {
      const cpu::Matrix a = cpu::svd_test_matrix<double>(matrix_class, n, n, 1);
      const std::string what = name(std::string("R^T ") + matrix_class, n, n, 1);
      SvdInfo info;
      expect_accurate<double>(
          a, run_svd<double>(a, {}, 0, &info, jacobi::Path::qr_transposed_triangle), what);
      EXPECT_TRUE(info.converged) << what;
      if (std::string(matrix_class) == "clustered") continue;
      const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(a);
      EXPECT_LE(info.sweeps, dgesvj.converged ? dgesvj.sweeps + 2 : random_info.sweeps)
          << what << ", dgesvj " << dgesvj.sweeps;
    }
  }
}

// rooflab::svd on a matrix whose first try stalls or unfolds its spectrum slowly, handed over after
// `first_sweeps` sweeps: LAPACK's tests, converged, both tries' sweeps counted and within LAPACK
// dgesvj's + 2 on the same matrix.
void expect_handed_over_within_dgesvj(const cpu::Matrix& a, const std::string& what,
                                      int first_sweeps = jacobi::GramUnfolding::sweep) {
  SvdInfo info;
  expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info), what);
  EXPECT_TRUE(info.converged) << what;
  EXPECT_GT(info.sweeps, first_sweeps) << what;  // both tries counted
  const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(a);
  EXPECT_LE(info.sweeps, dgesvj.sweeps + 2) << what << ", dgesvj " << dgesvj.sweeps;
}

// The second try: geometric and log-uniform spectra at condition 1/eps stall the Gram schedule at
// 512 x 512, which on its own runs out of its 30 sweeps (U not orthonormal). The library call hands
// them over to the transposed triangle after 4 sweeps (the early hand-over, jacobi_math.hpp) and
// counts both tries' sweeps: within LAPACK dgesvj's + 2 on the same matrix.
TEST_F(Svd, StalledMatricesAreHandedOverToTheTransposedTriangle) {
  ASSERT_EQ(jacobi::production_path<double>(512, 512, 1, true), jacobi::Path::gram);
  for (const char* matrix_class : {"mode3-eps", "mode5-eps"}) {
    const cpu::Matrix a = cpu::svd_test_matrix<double>(matrix_class, 512, 512, 1);
    const std::string what = name(matrix_class, 512, 512, 1);
    SvdInfo first;
    run_svd<double>(a, {}, 0, &first, jacobi::Path::gram);
    EXPECT_FALSE(first.converged) << what << ": the first path converges; test the second try "
                                  << "on a matrix it does not";
    expect_handed_over_within_dgesvj(a, what);
  }
}

// rooflab::svd on a matrix that is not handed over: LAPACK's tests, converged, in the first path's
// sweeps alone.
void expect_not_handed_over(const cpu::Matrix& a, const std::string& what,
                            jacobi::Path first_path = jacobi::Path::gram) {
  SvdInfo first, info;
  run_svd<double>(a, {}, 0, &first, first_path);
  expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info), what);
  EXPECT_TRUE(first.converged) << what;
  EXPECT_TRUE(info.converged) << what;
  EXPECT_EQ(info.sweeps, first.sweeps) << what << ": handed over";
}

// The early hand-over: geometric and log-uniform spectra at condition 1/sqrt(eps) widen their
// columns' norms a few binades a sweep with every pair above tol, and took 17 to 25 sweeps on the
// first path alone at 80 to 512 (dgesvj 12 to 16). From 65 columns in double they go to the
// transposed triangle after 4 sweeps: within dgesvj's + 2 in all, on the cluster (80 to 256) and on
// the host-driven Gram sweeps (512). Rank-deficient matrices stay on the first path: their spread
// multiplies as their null columns fall (zero rows at 100, 160 and 200, whose sweep 4 alone widens
// it as little as mode 3's at 160 and 200).
TEST_F(Svd, UnfoldingSpectraAreHandedOverAfterFourSweeps) {
  for (const int n : {80, 100, 160, 256, 512})
    for (const char* matrix_class : {"mode3", "mode5"}) {
      const cpu::Matrix a = cpu::svd_test_matrix<double>(matrix_class, n, n, 1);
      expect_handed_over_within_dgesvj(a, name(matrix_class, n, n, 1));
    }
  for (const int n : {100, 160, 200})
    expect_not_handed_over(cpu::svd_test_matrix<double>("zero-rows", n, n, 1),
                           name("zero-rows", n, n, 1));
}

// The register ring's hand-over (ring_spectrum_unfolding, jacobi_math.hpp): geometric and
// log-uniform spectra took 19 to 30 sweeps in the sequential model of the ring at 64 columns
// (dgesvj 12 to 17). A single double matrix of 56 to 64 columns goes to the transposed triangle
// after sweep 2: within dgesvj's + 2 in all, square (seeds 1 to 3), tall and wide. Every other
// class stays in the ring at 56 and 64 columns (its spectrum narrow, widening too little or too
// fast, or with zero columns; the scaled ones are brought into range by a power of two before the
// sweeps). Under 56 columns the second try pays less or costs more than the sweeps it saves (from
// 32 the ring's kernel restarts instead: RingRestartsUnfoldingSpectraInItsKernel). A shape whose
// matrix the ring's shared memory cannot hold on this device (64 x 64 on 64 KB a block, sm_75) goes
// to another path, as the dispatch sends it, and is left out.
TEST_F(Svd, RingHandsOverUnfoldingSpectraAfterTwoSweeps) {
  struct Case {
    int m, n, seed;
  };
  const auto in_the_ring = [](const Case& shape) {
    return route_runs_here<double>(
        RouteShape{"the ring's hand-over", jacobi::Path::register_ring, shape.m, shape.n});
  };
  const auto held = [&](const auto& shapes) {
    std::vector<Case> kept;
    for (const Case& shape : shapes)
      if (in_the_ring(shape)) kept.push_back(shape);
    return kept;
  };
  const Case unfolding[] = {{56, 56, 1}, {56, 56, 2}, {56, 56, 3}, {64, 64, 1},
                            {64, 64, 2}, {64, 64, 3}, {64, 56, 1}, {60, 64, 1}};
  const std::vector<Case> handed_over = held(unfolding);
  if (handed_over.empty()) GTEST_SKIP() << "the register ring holds no double 56 x 56 matrix here";
  for (const auto& [m, n, seed] : handed_over) {
    ASSERT_EQ(jacobi::production_path<double>(m, n, 1, true), jacobi::Path::register_ring);
    for (const char* matrix_class : {"mode3", "mode5", "mode3-eps", "mode5-eps"})
      expect_handed_over_within_dgesvj(cpu::svd_test_matrix<double>(matrix_class, m, n, seed),
                                       name(matrix_class, m, n, seed),
                                       jacobi::RingUnfolding::sweep);
  }
  const Case others[] = {{64, 64, 1}, {64, 64, 2}, {56, 56, 1}};
  const std::vector<Case> stays = held(others);
  for (const char* matrix_class :
       {"random",       "zero",         "identity",     "diagonal",       "rank-1",
        "rank-2",       "rank-quarter", "rank-minus-1", "rank-1-integer", "duplicated-columns",
        "zero-columns", "zero-rows",    "mode1",        "mode2",          "mode4",
        "mode1-eps",    "mode2-eps",    "mode4-eps",    "scaled-tiny",    "scaled-huge",
        "graded",       "clustered"})
    for (const auto& [m, n, seed] : stays)
      expect_not_handed_over(cpu::svd_test_matrix<double>(matrix_class, m, n, seed),
                             name(matrix_class, m, n, seed), jacobi::Path::register_ring);
}

// The ring's restart in its own kernel (RingRestart, jacobi_math.hpp): a double matrix of 32 to 55
// columns that the hand-over's test finds unfolding after sweep 2 is solved on its transposed
// triangle by the same block (the QR in shared memory, register_ring.cu). Geometric and
// log-uniform spectra took 17 to 24 sweeps in the ring alone at 32 to 48 columns on an H200
// (dgesvj 10 to 16); restarted, within dgesvj's + 2 in all, square (seeds 1 and 2), tall and wide,
// alone and in a batch, with LAPACK's tests on the factors. Under 32 columns the kernel does not
// look (RingRestart), and the ring's own sweeps stand. A shape whose restart the device's shared
// memory cannot hold (from 41 x 41 on Turing's 64 KB a block) keeps the ring's sweeps and is left
// out.
TEST_F(Svd, RingRestartsUnfoldingSpectraInItsKernel) {
  EXPECT_FALSE(jacobi::ring_restarts<double>(jacobi::RingRestart::least_columns - 1));
  EXPECT_FALSE(jacobi::ring_restarts<double>(jacobi::RingUnfolding::least_columns));
  EXPECT_FALSE(jacobi::ring_restarts<float>(48));
  struct Case {
    int m, n, seed;
  };
  const Case restarted[] = {{32, 32, 1}, {40, 40, 1}, {48, 48, 1}, {48, 48, 2},
                            {55, 55, 1}, {60, 40, 1}, {36, 48, 1}};
  int checked = 0;
  for (const auto& [m, n, seed] : restarted) {
    if (!route_runs_here<double>(
            RouteShape{"the ring's restart", jacobi::Path::register_ring, m, n}) ||
        !jacobi::ring_restarts_here<double>(m, n, true))
      continue;
    ++checked;
    for (const char* matrix_class : {"mode3", "mode5", "mode3-eps", "mode5-eps"})
      expect_handed_over_within_dgesvj(cpu::svd_test_matrix<double>(matrix_class, m, n, seed),
                                       name(matrix_class, m, n, seed),
                                       jacobi::RingUnfolding::sweep);
  }
  if (checked == 0) GTEST_SKIP() << "the ring restarts no double matrix of these shapes here";
}

// `a` graded over 30 decades (cpu::graded_columns): the columns of a tall or square matrix, the
// rows of a wide one (the columns the sweeps see).
cpu::Matrix graded_version(const cpu::Matrix& a) {
  constexpr double decades = 30;
  return a.m >= a.n ? cpu::graded_columns(a, decades)
                    : cpu::transposed(cpu::graded_columns(cpu::transposed(a), decades));
}

// Graded columns go on the ring zigzag (placement_as_loaded, jacobi_math.hpp): within LAPACK
// dgesvj's + 2 sweeps on the same matrix, in the register ring and in one warp's and one block's
// shared memory, on the graded class (seeds 1 to 3) and on graded versions of other classes (seed
// 1); square, tall and wide. Sorted, the ring took 7 to 9 sweeps on the graded class where dgesvj
// takes 3 to 5 (the sequential model, docs/results/cpu-svd-ring-placement-model.txt). Where
// dgesvj runs out of sweeps (zero rows), converged is the bar. The graded class of a wide shape
// is not bounded here: the sweeps see its transpose, whose rows are graded (docs/svd.md, limits).
// Graded versions of modes 3 and 5 are bounded at dgesvj + 3: those spectra take the ring more than
// dgesvj + 2 below 56 columns graded or not (docs/svd.md, limits), and graded mode 5 at 64 x 40
// took dgesvj + 3 on an H200.
TEST_F(Svd, GradedColumnsSweepWithinDgesvjPlusTwoOnChip) {
  const RouteShape shapes[] = {{"ring", jacobi::Path::register_ring, 16, 16},
                               {"ring", jacobi::Path::register_ring, 25, 25},
                               {"ring", jacobi::Path::register_ring, 48, 48},
                               {"ring", jacobi::Path::register_ring, 64, 64},
                               {"ring", jacobi::Path::register_ring, 64, 40},
                               {"ring", jacobi::Path::register_ring, 40, 64},
                               {"warp", jacobi::Path::warp_per_matrix, 24, 20},
                               {"block", jacobi::Path::block_per_matrix, 90, 70}};
  const auto expect_within_dgesvj = [](const cpu::Matrix& a, const RouteShape& shape,
                                       const std::string& what, int extra_sweeps) {
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info, shape.route), what);
    EXPECT_TRUE(info.converged) << what;
    const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(a);
    if (dgesvj.converged) {
      EXPECT_LE(info.sweeps, dgesvj.sweeps + extra_sweeps) << what << ", dgesvj " << dgesvj.sweeps;
    }
  };
  for (const RouteShape& shape : shapes) {
    if (!route_runs_here<double>(shape)) continue;
    const std::string where = std::string(shape.what) + " ";
    for (const std::uint64_t seed : {1, 2, 3})
      if (shape.m >= shape.n)
        expect_within_dgesvj(cpu::svd_test_matrix<double>("graded", shape.m, shape.n, seed), shape,
                             name(where + "graded", shape.m, shape.n, seed), 2);
    for (const std::string matrix_class : {"random", "clustered", "mode1", "mode3", "mode5",
                                           "rank-quarter", "duplicated-columns", "zero-rows"}) {
      const bool unfolding = matrix_class == "mode3" || matrix_class == "mode5";
      expect_within_dgesvj(
          graded_version(cpu::svd_test_matrix<double>(matrix_class, shape.m, shape.n, 1)), shape,
          name(where + "graded " + matrix_class, shape.m, shape.n, 1), unfolding ? 3 : 2);
    }
  }
}

// dlatms mode 1 at condition 1/eps: sigma = 1, eps, ..., eps. The first sweeps leave its columns of
// size eps beside the large one, about sqrt(N) eps of their starting norm; the noise factor
// max(32, N) clears them (jacobi_math.hpp, RoundingNoise). With 32 at every size the library
// rotated them for 5, 7 and 10 sweeps at 100, 256 and 512 (H100: 2, 3 and 3 since).
TEST_F(Svd, LargeColumnsOfSizeEpsBesideALargeValueAreClearedInAFewSweeps) {
  for (const int n : {100, 256, 512}) {
    const cpu::Matrix a = cpu::svd_test_matrix<double>("mode1-eps", n, n, 1);
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info), name("mode1-eps", n, n, 1));
    EXPECT_TRUE(info.converged) << n;
    EXPECT_LE(info.sweeps, 4) << n;
  }
  const cpu::Matrix af = cpu::svd_test_matrix<float>("mode1-eps", 256, 256, 1);
  SvdInfo info;
  expect_accurate<float>(af, run_svd<float>(af, {}, 0, &info),
                         name("float mode1-eps", 256, 256, 1));
  EXPECT_TRUE(info.converged);
  EXPECT_LE(info.sweeps, 4);
}

// The classes whose sweeps neither stall nor unfold their spectrum slowly are not handed over: at
// 512 x 512 the library call takes the Gram schedule's sweeps alone, converged.
TEST_F(Svd, LargeMatricesThatDoNotStallAreNotHandedOver) {
  for (const char* matrix_class :
       {"random", "clustered", "graded", "duplicated-columns", "rank-quarter", "zero-rows", "mode1",
        "mode4-eps", "mode1-eps"}) {
    expect_not_handed_over(cpu::svd_test_matrix<double>(matrix_class, 512, 512, 1),
                           name(matrix_class, 512, 512, 1));
  }
}

// The Gram products' rounding floor: on clustered spectra the sweeps bring the largest cosine to 1
// to 1.7 tol and no further, and pass under tol only by chance (2048 x 2048 double ran both tries'
// 60 sweeps unconverged). Two sweeps in a row at the floor (at_the_gram_floor, jacobi_math.hpp)
// end the iteration, converged, with factors that pass LAPACK's tests.
template <class T>
void expect_converged_at_the_gram_floor(int n) {
  const cpu::Matrix a = cpu::svd_test_matrix<T>("clustered", n, n, 1);
  const std::string what = name(sizeof(T) == 4 ? "clustered float" : "clustered", n, n, 1);
  SvdInfo info;
  expect_accurate<T>(a, run_svd<T>(a, {}, 0, &info), what);
  EXPECT_TRUE(info.converged) << what;
  EXPECT_LE(info.sweeps, 16) << what;
  EXPECT_TRUE(jacobi::at_the_gram_floor<T>(info.off, n)) << what << ": off " << info.off;
}

TEST_F(Svd, LargeClusteredSpectraConvergeAtTheGramFloor) {
  expect_converged_at_the_gram_floor<double>(1024);
  expect_converged_at_the_gram_floor<double>(2048);
  expect_converged_at_the_gram_floor<float>(1024);
}

// A column-graded m x n matrix (D over 10 decades) on one route, in double: its small singular
// values keep their relative accuracy, and ddrvbd's ratios hold.
void expect_graded_accurate_on(const Route& route, int m, int n, std::uint64_t seed) {
  const cpu::Matrix graded = cpu::graded_matrix(m, n, seed, 10);
  const std::vector<double> reference = cpu::lapack_singular_values(graded);
  const Factors f = run_svd<double>(graded, {}, 0, nullptr, route);
  EXPECT_LT(cpu::max_relative_singular_value_error(f.s, reference, 0), 1e-11)
      << name("graded double", m, n, seed);
  EXPECT_LT(reference.back(), 1e-8 * reference.front()) << name("graded double", m, n, seed);
  expect_accurate<double>(graded, f, name("graded double", m, n, seed));
}

TEST_F(Svd, EveryGlobalMemoryScheduleMatchesLapack) {
  for (const auto& [m, n] :
       {std::pair{45, 30}, std::pair{30, 45}, std::pair{3, 1}, std::pair{70, 70}}) {
    const cpu::Matrix a = cpu::random_matrix(m, n, 81);
    const int k = std::min(m, n);
    for (const auto schedule :
         {jacobi::GlobalSchedule::launch_per_round, jacobi::GlobalSchedule::launch_per_sweep,
          jacobi::GlobalSchedule::blocked, jacobi::GlobalSchedule::blocked_persistent,
          jacobi::GlobalSchedule::gram, jacobi::GlobalSchedule::gram_fused,
          jacobi::GlobalSchedule::gram_cluster}) {
      std::vector<double> host_a = a.values;
      DeviceBuffer<double> A(host_a), S(k), U(std::size_t(m) * k), V(std::size_t(n) * k);
      DeviceBuffer<jacobi::MatrixStatus> status(1);
      DeviceBuffer<jacobi::BatchSummary> summary(1);
      summary.fill_bytes(0);
      const jacobi::Problem<double> P = jacobi::single_matrix_problem<double>(
          "svd", A.data(), m, n, m, S.data(), U.data(), m, V.data(), n, {});
      jacobi::run_global(P, schedule, jacobi::Report{status.data(), summary.data()}, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      Factors f{std::vector<double>(k), cpu::zeros(m, k), cpu::zeros(n, k)};
      const auto s = S.download();
      f.s.assign(s.begin(), s.end());
      f.u.values = U.download();
      f.v.values = V.download();
      expect_accurate<double>(a, f, name("schedule " + std::to_string(int(schedule)), m, n, 81));
      EXPECT_EQ(status.download()[0].converged, 1);
    }
  }
}

// The fused Gram rounds (the library's Gram path where a round's clusters fit and the whole
// iteration's cluster does not): clusters of 3 and 5 blocks, shares of rows that end past the
// matrix, two chunks of rows per block (520 rows), the transpose, padded leading dimensions, values
// only, float, and a column-graded matrix, whose small singular values must keep their relative
// accuracy through the clusters' added parts of G.
TEST_F(Svd, FusedGramRoundsPassLapackTests) {
  const Route fused = jacobi::GlobalSchedule::gram_fused;
  for (const auto& [m, n] :
       {std::pair{300, 200}, std::pair{200, 300}, std::pair{520, 130}, std::pair{130, 520}}) {
    const cpu::Matrix a = cpu::random_matrix(m, n, 61 + m);
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, 3, &info, fused),
                            name("double", m, n, 61 + m));
    EXPECT_TRUE(info.converged) << name("double", m, n, 61 + m);
    const cpu::Matrix af = rounded<float>(a);
    expect_accurate<float>(af, run_svd<float>(af, {}, 0, nullptr, fused),
                           name("float", m, n, 61 + m));
  }
  SvdOptions values_only;
  values_only.compute_uv = false;
  const cpu::Matrix a = cpu::random_matrix(300, 200, 62);
  expect_values_match_lapack<double>(a, run_svd<double>(a, values_only, 0, nullptr, fused).s,
                                     name("values double", 300, 200, 62));
  expect_graded_accurate_on(fused, 300, 150, 63);
}

// The test on arrival (a single matrix on the Gram schedules, gram.cu, and in the portable
// cluster's kernel, cluster.cu). Dense columns that arrive exactly orthogonal (a Hadamard matrix's,
// +-1, each column scaled by a power of two) stop before the first sweep. Columns each orthogonal
// to the next but not to the one two along (a_j = e_j + e_{j+2}) pass the neighbouring columns'
// test, must fail the whole one and sweep on, and so must columns orthogonal within each group of
// 32 but not to the column 32 along (a_j = e_j + e_{j+32}), whose pairs of groups the cluster's
// test forms across blocks. On the fused rounds, on the three kernels a round, and ahead of a
// cluster larger than the portable size, with 256 rows each pair of column groups in one block,
// with 1024 in slices of rows whose sums the pair's last block adds up (GramTest); and inside a
// portable cluster (128 x 100: 4 pairs of 2 blocks), in double and float.
void expect_orthogonal_on_arrival_stop(Route route, int m, int n, const std::string& where) {
  cpu::Matrix orthogonal = cpu::zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      orthogonal(i, j) = std::ldexp(__builtin_parity(unsigned(i & j)) ? -1.0 : 1.0, -(j % 8));
  const cpu::Matrix neighbours = orthogonal_neighbours(m, n);
  const std::string what = where + std::to_string(m) + " x " + std::to_string(n) + ", ";
  SvdInfo info;
  expect_accurate<double>(orthogonal, run_svd<double>(orthogonal, {}, 0, &info, route),
                          what + "orthogonal columns");
  EXPECT_TRUE(info.converged) << what;
  EXPECT_EQ(info.sweeps, 1) << what << "orthogonal columns";
  expect_accurate<double>(neighbours, run_svd<double>(neighbours, {}, 0, &info, route),
                          what + "orthogonal neighbours");
  EXPECT_TRUE(info.converged) << what;
  EXPECT_GT(info.sweeps, 1) << what << "orthogonal neighbours";
  cpu::Matrix across = cpu::zeros(m, n);
  for (int j = 0; j < n; ++j) across(j, j) = across((j + 32) % m, j) = 1;
  expect_accurate<double>(across, run_svd<double>(across, {}, 0, &info, route),
                          what + "orthogonal within groups of 32");
  EXPECT_TRUE(info.converged) << what;
  EXPECT_GT(info.sweeps, 1) << what << "orthogonal within groups of 32";
}

TEST_F(Svd, ColumnsOrthogonalOnArrivalStopAndOrthogonalNeighboursDoNot) {
  const std::pair<jacobi::GlobalSchedule, const char*> routes[] = {
      {jacobi::GlobalSchedule::gram_fused, "fused rounds, "},
      {jacobi::GlobalSchedule::gram, "three kernels a round, "},
      {jacobi::GlobalSchedule::gram_cluster, "a cluster of 14 blocks where offered, "}};
  for (const int m : {256, 1024})
    for (const auto& [schedule, where] : routes)
      expect_orthogonal_on_arrival_stop(schedule, m, 200, where);
  // Without clusters the route falls back to the fused rounds or the three kernels, tested too.
  const Route cluster = jacobi::GlobalSchedule::gram_cluster;
  expect_orthogonal_on_arrival_stop(cluster, 128, 100, "a portable cluster, double, ");
  const std::string what = "a portable cluster, float, 128 x 100, ";
  const cpu::Matrix diagonal = scaled_diagonal(128, 100);
  SvdInfo info;
  expect_accurate<float>(diagonal, run_svd<float>(diagonal, {}, 0, &info, cluster),
                         what + "diagonal");
  EXPECT_TRUE(info.converged) << what;
  EXPECT_EQ(info.sweeps, 1) << what << "diagonal";
}

// The same rounds small enough for racecheck, whose tracking of every shared and distributed
// shared memory access makes the larger tests above take minutes: clusters of 3 blocks (150 x 100)
// and of 5 (300 x 40, through the Gram path where the library would take the register ring).
TEST_F(Svd, FusedGramRoundsInSmallClustersPassLapackTests) {
  const Route fused = jacobi::GlobalSchedule::gram_fused;
  for (const auto& [m, n] : {std::pair{150, 100}, std::pair{300, 40}}) {
    const cpu::Matrix a = cpu::random_matrix(m, n, 71 + m);
    SvdInfo info;
    expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info, fused),
                            name("double", m, n, 71 + m));
    EXPECT_TRUE(info.converged) << name("double", m, n, 71 + m);
  }
}

// The whole iteration in one cluster per matrix (the library's Gram path where it fits): 4 pairs of
// 2 blocks (100 x 100, 125 x 125), products of two chunks of rows (200 x 100), 3 pairs (the
// transpose of 128 x 90), one pair in one block (45 x 30), padded leading dimensions, values only,
// float, a column-graded matrix, whose small singular values must keep their relative accuracy,
// rank-deficient and zero matrices, whose vectors of sigma 0 are completed after the cluster, and a
// matrix stopped by max_sweeps, which must say so.
// A random m x n matrix through the cluster's sweeps in double (leading dimensions padded by
// `pad`) and in float: LAPACK's tests, and the double one converged within tol.
void expect_random_accurate_in_cluster(int m, int n, std::uint64_t seed, int pad) {
  const Route cluster = jacobi::GlobalSchedule::gram_cluster;
  const cpu::Matrix a = cpu::random_matrix(m, n, seed);
  SvdInfo info;
  expect_accurate<double>(a, run_svd<double>(a, {}, pad, &info, cluster),
                          name("double", m, n, seed));
  EXPECT_TRUE(info.converged) << name("double", m, n, seed);
  EXPECT_LE(info.off, jacobi::default_tolerance<double>(m, n, true)) << name("double", m, n, seed);
  const cpu::Matrix af = rounded<float>(a);
  expect_accurate<float>(af, run_svd<float>(af, {}, 0, nullptr, cluster),
                         name("float", m, n, seed));
}

// The zero m x n matrix through the cluster's sweeps: zero values, exactly; orthonormal vectors.
void expect_zero_accurate_in_cluster(int m, int n) {
  const cpu::Matrix zero = cpu::zeros(m, n);
  const Factors f = run_svd<double>(zero, {}, 0, nullptr, jacobi::GlobalSchedule::gram_cluster);
  for (const double value : f.s) EXPECT_EQ(value, 0) << m << " x " << n;
  const cpu::SvdAccuracy accuracy =
      cpu::svd_accuracy(zero, f.s, f.u, f.v, std::numeric_limits<double>::epsilon());
  EXPECT_EQ(accuracy.residual, 0) << m << " x " << n;
  EXPECT_LE(accuracy.u_orthogonality, threshold) << m << " x " << n;
  EXPECT_LE(accuracy.v_orthogonality, threshold) << m << " x " << n;
}

TEST_F(Svd, ClusterSweepsPassLapackTests) {
  if (const std::string why = clusters_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const Route cluster = jacobi::GlobalSchedule::gram_cluster;
  for (const auto& [m, n] : {std::pair{100, 100}, std::pair{125, 125}, std::pair{200, 100},
                             std::pair{90, 128}, std::pair{45, 30}}) {
    ASSERT_TRUE(jacobi::runs_in_one_cluster<double>(m, n, true, 1)) << m << " x " << n;
    ASSERT_TRUE(jacobi::runs_in_one_cluster<float>(m, n, true, 1)) << m << " x " << n;
    expect_random_accurate_in_cluster(m, n, 91 + m, 3);
  }
  SvdOptions values_only;
  values_only.compute_uv = false;
  ASSERT_TRUE(jacobi::runs_in_one_cluster<double>(200, 100, false, 1));
  const cpu::Matrix a = cpu::random_matrix(200, 100, 92);
  expect_values_match_lapack<double>(a, run_svd<double>(a, values_only, 0, nullptr, cluster).s,
                                     name("values double", 200, 100, 92));
  expect_graded_accurate_on(cluster, 128, 100, 93);
  const cpu::Matrix deficient = cpu::rank_deficient_matrix(100, 100, 5, 96);
  const Factors fd = run_svd<double>(deficient, {}, 0, nullptr, cluster);
  expect_accurate<double>(deficient, fd, name("rank 5 double", 100, 100, 96));
  EXPECT_LT(fd.s[5], 1e-13 * fd.s[0]);
  expect_zero_accurate_in_cluster(100, 100);
  SvdOptions one_sweep;
  one_sweep.max_sweeps = 1;
  SvdInfo info;
  run_svd<double>(cpu::random_matrix(100, 100, 94), one_sweep, 0, &info, cluster);
  EXPECT_FALSE(info.converged);
  EXPECT_EQ(info.sweeps, 1);
  EXPECT_GT(info.off, jacobi::default_tolerance<double>(100, 100, true));
}

// The same iteration in clusters of more than 8 blocks, which Hopper runs for a single double
// matrix when the kernel asks: 8 pairs of 2 blocks (256 x 256), 5 pairs of 3 (140 x 140), 4 pairs
// of 4 (500 x 100), 7 pairs of 2 (a wide 200 x 224, through its transpose); a graded matrix and a
// zero one. float goes through the route's fallback, the fused rounds.
TEST_F(Svd, ClusterSweepsInLargeClustersPassLapackTests) {
  if (const std::string why = clusters_unavailable(); !why.empty()) GTEST_SKIP() << why;
  // Whether a GPU holds such a cluster depends on its SMs per GPC (the occupancy query decides);
  // where it does not, the fused rounds take these matrices and other tests cover them.
  if (!jacobi::runs_in_one_cluster<double>(256, 256, true, 1))
    GTEST_SKIP() << "this GPU holds no cluster of 16 blocks of the kernel";
  for (const auto& [m, n] :
       {std::pair{256, 256}, std::pair{140, 140}, std::pair{500, 100}, std::pair{200, 224}}) {
    ASSERT_TRUE(jacobi::runs_in_one_cluster<double>(m, n, true, 1)) << m << " x " << n;
    // float takes the fused rounds there (faster at 256 x 256), as does a batch
    EXPECT_FALSE(jacobi::runs_in_one_cluster<float>(m, n, true, 1)) << m << " x " << n;
    EXPECT_FALSE(jacobi::runs_in_one_cluster<double>(m, n, true, 2)) << m << " x " << n;
    expect_random_accurate_in_cluster(m, n, 97 + m, 5);
  }
  expect_graded_accurate_on(jacobi::GlobalSchedule::gram_cluster, 256, 240, 98);
  expect_zero_accurate_in_cluster(256, 256);
}

// The larger cluster judges its sweeps as the host-driven ones do. At 256 x 256, the library's
// path for a double matrix where Hopper runs it, geometric and log-uniform spectra at condition
// 1/eps go to the second try after 4 sweeps and stay within LAPACK dgesvj's + 2 in all (without
// the hand-over the cluster took 28 sweeps, dgesvj 22 and 24); a clustered spectrum ends at the
// Gram products' floor (14 sweeps without it).
TEST_F(Svd, LargeClusterHandsOverStallsAndStopsAtTheGramFloor) {
  if (const std::string why = clusters_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!jacobi::runs_in_one_cluster<double>(256, 256, true, 1))
    GTEST_SKIP() << "this GPU holds no cluster of 16 blocks of the kernel";
  for (const char* matrix_class : {"mode3-eps", "mode5-eps"}) {
    const cpu::Matrix a = cpu::svd_test_matrix<double>(matrix_class, 256, 256, 1);
    const std::string what = name(matrix_class, 256, 256, 1);
    expect_handed_over_within_dgesvj(a, what);
  }
  const cpu::Matrix a = cpu::svd_test_matrix<double>("clustered", 256, 256, 1);
  SvdInfo info;
  expect_accurate<double>(a, run_svd<double>(a, {}, 0, &info), name("clustered", 256, 256, 1));
  EXPECT_TRUE(info.converged);
  EXPECT_LE(info.sweeps, 12) << "clustered 256 x 256";
}

// The same iteration small enough for racecheck: 3 pairs of 2 blocks (70 x 70) and one block
// (45 x 30).
TEST_F(Svd, ClusterSweepsInSmallClustersPassLapackTests) {
  if (const std::string why = clusters_unavailable(); !why.empty()) GTEST_SKIP() << why;
  for (const auto& [m, n] : {std::pair{70, 70}, std::pair{45, 30}}) {
    ASSERT_TRUE(jacobi::runs_in_one_cluster<double>(m, n, true, 1)) << m << " x " << n;
    const cpu::Matrix a = cpu::random_matrix(m, n, 95 + m);
    SvdInfo info;
    expect_accurate<double>(a,
                            run_svd<double>(a, {}, 0, &info, jacobi::GlobalSchedule::gram_cluster),
                            name("double", m, n, 95 + m));
    EXPECT_TRUE(info.converged) << name("double", m, n, 95 + m);
  }
}

// ---------------------------------------------------------------------------------------------
// The input classes users bring (cpu/svd_matrices.hpp: exact ranks from 0 to k - 1, duplicated,
// zero and integer columns, LAPACK's dlatms modes and ddrvbd's scaled matrices, graded columns,
// clustered values), on every route of rooflab::svd at shapes each route takes.

// Every class at one shape of one route, in type T: LAPACK's ratios, S against LAPACK, converged.
template <class T>
void expect_every_class_accurate(const RouteShape& shape, std::uint64_t seed) {
  if (!route_runs_here<T>(shape)) return;
  for (const std::string& matrix_class : structured_classes()) {
    const cpu::Matrix a = cpu::svd_test_matrix<T>(matrix_class, shape.m, shape.n, seed);
    const std::string what = std::string(shape.what) + " " +
                             (sizeof(T) == 4 ? "float " : "double ") + matrix_class + " " +
                             std::to_string(shape.m) + " x " + std::to_string(shape.n);
    SvdInfo info;
    const Factors f = run_svd<T>(a, {}, 0, &info, shape.route);
    expect_accurate<T>(a, f, what);
    EXPECT_TRUE(info.converged) << what << ": " << info.sweeps << " sweeps";
  }
}

TEST_F(Svd, LargeEveryMatrixClassPassesLapackTestsOnEveryPath) {
  std::uint64_t seed = 500;
  for (const RouteShape& shape : route_shapes) {
    expect_every_class_accurate<double>(shape, ++seed);
    expect_every_class_accurate<float>(shape, ++seed);
  }
}

// The same at sizes compute-sanitizer covers: every class on the ring, a warp, a block, a small
// cluster and a fused round, a test each, so that the sanitizers' shards share them out.
class SvdClassesAtSmallSizes : public testing::GpuTest,
                               public ::testing::WithParamInterface<RouteShape> {};

TEST_P(SvdClassesAtSmallSizes, EveryMatrixClassPassesLapackTests) {
  expect_every_class_accurate<double>(GetParam(), 600);
  expect_every_class_accurate<float>(GetParam(), 601);
}

INSTANTIATE_TEST_SUITE_P(
    Routes, SvdClassesAtSmallSizes,
    ::testing::Values(RouteShape{"thread", jacobi::Path::thread_per_matrix, 4, 3},
                      RouteShape{"ring", jacobi::Path::register_ring, 12, 9},
                      RouteShape{"warp", jacobi::Path::warp_per_matrix, 9, 12},
                      RouteShape{"block", jacobi::Path::block_per_matrix, 20, 16},
                      RouteShape{"cluster", jacobi::GlobalSchedule::gram_cluster, 45, 30},
                      RouteShape{"fused", jacobi::GlobalSchedule::gram_fused, 150, 40},
                      RouteShape{"qr_rt", jacobi::Path::qr_transposed_triangle, 40, 24}),
    [](const ::testing::TestParamInfo<RouteShape>& info) { return std::string(info.param.what); });

// The matrix that broke the SVD (an integer rank-one matrix, whose proportional columns leave pure
// rounding error behind), on every route: converged within 3 sweeps where it ran 30 without
// converging, sigma 0 beyond the first, orthonormal U.
TEST_F(Svd, LargeIntegerRankOneMatrixConvergesInAFewSweepsOnEveryPath) {
  for (const RouteShape& shape : route_shapes)
    for (const bool single : {false, true}) {
      if (single ? !route_runs_here<float>(shape) : !route_runs_here<double>(shape)) continue;
      const std::string what = std::string(shape.what) + (single ? " float " : " double ") +
                               std::to_string(shape.m) + " x " + std::to_string(shape.n);
      SvdInfo info;
      Factors f;
      if (single) {
        const cpu::Matrix a = cpu::svd_test_matrix<float>("rank-1-integer", shape.m, shape.n, 1);
        f = run_svd<float>(a, {}, 0, &info, shape.route);
        expect_accurate<float>(a, f, what);
      } else {
        const cpu::Matrix a = cpu::svd_test_matrix<double>("rank-1-integer", shape.m, shape.n, 1);
        f = run_svd<double>(a, {}, 0, &info, shape.route);
        expect_accurate<double>(a, f, what);
      }
      EXPECT_TRUE(info.converged) << what;
      EXPECT_LE(info.sweeps, 3) << what;
      for (std::size_t l = 1; l < f.s.size(); ++l)
        EXPECT_LE(f.s[l], 1e-5 * f.s[0]) << what << " sigma " << l;
    }
}

}  // namespace
}  // namespace rooflab
