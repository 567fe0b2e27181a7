#pragma once
// What the SVD's GPU tests share (svd_test.cpp, svd_batched_test.cpp, svd_accuracy_test.cpp):
// rooflab::svd on a host matrix, through its dispatch or on one internal route, its outputs
// poisoned with NaN first and copied back in double; LAPACK's checks of the factors; the input
// classes; and the shapes at which each route is exercised.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <iostream>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "core/device_features.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::testing {

struct Factors {
  std::vector<double> s;
  cpu::Matrix u, v;
};

inline constexpr double threshold = 35;  // LAPACK's bound on its SVD test ratios

// The matrix as type T holds it, back in double: the reference must see what the GPU sees.
template <class T>
cpu::Matrix rounded(cpu::Matrix a) {
  for (double& value : a.values) value = double(T(value));
  return a;
}

// S against LAPACK dgesvd, in units of ulp * s_max * max(m, n) (exactly, for a zero matrix). Not
// dgesvj: it stops unconverged on some rank-deficient matrices (the integer rank-one class), and
// this bound asks only for what bidiagonalization gives.
template <class T>
void expect_values_match_lapack(const cpu::Matrix& a, const std::vector<double>& s,
                                const std::string& what) {
  const std::vector<double> reference = cpu::lapack_bidiagonal_singular_values(a);
  ASSERT_EQ(reference.size(), s.size()) << what;
  double worst = 0;
  for (std::size_t l = 0; l < reference.size(); ++l)
    worst = std::max(worst, std::abs(s[l] - reference[l]));
  const double scale = reference[0] * std::max(a.m, a.n) * std::numeric_limits<T>::epsilon();
  if (reference[0] > 0)
    EXPECT_LE(worst / scale, threshold) << what;
  else
    EXPECT_EQ(worst, 0) << what;
}

// ddrvbd's ratios, S descending and non-negative, and S against LAPACK dgesvj.
template <class T>
void expect_accurate(const cpu::Matrix& a, const Factors& f, const std::string& what) {
  const cpu::SvdAccuracy accuracy =
      cpu::svd_accuracy(a, f.s, f.u, f.v, std::numeric_limits<T>::epsilon());
  EXPECT_TRUE(accuracy.s_descending_nonnegative) << what;
  EXPECT_LE(accuracy.residual, threshold) << what;
  EXPECT_LE(accuracy.u_orthogonality, threshold) << what;
  EXPECT_LE(accuracy.v_orthogonality, threshold) << what;
  expect_values_match_lapack<T>(a, f.s, what);
}

inline std::string name(const std::string& kind, int m, int n, std::uint64_t seed) {
  return kind + " " + std::to_string(m) + " x " + std::to_string(n) + " seed " +
         std::to_string(seed);
}

// Every class but the batch-only "mixed". The geometric and log-uniform spectra (dlatms modes 3
// and 5) are measured by the benchmark, not here: the ring of sorted columns needs more sweeps
// there than the other classes (docs/svd.md, limits).
inline std::vector<std::string> structured_classes() {
  std::vector<std::string> names;
  for (const cpu::SvdMatrixClass& c : cpu::svd_matrix_classes()) {
    const std::string name = c.name;
    if (name != "mixed" && name.rfind("mode3", 0) != 0 && name.rfind("mode5", 0) != 0)
      names.push_back(name);
  }
  return names;
}

// The tests on arrival's matrices (svd_test.cpp, svd_batched_test.cpp): a diagonal of 1 + j scaled
// by 2^-(j % 16), columns orthogonal with norms over 16 binades; and columns each orthogonal to the
// next but not to the one two along, a_j = e_j + e_{j+2} (the columns past m - 3 zero), which pass
// the neighbouring columns' test and fail the whole one.
inline cpu::Matrix scaled_diagonal(int m, int n) {
  cpu::Matrix a = cpu::zeros(m, n);
  for (int j = 0; j < std::min(m, n); ++j) a(j, j) = std::ldexp(1.0 + j, -(j % 16));
  return a;
}
inline cpu::Matrix orthogonal_neighbours(int m, int n) {
  cpu::Matrix a = cpu::zeros(m, n);
  for (int j = 0; j < std::min(m - 2, n); ++j) a(j, j) = a(j + 2, j) = 1;
  return a;
}

