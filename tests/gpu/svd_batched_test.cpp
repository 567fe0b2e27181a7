// rooflab::svd_batched against LAPACK's SVD tests (ddrvbd's ratios, <= 35 ulps) and LAPACK's
// singular values, through the public call and each internal path: batches mixing random, graded,
// rank-deficient and zero matrices, every input class in one batch, and the batch's awkward cases.
// Tests named *Large* are too slow for compute-sanitizer.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "bench/random.hpp"
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

using testing::expect_accurate;
using testing::Factors;
using testing::name;
using testing::orthogonal_neighbours;
using testing::rounded;
using testing::Route;
using testing::route_runs_here;
using testing::RouteShape;
using testing::run_svd;
using testing::scaled_diagonal;
using testing::structured_classes;

class SvdBatched : public testing::GpuTest {};

// A batch mixing random, graded, rank-deficient and zero matrices.
std::vector<cpu::Matrix> mixed_batch(int m, int n, int batch, std::uint64_t seed) {
  std::vector<cpu::Matrix> matrices;
  for (int b = 0; b < batch; ++b) {
    switch (b % 4) {
      case 0: matrices.push_back(cpu::random_matrix(m, n, seed + b)); break;
      case 1: matrices.push_back(cpu::graded_matrix(m, n, seed + b, 6)); break;
      case 2:
        matrices.push_back(
            cpu::rank_deficient_matrix(m, n, std::max(1, std::min(m, n) / 3), seed + b));
        break;
      default: matrices.push_back(cpu::zeros(m, n)); break;
    }
  }
  return matrices;
}

template <class T>
struct BatchRun {
  std::vector<T> s, u, v;
};

// Packs the batch, runs `solve` (the public call or one internal path), returns the outputs.
template <class T>
BatchRun<T> run_batch(const std::vector<cpu::Matrix>& matrices,
                      const std::function<void(const T*, int, int, int, T*, T*, T*)>& solve) {
  const int m = matrices[0].m, n = matrices[0].n, k = std::min(m, n), batch = int(matrices.size());
  std::vector<T> packed;
  for (const cpu::Matrix& a : matrices)
    for (const double value : a.values) packed.push_back(T(value));
  DeviceBuffer<T> A(packed), S(std::size_t(k) * batch), U(std::size_t(m) * k * batch),
      V(std::size_t(n) * k * batch);
  S.fill_bytes(0xFF);
  U.fill_bytes(0xFF);
  V.fill_bytes(0xFF);
  solve(A.data(), m, n, batch, S.data(), U.data(), V.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Bitwise: a NaN planted in A never compares equal to itself.
  const std::vector<T> after = A.download();
  EXPECT_EQ(std::memcmp(after.data(), packed.data(), packed.size() * sizeof(T)), 0)
      << "A was modified";
  return BatchRun<T>{S.download(), U.download(), V.download()};
}

template <class T>
Factors factors_of(const BatchRun<T>& run, int m, int n, int b) {
  const int k = std::min(m, n);
  Factors f{std::vector<double>(k), cpu::zeros(m, k), cpu::zeros(n, k)};
  for (int l = 0; l < k; ++l) f.s[l] = run.s[std::size_t(b) * k + l];
  for (std::size_t e = 0; e < f.u.values.size(); ++e)
    f.u.values[e] = run.u[std::size_t(b) * m * k + e];
  for (std::size_t e = 0; e < f.v.values.size(); ++e)
    f.v.values[e] = run.v[std::size_t(b) * n * k + e];
  return f;
}

// The public call.
template <class T>
void public_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V) {
  svd_batched<T>(A, m, n, batch, S, U, V);
}

// A batched route: the public call (no route), one of the dispatch's paths (run_path) or one
// global schedule (run_global), named by the dispatch's enums.
using BatchedRoute = std::optional<Route>;
const BatchedRoute public_call = std::nullopt;
const BatchedRoute thread_per_matrix = Route{jacobi::Path::thread_per_matrix};
const BatchedRoute warp_per_matrix = Route{jacobi::Path::warp_per_matrix};
const BatchedRoute block_per_matrix = Route{jacobi::Path::block_per_matrix};
const BatchedRoute register_ring = Route{jacobi::Path::register_ring};
const BatchedRoute global_rounds = Route{jacobi::GlobalSchedule::launch_per_round};
const BatchedRoute blocked = Route{jacobi::GlobalSchedule::blocked};
const BatchedRoute blocked_persistent = Route{jacobi::GlobalSchedule::blocked_persistent};
const BatchedRoute gram_rounds = Route{jacobi::GlobalSchedule::gram};
const BatchedRoute gram_cluster = Route{jacobi::GlobalSchedule::gram_cluster};

std::string route_name(const BatchedRoute& route) {
  if (!route) return "public call";
  if (const auto* path = std::get_if<jacobi::Path>(&*route)) {
    switch (*path) {
      case jacobi::Path::thread_per_matrix: return "thread_per_matrix";
      case jacobi::Path::warp_per_matrix: return "warp_per_matrix";
      case jacobi::Path::block_per_matrix: return "block_per_matrix";
      case jacobi::Path::register_ring: return "register_ring";
      case jacobi::Path::gram: return "gram";
      case jacobi::Path::qr_preconditioned: return "qr_preconditioned";
      case jacobi::Path::qr_transposed_triangle: return "qr_transposed_triangle";
    }
  }
  switch (std::get<jacobi::GlobalSchedule>(*route)) {
    case jacobi::GlobalSchedule::launch_per_round: return "launch_per_round";
    case jacobi::GlobalSchedule::launch_per_sweep: return "launch_per_sweep";
    case jacobi::GlobalSchedule::blocked: return "blocked";
    case jacobi::GlobalSchedule::blocked_persistent: return "blocked_persistent";
    case jacobi::GlobalSchedule::gram: return "gram rounds";
    case jacobi::GlobalSchedule::gram_fused: return "gram_fused";
    case jacobi::GlobalSchedule::gram_cluster: return "gram_cluster";
  }
  return "?";
}

