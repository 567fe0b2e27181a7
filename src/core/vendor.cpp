#include "core/vendor.hpp"

#include <map>
#include <string>

#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab {
namespace {

template <class Handle, class Create, class Destroy>
class HandlePerDevice {
 public:
  HandlePerDevice(Create create, Destroy destroy) : create_(create), destroy_(destroy) {}
  ~HandlePerDevice() {
    for (auto& entry : handles_) destroy_(entry.second);
  }
  Handle get(const char* op) {
    int device = 0;
    ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
    auto found = handles_.find(device);
    if (found != handles_.end()) return found->second;
    Handle handle{};
    create_(&handle, op);
    handles_[device] = handle;
    return handle;
  }

 private:
  Create create_;
  Destroy destroy_;
  std::map<int, Handle> handles_;
};

using CusolverHandles =
    HandlePerDevice<cusolverDnHandle_t, void (*)(cusolverDnHandle_t*, const char*),
                    void (*)(cusolverDnHandle_t)>;

CusolverHandles cusolver_handles() {
  return CusolverHandles([](cusolverDnHandle_t* handle,
                            const char* op) { ROOFLAB_CUSOLVER(op, cusolverDnCreate(handle)); },
                         [](cusolverDnHandle_t handle) { cusolverDnDestroy(handle); });
}

// The current device's handle of `handles`, bound to `stream`.
cusolverDnHandle_t bound(CusolverHandles& handles, cudaStream_t stream, const char* op) {
  const cusolverDnHandle_t handle = handles.get(op);
  ROOFLAB_CUSOLVER(op, cusolverDnSetStream(handle, stream));
  return handle;
}

using StreamPerDevice =
    HandlePerDevice<cudaStream_t, void (*)(cudaStream_t*, const char*), void (*)(cudaStream_t)>;

StreamPerDevice non_blocking_streams() {
  return StreamPerDevice(
      [](cudaStream_t* stream, const char* op) {
        ROOFLAB_CUDA(op, "creating a stream",
                     cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
      },
      [](cudaStream_t stream) { cudaStreamDestroy(stream); });
}

}  // namespace

void check_cublas(cublasStatus_t status, const char* op, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(op, "", std::string(call) + " failed", cublasGetStatusName(status));
}

void check_cusolver(cusolverStatus_t status, const char* op, const char* call) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  throw Error(op, "", std::string(call) + " failed",
              "cusolverStatus " + std::to_string(int(status)));
}

cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local HandlePerDevice<cublasHandle_t, void (*)(cublasHandle_t*, const char*),
                               void (*)(cublasHandle_t)>
      handles(
          [](cublasHandle_t* handle, const char* op) { ROOFLAB_CUBLAS(op, cublasCreate(handle)); },
          [](cublasHandle_t handle) { cublasDestroy(handle); });
  const cublasHandle_t handle = handles.get("cublas_handle");
  ROOFLAB_CUBLAS("cublas_handle", cublasSetStream(handle, stream));
  return handle;
}

cusolverDnHandle_t cusolver_handle(cudaStream_t stream) {
  thread_local CusolverHandles handles = cusolver_handles();
  return bound(handles, stream, "cusolver_handle");
}

cudaStream_t side_stream() {
  thread_local StreamPerDevice streams = non_blocking_streams();
  return streams.get("side_stream");
}

cudaStream_t thread_stream() {
  thread_local StreamPerDevice streams = non_blocking_streams();
  return streams.get("thread_stream");
}

cusolverDnHandle_t side_cusolver_handle() {
  // The stream first: thread-local objects go in the reverse order of their construction, so the
  // handle goes before the stream it is bound to.
  const cudaStream_t stream = side_stream();
  thread_local CusolverHandles handles = cusolver_handles();
  return bound(handles, stream, "side_cusolver_handle");
}

}  // namespace rooflab
