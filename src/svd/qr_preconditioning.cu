// QR preconditioning (the first step of LAPACK's dgejsv, without column pivoting). A tall M x N
// matrix W = A (A^T when m < n) is factored W = Q R by Householder QR (in one block's shared memory
// where W is square and fits there, block_qr.cu, else cuSOLVER's); the Jacobi SVD runs on the N x N
// triangle, R = U_r S V_r^T, and W's left vectors come back as Q U_r, Q's N columns formed from the
// reflectors. The sweeps then rotate columns of N rows instead of M, and an R of at most 64 columns
// fits the register ring. Householder QR perturbs each column by a small multiple of its own norm,
// so column-graded matrices keep their small singular values' accuracy.
// On the transposed triangle (Path::qr_transposed_triangle) W's columns are sorted by norm first,
// W P = Q R, and the Jacobi SVD runs on R^T = U_2 S V_2^T instead, as dgejsv does: R R^T is
// nearer diagonal than R^T R = (W P)^T (W P), whose off-diagonal the sweeps on R or W face. W's
// left vectors are then Q V_2 and its right ones P U_2. In the sequential model
// (tests/cpu/jacobi_model_test.cpp) every class took at most dgesvj's sweeps + 2 this way, where
// the ring on A took 25 against dgesvj's 13 on a geometric spectrum (mode 3) at 100 x 100.
// The triangle goes back to the dispatch (run_path), which picks its path as for any square
// matrix.
#include <optional>

#include "core/stream_fork.hpp"
#include "core/vendor.hpp"
#include "svd/cusolver_qr.hpp"
#include "svd/global_schedule.cuh"

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

// Each column's squared norm, a warp per column: the key the columns are sorted by. A NaN norm
// (a matrix with NaN or Inf, whose W load_scaled makes NaN throughout) is stored as -1, an order
// rank_chunk can rank: NaN compares with nothing, and its ranks would not be a permutation.
template <class T>
__global__ void __launch_bounds__(global_threads)
    qr_column_norms(const T* W, std::int64_t ldw, int M, int N, T* norm2) {
  const int lane = threadIdx.x & 31;
  for (int c = blockIdx.x * global_warps + (threadIdx.x >> 5); c < N;
       c += gridDim.x * global_warps) {
    const T sum = group_sum(partial_norm2(W + c * ldw, RowWalk(M, 32, lane, 0)), 32);
    if (lane == 0) norm2[c] = sum == sum ? sum : T(-1);
  }
}

// The columns in descending order of squared norm, ties by index (rank_chunk, a block per 32
// columns): order[r] is the column of rank r.
template <class T>
__global__ void __launch_bounds__(sort_threads) qr_rank_columns(const T* norm2, int N, int* order) {
  rank_chunk<sort_warps>(norm2, N, int(blockIdx.x), order);
}

// sorted[:, r] = W[:, order[r]].
template <class T>
__global__ void __launch_bounds__(global_threads)
    qr_gather_columns(const T* W, std::int64_t ldw, int M, int N, const int* order, T* sorted) {
  const std::int64_t total = std::int64_t(M) * N;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % M, r = e / M;
    sorted[e] = W[i + order[r] * ldw];
  }
}

// R^T from the factored sorted columns (R in their upper triangle), a block per row j of R, which
// becomes column j of R^T. Row j holds q_j^T w_k for the sorted columns k >= j, each off by about
// eps |w_k|: a row whose squared norm is under (32 eps)^2 sum_{k >= j} |w_k|^2
// (triangle_row_is_noise; the columns' own error scales would be the noise's own size) is cleared,
// a zero column of R^T whose left vector the completion forms. Not the sweeps' factor N: at 256 x
// 256 that cleared 17 rows of dlatms mode 3 at condition 1/eps (3 of mode 5) for no sweep saved (12
// on R^T either way, in the sequential model), and the completion of their columns (for 17 of them
// through cuSOLVER's QR) made the handed-over call slower: 5.41-5.47 against 5.01-5.11 ms at 256 x
// 256, 14.8-15.0 against 13.3-13.4 ms at 512 x 512 (H100, docs/results/h100-svd-noise-factor.txt,
// run 2).
template <class T>
__global__ void __launch_bounds__(global_threads)
    qr_transposed_triangle(const T* factored, int M, int N, const T* norm2, const int* order,
                           T* Rt) {
  __shared__ unsigned long long scratch[32];
  const BlockTeam team{scratch};
  const int j = blockIdx.x;
  T row2 = 0, scale = 0;
  for (int k = j + threadIdx.x; k < N; k += blockDim.x) {
    const T x = factored[j + std::int64_t(k) * M];
    row2 = fma(x, x, row2);
    scale += norm2[order[k]];
  }
  row2 = team.sum(row2);
  scale = team.sum(scale);
  const bool noise = triangle_row_is_noise(row2, scale);
  for (int k = threadIdx.x; k < N; k += blockDim.x)
    Rt[k + std::int64_t(j) * N] = k >= j && !noise ? factored[j + std::int64_t(k) * M] : T(0);
}

