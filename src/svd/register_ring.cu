// The register ring: one-sided Jacobi with the working matrix in registers, for matrices of at
// most 64 columns and 64 rows (the svd ladder's rung 4; rooflab::svd's path for such matrices).
//
// A block of at most 4 warps takes one matrix, as many as warps of 8 rows would be, R rows each:
// the rows split evenly over the warps, rounded up to a count the kernel is compiled for. Lane
// l of every warp holds positions 2l and 2l + 1 of the odd-even ring (docs/svd.md), and warp w
// rows R w .. R w + R - 1 of those two columns of W and of V. An even round pairs (2l, 2l + 1),
// a lane's own two columns; an odd round pairs (2l + 1, 2l + 2), which straddle two lanes: each
// lane fetches the neighbour's column with one shuffle per row and computes its own new column.
// A pair's dot products are partial sums over each warp's rows: the warps write them to shared
// memory, and after one block barrier every warp adds its pairs' partials in the same fixed
// order (a lane per pair: bitwise the same sums, so the same rotation, in every warp) and
// rotates its rows. So a round costs one block barrier and three words per pair and warp of
// shared-memory traffic, where the one-kernel rung moves every element of W and V through shared
// memory every round; the columns leave registers only once a sweep, to be sorted by norm.
//
// Spectra that the sweeps unfold slowly (geometric and log-uniform ones) are handed over after
// sweep 2 (ring_spectrum_unfolding, jacobi_math.hpp): from 32 to 55 columns in double the kernel
// restarts such a matrix itself on its transposed triangle (ring_on_transposed_triangle), single
// or in a batch; a single one from 56 columns goes to the second try (qr_preconditioning.cu).
#include <algorithm>
#include <climits>

#include "core/device_info.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "svd/householder.cuh"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {
namespace {

constexpr int ring_max_rows = register_ring_max_rows;
// Rows of W and V per warp: as many warps as 8-row warps would be, at most 4, and the rows split
// evenly over them. Measured on an H200 (double, square, 25 / 32 / 50 / 64 columns, when every
// warp took 8 or every warp 16 rows): 4 rows 208 / 236 / 636 / 982 us, 8 rows 165 / 192 / 406 /
// 530 us, 16 rows 193 / 232 / 363 / 448 us; every warp forms every rotation of the round, so more
// warps than SM sub-partitions share their issue slots, and fewer lengthen each warp's own rows.
// A round costs a warp its rows' instructions, real or padding: with 16 rows each, 50 x 50 had
// 2 real rows in the fourth warp and took 325 us, with 13 each 261 us (seed 1; 40 x 40: 241
// against 197 us with 10 each). (A single warp with two lanes per pair, 16 rows each and no
// barrier, took 187 us at 25 x 25: its lanes issue every instruction of the round alone.)
constexpr int ring_min_rows = 8;
// At most 4 warps: a pair's partials are always 4 per sum, those of missing warps zeros, so that
// no load or addition waits on a test of the warp count.
constexpr int ring_max_warps = 4;
// The rows per warp the kernel is compiled for: a warp takes the smallest that holds its share.
template <int... Rows>
struct RingRowCounts {};
constexpr int ring_most_rows = 16;
constexpr int ring_second_most_rows = 13;
using RingRows = RingRowCounts<7, 8, 10, ring_second_most_rows, ring_most_rows>;
static_assert(ring_max_rows <= ring_max_warps * ring_most_rows,
              "4 warps of the largest count hold every row");
constexpr int ring_max_columns = register_ring_max_columns;  // two positions per lane
constexpr int ring_pairs = ring_max_columns / 2;             // a lane of warp 0 per pair
constexpr unsigned full_mask = 0xffffffffu;

// Shared memory after the on-chip layout: the partial sums (per round parity, pair and warp:
// alpha, beta, gamma), once a sweep one squared norm per warp and position, each column's error
// scale (jacobi_math.hpp, RoundingNoise) by column id, the last sweep's largest off-diagonal,
// the column id at each position, and the largest and least exponent (ilogb) of a positive squared
// norm as loaded and after the early hand-over's sweeps (note_unfolding). A pair's partials from
// all warps lie side by side,
// ring_partial_stride apart (odd, so that the lanes' loads fall on distinct banks); the two
// parities alternate, so a warp writes the next round's partials while a slower one still reads
// this round's.
constexpr int ring_partial_stride = 3 * ring_max_warps + 1;
constexpr int ring_partials_per_parity = ring_pairs * ring_partial_stride;
constexpr int ring_norm_partials = ring_max_warps * ring_max_columns;

template <class T>
struct RingScratch {
  T* partials;
  T* norm_partials;
  T* error_scales;
  T* sweep_off;
  int* ids;
  int* exponents;
  __device__ explicit RingScratch(unsigned char* base)
      : partials(reinterpret_cast<T*>(base)),
        norm_partials(partials + 2 * ring_partials_per_parity),
        error_scales(norm_partials + ring_norm_partials),
        sweep_off(error_scales + ring_max_columns),
        ids(reinterpret_cast<int*>(sweep_off + 1)),
        exponents(ids + ring_max_columns) {}
};

// The exponents: as loaded (2 words), then the early hand-over's (note_unfolding: 5).
constexpr int ring_exponent_words = 7;

template <class T>
constexpr int ring_scratch_bytes() {
  return int(sizeof(T)) *
             (2 * ring_partials_per_parity + ring_norm_partials + ring_max_columns + 1) +
         4 * (ring_max_columns + ring_exponent_words);
}

// The restart on the transposed triangle (ring_on_transposed_triangle) takes more shared memory
// after the ring's scratch: Z (as W, M x N: R^T, then W's left vectors), T (N x N: W's right
// vectors) and the QR's factors (SortedQr: taus, scales, column order and two flags).
struct TriangleLayout {
  int z_offset = 0, t_offset = 0, taus_offset = 0, scales_offset = 0, order_offset = 0,
      flag_offset = 0, ldt = 0, bytes = 0;
};

template <class T>
__host__ __device__ TriangleLayout triangle_layout(const OnChipLayout& L) {
  TriangleLayout t;
  int offset = (L.bytes + ring_scratch_bytes<T>() + 15) / 16 * 16;
  const auto take = [&offset](int bytes) {
    const int at = offset;
    offset += (bytes + 15) / 16 * 16;
    return at;
  };
  t.ldt = L.N | 1;
  t.z_offset = take(int(sizeof(T)) * L.ldw * L.N);
  t.t_offset = take(int(sizeof(T)) * t.ldt * L.N);
  t.taus_offset = take(int(sizeof(T)) * L.n_pad);
  t.scales_offset = take(int(sizeof(T)) * L.n_pad);
  t.order_offset = take(4 * L.n_pad);
  t.flag_offset = take(8);
  t.bytes = offset;
  return t;
}

// Odd leading dimensions: the sort's loads and stores walk one row across 32 columns of arbitrary
// ids, which a multiple of 32 would send to one bank.
OnChipLayout ring_layout(int m, int n, int element_bytes, bool uv) {
  const int M = std::max(m, n), N = std::min(m, n);
  return on_chip_layout_with(m, n, element_bytes, M | 1, uv ? N | 1 : 0, true);
}

// One lane's share of the matrix: Rows rows from row0 of the columns at its two positions.
template <class T, int Rows>
struct LaneColumns {
  T w[2][Rows];
  T v[2][Rows];
  T scale[2];  // the columns' error scales (0 for the padding)
  int id[2];   // the column at each position: N is the padding column, -1 a position past n_pad
};

// Fills `lane` from shared memory: position 2 lane + j takes column order[2 lane + j] (or column
// 2 lane + j when order is null); the padding column and rows past the matrix are zeros.
template <class T, int Rows>
__device__ void ring_load(LaneColumns<T, Rows>& lane, const T* W, int ldw, const T* V, int ldv,
                          const int* order, int M, int N, int n_pad, bool uv, int row0,
                          int lane_index, const RingScratch<T>& scratch) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int position = 2 * lane_index + j;
    const int id = position < n_pad ? (order != nullptr ? order[position] : position) : -1;
    lane.id[j] = id;
    const bool real = id >= 0 && id < N;
    // By the sorted order only: the first load, before the scales are known, leaves them 0.
    lane.scale[j] = real && order != nullptr ? scratch.error_scales[id] : T(0);
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int row = row0 + r;
      lane.w[j][r] = real && row < M ? W[row + id * ldw] : T(0);
      lane.v[j][r] = real && uv && row < N ? V[row + id * ldv] : T(0);
    }
  }
}

