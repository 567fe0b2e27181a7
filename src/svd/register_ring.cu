// The register ring: one-sided Jacobi with the working matrix in registers, for matrices of at
// most 64 columns and 64 rows (the svd ladder's rung 4; rooflab::svd's path for such matrices).
//
// A block of ceil(M / R) warps takes one matrix (R = 8 rows for at most 32 rows, else 16). Lane
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
#include <algorithm>

#include "core/device_info.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {
namespace {

constexpr int ring_max_rows = register_ring_max_rows;
// Rows of W and V per warp: 8 for columns of at most 32 rows, 16 beyond, so at most 4 warps.
// Measured on an H200 (double, square, 25 / 32 / 50 / 64 columns): 4 rows 208 / 236 / 636 / 982
// us, 8 rows 165 / 192 / 406 / 530 us, 16 rows 193 / 232 / 363 / 448 us; every warp forms every
// rotation of the round, so more warps than SM sub-partitions share their issue slots, and fewer
// lengthen each warp's own rows. (A single warp with two lanes per pair, 16 rows each and no
// barrier, took 187 us at 25 x 25: its lanes issue every instruction of the round alone.)
constexpr int ring_short_rows = 8;
constexpr int ring_short_columns = 32;  // rows up to which a warp takes ring_short_rows
constexpr int ring_long_rows = 16;
constexpr int ring_max_warps = ring_max_rows / ring_short_rows;
constexpr int ring_max_columns = register_ring_max_columns;  // two positions per lane
constexpr int ring_pairs = ring_max_columns / 2;      // a lane of warp 0 per pair
constexpr unsigned full_mask = 0xffffffffu;

// Shared memory after the on-chip layout: the partial sums (per round parity, pair and warp:
// alpha, beta, gamma; or once a sweep one squared norm per warp and position), the column id at
// each position and the last sweep's largest off-diagonal. A pair's partials from all warps lie
// side by side, ring_partial_stride apart (odd, so that the lanes' loads fall on distinct banks);
// the two parities alternate, so a warp writes the next round's partials while a slower one still
// reads this round's.
constexpr int ring_partial_stride = 3 * ring_max_warps + 1;
constexpr int ring_partials_per_parity = ring_pairs * ring_partial_stride;
static_assert(2 * ring_partials_per_parity >= ring_max_warps * ring_max_columns, "norm partials fit");

template <class T>
struct RingScratch {
  T* partials;
  T* sweep_off;
  int* ids;
  __device__ explicit RingScratch(unsigned char* base)
      : partials(reinterpret_cast<T*>(base)),
        sweep_off(partials + 2 * ring_partials_per_parity),
        ids(reinterpret_cast<int*>(sweep_off + 1)) {}
};

template <class T>
constexpr int ring_scratch_bytes() {
  return int(sizeof(T)) * (2 * ring_partials_per_parity + 1) + 4 * ring_max_columns;
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
  int id[2];  // the column at each position: N is the padding column, -1 a position past n_pad
};

// Fills `lane` from shared memory: position 2 lane + j takes column order[2 lane + j] (or column
// 2 lane + j when order is null); the padding column and rows past the matrix are zeros.
template <class T, int Rows>
__device__ void ring_load(LaneColumns<T, Rows>& lane, const T* W, int ldw, const T* V, int ldv,
                          const int* order, int M, int N, int n_pad, bool uv, int row0,
                          int lane_index) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int position = 2 * lane_index + j;
    const int id = position < n_pad ? (order != nullptr ? order[position] : position) : -1;
    lane.id[j] = id;
    const bool real = id >= 0 && id < N;
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
__device__ void ring_publish(const LaneColumns<T, Rows>& lane, T* W, int ldw, T* V, int ldv, int M, int N,
                             int n_pad, bool uv, int row0, int lane_index, int warp,
                             const RingScratch<T>& scratch) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int position = 2 * lane_index + j;
    if (position >= n_pad) continue;
    T sum = 0;
#pragma unroll
    for (int r = 0; r < Rows; ++r) sum = fma(lane.w[j][r], lane.w[j][r], sum);
    scratch.partials[warp * ring_max_columns + position] = sum;
    if (warp == 0) scratch.ids[position] = lane.id[j];
    const int id = lane.id[j];
    if (id >= N) continue;
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const int row = row0 + r;
      if (row < M) W[row + id * ldw] = lane.w[j][r];
      if (uv && row < N) V[row + id * ldv] = lane.v[j][r];
    }
  }
}

