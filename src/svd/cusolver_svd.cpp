#include "svd/cusolver_svd.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/vendor.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* op = "bench svd (cuSOLVER)";

// The typed entry points, overloaded on the element type.
cusolverStatus_t gesvdj_buffer_size(cusolverDnHandle_t h, int m, int n, const float* A,
                                    const float* S, const float* U, const float* V, int* lwork,
                                    gesvdjInfo_t params) {
  return cusolverDnSgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, A, m, S, U, m, V, n,
                                      lwork, params);
}
cusolverStatus_t gesvdj_buffer_size(cusolverDnHandle_t h, int m, int n, const double* A,
                                    const double* S, const double* U, const double* V, int* lwork,
                                    gesvdjInfo_t params) {
  return cusolverDnDgesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, A, m, S, U, m, V, n,
                                      lwork, params);
}
cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, float* A, float* S, float* U, float* V,
                        float* work, int lwork, int* info, gesvdjInfo_t params) {
  return cusolverDnSgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, A, m, S, U, m, V, n, work, lwork,
                           info, params);
}
cusolverStatus_t gesvdj(cusolverDnHandle_t h, int m, int n, double* A, double* S, double* U,
                        double* V, double* work, int lwork, int* info, gesvdjInfo_t params) {
  return cusolverDnDgesvdj(h, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, A, m, S, U, m, V, n, work, lwork,
                           info, params);
}
cusolverStatus_t gesvdj_batched_buffer_size(cusolverDnHandle_t h, int m, int n, const float* A,
                                            const float* S, const float* U, const float* V,
                                            int* lwork, gesvdjInfo_t params, int batch) {
  return cusolverDnSgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, A, m, S, U, m, V, n,
                                             lwork, params, batch);
}
cusolverStatus_t gesvdj_batched_buffer_size(cusolverDnHandle_t h, int m, int n, const double* A,
                                            const double* S, const double* U, const double* V,
                                            int* lwork, gesvdjInfo_t params, int batch) {
  return cusolverDnDgesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, A, m, S, U, m, V, n,
                                             lwork, params, batch);
}
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, float* A, float* S, float* U,
                                float* V, float* work, int lwork, int* info, gesvdjInfo_t params,
                                int batch) {
  return cusolverDnSgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, A, m, S, U, m, V, n, work,
                                  lwork, info, params, batch);
}
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, int m, int n, double* A, double* S, double* U,
                                double* V, double* work, int lwork, int* info, gesvdjInfo_t params,
                                int batch) {
  return cusolverDnDgesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, A, m, S, U, m, V, n, work,
                                  lwork, info, params, batch);
}
cusolverStatus_t gesvd_buffer_size(cusolverDnHandle_t h, int m, int n, float*, int* lwork) {
  return cusolverDnSgesvd_bufferSize(h, m, n, lwork);
}
cusolverStatus_t gesvd_buffer_size(cusolverDnHandle_t h, int m, int n, double*, int* lwork) {
  return cusolverDnDgesvd_bufferSize(h, m, n, lwork);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, int m, int n, float* A, float* S, float* U, float* VT,
                       float* work, int lwork, int* info) {
  return cusolverDnSgesvd(h, 'S', 'S', m, n, A, m, S, U, m, VT, n, work, lwork, nullptr, info);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, int m, int n, double* A, double* S, double* U,
                       double* VT, double* work, int lwork, int* info) {
  return cusolverDnDgesvd(h, 'S', 'S', m, n, A, m, S, U, m, VT, n, work, lwork, nullptr, info);
}
cublasStatus_t transpose_square(cublasHandle_t h, int n, const float* in, float* out) {
  const float one = 1, zero = 0;
  return cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, &one, in, n, &zero, in, n, out, n);
}
cublasStatus_t transpose_square(cublasHandle_t h, int n, const double* in, double* out) {
  const double one = 1, zero = 0;
  return cublasDgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, &one, in, n, &zero, in, n, out, n);
}
template <class T>
constexpr cudaDataType cuda_type() {
  return sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
}