// One internal path of rooflab::svd, or one schedule of its global-memory path.
using Route = std::variant<jacobi::Path, jacobi::GlobalSchedule>;

// rooflab::svd's work on one route instead of its dispatch; the device's status comes back whole,
// bad_input included.
template <class T>
jacobi::MatrixStatus svd_on_path(const Route& route, const T* A, int m, int n, int lda, T* S, T* U,
                                 int ldu, T* V, int ldv, const SvdOptions& options) {
  DeviceBuffer<jacobi::MatrixStatus> status(1);
  status.fill_bytes(0xFF);
  const jacobi::Problem<T> problem =
      jacobi::single_matrix_problem("svd", A, m, n, lda, S, U, ldu, V, ldv, options);
  const jacobi::Report report{status.data(), nullptr};
  if (const auto* schedule = std::get_if<jacobi::GlobalSchedule>(&route))
    jacobi::run_global(problem, *schedule, report, nullptr);
  else
    jacobi::run_path(problem, std::get<jacobi::Path>(route), report, nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return status.download()[0];
}

// Runs rooflab::svd<T> on `a` (or its work on one internal route) with leading dimensions padded
// by `pad`; checks that A and the padding of U and V are untouched.
template <class T>
Factors run_svd(const cpu::Matrix& a, const SvdOptions& options = {}, int pad = 0,
                SvdInfo* info_out = nullptr, std::optional<Route> path = std::nullopt) {
  const int m = a.m, n = a.n, k = std::min(m, n);
  const int lda = m + pad, ldu = m + pad, ldv = n + pad;
  std::vector<T> host_a(std::size_t(lda) * n, T(7));  // 7 in the padding
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) host_a[i + std::size_t(j) * lda] = T(a(i, j));
  DeviceBuffer<T> A(host_a), S(k), U(std::size_t(ldu) * k), V(std::size_t(ldv) * k);
  S.fill_bytes(0xFF);
  U.fill_bytes(0xFF);
  V.fill_bytes(0xFF);
  T* const u_out = options.compute_uv ? U.data() : nullptr;
  T* const v_out = options.compute_uv ? V.data() : nullptr;
  SvdInfo info;
  if (path) {
    const jacobi::MatrixStatus status =
        svd_on_path<T>(*path, A.data(), m, n, lda, S.data(), u_out, ldu, v_out, ldv, options);
    EXPECT_EQ(status.bad_input, 0);
    info = jacobi::to_info(status);
  } else {
    info = svd<T>(A.data(), m, n, lda, S.data(), u_out, ldu, v_out, ldv, options);
  }
  if (info_out) *info_out = info;
  EXPECT_TRUE(A.download() == host_a) << "A was modified";
  Factors f{std::vector<double>(k), cpu::zeros(m, k), cpu::zeros(n, k)};
  const std::vector<T> s = S.download(), u = U.download(), v = V.download();
  for (int l = 0; l < k; ++l) f.s[l] = s[l];
  if (!options.compute_uv) return f;
  for (int l = 0; l < k; ++l) {
    for (int i = 0; i < ldu; ++i) {
      const T value = u[i + std::size_t(l) * ldu];
      if (i < m)
        f.u(i, l) = value;
      else
        EXPECT_TRUE(std::isnan(value)) << "U padding written at " << i << ", " << l;
    }
    for (int i = 0; i < ldv; ++i) {
      const T value = v[i + std::size_t(l) * ldv];
      if (i < n)
        f.v(i, l) = value;
      else
        EXPECT_TRUE(std::isnan(value)) << "V padding written at " << i << ", " << l;
    }
  }
  return f;
}

struct RouteShape {
  const char* what;
  Route route;
  int m, n;
};
// How GoogleTest names a shape in parameterized tests' listings (not as raw bytes).
inline void PrintTo(const RouteShape& shape, std::ostream* out) {
  *out << shape.what << " " << shape.m << " x " << shape.n;
}

