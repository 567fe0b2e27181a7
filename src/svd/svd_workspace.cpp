#include "svd/svd_workspace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "bench/random.hpp"
#include "cpu/parallel.hpp"
#include "cpu/svd_matrices.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

// The bound on LAPACK's SVD test ratios (ddrvbd's): rooflab's 35, where LAPACK's svd.in sets 50.
constexpr double accuracy_threshold = 35;

// The first element that is not finite: S, U and V start as NaN, so an element nobody wrote
// shows here, and so does any NaN the method produced.
template <class T>
std::int64_t first_non_finite(const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return std::int64_t(i);
  return -1;
}

// LAPACK's singular values of a matrix: Jacobi's own LAPACK twin (dgesvj) up to 128 where it
// converges, bidiagonal LAPACK (dgesvd: faster, and accurate to eps ||A||, all the check needs)
// beyond and where dgesvj does not (30 sweeps on square rank-1-integer and zero-rows matrices).
std::vector<double> reference_singular_values(const cpu::Matrix& a) {
  if (std::max(a.m, a.n) <= 128) {
    try {
      return cpu::lapack_singular_values(a);
    } catch (const std::runtime_error&) {
      // dgesvj did not converge: dgesvd below.
    }
  }
  return cpu::lapack_bidiagonal_singular_values(a);
}

// One matrix's check: LAPACK's SVD test ratios and S against LAPACK's values, in ulps
// (infinite when S is not descending and non-negative), and what they were.
struct MatrixCheck {
  double error = 0;
  std::string detail;
};

MatrixCheck check_matrix(const cpu::Matrix& a, const std::vector<double>& values,
                         const cpu::Matrix& left, const cpu::Matrix& right, double ulp) {
  const int m = a.m, n = a.n, k = int(values.size());
  const cpu::SvdAccuracy accuracy = cpu::svd_accuracy(a, values, left, right, ulp);
  const std::vector<double> reference = reference_singular_values(a);
  double value_error = 0;
  for (int l = 0; l < k; ++l)
    value_error = std::max(value_error, std::abs(values[l] - reference[l]));
  const double scale =
      std::max(reference[0], std::numeric_limits<double>::min()) * std::max(m, n) * ulp;
  const double value_ratio = value_error / scale;
  MatrixCheck check;
  check.error =
      accuracy.s_descending_nonnegative ? std::max(accuracy.worst(), value_ratio) : INFINITY;
  check.detail = "residual " + std::to_string(accuracy.residual) + ", U orthogonality " +
                 std::to_string(accuracy.u_orthogonality) + ", V orthogonality " +
                 std::to_string(accuracy.v_orthogonality) + ", S vs LAPACK " +
                 std::to_string(value_ratio) +
                 (accuracy.s_descending_nonnegative ? "" : ", S not descending");
  return check;
}

// How much of a batch the check saw: "" for one matrix, "; all 1000 matrices checked", or
// "; 2048 of 262144 matrices checked, evenly spread".
std::string checked_matrices_note(int count, int batch) {
  if (batch == 1) return {};
  if (count == batch) return "; all " + std::to_string(batch) + " matrices checked";
  return "; " + std::to_string(count) + " of " + std::to_string(batch) +
         " matrices checked, evenly spread";
}

}  // namespace

template <class T>
SvdWorkspace<T>::SvdWorkspace(int m, int n, int batch, std::string matrix_class)
    : SvdWorkspaceBase(m, n, batch, dtype_of<T>(), std::move(matrix_class)),
      a(std::size_t(m) * n * batch),
      s(std::size_t(k) * batch),
      u(std::size_t(m) * k * batch),
      v(std::size_t(n) * k * batch),
      statuses_(std::size_t(batch)),
      summary_(1) {}

template <class T>
void SvdWorkspace<T>::refill(std::uint64_t seed) {
  if (matrix_class == "random") {
    fill_random(a.data(), std::int64_t(a.size()), seed, nullptr);
  } else {
    // --same-inputs refills every rung with one seed: the batch (LAPACK QRs for the classes of
    // prescribed singular values) is drawn once.
    if (drawn_batch_.empty() || seed != seed_) drawn_batch_ = draw_batch(seed);
    a.upload(drawn_batch_);
  }
  seed_ = seed;
  s.fill_bytes(0xFF);
  u.fill_bytes(0xFF);
  v.fill_bytes(0xFF);
  statuses_.fill_bytes(0xFF);  // sweeps -1: no rung of ours ran yet
  library_fewest_sweeps_ = library_most_sweeps_ = -1;
  host_a.clear();
  host_s.clear();
  host_u.clear();
  host_v.clear();
}