// One round of the ring (Odd: pairs (2l + 1, 2l + 2), else (2l, 2l + 1)): partial dot products,
// the rotations (every warp forms them, from the same sums) and the rotation of this lane's rows.
// A compile-time parity: no selects between the two kinds of round in the loop.
template <bool odd, class T, int Rows>
__device__ __forceinline__ void ring_round(LaneColumns<T, Rows>& lane, const RingScratch<T>& scratch,
                                           int n_pad, int lane_index, int warp, int warps, bool uv,
                                           T tol, T& lane_off) {
  // Odd rounds: this lane's column 1 pairs with the next lane's column 0 (`right`), and its
  // column 0 with the previous lane's column 1 (`left`).
  T right[Rows], left[Rows];
  if constexpr (odd) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      right[r] = __shfl_down_sync(full_mask, lane.w[0][r], 1);
      left[r] = __shfl_up_sync(full_mask, lane.w[1][r], 1);
    }
  }
  // This lane's pair: (2l, 2l + 1) in even rounds, (2l + 1, 2l + 2) in odd ones.
  const bool owns_pair = 2 * lane_index + (odd ? 2 : 1) < n_pad;
  T* const pair_partials = scratch.partials + (odd ? ring_partials_per_parity : 0) +
                           lane_index * ring_partial_stride;
  if (owns_pair) {
    T sums[3][2] = {};  // two chains each: half the dependent multiply-adds
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const T p = odd ? lane.w[1][r] : lane.w[0][r];
      const T q = odd ? right[r] : lane.w[1][r];
      sums[0][r & 1] = fma(p, p, sums[0][r & 1]);
      sums[1][r & 1] = fma(q, q, sums[1][r & 1]);
      sums[2][r & 1] = fma(p, q, sums[2][r & 1]);
    }
#pragma unroll
    for (int c = 0; c < 3; ++c) pair_partials[3 * warp + c] = sums[c][0] + sums[c][1];
  }
  __syncthreads();
  Rotation<T> rotation;  // the identity for a lane without a pair
  if (owns_pair) {
    // All loads first, then four chains of fixed order: a load latency and a few additions.
    constexpr int max_warps = ring_max_rows / Rows;
    T partial[max_warps][3];
#pragma unroll
    for (int w = 0; w < max_warps; ++w)
#pragma unroll
      for (int c = 0; c < 3; ++c) partial[w][c] = w < warps ? pair_partials[3 * w + c] : T(0);
    T sums[3][4] = {};
#pragma unroll
    for (int w = 0; w < max_warps; ++w)
#pragma unroll
      for (int c = 0; c < 3; ++c) sums[c][w & 3] += partial[w][c];
    const T alpha = (sums[0][0] + sums[0][1]) + (sums[0][2] + sums[0][3]);
    const T beta = (sums[1][0] + sums[1][1]) + (sums[1][2] + sums[1][3]);
    const T gamma = (sums[2][0] + sums[2][1]) + (sums[2][2] + sums[2][3]);
    T cosine = 0;
    jacobi_rotation(alpha, beta, gamma, tol, rotation, cosine);
    lane_off = fmax(lane_off, cosine);
  }

  // Rotate: the pair's lower position takes s p + c q and the upper c p - s q (the rotated
  // columns also swap places); s = 0 is a plain swap.
  if constexpr (!odd) {
    if (owns_pair) {
      const T c = rotation.c, s = rotation.s;
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        const T p = lane.w[0][r], q = lane.w[1][r];
        lane.w[0][r] = fma(s, p, c * q);
        lane.w[1][r] = fma(c, p, -s * q);
      }
      if (uv)
#pragma unroll
        for (int r = 0; r < Rows; ++r) {
          const T p = lane.v[0][r], q = lane.v[1][r];
          lane.v[0][r] = fma(s, p, c * q);
          lane.v[1][r] = fma(c, p, -s * q);
        }
      const int id = lane.id[0];
      lane.id[0] = lane.id[1];
      lane.id[1] = id;
    }
  } else {
    // Column 1 is the lower position of pair l (p = column 1, q = right); column 0 the upper
    // of pair l - 1 (p = left, q = column 0), whose rotation the previous lane formed. W first,
    // then V's neighbours are fetched into the registers W's no longer need.
    const bool lower_active = owns_pair;
    const bool upper_active = lane_index >= 1 && 2 * lane_index < n_pad;
    const T c1 = rotation.c, s1 = rotation.s;
    const T c0 = __shfl_up_sync(full_mask, rotation.c, 1);
    const T s0 = __shfl_up_sync(full_mask, rotation.s, 1);
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      if (lower_active) lane.w[1][r] = fma(s1, lane.w[1][r], c1 * right[r]);
      if (upper_active) lane.w[0][r] = fma(c0, left[r], -s0 * lane.w[0][r]);
    }
    if (uv)
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        const T right_v = __shfl_down_sync(full_mask, lane.v[0][r], 1);
        const T left_v = __shfl_up_sync(full_mask, lane.v[1][r], 1);
        if (lower_active) lane.v[1][r] = fma(s1, lane.v[1][r], c1 * right_v);
        if (upper_active) lane.v[0][r] = fma(c0, left_v, -s0 * lane.v[0][r]);
      }
    const int right_id = __shfl_down_sync(full_mask, lane.id[0], 1);
    const int left_id = __shfl_up_sync(full_mask, lane.id[1], 1);
    if (lower_active) lane.id[1] = right_id;
    if (upper_active) lane.id[0] = left_id;
  }
}

