#pragma once
// The Jacobi SVD paper's system (Bezruchenko & Egunov 2023): what the paper calls SVD by Jacobi's
// method, in our reading of its listings the cyclic Jacobi eigenvalue iteration, ported to CUDA one
// optimization at a time. The problem is a symmetric n x n matrix A = B^T B with B random, so the
// values the iteration reads off as column sums of the converged A (the paper's getSum) are the
// eigenvalues of A (its singular values too, A being positive semi-definite) and the squared
// singular values of B. Lab only: the library's SVD
// is src/svd.
#include <cusolverDn.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

// The paper's tables, as a set of flags: each rung belongs to the tables it reproduces and skips
// the sizes of the other tables, so that every table reads straight from the rows.
enum PaperTable : unsigned {
  table1 = 1u,  // CPU, first GPU version, cuSOLVER at 25..125
  table2 = 2u,  // before / after unified / after not unified at 25..100
  table3 = 4u,  // blocks x threads at 32..256
  table4 = 8u,  // loop step 1 against step = threads at 100..500
};

// Every size of the four tables, ascending (what `rooflab bench svd-paper` runs by default).
std::vector<std::int64_t> paper_report_sizes();

// Limit of a rung that belongs to `tables`: at a size of another table only, skipped saying so;
// beyond max_n, skipped for its cost (`cost` says why one run would take too long). Sizes of no
// table run up to max_n.
std::function<std::string(const Problem&)> paper_limit(unsigned tables, std::int64_t max_n,
                                                       std::string cost);

// How the last run ended: a rung that reports nothing, or stops at its sweep limit, fails.
enum class Convergence { unreported, converged, sweep_limit, vendor_info };

class SvdPaperWorkspace : public Workspace {
 public:
  explicit SvdPaperWorkspace(int n);
  ~SvdPaperWorkspace() override;
  SvdPaperWorkspace(const SvdPaperWorkspace&) = delete;
  SvdPaperWorkspace& operator=(const SvdPaperWorkspace&) = delete;

  // A = B^T B for a fresh random n x n B, its LAPACK eigenvalues, the threshold for it; outputs
  // poisoned (NaN) and the convergence report cleared.
  void refill(std::uint64_t seed) override;
  // Eigenvalues (in any order) against LAPACK dsyev, and, where the rung wrote them, the
  // eigenvectors: residual |A q_i - lambda_i q_i| and orthogonality |Q^T Q - I|. Errors are
  // relative to the largest eigenvalue; the bound is `tolerance`.
  Check check(Where where) override;

  // Called by the paper's rungs when their host loop ends.
  void report_sweeps(int sweeps, bool converged);

  // Created on first use and kept, so that runs pay no set-up; max sweeps set by each run.
  syevjInfo_t syevj_parameters();
  gesvdjInfo_t gesvdj_parameters();

  // Values read off the diagonal agree with LAPACK to about 1e-11 of the largest eigenvalue up to
  // n = 300 with cpu::paper_threshold (measured on the CPU); 1e-10 leaves a tenfold margin.
  static constexpr double tolerance = 1e-10;

  const int n;
  // A safety net, never a stopping rule: the iterations here take 5-12 sweeps (cuSOLVER's
  // default is 100). A run that reaches it has not converged and fails the check.
  int max_sweeps = 40;
  double threshold = 0;             // cpu::paper_threshold of the input
  cpu::Matrix host_input;           // A, column-major
  DeviceBuffer<double> input;       // A on the device (rungs copy it; none may write it)
  DeviceBuffer<double> values;      // out (GPU rungs): n eigenvalues, any order
  DeviceBuffer<double> vectors;     // out (GPU rungs): eigenvectors as columns, in values' order
  std::vector<double> host_values;  // out (CPU rungs)
  cpu::Matrix host_vectors;         // out (CPU rungs)
  bool vectors_written = false;     // set by rungs that return eigenvectors
  Convergence convergence = Convergence::unreported;
  int sweeps = 0;
  DeviceBuffer<int> vendor_info;  // cuSOLVER's info: 0 when it converged

 private:
  std::vector<double> reference_;  // LAPACK eigenvalues, descending
  syevjInfo_t syevj_ = nullptr;
  gesvdjInfo_t gesvdj_ = nullptr;
};

}  // namespace rooflab::bench
