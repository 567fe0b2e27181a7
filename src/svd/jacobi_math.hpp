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
};
template <>
struct Precision<double> {
  static constexpr double epsilon = DBL_EPSILON;
  static constexpr double negligible = DBL_MIN / DBL_EPSILON;
};

// The power of two that brings the larger of two non-negative numbers, f 2^e with f in [1/2, 1),
// into [1/2, 1): 2^-e. On the device it is read off the exponent bits, the larger found by an
// integer max of the words that hold them (non-negative numbers order as their bit patterns do):
// three integer instructions on the path to every rotation, where a floating-point compare and
// select came first, and frexp and ldexp cost tens.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline T binade_scale(T x, T y) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 8) {
    const int high = max(__double2hiint(x), __double2hiint(y));
    return __hiloint2double((2045 - ((high >> 20) & 0x7ff)) << 20, 0);
  } else {
    const int bits = max(__float_as_int(x), __float_as_int(y));
    return __int_as_float((253 - ((bits >> 23) & 0xff)) << 23);
  }
#else
  int exponent = 0;
  std::frexp(x > y ? x : y, &exponent);
  return std::ldexp(T(1), -exponent);
#endif
}

#if defined(__CUDACC__)
// 1 / sqrt(x) for a positive normal x: the library's rsqrt without its test for zero, subnormal,
// infinite and negative arguments, whose branch sat on the rotation's path twice a round (on the
// H200 a dependent chain of rsqrt and an add took 75 cycles a step, with this instead 58). The
// same steps in the same order (the hardware's approximation from x's upper word, then one cubic
// correction), so the result is bit for bit the library's; the rotations below only pass it normal
// numbers (SvdOptions require tol >= epsilon / 2) or values whose result they drop. float keeps the
// library's rsqrt.
template <class T>
__device__ __forceinline__ T rsqrt_of_normal(T x) {
  if constexpr (sizeof(T) == 8) {
    double y;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    const double e = fma(-(y * y), x, 1.0);    // 1 - x y^2: twice the approximation's error
    return fma(fma(e, 0.375, 0.5), y * e, y);  // y (1 + e / 2 + 3 e^2 / 8)
  } else {
    return rsqrt(x);
  }
}
#endif

template <class T>
struct Rotation {
  T c = 1, s = 0, t = 0;  // cosine, sine, tangent
};

// A pair of columns' squared norms and dot product scaled by the power of two that brings
// max(alpha, beta) into [1/2, 1) (exact), so that tau^2 and gamma^2 can neither overflow nor, while
// the pair is worth rotating, underflow, and a b stays a normal number above negligible / 2.
template <class T>
struct ScaledPair {
  bool negligible;  // a column below Precision<T>::negligible: never rotated
  T a, b, g;
};

template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline ScaledPair<T> scaled_pair(T alpha, T beta, T gamma) {
  const bool negligible =
      !(alpha >= Precision<T>::negligible) || !(beta >= Precision<T>::negligible);
  const T scale = binade_scale(alpha, beta);
  return {negligible, alpha * scale, beta * scale, gamma * scale};
}

// The rotation of a scaled pair, or the identity when `rotate` is false.
// t = s / c is Rutishauser's smaller root of t^2 + 2 zeta t - 1 = 0, zeta = (beta - alpha) /
// (2 gamma), written through the double angle instead: with tau = beta - alpha and
// y = 1 / sqrt(tau^2 + 4 gamma^2), cos 2 theta = |tau| y and sin 2 theta = 2 |gamma| y, so
//     c^2 = (1 + |tau| y) / 2 in [1/2, 1],   k = 1 / sqrt(c^2) = 1 / c,
//     c = c^2 k,   s = sign(zeta) |gamma| y k,   t = s k,
// without a cancellation (s never comes from 1 - c^2). Two reciprocal square roots, one after the
// other, lie on the path to (c, s, t) (the zeta form chains two divisions, two square roots and a
// reciprocal square root): this latency separates every round of the ring. Everything is computed
// before anything is selected, and whatever the formulas gave for a pair left alone (a NaN at
// tau = gamma = 0 too) is dropped.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline void set_rotation(const ScaledPair<T>& pair, bool rotate,
                                                    Rotation<T>& r) {
  using std::copysign;
  using std::fabs;
  using std::sqrt;
  const T tau = pair.b - pair.a, g = pair.g;
  const T sign = tau < 0 ? -copysign(T(1), g) : copysign(T(1), g);  // sign(zeta); tau = 0: +
  const T signed_g = sign * fabs(g);  // off the path: s = signed_g y k is one product after k
#if defined(__CUDA_ARCH__)
  // A negligible pair (a lane of the ring without a pair sees zeros) takes 1: zero would send
  // float's rsqrt down its slow path, which in a warp costs every lane. Its rotation is dropped
  // below. A rotated pair's tau^2 + 4 gamma^2 is at least min(1/16, tol^2 / 2): normal. The sum is
  // the fma the compiler chose, written out so that its rounding stays put as the code changes.
  const T y = rsqrt_of_normal(pair.negligible ? T(1) : fma(tau, tau, 4 * g * g));
  const T cosine_squared = T(0.5) + T(0.5) * (fabs(tau) * y);
  const T k = rsqrt_of_normal(cosine_squared);
#else
  const T y = 1 / sqrt(tau * tau + 4 * g * g);
  const T cosine_squared = T(0.5) + T(0.5) * (fabs(tau) * y);
  const T k = 1 / sqrt(cosine_squared);
#endif
  r.c = rotate ? cosine_squared * k : T(1);
  r.s = rotate ? signed_g * y * k : T(0);
  r.t = rotate ? r.s * k : T(0);
}