// Writes `lane` back to shared memory by column id, and each position's partial squared norm.
template <class T, int Rows>
__device__ void ring_publish(const LaneColumns<T, Rows>& lane, T* W, int ldw, T* V, int ldv, int M,
                             int N, int n_pad, bool uv, int row0, int lane_index, int warp,
                             const RingScratch<T>& scratch) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int position = 2 * lane_index + j;
    if (position >= n_pad) continue;
    T sum = 0;
#pragma unroll
    for (int r = 0; r < Rows; ++r) sum = fma(lane.w[j][r], lane.w[j][r], sum);
    scratch.norm_partials[warp * ring_max_columns + position] = sum;
    if (warp == 0) scratch.ids[position] = lane.id[j];
    const int id = lane.id[j];
    if (id >= N) continue;
    if (warp == 0) scratch.error_scales[id] = lane.scale[j];
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int row = row0 + r;
      if (row < M) W[row + id * ldw] = lane.w[j][r];
      if (uv && row < N) V[row + id * ldv] = lane.v[j][r];
    }
  }
}

// A round's rotations as this lane's rows apply them. An even round: (c, s) of the lane's pair
// (2l, 2l + 1); an odd round: the coefficients of its position 2l + 1 (the lower of pair l, with
// the next lane's 2l + 2) and of 2l (the upper of pair l - 1); a position without a pair gets
// coefficients that keep its value. Starts as an odd round that rotates nothing.
template <class T>
struct RoundRotations {
  T c1 = 0, s1 = 1;   // even: the pair's; odd: position 2l + 1's
  T c0 = 0, s0 = -1;  // odd: position 2l's
};

template <class T, int Rows>
__device__ __forceinline__ void clear_registers(T (&rows)[Rows]) {
#pragma unroll
  for (int r = 0; r < Rows; ++r) rows[r] = T(0);
}

