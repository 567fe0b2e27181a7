// High relative accuracy. One-sided Jacobi only ever rotates columns of A, so
// for a column-graded A = B D (D diagonal, B well conditioned) it computes every singular value,
// however small, to a relative error of a small multiple of n eps kappa(B), kappa(B) the condition
// of B with its columns scaled to unit norm (Demmel and Veselic 1992). Bidiagonalization (gesvd)
// and the polar decomposition (gesvdp) are accurate to eps ||A|| only.
//
// The bound held here, for every singular value, the smallest included:
//   |s_i - r_i| / r_i <= 100 n eps kappa(B),
// r from LAPACK dgejsv on the host (cpu::lapack_high_accuracy_singular_values, in double, on the
// matrix exactly as T holds it), kappa(B) from A's columns scaled to unit norm
// (cpu::column_scaled_condition), n the columns of A, eps T's epsilon. The matrices: the "graded"
// class of cpu/svd_matrices.hpp (column scales falling from 1 to 1e-30 in double, 1e-12 in float)
// and the same with its columns in reverse order (rising), which bidiagonalization handles worse.
//
// Every route keeps it for tall and square matrices: the ring, warp and block rotate A's own
// columns (Demmel and Veselic's setting); the Gram routes diagonalize 32 x 32 Gram matrices that
// are themselves graded; QR preconditioning perturbs each column by eps times its own norm. A wide
// A is factored through A^T, whose rows carry the grading: there the values below about
// eps sigma_max keep only absolute accuracy (Graded::allowance), as svd.hpp says.
// The bound is loose: at the square shapes B is a random square matrix (kappa(B) up to 7e4 at
// these seeds), so in float it exceeds 1 (vacuous) at 256 x 256; each case prints its errors.
//
// The table of docs/svd.md (the smallest singular value's relative error of rooflab and cuSOLVER's
// gesvdj, gesvdp and gesvd) comes from SvdAccuracy.LargeGradedSmallestValueBesideCusolver: it
// prints the table, and writes it with the device and the commit to the file that
// ROOFLAB_SVD_ACCURACY_OUT names. Tests named *Large* are too slow for compute-sanitizer.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/environment.hpp"
#include "core/device_info.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "gpu_test.hpp"
#include "rooflab/device_buffer.hpp"
#include "svd/cusolver_svd.hpp"
#include "svd/jacobi.hpp"
#include "svd_test_support.hpp"