template <class T>
void SvdWorkspace<T>::prepare_host() {
  if (!host_a.empty()) return;
  host_a = a.download();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  host_s.assign(s.size(), nan);
  host_u.assign(u.size(), nan);
  host_v.assign(v.size(), nan);
}

template <class T>
std::vector<T> SvdWorkspace<T>::draw_batch(std::uint64_t seed) const {
  const std::size_t size = std::size_t(m) * n;
  std::vector<T> values(size * batch);
  cpu::parallel_ranges(
      batch,
      [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t b = begin; b < end; ++b) {
          const cpu::Matrix matrix = cpu::svd_batch_test_matrix<T>(matrix_class, m, n, seed, b);
          std::copy(matrix.values.begin(), matrix.values.end(),
                    values.begin() + std::ptrdiff_t(b * size));
        }
      },
      1);
  return values;
}

template <class T>
cpu::Matrix SvdWorkspace<T>::host_matrix(int b) const {
  if (drawn_batch_.empty()) return cpu::svd_batch_test_matrix<T>(matrix_class, m, n, seed_, b);
  cpu::Matrix matrix = cpu::zeros(m, n);
  const auto first =
      drawn_batch_.begin() + std::ptrdiff_t(b) * std::ptrdiff_t(matrix.values.size());
  std::copy(first, first + std::ptrdiff_t(matrix.values.size()), matrix.values.begin());
  return matrix;
}

template <class T>
T SvdWorkspace<T>::tol() const {
  return jacobi::default_tolerance<T>(m, n, true);
}

template <class T>
jacobi::Problem<T> SvdWorkspace<T>::problem(cudaStream_t stream) {
  ROOFLAB_CUDA("bench svd", "zeroing the batch summary",
               cudaMemsetAsync(summary_.data(), 0, summary_.bytes(), stream));
  jacobi::Problem<T> P =
      jacobi::packed_batch_problem<T>(a.data(), m, n, batch, s.data(), u.data(), v.data());
  P.tol = tol();
  P.max_sweeps = SvdOptions{}.max_sweeps;
  P.uv = true;
  return P;
}

template <class T>
void SvdWorkspace<T>::record_library_sweeps(int fewest, int most) {
  library_fewest_sweeps_ = fewest;
  library_most_sweeps_ = most;
}

template <class T>
std::string SvdWorkspace<T>::sweeps_note() const {
  int fewest = library_fewest_sweeps_, most = library_most_sweeps_;
  if (fewest < 0) {
    const std::vector<jacobi::MatrixStatus> statuses = statuses_.download();
    const auto [low, high] =
        std::minmax_element(statuses.begin(), statuses.end(),
                            [](const jacobi::MatrixStatus& a, const jacobi::MatrixStatus& b) {
                              return a.sweeps < b.sweeps;
                            });
    fewest = low->sweeps;
    most = high->sweeps;
  }
  if (fewest < 0) return {};
  std::string note = (fewest == most ? std::to_string(most)
                                     : std::to_string(fewest) + "-" + std::to_string(most)) +
                     " sweeps";
  if (std::is_same_v<T, double> && batch == 1 && std::max(m, n) <= lapack_sweeps_limit) {
    if (!lapack_sweeps_ || lapack_sweeps_seed_ != seed_) {
      lapack_sweeps_ = cpu::lapack_jacobi_sweeps(host_matrix(0));
      lapack_sweeps_seed_ = seed_;
    }
    note += "; LAPACK dgesvj " + std::to_string(lapack_sweeps_->sweeps) +
            (lapack_sweeps_->converged ? "" : ", not converged");
  }
  return note;
}

std::string svd_sweeps_note(Workspace& workspace) {
  std::string note;
  visit_svd_workspace(workspace, [&note](auto& w) { note = w.sweeps_note(); });
  return note;
}

std::function<void(Workspace&, cudaStream_t)> run_schedule(jacobi::GlobalSchedule schedule) {
  return [schedule](Workspace& workspace, cudaStream_t stream) {
    visit_svd_workspace(workspace, [stream, schedule](auto& w) {
      jacobi::run_global(w.problem(stream), schedule, w.report(), stream);
    });
  };
}

std::function<void(Workspace&, cudaStream_t)> run_on_path(jacobi::Path path) {
  return [path](Workspace& workspace, cudaStream_t stream) {
    visit_svd_workspace(workspace, [stream, path](auto& w) {
      jacobi::run_path(w.problem(stream), path, w.report(), stream);
    });
  };
}

template <class T>
jacobi::Report SvdWorkspace<T>::report() const {
  return jacobi::Report{const_cast<jacobi::MatrixStatus*>(statuses_.data()),
                        const_cast<jacobi::BatchSummary*>(summary_.data())};
}