// For columns with squared norms alpha, beta and dot product gamma: returns true and the rotation
//     p <- c p - s q,   q <- s p + c q
// that makes them orthogonal when they are not orthogonal to tol (false and the identity when they
// are, or when a column is negligible); `cosine` gets the scaled
// off-diagonal |gamma| / sqrt(alpha beta) (0 for a negligible column, which is never rotated).
// The larger column grows: alpha' = alpha - t gamma, beta' = beta + t gamma.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool jacobi_rotation(T alpha, T beta, T gamma, T tol,
                                                       Rotation<T>& r, T& cosine) {
  using std::fabs;
  using std::sqrt;
  const ScaledPair<T> pair = scaled_pair(alpha, beta, gamma);
#if defined(__CUDA_ARCH__)
  // A negligible pair (the padding column's) takes 1, as in set_rotation; otherwise a b is normal:
  // one is in [1/2, 1), the other at least negligible / ||W||_F^2 (W's entries are below 1).
  const T scaled_cosine = fabs(pair.g) * rsqrt_of_normal(pair.negligible ? T(1) : pair.a * pair.b);
#else
  const T scaled_cosine = fabs(pair.g) / sqrt(pair.a * pair.b);
#endif
  cosine = pair.negligible ? T(0) : scaled_cosine;
  const bool rotate = !pair.negligible && cosine > tol;
  set_rotation(pair, rotate, r);
  return rotate;
}

// The same rotation where the cosine is not wanted (the Gram solve's rounds): the test
// cosine > tol as g^2 > tol^2 a b, a reciprocal square root fewer. Near the extremes of the
// exponent range the products lose digits (tol^2 a b may underflow to 0) and a pair at cosine ~ tol
// may be rotated where the other form leaves it: a rotation by an angle below tol, harmless.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool jacobi_rotation(T alpha, T beta, T gamma, T tol,
                                                       Rotation<T>& r) {
  const ScaledPair<T> pair = scaled_pair(alpha, beta, gamma);
  const bool rotate = !pair.negligible && pair.g * pair.g > tol * tol * (pair.a * pair.b);
  set_rotation(pair, rotate, r);
  return rotate;
}

// Rounding noise. Every rotation leaves in each of its two outputs an error of about epsilon times
// the norm of what went into it, and those errors add up over the rotations: a column carries, with
// its content, an error scale E (eps^2 E bounds the squared norm of its accumulated error), which
// follows each rotation as the squares of the errors do:
//     E_p <- c^2 E_p + s^2 E_q,   E_q <- s^2 E_p + c^2 E_q
// (for a product W Q of many columns, E_j <- sum_k E_k Q_kj^2). It starts as f^2 times the
// column's squared norm, f = max(32, N) for N columns: a sweep rotates each column N - 1 times, and
// errors that fall in line add up to (N - 1) eps times the inputs' norm. A column whose fresh
// squared norm falls to eps^2 E holds no more than that error: the cancellation of nearly
// dependent columns (a rank-deficient matrix, duplicated or proportional columns, a spectrum with
// values down to eps sigma_max) has left it. Such a column is set to zero, as LAPACK's dgejsv drops
// what its rank-revealing QR finds negligible: its sigma is 0 and its left vector is completed to
// an orthonormal set. Kept, it points in a direction the rounding chose, and the sweeps go on
// rotating it: a rank-one 100 x 100 matrix ran 30 sweeps without converging, and its left vectors
// were not orthogonal. A column that shrinks for real keeps its E: in a column-graded matrix
// A = B D the small columns' E stays at their own size (the rotations that touch them are by small
// angles), and a column is cleared only where its content is under f eps of that, about where
// kappa(B) passes 1 / (f eps), beyond the condition for which relative accuracy is promised
// (100 n eps kappa(B) of it is then more than 1). The rotations keep sum_j E_j (c^2 + s^2 = 1), so
// the columns cleared change A by at most f eps ||A||_F in all, inside LAPACK's residual test.
// In the sequential model of the method (tests/cpu/jacobi_model_test.cpp) an integer rank-one 100 x
// 100 matrix converges in 2 sweeps with every sigma but the first zero (17 sweeps without), and in
// a CPU experiment a rank-5 one took 6 sweeps (14 without). With f = 32 at every size, dlatms mode
// 1 at condition 1/eps (sigma = 1, eps, ..., eps) kept at 256 x 256 a third of its columns of size
// eps, which lie just above 32 eps of their starting norm, and the model took 10 sweeps to make
// them orthogonal (100 x 100: 7); with f = N it clears all but a few, and takes 6 (4). Of the other
// classes of the tests at 25 and 100 columns only mode 2 at 1/eps changed its sweeps in the model
// (3 to 2 at 100).
template <class T>
struct RoundingNoise {
  static constexpr T least_factor = 32;
  static constexpr T threshold = Precision<T>::epsilon * Precision<T>::epsilon;
};

// The error scale E that a column of squared norm `norm2` starts with, among `columns` columns.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline T initial_error_scale(T norm2, int columns) {
  const T factor =
      T(columns) > RoundingNoise<T>::least_factor ? T(columns) : RoundingNoise<T>::least_factor;
  return (factor * factor) * norm2;
}

// Whether a column of fresh squared norm `norm2` and error scale `error_scale` is rounding noise
// (an exact zero is not: nothing is left to clear).
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool is_rounding_noise(T norm2, T error_scale) {
  return norm2 > 0 && norm2 <= RoundingNoise<T>::threshold * error_scale;
}