namespace rooflab {
namespace {

using testing::route_runs_here;
using testing::route_shapes;
using testing::RouteShape;
using testing::run_svd;

class SvdAccuracy : public testing::GpuTest {};

// Column scales falling from 1 (the "graded" class) or rising to 1 (its columns reversed).
enum class Grading { falling, rising };

const char* grading_name(Grading grading) {
  return grading == Grading::falling ? "falling" : "rising";
}

template <class T>
const char* type_name() {
  return sizeof(T) == 4 ? "float" : "double";
}

template <class T>
cpu::Matrix graded(int m, int n, std::uint64_t seed, Grading grading) {
  const cpu::Matrix a = cpu::svd_test_matrix<T>("graded", m, n, seed);
  if (grading == Grading::falling) return a;
  cpu::Matrix reversed = cpu::zeros(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) reversed(i, j) = a(i, n - 1 - j);
  return reversed;
}

const char* path_name(jacobi::Path path) {
  switch (path) {
    case jacobi::Path::thread_per_matrix: return "thread";
    case jacobi::Path::warp_per_matrix: return "warp";
    case jacobi::Path::block_per_matrix: return "block";
    case jacobi::Path::register_ring: return "ring";
    case jacobi::Path::gram: return "gram";
    case jacobi::Path::qr_preconditioned: return "qr";
    case jacobi::Path::qr_transposed_triangle: return "qr on R^T";
  }
  return "?";
}

// The matrix, its reference values and the bound it is held to.
struct Graded {
  cpu::Matrix a;
  std::vector<double> reference;  // dgejsv's, descending
  double kappa = 0;               // kappa(B), B = A with unit columns
  double bound = 0;               // 100 n eps kappa(B)
  // What is subtracted from each error before it is compared with bound x r_i: 0 for a tall or
  // square A; for a wide one 100 n eps sigma_max. rooflab factors a wide A through A^T, whose rows
  // carry the grading, and one-sided Jacobi keeps relative accuracy for column scaling only (as
  // dgesvj does; dgejsv pivots rows to keep it): values below about eps sigma_max come out with
  // an absolute error of that size, or as 0 (svd.hpp says so).
  double allowance = 0;
};

template <class T>
Graded graded_problem(int m, int n, std::uint64_t seed, Grading grading) {
  Graded g;
  g.a = graded<T>(m, n, seed, grading);
  g.reference = cpu::lapack_high_accuracy_singular_values(g.a);
  g.kappa = cpu::column_scaled_condition(g.a);
  g.bound = 100.0 * n * std::numeric_limits<T>::epsilon() * g.kappa;
  if (m < n) g.allowance = 100.0 * n * std::numeric_limits<T>::epsilon() * g.reference.front();
  return g;
}

// |s_i - r_i| / r_i: the worst over i and that of the smallest value. A value that is not finite
// (an unwritten output keeps its NaN poison) counts as infinitely wrong.
struct RelativeErrors {
  double worst = 0;
  int worst_index = 0;
  double smallest = 0;
};

RelativeErrors relative_errors(const std::vector<double>& s, const std::vector<double>& reference,
                               double allowance = 0) {
  RelativeErrors e;
  if (s.size() != reference.size() || reference.empty()) return {INFINITY, 0, INFINITY};
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double error =
        std::isfinite(s[i])
            ? std::max(0.0, std::abs(s[i] - reference[i]) - allowance) / reference[i]
            : INFINITY;
    if (!(error <= e.worst)) {  // NaN (a zero reference) counts as worse too
      e.worst = error;
      e.worst_index = int(i);
    }
  }
  e.smallest =
      std::isfinite(s.back()) ? std::abs(s.back() - reference.back()) / reference.back() : INFINITY;
  return e;
}

// Every value of s within the bound; one line with the errors either way (the margins are the
// point: the bound is loose).
void expect_within_bound(const Graded& g, const std::vector<double>& s, const std::string& what) {
  ASSERT_EQ(s.size(), g.reference.size()) << what;
  const RelativeErrors e = relative_errors(s, g.reference, g.allowance);
  if (g.allowance > 0)
    std::cout << what << ": wide, errors less an allowance of " << g.allowance << "\n";
  std::cout << what << ": worst relative error " << e.worst << " (sigma_" << e.worst_index
            << "), smallest sigma's " << e.smallest << ", bound " << g.bound
            << (g.bound >= 1 ? " (vacuous)" : "") << " (kappa(B) " << g.kappa << ")\n";
  EXPECT_LE(e.worst, g.bound) << what << ": sigma_" << e.worst_index << " = " << s[e.worst_index]
                              << " against dgejsv's " << g.reference[e.worst_index]
                              << " (values from " << g.reference.front() << " to "
                              << g.reference.back() << "); relative error " << e.worst
                              << " exceeds 100 n eps kappa(B) = " << g.bound
                              << ", kappa(B) = " << g.kappa
                              << "; the smallest value's relative error is " << e.smallest;
}

// Through the dispatch: small square, tall and wide matrices (the register ring, one block's shared
// memory), the Gram schedule (100 x 100) and QR preconditioning (300 x 40 and its transpose), in
// both types and both column orders.
template <class T>
void expect_dispatch_accurate(Grading grading, std::uint64_t seed) {
  for (const auto& [m, n] : {std::pair{25, 25}, std::pair{100, 100}, std::pair{100, 25},
                             std::pair{25, 100}, std::pair{300, 40}, std::pair{40, 300}}) {
    const Graded g = graded_problem<T>(m, n, seed, grading);
    const std::string what = fmt::format("{} {} graded {} x {} seed {}, dispatch ({})",
                                         grading_name(grading), type_name<T>(), m, n, seed,
                                         path_name(jacobi::production_path<T>(m, n, 1, true)));
    SvdInfo info;
    expect_within_bound(g, run_svd<T>(g.a, {}, 0, &info).s, what);
    EXPECT_TRUE(info.converged) << what;
  }
}

TEST_F(SvdAccuracy, GradedMatrixKeepsEverySingularValueThroughTheDispatch) {
  expect_dispatch_accurate<double>(Grading::falling, 1);
  expect_dispatch_accurate<float>(Grading::falling, 2);
}

// The class's columns reversed: one-sided Jacobi does not care about their order, bidiagonalization
// does, and so may the QR of a wide matrix's row-graded transpose (no row pivoting).
TEST_F(SvdAccuracy, RisingColumnScalesKeepEverySingularValueThroughTheDispatch) {
  expect_dispatch_accurate<double>(Grading::rising, 3);
  expect_dispatch_accurate<float>(Grading::rising, 4);
}

// Every route of rooflab::svd on its own (svd_test_support.hpp's route_shapes: the ring, a warp, a
// block, the Gram schedule in one cluster, in fused rounds and in three kernels a round, and QR
// preconditioning with R in the ring and in the Gram schedule and on R^T), both types, both column
// orders.
template <class T>
void expect_route_accurate(const RouteShape& shape, Grading grading, std::uint64_t seed) {
  if (!route_runs_here<T>(shape)) return;
  const Graded g = graded_problem<T>(shape.m, shape.n, seed, grading);
  const std::string what =
      fmt::format("{} {} graded {} x {} seed {}, route {}", grading_name(grading), type_name<T>(),
                  shape.m, shape.n, seed, shape.what);
  SvdInfo info;
  expect_within_bound(g, run_svd<T>(g.a, {}, 0, &info, shape.route).s, what);
  EXPECT_TRUE(info.converged) << what;
}

TEST_F(SvdAccuracy, LargeGradedMatrixKeepsEverySingularValueOnEveryRoute) {
  std::uint64_t seed = 10;
  for (const RouteShape& shape : route_shapes)
    for (const Grading grading : {Grading::falling, Grading::rising}) {
      expect_route_accurate<double>(shape, grading, ++seed);
      expect_route_accurate<float>(shape, grading, ++seed);
    }
}

// ---------------------------------------------------------------------------------------------
// The side-by-side table: the smallest singular value's relative error (and the worst over all
// values) of rooflab::svd and cuSOLVER's gesvdj, gesvdp and gesvd, on the same graded n x n
// matrices. rooflab is held to the bound; the vendors' errors are reported, not required.

// One method's singular values of `a`, S poisoned with NaN first, or the error it threw.
struct MethodRun {
  std::vector<double> s;
  std::string error;
};

template <class T>
using VendorSvd = std::function<void(const T* A, int m, int n, T* S, T* U, T* V)>;

template <class T>
MethodRun run_vendor(const cpu::Matrix& a, const VendorSvd<T>& solve) {
  const int m = a.m, n = a.n, k = std::min(m, n);
  std::vector<T> host(a.values.size());
  for (std::size_t e = 0; e < host.size(); ++e) host[e] = T(a.values[e]);
  DeviceBuffer<T> A(host), S(k), U(std::size_t(m) * k), V(std::size_t(n) * k);
  S.fill_bytes(0xFF);
  U.fill_bytes(0xFF);
  V.fill_bytes(0xFF);
  MethodRun run;
  try {
    solve(A.data(), m, n, S.data(), U.data(), V.data());
    if (cudaDeviceSynchronize() != cudaSuccess) run.error = "CUDA error after the call";
  } catch (const std::exception& error) {
    run.error = error.what();
  }
  for (const T value : S.download()) run.s.push_back(double(value));
  return run;
}

nlohmann::json errors_json(const MethodRun& run, const std::vector<double>& reference) {
  if (!run.error.empty()) return {{"error", run.error}};
  const RelativeErrors e = relative_errors(run.s, reference);
  return {{"smallest_relative_error", e.smallest},
          {"worst_relative_error", e.worst},
          {"worst_index", e.worst_index},
          {"smallest_value", run.s.back()}};
}

std::string errors_cell(const nlohmann::json& errors) {
  if (errors.contains("error")) return "error";
  const auto number = [](const nlohmann::json& value) {
    return value.is_null() ? std::string("NaN") : fmt::format("{:.1e}", value.get<double>());
  };
  return number(errors.at("smallest_relative_error")) + " (" +
         number(errors.at("worst_relative_error")) + ")";
}

template <class T>
void add_table_rows(int n, Grading grading, std::uint64_t seed, nlohmann::json& rows) {
  const Graded g = graded_problem<T>(n, n, seed, grading);
  const std::string what = fmt::format("{} {} graded {} x {} seed {}", grading_name(grading),
                                       type_name<T>(), n, n, seed);
  const testing::Factors ours = run_svd<T>(g.a);
  expect_within_bound(g, ours.s, what + ", rooflab::svd");
  const MethodRun gesvdj = run_vendor<T>(g.a, [](const T* A, int m, int n_, T* S, T* U, T* V) {
    bench::cusolver_gesvdj_loop<T>(A, m, n_, 1, S, U, V, nullptr);
  });
  const MethodRun gesvdp = run_vendor<T>(g.a, [](const T* A, int m, int n_, T* S, T* U, T* V) {
    bench::cusolver_gesvdp<T>(A, m, n_, S, U, V, nullptr);
  });
  const MethodRun gesvd = run_vendor<T>(g.a, [](const T* A, int m, int n_, T* S, T* U, T* V) {
    bench::cusolver_gesvd<T>(A, m, n_, S, U, V, nullptr);
  });
  rows.push_back({{"type", type_name<T>()},
                  {"m", n},
                  {"n", n},
                  {"column_scales", grading_name(grading)},
                  {"seed", seed},
                  {"kappa_b", g.kappa},
                  {"bound", g.bound},
                  {"largest_value", g.reference.front()},
                  {"smallest_value", g.reference.back()},
                  {"rooflab_path", path_name(jacobi::production_path<T>(n, n, 1, true))},
                  {"methods",
                   {{"rooflab-svd", errors_json(MethodRun{ours.s, {}}, g.reference)},
                    {"cusolver-gesvdj", errors_json(gesvdj, g.reference)},
                    {"cusolver-gesvdp", errors_json(gesvdp, g.reference)},
                    {"cusolver-gesvd", errors_json(gesvd, g.reference)}}}});
}

std::string markdown_table(const nlohmann::json& rows) {
  std::string table =
      "| type | n | column scales | kappa(B) | smallest sigma | 100 n eps kappa(B) | rooflab-svd | "
      "gesvdj | "
      "gesvdp | gesvd |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& row : rows) {
    const auto& methods = row.at("methods");
    table += fmt::format(
        "| {} | {} | {} | {:.0f} | {:.1e} | {:.1e} | {} | {} | {} | {} |\n",
        row.at("type").get<std::string>(), row.at("n").get<int>(),
        row.at("column_scales").get<std::string>(), row.at("kappa_b").get<double>(),
        row.at("smallest_value").get<double>(), row.at("bound").get<double>(),
        errors_cell(methods.at("rooflab-svd")), errors_cell(methods.at("cusolver-gesvdj")),
        errors_cell(methods.at("cusolver-gesvdp")), errors_cell(methods.at("cusolver-gesvd")));
  }
  return table;
}

