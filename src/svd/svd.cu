// rooflab::svd, the entry point: checks the arguments, runs the matrix on the path the dispatch
// picks (src/svd/dispatch.cpp; the method is in src/svd/jacobi.cuh), again on the transposed
// triangle where that path ran out of sweeps, and reports its status, which the kernels write
// straight into page-locked host memory.
#include <string>

#include "core/pinned_buffer.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"

namespace rooflab {

template <class T>
SvdInfo svd(const T* A, int m, int n, int lda, T* S, T* U, int ldu, T* V, int ldv,
            const SvdOptions& opt, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const jacobi::Problem<T> problem =
      jacobi::single_matrix_problem(op, A, m, n, lda, S, U, ldu, V, ldv, opt);
  require(A != nullptr, op, "A", "must not be null");
  require(lda >= m, op, "lda", "must be at least m = " + std::to_string(m));
  require(S != nullptr, op, "S", "must not be null");
  if (opt.compute_uv) {
    require(U != nullptr, op, "U", "must not be null when compute_uv is set");
    require(V != nullptr, op, "V", "must not be null when compute_uv is set");
    require(ldu >= m, op, "ldu", "must be at least m = " + std::to_string(m));
    require(ldv >= n, op, "ldv", "must be at least n = " + std::to_string(n));
  }

  // The kernels write the status straight into page-locked host memory, kept per host thread: a
  // call then needs no scratch, no zeroed summary and no copy back, only the synchronization. On
  // an H200 the call took 136-142 us at 25 x 25 with them and takes 125-129 us without, against
  // 121-125 us for the register ring's kernel alone (the same five matrices); allocating the
  // page-locked memory on every call would cost about a millisecond.
  thread_local PinnedBuffer<jacobi::MatrixStatus> status(
      1, cudaHostAllocMapped | cudaHostAllocPortable);
  *status.data() = jacobi::MatrixStatus{};  // "not converged" unless the run says otherwise
  jacobi::MatrixStatus* device_status = nullptr;
  ROOFLAB_CUDA(
      op, "mapping page-locked host memory for the device",
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_status), status.data(), 0));
  const jacobi::Report report{device_status, nullptr};
  const jacobi::Path path = jacobi::production_path<T>(m, n, 1, opt.compute_uv);
  jacobi::Problem<T> first_try = problem;
  first_try.second_try_follows = jacobi::tries_again_on_transposed_triangle(path, opt.max_sweeps);
  jacobi::run_path(first_try, path, report, stream);
  ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
  const jacobi::MatrixStatus first = *status.data();
  require(!first.bad_input, op, "A", "contains NaN or Inf");
  if (first.converged) return jacobi::to_info(first);
  // Out of sweeps: the second try, whose sweeps count on top of the first's.
  *status.data() = jacobi::MatrixStatus{};
  if (!jacobi::solve_again_on_transposed_triangle(problem, 0, path, report, stream))
    return jacobi::to_info(first);
  ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
  SvdInfo info = jacobi::to_info(*status.data());
  info.sweeps += first.sweeps;
  return info;
}

template SvdInfo svd<float>(const float*, int, int, int, float*, float*, int, float*, int,
                            const SvdOptions&, cudaStream_t);
template SvdInfo svd<double>(const double*, int, int, int, double*, double*, int, double*, int,
                             const SvdOptions&, cudaStream_t);

}  // namespace rooflab