// Applies a round's rotations to this lane's rows of V, in the layout that round had.
template <bool odd, bool mirrored, class T, int Rows>
__device__ __forceinline__ void rotate_v(LaneColumns<T, Rows>& lane, const RoundRotations<T>& r) {
  constexpr int at_even = mirrored ? 1 : 0, at_odd = 1 - at_even;  // positions 2l and 2l + 1
#pragma unroll
  for (int row = 0; row < Rows; ++row) {
    if constexpr (!odd) {  // as W's rows in ring_round: p at 2l, q at 2l + 1, trading registers
      const T p = lane.v[at_even][row], q = lane.v[at_odd][row];
      lane.v[at_odd][row] = fma(r.s1, p, r.c1 * q);
      lane.v[at_even][row] = fma(r.c1, p, -r.s1 * q);
    } else {
      const T right = __shfl_down_sync(full_mask, lane.v[at_even][row], 1);
      const T left = __shfl_up_sync(full_mask, lane.v[at_odd][row], 1);
      lane.v[at_odd][row] = fma(r.s1, lane.v[at_odd][row], r.c1 * right);
      lane.v[at_even][row] = fma(r.c0, left, -r.s0 * lane.v[at_even][row]);
    }
  }
}

// One round of the ring (Odd: pairs (2l + 1, 2l + 2), else (2l, 2l + 1)): partial dot products,
// the rotations (every warp forms them, from the same sums) and the rotation of this lane's rows.
// A compile-time parity: no selects between the two kinds of round in the loop.
//
// Rounding noise (jacobi_math.hpp, RoundingNoise): a column of the pair whose fresh norm lies
// within its error scale takes part as a zero column (not rotated: the identity, which the ring's
// swap still moves on) and is cleared once the round has moved it, by the lane and register that
// then hold it: in an even round this lane's own, in an odd one this lane's for q and the next
// lane's for p. The error scales follow the columns, rotated as jacobi_math.hpp says.
//
// V's rows take each round's rotations one round late (`pending`, the previous round's), right
// after the barrier: no result of this round waits on them, so they fill the issue slots the
// round's chain leaves idle (partial sums, rotation), where applied with W's they lengthened the
// stretch between the rotation and the next barrier.
//
// Rotations happen in place: a register keeps its column through an even round, and the pair's
// two positions trade registers instead (rotating and then swapping the values cost a move per row
// and column, a fifth of a round's instructions). So the layout alternates: position 2l is in w[0]
// (`mirrored` false) or w[1] (true), and an even round flips it. An odd round moves columns
// between lanes and keeps it.
// Long (about 115 lines) on purpose: one round's columns stay in the lanes' registers from the
// rotation to the exchange, which a split into functions would have to pass whole.
template <bool odd, bool mirrored, class T, int Rows>
__device__ __forceinline__ void ring_round(LaneColumns<T, Rows>& lane,
                                           const RingScratch<T>& scratch, int n_pad, int lane_index,
                                           int warp, bool uv, T tol, T& lane_off,
                                           RoundRotations<T>& pending) {
  constexpr int at_even = mirrored ? 1 : 0, at_odd = 1 - at_even;  // positions 2l and 2l + 1
  // Odd rounds: position 2l + 1 pairs with the next lane's 2l + 2 (`right`), and 2l with the
  // previous lane's 2l - 1 (`left`), fetched after the barrier so as not to be live across it; with
  // 16 rows of double, a row at a time as it is rotated (all of them at once, the kernel spilled).
  constexpr bool left_by_row = sizeof(T) * Rows > 64;
  T right[Rows], left[left_by_row ? 1 : Rows];
  if constexpr (odd) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) right[r] = __shfl_down_sync(full_mask, lane.w[at_even][r], 1);
  }
  // This lane's pair: (2l, 2l + 1) in even rounds, (2l + 1, 2l + 2) in odd ones.
  const bool owns_pair = 2 * lane_index + (odd ? 2 : 1) < n_pad;
  T* const pair_partials =
      scratch.partials + (odd ? ring_partials_per_parity : 0) + lane_index * ring_partial_stride;
  if (owns_pair) {
    T sums[3][2] = {};  // two chains each: half the dependent multiply-adds
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const T p = odd ? lane.w[at_odd][r] : lane.w[at_even][r];
      const T q = odd ? right[r] : lane.w[at_odd][r];
      sums[0][r & 1] = fma(p, p, sums[0][r & 1]);
      sums[1][r & 1] = fma(q, q, sums[1][r & 1]);
      sums[2][r & 1] = fma(p, q, sums[2][r & 1]);
    }
#pragma unroll
    for (int c = 0; c < 3; ++c) pair_partials[3 * warp + c] = sums[c][0] + sums[c][1];
  }
  __syncthreads();
  if constexpr (odd && !left_by_row) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) left[r] = __shfl_up_sync(full_mask, lane.w[at_odd][r], 1);
  }
  // All loads first (a missing warp's partials are zeros), then a fixed order of additions. A
  // lane without a pair reads the zeros no lane writes there, and gets the identity and cosine 0:
  // no branch, so that V's rows below interleave with this chain.
  T partial[ring_max_warps][3];
#pragma unroll
  for (int w = 0; w < ring_max_warps; ++w)
#pragma unroll
    for (int c = 0; c < 3; ++c) partial[w][c] = pair_partials[3 * w + c];
  T sums[3];
