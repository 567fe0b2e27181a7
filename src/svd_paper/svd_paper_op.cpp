// The svd-paper op: problem, model, workspace and check, the CPU rungs and the vendor comparators.
// The paper's GPU rungs are in ladder.cu.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "core/vendor.hpp"
#include "cpu/svd_paper.hpp"
#include "rooflab/error.hpp"
#include "svd_paper/svd_paper_workspace.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* op_name = "bench svd-paper";

const std::vector<std::int64_t> table1_sizes{25, 50, 75, 100, 125};
const std::vector<std::int64_t> table2_sizes{25, 50, 75, 100};
const std::vector<std::int64_t> table3_sizes{32, 64, 96, 128, 160, 192, 224, 256};
const std::vector<std::int64_t> table4_sizes{100, 200, 300, 400, 500};

struct TableSizes {
  PaperTable table;
  const char* name;
  const std::vector<std::int64_t>& sizes;
};
const TableSizes paper_tables[] = {{table1, "Table 1", table1_sizes},
                                   {table2, "Table 2", table2_sizes},
                                   {table3, "Table 3", table3_sizes},
                                   {table4, "Table 4", table4_sizes}};

bool contains(const std::vector<std::int64_t>& sizes, std::int64_t n) {
  return std::find(sizes.begin(), sizes.end(), n) != sizes.end();
}

std::string table_names(unsigned tables) {
  std::string names;
  for (const TableSizes& table : paper_tables)
    if (tables & table.table) names += (names.empty() ? "" : ", ") + std::string(table.name);
  return names;
}

// Tables (as flags) that have size n.
unsigned tables_with(std::int64_t n) {
  unsigned tables = 0;
  for (const TableSizes& table : paper_tables)
    if (contains(table.sizes, n)) tables |= table.table;
  return tables;
}

}  // namespace

std::vector<std::int64_t> paper_report_sizes() {
  std::set<std::int64_t> sizes;
  for (const TableSizes& table : paper_tables) sizes.insert(table.sizes.begin(), table.sizes.end());
  return {sizes.begin(), sizes.end()};
}

std::function<std::string(const Problem&)> paper_limit(unsigned tables, std::int64_t max_n,
                                                       std::string cost) {
  return [tables, max_n, cost](const Problem& problem) -> std::string {
    const unsigned with_n = tables_with(problem.n);
    if (with_n != 0 && (with_n & tables) == 0)
      return fmt::format("n = {} is a size of {} only; this rung belongs to {}", problem.n,
                         table_names(with_n), table_names(tables));
    if (problem.n > max_n) return fmt::format("{} (limit n <= {})", cost, max_n);
    return {};
  };
}

SvdPaperWorkspace::SvdPaperWorkspace(int n)
    : n(n),
      input(std::size_t(n) * n),
      values(std::size_t(n)),
      vectors(std::size_t(n) * n),
      vendor_info(1) {}

SvdPaperWorkspace::~SvdPaperWorkspace() {
  if (syevj_ != nullptr) cusolverDnDestroySyevjInfo(syevj_);
  if (gesvdj_ != nullptr) cusolverDnDestroyGesvdjInfo(gesvdj_);
}

void SvdPaperWorkspace::refill(std::uint64_t seed) {
  host_input = cpu::gram_matrix(n, n, seed);
  reference_ = cpu::lapack_symmetric_eigenvalues(host_input);
  threshold = cpu::paper_threshold(host_input);
  input.upload(host_input.values);
  values.fill_bytes(0xFF);  // NaN: a value nobody writes fails the check
  vectors.fill_bytes(0xFF);
  vendor_info.fill_bytes(0xFF);  // -1: cuSOLVER never ran
  host_values.assign(n, std::numeric_limits<double>::quiet_NaN());
  host_vectors = cpu::Matrix{};
  vectors_written = false;
  convergence = Convergence::unreported;
  sweeps = 0;
}

void SvdPaperWorkspace::report_sweeps(int sweeps_run, bool converged) {
  sweeps = sweeps_run;
  convergence = converged ? Convergence::converged : Convergence::sweep_limit;
}

syevjInfo_t SvdPaperWorkspace::syevj_parameters() {
  if (syevj_ == nullptr) ROOFLAB_CUSOLVER(op_name, cusolverDnCreateSyevjInfo(&syevj_));
  return syevj_;
}

