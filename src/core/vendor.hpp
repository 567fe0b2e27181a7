#pragma once
// Vendor libraries (cuBLAS, cuSOLVER): checked calls and one handle per host thread and device,
// created on first use, so comparators and the SVD never pay handle creation inside a timing. Per
// thread, because binding a handle to a stream and calling through it are two steps: threads that
// shared a handle could each run on the other's stream.
#include <cublas_v2.h>
#include <cusolverDn.h>

namespace rooflab {

void check_cublas(cublasStatus_t status, const char* op, const char* call);
void check_cusolver(cusolverStatus_t status, const char* op, const char* call);

// Handles for the current device, bound to `stream` before they are returned.
cublasHandle_t cublas_handle(cudaStream_t stream);
cusolverDnHandle_t cusolver_handle(cudaStream_t stream);

// A second stream of the current device, non-blocking (it never waits on the legacy default
// stream), and a cuSOLVER handle bound to it, also one per host thread and device: for a solver
// call that runs beside work on the caller's stream, forked and joined with events. A handle of
// its own, because a handle's calls share its internal workspace.
cudaStream_t side_stream();
cusolverDnHandle_t side_cusolver_handle();

// A stream of the current device for a worker thread's own work (a WorkerPool's thread queuing a
// call of its own), non-blocking, one per host thread and device, and not side_stream(): work
// queued on it may fork to that.
cudaStream_t thread_stream();

}  // namespace rooflab

#define ROOFLAB_CUBLAS(op, call) ::rooflab::check_cublas((call), (op), #call)
#define ROOFLAB_CUSOLVER(op, call) ::rooflab::check_cusolver((call), (op), #call)