#pragma unroll
  for (int c = 0; c < 3; ++c)
    sums[c] = (partial[0][c] + partial[1][c]) + (partial[2][c] + partial[3][c]);
  // The pair's error scales: p at 2l (even) or 2l + 1 (odd), q at 2l + 1 or the next lane's 2l + 2;
  // in odd rounds also the previous lane's 2l - 1, which moves into this lane's 2l.
  T right_scale = 0, left_scale = 0;
  if constexpr (odd) {
    right_scale = __shfl_down_sync(full_mask, lane.scale[at_even], 1);
    left_scale = __shfl_up_sync(full_mask, lane.scale[at_odd], 1);
  }
  const T scale_p = odd ? lane.scale[at_odd] : lane.scale[at_even];
  const T scale_q = odd ? right_scale : lane.scale[at_odd];
  const bool noise_p = owns_pair && is_rounding_noise(sums[0], scale_p);
  const bool noise_q = owns_pair && is_rounding_noise(sums[1], scale_q);
  sums[0] = noise_p ? T(0) : sums[0];
  sums[1] = noise_q ? T(0) : sums[1];
  sums[2] = noise_p || noise_q ? T(0) : sums[2];
  Rotation<T> rotation;
  T cosine = 0;
  jacobi_rotation(sums[0], sums[1], sums[2], tol, rotation, cosine);
  lane_off = fmax(lane_off, cosine);
  if (uv) rotate_v<!odd, odd ? !mirrored : mirrored>(lane, pending);  // the previous round's

  if constexpr (!odd) {
    // p at 2l, q at 2l + 1: position 2l takes s p + c q, 2l + 1 takes c p - s q, each in the
    // other's register. A lane without a pair holds no column (n_pad is even): any values do.
    const T c = rotation.c, s = rotation.s;
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const T p = lane.w[at_even][r], q = lane.w[at_odd][r];
      lane.w[at_odd][r] = fma(s, p, c * q);
      lane.w[at_even][r] = fma(c, p, -s * q);
    }
    pending.c1 = c;
    pending.s1 = s;
    rotate_error_scales(rotation, lane.scale[at_even], lane.scale[at_odd]);
    if (__any_sync(full_mask, noise_p || noise_q)) {  // rare: see below
      if (noise_p) clear_registers(lane.w[at_even]);  // the identity left p in its register
      if (noise_q) clear_registers(lane.w[at_odd]);
    }
  } else {
    // Position 2l + 1 is the lower of pair l (p = it, q = right) and takes s p + c q; 2l the upper
    // of pair l - 1 (p = left, q = it), whose rotation the previous lane formed, and takes c p -
    // s q. Without a pair the coefficients keep the value: (c, s) = (0, 1) and (0, -1).
    const bool lower_active = owns_pair;
    const bool upper_active = lane_index >= 1 && 2 * lane_index < n_pad;
    const T c_up = __shfl_up_sync(full_mask, rotation.c, 1);
    const T s_up = __shfl_up_sync(full_mask, rotation.s, 1);
    const T c1 = lower_active ? rotation.c : T(0), s1 = lower_active ? rotation.s : T(1);
    const T c0 = upper_active ? c_up : T(0), s0 = upper_active ? s_up : T(-1);
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      T left_w;
      if constexpr (left_by_row)
        left_w =
            __shfl_up_sync(full_mask, lane.w[at_odd][r], 1);  // before the neighbour rotates it
      else
        left_w = left[r];
      lane.w[at_odd][r] = fma(s1, lane.w[at_odd][r], c1 * right[r]);
      lane.w[at_even][r] = fma(c0, left_w, -s0 * lane.w[at_even][r]);
    }
    pending = {c1, s1, c0, s0};
    const int right_id = __shfl_down_sync(full_mask, lane.id[at_even], 1);
    const int left_id = __shfl_up_sync(full_mask, lane.id[at_odd], 1);
    if (lower_active) lane.id[at_odd] = right_id;
    if (upper_active) lane.id[at_even] = left_id;
    // 2l + 1 took s1 (its own) + c1 (the right's), 2l took c0 (the left's) - s0 (its own).
    lane.scale[at_odd] = s1 * s1 * lane.scale[at_odd] + c1 * c1 * right_scale;
    lane.scale[at_even] = c0 * c0 * left_scale + s0 * s0 * lane.scale[at_even];
    // The identity sent q to this lane's 2l + 1 and p to the next lane's 2l + 2. Behind a vote of
    // the warp: as selects in every round, the clears were half of the 26% more instructions
    // that the noise tracking gave a random 25 x 25 matrix's kernel (H100,
    // h100-ncu-svd-noise-tracking.json).
    if (__any_sync(full_mask, noise_p || noise_q)) {
      const bool left_noise_p = __shfl_up_sync(full_mask, noise_p, 1);
      if (noise_q) clear_registers(lane.w[at_odd]);
      if (upper_active && left_noise_p) clear_registers(lane.w[at_even]);
    }
  }
}