gesvdjInfo_t SvdPaperWorkspace::gesvdj_parameters() {
  if (gesvdj_ == nullptr) ROOFLAB_CUSOLVER(op_name, cusolverDnCreateGesvdjInfo(&gesvdj_));
  return gesvdj_;
}

Check SvdPaperWorkspace::check(Where where) {
  const auto fail = [](std::string why) {
    return Check{false, INFINITY, tolerance, std::move(why)};
  };
  switch (convergence) {
    case Convergence::unreported: return fail("the rung reported no convergence");
    case Convergence::sweep_limit:
      return fail(
          fmt::format("not converged: an off-diagonal element is still above the threshold "
                      "{:.3g} after {} sweeps (the limit)",
                      threshold, sweeps));
    case Convergence::vendor_info: {
      const int info = vendor_info.download()[0];
      if (info != 0)
        return fail(
            fmt::format("cuSOLVER did not converge in {} sweeps (info = {})", max_sweeps, info));
      break;
    }
    case Convergence::converged: break;
  }

  const std::vector<double> got = where == Where::gpu ? values.download() : host_values;
  if (int(got.size()) != n) return fail("no values");
  for (int i = 0; i < n; ++i)
    if (std::isnan(got[i])) return fail(fmt::format("value {} is NaN (never written)", i));
  // Errors relative to the largest eigenvalue: the iteration is accurate to its threshold, which
  // scales with ||A||, not with each eigenvalue (small ones have only absolute accuracy).
  const double scale = std::max({std::abs(reference_.front()), std::abs(reference_.back()),
                                 std::numeric_limits<double>::min()});
  std::vector<double> sorted = got;
  std::sort(sorted.begin(), sorted.end(), std::greater<double>());
  double error = 0;
  std::string detail = "eigenvalues within tolerance";
  for (int i = 0; i < n; ++i) {
    const double e = std::abs(sorted[i] - reference_[i]) / scale;
    if (e > error) {
      error = e;
      detail = fmt::format("eigenvalue {} (descending): got {:.17g}, LAPACK {:.17g}", i, sorted[i],
                           reference_[i]);
    }
  }

  if (vectors_written) {
    const std::vector<double> q = where == Where::gpu ? vectors.download() : host_vectors.values;
    if (q.size() != std::size_t(n) * n) return fail("no eigenvectors");
    const auto at = [&](int row, int column) {
      return q[std::size_t(row) + std::size_t(column) * n];
    };
    for (std::size_t i = 0; i < q.size(); ++i)
      if (std::isnan(q[i]))
        return fail(fmt::format("eigenvector element {} is NaN (never written)", i));
    std::vector<double> aq(n);
    for (int column = 0; column < n; ++column) {
      std::fill(aq.begin(), aq.end(), 0.0);
      for (int l = 0; l < n; ++l)
        for (int row = 0; row < n; ++row) aq[row] += host_input(row, l) * at(l, column);
      for (int row = 0; row < n; ++row) {
        const double e = std::abs(aq[row] - got[column] * at(row, column)) / scale;
        if (e > error) {
          error = e;
          detail = fmt::format("eigenvector {}: |A q - lambda q| = {:.3g} lambda_max at row {}",
                               column, e, row);
        }
      }
      for (int other = 0; other <= column; ++other) {
        double dot = 0;
        for (int l = 0; l < n; ++l) dot += at(l, column) * at(l, other);
        const double e = std::abs(dot - (other == column ? 1.0 : 0.0));
        if (e > error) {
          error = e;
          detail = fmt::format("eigenvectors {} and {}: q^T q differs from the identity by {:.3g}",
                               other, column, e);
        }
      }
    }
  }
  return Check{error <= tolerance, error, tolerance, detail};
}