// Whether row j of a sorted QR's R (W P = Q R), of squared norm `row2`, is rounding noise against
// `suffix_norm2` = sum_{k >= j} |w_order[k]|^2, W's sorted columns from j on: is_rounding_noise
// with the least factor of RoundingNoise (why not the sweeps' factor: qr_preconditioning.cu). Such
// a row is cleared, a zero column of R^T.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool triangle_row_is_noise(T row2, T suffix_norm2) {
  constexpr T least_factor = RoundingNoise<T>::least_factor;
  return is_rounding_noise(row2, least_factor * least_factor * suffix_norm2);
}

// The error scales of a rotated pair's two outputs (p <- c p - s q, q <- s p + c q).
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline void rotate_error_scales(const Rotation<T>& r, T& scale_p,
                                                           T& scale_q) {
  const T c2 = r.c * r.c, s2 = r.s * r.s, p = scale_p, q = scale_q;
  scale_p = c2 * p + s2 * q;
  scale_q = s2 * p + c2 * q;
}

// The completion of W's columns of sigma 0 (the left vectors of a rank-deficient matrix) to an
// orthonormal set, by one team, in one of two forms. With r kept columns (sigma > 0, orthonormal),
// z to complete, M rows and N = r + z columns:
//   - reflections: the Householder QR of the kept columns, H_1 ... H_r, then the missing columns as
//     H_1 ... H_r e_j for j = r .. N - 1, each orthogonal to the kept columns' span however close
//     to orthonormal those are. About M (r^2 + 2 r z + z) multiply-adds and 4 barriers per kept
//     column; the z columns are formed side by side, without a barrier.
//   - Gram-Schmidt, a column at a time: the least represented standard basis vector, orthogonalized
//     twice against every column done. About 5 M N multiply-adds and 9 barriers per missing column.
// Reflections take r <= 2 z: there both counts favour them (at r = 2 z, 8 M z^2 + M z against
// 15 M z^2 multiply-adds and 8 z against 9 z barriers), and beyond, Gram-Schmidt's cost shrinks
// with z. A zero matrix (r = 0) only writes the unit vectors.
ROOFLAB_JACOBI_HOST_DEVICE inline bool completion_by_reflections(int kept, int zeros) {
  return kept <= 2 * zeros;
}

// Where the completion puts column c of W: the columns of sigma > 0 first (slots 0 .. kept - 1),
// then the others (kept .. N - 1), each in column order.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline int completion_slot(const T* sigma, int kept, int c) {
  int kept_before = 0;
  for (int other = 0; other < c; ++other) kept_before += sigma[other] > 0;
  return sigma[c] > 0 ? kept_before : kept + (c - kept_before);
}

// The reflections' multiply-adds (the count above).
ROOFLAB_JACOBI_HOST_DEVICE inline double reflection_completion_work(int M, int N, int kept) {
  const double r = kept, z = N - kept;
  return M * (r * r + 2 * r * z + z);
}

// A Householder reflector H = I - tau v v^T that maps [alpha; x] to [beta; 0], v's first entry 1
// (LAPACK's dlarfg; the block QR's, and the completion's in jacobi.cuh), from alpha and ||x||^2.
// The caller multiplies x by `inverse` = 1 / (alpha - beta) for v's other entries. tau = (beta -
// alpha) / beta and `inverse` come from one reciprocal, 1 / (beta (alpha - beta)), and beta from
// one square root: a division and a hypot fewer on the QR's path from one step to the next
// (block_qr.cu's kernel took 10-13% less at 100 to 160 columns on an H100). The caller keeps beta^2
// = alpha^2 + ||x||^2 between the smallest normal number and max / 4 (block_qr.cu scales alpha and
// x by a power of two first where it would not be; dlarfg rescales on the small side only), so that
// beta (alpha - beta), between beta^2 and 2 beta^2, neither over- nor underflows. A zero x leaves H
// = I (tau 0).
template <class T>
struct Reflector {
  T beta, tau, inverse;
};
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline Reflector<T> householder_reflector(T alpha, T x_norm_squared) {
  using std::copysign;
  using std::fma;
  using std::sqrt;
  if (x_norm_squared == 0) return {alpha, T(0), T(1)};
  const T beta = -copysign(sqrt(fma(alpha, alpha, x_norm_squared)), alpha);
  const T divisor = alpha - beta;  // |alpha| + |beta|: no cancellation
  const T reciprocal = T(1) / (beta * divisor);
  // tau = 1 - alpha / beta lies in [1, 2]: at least 1 here too, alpha and 1 / beta differing in
  // sign, while the rounding of 1 / beta may take it an ulp past 2.
  const T tau = fma(-alpha, divisor * reciprocal, T(1));
  return {beta, tau > 2 ? T(2) : tau, beta * reciprocal};
}

// The scaled off-diagonal |gamma| / sqrt(alpha beta) of two columns with squared norms alpha, beta
// and dot product gamma, as the rotation's test has it: 0 when a column is negligible (never
// rotated). The all-pairs tests take their largest over every pair.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline T scaled_off_diagonal(T alpha, T beta, T gamma) {
  using std::fabs;
  using std::sqrt;
  if (!(alpha >= Precision<T>::negligible) || !(beta >= Precision<T>::negligible)) return T(0);
#if defined(__CUDA_ARCH__)
  return fabs(gamma) * rsqrt_of_normal(alpha) * rsqrt_of_normal(beta);  // not negligible: normal