// The largest |w_p . w_q| / sqrt(norm_p norm_q) over every pair of W's columns in shared memory (0
// for a negligible column, as the rotation's test has it), from the squared norms by column; every
// thread of the block calls it. A thread takes a 4 x 4 tile of the Gram matrix at a time: 8 loads
// per row for 16 multiply-adds, where a pair per thread would load 2 for 1. The products of every
// 8 rows are summed apart and then added, as the rounds' partial sums are: the columns arrive
// orthogonal to about tol, which is near the rounding of one chain over all M rows.
template <class T>
__device__ T all_pairs_off(const BlockTeam& team, const T* W, int ldw, const T* norms, int M,
                           int N) {
  constexpr int width = 4, chunk_rows = 8;
  const int groups = (N + width - 1) / width, tiles = groups * (groups + 1) / 2;
  T off = 0;
  for (int tile = threadIdx.x; tile < tiles; tile += blockDim.x) {
    const GroupPair pair = upper_triangle_pair(tile, groups);  // the tile's groups of columns
    const int first = pair.first, second = pair.second;
    int p_at[width], q_at[width];  // the columns' offsets; past N column N - 1 again, ignored below
#pragma unroll
    for (int i = 0; i < width; ++i) {
      p_at[i] = min(width * first + i, N - 1) * ldw;
      q_at[i] = min(width * second + i, N - 1) * ldw;
    }
    T gram[width][width] = {};
    for (int row0 = 0; row0 < M; row0 += chunk_rows) {
      T chunk[width][width] = {};
      for (int row = row0; row < min(M, row0 + chunk_rows); ++row) {
        T p[width], q[width];
#pragma unroll
        for (int i = 0; i < width; ++i) {
          p[i] = W[p_at[i] + row];
          q[i] = W[q_at[i] + row];
        }
#pragma unroll
        for (int i = 0; i < width; ++i)
#pragma unroll
          for (int j = 0; j < width; ++j) chunk[i][j] = fma(p[i], q[j], chunk[i][j]);
      }
#pragma unroll
      for (int i = 0; i < width; ++i)
#pragma unroll
        for (int j = 0; j < width; ++j) gram[i][j] += chunk[i][j];
    }
#pragma unroll
    for (int i = 0; i < width; ++i)
#pragma unroll
      for (int j = 0; j < width; ++j) {
        const int pc = width * first + i, qc = width * second + j;
        if (pc >= qc || qc >= N) continue;
        off = fmax(off, scaled_off_diagonal(norms[pc], norms[qc], gram[i][j]));
      }
  }
  return team.max(off);
}

// The early hand-over's look at the columns after sweeps unfolding_first_look and
// RingUnfolding::sweep: each column's squared norm as the sweep's publication computes it, into the
// largest and least exponent (ilogb) of a positive one (two words a sweep) and, after the second, a
// flag for a zero one (word 4; ring_spectrum_unfolding, jacobi_math.hpp). In the publication's own
// loop: with a loop over the norms after it, out of line, the kernel that restarts took random
// matrices of 16 to 48 columns 2.2% to 5.6% longer than the plain one, with this 0.6% to 4.7% (H200,
// docs/results/h200-svd-ring-restart.txt, runs 3 and 4).
template <class T>
__device__ __forceinline__ void note_unfolding(int* words, int sweeps, T norm2) {
  if (norm2 > 0) {
    const int exponent = ilogb(norm2);
    atomicMax(&words[2 * (sweeps - unfolding_first_look)], exponent);
    atomicMin(&words[2 * (sweeps - unfolding_first_look) + 1], exponent);
  } else if (sweeps == RingUnfolding::sweep) {
    words[4] = 1;
  }
}

// The binades a sweep's noted exponents span (binades_between's).
__device__ __forceinline__ int noted_binades(const int* words) {
  return words[0] >= words[1] ? words[0] - words[1] : 0;
}

// Sweeps of the ring until one finds every pair orthogonal to tol or max_sweeps have run; W and V
// (shared memory, by column) hold the result on return, and norms the squared column norms. Where
// HandsOver, a spectrum that the sweeps unfold slowly (ring_spectrum_unfolding, jacobi_math.hpp)
// stops them after sweep RingUnfolding::sweep, unconverged and handed over: the kernel restarts
// on the transposed triangle, or the second try takes the matrix.
// Long (about 120 lines): the loop over sweeps holds the lane's columns in registers throughout.
template <int Rows, bool HandsOver, class T>
__device__ SweepOutcome<T> ring_sweeps(const BlockTeam& team, unsigned char* smem,
                                       const OnChipLayout& L, const RingScratch<T>& scratch,
                                       bool uv, T tol, int max_sweeps) {
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* V = reinterpret_cast<T*>(smem + L.v_offset);
  T* norms = reinterpret_cast<T*>(smem + L.norms_offset);
  int* order = reinterpret_cast<int*>(smem + L.pos_offset);
  const int M = L.M, N = L.N, n_pad = L.n_pad;
  const int lane_index = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int row0 = warp * Rows;

  for (int e = threadIdx.x; e < 2 * ring_partials_per_parity; e += blockDim.x)
    scratch.partials[e] = T(0);  // a missing warp's partials stay zero
  if (threadIdx.x == 0) {
    for (int w = 0; w + 1 < ring_exponent_words; w += 2) {  // largest, least
      scratch.exponents[w] = INT_MIN;
      scratch.exponents[w + 1] = INT_MAX;
    }
    scratch.exponents[ring_exponent_words - 1] = 0;  // no zero column noted
  }
  LaneColumns<T, Rows> lane;
  ring_load(lane, W, L.ldw, V, L.ldv, nullptr, M, N, n_pad, uv, row0, lane_index, scratch);
  SweepOutcome<T> outcome;
  T lane_off =
      0;  // the largest scaled off-diagonal of this lane's pairs this sweep (warp 0's read)
  RoundRotations<T> pending;                // V's rotations from the last round, not yet applied
  Placement placement = Placement::sorted;  // of the columns as loaded, for every sweep
  for (;;) {
    ring_publish(lane, W, L.ldw, V, L.ldv, M, N, n_pad, uv, row0, lane_index, warp, scratch);
    __syncthreads();
    if (outcome.sweeps > 0) {
      outcome.off = *scratch.sweep_off;
      if (outcome.sweeps == 1) outcome.first_off = outcome.off;
      outcome.converged = !(outcome.off > tol);
    }
    for (int position = threadIdx.x; position < n_pad; position += blockDim.x) {
      T sum = 0;
      for (int w = 0; w < warps; ++w) sum += scratch.norm_partials[w * ring_max_columns + position];
      const int id = scratch.ids[position];
      if (id >= N) {
        norms[id] = T(-1);  // the padding sorts last
      } else if (outcome.sweeps == 0) {
        norms[id] = sum;
        scratch.error_scales[id] = initial_error_scale(sum, N);  // the columns as loaded
        if (sum > 0) {  // their spread, for the placement (placement_as_loaded, jacobi_math.hpp)
          const int exponent = ilogb(sum);
          atomicMax(&scratch.exponents[0], exponent);
          atomicMin(&scratch.exponents[1], exponent);
        }
      } else if (is_rounding_noise(sum, scratch.error_scales[id])) {
        // Noise left by the sweep's last rotations: cleared now, so that the all-pairs test and
        // the sigmas see the zero column the next sweep would have made of it.
        norms[id] = T(0);
        for (int row = 0; row < M; ++row) W[row + id * L.ldw] = T(0);
      } else {
        norms[id] = sum;
      }
      if constexpr (HandsOver) {
        if (id < N && outcome.sweeps >= unfolding_first_look &&
            outcome.sweeps <= RingUnfolding::sweep)
          note_unfolding(scratch.exponents + 2, outcome.sweeps, norms[id]);
      }
    }
    __syncthreads();
    if (outcome.converged || outcome.sweeps >= max_sweeps) break;
    if constexpr (HandsOver) {
      const int* const noted = scratch.exponents + 2;
      if (outcome.sweeps == RingUnfolding::sweep &&
          ring_spectrum_unfolding(noted_binades(noted + 2), noted_binades(noted), noted[4] != 0)) {
        __syncthreads();  // every warp has read the words that the next load sets again
        outcome.handed_over = true;
        break;
      }
    }
    // After a sweep that met only small off-diagonals, one test of every pair on the columns just
    // published may find them converged: it stands for the sweep that would rotate nothing.
    if (outcome.sweeps > 0 && outcome.off <= all_pairs_test_threshold(tol)) {
      const T off = all_pairs_off(team, W, L.ldw, norms, M, N);
      if (!(off > tol)) {
        ++outcome.sweeps;
        outcome.off = off;
        outcome.converged = true;
        break;
      }
    }
    // The spread comes from the norms' sums: a loop over the norms here, or a call out of line,
    // made random 25 x 25 matrices about 1.5% and 5% slower (118.3-118.6 and 122.6-123.2 against
    // 116.4-116.9 us; H200, docs/results/h200-svd-graded-placement.txt, run 1).
    if (outcome.sweeps == 0 && scratch.exponents[0] >= scratch.exponents[1])
      placement = placement_for_spread(scratch.exponents[0] - scratch.exponents[1]);
    rank_sort_descending(team, norms, n_pad, placement, order);  // de Rijk, by decreasing norm
    __syncthreads();
    ring_load(lane, W, L.ldw, V, L.ldv, order, M, N, n_pad, uv, row0, lane_index, scratch);
    ++outcome.sweeps;

    // Four rounds a step, two layouts each (n_pad is even; a sweep of n_pad = 2 mod 4 positions
    // ends mirrored, which the publication by column id does not see).
    for (int round = 0; round < n_pad; round += 4) {
      ring_round<false, false>(lane, scratch, n_pad, lane_index, warp, uv, tol, lane_off, pending);
      ring_round<true, true>(lane, scratch, n_pad, lane_index, warp, uv, tol, lane_off, pending);
      if (round + 2 == n_pad) break;
      ring_round<false, true>(lane, scratch, n_pad, lane_index, warp, uv, tol, lane_off, pending);
      ring_round<true, false>(lane, scratch, n_pad, lane_index, warp, uv, tol, lane_off, pending);
    }
    if (uv) {  // the sweep's last round, an odd one, for V
      if (n_pad % 4 == 2)
        rotate_v<true, true>(lane, pending);
      else
        rotate_v<true, false>(lane, pending);
    }
    pending = RoundRotations<T>{};
    if (warp == 0) {
      const T off = warp_max(lane_off);
      if (lane_index == 0) *scratch.sweep_off = off;
      lane_off = 0;
    }
  }
  return outcome;
}

// The restart: the ring on R^T instead of W, as LAPACK's dgejsv preconditions (the second try,
// qr_preconditioning.cu, does the same through separate kernels), for a matrix loaded again after
// the hand-over: W's columns sorted by norm, W P = Q R in shared memory (block_sorted_qr), the
// sweeps on X = R^T = U_2 S V_2^T, and W = (Q V_2) S (P U_2)^T. R R^T is nearer diagonal than
// W^T W: in the sequential model of the method the sorted QR first took 7 to 11 sweeps on modes 3
// and 5 at 16 to 64 columns where the ring on A took 10 to 30
// (docs/results/cpu-svd-ring-hand-over-model.txt). The sweeps run on X's N rows. W's left vectors
// are then Q [V_2 S; 0] (Z, normalized by finish_on_chip with the zero sigmas' columns completed),
// its right ones P U_2 (T, U_2 = X / S with its zero columns completed here).
template <int Rows, class T>
__device__ SweepOutcome<T> ring_on_transposed_triangle(const BlockTeam& team, unsigned char* smem,
                                                       const OnChipLayout& L,
                                                       const RingScratch<T>& scratch,
                                                       const Problem<T>& P, std::int64_t matrix,
                                                       int lanes, int max_sweeps,
                                                       OnChipLayout& finished_on) {
  const TriangleLayout tri = triangle_layout<T>(L);
  const int M = L.M, N = L.N, ldw = L.ldw;
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* V = reinterpret_cast<T*>(smem + L.v_offset);
  T* norms = reinterpret_cast<T*>(smem + L.norms_offset);
  T* Z = reinterpret_cast<T*>(smem + tri.z_offset);
  T* right = reinterpret_cast<T*>(smem + tri.t_offset);
  int* order = reinterpret_cast<int*>(smem + tri.order_offset);
  const SortedQr<T> qr{order, reinterpret_cast<T*>(smem + tri.taus_offset),
                       reinterpret_cast<T*>(smem + tri.scales_offset),
                       reinterpret_cast<int*>(smem + tri.flag_offset)};
  // Two adjacent lanes a column below: the even rows to one, the odd to the other. Every lane
  // takes part in the pairs' shuffles (a pair past N with no rows).
  const int pair_column = threadIdx.x >> 1, p = threadIdx.x & 1, pairs = blockDim.x >> 1;
  for (int c0 = 0; c0 < N; c0 += pairs) {
    const int c = min(c0 + pair_column, N - 1), rows = c0 + pair_column < N ? M : 0;
    T sum = 0;
    for (int i = p; i < rows; i += 2) sum = fma(W[i + c * ldw], W[i + c * ldw], sum);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (p == 0 && rows > 0) norms[c] = sum;
  }
  __syncthreads();
  rank_sort_descending(team, norms, N, Placement::sorted, order);
  __syncthreads();
  block_sorted_qr(W, ldw, M, N, qr);
  block_transposed_triangle(W, ldw, N, order, norms, Z, ldw);
  __syncthreads();

  OnChipLayout on_x = L;  // the sweeps' W is X, N x N in Z
  on_x.M = N;
  on_x.w_offset = tri.z_offset;
  const SweepOutcome<T> outcome =
      ring_sweeps<Rows, false>(team, smem, on_x, scratch, P.uv, P.tol, max_sweeps);
  finished_on = on_x;
  if (!P.uv) return outcome;  // the sigmas are X's column norms

  // U_2 = X / S, its zero columns completed (scratch: W's left vectors' output, written last).
  for (int c0 = 0; c0 < N; c0 += pairs) {
    const int c = min(c0 + pair_column, N - 1), rows = c0 + pair_column < N ? N : 0;
    T sum = 0;
    for (int i = p; i < rows; i += 2) sum = fma(Z[i + c * ldw], Z[i + c * ldw], sum);
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    const T sigma = sum >= Precision<T>::negligible ? sqrt(sum) : T(0);
    for (int i = p; i < rows && sigma > 0; i += 2) Z[i + c * ldw] /= sigma;
    if (p == 0 && rows > 0) norms[c] = sigma;
  }
  __syncthreads();
  std::int64_t ldy = 0;
  T* const Y = w_output(P, matrix, ldy);
  complete_zero_columns(team, Z, ldw, N, N, norms, reinterpret_cast<int*>(smem + L.pos_offset),
                        reinterpret_cast<T*>(smem + L.coefficients_offset), Y, ldy, lanes);
  for (int c = pair_column; c < N; c += pairs)
    for (int k = p; k < N; k += 2) right[order[k] + c * tri.ldt] = Z[k + c * ldw];  // P U_2
  __syncthreads();
  for (int c = pair_column; c < N; c += pairs) {
    const T sigma = norms[c];
    for (int i = p; i < M; i += 2) Z[i + c * ldw] = i < N ? V[i + c * L.ldv] * sigma : T(0);
  }  // [V_2 S; 0], each pair on the column it reflects below
  block_apply_q(W, ldw, M, N, qr, Z, ldw);
  __syncthreads();
  finished_on = L;
  finished_on.w_offset = tri.z_offset;
  finished_on.v_offset = tri.t_offset;
  finished_on.ldv = tri.ldt;
  return outcome;
}

// The kernel. Where HandsOver and OnTriangle, a matrix handed over after RingUnfolding::sweep
// sweeps is loaded again and solved on its transposed triangle (ring_on_transposed_triangle), in
// the same block; its sweeps count both.
template <class T, int Rows, bool HandsOver, bool OnTriangle>
__global__ void __launch_bounds__(ring_max_warps * 32, 1)
    svd_register_ring(Problem<T> P, OnChipLayout L, int lanes, Report report) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockTeam team{reinterpret_cast<unsigned long long*>(smem + L.team_offset)};
  const RingScratch<T> scratch(smem + L.bytes);
  for (std::int64_t matrix = blockIdx.x; matrix < P.batch; matrix += gridDim.x) {
    int exponent = 0;
    if (load_on_chip(team, smem, L, P, matrix, report, exponent)) {
      OnChipLayout finished_on = L;
      SweepOutcome<T> outcome =
          ring_sweeps<Rows, HandsOver>(team, smem, L, scratch, P.uv, P.tol, P.max_sweeps);
      if constexpr (OnTriangle) {
        if (outcome.handed_over) {
          load_on_chip(team, smem, L, P, matrix, report, exponent);  // finite: loaded before
          const int before = outcome.sweeps;
          outcome = ring_on_transposed_triangle<Rows>(team, smem, L, scratch, P, matrix, lanes,
                                                      P.max_sweeps - before, finished_on);
          outcome.sweeps += before;
        }
      }
      finish_on_chip(team, smem, finished_on, P, matrix, lanes, exponent, outcome, report);
    }
    __syncthreads();
  }
}

}  // namespace

template <class T>
bool fits_in_registers(int m, int n, bool uv) {
  const OnChipLayout L = ring_layout(m, n, sizeof(T), uv);
  return L.N <= ring_max_columns && L.M <= ring_max_rows &&
         L.bytes + ring_scratch_bytes<T>() <= shared_memory_optin();
}

// Whether the ring's kernel restarts a matrix it hands over on its transposed triangle
// (ring_restarts, jacobi_math.hpp): where that kernel's shared memory fits.
template <class T>
bool ring_restarts_here(const OnChipLayout& L) {
  return ring_restarts<T>(L.N) && triangle_layout<T>(L).bytes <= shared_memory_optin();
}

template <class T>
bool ring_restarts_here(int m, int n, bool uv) {
  return fits_in_registers<T>(m, n, uv) && ring_restarts_here<T>(ring_layout(m, n, sizeof(T), uv));
}

// The early hand-over has kernels of their own (HandsOver), for the matrices it looks at: double
// ones the kernel restarts (ring_restarts_here), and single double ones of
// RingUnfolding::least_columns columns or more, whose rows take the largest count a warp, for the
// second try. Its test in the one kernel, never run for the others, still made them 1.3% to 1.8%
// slower; apart, they take the time they took before it (H100,
// docs/results/h100-svd-ring-hand-over.txt, runs 7 and 8).
static_assert(ring_max_warps * ring_second_most_rows < RingUnfolding::least_columns,
              "a matrix the hand-over looks at has ring_most_rows rows a warp");
template <class T, int Rows>
void launch_ring(const Problem<T>& problem, const OnChipLayout& L, const Report& report,
                 cudaStream_t stream) {
  const int threads = (L.M + Rows - 1) / Rows * 32;
  int power = 32;  // finish_on_chip's groups: lanes per pair for a power-of-two team within ours
  while (2 * power <= threads) power *= 2;
  int bytes = L.bytes + ring_scratch_bytes<T>();
  auto kernel = svd_register_ring<T, Rows, false, false>;
  if constexpr (sizeof(T) == sizeof(double) &&
                ring_max_warps * Rows >= RingRestart::least_columns) {
    if (ring_restarts_here<T>(L)) {
      kernel = svd_register_ring<T, Rows, true, true>;
      bytes = triangle_layout<T>(L).bytes;
    }
  }
  if constexpr (Rows == ring_most_rows && unfolding_applies<RingUnfolding, T>(ring_max_columns)) {
    if (problem.second_try_follows && problem.batch == 1 &&
        unfolding_applies<RingUnfolding, T>(L.N))
      kernel = svd_register_ring<T, Rows, true, false>;
  }
  allow_shared_memory(kernel, bytes);
  const auto blocks = unsigned(std::min<std::int64_t>(problem.batch, std::int64_t(1) << 30));
  kernel<<<blocks, threads, bytes, stream>>>(problem, L, lanes_per_pair(power, L.n_pad), report);
  detail::check_launch("svd", "svd_register_ring");
}

// Launches the ring compiled for the smallest of Rows that is at least `rows`. One always is:
// a matrix that fits in registers has at most ring_max_rows rows, and the static_assert above
// gives 4 warps of the largest count that many.
template <class T, int... Rows>
void launch_ring_rows(RingRowCounts<Rows...>, int rows, const Problem<T>& problem,
                      const OnChipLayout& L, const Report& report, cudaStream_t stream) {
  (void)((rows <= Rows && (launch_ring<T, Rows>(problem, L, report, stream), true)) || ...);
}

template <class T>
void run_in_registers(const Problem<T>& problem, const Report& report, cudaStream_t stream) {
  if (problem.batch == 0) return;
  require(fits_in_registers<T>(problem.m, problem.n, problem.uv), "svd", "m, n",
          "the register ring takes at most 64 columns of at most 64 rows");
  const OnChipLayout L = ring_layout(problem.m, problem.n, sizeof(T), problem.uv);
  const int warps = std::min(ring_max_warps, (L.M + ring_min_rows - 1) / ring_min_rows);
  launch_ring_rows<T>(RingRows{}, (L.M + warps - 1) / warps, problem, L, report, stream);
}

template bool fits_in_registers<float>(int, int, bool);
template bool fits_in_registers<double>(int, int, bool);
template bool ring_restarts_here<float>(int, int, bool);
template bool ring_restarts_here<double>(int, int, bool);
template void run_in_registers<float>(const Problem<float>&, const Report&, cudaStream_t);
template void run_in_registers<double>(const Problem<double>&, const Report&, cudaStream_t);

}  // namespace rooflab::jacobi
