#include "svd/svd_workspace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "bench/random.hpp"
#include "cpu/parallel.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

// LAPACK's threshold for its SVD test ratios (ddrvbd uses 30 to 35).
constexpr double accuracy_threshold = 35;

template <class T>
T random_element(std::uint64_t seed, std::uint64_t index) {
  if constexpr (sizeof(T) == 4)
    return random_float(seed, index);
  else
    return random_double(seed, index);
}

// The first element that is not finite: S, U and V start as NaN, so an element nobody wrote
// shows here, and so does any NaN the method produced.
template <class T>
std::int64_t first_non_finite(const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return std::int64_t(i);
  return -1;
}

}  // namespace

template <class T>
SvdWorkspace<T>::SvdWorkspace(int m, int n, int batch)
    : SvdWorkspaceBase(m, n, batch, dtype_of<T>()),
      a(std::size_t(m) * n * batch),
      s(std::size_t(k) * batch),
      u(std::size_t(m) * k * batch),
      v(std::size_t(n) * k * batch),
      statuses_(std::size_t(batch)),
      summary_(1) {}

template <class T>
void SvdWorkspace<T>::refill(std::uint64_t seed) {
  seed_ = seed;
  fill_random(a.data(), std::int64_t(a.size()), seed, nullptr);
  s.fill_bytes(0xFF);
  u.fill_bytes(0xFF);
  v.fill_bytes(0xFF);
  statuses_.fill_bytes(0xFF);  // sweeps -1: no rung of ours ran yet
  library_sweeps = -1;
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
cpu::Matrix SvdWorkspace<T>::host_matrix(int b) const {
  cpu::Matrix matrix = cpu::zeros(m, n);
  const std::uint64_t first = std::uint64_t(b) * m * n;
  for (std::size_t e = 0; e < matrix.values.size(); ++e)
    matrix.values[e] = double(random_element<T>(seed_, first + e));
  return matrix;
}

template <class T>
T SvdWorkspace<T>::tol() const {
  return jacobi::default_tolerance<T>(m, n, true);
}

template <class T>
jacobi::Problem<T> SvdWorkspace<T>::problem(cudaStream_t stream) {
  ROOFLAB_CUDA("bench svd", cudaMemsetAsync(summary_.data(), 0, summary_.bytes(), stream));
  jacobi::Problem<T> P;
  P.A = a.data();
  P.lda = m;
  P.a_stride = std::int64_t(m) * n;
  P.m = m;
  P.n = n;
  P.batch = batch;
  P.S = s.data();
  P.U = u.data();
  P.V = v.data();
  P.ldu = m;
  P.ldv = n;
  P.s_stride = k;
  P.u_stride = std::int64_t(m) * k;
  P.v_stride = std::int64_t(n) * k;
  P.tol = tol();
  P.max_sweeps = SvdOptions{}.max_sweeps;
  P.uv = true;
  return P;
}

template <class T>
std::string SvdWorkspace<T>::sweeps_note() const {
  int fewest = library_sweeps, most = library_sweeps;
  if (library_sweeps < 0) {
    const std::vector<jacobi::MatrixStatus> statuses = statuses_.download();
    const auto [low, high] = std::minmax_element(
        statuses.begin(), statuses.end(),
        [](const jacobi::MatrixStatus& a, const jacobi::MatrixStatus& b) { return a.sweeps < b.sweeps; });
    fewest = low->sweeps;
    most = high->sweeps;
  }
  if (fewest < 0) return {};
  return (fewest == most ? std::to_string(most) : std::to_string(fewest) + "-" + std::to_string(most)) +
         " sweeps";
}

std::string svd_sweeps_note(Workspace& workspace) {
  std::string note;
  visit_svd_workspace(workspace, [&note](auto& w) { note = w.sweeps_note(); });
  return note;
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

  // A spread of matrices (all of a small batch), as many as about 2^27 multiply-adds of checking
  // allow: the first and the last are always among them.
  const std::int64_t work = std::int64_t(std::max(m, n)) * k * k;
  const int count = int(std::clamp<std::int64_t>((std::int64_t(1) << 27) / std::max<std::int64_t>(1, work),
                                                 1, std::min(64, batch)));
  const double ulp = std::numeric_limits<T>::epsilon();
  std::vector<double> errors(count, 0);
  std::vector<std::string> details(count);
  cpu::parallel_ranges(
      count,
      [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t sample = begin; sample < end; ++sample) {
          const int b = count > 1 ? int(sample * (batch - 1) / (count - 1)) : 0;
          const cpu::Matrix matrix = host_matrix(b);
          std::vector<double> values(k);
          cpu::Matrix left = cpu::zeros(m, k), right = cpu::zeros(n, k);
          for (int l = 0; l < k; ++l) values[l] = S[std::size_t(b) * k + l];
          for (std::size_t e = 0; e < left.values.size(); ++e)
            left.values[e] = U[std::size_t(b) * m * k + e];
          for (std::size_t e = 0; e < right.values.size(); ++e)
            right.values[e] = V[std::size_t(b) * n * k + e];
          const cpu::SvdAccuracy accuracy = cpu::svd_accuracy(matrix, values, left, right, ulp);
          // Jacobi's own LAPACK twin for small matrices; bidiagonal LAPACK (faster) beyond.
          const std::vector<double> reference = std::max(m, n) <= 128
                                                    ? cpu::lapack_singular_values(matrix)
                                                    : cpu::lapack_bidiagonal_singular_values(matrix);
          double value_error = 0;
          for (int l = 0; l < k; ++l) value_error = std::max(value_error, std::abs(values[l] - reference[l]));
          const double scale = std::max(reference[0], std::numeric_limits<double>::min()) *
                               std::max(m, n) * ulp;
          const double value_ratio = value_error / scale;
          errors[sample] = std::max(accuracy.worst(), value_ratio);
          if (!accuracy.s_descending_nonnegative) errors[sample] = INFINITY;
          details[sample] = "matrix " + std::to_string(b) + ": residual " +
                            std::to_string(accuracy.residual) + ", U orthogonality " +
                            std::to_string(accuracy.u_orthogonality) + ", V orthogonality " +
                            std::to_string(accuracy.v_orthogonality) + ", S vs LAPACK " +
                            std::to_string(value_ratio) +
                            (accuracy.s_descending_nonnegative ? "" : ", S not descending");
        }
      },
      1);
  const auto worst = std::max_element(errors.begin(), errors.end()) - errors.begin();
  const bool passed = errors[worst] <= accuracy_threshold;
  return Check{passed, errors[worst], accuracy_threshold,
               (passed ? "worst " : "") + details[worst] + " (ulps, LAPACK ddrvbd ratios)"};
}

