#pragma once
// One-sided Jacobi (Hestenes) SVD: the device code shared by rooflab::svd, rooflab::svd_batched
// and their ladders (no copies: every kernel is built from these pieces).
//
// The method. W = A, or A^T when m < n, so that W is M x N with M >= N, is scaled by a power of
// two (exact) so that its largest entry lies in [1/2, 1): no squared norm can overflow and only
// columns that are negligible next to ||A|| can underflow. Pairs of columns (p, q) are rotated,
// W <- W J and V <- V J, until every pair is orthogonal to tol:
//     |w_p . w_q| <= tol ||w_p|| ||w_q||          (LAPACK dgesvj's test)
// Then sigma_c = ||w_c||, u_c = w_c / sigma_c, and A = U diag(sigma) V^T.
//
// The ordering. A sweep sorts the columns by decreasing norm (de Rijk) and then runs an odd-even
// transposition ring over the sorted positions: round r pairs positions (i, i + 1) for i of the
// parity of r, rotates each pair and swaps the two positions. After N_pad rounds every pair has
// met exactly once (the ring reverses), n/2 rotations run at once, and sorting first cuts the
// sweeps (random square matrices in double, counting the final check: 10, 12, 12 sweeps at
// n = 128, 256, 512, against 12, 13, 14 for the classic round-robin without sorting; the CPU test
// JacobiModel checks the bound). Positions map to columns through pos[], so no column moves in
// memory.
//
// Column norms. Each pair's dot products compute ||w_p||^2, ||w_q||^2 and w_p . w_q afresh (the
// convergence test never relies on an updated norm); the sort uses the norms tracked through the
// rotations (alpha - t gamma, beta + t gamma), refreshed at every pair.
//
// Rounding noise. Each column carries an error scale (jacobi_math.hpp, RoundingNoise); a column
// whose fresh norm has fallen into it is set to zero before its pair is tested, so that
// rank-deficient matrices converge and their left vectors come out orthonormal.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "rooflab/cuda_check.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::jacobi {