#else
  return fabs(gamma) / sqrt(alpha) / sqrt(beta);
#endif
}

// A sum carried with its rounding error (Ogita, Rump and Oishi's Sum2 and Dot2): every addition
// by TwoSum and every product by TwoProduct (the FMA gives a * b - fl(a * b) exactly), the errors
// added up on the side. The result is as accurate as if the sum had been formed in twice the
// precision and rounded once: the all-pairs test forms the products of pairs just above tol again
// this way, where the rounding of an ordinary sum over M rows is itself about tol. On the device
// the operations are the _rn intrinsics, which the compiler never fuses into an FMA (a fused
// TwoSum is no longer exact).
template <class T>
struct CompensatedSum {
  T sum = 0, error = 0;
  ROOFLAB_JACOBI_HOST_DEVICE void add(T x) {
    const T total = plus(sum, x);
    const T x_part = minus(total, sum);
    error = plus(error, plus(minus(sum, minus(total, x_part)), minus(x, x_part)));
    sum = total;
  }
  ROOFLAB_JACOBI_HOST_DEVICE void add_product(T a, T b) {
    using std::fma;
    const T product = times(a, b);
    add(product);
    error = plus(error, fma(a, b, -product));
  }
  ROOFLAB_JACOBI_HOST_DEVICE void add(const CompensatedSum& other) {
    add(other.sum);
    error = plus(error, other.error);
  }
  ROOFLAB_JACOBI_HOST_DEVICE T value() const { return plus(sum, error); }

 private:
#if defined(__CUDA_ARCH__)
  __device__ static float plus(float a, float b) { return __fadd_rn(a, b); }
  __device__ static double plus(double a, double b) { return __dadd_rn(a, b); }
  __device__ static float minus(float a, float b) { return __fsub_rn(a, b); }
  __device__ static double minus(double a, double b) { return __dsub_rn(a, b); }
  __device__ static float times(float a, float b) { return __fmul_rn(a, b); }
  __device__ static double times(double a, double b) { return __dmul_rn(a, b); }
#else
  static T plus(T a, T b) { return a + b; }
  static T minus(T a, T b) { return a - b; }
  static T times(T a, T b) { return a * b; }
#endif
};

// The pair of groups (first <= second) that `index` names when the upper triangle of `groups`
// groups, diagonal included, is counted row by row: (0, 0), (0, 1), ..., (0, groups - 1), (1, 1),
// ...; indices 0 .. groups (groups + 1) / 2 - 1 give every such pair once. The all-pairs tests
// give a thread or a block a tile of the Gram matrix this way.
struct GroupPair {
  int first, second;
};
ROOFLAB_JACOBI_HOST_DEVICE inline GroupPair upper_triangle_pair(int index, int groups) {
  int first = 0;
  while (index >= groups - first) index -= groups - first++;
  return {first, first + index};
}

// The tiles of rows each slice of the Gram schedule's all-pairs test takes (gram.cu, GramTest), of
// `row_tiles`: all of them below `split_tiles`; from there as many slices as one wave of
// `wave_blocks` blocks holds over `pair_blocks` pairs of column groups, two tiles each at least,
// and fewer than 2^15 (a pair's arrivals count its slices in 16 bits).
inline int test_slice_tiles(int row_tiles, long long wave_blocks, long long pair_blocks,
                            int split_tiles) {
  if (row_tiles < split_tiles) return row_tiles;
  const long long most = row_tiles / 2 < (1 << 15) ? row_tiles / 2 : (1 << 15) - 1;
  long long slices = wave_blocks / pair_blocks;
  if (slices > most) slices = most;
  if (slices < 1) slices = 1;
  return int((row_tiles + slices - 1) / slices);
}

// The largest scaled off-diagonal a sweep may have met for one test of every pair of columns
// afterwards to be worth its cost. Jacobi converges quadratically, and in a model of the method on
// random matrices of 25 to 100 columns in double (tol ~ 1e-15) the sweep after which every pair
// was orthogonal had met between 1e-13 and 3e-5. The test costs a few percent of a sweep, and when
// it finds every pair orthogonal it stands for the last sweep, the one that would rotate nothing.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline T all_pairs_test_threshold(T tol) {
  using std::sqrt;
  return sqrt(sqrt(tol));
}

// The hand-over (hands_over, global_state.cuh): a matrix whose sweeps on the Gram schedule stall
// goes to the second try (QR preconditioning on the transposed triangle) without waiting for its
// sweeps to run out. They stall on spectra wider than 1 / sqrt(eps), whose smallest columns'
// squared norms lie under the rounding of the Gram products: the block solves resolve them only a
// little more each sweep. The state after each sweep of the first path (H100, double, seed 1;
// U's cosines after max_sweeps = 1, 2, ...; docs/svd.md, "The hand-over"): dlatms modes 3 and 5 at
// condition 1/eps, 256 to 2048 columns, had 93-98% of their pairs across blocks above tol after
// sweep 10 and their norms spread 7e9 to 3e10, and ran out of sweeps from 512 (the second try then
// took 10 to 12 more). After sweep 10 every other class measured had at most 64% of its pairs
// above tol (random, clustered, graded, duplicated columns, rank n/4, modes 1, 2 and 4 at 1/eps;
// float's modes at 1/eps 65-72%) or its norms spread under 6e6 (modes 3 and 5 at 1/sqrt(eps),
// 92-95% of pairs, 25 to 41 sweeps in all). Those shares were measured at a tol of sqrt(M) eps,
// twice today's default, at which a share above tol can only be smaller; the hand-over's tests
// passed at today's (H200, 52a2b61).
constexpr int hand_over_first_sweep = 10;
constexpr double hand_over_share_above_tol = 0.9;

