#pragma once
// The arithmetic of the one-sided Jacobi SVD that does not depend on threads: the rotation, the
// parallel ordering and the shared-memory layout. Host and device code (CPU tests check it
// without a GPU); the kernels are in jacobi.cuh.
#include <cfloat>
#include <cmath>

#if defined(__CUDACC__)
#define ROOFLAB_JACOBI_HOST_DEVICE __host__ __device__
#else
#define ROOFLAB_JACOBI_HOST_DEVICE
#endif

namespace rooflab::jacobi {

template <class T>
struct Precision;
template <>
struct Precision<float> {
  static constexpr float epsilon = FLT_EPSILON;
  // A column whose squared norm is below this (after scaling) is zero for every purpose: its norm
  // is under sqrt(FLT_MIN / eps) ~ 3e-16, far below eps * ||A|| >= eps / 2.
  static constexpr float negligible = FLT_MIN / FLT_EPSILON;
  // Beyond it, 1 + zeta^2 rounds to zeta^2 (2^12 > 1 / sqrt(eps) = 2^11.5).
  static constexpr float large_zeta = 4096.0f;
};
template <>
struct Precision<double> {
  static constexpr double epsilon = DBL_EPSILON;
  static constexpr double negligible = DBL_MIN / DBL_EPSILON;
  static constexpr double large_zeta = 134217728.0;  // 2^27 > 2^26
};

template <class T>
struct Rotation {
  T c = 1, s = 0, t = 0;  // cosine, sine, tangent
};

// For columns with squared norms alpha, beta and dot product gamma: returns true and the rotation
//     p <- c p - s q,   q <- s p + c q
// that makes them orthogonal when they are not orthogonal to tol; `cosine` gets the scaled
// off-diagonal |gamma| / sqrt(alpha beta) (0 for a negligible column, which is never rotated).
// t = s / c is Rutishauser's smaller root of t^2 + 2 zeta t - 1 = 0, zeta = (beta - alpha) /
// (2 gamma), computed without overflow: after scaling, |zeta| <= sqrt(max(alpha, beta) /
// min(alpha, beta)) / (2 tol) is finite, and beyond large_zeta t = 1 / (2 |zeta|) exactly.
// The larger column grows: alpha' = alpha - t gamma, beta' = beta + t gamma.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool jacobi_rotation(T alpha, T beta, T gamma, T tol,
                                                       Rotation<T>& r, T& cosine) {
  using std::copysign;
  using std::fabs;
  using std::sqrt;
  if (!(alpha >= Precision<T>::negligible) || !(beta >= Precision<T>::negligible)) {
    cosine = 0;
    return false;
  }
  cosine = fabs(gamma) / (sqrt(alpha) * sqrt(beta));
  if (!(cosine > tol)) return false;
  const T zeta = (beta - alpha) / (2 * gamma);
  const T magnitude = fabs(zeta);
  const T t = magnitude < Precision<T>::large_zeta ? 1 / (magnitude + sqrt(1 + magnitude * magnitude))
                                                   : T(0.5) / magnitude;
  r.t = copysign(t, zeta);
#if defined(__CUDA_ARCH__)
  r.c = rsqrt(1 + r.t * r.t);
#else
  r.c = 1 / sqrt(1 + r.t * r.t);
#endif
  r.s = r.t * r.c;
  return true;
}

// The odd-even ring over n_pad (even) positions: round r pairs positions (i, i + 1) for
// i = 2k + r % 2, and each pair swaps its two positions after its rotation. Even rounds have
// n_pad / 2 pairs, odd rounds one fewer; after n_pad rounds every two columns have met exactly
// once (the ring is reversed).
ROOFLAB_JACOBI_HOST_DEVICE inline int pairs_in_round(int round, int n_pad) {
  return (round & 1) ? n_pad / 2 - 1 : n_pad / 2;
}
ROOFLAB_JACOBI_HOST_DEVICE inline int first_position(int round, int pair) {
  return 2 * pair + (round & 1);
}

ROOFLAB_JACOBI_HOST_DEVICE inline int round_up(int value, int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Leading dimension of a working matrix: a multiple of 32 elements for columns of 32 rows or more
// (the row walk then spreads a warp over all shared-memory banks, and global columns start on
// 128-byte lines); tiny columns are packed.
ROOFLAB_JACOBI_HOST_DEVICE inline int shared_leading_dimension(int rows) {
  return rows < 32 ? rows : round_up(rows, 32);
}

// Where one matrix's working set lies in shared memory: W (M x N), V (N x N, when the vectors are
// wanted), tracked norms and Gram-Schmidt coefficients (n_pad each), positions (n_pad ints), and
// for a block team 32 words of reduction scratch. Offsets are 16-byte aligned.
struct OnChipLayout {
  int M = 0, N = 0, n_pad = 0;
  int ldw = 0, ldv = 0;
  int w_offset = 0, v_offset = 0, norms_offset = 0, coefficients_offset = 0, pos_offset = 0,
      team_offset = 0;
  int bytes = 0;  // per matrix (a warp's slice, or a block's whole allocation); 2^30 if enormous
};

ROOFLAB_JACOBI_HOST_DEVICE inline OnChipLayout on_chip_layout(int m, int n, int element_bytes,
                                                              bool uv, bool block_team) {
  constexpr long long enormous = 1ll << 30;
  OnChipLayout L;
  L.M = m > n ? m : n;
  L.N = m > n ? n : m;
  L.n_pad = L.N + (L.N & 1);
  L.ldw = shared_leading_dimension(L.M);
  L.ldv = uv ? shared_leading_dimension(L.N) : 0;
  long long offset = 0;
  const auto take = [&offset](long long bytes) {
    const long long at = offset;
    offset += (bytes + 15) / 16 * 16;
    return int(at < enormous ? at : enormous);
  };
  L.w_offset = take((long long)L.ldw * L.N * element_bytes);
  L.v_offset = take((long long)L.ldv * L.N * element_bytes);
  L.norms_offset = take((long long)L.n_pad * element_bytes);
  L.coefficients_offset = take((long long)L.n_pad * element_bytes);
  L.pos_offset = take((long long)L.n_pad * 4);
  L.team_offset = take(block_team ? 32 * 8 : 0);
  L.bytes = int(offset < enormous ? offset : enormous);
  return L;
}

// Lanes per column pair for a team of `threads` (a power of two): one group per pair of the
// largest round, each group a power of two of at most 32 lanes.
ROOFLAB_JACOBI_HOST_DEVICE inline int lanes_per_pair(int threads, int n_pad) {
  int pairs = 1;
  while (pairs < n_pad / 2) pairs *= 2;
  int lanes = threads / pairs;
  lanes = lanes < 1 ? 1 : lanes;
  return lanes > 32 ? 32 : lanes;
}

}  // namespace rooflab::jacobi