// The largest |w_p . w_q| / sqrt(norm_p norm_q) over every pair of W's columns in shared memory (0
// for a negligible column, as the rotation's test has it), from the squared norms by column; every
// thread of the block calls it. A thread takes a 4 x 4 tile of the Gram matrix at a time: 8 loads
// per row for 16 multiply-adds, where a pair per thread would load 2 for 1.
template <class T>
__device__ T all_pairs_off(const BlockTeam& team, const T* W, int ldw, const T* norms, int M, int N) {
  constexpr int width = 4;
  const int groups = (N + width - 1) / width, tiles = groups * (groups + 1) / 2;
  T off = 0;
  for (int tile = threadIdx.x; tile < tiles; tile += blockDim.x) {
    int first = 0, rest = tile;  // the tile's groups of columns, first <= second
    while (rest >= groups - first) rest -= groups - first++;
    const int second = first + rest;
    const T* p_columns[width];
    const T* q_columns[width];
#pragma unroll
    for (int i = 0; i < width; ++i) {  // past N: column N - 1 again, its products ignored below
      p_columns[i] = W + min(width * first + i, N - 1) * ldw;
      q_columns[i] = W + min(width * second + i, N - 1) * ldw;
    }
    T gram[width][width] = {};
    for (int row = 0; row < M; ++row) {
      T p[width], q[width];
#pragma unroll
      for (int i = 0; i < width; ++i) {
        p[i] = p_columns[i][row];
        q[i] = q_columns[i][row];
      }
#pragma unroll
      for (int i = 0; i < width; ++i)
#pragma unroll
        for (int j = 0; j < width; ++j) gram[i][j] = fma(p[i], q[j], gram[i][j]);
    }
#pragma unroll
    for (int i = 0; i < width; ++i)
#pragma unroll
      for (int j = 0; j < width; ++j) {
        const int pc = width * first + i, qc = width * second + j;
        if (pc >= qc || qc >= N) continue;
        const T np = norms[pc], nq = norms[qc];
        if (np >= Precision<T>::negligible && nq >= Precision<T>::negligible)
          off = fmax(off, fabs(gram[i][j]) * rsqrt(np) * rsqrt(nq));
      }
  }
  return team.max(off);
}