// The Gram products' rounding floor. Formed with plain sums over columns of M rows, a Gram matrix
// is off by a few sqrt(M) eps relative to its columns' norms, and a block solve orthogonalizes its
// columns only that far: on clustered spectra (singular values equal to a few eps, which any
// rotation among them suits) a sweep's largest cosine settles at 1 to 1.7 sqrt(M) eps, 2 to 3.4
// times the default tol (sqrt(M) u), and passes under tol only by chance. Measured at a tol of
// sqrt(M) eps (H100, seed 1, the clustered class): 5.2-7.6e-15 at 512 (tol 5.0e-15) from sweep 11
// to 19, 0.75-1.16e-14 at 1024 (tol 7.1e-15) from sweep 11 to 25, 1.07-1.67e-14 at 2048 (tol
// 1.0e-14) from sweep 12 on, unconverged after both tries' 60 sweeps; float 1024, 4.3-6.2e-6 (tol
// 3.8e-6) from sweep 7 to 18 (docs/svd.md, "The Gram products' floor"). A sweep whose largest
// cosine is within gram_floor_factor sqrt(M) eps is at the floor; two such sweeps in a row end the
// iteration, converged: the columns are then as orthogonal as the Gram products can make them.
constexpr double gram_floor_factor = 16;
constexpr int gram_floor_sweeps = 2;
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline double gram_floor(int rows) {
  using std::sqrt;
  return gram_floor_factor * sqrt(double(rows)) * Precision<T>::epsilon;
}
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool at_the_gram_floor(double off, int rows) {
  return off <= gram_floor<T>(rows);
}

// Pairs of columns in different blocks of `block` columns, over n columns: the pairs the sweep's
// block pairs test once each.
ROOFLAB_JACOBI_HOST_DEVICE inline long long pairs_across_blocks(int n, int block) {
  const long long whole = n / block, rest = n % block;
  const long long within = whole * block * (block - 1) / 2 + rest * (rest - 1) / 2;
  return (long long)n * (n - 1) / 2 - within;
}

// The hand-over's two tests: sweep `sweeps` found `above_tol` of the `pairs` pairs of columns in
// different blocks above tol, late in the iteration; and the columns' squared norms (tracked), from
// `least` to `largest`, span more than 1 / eps.
ROOFLAB_JACOBI_HOST_DEVICE inline bool still_rotating_late(int sweeps, long long above_tol,
                                                           long long pairs) {
  return sweeps >= hand_over_first_sweep && double(above_tol) >= hand_over_share_above_tol * pairs;
}
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool wider_than_the_gram_resolves(T largest, T least) {
  return least < largest * Precision<T>::epsilon;
}

// The early hand-over: a single double matrix whose spectrum the sweeps unfold slowly goes to the
// second try after sweep 4 (a batch's matrices that go there are solved again one at a time, so
// batches keep to the hand-over at sweep 10). On geometric and log-uniform spectra (dlatms modes 3
// and 5) the first path's sweeps widen the columns' squared norms a few binades a sweep while
// nearly every pair stays above tol, and converge only once the whole spectrum is spread out: 17 to
// 26 sweeps from 100 to 256 columns, 41 at 1024 (30, then the second try's 11), where the
// transposed triangle takes 8 to 12 and dgesvj 13 to 24. The columns after each sweep (H100,
// double, the cluster's fresh squared norms, binades by ilogb;
// docs/results/h100-svd-sweep-trace.txt at 100 and 256 columns, h100-svd-unfolding-trace.txt at 136
// to 240 over three seeds): after sweep 4 modes 3 and 5, at 1/sqrt(eps) and 1/eps, had every pair
// above tol and their squared norms spread over 29 to 48 binades, 1.71 to 2.05 times their spread
// after sweep 1. Every other class had pairs below tol (graded), a spread under 24 binades (random,
// mode 4, rank n - 1, clustered, zero columns), a spread that no longer widened (mode 1), or one
// that grew 3.4 to 4.8 times from sweep 1 (rank n / 4, duplicated columns, zero rows): a
// rank-deficient matrix's null columns shrink by a factor each sweep, so their spread multiplies
// where a slowly unfolding one adds. The bounds below lie between the two. A bound on sweep 4's
// widening alone (8 binades) let zero rows through at 160 and 200 columns, which the second try
// made 24% to 37% slower. Measured at a tol of sqrt(M) eps, twice today's default; the early
// hand-over's tests passed at today's (H200, 52a2b61).
//
// The Gram schedule's test looks at double matrices of more than 64 columns (square ones of at most
// 64 go to the register ring, whose test is ring_spectrum_unfolding; measured from 80). With Q
// formed beside the sweeps (qr_preconditioning.cu) it took modes 3 and 5 at 136 to 200 columns to
// 13 or 14 sweeps in all against 19 to 26 on the first path, as fast (at 1/sqrt(eps), 136 and 160
// columns) to 34% faster (at 1/eps) (docs/results/h100-svd-hand-over-from-129.txt, run 4). From 65
// to 128 columns it paid only once the triangle's QR ran in one block (block_qr.cu) instead of
// cuSOLVER's geqrf (0.50 ms at 100 x 100): modes 3 and 5 at 80, 100 and 128 columns took 12 or 13
// sweeps in all against 17 to 23, within dgesvj + 2; at 1/eps 25% to 47% faster, at 1/sqrt(eps)
// from 14% faster to 8% slower (mode 5 at 128), random matrices within 3%
// (docs/results/h100-svd-block-qr.txt, run 4). With geqrf mode 3 at 100 had taken 1.77-1.88 ms
// against 1.46 (hand-over-from-129.txt, run 1). In float it cost more than the sweeps it saved
// (mode 3 at 1/eps, 256 x 256: 12 sweeps in 4.09-4.15 ms against 14 in 3.47 ms).
//
// An early hand-over's test (a type, whose constants device code reads): the fewest columns of the
// single double matrices it looks at (unfolding_applies), the sweep whose end it looks at, and the
// bounds on the columns' spread then: at least least_binades, and more than, at least least_growth
// times and less than most_growth times their spread after sweep unfolding_first_look. The Gram
// schedule's also wants nearly every pair above tol then (unfolding_looks_at).
struct GramUnfolding {
  static constexpr int least_columns = 65;
  static constexpr int sweep = 4;
  static constexpr int least_binades = 24;
  static constexpr double least_growth = 1;
  static constexpr double most_growth = 2.5;
};
// The sweep whose spread the test's is compared with: the first, after which the cluster kernel
// looks at its columns anyway (for rounding noise).
constexpr int unfolding_first_look = 1;
constexpr double unfolding_share_above_tol = 0.99;

// The binades from the least positive squared norm to the largest (0 where none is positive).
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline int binades_between(T largest, T least_positive) {
  using std::ilogb;
  return least_positive > 0 && least_positive <= largest ? ilogb(largest) - ilogb(least_positive)
                                                         : 0;
}

// The register ring's early hand-over (ring_sweeps, register_ring.cu): a single double matrix of
// 56 to 64 columns goes to the second try after sweep 2. In the sequential model of the ring
// (docs/results/cpu-svd-ring-unfolding-model.txt, every class at 16 to 64 columns, seeds 1 to 3)
// modes 3 and 5 took 11 to 30 sweeps where dgesvj took 7 to 17, and 8 to 12 in all when handed over
// after sweep 2 (10 to 12 after sweep 4, 3 more than dgesvj at 25 columns). After sweep 2 none of
// their columns was zero, and their squared norms spread over 21 to 53 binades, 1.18 to 1.8 times
// their spread after sweep 1 (at most 1.67 from 48 columns). Of the other classes: random, rank
// n - 1 and mode 4 spread over at most 11 binades; mode 1 over 52 or 53, not wider than after sweep
// 1; graded columns over 200 and a binade or two more (1.01 times); rank n / 4 over 38 to 87, 2.1
// to 3.1 times sweep 1's; zero rows over 18 to 30, 1.5 to 2.7 times (1.91 to 2.2 from 48 columns);
// rank 2 and duplicated columns had zero columns (cleared as rounding noise). The zero columns
// stand in for the Gram schedule's share of pairs above tol, which the ring would count in every
// round (that count made random matrices 1% to 3% slower).
// In the library call (H100, docs/results/h100-svd-ring-hand-over.txt, the ring alone against the
// hand-over) the second try's fixed cost (its QR, its launches, the wait for the first try's
// status: 150 to 250 us) was more than the sweeps it saved below 48 columns: modes 3 and 5 at
// 1/sqrt(eps) and 1/eps took 1.1x to 1.7x the ring's time at 32 columns, 0.9x to 1.2x at 40, 0.8x
// to 1.1x at 48 and 0.6x to 0.9x at 64; graded matrices, which the ring takes in 8 or 9 sweeps,
// 1.3x to 2.8x handed over. From 56 columns (0.65x to 0.85x at 56, run 7) it leaves mode 5 at 48
// (1.0x to 1.11x handed over) and random matrices of 50 columns (a target size) in the ring, where
// the test would cost 7 to 10 us (random 56 and 64 x 64: 2.1% and 2.5%, run 8).
struct RingUnfolding {
  static constexpr int least_columns = 56;
  static constexpr int sweep = 2;
  static constexpr int least_binades = 20;
  static constexpr double least_growth = 1.1;
  static constexpr double most_growth = 1.8;
};

// The register ring's restart in its own kernel (register_ring.cu): a double matrix of
// least_columns to RingUnfolding::least_columns - 1 columns, single or in a batch, that the test
// after sweep RingUnfolding::sweep finds unfolding is loaded again and solved on its transposed
// triangle by the same block, without the second try's launches. On an H200 modes 3 and 5 took 8
// or 9 sweeps in all at 32 to 48 columns where the ring alone took 16 to 24 (dgesvj 10 to 16), in
// 0.63x to 1.0x the time (1.0x: mode 5 at 1/sqrt(eps), 32 columns); at 16 and 25 columns the
// in-kernel QR and Q (53,000 and 33,000 cycles at 25 x 25) cost as much as the sweeps saved (mode 3
// at 16: 0.76x as fast), and from 56 the second try (block_qr.cu and cuBLAS) was faster than them
// (mode 3 at 64: 610 against 723 us) (docs/results/h200-svd-ring-restart.txt). The kernel that
// looks took random matrices of 32 to 48 columns 0.6% to 4.7% longer (4.7% at 32); it is not used
// below 32.
struct RingRestart {
  static constexpr int least_columns = 32;
};

// Whether the register ring's kernel restarts a matrix of `columns` columns of T on its transposed
// triangle (RingRestart), where that kernel's shared memory fits.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE constexpr bool ring_restarts(int columns) {
  return sizeof(T) == sizeof(double) && columns >= RingRestart::least_columns &&
         columns < RingUnfolding::least_columns;
}

// Whether an early hand-over's test looks at a single matrix of `columns` columns of T.
template <class Test, class T>
ROOFLAB_JACOBI_HOST_DEVICE constexpr bool unfolding_applies(int columns) {
  return sizeof(T) == sizeof(double) && columns >= Test::least_columns;
}

// Whether a sweep's end looks at the columns for an early hand-over's test: the test's sweep,
// with nearly every pair above tol.
template <class Test>
ROOFLAB_JACOBI_HOST_DEVICE inline bool unfolding_looks_at(int sweeps, long long above_tol,
                                                          long long pairs) {
  return sweeps == Test::sweep && double(above_tol) >= unfolding_share_above_tol * double(pairs);
}

// An early hand-over's test where unfolding_looks_at held: the columns spread over `binades`,
// `binades_first` after sweep unfolding_first_look.
template <class Test>
ROOFLAB_JACOBI_HOST_DEVICE inline bool spectrum_unfolding(int binades, int binades_first) {
  return binades >= Test::least_binades && binades > binades_first &&
         double(binades) >= Test::least_growth * binades_first &&
         double(binades) < Test::most_growth * binades_first;
}

// The register ring's test after sweep RingUnfolding::sweep: no zero column (cleared as rounding
// noise, or zero from the start), and the columns' spread as spectrum_unfolding takes it.
ROOFLAB_JACOBI_HOST_DEVICE inline bool ring_spectrum_unfolding(int binades, int binades_first,
                                                               bool zero_column) {
  return !zero_column && spectrum_unfolding<RingUnfolding>(binades, binades_first);
}

// The order of a sort by decreasing key, ties by index: whether the entry (key, index) comes
// before (mine, my_index). An entry's rank is the count of entries ahead of it.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline bool ahead_when_descending(T key, int index, T mine,
                                                             int my_index) {
  return key > mine || (key == mine && index < my_index);
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

// Where a sweep's sort puts its columns on the odd-even ring, by rank (decreasing norm, padding
// last). Sorted (de Rijk): rank r at position r. Zigzag: ranks 0 and 1 at positions 0 and 1, then
// n_pad - 1, 2, n_pad - 2, 3, ... at positions 2, 3, 4, 5, ...: in the rounds every column then
// meets the others in increasing rank order but for one wrap (n_pad - 2 inversions in all, against
// n_pad (n_pad - 2) / 2 when sorted), nearly the order of dgesvj's row-cyclic sweeps over sorted
// columns. No placement has fewer inversions (all tried at n_pad = 4, 6 and 8).
enum class Placement { sorted, zigzag };

ROOFLAB_JACOBI_HOST_DEVICE inline int ring_position(Placement placement, int rank, int n_pad) {
  if (placement == Placement::sorted || rank < 2) return rank;
  return rank <= n_pad / 2 ? 2 * rank - 1 : 2 * (n_pad - rank);
}

// Graded columns, A = B D with D spanning many binades, keep their order of size through the
// sweeps, and a column's largest rotations are with the columns nearest its size: met in rank order
// (zigzag) they converge as in dgesvj, met sorted they take 3 or 4 sweeps more. In the sequential
// model of the ring (docs/results/cpu-svd-ring-placement-model.txt; double, 16 to 64 columns, seeds
// 1 to 3) zigzag took the graded class (D from 1 to 1e-30) to 4 to 6 sweeps against sorted's 7 to 9
// and dgesvj's 3 to 5, and the graded versions of ten other classes (random, clustered, modes 1, 3,
// 4 and 5, ranks n/4 and n - 1, duplicated columns, zero rows) to within dgesvj + 2 on 79 of 80
// matrices against 36 sorted; on the second try's R^T, whose columns spread as the singular values
// do, modes 3 and 5 at 48 to 100 columns took 7 to 9 sweeps against 9 to 11 sorted (never more, 16
// to 100 columns, seeds 1 and 2). On ungraded matrices zigzag costs clustered spectra 1 to 4
// sweeps, so it is taken only where the columns as loaded spread over at least graded_least_binades
// in squared norm. The bench's classes spread over at most 21 binades (rank one, where a column's
// entry of y is small) but the graded one, over 79 (float) to 200 (double), at 16 to 256 columns,
// seeds 1 to 3; in the model any bound from 15 to 60 picked the graded class alone, 10 mode 1 at
// both conditions and mode 5 at 1/eps too.
constexpr int graded_least_binades = 30;

// The placement of columns whose squared norms as loaded spread over `binades` (binades_between).
ROOFLAB_JACOBI_HOST_DEVICE inline Placement placement_for_spread(int binades) {
  return binades >= graded_least_binades ? Placement::zigzag : Placement::sorted;
}

// The placement of columns with these squared norms as loaded.
template <class T>
ROOFLAB_JACOBI_HOST_DEVICE inline Placement placement_as_loaded(const T* norms, int N) {
  T largest = 0;
  for (int c = 0; c < N; ++c) largest = norms[c] > largest ? norms[c] : largest;
  T least_positive = largest;
  for (int c = 0; c < N; ++c)
    if (norms[c] > 0 && norms[c] < least_positive) least_positive = norms[c];
  return placement_for_spread(binades_between(largest, least_positive));
}

// The circle method (round-robin tournament) for an even number n of players: players 0..n-2 sit
// on a circle and n-1 in the middle; in round r (0 <= r < n - 1) players i and j meet when
// i + j = r (mod n - 1), and the one player m with 2m = r meets the middle. Every two players meet
// exactly once in n - 1 rounds. Seats name the pairs: pair 0, (m, n - 1), sits at seats 0 and 1,
// and pair t > 0, (m - t, m + t) mod n - 1, at seats 2t and 2t + 1; m = r n/2 mod (n - 1), since
// n/2 is the inverse of 2 modulo the odd n - 1.
ROOFLAB_JACOBI_HOST_DEVICE inline int circle_seat(int player, int round, int players) {
  const int circle = players - 1, half = players / 2;
  const int middle = round * half % circle;
  if (player == circle) return 1;
  const int offset = player - middle < 0 ? player - middle + circle : player - middle;
  if (offset == 0) return 0;
  return offset < half ? 2 * offset + 1 : 2 * (circle - offset);  // m + t: 2t + 1; m - t: 2t
}

// The seat, in the next round, of the player in `seat` now. It does not depend on the round (the
// middle player m moves on by n/2 each round), so a thread that follows seats needs no arithmetic
// per round.
ROOFLAB_JACOBI_HOST_DEVICE inline int next_circle_seat(int seat, int players) {
  const int half = players / 2;
  if (seat == 1) return 1;                             // the middle stays
  if (seat == 0) return half == 1 ? 0 : 2 * half - 1;  // m = m' + (n/2 - 1)
  const int t = seat / 2;
  if (seat & 1) return 2 * (half - t);                // m + t = m' - (n/2 - t)
  return t == half - 1 ? 0 : 2 * (half - 1 - t) + 1;  // m - t = m' + (n/2 - 1 - t)
}

// The cross ordering of two halves of an even number n of players (first half 0..n/2-1, second
// half n/2..n-1): in round r (0 <= r < n/2) player i of the first half meets player
// n/2 + (i + r) mod n/2 of the second. In n/2 rounds every player meets every player of the other
// half exactly once and none of its own. Pair j sits at seats 2j (its first-half player, who never
// moves) and 2j + 1; the second half moves one pair down each round.
ROOFLAB_JACOBI_HOST_DEVICE inline int cross_seat(int player, int round, int players) {
  const int half = players / 2;
  if (player < half) return 2 * player;
  return 2 * ((player - half - round % half + half) % half) + 1;
}
ROOFLAB_JACOBI_HOST_DEVICE inline int next_cross_seat(int seat, int players) {
  const int half = players / 2, pair = seat / 2;
  if (seat % 2 == 0) return seat;
  return 2 * (pair == 0 ? half - 1 : pair - 1) + 1;
}

// The Gram schedule's inner ordering for a pair of blocks in round `round` of its ring of
// `block_positions`: every pair of the two blocks' columns (the circle method) in every `period`-th
// round of each sweep, round 0 among them, and at least twice a sweep (the period is at most half
// the ring); otherwise only the pairs between the two blocks (the cross ordering). Round 0 pairs
// every block, so every two columns that share a block when the sweep starts meet in it.
ROOFLAB_JACOBI_HOST_DEVICE inline bool inner_sweep_is_full(int round, int block_positions,
                                                           int period) {
  const int half = block_positions / 2;
  const int every = half < period ? half : period;
  return every <= 1 || round % every == 0;
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
// wanted), tracked norms, the completion's coefficients and error scales (RoundingNoise; n_pad
// each), positions (n_pad ints), and for a block team 32 words of reduction scratch. Offsets are
// 16-byte aligned.
struct OnChipLayout {
  int M = 0, N = 0, n_pad = 0;
  int ldw = 0, ldv = 0;
  int w_offset = 0, v_offset = 0, norms_offset = 0, coefficients_offset = 0,
      error_scales_offset = 0, pos_offset = 0, team_offset = 0;
  int bytes = 0;  // per matrix (a warp's slice, or a block's whole allocation); 2^30 if enormous
};

// The same pieces with given leading dimensions (ldw >= max(m, n); ldv >= min(m, n), or 0 without
// V).
ROOFLAB_JACOBI_HOST_DEVICE inline OnChipLayout on_chip_layout_with(int m, int n, int element_bytes,
                                                                   int ldw, int ldv,
                                                                   bool block_team) {
  constexpr long long enormous = 1ll << 30;
  OnChipLayout L;
  L.M = m > n ? m : n;
  L.N = m > n ? n : m;
  L.n_pad = L.N + (L.N & 1);
  L.ldw = ldw;
  L.ldv = ldv;
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
  L.error_scales_offset = take((long long)L.n_pad * element_bytes);
  L.pos_offset = take((long long)L.n_pad * 4);
  L.team_offset = take(block_team ? 32 * 8 : 0);
  L.bytes = int(offset < enormous ? offset : enormous);
  return L;
}

ROOFLAB_JACOBI_HOST_DEVICE inline OnChipLayout on_chip_layout(int m, int n, int element_bytes,
                                                              bool uv, bool block_team) {
  const int M = m > n ? m : n, N = m > n ? n : m;
  return on_chip_layout_with(m, n, element_bytes, shared_leading_dimension(M),
                             uv ? shared_leading_dimension(N) : 0, block_team);
}

// A thread team's slice of shared memory (the svd's smallest matrices, one thread each): the
// layout of a warp's slice, rounded up to an odd number of elements, so that the threads of a warp,
// each reading the same element of its own matrix, meet no bank conflict.
ROOFLAB_JACOBI_HOST_DEVICE inline int thread_slice_bytes(int m, int n, int element_bytes, bool uv) {
  const int bytes = on_chip_layout(m, n, element_bytes, uv, false).bytes;
  const int elements = (bytes + element_bytes - 1) / element_bytes;
  return (elements | 1) * element_bytes;
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