// One internal route over a packed batch, every matrix required to converge; each matrix's status
// into `statuses` where given.
template <class T>
std::function<void(const T*, int, int, int, T*, T*, T*)> internal_route(
    const Route& route, std::vector<jacobi::MatrixStatus>* statuses = nullptr) {
  return [route, statuses](const T* A, int m, int n, int batch, T* S, T* U, T* V) {
    DeviceBuffer<jacobi::MatrixStatus> status(batch);
    DeviceBuffer<jacobi::BatchSummary> summary(1);
    summary.fill_bytes(0);
    jacobi::Problem<T> P = jacobi::packed_batch_problem(A, m, n, batch, S, U, V);
    P.tol = jacobi::default_tolerance<T>(m, n, true);
    P.max_sweeps = 30;
    const jacobi::Report report{status.data(), summary.data()};
    if (const auto* schedule = std::get_if<jacobi::GlobalSchedule>(&route))
      jacobi::run_global(P, *schedule, report, nullptr);
    else
      jacobi::run_path(P, std::get<jacobi::Path>(route), report, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<jacobi::MatrixStatus> downloaded = status.download();
    for (const jacobi::MatrixStatus& s : downloaded) EXPECT_EQ(s.converged, 1);
    if (statuses) *statuses = downloaded;
  };
}

// Whether `route` takes m x n matrices of T here; the on-chip paths need the shared memory the
// device has (svd_test_support.hpp's route_unavailable).
template <class T>
bool batched_route_runs_here(const BatchedRoute& route, int m, int n) {
  if (!route || !std::holds_alternative<jacobi::Path>(*route)) return true;
  const jacobi::Path path = std::get<jacobi::Path>(*route);
  const char* what = path == jacobi::Path::thread_per_matrix  ? "thread"
                     : path == jacobi::Path::warp_per_matrix  ? "warp"
                     : path == jacobi::Path::block_per_matrix ? "block"
                                                              : "ring";
  return route_runs_here<T>(RouteShape{what, path, m, n});
}

template <class T>
auto run_batch_on(const std::vector<cpu::Matrix>& matrices, const BatchedRoute& route) {
  return route ? run_batch<T>(matrices, internal_route<T>(*route))
               : run_batch<T>(matrices, public_batched<T>);
}

template <class T>
void expect_mixed_batch_accurate(int m, int n, int batch, const BatchedRoute& route,
                                 std::uint64_t seed) {
  if (!batched_route_runs_here<T>(route, m, n)) return;
  std::vector<cpu::Matrix> matrices = mixed_batch(m, n, batch, seed);
  for (cpu::Matrix& a : matrices) a = rounded<T>(a);
  const auto run = run_batch_on<T>(matrices, route);
  for (int b = 0; b < batch; ++b)
    expect_accurate<T>(matrices[b], factors_of(run, m, n, b),
                       std::string(sizeof(T) == 4 ? "float" : "double") + " " + route_name(route) +
                           " matrix " + std::to_string(b) + " of " + name("batch", m, n, seed));
}

TEST_F(SvdBatched, MixedBatchPassesLapackTestsOnEveryPath) {
  // 13 x 9: odd leading dimensions, where the Gram schedule copies element by element.
  const std::pair<int, int> small[] = {{8, 8},   {16, 16}, {32, 32}, {12, 5}, {5, 12}, {1, 4},
                                       {33, 31}, {13, 9},  {3, 3},   {3, 2},  {2, 3},  {4, 4}};
  for (const auto& [m, n] : small)
    for (const BatchedRoute& route :
         {public_call, thread_per_matrix, warp_per_matrix, block_per_matrix, global_rounds, blocked,
          blocked_persistent, register_ring, gram_rounds}) {
      expect_mixed_batch_accurate<float>(m, n, 8, route, 1000 + m * 7 + n);
      expect_mixed_batch_accurate<double>(m, n, 8, route, 2000 + m * 7 + n);
    }
  for (const BatchedRoute& route : {public_call, block_per_matrix, global_rounds, blocked,
                                    blocked_persistent, register_ring, gram_rounds})
    expect_mixed_batch_accurate<float>(64, 48, 4, route, 3000);
  for (const BatchedRoute& route :
       {public_call, block_per_matrix, global_rounds, blocked, blocked_persistent, gram_rounds})
    expect_mixed_batch_accurate<double>(90, 100, 4, route, 3100);
}

// A batch holding one matrix of every class, on every batched path (ring, warp, block, Gram) and
// through the public call, which must not throw for any of them: every matrix converges.
template <class T>
void expect_class_batch_accurate(int m, int n, const BatchedRoute& route, std::uint64_t seed) {
  if (!batched_route_runs_here<T>(route, m, n)) return;
  std::vector<cpu::Matrix> matrices;
  for (const std::string& matrix_class : structured_classes())
    matrices.push_back(cpu::svd_test_matrix<T>(matrix_class, m, n, seed + matrices.size()));
  const auto run = run_batch_on<T>(matrices, route);
  for (std::size_t b = 0; b < matrices.size(); ++b)
    expect_accurate<T>(matrices[b], factors_of(run, m, n, int(b)),
                       std::string(sizeof(T) == 4 ? "float" : "double") + " " + route_name(route) +
                           " " + structured_classes()[b] + " " + std::to_string(m) + " x " +
                           std::to_string(n));
}

TEST_F(SvdBatched, EveryMatrixClassConvergesInABatchOnEveryPath) {
  for (const BatchedRoute& route : {public_call, thread_per_matrix, warp_per_matrix,
                                    block_per_matrix, register_ring, gram_rounds}) {
    expect_class_batch_accurate<float>(24, 20, route, 700);
    expect_class_batch_accurate<double>(20, 24, route, 710);
    expect_class_batch_accurate<float>(4, 3, route, 730);
    expect_class_batch_accurate<double>(3, 4, route, 740);
  }
}

TEST_F(SvdBatched, LargeEveryMatrixClassConvergesInABatchOfBlocksOrGramRounds) {
  for (const BatchedRoute& route : {public_call, block_per_matrix, gram_rounds})
    expect_class_batch_accurate<double>(100, 90, route, 720);
}

// The portable cluster's two kernels in one batch (cluster.cu): the matrices whose neighbouring
// columns arrive orthogonal (zero, diagonal, a_j = e_j + e_{j+2}, orthogonal to its neighbours and
// not to the column two along) go to the kernel that tests them on arrival, the others (random,
// rank one) to the kernel without the test. Every one converges; the zero and the diagonal matrix
// count one sweep, the others more. Wide matrices all take the kernel without the test (the columns
// looked at are A's), where the diagonal's one sweep is a whole sweep of rounds. Without clusters
// the route falls back to the Gram rounds, tested too.
template <class T>
void expect_cluster_batch_accurate(int m, int n, std::uint64_t seed) {
  const std::string what = std::string(sizeof(T) == 4 ? "float " : "double ") + std::to_string(m) +
                           " x " + std::to_string(n) + " in a batch, ";
  std::vector<cpu::Matrix> matrices = {cpu::random_matrix(m, n, seed),
                                       scaled_diagonal(m, n),
                                       cpu::zeros(m, n),
                                       orthogonal_neighbours(m, n),
                                       cpu::rank_deficient_matrix(m, n, 1, seed + 1),
                                       cpu::random_matrix(m, n, seed + 2)};
  const int batch = int(matrices.size());
  for (cpu::Matrix& a : matrices) a = rounded<T>(a);
  std::vector<jacobi::MatrixStatus> statuses;
  const BatchRun<T> run = run_batch<T>(matrices, internal_route<T>(*gram_cluster, &statuses));
  const char* names[] = {"random",   "diagonal", "zero", "orthogonal neighbours",
                         "rank one", "random"};
  for (int b = 0; b < batch; ++b)
    expect_accurate<T>(matrices[b], factors_of(run, m, n, b), what + names[b]);
  ASSERT_EQ(int(statuses.size()), batch);
  for (const int b : {1, 2}) EXPECT_EQ(statuses[b].sweeps, 1) << what << names[b];
  for (const int b : {0, 3, 4, 5}) EXPECT_GT(statuses[b].sweeps, 1) << what << names[b];
}

TEST_F(SvdBatched, PortableClusterTakesEachMatrixThroughTheKernelItsArrivalAsksFor) {
  expect_cluster_batch_accurate<double>(100, 90, 7600);
  expect_cluster_batch_accurate<float>(128, 100, 7700);
  expect_cluster_batch_accurate<double>(64, 100, 7800);  // wide
}

TEST_F(SvdBatched, LargeMatricesBeyondSharedMemoryPassLapackTests) {
  expect_mixed_batch_accurate<double>(130, 130, 4, public_call, 4000);
  expect_mixed_batch_accurate<float>(200, 180, 4, public_call, 4100);
  expect_mixed_batch_accurate<double>(150, 260, 4, public_call, 4200);
  expect_mixed_batch_accurate<double>(130, 130, 3, global_rounds, 4300);
  expect_mixed_batch_accurate<float>(300, 40, 3, blocked, 4400);              // tall
  expect_mixed_batch_accurate<double>(40, 300, 3, blocked_persistent, 4500);  // wide
  expect_mixed_batch_accurate<double>(270, 250, 4, gram_rounds, 4600);  // several slices of rows
  // Gram, tall: 21 slices of rows a pair, the last one partial.
  expect_mixed_batch_accurate<double>(1300, 40, 2, gram_rounds, 4610);
  expect_mixed_batch_accurate<float>(1300, 40, 2, gram_rounds, 4620);
  expect_mixed_batch_accurate<float>(70, 300, 4, gram_rounds, 4700);  // Gram, wide, padded blocks
}

// A round with more pairs than the GPU holds solves at once (1000 or 2000 here, against 4 a SM)
// forms the Gram matrices inside the solve: tiles of rows copied asynchronously, the last one
// partial, padding columns in the last block.
TEST_F(SvdBatched, GramScheduleFormsTheGramInTheSolveForLargeBatches) {
  expect_mixed_batch_accurate<double>(70, 40, 1000, gram_rounds, 4800);
  expect_mixed_batch_accurate<float>(33, 100, 1000, gram_rounds,
                                     4900);  // wide: the transpose's columns
}

// The same with one short tile: 21 rows (an odd leading dimension, copied element by element) and
// 32 (16-byte copies); small enough for the sanitizers.
TEST_F(SvdBatched, GramScheduleFormsShortGramsWithBothCopyForms) {
  expect_mixed_batch_accurate<double>(21, 10, 1000, gram_rounds, 5000);
  expect_mixed_batch_accurate<float>(32, 12, 1000, gram_rounds, 5100);
}

TEST_F(SvdBatched, BatchOfOneMatchesTheSingleMatrixSvd) {
  const cpu::Matrix a = cpu::random_matrix(20, 14, 5000);
  const auto run = run_batch<double>({a}, public_batched<double>);
  const Factors batched = factors_of(run, 20, 14, 0);
  const Factors single = run_svd<double>(a);
  for (int l = 0; l < 14; ++l) EXPECT_NEAR(batched.s[l], single.s[l], 1e-13 * single.s[0]);
  expect_accurate<double>(a, batched, "batch of one");
}

TEST_F(SvdBatched, LargeMillionFourByFourMatrices) {
  const int m = 4, n = 4, batch = 1000000, k = 4;
  DeviceBuffer<float> A(std::size_t(m) * n * batch), S(std::size_t(k) * batch),
      U(std::size_t(m) * k * batch), V(std::size_t(n) * k * batch);
  const std::uint64_t seed = 6000;
  bench::fill_random(A.data(), std::int64_t(A.size()), seed, nullptr);
  S.fill_bytes(0xFF);
  U.fill_bytes(0xFF);
  V.fill_bytes(0xFF);
  std::vector<SvdInfo> info(batch);
  svd_batched<float>(A.data(), m, n, batch, S.data(), U.data(), V.data(), info.data());
  const auto s = S.download(), u = U.download(), v = V.download();
  for (const auto* values : {&s, &u, &v})
    EXPECT_TRUE(
        std::none_of(values->begin(), values->end(), [](float x) { return std::isnan(x); }));
  EXPECT_TRUE(std::all_of(info.begin(), info.end(), [](const SvdInfo& i) { return i.converged; }));
  const BatchRun<float> run{s, u, v};
  std::vector<int> checked;
  for (int b = 0; b < batch; b += 9973) checked.push_back(b);
  checked.push_back(batch - 1);  // the last matrix: offsets past 2^24 elements
  for (const int b : checked) {
    cpu::Matrix a = cpu::zeros(m, n);
    for (int e = 0; e < m * n; ++e)
      a.values[e] = bench::random_float(seed, std::uint64_t(b) * m * n + e);
    expect_accurate<float>(a, factors_of(run, m, n, b),
                           "matrix " + std::to_string(b) + " of a million");
  }
}

TEST_F(SvdBatched, NanInOneMatrixIsNamedAndLeavesTheOthersIntact) {
  for (const auto& [m, n, batch] : {std::tuple{16, 16, 10}, std::tuple{9, 40, 10},
                                    std::tuple{100, 90, 5}, std::tuple{130, 130, 3}}) {
    std::vector<cpu::Matrix> matrices = mixed_batch(m, n, batch, 7000);
    const int bad = batch - 3;
    matrices[bad](m - 1, 0) = std::numeric_limits<double>::quiet_NaN();
    std::vector<SvdInfo> info(batch);
    std::string message;
    const auto run = run_batch<double>(
        matrices, [&](const double* A, int m_, int n_, int b_, double* S, double* U, double* V) {
          try {
            svd_batched<double>(A, m_, n_, b_, S, U, V, info.data());
          } catch (const Error& error) {
            message = error.what();
            EXPECT_EQ(error.argument(), "A");
          }
        });
    EXPECT_NE(message.find("matrix " + std::to_string(bad) + " "), std::string::npos) << message;
    EXPECT_FALSE(info[bad].converged);
    for (int l = 0; l < std::min(m, n); ++l)
      EXPECT_TRUE(std::isnan(run.s[std::size_t(bad) * std::min(m, n) + l]));
    for (int b = 0; b < batch; ++b)
      if (b != bad) {
        expect_accurate<double>(
            matrices[b], factors_of(run, m, n, b),
            "neighbour " + std::to_string(b) + " of a NaN matrix, " + name("batch", m, n, 7000));
        EXPECT_TRUE(info[b].converged) << b;
      }
  }
}

// The second try in a batch: a matrix whose sweeps on the Gram schedule stall (512 x 512, a
// log-uniform spectrum at condition 1/eps) between two it solves is handed over after 10 sweeps
// and solved again: each matrix passes LAPACK's tests, converged, and without info there is no
// error.
TEST_F(SvdBatched, AStalledMatrixIsSolvedAgain) {
  const std::vector<cpu::Matrix> matrices = {cpu::random_matrix(512, 512, 8100),
                                             cpu::svd_test_matrix<double>("mode5-eps", 512, 512, 1),
                                             cpu::svd_test_matrix<double>("rank-1", 512, 512, 1)};
  std::vector<SvdInfo> info(matrices.size());
  const auto run = run_batch<double>(
      matrices, [&](const double* A, int m, int n, int batch, double* S, double* U, double* V) {
        svd_batched<double>(A, m, n, batch, S, U, V, info.data());
      });
  for (int b = 0; b < int(matrices.size()); ++b) {
    const std::string what = "matrix " + std::to_string(b) + " of " + name("batch", 512, 512, 1);
    expect_accurate<double>(matrices[b], factors_of(run, 512, 512, b), what);
    EXPECT_TRUE(info[b].converged) << what;
  }
  EXPECT_GT(info[1].sweeps, jacobi::hand_over_first_sweep);  // both tries counted
  EXPECT_LT(info[1].sweeps, SvdOptions{}.max_sweeps);        // handed over, not out of sweeps
  run_batch<double>(matrices,
                    [&](const double* A, int m, int n, int batch, double* S, double* U, double* V) {
                      EXPECT_NO_THROW(svd_batched<double>(A, m, n, batch, S, U, V));
                    });
}

// Many second tries in a batch run side by side (svd_batched.cu, second_try_pool): eight 256 x 256
// matrices of geometric and log-uniform spectra at condition 1/eps, handed over after 10 sweeps,
// between random ones that are not. Each passes LAPACK's tests, converged with both tries counted,
// and a second call gives the same bits: the second tries share nothing but the batch's outputs.
TEST_F(SvdBatched, ManyStalledMatricesAreSolvedAgainSideBySide) {
  constexpr int n = 256;
  std::vector<cpu::Matrix> matrices;
  for (int seed = 1; seed <= 4; ++seed) {
    matrices.push_back(cpu::svd_test_matrix<double>("mode3-eps", n, n, seed));
    matrices.push_back(cpu::svd_test_matrix<double>("mode5-eps", n, n, seed));
    matrices.push_back(cpu::random_matrix(n, n, 8200 + seed));
  }
  std::vector<SvdInfo> info(matrices.size()), again(matrices.size());
  const auto solve_into = [](std::vector<SvdInfo>& into) {
    return [&into](const double* A, int m, int cols, int batch, double* S, double* U, double* V) {
      svd_batched<double>(A, m, cols, batch, S, U, V, into.data());
    };
  };
  const auto run = run_batch<double>(matrices, solve_into(info));
  int handed_over = 0;
  for (int b = 0; b < int(matrices.size()); ++b) {
    const std::string what = "matrix " + std::to_string(b) + " of " + name("batch", n, n, 1);
    expect_accurate<double>(matrices[b], factors_of(run, n, n, b), what);
    EXPECT_TRUE(info[b].converged) << what;
    EXPECT_LT(info[b].sweeps, SvdOptions{}.max_sweeps) << what;
    handed_over += info[b].sweeps > jacobi::hand_over_first_sweep;
  }
  EXPECT_GE(handed_over, 4) << "too few second tries to run side by side; test other matrices";
  const auto repeated = run_batch<double>(matrices, solve_into(again));
  EXPECT_TRUE(run.s == repeated.s && run.u == repeated.u && run.v == repeated.v)
      << "a second call gave other bits";
  for (int b = 0; b < int(matrices.size()); ++b) EXPECT_EQ(again[b].sweeps, info[b].sweeps) << b;
}

// A batch of one goes through the register ring's hand-over as rooflab::svd does (a log-uniform
// spectrum at condition 1/eps, 64 x 64: 12 sweeps in all on an H100 against 26 in the ring alone),
// and is solved again from its status: LAPACK's tests, converged, both tries' sweeps counted.
// Left out where the ring's shared memory cannot hold a double 64 x 64 matrix (sm_75's 64 KB).
TEST_F(SvdBatched, ABatchOfOneTakesTheRegisterRingsHandOver) {
  if (!route_runs_here<double>(RouteShape{"batch of one", jacobi::Path::register_ring, 64, 64}))
    GTEST_SKIP() << "the register ring holds no double 64 x 64 matrix here";
  const std::vector<cpu::Matrix> matrices = {cpu::svd_test_matrix<double>("mode5-eps", 64, 64, 1)};
  ASSERT_EQ(jacobi::production_path<double>(64, 64, 1, true), jacobi::Path::register_ring);
  std::vector<SvdInfo> info(1);
  const auto run = run_batch<double>(
      matrices, [&](const double* A, int m, int n, int batch, double* S, double* U, double* V) {
        svd_batched<double>(A, m, n, batch, S, U, V, info.data());
      });
  const std::string what = name("batch of one mode5-eps", 64, 64, 1);
  expect_accurate<double>(matrices[0], factors_of(run, 64, 64, 0), what);
  EXPECT_TRUE(info[0].converged) << what;
  EXPECT_GT(info[0].sweeps, jacobi::RingUnfolding::sweep) << what;  // both tries counted
  const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(matrices[0]);
  EXPECT_LE(info[0].sweeps, dgesvj.sweeps + 2) << what << ", dgesvj " << dgesvj.sweeps;
}

// A batch in the register ring restarts its unfolding matrices in the kernel (RingRestart,
// jacobi_math.hpp) while the others keep their sweeps: modes 3 and 5 at 1/sqrt(eps) and 1/eps among
// random, rank-deficient and graded matrices, 40 x 40 and 48 x 36: LAPACK's tests on every matrix,
// converged, the restarted ones within dgesvj's + 2 sweeps in all. A shape whose restart the
// device's shared memory cannot hold is left out.
TEST_F(SvdBatched, UnfoldingMatricesRestartInTheRingsKernel) {
  for (const auto& [m, n] : {std::pair{40, 40}, std::pair{48, 36}}) {
    if (!route_runs_here<double>(RouteShape{"batch restart", jacobi::Path::register_ring, m, n}) ||
        !jacobi::ring_restarts_here<double>(m, n, true))
      continue;
    const char* classes[] = {"mode3",     "random", "mode5",     "rank-minus-1",
                             "mode3-eps", "graded", "mode5-eps", "zero-rows"};
    std::vector<cpu::Matrix> matrices;
    for (const char* matrix_class : classes)
      matrices.push_back(cpu::svd_test_matrix<double>(matrix_class, m, n, 3));
    const int batch = int(matrices.size());
    ASSERT_EQ(jacobi::production_path<double>(m, n, batch, true), jacobi::Path::register_ring);
    std::vector<SvdInfo> info(batch);
    const auto run = run_batch<double>(matrices, [&](const double* A, int rows, int cols, int count,
                                                     double* S, double* U, double* V) {
      svd_batched<double>(A, rows, cols, count, S, U, V, info.data());
    });
    for (int b = 0; b < batch; ++b) {
      const std::string what = name(classes[b], m, n, 3);
      expect_accurate<double>(matrices[b], factors_of(run, m, n, b), what);
      EXPECT_TRUE(info[b].converged) << what;
      if (std::string(classes[b]).rfind("mode", 0) == 0) {
        const cpu::JacobiSweeps dgesvj = cpu::lapack_jacobi_sweeps(matrices[b]);
        EXPECT_LE(info[b].sweeps, dgesvj.sweeps + 2) << what << ", dgesvj " << dgesvj.sweeps;
      }
    }
  }
}

TEST_F(SvdBatched, InfoReportsSweepsAndTooFewSweepsWithoutInfoIsAnError) {
  const std::vector<cpu::Matrix> matrices = mixed_batch(24, 24, 6, 8000);
  SvdOptions one_sweep;
  one_sweep.max_sweeps = 1;
  std::vector<SvdInfo> info(6);
  run_batch<double>(matrices,
                    [&](const double* A, int m, int n, int batch, double* S, double* U, double* V) {
                      svd_batched<double>(A, m, n, batch, S, U, V, info.data(), one_sweep);
                    });
  EXPECT_FALSE(info[0].converged);  // a random matrix needs more than one sweep
  EXPECT_EQ(info[0].sweeps, 1);
  EXPECT_TRUE(info[3].converged);  // the zero matrix converges at once
  run_batch<double>(matrices, [&](const double* A, int m, int n, int batch, double* S, double* U,
                                  double* V) {
    try {
      svd_batched<double>(A, m, n, batch, S, U, V, nullptr, one_sweep);
      ADD_FAILURE() << "no error for one sweep without info";
    } catch (const Error& error) {
      // A max_sweeps below the default bounds the work: no second try, and the message says so.
      const std::string what = error.what();
      EXPECT_EQ(error.argument(), "opt.max_sweeps") << what;
      EXPECT_NE(what.find("matrix 0 did not converge in 1 sweeps ("), std::string::npos) << what;
      EXPECT_EQ(what.find("transposed triangle"), std::string::npos) << what;
    }
  });
  run_batch<double>(matrices,
                    [&](const double* A, int m, int n, int batch, double* S, double* U, double* V) {
                      svd_batched<double>(A, m, n, batch, S, U, V, info.data());
                    });
  for (const SvdInfo& i : info) {
    EXPECT_TRUE(i.converged);
    EXPECT_GE(i.sweeps, 1);
    EXPECT_LE(i.sweeps, 20);  // rank-deficient noise columns take longest (a model: up to 14)
  }
}

// The outcome the info says: how many matrices did not converge, and the first.
SvdBatchOutcome outcome_of(const std::vector<SvdInfo>& info) {
  SvdBatchOutcome outcome;
  for (int b = 0; b < int(info.size()); ++b)
    if (!info[b].converged && outcome.unconverged++ == 0) outcome.first_unconverged = b;
  return outcome;
}

// Info left in device memory (SvdDeviceInfo) holds what the host array holds, field by field and
// bit for bit, and both calls return the outcome the info says: one sweep (unconverged matrices,
// no second try), the default (every matrix converged), a NaN matrix among them (an error, the
// others' info filled), a batch of one through the register ring's second try, and fields left
// out. The device arrays are poisoned first.
TEST_F(SvdBatched, InfoLeftOnTheDeviceMatchesTheHostsAndTheOutcomeCountsTheUnconverged) {
  const auto compare = [](const std::vector<cpu::Matrix>& matrices, const SvdOptions& opt,
                          bool nan_planted, const std::string& what) {
    const int batch = int(matrices.size());
    std::vector<SvdInfo> host(matrices.size(), SvdInfo{-1, true, -1.0});
    SvdBatchOutcome host_outcome{-2, -2}, device_outcome{-2, -2};
    const std::size_t count = matrices.size();
    DeviceBuffer<int> sweeps(count);
    DeviceBuffer<std::uint8_t> converged(count);  // read back as bytes: 0 or 1
    DeviceBuffer<double> off(count);
    sweeps.fill_bytes(0xFF);
    converged.fill_bytes(0xFF);
    off.fill_bytes(0xFF);
    const SvdDeviceInfo device{sweeps.data(), reinterpret_cast<bool*>(converged.data()),
                               off.data()};
    const auto call = [&](const std::function<SvdBatchOutcome()>& solve, SvdBatchOutcome& into) {
      if (nan_planted)
        EXPECT_THROW(solve(), Error) << what;
      else
        into = solve();
    };
    run_batch<double>(
        matrices, [&](const double* A, int m, int n, int count, double* S, double* U, double* V) {
          call([&] { return svd_batched<double>(A, m, n, count, S, U, V, host.data(), opt); },
               host_outcome);
        });
    run_batch<double>(
        matrices, [&](const double* A, int m, int n, int count, double* S, double* U, double* V) {
          call([&] { return svd_batched<double>(A, m, n, count, S, U, V, device, opt); },
               device_outcome);
        });
    const std::vector<int> device_sweeps = sweeps.download();
    const std::vector<std::uint8_t> device_converged = converged.download();
    const std::vector<double> device_off = off.download();
    for (int b = 0; b < batch; ++b) {
      EXPECT_EQ(device_sweeps[b], host[b].sweeps) << what << ", matrix " << b;
      EXPECT_EQ(int(device_converged[b]), int(host[b].converged)) << what << ", matrix " << b;
      EXPECT_EQ(std::memcmp(&device_off[b], &host[b].off, sizeof(double)), 0)
          << what << ", matrix " << b << ": " << device_off[b] << " against " << host[b].off;
    }
    if (nan_planted) return host;
    const SvdBatchOutcome expected = outcome_of(host);
    EXPECT_EQ(host_outcome.unconverged, expected.unconverged) << what;
    EXPECT_EQ(host_outcome.first_unconverged, expected.first_unconverged) << what;
    EXPECT_EQ(device_outcome.unconverged, expected.unconverged) << what;
    EXPECT_EQ(device_outcome.first_unconverged, expected.first_unconverged) << what;
    return host;
  };

  const std::vector<cpu::Matrix> mixed = mixed_batch(24, 24, 6, 8200);
  SvdOptions one_sweep;
  one_sweep.max_sweeps = 1;
  const std::vector<SvdInfo> cut_short = compare(mixed, one_sweep, false, "one sweep");
  EXPECT_FALSE(cut_short[0].converged);  // a random matrix needs more than one sweep
  EXPECT_TRUE(cut_short[3].converged);   // the zero matrix converges at once
  for (const SvdInfo& info : compare(mixed, SvdOptions{}, false, "default"))
    EXPECT_TRUE(info.converged);

  std::vector<cpu::Matrix> with_nan = mixed;
  with_nan[2].values[5] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<SvdInfo> nan_info = compare(with_nan, SvdOptions{}, true, "a NaN in matrix 2");
  EXPECT_TRUE(nan_info[0].converged);  // the others are solved and reported

  if (route_runs_here<double>(RouteShape{"batch of one", jacobi::Path::register_ring, 64, 64})) {
    const std::vector<SvdInfo> again = compare(
        {cpu::svd_test_matrix<double>("mode5-eps", 64, 64, 1)}, SvdOptions{}, false, "second try");
    EXPECT_TRUE(again[0].converged);
    EXPECT_GT(again[0].sweeps, jacobi::RingUnfolding::sweep);  // both tries counted
  }

  // Only the fields asked for are written.
  DeviceBuffer<std::uint8_t> converged_only(mixed.size());
  converged_only.fill_bytes(0xFF);
  SvdBatchOutcome outcome;
  run_batch<double>(mixed,
                    [&](const double* A, int m, int n, int count, double* S, double* U, double* V) {
                      SvdDeviceInfo info;
                      info.converged = reinterpret_cast<bool*>(converged_only.data());
                      outcome = svd_batched<double>(A, m, n, count, S, U, V, info, one_sweep);
                    });
  const std::vector<std::uint8_t> flags = converged_only.download();
  for (std::size_t b = 0; b < flags.size(); ++b)
    EXPECT_EQ(int(flags[b]), int(cut_short[b].converged)) << "converged alone, matrix " << b;
  EXPECT_EQ(outcome.unconverged, outcome_of(cut_short).unconverged);
}

TEST_F(SvdBatched, ValuesOnlyNeedNoVectors) {
  const std::vector<cpu::Matrix> matrices = mixed_batch(20, 30, 8, 9000);
  SvdOptions values_only;
  values_only.compute_uv = false;
  const auto run = run_batch<double>(
      matrices, [&](const double* A, int m, int n, int batch, double* S, double*, double*) {
        svd_batched<double>(A, m, n, batch, S, nullptr, nullptr, nullptr, values_only);
      });
  for (int b = 0; b < 8; ++b) {
    const std::vector<double> reference = cpu::lapack_singular_values(matrices[b]);
    for (int l = 0; l < 20; ++l)
      EXPECT_NEAR(run.s[std::size_t(b) * 20 + l], reference[l], 1e-13 * std::max(1.0, reference[0]))
          << b;
  }
}

}  // namespace
}  // namespace rooflab