// Sweeps of the ring until one finds every pair orthogonal to tol or max_sweeps have run; W and V
// (shared memory, by column) hold the result on return, and norms the squared column norms.
template <int Rows, class T>
__device__ SweepOutcome<T> ring_sweeps(const BlockTeam& team, unsigned char* smem,
                                       const OnChipLayout& L, const RingScratch<T>& scratch, bool uv,
                                       T tol, int max_sweeps) {
  T* W = reinterpret_cast<T*>(smem + L.w_offset);
  T* V = reinterpret_cast<T*>(smem + L.v_offset);
  T* norms = reinterpret_cast<T*>(smem + L.norms_offset);
  int* order = reinterpret_cast<int*>(smem + L.pos_offset);
  const int M = L.M, N = L.N, n_pad = L.n_pad;
  const int lane_index = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int row0 = warp * Rows;

  LaneColumns<T, Rows> lane;
  ring_load(lane, W, L.ldw, V, L.ldv, nullptr, M, N, n_pad, uv, row0, lane_index);
  SweepOutcome<T> outcome;
  T lane_off = 0;  // the largest scaled off-diagonal of this lane's pairs this sweep (warp 0's read)
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
      for (int w = 0; w < warps; ++w) sum += scratch.partials[w * ring_max_columns + position];
      const int id = scratch.ids[position];
      norms[id] = id < N ? sum : T(-1);  // the padding sorts last
    }
    __syncthreads();
    if (outcome.converged || outcome.sweeps >= max_sweeps) break;
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
    rank_sort_descending(team, norms, n_pad, order);  // de Rijk: by decreasing norm
    __syncthreads();
    ring_load(lane, W, L.ldw, V, L.ldv, order, M, N, n_pad, uv, row0, lane_index);
    ++outcome.sweeps;

    for (int round = 0; round < n_pad; round += 2) {  // n_pad is even
      ring_round<false>(lane, scratch, n_pad, lane_index, warp, warps, uv, tol, lane_off);
      ring_round<true>(lane, scratch, n_pad, lane_index, warp, warps, uv, tol, lane_off);
    }
    if (warp == 0) {
      const T off = warp_max(lane_off);
      if (lane_index == 0) *scratch.sweep_off = off;
      lane_off = 0;
    }
  }
  return outcome;
}

template <class T, int Rows>
__global__ void __launch_bounds__(ring_max_rows / Rows * 32, 1)
    svd_register_ring(Problem<T> P, OnChipLayout L, int lanes, Report report) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockTeam team{reinterpret_cast<unsigned long long*>(smem + L.team_offset)};
  const RingScratch<T> scratch(smem + L.bytes);
  for (std::int64_t matrix = blockIdx.x; matrix < P.batch; matrix += gridDim.x) {
    int exponent = 0;
    if (load_on_chip(team, smem, L, P, matrix, report, exponent)) {
      const SweepOutcome<T> outcome =
          ring_sweeps<Rows>(team, smem, L, scratch, P.uv, P.tol, P.max_sweeps);
      finish_on_chip(team, smem, L, P, matrix, lanes, exponent, outcome, report);
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

template <class T, int Rows>
void launch_ring(const Problem<T>& problem, const OnChipLayout& L, const Report& report,
                 cudaStream_t stream) {
  const int threads = (L.M + Rows - 1) / Rows * 32;
  int power = 32;  // finish_on_chip's groups: lanes per pair for a power-of-two team within ours
  while (2 * power <= threads) power *= 2;
  const int bytes = L.bytes + ring_scratch_bytes<T>();
  allow_shared_memory(svd_register_ring<T, Rows>, bytes);
  const auto blocks = unsigned(std::min<std::int64_t>(problem.batch, std::int64_t(1) << 30));
  svd_register_ring<T, Rows><<<blocks, threads, bytes, stream>>>(
      problem, L, lanes_per_pair(power, L.n_pad), report);
  detail::check_launch("svd", "svd_register_ring");
}

template <class T>
void run_in_registers(const Problem<T>& problem, const Report& report, cudaStream_t stream) {
  if (problem.batch == 0) return;
  require(fits_in_registers<T>(problem.m, problem.n, problem.uv), "svd", "m, n",
          "the register ring takes at most 64 columns of at most 64 rows");
  const OnChipLayout L = ring_layout(problem.m, problem.n, sizeof(T), problem.uv);
  if (L.M <= ring_short_columns)
    launch_ring<T, ring_short_rows>(problem, L, report, stream);
  else
    launch_ring<T, ring_long_rows>(problem, L, report, stream);
}

template bool fits_in_registers<float>(int, int, bool);
template bool fits_in_registers<double>(int, int, bool);
template void run_in_registers<float>(const Problem<float>&, const Report&, cudaStream_t);
template void run_in_registers<double>(const Problem<double>&, const Report&, cudaStream_t);

}  // namespace rooflab::jacobi