namespace {

// The problem sizes' limit: the host builds B^T B and LAPACK's reference for every refill, and
// the paper's algorithm costs O(n^4) per sweep on the GPU; nothing larger finishes in a session.
constexpr std::int64_t largest_n = 2048;

ROOFLAB_OP(Op{
    "svd-paper",
    "The Jacobi SVD paper's Jacobi \"SVD\" (the symmetric Jacobi eigenvalue iteration) on n x n "
    "doubles, ported to CUDA one optimization at a time; here A = B^T B with B random (the paper "
    "does not say which matrices it used)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = 100;
      require(problem.n >= 1 && problem.n <= largest_n, op_name, "--n",
              fmt::format("must be between 1 and {} (got {})", largest_n, problem.n));
      require(problem.dtype.empty() || problem.dtype == "double", op_name, "--dtype",
              "'" + problem.dtype + "': the paper's system is double only");
      problem.dtype = "double";
      return problem;
    },
    [](const Problem& problem) {
      return fmt::format("n = {} (A = B^T B, B random {} x {}), double", problem.n, problem.n,
                         problem.n);
    },
    [](const Problem& problem) {
      // The least work of a symmetric eigendecomposition with vectors: read A, write the values
      // (bytes); 9 n^3 flops for the symmetric QR algorithm with vectors (Golub & Van Loan).
      const double n = double(problem.n);
      return Model{8 * (n * n + n), 9 * n * n * n, Ceiling::fp64_peak};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<SvdPaperWorkspace>(int(problem.n));
    },
    [](bool quick) {
      std::vector<Problem> problems;
      // Quick: one size of Tables 1-2 and one of Table 3 (Table 4's rungs start at n = 100).
      const std::vector<std::int64_t> sizes =
          quick ? std::vector<std::int64_t>{25, 64} : paper_report_sizes();
      for (const std::int64_t n : sizes) {
        Problem problem;
        problem.n = n;
        problems.push_back(problem);
      }
      return problems;
    },
    {"--n"},
});

// What P0's time goes to, beside the paper's profile of its CPU version (80-85 % of the time in
// the rotation products, l. 75): the run's rotations replayed alone (cpu::replay_rotations)
// against whole runs on the same input, nine of each in alternation (a host's clock drifts between
// two series run one after the other), their medians. Reported in the row's note.
std::string rotation_share(const SvdPaperWorkspace& w) {
  constexpr int pairs = 9;
  const auto elapsed_ms = [](const std::function<void()>& run) {
    const auto start = std::chrono::steady_clock::now();
    run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  const auto median = [](std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  std::vector<cpu::RotationStep> steps;
  cpu::paper_jacobi(w.host_input, w.threshold, w.max_sweeps, &steps);
  std::vector<double> whole, rotations;
  for (int i = 0; i < pairs; ++i) {
    whole.push_back(
        elapsed_ms([&] { cpu::paper_jacobi(w.host_input, w.threshold, w.max_sweeps); }));
    rotations.push_back(elapsed_ms([&] { cpu::replay_rotations(w.host_input, steps); }));
  }
  const double whole_ms = median(whole), rotations_ms = median(rotations);
  return fmt::format(
      "{} rotations; applying them alone takes {:.1f}% of a run ({:.3g} of {:.3g} ms, the rest "
      "the pair and convergence tests)",
      steps.size(), 100 * rotations_ms / whole_ms, rotations_ms, whole_ms);
}

// Rung 0 — P0, the paper's algorithm on the CPU (its starting point, Table 1's CPU column).
// One core sweeps the pairs j < k and applies each rotation to rows and columns j and k only:
// O(n) per rotation, where the GPU rungs multiply by the whole n x n rotation matrix, as the
// paper's CPU version did too (the products were 80-85% of its time, l. 75): the iteration is the
// paper's, its cost per rotation rooflab's.
ROOFLAB_VARIANT(Variant{
    "svd-paper",
    0,
    "cpu",
    "P0: the paper's algorithm on one CPU core, O(n) per rotation (ours: no code shown) (Table 1)",
    Where::cpu,
    false,
    paper_limit(table1, 256, "one CPU core: about 4n^2 rotations of O(n) each"),
    on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t) {
      cpu::PaperJacobiResult result = cpu::paper_jacobi(w.host_input, w.threshold, w.max_sweeps);
      w.host_values = std::move(result.values);
      w.host_vectors = std::move(result.u);
      w.vectors_written = true;
      w.report_sweeps(result.sweeps, result.converged);
    }),
    {},
    [](Workspace& w) { return rotation_share(static_cast<SvdPaperWorkspace&>(w)); }});

