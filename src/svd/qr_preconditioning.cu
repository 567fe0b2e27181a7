// QR preconditioning (the first step of LAPACK's dgejsv, without column pivoting). A tall M x N
// matrix W = A (A^T when m < n) is factored W = Q R by cuSOLVER's Householder QR; the Jacobi SVD
// runs on the N x N triangle, R = U_r S V_r^T, and W's left vectors come back as Q U_r, Q's N
// columns formed from the reflectors. The sweeps then rotate columns of N rows instead of M, and
// an R of at most 64 columns fits the register ring. Householder QR perturbs each column by a
// small multiple of its own norm, so column-graded matrices keep their small singular values'
// accuracy.
// The triangle R goes back to the dispatch (run_path), which picks its path as for any square
// matrix.
#include "svd/cusolver_qr.hpp"
#include "svd/global_schedule.cuh"
#include "core/vendor.hpp"

namespace rooflab::jacobi {
namespace {

// R: the upper triangle of the factored W's first N rows, zeros below (W keeps the reflectors
// there).
template <class T>
__global__ void __launch_bounds__(global_threads)
    qr_upper_triangle(const T* W, std::int64_t ldw, int N, T* R) {
  const std::int64_t total = std::int64_t(N) * N;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % N, j = e / N;
    R[e] = i <= j ? W[i + j * ldw] : T(0);
  }
}

// S back to A's scale (W was A scaled by 2^-exponent).
template <class T>
__global__ void __launch_bounds__(global_threads) qr_unscale(T* S, int N, const int* exponent) {
  for (int l = blockIdx.x * blockDim.x + threadIdx.x; l < N; l += gridDim.x * blockDim.x)
    S[l] = ldexp(S[l], *exponent);
}

}  // namespace

template <class T>
void run_qr_preconditioned(const Problem<T>& problem, const Report& report, cudaStream_t stream) {
  constexpr const char* op = "svd";
  require(problem.batch == 1, op, "batch", "QR preconditioning takes one matrix");
  GlobalState<T> G;
  G.P = problem;
  G.P.uv = false;  // global_load copies W alone: the iteration on R keeps its own V
  G.M = std::max(problem.m, problem.n);
  G.N = std::min(problem.m, problem.n);
  G.ldw = G.M;
  const int M = G.M, N = G.N;
  const bool transposed = problem.m < problem.n;

  const std::size_t w_bytes = aligned(sizeof(T) * M * std::size_t(N));
  const std::size_t r_bytes = aligned(sizeof(T) * N * std::size_t(N));
  const std::size_t tau_bytes = aligned(sizeof(T) * N);
  const std::size_t word_bytes = aligned(sizeof(unsigned long long));
  const std::size_t int_bytes = aligned(sizeof(int));
  const std::size_t left_bytes = problem.uv ? r_bytes : 0;
  StreamBuffer scratch(w_bytes + r_bytes + left_bytes + tau_bytes + word_bytes + 6 * int_bytes,
                       stream, op);
  ScratchPieces pieces(scratch);
  G.W = pieces.take<T>(w_bytes);
  T* const R = pieces.take<T>(r_bytes);
  T* const left = pieces.take<T>(left_bytes);  // U_r, N x N
  T* const tau = pieces.take<T>(tau_bytes);
  G.max_bits = pieces.take<unsigned long long>(word_bytes);
  G.exponent = pieces.take<int>(int_bytes);
  G.active = pieces.take<int>(int_bytes);
  G.sweeps = pieces.take<int>(int_bytes);
  G.converged = pieces.take<int>(int_bytes);
  G.bad = pieces.take<int>(int_bytes);
  int* const info = pieces.take<int>(int_bytes);  // cuSOLVER's: only a wrong argument

  load_scaled(G, stream);

  const cusolverDnHandle_t solver = cusolver_handle(stream);
  int factor_work = 0, form_work = 0;
  ROOFLAB_CUSOLVER(op, geqrf_buffer_size(solver, M, N, G.W, M, &factor_work));
  if (problem.uv)
    ROOFLAB_CUSOLVER(op, form_q_buffer_size(solver, M, N, N, G.W, M, tau, &form_work));
  const int work_size = std::max({factor_work, form_work, 1});
  StreamBuffer work(sizeof(T) * std::size_t(work_size), stream, op);
  // cuSOLVER's geqr2 reads a word of its workspace or tau before writing it (not used, but
  // initcheck reports the read): both start cleared.
  ROOFLAB_CUDA(op, "clearing the QR's workspace",
               cudaMemsetAsync(work.data(), 0, work.bytes(), stream));
  ROOFLAB_CUDA(op, "clearing the QR's workspace", cudaMemsetAsync(tau, 0, tau_bytes, stream));
  ROOFLAB_CUSOLVER(op, geqrf(solver, M, N, G.W, M, tau, work.as<T>(), work_size, info));
  qr_upper_triangle<T>
      <<<grid_for(std::int64_t(N) * N, global_threads), global_threads, 0, stream>>>(G.W, M, N, R);
  detail::check_launch(op, "qr_upper_triangle");

  // R's SVD; its right vectors are A's V, or its U when A was transposed.
  Problem<T> triangle = problem;
  triangle.A = R;
  triangle.lda = N;
  triangle.m = triangle.n = N;
  triangle.U = left;
  triangle.ldu = N;
  triangle.V = transposed ? problem.U : problem.V;
  triangle.ldv = transposed ? problem.ldu : problem.ldv;
  run_path(triangle, production_path<T>(N, N, 1, problem.uv), report, stream);
  qr_unscale<T><<<1, global_threads, 0, stream>>>(problem.S, N, G.exponent);
  detail::check_launch(op, "qr_unscale");
  if (!problem.uv) return;
  // W's left vectors Q U_r: A's U, or its V when A was transposed.
  ROOFLAB_CUSOLVER(op, form_q(solver, M, N, N, G.W, M, tau, work.as<T>(), work_size, info));
  T* const long_factor = transposed ? problem.V : problem.U;
  const int ld_long = transposed ? problem.ldv : problem.ldu;
  ROOFLAB_CUBLAS(op,
                 product(cublas_handle(stream), M, N, N, G.W, M, left, N, long_factor, ld_long));
}

template void run_qr_preconditioned<float>(const Problem<float>&, const Report&, cudaStream_t);
template void run_qr_preconditioned<double>(const Problem<double>&, const Report&, cudaStream_t);

}  // namespace rooflab::jacobi
