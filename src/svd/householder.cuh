#pragma once
// Householder reflectors in shared memory: a warp's formation of one (the one-block QR,
// block_qr.cu, and the register ring's QR on a column of rounding noise), and the register ring's
// QR of its matrix, R^T and Q (register_ring.cu), with two lanes a column. A reflector
// H_k = I - tau v v^T has v_k = 1 and v's rows k + 1 on stored below the diagonal of its column,
// as LAPACK's geqrf leaves them (the ring's unscaled, SortedQr).
#include <limits>

#include "svd/jacobi.cuh"

namespace rooflab::jacobi {

// Reflector k from rows k on of `column` (M rows), by one warp: beta to column[k], v's other
// entries to column[k + 1 :], tau to *tau.
template <class T>
__device__ void form_reflector(T* column, int M, int k, T* tau) {
  const int lane = threadIdx.x & 31;
  // Lane 0 alone reads the entry it overwrites at the end; the others get it by shuffle.
  const T alpha = __shfl_sync(0xffffffffu, lane == 0 ? column[k] : T(0), 0);
  T sum = 0;
  for (int i = k + 1 + lane; i < M; i += 32) sum = fma(column[i], column[i], sum);
  sum = group_sum(sum, 32);  // the same bits in every lane: the branches below are the warp's
  if (sum >= Precision<T>::negligible &&
      fma(alpha, alpha, sum) <= std::numeric_limits<T>::max() / 4) {
    const Reflector<T> r = householder_reflector(alpha, sum);
    for (int i = k + 1 + lane; i < M; i += 32) column[i] *= r.inverse;
    if (lane == 0) {
      column[k] = r.beta;
      *tau = r.tau;
    }
    return;
  }
  // Where x's squares under- or overflowed (a column of rounding noise left by the steps before,
  // on a rank-deficient matrix), or alpha's did, alpha and x are taken scaled by the power of two
  // that brings the largest into [1, 2), exactly, so that beta, tau and v keep their precision
  // (dlarfg rescales too): unscaled, beta - alpha and v fell among the subnormals and Q lost its
  // orthogonality (float rank-one integer matrices from 100 x 100: |Q^T Q - I| 1700 M eps).
  // Non-finite entries are not scaled: they carry on into tau and v.
  T largest = 0;
  for (int i = k + 1 + lane; i < M; i += 32) largest = fmax(largest, fabs(column[i]));
  const T biggest = fmax(fabs(alpha), warp_max(largest));
  int exponent = 0;
  T alpha_scaled = alpha, sum_scaled = sum;
  if (biggest > 0 && biggest <= std::numeric_limits<T>::max()) {
    exponent = ilogb(biggest);
    alpha_scaled = scalbn(alpha, -exponent);
    T partial = 0;
    for (int i = k + 1 + lane; i < M; i += 32) {
      const T x = scalbn(column[i], -exponent);
      partial = fma(x, x, partial);
    }
    sum_scaled = group_sum(partial, 32);
  }
  const Reflector<T> r = householder_reflector(alpha_scaled, sum_scaled);
  for (int i = k + 1 + lane; i < M; i += 32) column[i] = scalbn(column[i], -exponent) * r.inverse;
  if (lane == 0) {
    column[k] = scalbn(r.beta, exponent);
    *tau = r.tau;
  }
}

// The factors of block_sorted_qr: reflector k is H_k = I - tau_k v v^T with v_k = 1 and
// v_i = scale_k x_i below, x the entries stored below the diagonal of column order[k] (left as
// the update found them: scaling them would lie on the path to the next step).
template <class T>
struct SortedQr {
  const int* order;
  T* taus;
  T* scales;
  int* slow_reflectors;  // two flags: reflector k needs form_reflector's scaling, at k mod 2
};

// Reflector k of a column from its entry alpha = column[k] and the squared norm `below` of its
// entries past row k, by one thread: beta to column[k], tau and scale (1 / (alpha - beta)) to the
// factors. False where `below` is positive but under Precision<T>::negligible, whose reflector
// needs form_reflector's scaling (a column of rounding noise on a rank-deficient matrix).
template <class T>
__device__ bool set_reflector(T* column, int k, T below, const SortedQr<T>& qr) {
  if (below > 0 && below < Precision<T>::negligible) return false;
  const Reflector<T> r = householder_reflector(column[k], below);  // W < 1: no overflow
  column[k] = r.beta;
  qr.taus[k] = r.tau;
  qr.scales[k] = r.inverse;
  return true;
}

// z <- H_k z (reflector k of block_sorted_qr: x below row k of `reflector`, its tau and scale)
// for the rows this lane takes of column z, two adjacent lanes a column: parity p takes rows
// k + 1 + p, k + 3 + p, ..., the even lane also row k. Every lane of the warp calls it (a full-mask
// shuffle: with the two lanes' mask, in code the compiler could not prove converged, it took its
// collective path); a lane of a pair without a column passes rows = 0. Returns the squared norm of
// the lane's rows past k + 1 after the update: the next reflector's `below`, for the column that
// gives it.
template <class T>
__device__ __forceinline__ T reflect_pair_column(const T* reflector, T tau, T scale, int k,
                                                 int rows, int p, T* z) {
  // Rows in groups of `unrolled` a lane, each row its own chain: with one chain the loops waited on
  // each load and multiply-add in turn.
  constexpr int unrolled = 4;
  static_assert(unrolled == 4, "the sums below add four chains");
  __syncwarp();           // some rows this lane reads were the other lane's a reflector ago
  T sums[unrolled] = {};  // x . z over the lane's rows past k
  for (int i0 = k + 1 + p; i0 < rows; i0 += 2 * unrolled)
#pragma unroll
    for (int u = 0; u < unrolled; ++u) {
      const int i = i0 + 2 * u;
      if (i < rows) sums[u] = fma(reflector[i], z[i], sums[u]);
    }
  const bool diagonal = p == 0 && k < rows;
  T dot = scale * ((sums[0] + sums[1]) + (sums[2] + sums[3])) + (diagonal ? z[k] : T(0));
  dot += __shfl_xor_sync(0xffffffffu, dot, 1);  // v . z, v_k = 1 and v_i = scale x_i
  const T w = tau * dot;
  if (diagonal) z[k] -= w;
  const T ws = w * scale;
  T below[unrolled] = {};
  for (int i0 = k + 1 + p; i0 < rows; i0 += 2 * unrolled)
#pragma unroll
    for (int u = 0; u < unrolled; ++u) {
      const int i = i0 + 2 * u;
      if (i < rows) {
        const T updated = fma(-ws, reflector[i], z[i]);
        z[i] = updated;
        if (i > k + 1) below[u] = fma(updated, updated, below[u]);
      }
    }
  return (below[0] + below[1]) + (below[2] + below[3]);
}

// W P = Q R, P the permutation that takes W's columns in qr.order (W: M x N, M >= N, leading
// dimension ldw, in shared memory), in place: step k leaves R's row k in row k of column
// qr.order[k] and reflector k below it (SortedQr). Two adjacent lanes a trailing column, the first
// pair on column k + 1, whose even lane then forms reflector k + 1 from the squared norm the update
// left: one block barrier a step, and no reduction across a warp. Needs 2 (N - 1) threads. Every
// thread of the block calls it after a sync; the factors are visible to the block on return.
template <class T>
__device__ void block_sorted_qr(T* W, int ldw, int M, int N, const SortedQr<T>& qr) {
  const int slot = threadIdx.x >> 1, p = threadIdx.x & 1;
  // Step k reads flag k mod 2 after its barrier while column k + 1's pair sets flag k + 1 mod 2.
  int* const slow = qr.slow_reflectors;
  if (threadIdx.x < 32) {  // reflector 0 from the squared norm of column order[0] past row 0
    T* const column = W + qr.order[0] * ldw;
    T below = 0;
    for (int i = 1 + p; i < M && slot == 0; i += 2) below = fma(column[i], column[i], below);
    below += __shfl_xor_sync(0xffffffffu, below, 1);
    if (threadIdx.x == 0) slow[0] = !set_reflector(column, 0, below, qr);
  }
  for (int k = 0;; ++k) {
    __syncthreads();
    if (slow[k & 1]) {  // rare: a column of rounding noise
      if (threadIdx.x < 32) {
        form_reflector(W + qr.order[k] * ldw, M, k, &qr.taus[k]);
        if (threadIdx.x == 0) qr.scales[k] = 1;  // form_reflector stores v scaled
      }
      __syncthreads();
    }
    if (k + 1 == N) break;
    const int j = k + 1 + slot;  // this pair's column; past N, none (rows 0)
    T* const column = W + qr.order[min(j, N - 1)] * ldw;
    const int rows = j < N ? M : 0;
    const T tau = qr.taus[k];  // the block's: the branch is uniform
    T below = 0;
    if (tau != 0) {
      below = reflect_pair_column(W + qr.order[k] * ldw, tau, qr.scales[k], k, rows, p, column);
    } else {  // H_k = I: column k + 1 as it is
      for (int i = k + 2 + p; i < rows && j == k + 1; i += 2)
        below = fma(column[i], column[i], below);
    }
    if (threadIdx.x < 32) {
      below += __shfl_xor_sync(0xffffffffu, below, 1);
      if (threadIdx.x == 0) slow[(k + 1) & 1] = !set_reflector(column, k + 1, below, qr);
    }
  }
}

// X (N x N, leading dimension ldx) <- R^T from block_sorted_qr's factors of W: row j of R, whose
// entries R[j][k] = W[j, order[k]] (k >= j) are q_j^T w_order[k], becomes column j of X. Each is
// off by about eps |w_order[k]|: a row of rounding noise (triangle_row_is_noise; norm2 holds W's
// squared column norms before the QR) is cleared, a zero column of R^T. A warp per row.
// Every thread of the block calls it after a sync; X is visible to the block after the next.
template <class T>
__device__ void block_transposed_triangle(const T* W, int ldw, int N, const int* order,
                                          const T* norm2, T* X, int ldx) {
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  for (int j = threadIdx.x >> 5; j < N; j += warps) {
    T row2 = 0, suffix = 0;
    for (int k = j + lane; k < N; k += 32) {
      const T r = W[j + order[k] * ldw];
      row2 = fma(r, r, row2);
      suffix += norm2[order[k]];
    }
    const bool noise = triangle_row_is_noise(group_sum(row2, 32), group_sum(suffix, 32));
    for (int k = lane; k < N; k += 32)
      X[k + j * ldx] = k >= j && !noise ? W[j + order[k] * ldw] : T(0);
  }
}

// Z (M x N, leading dimension ldz) <- Q Z, Q = H_0 H_1 ... H_{N - 1} from block_sorted_qr's
// factors of W. Z's columns are independent: two adjacent lanes take one through every reflector,
// the last first, with no barrier. Needs 2 N threads. Every thread of the block calls it after a
// sync; Z is visible to the block after the next.
template <class T>
__device__ void block_apply_q(const T* W, int ldw, int M, int N, const SortedQr<T>& qr, T* Z,
                              int ldz) {
  const int c = threadIdx.x >> 1, p = threadIdx.x & 1;
  const int rows = c < N ? M : 0;
  T* const z = Z + min(c, N - 1) * ldz;
  for (int k = N - 1; k >= 0; --k) {
    const T tau = qr.taus[k];  // the block's: the branch is uniform
    if (tau != 0) reflect_pair_column(W + qr.order[k] * ldw, tau, qr.scales[k], k, rows, p, z);
  }
}

}  // namespace rooflab::jacobi