// Vendor — cuSOLVER's symmetric Jacobi eigensolver, values and vectors (Table 1 compares with
// "the same algorithm in cuSOLVER" without naming the routine; syevj computes what the paper's
// system computes). Workspace query and stream-ordered scratch inside the run, as a caller would
// do.
ROOFLAB_VARIANT(Variant{
    "svd-paper", 90, "cusolver-syevj", "cuSOLVER syevj: symmetric Jacobi, values and vectors",
    Where::gpu, true, no_limit,
    on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
      const cusolverDnHandle_t handle = cusolver_handle(stream);
      const syevjInfo_t parameters = w.syevj_parameters();
      ROOFLAB_CUSOLVER(op_name, cusolverDnXsyevjSetMaxSweeps(parameters, w.max_sweeps));
      // syevj overwrites its matrix with the eigenvectors: start from a copy of the input.
      ROOFLAB_CUDA(op_name, "copying the input for syevj, which overwrites it",
                   cudaMemcpyAsync(w.vectors.data(), w.input.data(), w.input.bytes(),
                                   cudaMemcpyDeviceToDevice, stream));
      int lwork = 0;
      ROOFLAB_CUSOLVER(op_name, cusolverDnDsyevj_bufferSize(
                                    handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, w.n,
                                    w.vectors.data(), w.n, w.values.data(), &lwork, parameters));
      StreamBuffer work(std::size_t(lwork) * sizeof(double), stream, op_name);
      ROOFLAB_CUSOLVER(
          op_name, cusolverDnDsyevj(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, w.n,
                                    w.vectors.data(), w.n, w.values.data(), work.as<double>(),
                                    lwork, w.vendor_info.data(), parameters));
      w.vectors_written = true;
      w.convergence = Convergence::vendor_info;
    })});

// Vendor — cuSOLVER's one-sided Jacobi SVD on the same symmetric matrix: for a positive
// semi-definite A the singular values are the eigenvalues and U holds the eigenvectors.
ROOFLAB_VARIANT(Variant{
    "svd-paper", 91, "cusolver-gesvdj", "cuSOLVER gesvdj: Jacobi SVD of the same matrix, U S V^T",
    Where::gpu, true, no_limit,
    on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
      const cusolverDnHandle_t handle = cusolver_handle(stream);
      const gesvdjInfo_t parameters = w.gesvdj_parameters();
      ROOFLAB_CUSOLVER(op_name, cusolverDnXgesvdjSetMaxSweeps(parameters, w.max_sweeps));
      StreamBuffer a(w.input.bytes(), stream, op_name);  // gesvdj destroys its input
      StreamBuffer v(w.input.bytes(), stream, op_name);
      ROOFLAB_CUDA(op_name, "copying the input for gesvdj, which overwrites it",
                   cudaMemcpyAsync(a.data(), w.input.data(), w.input.bytes(),
                                   cudaMemcpyDeviceToDevice, stream));
      int lwork = 0;
      ROOFLAB_CUSOLVER(op_name, cusolverDnDgesvdj_bufferSize(
                                    handle, CUSOLVER_EIG_MODE_VECTOR, 0, w.n, w.n, a.as<double>(),
                                    w.n, w.values.data(), w.vectors.data(), w.n, v.as<double>(),
                                    w.n, &lwork, parameters));
      StreamBuffer work(std::size_t(lwork) * sizeof(double), stream, op_name);
      ROOFLAB_CUSOLVER(
          op_name,
          cusolverDnDgesvdj(handle, CUSOLVER_EIG_MODE_VECTOR, 0, w.n, w.n, a.as<double>(), w.n,
                            w.values.data(), w.vectors.data(), w.n, v.as<double>(), w.n,
                            work.as<double>(), lwork, w.vendor_info.data(), parameters));
      w.vectors_written = true;
      w.convergence = Convergence::vendor_info;
    })});

// Vendor — LAPACK dsyev on the CPU (eigenvalues only: the reference's own call).
ROOFLAB_VARIANT(Variant{"svd-paper", 92, "lapack-dsyev",
                        "LAPACK dsyev on the CPU, eigenvalues only", Where::cpu, true, no_limit,
                        on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t) {
                          w.host_values = cpu::lapack_symmetric_eigenvalues(w.host_input);
                          w.convergence = Convergence::converged;  // dsyev throws when it fails
                        })});

}  // namespace
}  // namespace rooflab::bench