class GesvdjParams {
 public:
  GesvdjParams() { ROOFLAB_CUSOLVER(op, cusolverDnCreateGesvdjInfo(&params_)); }
  ~GesvdjParams() { cusolverDnDestroyGesvdjInfo(params_); }
  GesvdjParams(const GesvdjParams&) = delete;
  GesvdjParams& operator=(const GesvdjParams&) = delete;
  operator gesvdjInfo_t() const { return params_; }

 private:
  gesvdjInfo_t params_ = nullptr;
};

class SolverParams {
 public:
  SolverParams() { ROOFLAB_CUSOLVER(op, cusolverDnCreateParams(&params_)); }
  ~SolverParams() { cusolverDnDestroyParams(params_); }
  SolverParams(const SolverParams&) = delete;
  SolverParams& operator=(const SolverParams&) = delete;
  operator cusolverDnParams_t() const { return params_; }

 private:
  cusolverDnParams_t params_ = nullptr;
};

// cuSOLVER's workspace, cleared: its QR (geqr2, inside gesvd and gesvdj) reads a word of the
// workspace before writing it. The value is not used, but compute-sanitizer's initcheck reports
// the read (every thread of a block, in the GPU tests that run these comparators); the memset
// takes microseconds beside the factorization that follows.
class SolverWorkspace {
 public:
  SolverWorkspace(std::size_t bytes, cudaStream_t stream) : buffer_(bytes, stream, op) {
    ROOFLAB_CUDA(op, "clearing cuSOLVER's workspace",
                 cudaMemsetAsync(buffer_.data(), 0, bytes, stream));
  }
  template <class U>
  U* as() const {
    return buffer_.as<U>();
  }
  void* data() const { return buffer_.data(); }

 private:
  StreamBuffer buffer_;
};

// A copy of the input, since cuSOLVER overwrites it.
template <class T>
class InputCopy {
 public:
  InputCopy(const T* A, std::int64_t elements, cudaStream_t stream)
      : buffer_(sizeof(T) * elements, stream, op) {
    ROOFLAB_CUDA(
        op, "copying A for cuSOLVER, which overwrites its input",
        cudaMemcpyAsync(buffer_.data(), A, buffer_.bytes(), cudaMemcpyDeviceToDevice, stream));
  }
  T* data() const { return buffer_.as<T>(); }

 private:
  StreamBuffer buffer_;
};

}  // namespace

template <class T>
void cusolver_gesvdj_loop(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                          cudaStream_t stream) {
  const cusolverDnHandle_t handle = cusolver_handle(stream);
  const int k = std::min(m, n);
  const GesvdjParams params;
  const InputCopy<T> copy(A, std::int64_t(m) * n * batch, stream);
  T* a = copy.data();
  int lwork = 0;
  ROOFLAB_CUSOLVER(op, gesvdj_buffer_size(handle, m, n, a, S, U, V, &lwork, params));
  const SolverWorkspace work(sizeof(T) * lwork + sizeof(int), stream);
  int* info = reinterpret_cast<int*>(work.as<T>() + lwork);
  for (int b = 0; b < batch; ++b)
    ROOFLAB_CUSOLVER(op, gesvdj(handle, m, n, a + std::int64_t(b) * m * n, S + std::int64_t(b) * k,
                                U + std::int64_t(b) * m * k, V + std::int64_t(b) * n * k,
                                work.as<T>(), lwork, info, params));
}

template <class T>
void cusolver_gesvdj_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V,
                             cudaStream_t stream) {
  const cusolverDnHandle_t handle = cusolver_handle(stream);
  const int k = std::min(m, n);
  const GesvdjParams params;
  const InputCopy<T> copy(A, std::int64_t(m) * n * batch, stream);
  StreamBuffer full_u(sizeof(T) * m * m * std::size_t(batch), stream, op);
  StreamBuffer full_v(sizeof(T) * n * n * std::size_t(batch), stream, op);
  int lwork = 0;
  ROOFLAB_CUSOLVER(op, gesvdj_batched_buffer_size(handle, m, n, copy.data(), S, full_u.as<T>(),
                                                  full_v.as<T>(), &lwork, params, batch));
  const SolverWorkspace work(sizeof(T) * lwork + sizeof(int) * std::size_t(batch), stream);
  ROOFLAB_CUSOLVER(
      op, gesvdj_batched(handle, m, n, copy.data(), S, full_u.as<T>(), full_v.as<T>(), work.as<T>(),
                         lwork, reinterpret_cast<int*>(work.as<T>() + lwork), params, batch));
  // The first k columns of each matrix's U and V are contiguous: one 2-D copy each.
  ROOFLAB_CUDA(op, "copying the factors out",
               cudaMemcpy2DAsync(U, sizeof(T) * m * k, full_u.data(), sizeof(T) * m * m,
                                 sizeof(T) * m * k, batch, cudaMemcpyDeviceToDevice, stream));
  ROOFLAB_CUDA(op, "copying the factors out",
               cudaMemcpy2DAsync(V, sizeof(T) * n * k, full_v.data(), sizeof(T) * n * n,
                                 sizeof(T) * n * k, batch, cudaMemcpyDeviceToDevice, stream));
}

