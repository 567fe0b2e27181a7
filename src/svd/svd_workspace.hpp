#pragma once
// The svd and svd-batched ops' problem instance: `batch` m x n matrices of one class on the device
// (packed column-major; "random": entries uniform in [-1, 1) from the counter-based streams, the
// other classes of cpu/svd_matrices.hpp drawn on the host), S, U and V poisoned with NaN before
// every run, and the check: LAPACK's SVD tests (ddrvbd's ratios, each <= 35 in units of the type's
// epsilon) and the singular values against LAPACK, on the host.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/dtype.hpp"
#include "bench/registry.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/device_buffer.hpp"
#include "svd/jacobi.hpp"

namespace rooflab::bench {

class SvdWorkspaceBase : public Workspace {
 public:
  SvdWorkspaceBase(int m, int n, int batch, DType dtype, std::string matrix_class)
      : m(m),
        n(n),
        batch(batch),
        k(m < n ? m : n),
        dtype(dtype),
        matrix_class(std::move(matrix_class)) {}
  const int m, n, batch, k;
  const DType dtype;
  const std::string matrix_class;  // a name of cpu::svd_matrix_classes()
};

template <class T>
class SvdWorkspace : public SvdWorkspaceBase {
 public:
  SvdWorkspace(int m, int n, int batch, std::string matrix_class);
  // "random": the device fill of stream `seed`, as every op draws its inputs. Another class:
  // matrix b is cpu::svd_batch_test_matrix<T>(class, m, n, seed, b), drawn on the host and
  // uploaded at once.
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copies for CPU variants: the inputs, and outputs to write (NaN until written).
  void prepare_host();
  // Matrix b exactly as the device holds it, in double.
  cpu::Matrix host_matrix(int b) const;
  // The whole batch as the library's internal entry points take it, with this workspace's
  // report memory (statuses and summary reset).
  jacobi::Problem<T> problem(cudaStream_t stream);
  jacobi::Report report() const;

  DeviceBuffer<T> a, s, u, v;
  std::vector<T> host_a, host_s, host_u, host_v;
  // The default tolerance for these sizes (vendor comparators keep their own).
  T tol() const;
  // The sweeps of the last run, as the rung's note: "11 sweeps", or "9-12 sweeps" over a batch,
  // from this workspace's report memory or record_library_sweeps; empty when neither was written
  // since the last refill (a vendor rung). For one double matrix of at most lapack_sweeps_limit rows
  // and columns, LAPACK dgesvj's sweeps on the same matrix follow, the bar of the count:
  // "11 sweeps; LAPACK dgesvj 9" (dgesvj computing U and V takes seconds beyond).
  std::string sweeps_note() const;
  static constexpr int lapack_sweeps_limit = 512;
  // Where a rung that calls the public rooflab::svd or svd_batched (whose report stays inside
  // them) puts the sweeps it got back: the fewest and the most over the batch.
  void record_library_sweeps(int fewest, int most);

 private:
  // The batch of a class other than "random", matrix after matrix, as cpu::svd_batch_test_matrix
  // draws it.
  std::vector<T> draw_batch(std::uint64_t seed) const;

  DeviceBuffer<jacobi::MatrixStatus> statuses_;
  DeviceBuffer<jacobi::BatchSummary> summary_;
  std::uint64_t seed_ = 0;
  int library_fewest_sweeps_ = -1, library_most_sweeps_ = -1;
  // The batch as uploaded, for every class but "random" (whose matrices host_matrix regenerates
  // from the stream): the host copy that host_matrix reads.
  std::vector<T> drawn_batch_;
  // lapack_jacobi_sweeps of the matrix of seed lapack_sweeps_seed_, worked out once per input
  // (every Jacobi rung's note asks).
  mutable std::optional<cpu::JacobiSweeps> lapack_sweeps_;
  mutable std::uint64_t lapack_sweeps_seed_ = 0;
};

// Visits the workspace as its concrete type: fn(SvdWorkspace<float>&) or fn(SvdWorkspace<double>&).
template <class Fn>
void visit_svd_workspace(Workspace& workspace, Fn&& fn) {
  auto& base = static_cast<SvdWorkspaceBase&>(workspace);
  if (base.dtype == DType::f32)
    fn(static_cast<SvdWorkspace<float>&>(base));
  else
    fn(static_cast<SvdWorkspace<double>&>(base));
}

std::unique_ptr<Workspace> make_svd_workspace(int m, int n, int batch, DType dtype,
                                              const std::string& matrix_class);

// The class of --matrix for `op` (svd, svd-batched): "random" when none was asked for; throws
// rooflab::Error naming the classes for an unknown one.
std::string resolve_matrix_class(const std::string& requested, const char* op);

// A Jacobi rung's note: its workspace's sweeps_note().
std::string svd_sweeps_note(Workspace& workspace);

// A Jacobi rung's run, for the rungs of both ladders that run one kernel family on its own: one of
// the global-memory schedules, or one of the library's paths, on the workspace's matrices.
std::function<void(Workspace&, cudaStream_t)> run_schedule(jacobi::GlobalSchedule schedule);
std::function<void(Workspace&, cudaStream_t)> run_on_path(jacobi::Path path);

// The limit of the blocked rungs: empty when a pair of 4-column blocks of an m x n matrix of the
// problem's type fits in a block's shared memory.
std::string blocked_limit(const Problem& problem);

// The limit of the register-ring rungs: empty when the matrix has at most 64 columns and 64 rows.
std::string register_ring_limit(const Problem& problem);

// The nominal flops of one SVD, the LAPACK-style count 4 M N^2 + 8 N^3 (M = max(m, n),
// N = min(m, n)): a fixed yardstick for comparing methods, not the Jacobi sweeps' actual work.
double nominal_svd_flops(std::int64_t m, std::int64_t n);

}  // namespace rooflab::bench