// Lets `kernel` take `bytes` of dynamic shared memory (beyond 48 KB a kernel must opt in).
template <class Kernel>
void allow_shared_memory(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024)
    ROOFLAB_CUDA("svd", "letting the kernel take its dynamic shared memory",
                 cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// ---------------------------------------------------------------------------------------------
// Groups of lanes. A group of `lanes` lanes (a power of two, aligned within its warp) works on
// one column pair; every lane of a warp must call group_sum together (full-mask shuffles).

template <class T>
__device__ __forceinline__ T group_sum(T x, int lanes) {
  for (int offset = lanes >> 1; offset > 0; offset >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <class T>
__device__ __forceinline__ T warp_max(T x) {
  for (int offset = 16; offset > 0; offset >>= 1)
    x = fmax(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Which rows a lane visits, and in which order. Lane h of a group takes rows h, h + lanes, ...;
// the groups of a warp start at different rows of that sequence (`start`), so that with leading
// dimensions that are multiples of 32 the lanes of a warp hit 32 different shared-memory banks
// although their columns are arbitrary.
struct RowWalk {
  int first;  // h
  int step;   // lanes
  int count;  // rows of this lane
  int start;  // index in 0..count-1 where the walk begins
  __device__ RowWalk(int rows, int lanes, int h, int group_in_warp)
      : first(h),
        step(lanes),
        count(h < rows ? (rows - h + lanes - 1) / lanes : 0),
        start(count > 0 ? group_in_warp % count : 0) {}
  __device__ int row(int j) const {
    int k = start + j;
    if (k >= count) k -= count;
    return first + k * step;
  }
};

// Partial sums of ||p||^2, ||q||^2 and p . q over this lane's rows.
template <class T>
__device__ __forceinline__ void partial_dots(const T* p, const T* q, const RowWalk& walk, T& alpha,
                                             T& beta, T& gamma) {
  for (int j = 0; j < walk.count; ++j) {
    const int i = walk.row(j);
    const T x = p[i], y = q[i];
    alpha = fma(x, x, alpha);
    beta = fma(y, y, beta);
    gamma = fma(x, y, gamma);
  }
}

template <class T>
__device__ __forceinline__ T partial_norm2(const T* p, const RowWalk& walk) {
  T sum = 0;
  for (int j = 0; j < walk.count; ++j) {
    const T x = p[walk.row(j)];
    sum = fma(x, x, sum);
  }
  return sum;
}

// p <- c p - s q, q <- s p + c q over this lane's rows.
template <class T>
__device__ __forceinline__ void rotate_columns(T* p, T* q, const RowWalk& walk,
                                               const Rotation<T>& r) {
  for (int j = 0; j < walk.count; ++j) {
    const int i = walk.row(j);
    const T x = p[i], y = q[i];
    p[i] = fma(r.c, x, -r.s * y);
    q[i] = fma(r.s, x, r.c * y);
  }
}

template <class T>
__device__ __forceinline__ void clear_column(T* p, const RowWalk& walk) {
  for (int j = 0; j < walk.count; ++j) p[walk.row(j)] = T(0);
}

// One pair, by one group of `lanes` lanes: dots, the clearing of rounding noise, test, rotation of
// W's columns (w_walk: this lane's rows of them) and V's (v_walk, when uv), tracked norms and
// error scales, and the swap of the two positions. Columns >= cols are padding. `active` is false
// for the group's idle slots; with groups of more than one lane every lane of the warp calls this
// together (shuffles). Returns the scaled off-diagonal (0 when idle).
template <class T>
__device__ __forceinline__ T process_pair(T* W, std::int64_t ldw, const RowWalk& w_walk, T* V,
                                          std::int64_t ldv, const RowWalk& v_walk, bool uv,
                                          T* norms, T* error_scales, int* pos, int position,
                                          bool active, T tol, int lanes, int cols) {
  const int h = w_walk.first;
  const int p = active ? pos[position] : 0;
  const int q = active ? pos[position + 1] : 0;
  const bool real = active && p < cols && q < cols;
  const T scale_p = real ? error_scales[p] : T(0), scale_q = real ? error_scales[q] : T(0);
  T alpha = 0, beta = 0, gamma = 0;
  if (real) partial_dots(W + p * ldw, W + q * ldw, w_walk, alpha, beta, gamma);
  alpha = group_sum(alpha, lanes);
  beta = group_sum(beta, lanes);
  gamma = group_sum(gamma, lanes);
  T cosine = 0;
  T new_scale_p = scale_p, new_scale_q = scale_q;
  if (real) {
    const bool p_noise = is_rounding_noise(alpha, scale_p),
               q_noise = is_rounding_noise(beta, scale_q);
    if (p_noise) clear_column(W + p * ldw, w_walk);
    if (q_noise) clear_column(W + q * ldw, w_walk);
    if (p_noise || q_noise) {
      alpha = p_noise ? T(0) : alpha;
      beta = q_noise ? T(0) : beta;
      gamma = 0;
    }
    Rotation<T> r;
    const bool rotate = jacobi_rotation(alpha, beta, gamma, tol, r, cosine);
    if (rotate) {
      rotate_columns(W + p * ldw, W + q * ldw, w_walk, r);
      if (uv) rotate_columns(V + p * ldv, V + q * ldv, v_walk, r);
    }
    if (h == 0) {
      norms[p] = rotate ? alpha - r.t * gamma : alpha;
      norms[q] = rotate ? beta + r.t * gamma : beta;
    }
    if (rotate) rotate_error_scales(r, new_scale_p, new_scale_q);
  }
  // Every lane of the group has read pos and the error scales before they change (a group of one
  // lane has nothing to wait for, and a thread team's neighbours in the warp are other matrices).
  if (lanes > 1) __syncwarp();
  if (active && h == 0) {
    pos[position] = q;
    pos[position + 1] = p;
  }
  if (real && h == 0) {
    error_scales[p] = new_scale_p;
    error_scales[q] = new_scale_q;
  }
  return cosine;
}

// ---------------------------------------------------------------------------------------------
// Teams: the threads that own one matrix. One thread (the smallest matrices, many per warp), a
// warp (many matrices per block) or a whole block.

struct ThreadTeam {
  __device__ int rank() const { return 0; }
  __device__ int size() const { return 1; }
  __device__ void sync() const {}
  template <class T>
  __device__ T max(T x) const {
    return x;
  }
  template <class T>
  __device__ T sum(T x) const {
    return x;
  }
  __device__ unsigned long long min(unsigned long long x) const { return x; }
};

struct WarpTeam {
  __device__ int rank() const { return threadIdx.x & 31; }
  __device__ int size() const { return 32; }
  __device__ void sync() const { __syncwarp(); }
  template <class T>
  __device__ T max(T x) const {
    return warp_max(x);
  }
  template <class T>
  __device__ T sum(T x) const {
    return group_sum(x, 32);
  }
  __device__ unsigned long long min(unsigned long long x) const {
    for (int offset = 16; offset > 0; offset >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xffffffffu, x, offset);
      x = other < x ? other : x;
    }
    return x;
  }
};

struct BlockTeam {
  unsigned long long* scratch;  // 32 words of shared memory
  __device__ int rank() const { return threadIdx.x; }
  __device__ int size() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
  template <class Word, class Combine>
  __device__ Word combine_warps(Word x, Combine combine) const {
    Word* words = reinterpret_cast<Word*>(scratch);
    __syncthreads();  // the previous reduction's readers are done with the scratch
    if ((threadIdx.x & 31) == 0) words[threadIdx.x >> 5] = x;
    __syncthreads();
    Word result = words[0];
    for (int w = 1; w < int(blockDim.x >> 5); ++w) result = combine(result, words[w]);
    return result;
  }
  template <class T>
  __device__ T max(T x) const {
    return combine_warps(warp_max(x), [](T a, T b) { return fmax(a, b); });
  }
  template <class T>
  __device__ T sum(T x) const {
    return combine_warps(group_sum(x, 32), [](T a, T b) { return a + b; });
  }
  __device__ unsigned long long min(unsigned long long x) const {
    return combine_warps(WarpTeam{}.min(x),
                         [](unsigned long long a, unsigned long long b) { return a < b ? a : b; });
  }
};

// ---------------------------------------------------------------------------------------------
// Scaling, outputs and reports.

// Records one matrix's outcome: its status (when statuses are wanted) and the batch summary.
__device__ inline void report_matrix(const Report& report, std::int64_t matrix, int batch,
                                     const MatrixStatus& outcome) {
  if (report.status != nullptr) report.status[matrix] = outcome;
  if (report.summary == nullptr) return;
  const unsigned key = unsigned(batch - matrix);
  if (outcome.bad_input) {
    atomicAdd(&report.summary->bad_count, 1u);
    atomicMax(&report.summary->first_bad_key, key);
  } else if (!outcome.converged) {
    atomicAdd(&report.summary->unconverged_count, 1u);
    atomicMax(&report.summary->first_unconverged_key, key);
  }
}

// Every output of a matrix with NaN or Inf becomes NaN: a caller who ignores the error cannot
// mistake them for results.
template <class T, class Team>
__device__ void write_nan_outputs(const Team& team, const Problem<T>& P, std::int64_t matrix) {
  const T nan = T(NAN);
  const std::int64_t k = P.m < P.n ? P.m : P.n;
  for (std::int64_t r = team.rank(); r < k; r += team.size()) P.S[matrix * P.s_stride + r] = nan;
  if (!P.uv) return;
  for (std::int64_t e = team.rank(); e < P.m * k; e += team.size())
    P.U[matrix * P.u_stride + e % P.m + e / P.m * P.ldu] = nan;
  for (std::int64_t e = team.rank(); e < P.n * k; e += team.size())
    P.V[matrix * P.v_stride + e % P.n + e / P.n * P.ldv] = nan;
}

// The power of two that brings max |a| into [1/2, 1): W = ldexp(A, -exponent).
template <class T>
__device__ __forceinline__ int scaling_exponent(T max_abs) {
  int exponent = 0;
  frexp(max_abs, &exponent);
  return exponent;
}

// Output column r takes working column c. Without transposition U's columns are W's (normalized)
// and V's are the accumulated rotations; with it (m < n, W = A^T) the roles swap.
template <class T>
__device__ __forceinline__ void write_output_element(const Problem<T>& P, std::int64_t matrix,
                                                     bool transposed, const T* W, std::int64_t ldw,
                                                     const T* Vw, std::int64_t ldvw, int i, int r,
                                                     int c, bool u_side) {
  T* U = P.U + matrix * P.u_stride;
  T* V = P.V + matrix * P.v_stride;
  const T* from_w = W + c * ldw;
  const T* from_v = Vw + c * ldvw;
  if (u_side)
    U[i + std::int64_t(r) * P.ldu] = transposed ? from_v[i] : from_w[i];
  else
    V[i + std::int64_t(r) * P.ldv] = transposed ? from_w[i] : from_v[i];
}

// ---------------------------------------------------------------------------------------------
// A whole matrix in shared memory: the layout and the team routine.

// The row of least squared weight is found with one min over 64-bit keys: the weight, rounded to
// float, in the high half (a non-negative float orders as its bits) and the row in the low half, so
// that equal weights go to the first row.
template <class T>
__device__ unsigned long long row_weight_key(T weight, int row) {
  return static_cast<unsigned long long>(__float_as_uint(float(weight))) << 32 | unsigned(row);
}
__device__ inline int row_of_key(unsigned long long key) { return int(key & 0xffffffffu); }

// Completes the columns of W whose sigma is 0 to an orthonormal set: each becomes the standard
// basis vector least represented in the columns done so far (the row of least squared weight),
// orthogonalized against them by classical Gram-Schmidt run twice, and normalized. `done` marks
// orthonormal columns; `coefficients` is scratch.
template <class T, class Team>
__device__ void complete_orthonormal_columns(const Team& team, T* W, std::int64_t ldw, int M, int N,
                                             const T* sigma, int* done, T* coefficients,
                                             int lanes) {
  const int groups = team.size() / lanes;
  const int group = team.rank() / lanes, h = team.rank() % lanes;
  const int group_in_warp = (team.rank() & 31) / lanes;
  for (int c = 0; c < N; ++c) {
    if (sigma[c] > 0) continue;  // uniform: sigma is in shared memory, written before a sync
    unsigned long long best = ~0ull;
    for (int i = team.rank(); i < M; i += team.size()) {
      T weight = 0;
      for (int other = 0; other < N; ++other)
        if (done[other]) weight = fma(W[i + other * ldw], W[i + other * ldw], weight);
      best = min(best, row_weight_key(weight, i));
    }
    const int chosen = row_of_key(team.min(best));
    T* x = W + c * ldw;
    for (int i = team.rank(); i < M; i += team.size()) x[i] = i == chosen ? T(1) : T(0);
    team.sync();
    for (int pass = 0; pass < 2; ++pass) {
      const int slots = (N + groups - 1) / groups;
      for (int slot = 0; slot < slots; ++slot) {
        const int other = slot * groups + group;
        const bool use = other < N && done[other];
        T dot = 0;
        if (use) {
          const RowWalk walk(M, lanes, h, group_in_warp);
          T ignored_alpha = 0, ignored_beta = 0;
          partial_dots(W + other * ldw, x, walk, ignored_alpha, ignored_beta, dot);
        }
        dot = group_sum(dot, lanes);
        if (other < N && h == 0) coefficients[other] = use ? dot : T(0);
      }
      team.sync();
      for (int i = team.rank(); i < M; i += team.size()) {
        T projection = 0;
        for (int other = 0; other < N; ++other)
          projection = fma(coefficients[other], W[i + other * ldw], projection);
        x[i] -= projection;
      }
      team.sync();
    }
    T local = 0;
    for (int i = team.rank(); i < M; i += team.size()) local = fma(x[i], x[i], local);
    const T scale = rsqrt(team.sum(local));
    for (int i = team.rank(); i < M; i += team.size()) x[i] *= scale;
    if (team.rank() == 0) done[c] = 1;
    team.sync();
  }
}

// The count of W's kept columns (sigma > 0) among N, by the team together: a warp takes 32
// columns at a time with one ballot. A team of one thread walks them. Every thread of the team
// calls it.
template <class T, class Team>
__device__ int count_kept_columns(const Team& team, const T* sigma, int N) {
  if constexpr (std::is_same_v<Team, ThreadTeam>) {
    int kept = 0;
    for (int c = 0; c < N; ++c) kept += sigma[c] > 0;
    return kept;
  } else {
    const int lane = int(threadIdx.x & 31), warp = team.rank() >> 5, warps = team.size() >> 5;
    int counted = 0;
    for (int chunk = warp; chunk < (N + 31) / 32; chunk += warps) {
      const int c = 32 * chunk + lane;
      counted += __popc(__ballot_sync(0xffffffffu, c < N && sigma[c] > 0));
    }
    return team.sum(lane == 0 ? counted : 0);
  }
}

// Each column's completion_slot into `slot`, given the count of kept columns
// (count_kept_columns), by the team together: a warp numbers 32 columns at a time with one ballot,
// and counts the kept columns before them a ballot per 32 more. With each thread walking every
// column before its own, the kernel that numbers 256 columns in global memory (one block) took
// 18.7 us (H200, double, Nsight Compute). A team of one thread walks them. Every thread of the
// team calls it.
template <class T, class Team>
__device__ void fill_completion_slots(const Team& team, const T* sigma, int N, int kept,
                                      int* slot) {
  if constexpr (std::is_same_v<Team, ThreadTeam>) {
    for (int c = 0; c < N; ++c) slot[c] = completion_slot(sigma, kept, c);
  } else {
    const int lane = int(threadIdx.x & 31), warp = team.rank() >> 5, warps = team.size() >> 5;
    const auto kept_in_chunk = [&](int chunk) {
      const int c = 32 * chunk + lane;
      return __ballot_sync(0xffffffffu, c < N && sigma[c] > 0);
    };
    for (int chunk = warp; chunk < (N + 31) / 32; chunk += warps) {
      int before = 0;
      for (int earlier = 0; earlier < chunk; ++earlier) before += __popc(kept_in_chunk(earlier));
      const unsigned flags = kept_in_chunk(chunk);
      const int c = 32 * chunk + lane;
      const int kept_before = before + __popc(flags & ((1u << lane) - 1));
      if (c < N) slot[c] = (flags >> lane & 1) ? kept_before : kept + (c - kept_before);
    }
  }
}

// The completion by Householder reflections (completion_by_reflections), first half: the `kept`
// columns of sigma > 0 (orthonormal) are copied to Y (M x kept, leading dimension ldy, in global
// memory) by their completion_slot (`slot`, N ints) and factored there, reflection k being
// I - tau_k v_k v_k^T, v_k in Y's column k from row k on with its first entry 1 and tau_k in
// coefficients[k] (householder_reflector, as the block QR forms them; the columns are orthonormal,
// so every beta^2 is about 1, within its range). The k-th step needs the k - 1 before it: the team
// steps through them together. Y and the coefficients are visible to the team on return.
template <class T, class Team>
__device__ void factor_kept_columns(const Team& team, const T* W, std::int64_t ldw, int M, int N,
                                    const T* sigma, int kept, const int* slot, T* coefficients,
                                    T* Y, std::int64_t ldy, int lanes) {
  const int groups = team.size() / lanes;
  const int group = team.rank() / lanes, h = team.rank() % lanes;
  const int slots = (N + groups - 1) / groups;  // a column per group, lanes along its rows
  for (int s = 0; s < slots; ++s) {
    const int c = s * groups + group;
    if (c < N && sigma[c] > 0)
      for (int i = h; i < M; i += lanes) Y[i + slot[c] * ldy] = W[i + c * ldw];
  }
  team.sync();
  for (int k = 0; k < kept; ++k) {
    T* v = Y + k * ldy;
    const T alpha = v[k];
    T local = 0;
    for (int i = k + 1 + team.rank(); i < M; i += team.size()) local = fma(v[i], v[i], local);
    const Reflector<T> r = householder_reflector(alpha, team.sum(local));
    team.sync();  // every thread has read alpha
    for (int i = k + 1 + team.rank(); i < M; i += team.size()) v[i] *= r.inverse;
    if (team.rank() == 0) {
      v[k] = 1;
      coefficients[k] = r.tau;
    }
    team.sync();
    const T coefficient = coefficients[k];
    const int rest = (kept - k - 1 + groups - 1) / groups;
    for (int s = 0; s < rest; ++s) {  // the same count for every lane: group_sum shuffles
      const int j = k + 1 + s * groups + group;
      T* y = Y + std::int64_t(min(j, kept - 1)) * ldy;
      T dot = 0;
      if (j < kept)
        for (int i = k + h; i < M; i += lanes) dot = fma(v[i], y[i], dot);
      dot = group_sum(dot, lanes) * coefficient;
      if (j < kept)
        for (int i = k + h; i < M; i += lanes) y[i] = fma(-dot, v[i], y[i]);
    }
    team.sync();
  }
}

// The completion by reflections, second half: the missing column numbered j among all (the kept
// first, then the others, each in column order; j = slot[c]) becomes H_1 ... H_kept e_j, from the
// factored Y and coefficients. The columns are independent: groups of `lanes` lanes take them in
// turn, group `group` of `all_groups`, which may span the blocks of a grid. A group takes four
// columns at a time (kept ones among them stay idle): each reflection's v is read once for four
// dot products, and their four sums overlap. Each lane keeps its rows (h, h + lanes, ...) of the
// four columns throughout: no barrier. A thread team takes one at a time: four cost its kernel 8
// more registers and a stack frame. Where `columns` is given (the group's own M x 4 of shared
// memory, leading dimension M), the four columns are formed there, each step reading what the one
// before wrote, and copied to W at the end.
template <class T, bool one_thread = false>
__device__ void reflect_missing_columns(T* W, std::int64_t ldw, int M, int N, const T* sigma,
                                        int kept, const int* slot, const T* coefficients,
                                        const T* Y, std::int64_t ldy, int lanes, int h, int group,
                                        int all_groups, T* columns = nullptr) {
  constexpr int together = one_thread ? 1 : 4;
  const int quads = (N + together - 1) / together;
  for (int s = 0; s < (quads + all_groups - 1) / all_groups; ++s) {
    const int first_column = (s * all_groups + group) * together;
    T* x[together];
    bool missing[together];
    bool any = false;
    for (int t = 0; t < together; ++t) {
      const int c = first_column + t;
      missing[t] = c < N && !(sigma[c] > 0);
      any = any || missing[t];
      x[t] = columns != nullptr ? columns + t * M : W + std::int64_t(min(c, N - 1)) * ldw;
      if (missing[t])
        for (int i = h; i < M; i += lanes) x[t][i] = i == slot[c] ? T(1) : T(0);
    }
    for (int k = kept - 1; k >= 0; --k) {
      const T* v = Y + k * ldy;
      const int first = k + (h - k % lanes + lanes) % lanes;  // this lane's first row >= k
      T dot[together] = {};
      if (any)
        for (int i = first; i < M; i += lanes) {
          const T vi = v[i];
          for (int t = 0; t < together; ++t)
            if (missing[t]) dot[t] = fma(vi, x[t][i], dot[t]);  // an idle column is not read
        }
      for (int t = 0; t < together; ++t) dot[t] = group_sum(dot[t], lanes) * coefficients[k];
      if (any)
        for (int i = first; i < M; i += lanes) {
          const T vi = v[i];
          for (int t = 0; t < together; ++t)
            if (missing[t]) x[t][i] = fma(-dot[t], vi, x[t][i]);
        }
    }
    if (columns != nullptr)
      for (int t = 0; t < together; ++t)
        if (missing[t])
          for (int i = h; i < M; i += lanes) W[i + std::int64_t(first_column + t) * ldw] = x[t][i];
  }
}

// Completes the columns of W whose sigma is 0 by Householder reflections in one team
// (completion_by_reflections): numbers the columns into `slot`, factors the kept ones in Y
// (factor_kept_columns) and forms the missing ones (reflect_missing_columns), one group of
// `lanes` lanes per column. `slot` (N ints) and `coefficients` (kept entries) are scratch.
template <class T, class Team>
__device__ void complete_by_reflections(const Team& team, T* W, std::int64_t ldw, int M, int N,
                                        const T* sigma, int kept, int* slot, T* coefficients, T* Y,
                                        std::int64_t ldy, int lanes) {
  fill_completion_slots(team, sigma, N, kept, slot);
  team.sync();
  factor_kept_columns(team, W, ldw, M, N, sigma, kept, slot, coefficients, Y, ldy, lanes);
  reflect_missing_columns<T, std::is_same_v<Team, ThreadTeam>>(
      W, ldw, M, N, sigma, kept, slot, coefficients, Y, ldy, lanes, team.rank() % lanes,
      team.rank() / lanes, team.size() / lanes);
  team.sync();
}

// Completes the columns of W whose sigma is 0 to an orthonormal set, in the form
// completion_by_reflections picks; Y (M x N, leading dimension ldy, global memory) is the
// reflections' scratch, `pos` and `coefficients` (N entries each) the forms' own. Every thread of
// the team calls it after a sync; W is complete and visible to the team on return.
template <class T, class Team>
__device__ void complete_zero_columns(const Team& team, T* W, std::int64_t ldw, int M, int N,
                                      const T* sigma, int* pos, T* coefficients, T* Y,
                                      std::int64_t ldy, int lanes) {
  const int kept = count_kept_columns(team, sigma, N);
  if (kept == N) return;
  if (completion_by_reflections(kept, N - kept)) {
    complete_by_reflections(team, W, ldw, M, N, sigma, kept, pos, coefficients, Y, ldy, lanes);
    return;
  }
  for (int c = team.rank(); c < N; c += team.size()) pos[c] = sigma[c] > 0;
  team.sync();
  complete_orthonormal_columns(team, W, ldw, M, N, sigma, pos, coefficients, lanes);
}

// Where W's columns go in the outputs of matrix `matrix` (U, or V when m < n: M x N, leading
// dimension ld). Until they are written there it is free: the completion's scratch.
template <class T>
__device__ T* w_output(const Problem<T>& P, std::int64_t matrix, std::int64_t& ld) {
  const bool transposed = P.m < P.n;
  ld = transposed ? P.ldv : P.ldu;
  return transposed ? P.V + matrix * P.v_stride : P.U + matrix * P.u_stride;
}

// Sorts columns by decreasing key, ties by index, into order[0..count) as `placement` puts their
// ranks: order[ring_position(placement, rank, count)] = column. O(count^2 / threads): the on-chip
// matrices have at most a few hundred columns.
template <class T, class Team>
__device__ void rank_sort_descending(const Team& team, const T* key, int count, Placement placement,
                                     int* order) {
  for (int c = team.rank(); c < count; c += team.size()) {
    const T mine = key[c];
    int rank = 0;
    for (int other = 0; other < count; ++other) {
      const T theirs = key[other];
      rank += ahead_when_descending(theirs, other, mine, c);
    }
    order[ring_position(placement, rank, count)] = c;
  }
}

template <class T>
struct SweepOutcome {
  int sweeps = 0;
  bool converged = false;
  T off = 0;                 // the last sweep's largest scaled off-diagonal
  T first_off = 0;           // the first sweep's: at most tol when nothing rotated in it
  bool handed_over = false;  // stopped by the register ring's early hand-over (register_ring.cu)
};

// Sweeps of one team over `cols` columns of W (rows long, in shared memory), accumulating the
// rotations into the first v_rows rows of V's columns when uv: initial norms, then per sweep a
// sort by tracked norm and n_pad rounds of the odd-even ring, until a sweep finds every pair
// orthogonal to tol or max_sweeps have run. norms, error_scales and pos hold n_pad entries; the
// error scales start from the initial norms when `fresh_scales`, else they are the caller's. With
// fresh scales the columns are as loaded, and graded ones go on the ring zigzag
// (placement_as_loaded); a caller's columns, mid-solve, go sorted. Every
// thread of the team calls it; W, V, norms, error_scales and pos must be visible to the team (a
// sync before).
template <class T, class Team>
__device__ SweepOutcome<T> team_sweeps(const Team& team, T* W, int ldw, int rows, int cols, T* V,
                                       int ldv, int v_rows, bool uv, T* norms, T* error_scales,
                                       bool fresh_scales, int* pos, T tol, int max_sweeps,
                                       int lanes) {
  const int n_pad = cols + (cols & 1);
  const int rank = team.rank(), threads = team.size();
  const int groups = threads / lanes;
  const int group = rank / lanes, h = rank % lanes;
  const int group_in_warp = (rank & 31) / lanes;
  // This lane's rows of W's and V's columns: the same for every pair (divisions done once).
  const RowWalk w_walk(rows, lanes, h, group_in_warp), v_walk(v_rows, lanes, h, group_in_warp);
  {  // initial norms; every lane of a warp runs the same number of slots (full-mask shuffles)
    const int slots = (n_pad + groups - 1) / groups;
    for (int slot = 0; slot < slots; ++slot) {
      const int c = slot * groups + group;
      T sum = c < cols ? partial_norm2(W + c * ldw, w_walk) : T(0);
      sum = group_sum(sum, lanes);
      if (h == 0 && c < n_pad) norms[c] = c < cols ? sum : T(-1);  // padding sorts last
      if (fresh_scales && h == 0 && c < cols) error_scales[c] = initial_error_scale(sum, cols);
    }
  }
  team.sync();
  const Placement placement = fresh_scales ? placement_as_loaded(norms, cols) : Placement::sorted;

  SweepOutcome<T> outcome;
  while (outcome.sweeps < max_sweeps && !outcome.converged) {
    ++outcome.sweeps;
    rank_sort_descending(team, norms, n_pad, placement, pos);
    team.sync();
    T local_off = 0;
    for (int round = 0; round < n_pad; ++round) {
      const int pairs = pairs_in_round(round, n_pad);
      const int slots = (pairs + groups - 1) / groups;
      for (int slot = 0; slot < slots; ++slot) {
        const int pair = slot * groups + group;
        const T cosine = process_pair(W, ldw, w_walk, V, ldv, v_walk, uv, norms, error_scales, pos,
                                      first_position(round, pair), pair < pairs, tol, lanes, cols);
        local_off = fmax(local_off, cosine);
      }
      team.sync();
    }
    outcome.off = team.max(local_off);
    if (outcome.sweeps == 1) outcome.first_off = outcome.off;
    outcome.converged = !(outcome.off > tol);
  }
  return outcome;
}

// Loads matrix `matrix` of P into W (transposing when m < n: A's element (i, j) becomes W's
// (j, i)), reading A coalesced, scales it by the power of two of scaling_exponent and sets V = I.
// A matrix with NaN or Inf gets NaN outputs and its report instead, and the call returns false.
// Every thread of the team calls it; W and V are visible to the team on return.
template <class T, class Team>
__device__ bool load_on_chip(const Team& team, unsigned char* smem, const OnChipLayout& L,
                             const Problem<T>& P, std::int64_t matrix, const Report& report,
                             int& exponent) {
  const int M = L.M, N = L.N;
  const bool transposed = P.m < P.n;
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* Vw = reinterpret_cast<T*>(smem + L.v_offset);
  const int rank = team.rank(), threads = team.size();
  const T* A = P.A + matrix * P.a_stride;
  T local_max = 0;
  int local_bad = 0;
  const int elements = P.m * P.n;
  for (int e = rank; e < elements; e += threads) {
    const int i = e % P.m, j = e / P.m;
    const T x = A[i + std::int64_t(j) * P.lda];
    local_bad |= !isfinite(x);
    local_max = fmax(local_max, fabs(x));
    W[transposed ? j + i * L.ldw : i + j * L.ldw] = x;
  }
  const bool bad = team.max(T(local_bad)) > 0;
  const T max_abs = team.max(local_max);
  if (bad) {
    write_nan_outputs(team, P, matrix);
    if (rank == 0) report_matrix(report, matrix, P.batch, MatrixStatus{0, 0, 1, 0, double(NAN)});
    return false;
  }
  exponent = scaling_exponent(max_abs);
  team.sync();
  for (int e = rank; e < M * N; e += threads) {
    const int i = e % M, j = e / M;
    W[i + j * L.ldw] = ldexp(W[i + j * L.ldw], -exponent);
  }
  if (P.uv)
    for (int e = rank; e < N * N; e += threads) {
      const int i = e % N, j = e / N;
      Vw[i + j * L.ldv] = i == j ? T(1) : T(0);
    }
  team.sync();
  return true;
}

// Turns the converged W (and V) of one matrix in shared memory into its outputs: sigma_c = ||w_c||
// afresh (negligible columns get 0), U's columns w_c / sigma_c completed to an orthonormal set,
// all sorted by decreasing sigma and scaled back by 2^exponent, and the matrix's report. Every
// thread of the team calls it after a sync.
template <class T, class Team>
__device__ void finish_on_chip(const Team& team, unsigned char* smem, const OnChipLayout& L,
                               const Problem<T>& P, std::int64_t matrix, int lanes, int exponent,
                               const SweepOutcome<T>& outcome, const Report& report) {
  const int M = L.M, N = L.N;
  const bool transposed = P.m < P.n;
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* Vw = reinterpret_cast<T*>(smem + L.v_offset);
  T* norms = reinterpret_cast<T*>(smem + L.norms_offset);
  T* coefficients = reinterpret_cast<T*>(smem + L.coefficients_offset);
  int* pos = reinterpret_cast<int*>(smem + L.pos_offset);
  const int rank = team.rank(), threads = team.size();
  const int groups = threads / lanes;
  const int group = rank / lanes, h = rank % lanes;
  const int group_in_warp = (rank & 31) / lanes;
  {
    const int slots = (N + groups - 1) / groups;
    const RowWalk walk(M, lanes, h, group_in_warp);
    for (int slot = 0; slot < slots; ++slot) {
      const int c = slot * groups + group;
      T sum = c < N ? partial_norm2(W + c * L.ldw, walk) : T(0);
      sum = group_sum(sum, lanes);
      if (h == 0 && c < N) norms[c] = sum >= Precision<T>::negligible ? sqrt(sum) : T(0);
    }
  }
  team.sync();
  if (P.uv) {
    for (int e = rank; e < M * N; e += threads) {
      const int i = e % M, c = e / M;
      if (norms[c] > 0) W[i + c * L.ldw] /= norms[c];
    }
    team.sync();
    std::int64_t ldy = 0;
    T* Y = w_output(P, matrix, ldy);
    complete_zero_columns(team, W, L.ldw, M, N, norms, pos, coefficients, Y, ldy, lanes);
  }
  rank_sort_descending(team, norms, N, Placement::sorted, pos);
  team.sync();

  const std::int64_t k = N;
  T* S = P.S + matrix * P.s_stride;
  for (int r = rank; r < N; r += threads) S[r] = ldexp(norms[pos[r]], exponent);
  if (P.uv) {
    for (std::int64_t e = rank; e < P.m * k; e += threads) {
      const int i = int(e % P.m), r = int(e / P.m);
      write_output_element(P, matrix, transposed, W, L.ldw, Vw, L.ldv, i, r, pos[r], true);
    }
    for (std::int64_t e = rank; e < P.n * k; e += threads) {
      const int i = int(e % P.n), r = int(e / P.n);
      write_output_element(P, matrix, transposed, W, L.ldw, Vw, L.ldv, i, r, pos[r], false);
    }
  }
  if (rank == 0)
    report_matrix(
        report, matrix, P.batch,
        MatrixStatus{outcome.sweeps, outcome.converged ? 1 : 0, 0, 0, double(outcome.off)});
}

// The whole SVD of matrix `matrix` of P by one team, its working set in `smem` (layout L).
template <class T, class Team>
__device__ void on_chip_svd(const Team& team, unsigned char* smem, const OnChipLayout& L,
                            const Problem<T>& P, std::int64_t matrix, int lanes,
                            const Report& report) {
  int exponent = 0;
  if (!load_on_chip(team, smem, L, P, matrix, report, exponent)) return;
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* Vw = reinterpret_cast<T*>(smem + L.v_offset);
  T* norms = reinterpret_cast<T*>(smem + L.norms_offset);
  T* error_scales = reinterpret_cast<T*>(smem + L.error_scales_offset);
  int* pos = reinterpret_cast<int*>(smem + L.pos_offset);
  const SweepOutcome<T> outcome = team_sweeps(team, W, L.ldw, L.M, L.N, Vw, L.ldv, L.N, P.uv, norms,
                                              error_scales, true, pos, P.tol, P.max_sweeps, lanes);
  finish_on_chip(team, smem, L, P, matrix, lanes, exponent, outcome, report);
}

}  // namespace rooflab::jacobi