TEST_F(SvdAccuracy, LargeGradedSmallestValueBesideCusolver) {
  nlohmann::json rows = nlohmann::json::array();
  std::uint64_t seed = 100;
  for (const Grading grading : {Grading::falling, Grading::rising})
    for (const int n : {25, 100, 256}) {
      // One B for both types: the float row is the double row's matrix over 12 decades, rounded.
      add_table_rows<double>(n, grading, ++seed, rows);
      add_table_rows<float>(n, grading, seed, rows);
    }
  const std::string table =
      "Relative error of the smallest singular value (in parentheses: the worst over all values) "
      "against LAPACK dgejsv, graded n x n matrices A = B D:\n\n" +
      markdown_table(rows);
  std::cout << "\n" << table << "\n";

  const char* out = std::getenv("ROOFLAB_SVD_ACCURACY_OUT");
  if (out == nullptr || *out == '\0') return;
  const DeviceInfo device = query_device();
  const nlohmann::json results = {
      {"rooflab", bench::build_version()},
      {"environment",
       {{"device",
         {{"name", device.name},
          {"compute_capability", fmt::format("{}.{}", device.cc_major, device.cc_minor)},
          {"sm_count", device.sm_count},
          {"driver", cuda_version_string(device.driver_version)},
          {"runtime", cuda_version_string(device.runtime_version)}}},
        {"commit", bench::build_commit()},
        {"date", bench::utc_now_iso8601()}}},
      {"what",
       "relative errors |s_i - r_i| / r_i of the singular values of graded n x n matrices against "
       "LAPACK dgejsv "
       "(tests/gpu/svd_accuracy_test.cpp, SvdAccuracy.LargeGradedSmallestValueBesideCusolver)"},
      {"rows", rows},
      {"markdown", table}};
  std::ofstream file(out);
  file << results.dump(2) << "\n";
  EXPECT_TRUE(file.good()) << "could not write " << out;
  std::cout << "written to " << out << "\n";
}

}  // namespace
}  // namespace rooflab
