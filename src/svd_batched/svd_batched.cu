// rooflab::svd_batched, the entry point: checks the arguments, runs the batch on the path the
// dispatch picks (src/svd/dispatch.cpp), again on the transposed triangle for each matrix that
// path left unconverged, and reports: per-matrix info (copied to the host, or left in device
// memory), or an exception naming the first matrix with NaN or Inf, or how many did not converge.
#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/pinned_buffer.hpp"
#include "core/vendor.hpp"
#include "core/worker_pool.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"

namespace rooflab {
namespace {

// The statuses into the caller's info through page-locked memory kept per host thread, a chunk at
// a time: a copy into pageable memory is staged by the driver at a fraction of the link's rate
// (100000 statuses are 2.4 MB), and a page-locked buffer as large as the batch would stay
// allocated as long as the thread. The conversion loop reads the buffer through a plain pointer:
// through the thread_local itself every status cost a call to look the buffer up, and one to
// convert it (100000 statuses: the native Python call took 851 us with them, 459 us without, on
// an H200 machine).
void copy_info_to_host(const jacobi::MatrixStatus* statuses, int batch, SvdInfo* info,
                       cudaStream_t stream) {
  constexpr const char* op = "svd_batched";
  constexpr int chunk = (1 << 20) / int(sizeof(jacobi::MatrixStatus));
  thread_local PinnedBuffer<jacobi::MatrixStatus> staging(chunk, cudaHostAllocPortable);
  const jacobi::MatrixStatus* const staged = staging.data();
  for (int first = 0; first < batch; first += chunk) {
    const int count = std::min(chunk, batch - first);
    ROOFLAB_CUDA(op, "copying the matrices' statuses to the host",
                 cudaMemcpyAsync(staging.data(), statuses + first,
                                 sizeof(jacobi::MatrixStatus) * std::size_t(count),
                                 cudaMemcpyDeviceToHost, stream));
    ROOFLAB_CUDA(op, "waiting for the statuses", cudaStreamSynchronize(stream));
    for (int b = 0; b < count; ++b) info[first + b] = jacobi::to_info(staged[b]);
  }
}

// Each matrix's status into the caller's device arrays of SvdInfo's fields (those not null).
__global__ void spread_statuses(const jacobi::MatrixStatus* statuses, int batch,
                                SvdDeviceInfo info) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;  // b + stride may pass 2^31
  for (std::int64_t b = blockIdx.x * blockDim.x + threadIdx.x; b < batch; b += stride) {
    const jacobi::MatrixStatus status = statuses[b];
    if (info.sweeps != nullptr) info.sweeps[b] = status.sweeps;
    if (info.converged != nullptr) info.converged[b] = status.converged != 0;
    if (info.off != nullptr) info.off[b] = status.off;
  }
}

void spread_info_on_device(const jacobi::MatrixStatus* statuses, int batch,
                           const SvdDeviceInfo& info, cudaStream_t stream) {
  constexpr int threads = 256;
  const int blocks =
      int(std::min<std::int64_t>((std::int64_t(batch) + threads - 1) / threads, 1024));
  spread_statuses<<<blocks, threads, 0, stream>>>(statuses, batch, info);
  detail::check_launch("svd_batched", "spread_statuses");
}

// Where the per-matrix info goes: a host array, device arrays, or nowhere.
struct InfoDestination {
  SvdInfo* host = nullptr;
  const SvdDeviceInfo* device = nullptr;
  bool wanted() const { return host != nullptr || device != nullptr; }
};

// The second tries side by side. Each is one matrix's call, which leaves most of the GPU idle
// (256 x 256 in double: a cluster of 16 blocks for about 2.4 ms on an H200) and waits on the host
// between its steps (the test on arrival, the count of columns to complete): queued from one
// thread on several streams they would still run one after another. So the calling thread and
// the threads of a pool kept for the process take them in turn, a pool thread queuing on a stream
// of its own (thread_stream) with its own vendor handles, side stream and page-locked words (all
// kept per host thread). Threads made for each call would make those again every time, and a
// handle's end frees device memory, which waits for the whole device. Up to 8 at once: 8 clusters
// of 16 blocks fill 128 of an H200's 132 SMs. On an H200, 100 stalled 256 x 256 double matrices
// (dlatms modes 3 and 5 at condition 1/eps) took 59-60 ms side by side against 257-259 ms one
// after another, 16 such 512 x 512 ones 65 against 133-134 ms; 100 random 256 x 256 ones take
// 14.3 ms (docs/results/h200-svd-batched-second-tries-e8781b2.md).
constexpr int second_tries_at_once = 8;

WorkerPool& second_try_pool() {
  static WorkerPool pool(
      std::min(second_tries_at_once, std::max(1, int(std::thread::hardware_concurrency()))) - 1);
  return pool;
}

// The matrices the first path left unconverged, solved again on the transposed triangle
// (jacobi::solve_again_on_transposed_triangle; their second try's sweeps count on top of the
// first's): the statuses are read back, in pageable memory (this is the rare call), the second
// tries run, side by side (second_try_pool), and the statuses are read again. Returns every
// matrix's status, both tries' sweeps counted.
template <class T>
std::vector<jacobi::MatrixStatus> solve_unconverged_again(const jacobi::Problem<T>& problem,
                                                          jacobi::Path first_path,
                                                          jacobi::MatrixStatus* statuses,
                                                          cudaStream_t stream) {
  constexpr const char* op = "svd_batched";
  const std::size_t bytes = sizeof(jacobi::MatrixStatus) * std::size_t(problem.batch);
  std::vector<jacobi::MatrixStatus> host(std::size_t(problem.batch));
  const auto read_statuses = [&] {
    ROOFLAB_CUDA(op, "copying the matrices' statuses to the host",
                 cudaMemcpyAsync(host.data(), statuses, bytes, cudaMemcpyDeviceToHost, stream));
    ROOFLAB_CUDA(op, "waiting for the statuses", cudaStreamSynchronize(stream));
  };
  read_statuses();  // also: every first try is done, so the pool's streams need not wait for it
  std::vector<int> again;
  for (int b = 0; b < problem.batch; ++b)
    if (!host[b].converged && !host[b].bad_input) again.push_back(b);
  int device = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  std::vector<int> first_sweeps(host.size(), 0);
  second_try_pool().run(int(again.size()), [&](int index, int worker) {
    const int b = again[std::size_t(index)];
    // The calling thread (worker 0) queues on the caller's stream, read back below; a pool thread
    // on its own, which it waits for before it takes another matrix.
    if (worker > 0) ROOFLAB_CUDA(op, "selecting the device", cudaSetDevice(device));
    const cudaStream_t on = worker > 0 ? thread_stream() : stream;
    try {
      if (jacobi::solve_again_on_transposed_triangle(problem, b, first_path,
                                                     jacobi::Report{statuses + b, nullptr}, on))
        first_sweeps[std::size_t(b)] = host[std::size_t(b)].sweeps;
    } catch (...) {
      // What it queued ends before the error reaches the caller, who frees the batch's buffers
      // on `stream`.
      if (worker > 0) cudaStreamSynchronize(on);
      throw;
    }
    if (worker > 0) ROOFLAB_CUDA(op, "waiting for a second try", cudaStreamSynchronize(on));
  });
  read_statuses();
  for (int b = 0; b < problem.batch; ++b) host[b].sweeps += first_sweeps[b];
  return host;
}

// The outcome of the statuses after the second tries.
SvdBatchOutcome outcome_of(const std::vector<jacobi::MatrixStatus>& statuses) {
  SvdBatchOutcome outcome;
  for (int b = 0; b < int(statuses.size()); ++b)
    if (!statuses[b].converged && !statuses[b].bad_input && outcome.unconverged++ == 0)
      outcome.first_unconverged = b;
  return outcome;
}

template <class T>
SvdBatchOutcome solve_batch(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                            const InfoDestination& destination, const SvdOptions& opt,
                            cudaStream_t stream) {
  constexpr const char* op = "svd_batched";
  const T tol = jacobi::resolve_options<T>(op, m, n, opt);
  require(batch >= 0, op, "batch", "must not be negative");
  if (batch == 0) return {};
  require(A != nullptr, op, "A", "must not be null");
  require(S != nullptr, op, "S", "must not be null");
  require(!opt.compute_uv || U != nullptr, op, "U", "must not be null when compute_uv is set");
  require(!opt.compute_uv || V != nullptr, op, "V", "must not be null when compute_uv is set");

  jacobi::Problem<T> problem = jacobi::packed_batch_problem(A, m, n, batch, S, U, V);
  problem.tol = tol;
  problem.max_sweeps = opt.max_sweeps;
  problem.uv = opt.compute_uv;

  StreamBuffer summary(sizeof(jacobi::BatchSummary), stream, op);
  // Every matrix's status, also without info: the second tries need to know which matrices to
  // solve again.
  StreamBuffer statuses(sizeof(jacobi::MatrixStatus) * std::size_t(batch), stream, op);
  ROOFLAB_CUDA(op, "zeroing the batch summary",
               cudaMemsetAsync(summary.data(), 0, summary.bytes(), stream));
  const jacobi::Report report{statuses.as<jacobi::MatrixStatus>(),
                              summary.as<jacobi::BatchSummary>()};
  const jacobi::Path path = jacobi::production_path<T>(m, n, batch, opt.compute_uv);
  problem.second_try_follows = jacobi::tries_again_on_transposed_triangle(path, opt.max_sweeps);
  jacobi::run_path(problem, path, report, stream);

  // Device info first: a kernel right behind the path's kernels, before the copy.
  if (destination.device != nullptr)
    spread_info_on_device(statuses.as<jacobi::MatrixStatus>(), batch, *destination.device, stream);
  // The summary comes back into page-locked memory kept per host thread: a copy into pageable
  // memory (the stack) returns only once the kernels are done, one wait more than the call needs
  // (8716 2 x 3 float matrices on an H200: 25.0 us a call against 26.4 us before).
  thread_local PinnedBuffer<jacobi::BatchSummary> summary_staging(1, cudaHostAllocPortable);
  ROOFLAB_CUDA(op, "copying the batch summary to the host",
               cudaMemcpyAsync(summary_staging.data(), summary.data(), sizeof(jacobi::BatchSummary),
                               cudaMemcpyDeviceToHost, stream));
  // The statuses' copies wait for the stream too, and with them the summary's.
  if (destination.host != nullptr)
    copy_info_to_host(statuses.as<jacobi::MatrixStatus>(), batch, destination.host, stream);
  else
    ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
  const jacobi::BatchSummary host_summary = *summary_staging.data();
  SvdBatchOutcome outcome;
  if (host_summary.unconverged_count > 0) {
    outcome.unconverged = int(host_summary.unconverged_count);
    outcome.first_unconverged = batch - int(host_summary.first_unconverged_key);
  }
  const bool second_try =
      outcome.unconverged > 0 && jacobi::tries_again_on_transposed_triangle(path, opt.max_sweeps);
  if (second_try) {
    const std::vector<jacobi::MatrixStatus> final_statuses =
        solve_unconverged_again(problem, path, statuses.as<jacobi::MatrixStatus>(), stream);
    outcome = outcome_of(final_statuses);
    if (destination.host != nullptr)
      for (int b = 0; b < batch; ++b) destination.host[b] = jacobi::to_info(final_statuses[b]);
    if (destination.device != nullptr) {
      ROOFLAB_CUDA(op, "copying the matrices' statuses back to the device",
                   cudaMemcpyAsync(statuses.data(), final_statuses.data(), statuses.bytes(),
                                   cudaMemcpyHostToDevice, stream));
      spread_info_on_device(statuses.as<jacobi::MatrixStatus>(), batch, *destination.device,
                            stream);
      ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
    }
  }

  if (host_summary.bad_count > 0)
    throw Error(
        op, "A",
        "matrix " + std::to_string(batch - int(host_summary.first_bad_key)) +
            " contains NaN or Inf (" + std::to_string(host_summary.bad_count) +
            " such matrices; their S, U, V are NaN, every other matrix's results are valid)");
  if (!destination.wanted() && outcome.unconverged > 0)
    throw Error(op, "opt.max_sweeps",
                "matrix " + std::to_string(outcome.first_unconverged) + " did not converge in " +
                    std::to_string(opt.max_sweeps) + " sweeps" +
                    (second_try ? ", nor in as many more on the transposed triangle" : "") + " (" +
                    std::to_string(outcome.unconverged) +
                    " such matrices); pass info to receive per-matrix convergence instead");
  return outcome;
}

}  // namespace

template <class T>
SvdBatchOutcome svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V, SvdInfo* info,
                            const SvdOptions& opt, cudaStream_t stream) {
  return solve_batch(A, m, n, batch, S, U, V, InfoDestination{info, nullptr}, opt, stream);
}

template <class T>
SvdBatchOutcome svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                            const SvdDeviceInfo& info, const SvdOptions& opt, cudaStream_t stream) {
  return solve_batch(A, m, n, batch, S, U, V, InfoDestination{nullptr, &info}, opt, stream);
}

#define ROOFLAB_INSTANTIATE(T)                                                           \
  template SvdBatchOutcome svd_batched<T>(const T*, int, int, int, T*, T*, T*, SvdInfo*, \
                                          const SvdOptions&, cudaStream_t);              \
  template SvdBatchOutcome svd_batched<T>(const T*, int, int, int, T*, T*, T*,           \
                                          const SvdDeviceInfo&, const SvdOptions&, cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab
