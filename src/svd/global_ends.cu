// What every global-memory schedule does before its first sweep and after its last: each matrix
// checked for NaN and Inf, scaled and loaded into W (V = I), the columns' norms; then sigma, U
// normalized and its columns of sigma 0 completed to an orthonormal set, the output order, and S,
// U and V written.
#include "svd/cusolver_qr.hpp"
#include "svd/global_schedule.cuh"
#include "core/pinned_buffer.hpp"
#include "core/stream_mark.hpp"
#include "core/vendor.hpp"

namespace rooflab::jacobi {
namespace {

// Max |a| of every matrix, as the bits of a double (non-negative doubles order like their bits;
// NaN and Inf order above every finite value, so one atomicMax also finds them). A block per
// `columns` columns of a matrix, a warp per column and its lanes down the rows. Where
// G.neighbours_apart is set, each column is also taken with the next, in double, in the same pass:
// a pair whose cosine is above tol marks the matrix apart. The mark is only a hint (a cosine at
// tol may round either way, and squares out of double's range mark nothing): it picks which
// cluster kernel takes the matrix, and both converge it.
template <class T>
__global__ void __launch_bounds__(global_threads)
    global_max_abs(GlobalState<T> G, int columns, int blocks_per_matrix) {
  wait_for_previous_kernel();
  const Problem<T>& P = G.P;
  const std::int64_t matrix = blockIdx.x / blocks_per_matrix;
  const int first = int(blockIdx.x % blocks_per_matrix) * columns;
  const int last = min(first + columns, P.n);
  const T* A = P.A + matrix * P.a_stride;
  const int lane = threadIdx.x & 31;
  unsigned long long local = 0;
  bool apart = false;
  for (int j = first + int(threadIdx.x >> 5); j < last; j += global_warps) {
    const T* column = A + std::int64_t(j) * P.lda;
    const bool neighbour = G.neighbours_apart != nullptr && j + 1 < P.n;  // the warp's
    double own = 0, next = 0, product = 0;
    for (int i = lane; i < P.m; i += 32) {
      const double a = column[i];
      local = max(local, static_cast<unsigned long long>(__double_as_longlong(fabs(a))));
      if (!neighbour) continue;
      const double b = column[i + P.lda];
      own = fma(a, a, own);
      next = fma(b, b, next);
      product = fma(a, b, product);
    }
    if (!neighbour) continue;
    own = group_sum(own, 32);
    next = group_sum(next, 32);
    product = group_sum(product, 32);
    const double tol = G.P.tol;
    apart = apart || product * product > tol * tol * own * next;
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    local = max(local, __shfl_xor_sync(0xffffffffu, local, offset));
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&G.max_bits[matrix], local);
    if (apart) G.neighbours_apart[matrix] = 1;
  }
}

// Per matrix: the scaling exponent, or the verdict that it holds NaN or Inf.
template <class T>
__global__ void global_begin(GlobalState<T> G) {
  wait_for_previous_kernel();
  const std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (matrix >= G.P.batch) return;
  const double max_abs = bits_as_double(G.max_bits[matrix]);
  const bool bad = !isfinite(max_abs);
  G.bad[matrix] = bad;
  const bool maybe_orthogonal = G.neighbours_apart != nullptr && !G.neighbours_apart[matrix];
  G.active[matrix] = bad ? 0 : maybe_orthogonal ? active_maybe_orthogonal : active_sweeping;
  G.sweeps[matrix] = 0;
  G.converged[matrix] = 0;
  if (G.noise != nullptr) {   // the test on arrival's state (GlobalState::noise)
    G.test_bits[matrix] = 0;  // the neighbouring columns' test raises them first
    G.test_arrivals[matrix] = 0;
    G.noise[matrix] = 0;
  }
  G.exponent[matrix] = bad ? 0 : scaling_exponent(T(max_abs));
}

// W = A (or A^T) scaled by 2^-exponent, V = I. A matrix with NaN or Inf gets a W of NaN, so that
// whatever reads it (QR preconditioning's factorization) sees NaN, never stale memory. The rows
// of the leading dimensions past M (W) and N (V) are zero: a 16-byte copy of the Gram schedules
// that ends in them reads memory that was written (initcheck), though only its valid part is used.
template <class T>
__global__ void __launch_bounds__(global_threads) global_load(GlobalState<T> G) {
  wait_for_previous_kernel();
  const Problem<T>& P = G.P;
  const bool transposed = P.m < P.n;
  const std::int64_t per_matrix = G.ldw * G.N;
  const std::int64_t total = per_matrix * P.batch;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const std::int64_t matrix = e / per_matrix, at = e % per_matrix;
    const std::int64_t i = at % G.ldw, j = at / G.ldw;  // W's row and column
    if (i >= G.M) {
      G.w(matrix)[i + j * G.ldw] = T(0);
      continue;
    }
    if (G.bad[matrix]) {
      G.w(matrix)[i + j * G.ldw] = T(NAN);
      continue;
    }
    const T* A = P.A + matrix * P.a_stride;
    const T x = transposed ? A[j + i * P.lda] : A[i + j * P.lda];
    G.w(matrix)[i + j * G.ldw] = ldexp(x, -G.exponent[matrix]);
  }
  if (!P.uv) return;
  const std::int64_t v_per_matrix = G.ldv * G.N;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       e < v_per_matrix * P.batch; e += stride) {
    const std::int64_t matrix = e / v_per_matrix, at = e % v_per_matrix;
    const std::int64_t i = at % G.ldv, j = at / G.ldv;
    G.v(matrix)[i + j * G.ldv] = i == j ? T(1) : T(0);
  }
}

// Squared column norms, a warp per column: the initial tracked norms and error scales (final =
// false) or sigma (final = true, negligible columns and rounding noise 0). Padding positions get
// -1 so that they sort last. Where the matrix takes the test on arrival (GlobalState::noise), the
// initial pass also takes each column with the next and raises test_bits to their scaled
// off-diagonal: a test of those pairs, which spares a matrix that fails it (any random one) the
// test of every pair.
template <class T>
__global__ void __launch_bounds__(global_threads)
    global_column_norms(GlobalState<T> G, bool final) {
  wait_for_previous_kernel();
  const int lane = threadIdx.x & 31;
  const std::int64_t total = std::int64_t(G.P.batch) * G.positions;
  const std::int64_t warps = std::int64_t(gridDim.x) * global_warps;
  const bool neighbours = !final && G.noise != nullptr;
  for (std::int64_t item = std::int64_t(blockIdx.x) * global_warps + (threadIdx.x >> 5);
       item < total; item += warps) {
    const std::int64_t matrix = item / G.positions;
    const int c = int(item % G.positions);
    if (G.bad[matrix]) continue;
    const RowWalk walk(G.M, 32, lane, 0);
    const T* const column = G.w(matrix) + c * G.ldw;
    T sum = c < G.N ? partial_norm2(column, walk) : T(0);
    sum = group_sum(sum, 32);
    if (neighbours && c + 1 < G.N) {
      T next = 0, dot = 0;
      for (int j = 0; j < walk.count; ++j) {
        const int i = walk.row(j);
        next = fma(column[i + G.ldw], column[i + G.ldw], next);
        dot = fma(column[i], column[i + G.ldw], dot);
      }
      next = group_sum(next, 32);
      dot = group_sum(dot, 32);
      if (lane == 0) raise_to(&G.test_bits[matrix], double(scaled_off_diagonal(sum, next, dot)));
    }
    if (lane != 0) continue;
    if (!final) {
      G.norms_of(matrix)[c] = c < G.N ? sum : T(-1);
      if (c < G.N) G.error_scales_of(matrix)[c] = initial_error_scale(sum, G.N);
    } else if (c < G.N) {
      G.norms_of(matrix)[c] = sigma_from_norm2(sum, fabs(G.error_scales_of(matrix)[c]));
    }
  }
}

// u_c = w_c / sigma_c.
template <class T>
__global__ void __launch_bounds__(global_threads) global_normalize(GlobalState<T> G) {
  wait_for_previous_kernel();
  const std::int64_t per_matrix = std::int64_t(G.M) * G.N;
  const std::int64_t total = per_matrix * G.P.batch;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t matrix = e / per_matrix, at = e % per_matrix;
    const std::int64_t i = at % G.M, c = at / G.M;
    if (G.bad[matrix]) continue;
    const T sigma = G.norms_of(matrix)[c];
    if (sigma > 0) G.w(matrix)[i + c * G.ldw] /= sigma;
  }
}

// The completion's block: 32 groups of a warp's lanes, each forming its own missing columns (four
// at a time), so that a block forms up to 128 at once.
constexpr int completion_threads = 1024;

// A block per matrix, when vectors are wanted: completes the columns of sigma 0 to an orthonormal
// set (complete_zero_columns; pos and the coefficients as its scratch, and the matrix's output
// that global_write fills later). Most matrices have none, which one pass over sigma finds.
template <class T>
__global__ void __launch_bounds__(completion_threads) global_complete(GlobalState<T> G) {
  __shared__ unsigned long long scratch[32];
  wait_for_previous_kernel();
  const BlockTeam team{scratch};
  const std::int64_t matrix = blockIdx.x;
  if (G.bad[matrix]) return;  // uniform over the block
  const T* sigma = G.norms_of(matrix);
  bool incomplete = false, kept = false;
  for (int c = team.rank(); c < G.N; c += team.size()) {
    incomplete = incomplete || !(sigma[c] > 0);
    kept = kept || sigma[c] > 0;
  }
  // A matrix whose every sigma is 0 gets its unit vectors from global_write.
  if (!__syncthreads_or(incomplete) || !__syncthreads_or(kept)) return;
  std::int64_t ldy = 0;
  T* Y = w_output(G.P, matrix, ldy);
  complete_zero_columns(team, G.w(matrix), G.ldw, G.M, G.N, sigma, G.pos_of(matrix),
                        G.coefficients + matrix * G.positions, Y, ldy, 32);
}

// For the completion of a single matrix's columns of sigma 0 (complete_single_matrix: the
// reflections, Gram-Schmidt over the GPU or cuSOLVER's Householder QR), one block numbers W's
// columns by completion_slot (those of sigma > 0 first, then the others) and counts the others.
template <class T>
__global__ void __launch_bounds__(global_threads)
    number_completion_slots(GlobalState<T> G, int* slot_of_column, unsigned* zero_count) {
  wait_for_previous_kernel();
  if (G.bad[0]) {  // NaN or Inf: no sigma to read and nothing to complete (its outputs are NaN)
    if (threadIdx.x == 0) *zero_count = 0;
    return;
  }
  __shared__ unsigned long long scratch[32];
  const BlockTeam team{scratch};
  const int kept = count_kept_columns(team, G.norms_of(0), G.N);
  fill_completion_slots(team, G.norms_of(0), G.N, kept, slot_of_column);
  if (threadIdx.x == 0) *zero_count = unsigned(G.N - kept);
}

// The completion by reflections of one matrix spread over the GPU (complete_single_matrix): one
// block factors the kept columns (their steps depend on each other), then a grid forms the missing
// columns, which are independent. In one block, as global_complete does it for a batch's matrix,
// forming them took 42.8 us of the 512 x 512 zero matrix's 131 us of kernels (H200, double,
// docs/results/h200-ncu-svd-structured-e070880.json), and a rank-one 512 x 512 matrix went to
// cuSOLVER's QR. Both kernels step through the reflections one after another, each step a few
// dependent reads of Y: where Y (M x kept) fits a block's shared memory (`y_on_chip`) they read it
// there instead of from global memory. factor_for_completion then leaves the factored Y in the
// output, where reflect_for_completion's blocks load it; their groups form their columns in shared
// memory too where those fit. On an H200 in double (Nsight Compute, 100 x 100 with every odd
// column zero; docs/results/h200-svd-completion-on-chip.txt) Y on chip took reflect_for_completion
// from 102.5 to 72.6 us, and in a later run the columns on chip from 65.1 to 61.8 (512 x 512 of
// rank two: 27.0 to 16.4). The factoring's steps take about 2.3 us each at 100 rows whether Y lies
// in global or shared memory, and whether tau_k comes from memory or registers: the block size
// moves them (factor_half_block_rows), nothing else tried did.
template <class T>
__global__ void __launch_bounds__(completion_threads)
    factor_for_completion(GlobalState<T> G, const int* slot_of_column, int kept, bool y_on_chip) {
  extern __shared__ __align__(16) unsigned char completion_smem[];
  __shared__ unsigned long long scratch[32];
  wait_for_previous_kernel();
  const BlockTeam team{scratch};
  std::int64_t ldy = 0;
  T* Y = w_output(G.P, 0, ldy);
  T* const factored = y_on_chip ? reinterpret_cast<T*>(completion_smem) : Y;
  const std::int64_t ld_factored = y_on_chip ? G.M : ldy;
  factor_kept_columns(team, G.w(0), G.ldw, G.M, G.N, G.norms_of(0), kept, slot_of_column,
                      G.coefficients, factored, ld_factored, 32);
  if (y_on_chip)
    for (std::int64_t e = team.rank(); e < std::int64_t(G.M) * kept; e += team.size())
      Y[e % G.M + e / G.M * ldy] = factored[e];
}

// A warp a group, eight groups a block: a block forms 32 columns at a time.
constexpr int reflection_threads = 256;
constexpr int reflection_groups = reflection_threads / 32;

// Shared memory of reflect_for_completion: each group's four columns (`x_on_chip`, first), then Y
// (`y_on_chip`).
template <class T>
std::size_t reflection_columns_bytes(int M) {
  return sizeof(T) * std::size_t(M) * 4 * reflection_groups;
}

template <class T>
__global__ void __launch_bounds__(reflection_threads)
    reflect_for_completion(GlobalState<T> G, const int* slot_of_column, int kept, bool y_on_chip,
                           bool x_on_chip) {
  extern __shared__ __align__(16) unsigned char completion_smem[];
  wait_for_previous_kernel();
  T* const columns = reinterpret_cast<T*>(completion_smem);
  const int group = int(threadIdx.x / 32);
  std::int64_t ldy = 0;
  const T* Y = w_output(G.P, 0, ldy);
  if (y_on_chip) {
    T* const on_chip = x_on_chip ? columns + std::int64_t(G.M) * 4 * reflection_groups : columns;
    for (std::int64_t e = threadIdx.x; e < std::int64_t(G.M) * kept; e += blockDim.x)
      on_chip[e] = Y[e % G.M + e / G.M * ldy];
    __syncthreads();
    Y = on_chip;
    ldy = G.M;
  }
  reflect_missing_columns(G.w(0), G.ldw, G.M, G.N, G.norms_of(0), kept, slot_of_column,
                          G.coefficients, Y, ldy, 32, int(threadIdx.x % 32),
                          int(blockIdx.x * reflection_groups + group),
                          int(gridDim.x * reflection_groups),
                          x_on_chip ? columns + std::int64_t(G.M) * 4 * group : nullptr);
}

// Q's slot of each column of W, gathered (to_q) or scattered back (to_q false) for the columns of
// sigma > 0 (gathering) or 0 (scattering): W's kept columns go to Q for its QR, and Q's columns
// past them, the completion, come back to W's columns of sigma 0.
template <class T>
__global__ void __launch_bounds__(global_threads)
    move_completion_columns(GlobalState<T> G, T* Q, const int* slot_of_column, bool to_q) {
  wait_for_previous_kernel();
  const T* sigma = G.norms_of(0);
  T* W = G.w(0);
  const std::int64_t total = std::int64_t(G.M) * G.N;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int i = int(e % G.M), c = int(e / G.M);
    if ((sigma[c] > 0) != to_q) continue;
    T& q = Q[i + std::int64_t(slot_of_column[c]) * G.M];
    T& w = W[i + c * G.ldw];
    if (to_q)
      q = w;
    else
      w = q;
  }
}

// Gram-Schmidt over the GPU, for a single matrix's few columns of sigma 0 among many kept ones
// (complete_single_matrix): Q holds the kept columns in slots 0 .. kept - 1, and column s of Q,
// from slot kept on, becomes the unit vector of the row least represented in Q's first s columns,
// orthogonalized against them twice by cuBLAS's products with a vector (classical Gram-Schmidt run
// twice, as complete_orthonormal_columns does in one block) and normalized.

// The row of least squared weight in Q's first `columns` columns (M rows), into *chosen as its
// row_weight_key: a thread a row, its loads coalesced down the rows, each block's least by a team
// minimum and one atomicMin. *chosen starts as all ones.
template <class T>
__global__ void __launch_bounds__(global_threads)
    least_weighted_row(const T* Q, int M, int columns, unsigned long long* chosen) {
  __shared__ unsigned long long scratch[32];
  unsigned long long best = ~0ull;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M; i += gridDim.x * blockDim.x) {
    T weight = 0;
    for (int j = 0; j < columns; ++j) {
      const T q = Q[i + std::int64_t(j) * M];
      weight = fma(q, q, weight);
    }
    best = min(best, row_weight_key(weight, i));
  }
  best = BlockTeam{scratch}.min(best);
  if (threadIdx.x == 0) atomicMin(chosen, best);
}

// x (M entries) becomes the unit vector of the row least_weighted_row chose.
template <class T>
__global__ void __launch_bounds__(global_threads)
    unit_column(T* x, int M, const unsigned long long* chosen) {
  const int row = row_of_key(*chosen);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M; i += gridDim.x * blockDim.x)
    x[i] = i == row ? T(1) : T(0);
}

// x (M entries) divided by its norm, in one block.
template <class T>
__global__ void __launch_bounds__(global_threads) normalize_column(T* x, int M) {
  __shared__ unsigned long long scratch[32];
  const BlockTeam team{scratch};
  T local = 0;
  for (int i = threadIdx.x; i < M; i += blockDim.x) local = fma(x[i], x[i], local);
  const T scale = rsqrt(team.sum(local));
  for (int i = threadIdx.x; i < M; i += blockDim.x) x[i] *= scale;
}

// The output order: pos[r] gets the column of the r-th largest sigma (rank_chunk, `chunks` blocks
// per matrix).
template <class T>
__global__ void __launch_bounds__(sort_threads) global_order(GlobalState<T> G, int chunks) {
  wait_for_previous_kernel();
  const std::int64_t matrix = blockIdx.x / chunks;
  if (G.bad[matrix]) return;  // uniform over the block
  rank_chunk<sort_warps>(G.norms_of(matrix), G.N, int(blockIdx.x % chunks), G.pos_of(matrix));
}

// S, U and V, column r from working column pos[r]; NaN for matrices with NaN or Inf. The first
// threads report each matrix's sweeps and convergence.
template <class T>
__global__ void __launch_bounds__(global_threads) global_write(GlobalState<T> G) {
  wait_for_previous_kernel();
  const Problem<T>& P = G.P;
  for (std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; matrix < P.batch;
       matrix += std::int64_t(gridDim.x) * blockDim.x) {
    const double off = bits_as_double(G.off_bits[matrix]);
    report_matrix(G.report, matrix, P.batch,
                  G.bad[matrix] ? MatrixStatus{0, 0, 1, 0, double(NAN)}
                                : MatrixStatus{G.sweeps[matrix], G.converged[matrix], 0, 0, off});
  }
  const bool transposed = P.m < P.n;
  const std::int64_t k = G.N;
  const std::int64_t per_matrix = k + (P.uv ? (P.m + P.n) * k : 0);
  const std::int64_t total = per_matrix * P.batch;
  const T nan = T(NAN);
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t matrix = e / per_matrix;
    std::int64_t at = e % per_matrix;
    const bool bad = G.bad[matrix];
    const int* pos = G.pos_of(matrix);
    if (at < k) {
      P.S[matrix * P.s_stride + at] =
          bad ? nan : T(ldexp(G.norms_of(matrix)[pos[at]], G.exponent[matrix]));
      continue;
    }
    at -= k;
    const bool u_side = at < P.m * k;
    if (!u_side) at -= P.m * k;
    const std::int64_t rows = u_side ? P.m : P.n;
    const int i = int(at % rows), r = int(at / rows);
    // Where every sigma is 0 (the largest, ordered first, is), W's columns are what the completion
    // makes of them, the unit vectors of their own index (completion_slot), written here: a single
    // matrix then needs no completion and no second write (complete_single_matrix).
    const bool from_w = u_side != transposed;
    if (bad || (from_w && G.norms_of(matrix)[pos[0]] == 0)) {
      const T value = bad ? nan : T(i == pos[r]);
      if (u_side)
        P.U[matrix * P.u_stride + i + r * std::int64_t(P.ldu)] = value;
      else
        P.V[matrix * P.v_stride + i + r * std::int64_t(P.ldv)] = value;
      continue;
    }
    write_output_element(P, matrix, transposed, G.w(matrix), G.ldw, G.v(matrix), G.ldv, i, r,
                         pos[r], u_side);
  }
}

// The completion's parts that run in one block take up to these multiply-adds; beyond (and beyond
// Gram-Schmidt over the GPU, below, for a few missing columns), cuSOLVER's Householder QR, which
// spreads over the GPU. Gram-Schmidt a column at a time (M N per column of sigma 0 counted here)
// ran at a few GFLOP/s there: the 100 x 100 zero matrix took 2.1 ms against 0.55 ms for a random
// one, a rank-one 1024 x 1024 matrix 1.14 s (H100, double). Of the reflections only the factoring
// of the r kept columns (M r^2) runs in one block, the missing columns then over the GPU. The whole
// form in one block paid at 0.2 M multiply-adds (rank one, 256 x 256: 0.45 against 0.55 ms through
// cuSOLVER), not at 4.2 M (rank one, 1024 x 1024: 3.25 against 2.31 ms) nor at 7.4 M (rank 64 of
// 256 x 256, 1 M of them factoring: 4.06 against 2.52 ms; H100, double, svd at 0ae527b, blocks of
// 256 threads); the factoring alone keeps the bound of 2^19 that held for the whole form.
constexpr double one_block_gram_schmidt_work = 1 << 18;
constexpr double one_block_factor_work = 1 << 19;
// Rows up to which factor_for_completion runs on half the completion's block: its time on an H200
// in double (Nsight Compute; 1024 / 512 / 256 threads) at 100 x 100 with 50 kept columns 147 /
// 116 / 138 us, rank 25 of 100 x 100 68 / 53 / 58, 128 x 128 with 64 kept 218 / 187 / 238, rank
// 50 of 200 x 200 172 / 148 / 178; at 512 x 512 of rank two 15 / 20 / 33 us and 1024 x 1024 of
// rank one 29 / 40 / 63 (docs/results/h200-svd-completion-on-chip.txt).
constexpr int factor_half_block_rows = 256;
// A few missing columns among many kept ones (a column or two cleared as rounding noise in a large
// matrix: dlatms mode 4 at condition 1/eps keeps 1023 of 1024) go to Gram-Schmidt over the GPU, a
// column at a time in seven launches (gram_schmidt_over_the_gpu), past this many multiply-adds.
// Against cuSOLVER's QR of the kept columns, on an H200 in double: mode 4 at 1/eps 1024 x 1024
// 16.4 against 20.9 ms (the random matrix 15.1 ms, a sweep fewer), rank 1023 20.5-20.6 against
// 24.9-25.0 ms; against one block at 512 x 512, mode 4 at 1/eps 5.67-5.72 against 5.78-5.81 ms;
// at 256 x 256 within the runs' spread (docs/results/h200-svd-completion-gram-schmidt-bc6a95b.md).
constexpr double gram_schmidt_over_the_gpu_least_work = 1 << 15;
constexpr int gram_schmidt_over_the_gpu_columns = 8;

// Completes a single matrix's `zeros` columns of sigma 0 by Gram-Schmidt over the GPU (the kernels
// above): W's kept columns into Q by slot, each missing one formed there in slot order, then back
// to W.
template <class T>
void gram_schmidt_over_the_gpu(const GlobalState<T>& G, const int* slots, int kept,
                               cudaStream_t stream) {
  constexpr const char* op = "svd";
  const int M = G.M, N = G.N;
  StreamBuffer q(sizeof(T) * std::size_t(M) * N, stream, op),
      coefficients(sizeof(T) * std::size_t(N), stream, op),
      chosen(sizeof(unsigned long long) * std::size_t(N - kept), stream, op);
  ROOFLAB_CUDA(op, "clearing the completion's chosen rows",
               cudaMemsetAsync(chosen.data(), 0xFF, chosen.bytes(), stream));
  const unsigned grid = grid_for(std::int64_t(M) * N, global_threads);
  launch_after_previous("svd", move_completion_columns<T>, grid, global_threads, 0, 1, stream,
                        "move_completion_columns", G, q.as<T>(), slots, true);
  const cublasHandle_t blas = cublas_handle(stream);
  const unsigned row_grid = grid_for(M, global_threads);
  for (int s = kept; s < N; ++s) {
    T* const done = q.as<T>();
    T* const x = done + std::int64_t(s) * M;
    unsigned long long* const row = chosen.as<unsigned long long>() + (s - kept);
    least_weighted_row<T><<<row_grid, global_threads, 0, stream>>>(done, M, s, row);
    detail::check_launch(op, "least_weighted_row");
    unit_column<T><<<row_grid, global_threads, 0, stream>>>(x, M, row);
    detail::check_launch(op, "unit_column");
    for (int pass = 0; pass < 2; ++pass) {
      ROOFLAB_CUBLAS(op, product_with_vector(blas, CUBLAS_OP_T, M, s, T(1), done, M, x, T(0),
                                             coefficients.as<T>()));
      ROOFLAB_CUBLAS(op, product_with_vector(blas, CUBLAS_OP_N, M, s, T(-1), done, M,
                                             coefficients.as<T>(), T(1), x));
    }
    normalize_column<T><<<1, global_threads, 0, stream>>>(x, M);
    detail::check_launch(op, "normalize_column");
  }
  launch_after_previous("svd", move_completion_columns<T>, grid, global_threads, 0, 1, stream,
                        "move_completion_columns", G, q.as<T>(), slots, false);
}

// W's kept columns U_r (sigma > 0) are orthonormal; the first N columns of the Q of their
// Householder QR, H_1 ... H_r, are U_r up to signs and then an orthonormal basis of what U_r
// leaves out: those complete W's columns of sigma 0. The reflections form them so, factoring in
// one block and forming the missing columns over the GPU; a few missing columns among many kept
// ones go to Gram-Schmidt over the GPU; where the factoring or Gram-Schmidt is still too much work
// for one block, cuSOLVER's QR and formation of Q do it over the GPU. The host reads
// how many columns need it, which number_completion_slots counted into `zero_count` (page-locked,
// mapped) and `slots`, once the stream has run the outputs' kernels (write_results launches them
// first: svd waits for the stream anyway). Returns whether it completed any, and the outputs are
// then to be written again. Where every column is 0, global_write has written the completion.
template <class T>
bool complete_single_matrix(const GlobalState<T>& G, const int* slots,
                            const volatile unsigned* zero_count, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const int M = G.M, N = G.N;
  StreamMark numbered(op);
  numbered.record(stream);
  numbered.wait();
  const int zeros = int(*zero_count);
  if (zeros == 0 || zeros == N) return false;  // none to complete, or global_write did (all 0)
  const int kept = N - zeros;
  const bool reflections = completion_by_reflections(kept, zeros);
  if (reflections && double(M) * kept * kept <= one_block_factor_work) {
    const std::size_t y_bytes = sizeof(T) * std::size_t(M) * kept;
    const std::size_t optin = std::size_t(shared_memory_optin());
    const bool y_on_chip =  // beside factor_for_completion's scratch of its own
        kept > 0 && y_bytes + sizeof(unsigned long long[32]) <= optin;
    const std::size_t x_bytes = reflection_columns_bytes<T>(M);
    const bool x_on_chip = x_bytes <= optin;
    const std::size_t before_y = x_on_chip ? x_bytes : 0;
    const bool y_on_chip_to_reflect = y_on_chip && before_y + y_bytes <= optin;
    const int factor_bytes = y_on_chip ? int(y_bytes) : 0;
    const int reflect_bytes = int(before_y + (y_on_chip_to_reflect ? y_bytes : 0));
    const int factor_threads =
        M <= factor_half_block_rows ? completion_threads / 2 : completion_threads;
    allow_shared_memory(factor_for_completion<T>, factor_bytes);
    allow_shared_memory(reflect_for_completion<T>, reflect_bytes);
    if (kept > 0)
      launch_after_previous("svd", factor_for_completion<T>, 1, factor_threads, factor_bytes, 1,
                            stream, "factor_for_completion", G, slots, kept, y_on_chip);
    launch_after_previous("svd", reflect_for_completion<T>,
                          ((N + 3) / 4 + reflection_groups - 1) / reflection_groups,
                          reflection_threads, reflect_bytes, 1, stream, "reflect_for_completion", G,
                          slots, kept, y_on_chip_to_reflect, x_on_chip);
    return true;
  }
  const double gram_schmidt_work = double(M) * N * zeros;
  if (!reflections && zeros <= gram_schmidt_over_the_gpu_columns &&
      gram_schmidt_work > gram_schmidt_over_the_gpu_least_work) {
    gram_schmidt_over_the_gpu(G, slots, kept, stream);
    return true;
  }
  if (!reflections && gram_schmidt_work <= one_block_gram_schmidt_work) {
    launch_after_previous("svd", global_complete<T>, 1, completion_threads, 0, 1, stream,
                          "global_complete", G);
    return true;
  }
  const cusolverDnHandle_t solver = cusolver_handle(stream);
  StreamBuffer q(sizeof(T) * std::size_t(M) * N, stream, op),
      tau(sizeof(T) * std::size_t(N), stream, op), info(sizeof(int), stream, op);
  int factor_work = 0, form_work = 0;
  if (kept > 0)
    ROOFLAB_CUSOLVER(op, geqrf_buffer_size(solver, M, kept, q.as<T>(), M, &factor_work));
  ROOFLAB_CUSOLVER(op,
                   form_q_buffer_size(solver, M, N, kept, q.as<T>(), M, tau.as<T>(), &form_work));
  const int work_size = std::max({factor_work, form_work, 1});
  StreamBuffer work(sizeof(T) * std::size_t(work_size), stream, op);
  // Q's columns past the kept ones are zero: cuSOLVER's QR reads past its matrix (initcheck found
  // its geqr2 kernel reading them), and orgqr overwrites them. Its workspace and tau are cleared
  // too: geqr2 reads a word of them before writing it (the value is not used, but an input that
  // nothing wrote is what initcheck reports, and a user running it would see it here).
  ROOFLAB_CUDA(op, "clearing the completion's workspace",
               cudaMemsetAsync(q.data(), 0, q.bytes(), stream));
  ROOFLAB_CUDA(op, "clearing the completion's workspace",
               cudaMemsetAsync(tau.data(), 0, tau.bytes(), stream));
  ROOFLAB_CUDA(op, "clearing the completion's workspace",
               cudaMemsetAsync(work.data(), 0, work.bytes(), stream));
  const unsigned grid = grid_for(std::int64_t(M) * N, global_threads);
  launch_after_previous("svd", move_completion_columns<T>, grid, global_threads, 0, 1, stream,
                        "move_completion_columns", G, q.as<T>(), slots, true);
  if (kept > 0)
    ROOFLAB_CUSOLVER(op, geqrf(solver, M, kept, q.as<T>(), M, tau.as<T>(), work.as<T>(), work_size,
                               info.as<int>()));
  ROOFLAB_CUSOLVER(op, form_q(solver, M, N, kept, q.as<T>(), M, tau.as<T>(), work.as<T>(),
                              work_size, info.as<int>()));
  launch_after_previous("svd", move_completion_columns<T>, grid, global_threads, 0, 1, stream,
                        "move_completion_columns", G, q.as<T>(), slots, false);
  return true;
}

// The single matrix's count of columns to complete, in page-locked memory mapped for the device,
// kept per host thread (allocated by the first single-matrix call on it, not by batches).
unsigned* completion_count() {
  thread_local PinnedBuffer<unsigned> count(1, cudaHostAllocMapped | cudaHostAllocPortable);
  return count.data();
}

}  // namespace

// Every matrix's verdict on NaN or Inf and its scaling exponent, then W = A (or A^T) scaled by it
// and V = I when G.P.uv (global_max_abs, global_begin, global_load). G.max_bits must start at 0.
template <class T>
void load_scaled(const GlobalState<T>& G, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const std::int64_t batch = G.P.batch;
  const std::int64_t elements = std::int64_t(G.P.m) * G.P.n;
  // About 16 elements a thread: whole columns per block; a column a warp where the pass also takes
  // each column with the next (a chain of loads and sums a column: on the H200 the pass over a 100
  // x 100 matrix took 11.0-12.9 us with five columns a warp and 4.2-5.1 with one, against 7.6-9.7
  // without the look; docs/results/h200-svd-cluster-arrival-by-neighbours-28d1b92.txt).
  const int columns = G.neighbours_apart != nullptr
                          ? std::min(G.P.n, global_warps)
                          : std::min(G.P.n, std::max(1, global_threads * 16 / G.P.m));
  const std::int64_t blocks_per_matrix = (G.P.n + columns - 1) / columns;
  require(batch * blocks_per_matrix < (std::int64_t(1) << 31), op, "batch", "too many elements");
  launch_after_previous("svd", global_max_abs<T>, batch * blocks_per_matrix, global_threads, 0, 1,
                        stream, "global_max_abs", G, columns, int(blocks_per_matrix));
  const unsigned per_matrix_grid = unsigned((batch + global_threads - 1) / global_threads);
  launch_after_previous("svd", global_begin<T>, per_matrix_grid, global_threads, 0, 1, stream,
                        "global_begin", G);
  launch_after_previous("svd", global_load<T>, grid_for(elements * batch, global_threads),
                        global_threads, 0, 1, stream, "global_load", G);
}

template <class T>
void launch_column_norms(const GlobalState<T>& G, bool final, cudaStream_t stream) {
  const unsigned column_grid = grid_for(std::int64_t(G.P.batch) * G.positions, global_warps);
  launch_after_previous("svd", global_column_norms<T>, column_grid, global_threads, 0, 1, stream,
                        "global_column_norms", G, final);
}

template <class T>
void write_results(const GlobalState<T>& G, bool sweeps_left_sigma_and_u, cudaStream_t stream) {
  const Problem<T>& problem = G.P;
  const std::int64_t batch = problem.batch;
  if (!sweeps_left_sigma_and_u) launch_column_norms(G, true, stream);
  if (problem.uv) {
    if (!sweeps_left_sigma_and_u)
      launch_after_previous("svd", global_normalize<T>,
                            grid_for(G.M * std::int64_t(G.N) * batch, global_threads),
                            global_threads, 0, 1, stream, "global_normalize", G);
    if (batch > 1)
      launch_after_previous("svd", global_complete<T>, batch, completion_threads, 0, 1, stream,
                            "global_complete", G);
  }
  // A single matrix's columns of sigma 0 are counted here and completed after the outputs' kernels
  // have run (complete_single_matrix), which then run again: a matrix with none, most of them,
  // needs no wait in between (the wait and the launches after it cost a random 100 x 100 matrix
  // 17-25 us, H100, h100-svd-random-by-commit.json between 3124dc3 and 308dadd).
  const bool single = problem.uv && batch == 1;
  unsigned* const zero_count = single ? completion_count() : nullptr;
  StreamBuffer slots(single ? sizeof(int) * std::size_t(G.N) : 0, stream, "svd");
  if (single) {
    unsigned* device_count = nullptr;
    ROOFLAB_CUDA("svd", "mapping the count of columns to complete",
                 cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_count), zero_count, 0));
    launch_after_previous("svd", number_completion_slots<T>, 1, global_threads, 0, 1, stream,
                          "number_completion_slots", G, slots.as<int>(), device_count);
  }
  // After a completion the order runs again too: global_complete takes pos as its scratch.
  const int order_chunks = (G.N + sort_columns - 1) / sort_columns;
  const std::int64_t outputs =
      (G.N + (problem.uv ? std::int64_t(problem.m + problem.n) * G.N : 0)) * batch;
  const auto order_and_write = [&] {
    launch_after_previous("svd", global_order<T>, batch * order_chunks, sort_threads, 0, 1, stream,
                          "global_order", G, order_chunks);
    launch_after_previous("svd", global_write<T>, grid_for(outputs, global_threads), global_threads,
                          0, 1, stream, "global_write", G);
  };
  order_and_write();
  if (single && complete_single_matrix(G, slots.as<const int>(), zero_count, stream))
    order_and_write();
}

#define ROOFLAB_INSTANTIATE(T)                                                     \
  template void load_scaled<T>(const GlobalState<T>&, cudaStream_t);               \
  template void launch_column_norms<T>(const GlobalState<T>&, bool, cudaStream_t); \
  template void write_results<T>(const GlobalState<T>&, bool, cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