template <class T>
void cusolver_gesvd(const T* A, int m, int n, T* S, T* U, T* V, cudaStream_t stream) {
  const cusolverDnHandle_t handle = cusolver_handle(stream);
  const InputCopy<T> copy(A, std::int64_t(m) * n, stream);
  int lwork = 0;
  ROOFLAB_CUSOLVER(op, gesvd_buffer_size(handle, m, n, copy.data(), &lwork));
  // m >= n: k = n, V^T is n x n.
  const SolverWorkspace work(sizeof(T) * (std::size_t(lwork) + std::size_t(n) * n) + sizeof(int),
                             stream);
  T* vt = work.as<T>() + lwork;
  ROOFLAB_CUSOLVER(op, gesvd(handle, m, n, copy.data(), S, U, vt, work.as<T>(), lwork,
                             reinterpret_cast<int*>(vt + std::size_t(n) * n)));
  ROOFLAB_CUBLAS(op, transpose_square(cublas_handle(stream), n, vt, V));
}

template <class T>
void cusolver_gesvdp(const T* A, int m, int n, T* S, T* U, T* V, cudaStream_t stream) {
  const cusolverDnHandle_t handle = cusolver_handle(stream);
  const SolverParams params;
  const InputCopy<T> copy(A, std::int64_t(m) * n, stream);
  constexpr cudaDataType type = cuda_type<T>();
  std::size_t device_bytes = 0, host_bytes = 0;
  ROOFLAB_CUSOLVER(op, cusolverDnXgesvdp_bufferSize(handle, params, CUSOLVER_EIG_MODE_VECTOR, 1, m,
                                                    n, type, copy.data(), m, type, S, type, U, m,
                                                    type, V, n, type, &device_bytes, &host_bytes));
  const std::size_t info_offset = (device_bytes + 255) / 256 * 256;
  const SolverWorkspace work(info_offset + sizeof(int), stream);
  std::vector<unsigned char> host_work(std::max<std::size_t>(1, host_bytes));
  double error_sigma = 0;
  ROOFLAB_CUSOLVER(
      op, cusolverDnXgesvdp(
              handle, params, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, type, copy.data(), m, type, S,
              type, U, m, type, V, n, type, work.data(), device_bytes, host_work.data(), host_bytes,
              reinterpret_cast<int*>(work.as<unsigned char>() + info_offset), &error_sigma));
}

template void cusolver_gesvdj_loop<float>(const float*, int, int, int, float*, float*, float*,
                                          cudaStream_t);
template void cusolver_gesvdj_loop<double>(const double*, int, int, int, double*, double*, double*,
                                           cudaStream_t);
template void cusolver_gesvdj_batched<float>(const float*, int, int, int, float*, float*, float*,
                                             cudaStream_t);
template void cusolver_gesvdj_batched<double>(const double*, int, int, int, double*, double*,
                                              double*, cudaStream_t);
template void cusolver_gesvd<float>(const float*, int, int, float*, float*, float*, cudaStream_t);
template void cusolver_gesvd<double>(const double*, int, int, double*, double*, double*,
                                     cudaStream_t);
template void cusolver_gesvdp<float>(const float*, int, int, float*, float*, float*, cudaStream_t);
template void cusolver_gesvdp<double>(const double*, int, int, double*, double*, double*,
                                      cudaStream_t);

}  // namespace rooflab::bench
