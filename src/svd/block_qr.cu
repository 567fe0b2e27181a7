// Householder QR in one block's shared memory: the second try's factorization of a square W that
// fits there (qr_preconditioning.cu; QR preconditioning's tall matrices keep cuSOLVER's, faster on
// them). cuSOLVER's geqrf took 0.50 ms at 100 x 100 and 0.72 ms at 128 x 128 in double (H100,
// docs/results/h100-svd-second-try-fixed-cost.txt) for work of microseconds: its panels run as
// chains of small kernels. Here the block holds W and column j belongs to warp j mod 32. Step k
// applies reflector k to the columns right of k, each warp to its own in one pass; the warp that
// owns column k + 1 then forms reflector k + 1 from it, so one block barrier separates two steps
// (LAPACK's unblocked dgeqr2, one column looked ahead). The output is geqrf's, for cuSOLVER's orgqr
// to form Q from.
#include "rooflab/error.hpp"
#include "svd/householder.cuh"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {
namespace {

constexpr int block_qr_threads = 1024;
constexpr int block_qr_warps = block_qr_threads / 32;
static_assert((block_qr_warps & (block_qr_warps - 1)) == 0, "a warp's first column uses a mask");
// A warp's columns are updated together (apply_reflector): at most this many, N <= 256.
constexpr int block_qr_columns_per_warp = 8;

template <class T>
std::size_t block_qr_bytes(int M, int N) {
  return sizeof(T) * (std::size_t(M) * N + N);
}

// Columns first, first + 32, ... (Count of them) of A <- H_k times them, H_k = I - tau v v^T with
// v in column k (rows k on, v_k = 1), by one warp. Their dot products with v are taken in one pass
// over v and reduced together, so that the columns' shuffles overlap. Count is a template argument:
// with a runtime count the unrolled loops issued the instructions of the most columns a warp can
// own, predicated off, at every step.
template <int Count, class T>
__device__ void apply_reflector(T* A, int M, int k, T tau, int first) {
  const int lane = threadIdx.x & 31;
  const T* const v = A + std::int64_t(k) * M;
  T* const a = A + std::int64_t(first) * M;
  const std::int64_t stride = std::int64_t(block_qr_warps) * M;
  T dots[Count];
#pragma unroll
  for (int c = 0; c < Count; ++c) dots[c] = lane == 0 ? a[k + c * stride] : T(0);
  for (int i = k + 1 + lane; i < M; i += 32) {
    const T vi = v[i];
#pragma unroll
    for (int c = 0; c < Count; ++c) dots[c] = fma(vi, a[i + c * stride], dots[c]);
  }
#pragma unroll
  for (int c = 0; c < Count; ++c) dots[c] = tau * group_sum(dots[c], 32);
  if (lane == 0) {
#pragma unroll
    for (int c = 0; c < Count; ++c) a[k + c * stride] -= dots[c];
  }
  for (int i = k + 1 + lane; i < M; i += 32) {
    const T vi = v[i];
#pragma unroll
    for (int c = 0; c < Count; ++c) a[i + c * stride] = fma(-dots[c], vi, a[i + c * stride]);
  }
}

// apply_reflector on `count` columns, 1 to block_qr_columns_per_warp.
template <class T>
__device__ void apply_reflector(T* A, int M, int k, T tau, int first, int count) {
  static_assert(block_qr_columns_per_warp == 8, "one case per count");
  switch (count) {
    case 1: return apply_reflector<1>(A, M, k, tau, first);
    case 2: return apply_reflector<2>(A, M, k, tau, first);
    case 3: return apply_reflector<3>(A, M, k, tau, first);
    case 4: return apply_reflector<4>(A, M, k, tau, first);
    case 5: return apply_reflector<5>(A, M, k, tau, first);
    case 6: return apply_reflector<6>(A, M, k, tau, first);
    case 7: return apply_reflector<7>(A, M, k, tau, first);
    default: return apply_reflector<8>(A, M, k, tau, first);
  }
}

// W (M x N, M >= N, leading dimension M) <- its QR factors in geqrf's layout, tau <- the
// reflectors' factors. One block.
template <class T>
__global__ void __launch_bounds__(block_qr_threads)
    block_householder_qr(T* W, int M, int N, T* tau) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* const A = reinterpret_cast<T*>(shared_bytes);
  T* const taus = A + std::int64_t(M) * N;
  const std::int64_t total = std::int64_t(M) * N;
  for (std::int64_t e = threadIdx.x; e < total; e += blockDim.x) A[e] = W[e];
  __syncthreads();
  const int warp = threadIdx.x >> 5;
  if (warp == 0) form_reflector(A, M, 0, &taus[0]);
  __syncthreads();
  for (int k = 0; k + 1 < N; ++k) {
    const T t = taus[k];
    // This warp's columns right of k, the first being k + 1 for the warp that owns it.
    const int first = k + 1 + ((warp - k - 1) & (block_qr_warps - 1));
    const int count = first < N ? (N - first + block_qr_warps - 1) / block_qr_warps : 0;
    // H_k = I where tau is 0. The warp that owns column k + 1 then forms reflector k + 1 from it,
    // which the next step waits for.
    if (t != 0 && count > 0) apply_reflector(A, M, k, t, first, count);
    if (first == k + 1) {
      __syncwarp();  // column k + 1's rows were just written by other lanes
      form_reflector(A + std::int64_t(k + 1) * M, M, k + 1, &taus[k + 1]);
    }
    __syncthreads();
  }
  for (std::int64_t e = threadIdx.x; e < total; e += blockDim.x) W[e] = A[e];
  for (int c = threadIdx.x; c < N; c += blockDim.x) tau[c] = taus[c];
}

}  // namespace

template <class T>
bool block_qr_fits(int M, int N) {
  return M >= N && N >= 1 && N <= block_qr_warps * block_qr_columns_per_warp &&
         block_qr_bytes<T>(M, N) <= std::size_t(shared_memory_optin());
}

template <class T>
void block_qr(T* W, int M, int N, T* tau, cudaStream_t stream) {
  require(block_qr_fits<T>(M, N), "svd", "M, N", "the block QR takes M >= N that fit its block");
  const int bytes = int(block_qr_bytes<T>(M, N));
  allow_shared_memory(block_householder_qr<T>, bytes);
  block_householder_qr<T><<<1, block_qr_threads, bytes, stream>>>(W, M, N, tau);
  detail::check_launch("svd", "block_householder_qr");
}

template bool block_qr_fits<float>(int, int);
template bool block_qr_fits<double>(int, int);
template void block_qr<float>(float*, int, int, float*, cudaStream_t);
template void block_qr<double>(double*, int, int, double*, cudaStream_t);

}  // namespace rooflab::jacobi