// The shapes: a thread's slice of shared memory (the smallest matrices), the register ring (at
// most 64 x 64), one warp's and one block's shared memory, the
// Gram schedule in one cluster, in fused rounds and in three kernels a round, and QR
// preconditioning with R in the ring and in the Gram schedule and on R^T (its columns sorted
// first); square, tall and wide.
inline const RouteShape route_shapes[] = {
    {"thread", jacobi::Path::thread_per_matrix, 4, 4},
    {"thread", jacobi::Path::thread_per_matrix, 2, 3},
    {"ring", jacobi::Path::register_ring, 40, 40},
    {"ring", jacobi::Path::register_ring, 64, 33},
    {"ring", jacobi::Path::register_ring, 17, 50},
    {"warp", jacobi::Path::warp_per_matrix, 24, 20},
    {"block", jacobi::Path::block_per_matrix, 90, 70},
    {"block", jacobi::Path::block_per_matrix, 70, 90},
    {"cluster", jacobi::GlobalSchedule::gram_cluster, 100, 100},
    {"cluster", jacobi::GlobalSchedule::gram_cluster, 90, 128},
    {"cluster", jacobi::GlobalSchedule::gram_cluster, 256, 256},  // 16 blocks where offered
    {"fused", jacobi::GlobalSchedule::gram_fused, 200, 150},
    {"gram", jacobi::GlobalSchedule::gram, 150, 200},
    {"qr", jacobi::Path::qr_preconditioned, 400, 40},
    {"qr", jacobi::Path::qr_preconditioned, 1300, 100},
    {"qr on R^T", jacobi::Path::qr_transposed_triangle, 100, 100},
    {"qr on R^T", jacobi::Path::qr_transposed_triangle, 300, 100},
    {"qr on R^T", jacobi::Path::qr_transposed_triangle, 80, 120},
};

// Why `route` cannot take an m x n matrix of T on this device (empty when it can). The on-chip
// routes need the matrix in the shared memory the dispatch plans for, which older GPUs (and
// ROOFLAB_TREAT_AS_SM) have less of: the tests leave such a shape out there, as the dispatch
// would. The Gram schedules and QR preconditioning take any shape.
template <class T>
std::string route_unavailable(const Route& route, int m, int n, bool uv = true) {
  const auto* path = std::get_if<jacobi::Path>(&route);
  if (path == nullptr || *path == jacobi::Path::qr_preconditioned ||
      *path == jacobi::Path::qr_transposed_triangle || *path == jacobi::Path::gram)
    return {};
  const bool fits = *path == jacobi::Path::register_ring ? jacobi::fits_in_registers<T>(m, n, uv)
                    : *path == jacobi::Path::block_per_matrix ? jacobi::fits_on_chip<T>(m, n, uv)
                    : *path == jacobi::Path::thread_per_matrix
                        ? jacobi::fits_in_a_thread<T>(m, n, uv)
                        : jacobi::on_chip_layout(m, n, sizeof(T), uv, false).bytes <=
                              jacobi::shared_memory_optin();
  if (fits) return {};
  const DeviceFeatures& features = current_device_features();
  return std::to_string(m) + " x " + std::to_string(n) + " does not fit the " +
         std::to_string(features.shared_per_block / 1024) +
         " KB of shared memory a block has on sm_" + std::to_string(features.arch);
}

// Whether `shape` runs on this device; where it does not, says so in the test's output.
template <class T>
bool route_runs_here(const RouteShape& shape) {
  const std::string why = route_unavailable<T>(shape.route, shape.m, shape.n);
  if (!why.empty())
    std::cout << "left out: " << shape.what << " " << (sizeof(T) == 4 ? "float" : "double") << ", "
              << why << "\n";
  return why.empty();
}

// Why the test needs thread-block clusters and does not have them (empty when it does).
inline std::string clusters_unavailable() {
  const DeviceFeatures& features = current_device_features();
  if (features.clusters()) return {};
  return "thread-block clusters need sm_90; the dispatch plans here for sm_" +
         std::to_string(features.arch);
}

}  // namespace rooflab::testing