// short_factor[order[k], c] = U_2[k, c]: the rows of R^T's left vectors back in W's column order.
template <class T>
__global__ void __launch_bounds__(global_threads)
    qr_scatter_rows(const T* U2, int N, const int* order, T* short_factor, std::int64_t ld) {
  const std::int64_t total = std::int64_t(N) * N;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t k = e % N, c = e / N;
    short_factor[order[k] + c * ld] = U2[e];
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
void run_qr_preconditioned(const Problem<T>& problem, bool on_transposed_triangle,
                           const Report& report, cudaStream_t stream) {
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
  const std::size_t column_bytes = aligned(sizeof(T) * N);
  const std::size_t word_bytes = aligned(sizeof(unsigned long long));
  const std::size_t int_bytes = aligned(sizeof(int));
  const std::size_t left_bytes = problem.uv ? r_bytes : 0;
  // The transposed triangle's: the sorted columns, their squared norms and order, and V_2.
  const std::size_t sorted_bytes = on_transposed_triangle ? w_bytes : 0;
  const std::size_t norm_bytes = on_transposed_triangle ? column_bytes : 0;
  const std::size_t order_bytes = on_transposed_triangle ? aligned(sizeof(int) * N) : 0;
  const std::size_t right_bytes = on_transposed_triangle ? left_bytes : 0;
  StreamBuffer scratch(w_bytes + r_bytes + left_bytes + column_bytes + word_bytes + 6 * int_bytes +
                           sorted_bytes + norm_bytes + order_bytes + right_bytes,
                       stream, op);
  ScratchPieces pieces(scratch);
  G.W = pieces.take<T>(w_bytes);
  T* const R = pieces.take<T>(r_bytes);        // R, or R^T
  T* const left = pieces.take<T>(left_bytes);  // U_r or U_2, N x N
  T* const tau = pieces.take<T>(column_bytes);
  G.max_bits = pieces.take<unsigned long long>(word_bytes);
  G.exponent = pieces.take<int>(int_bytes);
  G.active = pieces.take<int>(int_bytes);
  G.sweeps = pieces.take<int>(int_bytes);
  G.converged = pieces.take<int>(int_bytes);
  G.bad = pieces.take<int>(int_bytes);
  int* const info = pieces.take<int>(int_bytes);  // cuSOLVER's: only a wrong argument
  T* const sorted = pieces.take<T>(sorted_bytes);
  T* const norm2 = pieces.take<T>(norm_bytes);
  int* const order = pieces.take<int>(order_bytes);
  T* const right = pieces.take<T>(right_bytes);  // V_2, N x N

  ROOFLAB_CUDA(op, "zeroing the matrix's largest entry",
               cudaMemsetAsync(G.max_bits, 0, word_bytes, stream));
  load_scaled(G, stream);
  // What the QR factors: W, or its columns sorted by norm.
  T* const factored = on_transposed_triangle ? sorted : G.W;
  if (on_transposed_triangle) {
    qr_column_norms<T>
        <<<grid_for(N, global_warps), global_threads, 0, stream>>>(G.W, M, M, N, norm2);
    detail::check_launch(op, "qr_column_norms");
    qr_rank_columns<T>
        <<<(N + sort_columns - 1) / sort_columns, sort_threads, 0, stream>>>(norm2, N, order);
    detail::check_launch(op, "qr_rank_columns");
    qr_gather_columns<T>
        <<<grid_for(std::int64_t(M) * N, global_threads), global_threads, 0, stream>>>(
            G.W, M, M, N, order, sorted);
    detail::check_launch(op, "qr_gather_columns");
  }

  // The QR in one block (block_qr.cu) where W is square and fits there, else cuSOLVER's. On the
  // second try's square triangles rung 15 took 0.89-0.90 against 1.14-1.19 ms at 100 x 100,
  // 1.08-1.13 against 1.27-1.45 ms at 128 x 128 and 1.47-1.51 against 1.43-1.47 ms at 160 x 160
  // (H100, docs/results/h100-svd-block-qr.txt, run 4). The block's steps are chains of a warp's
  // work down each column, longer on taller W: there it was no better than cuSOLVER's on the whole
  // (run 5: rung 15 at 130 to 200 x 100 even to 4% faster; QR preconditioning from 16% slower at
  // 256 x 64, with a sweep more, to 14% faster in float at 300 x 64).
  const bool in_one_block = M == N && block_qr_fits<T>(M, N);
  const cusolverDnHandle_t solver = cusolver_handle(stream);
  int factor_work = 0, form_work = 0;
  if (!in_one_block)
    ROOFLAB_CUSOLVER(op, geqrf_buffer_size(solver, M, N, factored, M, &factor_work));
  if (problem.uv)
    ROOFLAB_CUSOLVER(op, form_q_buffer_size(solver, M, N, N, factored, M, tau, &form_work));
  const int work_size = std::max({factor_work, form_work, 1});
  StreamBuffer work(sizeof(T) * std::size_t(work_size), stream, op);
  if (in_one_block) {
    block_qr(factored, M, N, tau, stream);
  } else {
    // cuSOLVER's geqr2 reads a word of its workspace or tau before writing it (not used, but
    // initcheck reports the read): both start cleared.
    ROOFLAB_CUDA(op, "clearing the QR's workspace",
                 cudaMemsetAsync(work.data(), 0, work.bytes(), stream));
    ROOFLAB_CUDA(op, "clearing the QR's workspace", cudaMemsetAsync(tau, 0, column_bytes, stream));
    ROOFLAB_CUSOLVER(op, geqrf(solver, M, N, factored, M, tau, work.as<T>(), work_size, info));
  }
  if (on_transposed_triangle) {
    qr_transposed_triangle<T><<<N, global_threads, 0, stream>>>(factored, M, N, norm2, order, R);
    detail::check_launch(op, "qr_transposed_triangle");
  } else {
    qr_upper_triangle<T>
        <<<grid_for(std::int64_t(N) * N, global_threads), global_threads, 0, stream>>>(factored, M,
                                                                                       N, R);
    detail::check_launch(op, "qr_upper_triangle");
  }
  // Q's formation reads only the reflectors and tau, which nothing after this point changes: it
  // runs on a side stream beside the triangle's sweeps (in a cluster or the register ring at most
  // sizes that come here, which leave most SMs idle) and is joined before the product that needs
  // it. Formed after the sweeps, it lay on the call's critical path: 3-9% of the call on the
  // matrices the second try takes from 256 to 1024 columns (H100,
  // docs/results/h100-svd-hand-over-from-129.txt, run 1).
  std::optional<StreamFork> q_formation;
  if (problem.uv) {
    q_formation.emplace(stream, side_stream(), op);
    ROOFLAB_CUSOLVER(op, form_q(side_cusolver_handle(), M, N, N, factored, M, tau, work.as<T>(),
                                work_size, info));
  }

  // The triangle's SVD. On R (= U_r S V_r^T) its right vectors are W's, A's V or, when A was
  // transposed, its U; on R^T (= U_2 S V_2^T) they are V_2, and W's right vectors P U_2.
  T* const short_factor = transposed ? problem.U : problem.V;
  const int ld_short = transposed ? problem.ldu : problem.ldv;
  Problem<T> triangle = problem;
  triangle.A = R;
  triangle.lda = N;
  triangle.m = triangle.n = N;
  triangle.U = left;
  triangle.ldu = N;
  triangle.V = on_transposed_triangle ? right : short_factor;
  triangle.ldv = on_transposed_triangle ? N : ld_short;
  triangle.second_try_follows = problem.second_try_follows && !on_transposed_triangle;
  run_path(triangle, production_path<T>(N, N, 1, problem.uv), report, stream);
  qr_unscale<T><<<1, global_threads, 0, stream>>>(problem.S, N, G.exponent);
  detail::check_launch(op, "qr_unscale");
  if (!problem.uv) return;
  if (on_transposed_triangle) {
    qr_scatter_rows<T>
        <<<grid_for(std::int64_t(N) * N, global_threads), global_threads, 0, stream>>>(
            left, N, order, short_factor, ld_short);
    detail::check_launch(op, "qr_scatter_rows");
  }
  // W's left vectors Q U_r, or Q V_2: A's U, or its V when A was transposed.
  q_formation->join();
  T* const long_factor = transposed ? problem.V : problem.U;
  const int ld_long = transposed ? problem.ldv : problem.ldu;
  ROOFLAB_CUBLAS(op, product(cublas_handle(stream), M, N, N, factored, M,
                             on_transposed_triangle ? right : left, N, long_factor, ld_long));
}

template void run_qr_preconditioned<float>(const Problem<float>&, bool, const Report&,
                                           cudaStream_t);
template void run_qr_preconditioned<double>(const Problem<double>&, bool, const Report&,
                                            cudaStream_t);

}  // namespace rooflab::jacobi