template class SvdWorkspace<float>;
template class SvdWorkspace<double>;

std::unique_ptr<Workspace> make_svd_workspace(int m, int n, int batch, DType dtype) {
  if (dtype == DType::f32) return std::make_unique<SvdWorkspace<float>>(m, n, batch);
  return std::make_unique<SvdWorkspace<double>>(m, n, batch);
}

double nominal_svd_flops(std::int64_t m, std::int64_t n) {
  const double M = double(std::max(m, n)), N = double(std::min(m, n));
  return 4 * M * N * N + 8 * N * N * N;
}

std::string blocked_limit(const Problem& problem) {
  const int m = int(problem.m), n = int(problem.n);
  const bool fits = problem.dtype == "float" ? jacobi::blocked_fits<float>(m, n) : jacobi::blocked_fits<double>(m, n);
  return fits ? std::string() : "columns too long for a pair of 4-column blocks in shared memory";
}

std::string register_ring_limit(const Problem& problem) {
  const int m = int(problem.m), n = int(problem.n);
  const bool fits = problem.dtype == "float" ? jacobi::fits_in_registers<float>(m, n, true)
                                             : jacobi::fits_in_registers<double>(m, n, true);
  return fits ? std::string() : "more than 64 columns or 64 rows";
}

}  // namespace rooflab::bench