template <class T>
Check SvdWorkspace<T>::check(Where where) {
  const std::vector<T> S = where == Where::gpu ? s.download() : host_s;
  const std::vector<T> U = where == Where::gpu ? u.download() : host_u;
  const std::vector<T> V = where == Where::gpu ? v.download() : host_v;
  if (S.size() != s.size()) return Check{false, 0, accuracy_threshold, "no output"};
  for (const auto& [name, values] : {std::pair{"S", &S}, std::pair{"U", &U}, std::pair{"V", &V}}) {
    const std::int64_t bad = first_non_finite(*values);
    if (bad >= 0)
      return Check{false, INFINITY, accuracy_threshold,
                   std::string(name) + "[" + std::to_string(bad) + "] is " +
                       std::to_string(double((*values)[bad])) + " (unwritten or not finite)"};
  }

  // Every matrix of the batch while that costs at most about 2^31 multiply-adds of checking: all of
  // every size `rooflab report` runs (1000 matrices of 64 x 64: 0.44 s on an H100 host's 16 cores,
  // 1.7 s on 2; 100 of 256 x 256: 0.9 s on 16). Beyond, an even spread of as many, the first and
  // the last among them, and the detail says so.
  const std::int64_t work = std::int64_t(std::max(m, n)) * k * k;
  const int count = int(std::clamp<std::int64_t>(
      (std::int64_t(1) << 31) / std::max<std::int64_t>(1, work), 1, batch));
  const double ulp = std::numeric_limits<T>::epsilon();
  std::vector<MatrixCheck> checks(count);
  cpu::parallel_ranges(
      count,
      [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t sample = begin; sample < end; ++sample) {
          const int b = count > 1 ? int(sample * (batch - 1) / (count - 1)) : 0;
          std::vector<double> values(k);
          cpu::Matrix left = cpu::zeros(m, k), right = cpu::zeros(n, k);
          for (int l = 0; l < k; ++l) values[l] = S[std::size_t(b) * k + l];
          for (std::size_t e = 0; e < left.values.size(); ++e)
            left.values[e] = U[std::size_t(b) * m * k + e];
          for (std::size_t e = 0; e < right.values.size(); ++e)
            right.values[e] = V[std::size_t(b) * n * k + e];
          checks[sample] = check_matrix(host_matrix(b), values, left, right, ulp);
          checks[sample].detail = "matrix " + std::to_string(b) + ": " + checks[sample].detail;
        }
      },
      1);
  const MatrixCheck& worst = *std::max_element(
      checks.begin(), checks.end(), [](const auto& a, const auto& b) { return a.error < b.error; });
  const bool passed = worst.error <= accuracy_threshold;
  return Check{passed, worst.error, accuracy_threshold,
               (passed ? "worst " : "") + worst.detail + " (ulps, LAPACK ddrvbd ratios" +
                   checked_matrices_note(count, batch) + ")"};
}

template class SvdWorkspace<float>;
template class SvdWorkspace<double>;

std::unique_ptr<Workspace> make_svd_workspace(int m, int n, int batch, DType dtype,
                                              const std::string& matrix_class) {
  if (dtype == DType::f32) return std::make_unique<SvdWorkspace<float>>(m, n, batch, matrix_class);
  return std::make_unique<SvdWorkspace<double>>(m, n, batch, matrix_class);
}

std::string resolve_matrix_class(const std::string& requested, const char* op) {
  if (requested.empty()) return "random";
  require(cpu::is_svd_matrix_class(requested), op, "--matrix",
          "'" + requested + "' is not a matrix class (" + cpu::svd_matrix_class_names() + ")");
  return requested;
}

double nominal_svd_flops(std::int64_t m, std::int64_t n) {
  const double M = double(std::max(m, n)), N = double(std::min(m, n));
  return 4 * M * N * N + 8 * N * N * N;
}

std::string blocked_limit(const Problem& problem) {
  const int m = int(problem.m), n = int(problem.n);
  const bool fits = problem.dtype == "float" ? jacobi::blocked_fits<float>(m, n)
                                             : jacobi::blocked_fits<double>(m, n);
  return fits ? std::string() : "columns too long for a pair of 4-column blocks in shared memory";
}

std::string register_ring_limit(const Problem& problem) {
  const int m = int(problem.m), n = int(problem.n);
  const bool fits = problem.dtype == "float" ? jacobi::fits_in_registers<float>(m, n, true)
                                             : jacobi::fits_in_registers<double>(m, n, true);
  return fits ? std::string() : "more than 64 columns or 64 rows";
}

}  // namespace rooflab::bench
