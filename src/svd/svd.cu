// rooflab::svd: one-sided Jacobi SVD of one matrix (the method: src/svd/jacobi.cuh), and the
// global-memory schedules shared with rooflab::svd_batched. A matrix of at most 64 x 64 is solved
// in registers by the register ring (src/svd/register_ring.cu); a larger one that fits in one
// block's shared memory in a single kernel (the batched block-per-matrix kernel with batch 1);
// beyond, the Gram schedule: pairs of column blocks diagonalized through their Gram matrices, the
// columns in one cluster's shared memory where the matrix fits, else in global memory
// (jacobi::production_path decides).
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/device_features.hpp"
#include "core/device_info.hpp"
#include "core/pinned_buffer.hpp"
#include "core/stream_mark.hpp"
#include "core/vendor.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/warp_reduce.cuh"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {

template <class T>
T default_tolerance(int m, int n, bool uv) {
  const double rows = std::max(m, n);
  return T((uv ? std::sqrt(rows) : rows) * std::numeric_limits<T>::epsilon());
}

template <class T>
T resolve_options(const char* op, int m, int n, const SvdOptions& options) {
  require(m >= 1, op, "m", "must be at least 1, got " + std::to_string(m));
  require(n >= 1, op, "n", "must be at least 1, got " + std::to_string(n));
  require(options.max_sweeps >= 1, op, "opt.max_sweeps",
          "must be at least 1, got " + std::to_string(options.max_sweeps));
  // As LAPACK's dgesvj (CTOL >= 1): orthogonality below epsilon is not asked for, and the rotations'
  // arithmetic relies on it (rsqrt_of_normal).
  require(options.tol == 0 || (std::isfinite(options.tol) &&
                               T(options.tol) >= std::numeric_limits<T>::epsilon()),
          op, "opt.tol", "must be 0 (the default) or at least the type's epsilon");
  return options.tol > 0 ? T(options.tol) : default_tolerance<T>(m, n, options.compute_uv);
}

template <class T>
Problem<T> single_matrix_problem(const char* op, const T* A, int m, int n, int lda, T* S, T* U, int ldu,
                                 T* V, int ldv, const SvdOptions& options) {
  Problem<T> problem;
  problem.tol = resolve_options<T>(op, m, n, options);
  problem.A = A;
  problem.lda = lda;
  problem.m = m;
  problem.n = n;
  problem.batch = 1;
  problem.S = S;
  problem.U = U;
  problem.V = V;
  problem.ldu = ldu;
  problem.ldv = ldv;
  problem.max_sweeps = options.max_sweeps;
  problem.uv = options.compute_uv;
  return problem;
}

SvdInfo to_info(const MatrixStatus& status) {
  SvdInfo info;
  info.sweeps = status.sweeps;
  info.converged = status.converged != 0;
  info.off = status.off;
  return info;
}

template float default_tolerance<float>(int, int, bool);
template double default_tolerance<double>(int, int, bool);
template float resolve_options<float>(const char*, int, int, const SvdOptions&);
template double resolve_options<double>(const char*, int, int, const SvdOptions&);
template Problem<float> single_matrix_problem<float>(const char*, const float*, int, int, int, float*, float*,
                                                     int, float*, int, const SvdOptions&);
template Problem<double> single_matrix_problem<double>(const char*, const double*, int, int, int, double*,
                                                       double*, int, double*, int, const SvdOptions&);

namespace {

// ---------------------------------------------------------------------------------------------
// The global-memory path. Every matrix of the batch has its own W (M x N), V (N x N), tracked
// norms, positions and convergence state; matrices that converge drop out of later sweeps.

template <class T>
struct GlobalState {
  Problem<T> P;
  int M = 0, N = 0;
  // Positions of the ordering: N rounded up to even, or for the blocked schedule an even number
  // of blocks of `block` columns; positions holding a column index >= N are padding.
  int positions = 0;
  int block = 1, block_positions = 0;
  std::int64_t ldw = 0, ldv = 0;
  T* W = nullptr;
  T* V = nullptr;
  T* norms = nullptr;         // positions per matrix: tracked squared norms, then sigma
  T* coefficients = nullptr;  // positions per matrix: Gram-Schmidt scratch
  // Positions per matrix, by column: error scales (jacobi_math.hpp, RoundingNoise).
  T* error_scales = nullptr;
  int* pos = nullptr;         // positions per matrix: column at each position, then output order
  unsigned long long* max_bits = nullptr;  // per matrix: bits of max |a| as a double
  unsigned long long* off_bits = nullptr;  // per matrix: bits of this sweep's max cosine
  unsigned long long* test_bits = nullptr;  // per matrix: bits of the all-pairs test's max cosine
  int* test_arrivals = nullptr;  // per matrix: the all-pairs test's blocks done this sweep
  int* exponent = nullptr;
  int* active = nullptr;  // 1 while the matrix still sweeps
  int* sweeps = nullptr;
  int* converged = nullptr;
  int* bad = nullptr;
  unsigned* active_count = nullptr;  // this sweep's count of matrices that sweep on
  // The host-driven schedules: the previous sweep's count (null in the first sweep), which the
  // sweep's start copies to the host's page-locked `published_count`.
  const unsigned* previous_count = nullptr;
  unsigned* published_count = nullptr;
  Report report;

  __device__ T* w(std::int64_t matrix) const { return W + matrix * ldw * N; }
  __device__ T* v(std::int64_t matrix) const { return V + matrix * ldv * N; }
  __device__ T* norms_of(std::int64_t matrix) const { return norms + matrix * positions; }
  __device__ int* pos_of(std::int64_t matrix) const { return pos + matrix * positions; }
  __device__ T* error_scales_of(std::int64_t matrix) const { return error_scales + matrix * positions; }
};

// Sigma of a column from its fresh squared norm: 0 for a negligible column or rounding noise.
template <class T>
__device__ __forceinline__ T sigma_from_norm2(T norm2, T error_scale) {
  return norm2 >= Precision<T>::negligible && !is_rounding_noise(norm2, error_scale) ? sqrt(norm2) : T(0);
}

constexpr int global_threads = 256;
constexpr int global_warps = global_threads / 32;

// Hopper's features, in device code compiled for sm_90 on (and in the host pass, which sees every
// kernel): thread-block clusters and programmatic dependent launch. The host launches the kernels
// that need them only where DeviceFeatures says the loaded code has them (core/device_features.hpp).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define ROOFLAB_HAS_CLUSTERS 1
#define ROOFLAB_HAS_PROGRAMMATIC_LAUNCH 1
#else
#define ROOFLAB_HAS_CLUSTERS 0
#define ROOFLAB_HAS_PROGRAMMATIC_LAUNCH 0
#endif

// The kernels that launch_after_previous launches (the setup and final kernels, the Gram kernels
// and the small kernels of a sweep's start and end) follow one another with programmatic dependent
// launch (Hopper): a kernel's blocks may start while the one before it still runs, and wait here
// for its results, so the launches do not each pay the whole latency. Every block waits before it
// reads or returns, so a kernel completes only after the one before it did (outside such a launch
// the wait returns at once).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if ROOFLAB_HAS_PROGRAMMATIC_LAUNCH
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ double bits_as_double(unsigned long long bits) {
  return __longlong_as_double(static_cast<long long>(bits));
}

// Raises `word`, the bits of a non-negative double, to `value` (off_bits, test_bits).
__device__ __forceinline__ void raise_to(unsigned long long* word, double value) {
  if (value > 0) atomicMax(word, static_cast<unsigned long long>(__double_as_longlong(value)));
}

// Max |a| of every matrix, as the bits of a double (non-negative doubles order like their bits;
// NaN and Inf order above every finite value, so one atomicMax also finds them). A block per
// `columns` columns of a matrix, a warp per column and its lanes down the rows.
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
  for (int j = first + int(threadIdx.x >> 5); j < last; j += global_warps) {
    const T* column = A + std::int64_t(j) * P.lda;
    for (int i = lane; i < P.m; i += 32)
      local = max(local, static_cast<unsigned long long>(__double_as_longlong(fabs(double(column[i])))));
  }
  for (int offset = 16; offset > 0; offset >>= 1)
    local = max(local, __shfl_xor_sync(0xffffffffu, local, offset));
  if ((threadIdx.x & 31) == 0) atomicMax(&G.max_bits[matrix], local);
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
  G.active[matrix] = !bad;
  G.sweeps[matrix] = 0;
  G.converged[matrix] = 0;
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
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
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
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < v_per_matrix * P.batch;
       e += stride) {
    const std::int64_t matrix = e / v_per_matrix, at = e % v_per_matrix;
    const std::int64_t i = at % G.ldv, j = at / G.ldv;
    G.v(matrix)[i + j * G.ldv] = i == j ? T(1) : T(0);
  }
}

// Squared column norms, a warp per column: the initial tracked norms and error scales (final =
// false) or sigma (final = true, negligible columns and rounding noise 0). Padding positions get
// -1 so that they sort last.
template <class T>
__global__ void __launch_bounds__(global_threads) global_column_norms(GlobalState<T> G, bool final) {
  wait_for_previous_kernel();
  const int lane = threadIdx.x & 31;
  const std::int64_t total = std::int64_t(G.P.batch) * G.positions;
  const std::int64_t warps = std::int64_t(gridDim.x) * global_warps;
  for (std::int64_t item = std::int64_t(blockIdx.x) * global_warps + (threadIdx.x >> 5); item < total;
       item += warps) {
    const std::int64_t matrix = item / G.positions;
    const int c = int(item % G.positions);
    if (G.bad[matrix]) continue;
    T sum = c < G.N ? partial_norm2(G.w(matrix) + c * G.ldw, RowWalk(G.M, 32, lane, 0)) : T(0);
    sum = group_sum(sum, 32);
    if (lane != 0) continue;
    if (!final) {
      G.norms_of(matrix)[c] = c < G.N ? sum : T(-1);
      if (c < G.N) G.error_scales_of(matrix)[c] = sum;
    } else if (c < G.N) {
      G.norms_of(matrix)[c] = sigma_from_norm2(sum, G.error_scales_of(matrix)[c]);
    }
  }
}

// The next kernel may launch once every block of this one has called this (or exited). Called
// late, before a block's last stores: called first thing, the next kernel's waiting blocks took
// the SMs early and 2048 x 2048 double went from 127 to 149 ms on the H200 (no early start: 133).
__device__ __forceinline__ void let_next_kernel_start() {
#if ROOFLAB_HAS_PROGRAMMATIC_LAUNCH
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
// First thing in a small kernel (a few blocks, little work): the next kernel launches at once and
// its blocks wait; this one waits for the one before it.
__device__ __forceinline__ void chain_small_kernel() {
  let_next_kernel_start();
  wait_for_previous_kernel();
}

// Start of a sweep, a block per matrix: positions sorted by decreasing tracked norm.
template <class T>
__device__ void sweep_start(const GlobalState<T>& G, const BlockTeam& team, std::int64_t matrix) {
  if (!G.active[matrix]) return;
  rank_sort_descending(team, G.norms_of(matrix), G.positions, G.pos_of(matrix));
  if (team.rank() == 0) G.off_bits[matrix] = 0;
}

// One round: a warp per pair of every active matrix.
template <class T>
__device__ void round_work(const GlobalState<T>& G, int round, std::int64_t first_warp,
                           std::int64_t warps) {
  const int lane = threadIdx.x & 31;
  const int pairs = pairs_in_round(round, G.positions);
  const std::int64_t total = std::int64_t(G.P.batch) * pairs;
  for (std::int64_t item = first_warp; item < total; item += warps) {
    const std::int64_t matrix = item / pairs;
    if (!G.active[matrix]) continue;  // uniform over the warp
    const int pair = int(item % pairs);
    const T cosine = process_pair(G.w(matrix), G.ldw, RowWalk(G.M, 32, lane, 0), G.v(matrix), G.ldv,
                                  RowWalk(G.N, 32, lane, 0), G.P.uv, G.norms_of(matrix),
                                  G.error_scales_of(matrix), G.pos_of(matrix),
                                  first_position(round, pair), true, G.P.tol, 32, G.N);
    if (lane == 0) raise_to(&G.off_bits[matrix], double(cosine));
  }
}

// End of a sweep, a thread per matrix: converged when no pair needed a rotation, or when the
// all-pairs test took the matrix (`tested`) and found every pair orthogonal; that test then counts
// as its last sweep.
template <class T>
__device__ void sweep_end(const GlobalState<T>& G, std::int64_t matrix, unsigned* active_count,
                          bool tested) {
  if (!G.active[matrix]) return;
  const int sweeps = ++G.sweeps[matrix];
  const double off = bits_as_double(G.off_bits[matrix]);
  // The test's blocks raised test_bits by atomics in this kernel: read past the L1 cache.
  const unsigned long long test_bits =
      tested ? *static_cast<volatile unsigned long long*>(&G.test_bits[matrix]) : 0;
  if (!(off > double(G.P.tol))) {
    G.converged[matrix] = 1;
    G.active[matrix] = 0;
  } else if (sweeps >= G.P.max_sweeps) {
    G.active[matrix] = 0;
  } else if (tested && !(bits_as_double(test_bits) > double(G.P.tol))) {
    ++G.sweeps[matrix];
    G.converged[matrix] = 1;
    G.active[matrix] = 0;
    G.off_bits[matrix] = test_bits;
  } else {
    atomicAdd(active_count, 1u);
  }
}

// The previous sweep's count of matrices that sweep on, final once a sweep starts (its kernels
// all completed), to the host: it decides from it whether to queue the rest of this sweep. Called
// after the wait by the sweep's first kernel (and harmlessly by later ones of the same sweep).
template <class T>
__device__ void publish_previous_count(const GlobalState<T>& G) {
  if (G.previous_count != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
    *G.published_count = *G.previous_count;
}

// A sort by decreasing key (ties by index) in chunks of 32 keys: lane l of a block of `warps` warps
// ranks key 32 chunk + l among all `count`, each warp counting the keys ahead of it in its share of
// them, the warps' counts added in shared memory, and order[rank] gets its index. With a block per
// 128 columns, each thread running through every norm, the sweep's sort took 6.5 us at 256 x 256
// (H200, Nsight Compute); with one block per matrix, 0.53 ms at 2048 x 2048. Every thread of the
// block calls it.
constexpr int sort_columns = 32;
constexpr int sort_warps = 8;
constexpr int sort_threads = 32 * sort_warps;
template <int warps, class T>
__device__ void rank_chunk(const T* key, int count, int chunk, int* order) {
  __shared__ int counted[warps][sort_columns];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = chunk * sort_columns + lane;
  const T mine = c < count ? key[c] : T(0);
  int rank = 0;
#pragma unroll 8
  for (int o = warp; o < count; o += warps) rank += ahead_when_descending(key[o], o, mine, c);
  counted[warp][lane] = rank;
  __syncthreads();
  if (warp != 0) return;
  for (int w = 1; w < warps; ++w) rank += counted[w][lane];
  if (c < count) order[rank] = c;
}

// The sweep's start for the host-driven schedules: the count to the host, and each active
// matrix's positions sorted by tracked norm.
template <class T>
__global__ void __launch_bounds__(sort_threads) global_sweep_start(GlobalState<T> G, int chunks) {
  chain_small_kernel();
  publish_previous_count(G);
  const std::int64_t matrix = blockIdx.x / chunks;
  const int chunk = int(blockIdx.x % chunks);
  if (!G.active[matrix]) return;  // uniform over the block
  rank_chunk<sort_warps>(G.norms_of(matrix), G.positions, chunk, G.pos_of(matrix));
  if (chunk == 0 && threadIdx.x == 0) {
    G.off_bits[matrix] = 0;
    G.test_bits[matrix] = 0;  // the all-pairs test's, where the schedule has one
    G.test_arrivals[matrix] = 0;
  }
}

template <class T>
__global__ void __launch_bounds__(global_threads) global_round(GlobalState<T> G, int round) {
  round_work(G, round, std::int64_t(blockIdx.x) * global_warps + (threadIdx.x >> 5),
             std::int64_t(gridDim.x) * global_warps);
}

template <class T>
__global__ void global_sweep_end(GlobalState<T> G) {
  chain_small_kernel();
  const std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (matrix < G.P.batch) sweep_end(G, matrix, G.active_count, false);
}

// A whole sweep in one cooperative launch: the grid-wide barrier replaces the launch boundary
// between rounds.
template <class T>
__global__ void __launch_bounds__(global_threads) global_sweep_cooperative(GlobalState<T> G) {
  namespace cg = cooperative_groups;
  __shared__ unsigned long long scratch[32];
  const cg::grid_group grid = cg::this_grid();
  publish_previous_count(G);
  for (std::int64_t matrix = blockIdx.x; matrix < G.P.batch; matrix += gridDim.x)
    sweep_start(G, BlockTeam{scratch}, matrix);
  grid.sync();
  for (int round = 0; round < G.positions; ++round) {
    round_work(G, round, std::int64_t(blockIdx.x) * global_warps + (threadIdx.x >> 5),
               std::int64_t(gridDim.x) * global_warps);
    grid.sync();
  }
  for (std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; matrix < G.P.batch;
       matrix += std::int64_t(gridDim.x) * blockDim.x)
    sweep_end(G, matrix, G.active_count, false);
}

// ---------------------------------------------------------------------------------------------
// The blocked schedule (the ladder's rung 5). The sorted positions are cut into blocks of b
// columns; the odd-even ring runs over blocks, and a block of threads takes each pair of blocks:
// it gathers their 2b columns of W into shared memory, sweeps them once with the on-chip team
// routine (accumulating the rotations into a 2b x 2b Q instead of V), writes them back, applies Q
// to the 2b columns of V (V_pair <- V_pair Q, rows streamed through the same shared memory) and
// swaps the two blocks' positions. Each column pair of the matrix meets once per outer sweep, and
// the sweep is converged when every pair of blocks arrived orthogonal.

// One pair of blocks' shared memory: W's 2b columns (ld = shared_leading_dimension(M), which also
// holds V's 2b columns while Q is applied: N <= M), Q, tracked norms, error scales and positions
// of the 2b columns, their global column indices and the team's reduction scratch.
struct BlockedLayout {
  int slots = 0, ldb = 0;
  int w_offset = 0, q_offset = 0, norms_offset = 0, error_scales_offset = 0, pos_offset = 0,
      columns_offset = 0, team_offset = 0;
  int bytes = 0;
};

__host__ __device__ inline BlockedLayout blocked_layout(int M, int block, int element_bytes) {
  BlockedLayout L;
  L.slots = 2 * block;
  L.ldb = shared_leading_dimension(M);
  long long offset = 0;
  const auto take = [&offset](long long bytes) {
    const long long at = offset;
    offset += (bytes + 15) / 16 * 16;
    return int(at < (1ll << 30) ? at : (1ll << 30));
  };
  L.w_offset = take((long long)L.ldb * L.slots * element_bytes);
  L.q_offset = take((long long)L.slots * L.slots * element_bytes);
  L.norms_offset = take((long long)L.slots * element_bytes);
  L.error_scales_offset = take((long long)L.slots * element_bytes);
  L.pos_offset = take((long long)L.slots * 4);
  L.columns_offset = take((long long)L.slots * 4);
  L.team_offset = take(32 * 8);
  L.bytes = int(offset < (1ll << 30) ? offset : (1ll << 30));
  return L;
}

// One inner sweep per pair of blocks: more sweeps barely cut the outer sweeps (a model of the
// method: 9 to 11 outer sweeps at n = 128 to 512 with either) and double the rotations.
constexpr int inner_sweeps = 1;
constexpr int blocked_max_threads = 512;

// One pair of blocks: `item` counts the pairs of round `round` over the batch (matrix-major).
template <class T>
__device__ void blocked_step(const GlobalState<T>& G, const BlockedLayout& L, int round,
                             std::int64_t item, int lanes, unsigned char* smem) {
  const BlockTeam team{reinterpret_cast<unsigned long long*>(smem + L.team_offset)};
  const int pairs = pairs_in_round(round, G.block_positions);
  const std::int64_t matrix = item / pairs;
  if (!G.active[matrix]) return;  // uniform over the block
  const int b = G.block, slots = L.slots, N = G.N, M = G.M;
  const int first = first_position(round, int(item % pairs)) * b;
  T* Wb = reinterpret_cast<T*>(smem + L.w_offset);
  T* Q = reinterpret_cast<T*>(smem + L.q_offset);
  T* inner_norms = reinterpret_cast<T*>(smem + L.norms_offset);
  T* inner_scales = reinterpret_cast<T*>(smem + L.error_scales_offset);
  int* inner_pos = reinterpret_cast<int*>(smem + L.pos_offset);
  int* columns = reinterpret_cast<int*>(smem + L.columns_offset);
  int* pos = G.pos_of(matrix);
  T* error_scales = G.error_scales_of(matrix);
  T* W = G.w(matrix);
  T* V = G.v(matrix);
  const int rank = team.rank(), threads = team.size();

  for (int s = rank; s < slots; s += threads) {
    const int c = pos[first + s];
    columns[s] = c;
    inner_scales[s] = c < N ? error_scales[c] : T(0);
  }
  team.sync();
  for (int e = rank; e < M * slots; e += threads) {
    const int i = e % M, s = e / M, c = columns[s];
    Wb[i + s * L.ldb] = c < N ? W[i + c * G.ldw] : T(0);  // padding: a zero column, never rotated
  }
  if (G.P.uv)
    for (int e = rank; e < slots * slots; e += threads) Q[e] = e % slots == e / slots ? T(1) : T(0);
  team.sync();

  const SweepOutcome<T> outcome =
      team_sweeps(team, Wb, L.ldb, M, slots, Q, slots, slots, G.P.uv, inner_norms, inner_scales, false,
                  inner_pos, G.P.tol, inner_sweeps, lanes);

  for (int e = rank; e < M * slots; e += threads) {
    const int i = e % M, s = e / M, c = columns[s];
    if (c < N) W[i + c * G.ldw] = Wb[i + s * L.ldb];
  }
  T* norms = G.norms_of(matrix);
  for (int s = rank; s < slots; s += threads)
    if (columns[s] < N) {
      norms[columns[s]] = inner_norms[s];
      error_scales[columns[s]] = inner_scales[s];
    }
  if (G.P.uv && outcome.first_off > G.P.tol) {  // otherwise nothing rotated: Q = I
    team.sync();  // Wb is free: V's 2b columns (N <= M rows) go there
    for (int e = rank; e < N * slots; e += threads) {
      const int i = e % N, s = e / N, c = columns[s];
      Wb[i + s * L.ldb] = c < N ? V[i + c * G.ldv] : T(0);
    }
    team.sync();
    for (int e = rank; e < N * slots; e += threads) {
      const int i = e % N, s = e / N, c = columns[s];
      if (c >= N) continue;
      T sum = 0;
      for (int from = 0; from < slots; ++from) sum = fma(Wb[i + from * L.ldb], Q[from + s * slots], sum);
      V[i + c * G.ldv] = sum;
    }
  }
  for (int s = rank; s < slots; s += threads) pos[first + (s + b) % slots] = columns[s];
  if (rank == 0) raise_to(&G.off_bits[matrix], double(outcome.first_off));
}

template <class T>
__global__ void __launch_bounds__(blocked_max_threads)
    blocked_round(GlobalState<T> G, BlockedLayout L, int round, int lanes) {
  extern __shared__ __align__(16) unsigned char smem[];
  blocked_step(G, L, round, blockIdx.x, lanes, smem);
}

// The whole blocked iteration in one cooperative launch: grid-wide barriers replace the launches
// between rounds and the host's convergence test between sweeps (each sweep counts its active
// matrices in its own counter, read by every block after the barrier, so all leave together).
template <class T>
__global__ void __launch_bounds__(blocked_max_threads)
    blocked_persistent(GlobalState<T> G, BlockedLayout L, int lanes, unsigned* active_counts) {
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char smem[];
  const cg::grid_group grid = cg::this_grid();
  const BlockTeam team{reinterpret_cast<unsigned long long*>(smem + L.team_offset)};
  for (int sweep = 0; sweep < G.P.max_sweeps; ++sweep) {
    for (std::int64_t matrix = blockIdx.x; matrix < G.P.batch; matrix += gridDim.x)
      sweep_start(G, team, matrix);
    grid.sync();
    for (int round = 0; round < G.block_positions; ++round) {
      const std::int64_t items = std::int64_t(G.P.batch) * pairs_in_round(round, G.block_positions);
      for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        blocked_step(G, L, round, item, lanes, smem);
        __syncthreads();  // the next pair reuses the shared memory
      }
      grid.sync();
    }
    for (std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; matrix < G.P.batch;
         matrix += std::int64_t(gridDim.x) * blockDim.x)
      sweep_end(G, matrix, &active_counts[sweep], false);
    grid.sync();
    if (*static_cast<volatile unsigned*>(&active_counts[sweep]) == 0) break;
  }
}

// ---------------------------------------------------------------------------------------------
// The Gram schedule (the ladder's rung 7): the blocked ring with the inner work moved off the
// columns. Blocks of 16 columns ride the same odd-even ring; for each pair of blocks of a round
// (32 columns, a warp's width) three kernels run: gram_partials forms the pair's Gram matrix
// G = W_p^T W_p in slices of rows, gram_solve diagonalizes G by two-sided Jacobi (a thread
// per 2 x 2 block of G and Q in shared memory) and sorts the eigenvalues,
// and gram_apply replaces the pair's columns of W and V by W_p Q and V_p Q. The columns cross
// memory three times per pair of blocks, and an inner round touches 32 x 32 numbers where the
// blocked schedule's touches all M rows of the 2b columns. When a round's solves alone fill the
// GPU (a large batch), or the columns are short, the solve forms G itself (form_gram) and the
// partials kernel drops out.
// The Gram test is the column test (|G_pq| <= tol sqrt(G_pp G_qq) on freshly formed dot
// products), so convergence means the same.

constexpr int gram_width = 32;              // columns of a pair of blocks: a lane each
constexpr int gram_block = gram_width / 2;  // columns of a block
constexpr int gram_tile_rows = 64;          // rows staged in shared memory at a time
constexpr int gram_threads = 128;
// One inner sweep per pair of blocks: on the H200, 256 x 256 in double took 10.0, 13.3 and 17.2 ms
// with 1, 2 and 3 (the outer sweeps barely fall).
constexpr int gram_inner_sweeps = 1;
// Every gram_full_inner_period-th round of an outer sweep (round 0 among them, and at least two a
// sweep: inner_sweep_is_full) the inner sweep takes every pair of the 32 columns (31 rounds); the
// others take only the 256 pairs between the two blocks (16 rounds), as the pairs within a block
// met in round 0. The outer sweeps grow a little, the solves shrink more: on the H200, double, with
// 2 such rounds a sweep against every round full, 100 x 100 1.52 against 1.82 ms (10 against 9
// sweeps), 256 x 256 3.16 against 3.43 ms (11 against 9), 1024 x 1024 19.8 against 21.4 ms. Once
// the rest of a round had shrunk, every 5th round against 2 evenly spaced ones a sweep (the same
// at 100 and 125 columns, whose rings have 8 positions), same run: 256 x 256 1.84, 1.71, 1.89
// against 2.01, 1.99, 1.88 ms (seeds 1, 2, 3); 512 x 512 4.95, 5.46 against 5.03, 5.21 ms (seeds
// 1, 2); 1024 x 1024 14.5 against 15.2 ms. Every 4th: 1.91, 2.07, 2.12; 4.93, 5.14; 15.6 ms.
constexpr int gram_full_inner_period = 5;

// The inner ordering of a pair of blocks' solve in one round: the circle method over the 32
// columns, or the cross ordering (jacobi_math.hpp).
struct InnerOrder {
  bool cross = false;
  __device__ int seat(int column) const {
    return cross ? cross_seat(column, 0, gram_width) : circle_seat(column, 0, gram_width);
  }
  __device__ int next_seat(int seat) const {
    return cross ? next_cross_seat(seat, gram_width) : next_circle_seat(seat, gram_width);
  }
  // Rounds of one inner sweep; then every column is back in its first seat.
  __device__ int rounds() const { return cross ? gram_block : gram_width - 1; }
  // Whether G_kl is one of the pairs this ordering rotates.
  __device__ bool rotates(int k, int l) const {
    return cross ? (k < gram_block) != (l < gram_block) : k != l;
  }
};
// The Gram matrices' row slices: enough for this many partials blocks per SM in a round (a long
// matrix's columns are summed by several blocks). The kernel takes 128 registers, so 4 blocks are
// resident: on the H200 at 7b19479, 4 against 8 took 2048 x 2048 double to 91.9 from 94.5 ms (the
// round's partials 17.3 against 18.4 us: one wave of longer slices); 1024 x 1024 has 16 slices of
// one tile either way. (At 5a872e0, 8 against 2: 1024 x 1024 27.3 against 28.4 ms.) Tiles by
// asynchronous copies instead of registers (6 blocks per SM by shared memory) took 7.65 against
// 6.65 us a round at 1024 x 1024, the same 18.4 us at 2048 x 2048.
constexpr int gram_partial_blocks_per_sm = 4;
// Rows of W or V per apply block (a warp per 16 of them), and its blocks per SM. The rows arrive by
// asynchronous copies, which hold no registers. On the H200, a round of a batch of 100 x 256 x 256
// double: 64 rows 68 us at 5, 6 or 7 blocks per SM (71.5 with the rows staged in registers at 4),
// 128 rows 62.5 us at 4 blocks (69 at 3), 256 rows 74 us at 2; 2048 x 2048: 49.6, 47.2, 53.6 us.
// 16-byte copies and stores then took the 128-row rounds to 52 and 42 us.
constexpr int gram_apply_rows = 128;
constexpr int gram_apply_blocks_per_sm = 4;
constexpr int gram_apply_threads = 2 * gram_apply_rows;
// Threads of a pair's solve: one per 2 x 2 block of the 32 x 32 Gram matrix in each round.
constexpr int gram_solve_threads = (gram_width / 2) * (gram_width / 2);

// A round's scratch, per pair of blocks of the round (the batch's pairs, matrix-major).
template <class T>
struct GramWork {
  T* partials = nullptr;    // per pair and slice of rows: the partial Gram, G_kl at k * 32 + l
  T* rotations = nullptr;   // per pair: Q, row = input position, column = output position
  int* in_columns = nullptr;   // per pair: W's column at each input position (>= N: padding)
  int* out_columns = nullptr;  // per pair: W's column that receives each output
  int* rotated = nullptr;      // per pair: 0 when the pair was orthogonal and is left alone
  int slices = 1, slice_rows = 0;
  // No slices: the round's solves form G themselves (form_gram).
  __host__ __device__ bool solve_forms_gram() const { return slices == 0; }
};

// Pair `item` of round `round`: its matrix and first position; false when the matrix stopped.
template <class T>
__device__ bool gram_pair(const GlobalState<T>& G, int round, std::int64_t item, std::int64_t& matrix,
                          int& first) {
  const int pairs = pairs_in_round(round, G.block_positions);
  matrix = item / pairs;
  first = first_position(round, int(item % pairs)) * gram_block;
  return G.active[matrix];
}

// The 16 x 8 x 4 double-precision tensor-core product D += A B of a warp (DMMA, sm_90): lane
// (g, t) = (lane / 4, lane % 4) holds A_gt and A_g+8,t, B_tg, and in d[e] the element of D at
// (mma_row(e), mma_col(e)). On the H200 it runs at twice the rate of the 8 x 8 x 4 form (64
// against 33 TFLOP/s with every SM busy), whose pipe was the apply's busiest unit.
__device__ __forceinline__ void mma_16x8x4(double (&d)[4], double a0, double a1, double b) {
#if __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(b));
#elif __CUDA_ARCH__ >= 800
  // Ampere and Ada have only the 8 x 8 x 4 form: rows 0-7 (a0) and rows 8-15 (a1) one each.
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a0), "d"(b));
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[2]), "+d"(d[3])
      : "d"(a1), "d"(b));
#else
  // Turing has no double tensor cores: the same product and layout by shuffles and FMAs. Lane
  // (group, in_group) holds A's rows group and group + 8 at column in_group, and B's column group
  // at row in_group; its outputs are rows group, group + 8 by columns 2 in_group, 2 in_group + 1.
  const int lane = threadIdx.x & 31, group = lane >> 2, in_group = lane & 3;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const double low = __shfl_sync(0xffffffffu, a0, 4 * group + k);
    const double high = __shfl_sync(0xffffffffu, a1, 4 * group + k);
    const double b0 = __shfl_sync(0xffffffffu, b, 8 * in_group + k);
    const double b1 = __shfl_sync(0xffffffffu, b, 8 * in_group + 4 + k);
    d[0] = fma(low, b0, d[0]);
    d[1] = fma(low, b1, d[1]);
    d[2] = fma(high, b0, d[2]);
    d[3] = fma(high, b1, d[3]);
  }
#endif
}
// Row and column, within the 16 x 8 product, of element e of the lane's accumulator.
__device__ __forceinline__ int mma_row(int e) { return ((threadIdx.x & 31) >> 2) + 8 * (e >> 1); }
__device__ __forceinline__ int mma_col(int e) { return 2 * (threadIdx.x & 3) + (e & 1); }

// One element from global to shared memory by an asynchronous copy (cp.async), which holds no
// register while it is in flight: a block keeps a whole tile of rows loading with few registers,
// so more blocks share an SM. With `valid` false the element is zero and nothing is read.
// Turing has no cp.async: there the copies are plain loads and stores, done when the call returns,
// so that committing and waiting have nothing to do.
template <class T>
__device__ __forceinline__ void copy_async(T* shared, const T* global, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(address), "l"(global),
               "n"(int(sizeof(T))), "r"(valid ? int(sizeof(T)) : 0)
               : "memory");
#else
  *shared = valid ? *global : T(0);
#endif
}
// 16 bytes of a column (16 / sizeof(T) consecutive elements, both addresses 16-byte aligned) from
// global to shared memory, the first `valid` elements read and the rest zero: cp.async.cg, a
// quarter or half the copies of the element form, and L1 left alone.
template <class T>
__device__ __forceinline__ void copy_async_chunk(T* shared, const T* global, int valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid * int(sizeof(T)))
               : "memory");
#else
  for (int e = 0; e < int(16 / sizeof(T)); ++e) shared[e] = e < valid ? global[e] : T(0);
#endif
}
// Closes the copies issued since the last call into a group.
__device__ __forceinline__ void commit_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most `pending` of this thread's groups are still in flight (then a barrier
// makes every thread's copies visible to the block).
template <int pending>
__device__ __forceinline__ void wait_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

// Issues, as one group, the asynchronous copies of rows r0 .. r0 + tile_rows - 1 of `slots` (a
// pair's 32) columns of X (leading dimension ld, `rows` rows) into tile, column slot s at tile[s * ldt];
// column_of(slot) names slot's column, those >= N and the rows past `rows` read as zero. 16-byte
// copies when every column starts on 16 bytes, else one element a copy; `threads` threads share them.
// With `commit` false the copies join the group the caller commits next.
template <int tile_rows, int threads, int slots = gram_width, bool commit = true, class T, class ColumnOf>
__device__ __forceinline__ void copy_tile_async(T* tile, int ldt, const T* X, std::int64_t ld, int rows,
                                                int N, int r0, ColumnOf column_of) {
  constexpr int chunk = 16 / sizeof(T), chunks = tile_rows / chunk;  // 16-byte copies per column
  if (ld % chunk == 0) {
#pragma unroll 4
    for (int i = 0; i < tile_rows * slots / chunk / threads; ++i) {
      const int e = threadIdx.x + i * threads, slot = e / chunks, r = chunk * (e % chunks);
      const int c = column_of(slot);
      const int valid = c < N ? max(0, min(chunk, rows - r0 - r)) : 0;
      copy_async_chunk(tile + slot * ldt + r, valid > 0 ? X + r0 + r + c * ld : X, valid);
    }
  } else {
#pragma unroll 4
    for (int i = 0; i < tile_rows * slots / threads; ++i) {
      const int e = threadIdx.x + i * threads, slot = e / tile_rows, r = e % tile_rows;
      const int c = column_of(slot);
      const bool valid = r0 + r < rows && c < N;
      copy_async(tile + slot * ldt + r, valid ? X + r0 + r + c * ld : X, valid);
    }
  }
  if (commit) commit_copies();
}

// Calls consume(tile) on the tiles of rows begin .. end - 1 in order, gram_tile_rows at a time,
// each loaded by load(r0, tile) into one of two buffers of tile_size while the one before it is
// consumed. Every thread of the block calls it.
template <class T, class Load, class Consume>
__device__ __forceinline__ void stream_tiles(int begin, int end, T* tiles, int tile_size, Load load,
                                             Consume consume) {
  load(begin, tiles);
  int buffer = 0;
  for (int r0 = begin; r0 < end; r0 += gram_tile_rows, buffer ^= 1) {
    if (r0 + gram_tile_rows < end) {
      load(r0 + gram_tile_rows, tiles + (buffer ^ 1) * tile_size);  // consumed before the last barrier
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();  // the tile is in, from every thread
    consume(tiles + buffer * tile_size);
    __syncthreads();  // consumed: the next loads may overwrite it
  }
}

// Adds a tile's rows to blocks of the product X^T Y on the tensor cores (x_tile and y_tile hold
// column s of their rows at [s * ld]): X's columns 16 row_block .. 16 row_block + 15 against
// `count` blocks of 8 of Y's columns from 8 first_block; sum[b][e] accumulates element
// (16 row_block + mma_row(e), 8 (first_block + b) + mma_col(e)). With x_tile = y_tile, a block of
// the Gram matrix.
template <int count>
__device__ __forceinline__ void add_tile_product(const double* x_tile, const double* y_tile, int ld,
                                                 int row_block, int first_block, double (&sum)[count][4]) {
  const int lane = threadIdx.x & 31, group = lane >> 2, in_group = lane & 3;
  const double* a = x_tile + (16 * row_block + group) * ld + in_group;
  const double* b = y_tile + (8 * first_block + group) * ld + in_group;
  // Unrolled 4 times the partials needed 150 registers, more than their 4 blocks per SM allow. A
  // single block (a solve's share) is unrolled whole: every load is issued before the products
  // wait on them, which matters where y_tile is another block's shared memory.
  constexpr int unroll = count == 1 ? gram_tile_rows / 4 : 2;
#pragma unroll unroll
  for (int k = 0; k < gram_tile_rows; k += 4)
#pragma unroll
    for (int nt = 0; nt < count; ++nt) mma_16x8x4(sum[nt], a[k], a[8 * ld + k], b[8 * nt * ld + k]);
}
// The same in float, with FMAs: a thread's patch, X's columns i0 .. i0 + R - 1 against Y's
// j0 .. j0 + C - 1, accumulated in sum[c][r].
template <int R, int C>
__device__ __forceinline__ void add_tile_product(const float* x_tile, const float* y_tile, int ld, int i0, int j0,
                                                 float (&sum)[C][R]) {
#pragma unroll 4
  for (int k = 0; k < gram_tile_rows; ++k)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < C; ++c)
        sum[c][r] = fma(x_tile[(i0 + r) * ld + k], y_tile[(j0 + c) * ld + k], sum[c][r]);
}
// A 32 x 32 product shared by the gram_threads threads of a block (the partials' Gram, the
// all-pairs test's pair of groups): in double warp w holds the 16 x 16 quarter at rows 16 (w % 2)
// and column blocks 2 (w / 2) + b, element a of block b as add_tile_gram lays it out; in float
// thread t the 2 x 4 patch at (2 (t % 16), 4 (t / 16)), element (a, b) at sum[b][a].
template <class T>
struct GramQuarter {
  static constexpr int outer = sizeof(T) == 8 ? 2 : 4, inner = 8 / outer;
  T sum[outer][inner] = {};
  // Adds a tile's rows (column s at tile[s * ld]): the product's rows are columns 0..31 of the
  // tile, its columns the 32 from `first_column`.
  __device__ __forceinline__ void add_tile(const T* tile, int ld, int first_column) {
    const int warp = threadIdx.x >> 5;
    if constexpr (sizeof(T) == 8)
      add_tile_product(tile, tile, ld, warp % 2, first_column / 8 + 2 * (warp / 2), sum);
    else
      add_tile_product(tile, tile, ld, 2 * (threadIdx.x % 16), first_column + 4 * (threadIdx.x / 16), sum);
  }
  // Row and column in the product of sum[b][a].
  __device__ __forceinline__ static int row(int b, int a) {
    if constexpr (sizeof(T) == 8) return 16 * ((threadIdx.x >> 5) % 2) + mma_row(a);
    return 2 * (threadIdx.x % 16) + a;
  }
  __device__ __forceinline__ static int column(int b, int a) {
    if constexpr (sizeof(T) == 8) return 8 * (2 * ((threadIdx.x >> 5) / 2) + b) + mma_col(a);
    return 4 * (threadIdx.x / 16) + b;
  }
};

// A block per pair and slice of rows: the slice's contribution to the pair's Gram matrix, 64 rows
// at a time through shared memory (column s of the rows at tile[s * ld]). In double each warp
// forms a 16 x 16 quarter of G on the tensor cores (two 16 x 8 products per 4 rows); in float
// each thread accumulates a 2 x 4 patch with FMAs.
template <class T>
__global__ void __launch_bounds__(gram_threads, gram_partial_blocks_per_sm)
    gram_partials(GlobalState<T> G, GramWork<T> work, int round) {
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = gram_tile_rows + 4;  // 4 (mod 16): the fragments' lanes hit distinct banks
  __shared__ __align__(16) T tile[gram_width * ld];
  __shared__ int columns[gram_width];
  const std::int64_t item = blockIdx.x / work.slices;
  const int slice = blockIdx.x % work.slices;
  std::int64_t matrix = 0;
  int first = 0;
  if (!gram_pair(G, round, item, matrix, first)) return;  // uniform over the block
  if (threadIdx.x < gram_width) columns[threadIdx.x] = G.pos_of(matrix)[first + threadIdx.x];
  const T* W = G.w(matrix);
  GramQuarter<T> gram;
  const int begin = slice * work.slice_rows, end = min(G.M, begin + work.slice_rows);
  // Each tile's loads are issued together, and the next tile's while this one is multiplied.
  constexpr int per_thread = gram_tile_rows * gram_width / gram_threads;
  T staged[per_thread];
  const auto load = [&](int r0) {
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * gram_threads, r = e % gram_tile_rows, c = columns[e / gram_tile_rows];
      staged[i] = r0 + r < end && c < G.N ? W[r0 + r + c * G.ldw] : T(0);
    }
  };
  __syncthreads();  // columns known
  load(begin);
  for (int r0 = begin; r0 < end; r0 += gram_tile_rows) {
    __syncthreads();  // the previous tile consumed
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * gram_threads;
      tile[e / gram_tile_rows * ld + e % gram_tile_rows] = staged[i];
    }
    __syncthreads();
    if (r0 + gram_tile_rows < end) load(r0 + gram_tile_rows);
    gram.add_tile(tile, ld, 0);
  }
  let_next_kernel_start();
  T* out = work.partials + (item * work.slices + slice) * (gram_width * gram_width);
#pragma unroll
  for (int b = 0; b < gram.outer; ++b)
#pragma unroll
    for (int a = 0; a < gram.inner; ++a) out[gram.row(b, a) * gram_width + gram.column(b, a)] = gram.sum[b][a];
}

// A solve block's share of a pair's Gram matrix G = X^T X, formed from tiles of 64 rows (column s
// of the rows at tile[s * ld]): in double warp w the 16 x 8 block at rows 16 (w % 2), columns
// 8 (w / 2) on the tensor cores, as add_tile_gram lays it out; in float thread t the 2 x 2 patch at
// (2 (t % 16), 2 (t / 16)) with FMAs.
template <class T>
struct SolveGramPatch {
  std::conditional_t<sizeof(T) == 8, double[1][4], float[2][2]> sum = {};
  __device__ __forceinline__ void add_tile(const T* tile, int ld) { add_tiles(tile, tile, ld); }
  // The same share of X^T Y, X's columns in x_tile and Y's in y_tile.
  __device__ __forceinline__ void add_tiles(const T* x_tile, const T* y_tile, int ld) {
    const int warp = threadIdx.x >> 5;
    if constexpr (sizeof(T) == 8)
      add_tile_product(x_tile, y_tile, ld, warp % 2, warp / 2, sum);
    else
      add_tile_product(x_tile, y_tile, ld, 2 * (threadIdx.x % 16), 2 * (threadIdx.x / 16), sum);
  }
  // Calls put(k, l, G_kl) for each element of the patch.
  template <class Put>
  __device__ __forceinline__ void for_each(Put put) const {
    if constexpr (sizeof(T) == 8) {
      const int warp = threadIdx.x >> 5;
#pragma unroll
      for (int e = 0; e < 4; ++e) put(16 * (warp % 2) + mma_row(e), 8 * (warp / 2) + mma_col(e), sum[0][e]);
    } else {
      const int i0 = 2 * (threadIdx.x % 16), j0 = 2 * (threadIdx.x / 16);
#pragma unroll
      for (int b = 0; b < 2; ++b)
#pragma unroll
        for (int a = 0; a < 2; ++a) put(i0 + a, j0 + b, sum[b][a]);
    }
  }
};

// Where seat s's element lies in a row of the solve's G or Q: the even seats first, then the odd
// ones (solve_pair says why).
__device__ __forceinline__ int seat_column(int seat) { return (seat & 1) * (gram_width / 2) + (seat >> 1); }

// The fused path, for rounds with pairs enough to fill the GPU with solves or columns of at most
// two tiles of rows: the solve's block forms its pair's Gram matrix itself, 64 rows at a time by
// asynchronous copies into two tiles that share the memory of G's and Q's buffers (the next tile
// loads while this one is multiplied), and leaves G in `g0` in the ordering's first seats. The
// partials kernel and its trip through memory drop out. `column` is lane l's W column: position
// first + l.
template <class T>
__device__ void form_gram(const GlobalState<T>& G, std::int64_t matrix, int column, const InnerOrder& order,
                          T* tiles, T* g0, int ld_g) {
  constexpr int ld = gram_tile_rows + 4;  // 4 (mod 16): the fragments' lanes hit distinct banks
  constexpr int tile_size = gram_width * ld;
  const T* W = G.w(matrix);
  SolveGramPatch<T> patch;
  stream_tiles(
      0, G.M, tiles, tile_size,
      [&](int r0, T* tile) {  // lane `slot` holds the slot's column
        copy_tile_async<gram_tile_rows, gram_solve_threads>(
            tile, ld, W, G.ldw, G.M, G.N, r0,
            [&](int slot) { return __shfl_sync(0xffffffffu, column, slot); });
      },
      [&](const T* tile) { patch.add_tile(tile, ld); });
  patch.for_each([&](int k, int l, T value) { g0[order.seat(k) * ld_g + seat_column(order.seat(l))] = value; });
}

// a when p, else b, by a select instruction. Written as a conditional, the solve's exact diagonal
// block compiled to a branch that split every warp every round (two lanes of each take it); as
// selects, 256 x 256 double took 2.13 against 2.17 ms and 1024 x 1024 15.8 against 16.0 ms (H200).
__device__ __forceinline__ double select_value(bool p, double a, double b) {
  double r;
  asm("{.reg .pred q; setp.ne.s32 q, %3, 0; selp.f64 %0, %1, %2, q;}" : "=d"(r) : "d"(a), "d"(b), "r"(int(p)));
  return r;
}
__device__ __forceinline__ float select_value(bool p, float a, float b) {
  float r;
  asm("{.reg .pred q; setp.ne.s32 q, %3, 0; selp.f32 %0, %1, %2, q;}" : "=f"(r) : "f"(a), "f"(b), "r"(int(p)));
  return r;
}

// A pair's solve, shared by gram_solve and gram_round_fused: a block of 256 threads diagonalizes
// the pair's 32 x 32 Gram matrix G by two-sided Jacobi, G <- J^T G J, in the rounds of the circle
// method (or, in most rounds of the ring, of the cross ordering: only the pairs between the two
// blocks, gram_full_inner_period). A round's J rotates 16 disjoint pairs of columns, so J^T G J
// changes G in 2 x 2 blocks, each on its own: the block of rows of pair i and columns of pair j
// becomes R_i^T G_ij R_j. Thread (i, j) owns that block for the round, computes R_j itself and
// takes R_i from the lane that computed it, and rotates Q's columns of pair j in its two rows. G
// and Q are kept in seat coordinates (InnerOrder): in round r pair j's columns sit at seats 2j and
// 2j + 1 (indexed by column, the gathers cost 2.5 times their ideal wavefronts), and a thread
// writes its outputs to the next round's seats, in the other of two buffers; one barrier per round.
// Within a row the even seats come first, then the odd ones (seat_column): the 16 threads of a row
// read pair j's two elements at j and 16 + j, and in the cross ordering, where even seats stay and
// odd ones move down a pair, they write 16 consecutive elements of each half. Kept as neighbours,
// pairs of seats 16 bytes apart, every store met a two-way bank conflict (8 of a round's 14 shared
// accesses); split, 256 x 256 double took 2.16 against 2.32 ms, 512 x 512 5.32 against 5.66 ms on
// the H200. The outputs are ordered by decreasing eigenvalue (padding last), the larger half going
// to the second block's positions, as the odd-even ring's swap sends it on.
constexpr int solve_parts = gram_solve_threads / 32;
constexpr int solve_rows = gram_width / solve_parts;  // rows of G per warp: warp w rows w R .. w R + R - 1
template <class T>
struct SolveShared {
  // Pair j's diagonal elements G(2j, 2j) and G(2j, 2j + 1) lie 2 ld + 1 (odd) elements after pair
  // j - 1's, so the 16 pairs' loads of them fall on distinct banks.
  static constexpr int ld = gram_width + 2;
  static constexpr int buffer_size = gram_width * ld;
  // G at g(b)[seat(k) * ld + seat_column(seat(l))], Q at q(b)[k * ld + seat_column(seat(l))]
  // (k: input position); this round's buffer and the next's. form_gram first stages two tiles of
  // rows in the same memory.
  T buffers[4 * buffer_size];
  T part_max[solve_parts];
  int slot_column[gram_width];  // the real columns first, in position order, then the padding
  int ranks_ahead[solve_parts][gram_width];  // rank_outputs: each warp's count for each lane
  __device__ T* g(int b) { return buffers + b * buffer_size; }
  __device__ T* q(int b) { return buffers + (2 + b) * buffer_size; }
};
static_assert(4 * SolveShared<double>::buffer_size >= 2 * gram_width * (gram_tile_rows + 4), "form_gram's tiles fit");

// The solve's result: the test's largest cosine, whether the pair was rotated (false: orthogonal to
// tol, nothing changed), lane l's G_ll as formed, and which buffer holds the final G and Q.
template <class T>
struct PairSolve {
  T off = 0;
  bool rotated = false;
  T diagonal = 0;
  int now = 0;
};

// Rounding noise (jacobi_math.hpp, RoundingNoise) among a pair's columns, found on the fresh Gram
// matrix before the solve: a column whose G_ll, its fresh squared norm, lies within its error scale
// (lane_scale, lane l's) gets G_ll = 0, and the solve leaves it alone as it does a negligible
// column: not tested, not rotated, eigenvalue 0, its output its input. Its content is not cleared:
// its error scale goes with it (output_error_scale) and finds it noise again at every later
// formation and at the end (sigma_from_norm2). x holds G_kl, k = k0 + kk, l = lane, and g(0) the
// same in seat order; only the thread that holds G_ll reads and writes it, so solve_pair's first
// barrier is the only one needed.
template <class T>
__device__ __forceinline__ void clear_gram_noise(T (&x)[solve_rows], T lane_scale, const InnerOrder& order,
                                                 SolveShared<T>& sh) {
  constexpr int ld = SolveShared<T>::ld;
  const int lane = threadIdx.x & 31, k0 = (threadIdx.x >> 5) * solve_rows;
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk)
    if (k0 + kk == lane && is_rounding_noise(x[kk], lane_scale)) {
      x[kk] = T(0);
      sh.g(0)[order.seat(lane) * ld + seat_column(order.seat(lane))] = T(0);
    }
}

// Lane l's output error scale once a rotated pair's solve is done: output l of W Q is
// sum_k W_k Q_kl, so its scale is sum_k E_k Q_kl^2, E_k lane k's input scale. A column the solve
// left alone (noise, zero or padding) has e_l for its column of Q and exact zeros elsewhere in its
// row: it keeps its scale and adds nothing to the others'. Every lane of a warp calls it.
template <class T>
__device__ __forceinline__ T output_error_scale(SolveShared<T>& sh, int now, const InnerOrder& order,
                                                T lane_scale) {
  constexpr int ld = SolveShared<T>::ld;
  const int lane = threadIdx.x & 31, lane_column = seat_column(order.seat(lane));
  const T* const q = sh.buffers + (2 + now) * SolveShared<T>::buffer_size;
  T sum = 0;
#pragma unroll 8
  for (int k = 0; k < gram_width; ++k) {
    const T q_kl = q[k * ld + lane_column];
    sum = fma(__shfl_sync(0xffffffffu, lane_scale, k), q_kl * q_kl, sum);
  }
  return sum;
}

// Tests the pair on G (in g(0), seat order, and x[kk] = G_kl, k = k0 + kk, l = lane) and, when it
// is not orthogonal to tol, runs the inner rounds. Every thread of the block calls it; it ends on
// a barrier.
template <class T>
__device__ __forceinline__ PairSolve<T> solve_pair(const GlobalState<T>& G, const InnerOrder& order,
                                                   SolveShared<T>& sh, const T (&x)[solve_rows]) {
  constexpr int pairs = gram_width / 2, ld = SolveShared<T>::ld;
  static_assert(pairs * pairs == gram_solve_threads, "a thread per 2 x 2 block of G");
  constexpr unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5, k0 = part * solve_rows;
  const int lane_seat = order.seat(lane), lane_column = seat_column(lane_seat);
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk) sh.q(0)[(k0 + kk) * ld + lane_column] = k0 + kk == lane ? T(1) : T(0);
  __syncthreads();

  // The test on the fresh Gram: max |G_kl| / sqrt(G_kk G_ll) over columns that are not negligible,
  // for the pairs this round's ordering rotates (the others are tested in the sweep's full rounds).
  PairSolve<T> result;
  result.diagonal = sh.g(0)[lane_seat * ld + lane_column];
  const T inverse_root =
      result.diagonal >= Precision<T>::negligible ? rsqrt_of_normal(result.diagonal) : T(0);
  T off = 0;
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk) {
    const T cosine = fabs(x[kk]) * __shfl_sync(full, inverse_root, k0 + kk) * inverse_root;
    off = order.rotates(k0 + kk, lane) ? fmax(off, cosine) : off;
  }
  off = warp_max(off);
  if (lane == 0) sh.part_max[part] = off;
  __syncthreads();
#pragma unroll
  for (int p = 0; p < solve_parts; ++p) off = fmax(off, sh.part_max[p]);
  result.off = off;
  result.rotated = off > G.P.tol;
  if (!result.rotated) return result;  // orthogonal: W and V stay, the ring's swap moves the blocks on

  const int row_pair = threadIdx.x / pairs, column_pair = threadIdx.x % pairs;
  const int top = 2 * row_pair, left = 2 * column_pair;  // the block's seats
  // Where the block's columns sit next round: the same permutation every round.
  const int next_top = order.next_seat(top), next_top2 = order.next_seat(top + 1);
  const int next_left = seat_column(order.next_seat(left)), next_left2 = seat_column(order.next_seat(left + 1));
  const int left_column = seat_column(left), left_column2 = seat_column(left + 1);
  // A round from g(from), q(from) into g(to), q(to); the rounds alternate buffers two at a time,
  // so that every address is a register plus a constant.
  const auto round_step = [&](int from, int to) {
    const T* gc = sh.g(from);
    const T* qc = sh.q(from);
    const T alpha = gc[left * ld + left_column], gamma = gc[left * ld + left_column2];
    const T beta = gc[(left + 1) * ld + left_column2];
    // The block's rows and Q's, each as (seat 2j, seat 2j + 1).
    const T m00 = gc[top * ld + left_column], m01 = gc[top * ld + left_column2];
    const T m10 = gc[(top + 1) * ld + left_column], m11 = gc[(top + 1) * ld + left_column2];
    const T q00 = qc[top * ld + left_column], q01 = qc[top * ld + left_column2];
    const T q10 = qc[(top + 1) * ld + left_column], q11 = qc[(top + 1) * ld + left_column2];
    Rotation<T> rotation;
    const bool rotate = jacobi_rotation(alpha, beta, gamma, G.P.tol, rotation);
    const T c = rotation.c, s = rotation.s;
    // R_i from the lane of this warp whose column pair is i (lane i: the warp's row pairs are
    // below 16).
    const T ci = __shfl_sync(full, c, row_pair), si = __shfl_sync(full, s, row_pair);
    // With p, q the columns in seats 2j, 2j + 1: column p <- c p - s q, column q <- s p + c q;
    // then the rows alike with R_i. Each sum is written as the fma that takes the cosine's
    // product, so that its rounding does not change with the compiler's choice of contraction.
    const T n00 = fma(c, m00, -s * m01), n01 = fma(c, m01, s * m00);
    const T n10 = fma(c, m10, -s * m11), n11 = fma(c, m11, s * m10);
    const bool diagonal = row_pair == column_pair && rotate;
    // The pair's own 2 x 2 block exactly: the columns' new squared norms, their product 0.
    const T o00 = select_value(diagonal, fma(-rotation.t, gamma, alpha), fma(ci, n00, -si * n10));
    const T o01 = select_value(diagonal, T(0), fma(ci, n01, -si * n11));
    const T o10 = select_value(diagonal, T(0), fma(ci, n10, si * n00));
    const T o11 = select_value(diagonal, fma(rotation.t, gamma, beta), fma(ci, n11, si * n01));
    T* gn = sh.g(to);
    gn[next_top * ld + next_left] = o00;
    gn[next_top * ld + next_left2] = o01;
    gn[next_top2 * ld + next_left] = o10;
    gn[next_top2 * ld + next_left2] = o11;
    T* qn = sh.q(to);  // Q's rows stay: input positions
    qn[top * ld + next_left] = fma(c, q00, -s * q01);
    qn[top * ld + next_left2] = fma(c, q01, s * q00);
    qn[(top + 1) * ld + next_left] = fma(c, q10, -s * q11);
    qn[(top + 1) * ld + next_left2] = fma(c, q11, s * q10);
    __syncthreads();
  };
  const int steps = gram_inner_sweeps * order.rounds();
  for (int step = 0; step + 1 < steps; step += 2) {
    round_step(0, 1);
    round_step(1, 0);
  }
  if (steps & 1) round_step(0, 1);
  result.now = steps & 1;
  return result;
}

// Lane l's output rank once a rotated pair's solve is done: real columns by decreasing eigenvalue
// (ties by lane), padding after them; the outputs fill the real columns first, in position order
// (sh.slot_column, written here). Every thread of the block calls it. Warp w counts the lanes
// ahead among lanes 4w .. 4w + 3 and the warps' counts are added after one barrier: with every
// warp comparing against all 32 lanes (64 shuffles of a double each), the ranking took 1.06 us of
// a fused round, split 0.22 us (H200, 256 x 256, clocked in the kernel).
template <class T>
__device__ __forceinline__ int rank_outputs(SolveShared<T>& sh, int now, const InnerOrder& order,
                                            int column, bool real, T& eigenvalue) {
  constexpr unsigned full = 0xffffffffu;
  constexpr int ld = SolveShared<T>::ld;
  const int lane = threadIdx.x & 31, lane_seat = order.seat(lane);
  // The buffer with the result, by offset (indexing g or q at run time put them on the stack).
  eigenvalue = (sh.buffers + now * SolveShared<T>::buffer_size)[lane_seat * ld + seat_column(lane_seat)];
  const unsigned real_lanes = __ballot_sync(full, real);
  const unsigned below = (1u << lane) - 1;
  const int real_count = __popc(real_lanes);
  constexpr int per_warp = gram_width / solve_parts;
  const int part = threadIdx.x >> 5;
  int ahead_here = 0;
#pragma unroll
  for (int kk = 0; kk < per_warp; ++kk) {
    const int k = part * per_warp + kk;
    const T other = __shfl_sync(full, eigenvalue, k);
    ahead_here += real && (real_lanes >> k & 1u) && ahead_when_descending(other, k, eigenvalue, lane);
  }
  sh.ranks_ahead[part][lane] = ahead_here;
  if (threadIdx.x < 32)
    sh.slot_column[real ? __popc(real_lanes & below) : real_count + __popc(~real_lanes & below)] = column;
  __syncthreads();
  int rank = real ? 0 : real_count + __popc(~real_lanes & below);
#pragma unroll
  for (int p = 0; p < solve_parts; ++p) rank += sh.ranks_ahead[p][lane];
  return rank;
}

// A block per pair: sums the slices' partial Grams (in a fixed order: reproducible) or forms G
// itself, solves (solve_pair) and leaves Q, the columns and the ranks for gram_apply.
template <class T>
__global__ void __launch_bounds__(gram_solve_threads)
    gram_solve(GlobalState<T> G, GramWork<T> work, int round) {
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = SolveShared<T>::ld;
  __shared__ __align__(16) SolveShared<T> sh;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5, k0 = part * solve_rows;
  const std::int64_t item = blockIdx.x;
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, item, matrix, first);
  int* pos = G.pos_of(matrix);
  const int column = pos[first + lane];  // asked for with the flag: the latencies overlap
  if (!active) return;                   // uniform over the block
  T* norms = G.norms_of(matrix);
  T* error_scales = G.error_scales_of(matrix);
  const bool real = column < G.N;
  const T lane_scale = real ? error_scales[column] : T(0);
  const InnerOrder order{!inner_sweep_is_full(round, G.block_positions, gram_full_inner_period)};

  // Warp w holds rows w R .. w R + R - 1 of G, lane l column l: formed here, or the sum of the
  // slices' partials.
  const int lane_column = seat_column(order.seat(lane));
  T x[solve_rows];  // G_kl, k = k0 + kk, l = lane
  if (work.solve_forms_gram()) {
    form_gram(G, matrix, column, order, sh.buffers, sh.g(0), ld);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) x[kk] = sh.g(0)[order.seat(k0 + kk) * ld + lane_column];
  } else {
    const T* partial = work.partials + item * work.slices * (gram_width * gram_width);
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) x[kk] = partial[(k0 + kk) * gram_width + lane];
#pragma unroll 4  // several slices' loads in flight at once
    for (int slice = 1; slice < work.slices; ++slice)
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk)
        x[kk] += partial[slice * (gram_width * gram_width) + (k0 + kk) * gram_width + lane];
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
  }
  clear_gram_noise(x, lane_scale, order, sh);
  const PairSolve<T> solved = solve_pair(G, order, sh, x);
  if (threadIdx.x == 0) raise_to(&G.off_bits[matrix], double(solved.off));
  if (!solved.rotated) {
    if (part != 0) return;
    if (lane == 0) work.rotated[item] = 0;
    if (real) norms[column] = solved.diagonal;
    pos[first + (lane + gram_block) % gram_width] = column;
    return;
  }
  let_next_kernel_start();
  T eigenvalue;
  const int rank = rank_outputs(sh, solved.now, order, column, real, eigenvalue);
  const T* const q_now = sh.buffers + (2 + solved.now) * SolveShared<T>::buffer_size;
  const std::int64_t base = item * gram_width;
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk)
    work.rotations[(base + k0 + kk) * gram_width + rank] = q_now[(k0 + kk) * ld + lane_column];
  if (part != 0) return;
  const T scale = output_error_scale(sh, solved.now, order, lane_scale);
  const int target = sh.slot_column[rank];
  work.in_columns[base + lane] = column;
  work.out_columns[base + rank] = target;
  if (real) {
    norms[target] = fmax(eigenvalue, T(0));
    error_scales[target] = scale;
  }
  pos[first + (rank + gram_block) % gram_width] = target;
  if (lane == 0) work.rotated[item] = 1;
}

// The apply's shared strides, 4 (mod 16) elements: a double product's fragment loads (lanes
// (group, in_group) at in_group * ld + group) then hit distinct banks. With 8 (mod 16) a round of
// 1024 x 1024 double took 13.0 against 11.7 us under Nsight Compute, and 1024 x 1024 20.6 against
// 19.2 ms, 2048 x 2048 92.5 against 86.9 ms (H200). The double outputs are staged at 2 (mod 8)
// instead, where lanes (group, in_group) store at 2 in_group * ld + group: in another run the
// round 10.2 against 10.6 us, 1024 x 1024 18.8 against 19.9 ms, 2048 x 2048 85.7 against 86.7 ms.
constexpr int apply_ldq = gram_width + 4, apply_ldt = gram_apply_rows + 4;
template <class T>
constexpr int apply_ld_out = sizeof(T) == 8 ? gram_apply_rows + 2 : apply_ldt;
template <class T>
constexpr std::size_t gram_apply_shared_bytes =
    sizeof(T) * gram_width * (apply_ldq + apply_ldt) + 2 * gram_width * sizeof(int);

// The product of gram_apply_rows rows (column s at tile[s * ldt]) and Q (Q_sk at q[s * ldq + k]) by
// the gram_apply_threads threads of a block: in double each warp forms 16 rows on the tensor
// cores; in float each thread a 4 x 4 patch with FMAs.
template <class T>
struct RowsTimesQ {
  T sum[4][4] = {};
  __device__ __forceinline__ void multiply(const T* tile, int ldt, const T* q, int ldq) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, group = lane >> 2, in_group = lane & 3;
    if constexpr (sizeof(T) == 8) {  // the warp's rows times column block nt of Q at sum[nt], mma_16x8x4's layout
      // Unrolled whole, the product spilled 160 bytes at the 64 registers of 4 blocks per SM (H200,
      // with the partials also unrolled further: 1024 x 1024 double 20.9 against 18.4 ms, 2048 x
      // 2048 110 against 87 ms).
#pragma unroll 2
      for (int s0 = 0; s0 < gram_width; s0 += 4) {
        const T* a = tile + (s0 + in_group) * ldt + 16 * warp + group;
        const T* b = q + (s0 + in_group) * ldq + group;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma_16x8x4(sum[nt], a[0], a[8], b[8 * nt]);
      }
    } else {
      constexpr int row_groups = gram_apply_rows / 4;  // a thread's patch: 4 rows, 4 outputs
      const int r = 4 * (threadIdx.x % row_groups), k0 = 4 * (threadIdx.x / row_groups);
#pragma unroll 8
      for (int s = 0; s < gram_width; ++s)
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
          for (int b = 0; b < 4; ++b) sum[a][b] = fma(tile[s * ldt + r + a], q[s * ldq + k0 + b], sum[a][b]);
    }
  }
  // Writes the product's output k, row r at low[k * ldo + r] for k < 16, else at
  // high[(k - 16) * ldo + r].
  __device__ __forceinline__ void stage(T* low, T* high, int ldo) const {
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        constexpr int row_groups = gram_apply_rows / 4;
        if constexpr (sizeof(T) == 8) {  // outputs 8a .. 8a + 7
          (a < 2 ? low : high)[(8 * (a % 2) + mma_col(b)) * ldo + 16 * warp + mma_row(b)] = sum[a][b];
        } else {
          const int k = 4 * (threadIdx.x / row_groups) + b;
          (k < gram_block ? low : high)[k % gram_block * ldo + 4 * (threadIdx.x % row_groups) + a] = sum[a][b];
        }
      }
  }
  // Output k, row r at out[k * ldo + r].
  __device__ __forceinline__ void stage(T* out, int ldo) const { stage(out, out + gram_block * ldo, ldo); }
};

// Stores `tile_rows` staged rows of 32 outputs (output k's rows at out[k * ldo]) to rows
// r0 .. r0 + tile_rows - 1 of X's columns out_columns[k] (those < N; rows from `rows` on are
// dropped): 16 bytes a store where the columns allow, so the stores are whole column segments.
template <int tile_rows, int threads, class T>
__device__ __forceinline__ void store_columns(const T* out, int ldo, T* X, std::int64_t ld, int rows, int r0,
                                              const int* out_columns, int N) {
  using Chunk = std::conditional_t<sizeof(T) == 8, double2, float4>;
  constexpr int chunk = 16 / sizeof(T), chunks = tile_rows / chunk;  // per column
  constexpr int per_thread = tile_rows * gram_width / threads;
  if (ld % chunk == 0 && ldo % chunk == 0) {
#pragma unroll
    for (int i = 0; i < per_thread / chunk; ++i) {
      const int e = threadIdx.x + i * threads, slot = e / chunks, r = chunk * (e % chunks);
      const int c = out_columns[slot];
      if (c >= N || r0 + r >= rows) continue;
      const T* from = out + slot * ldo + r;
      T* to = X + r0 + r + c * ld;
      if (r0 + r + chunk <= rows) {
        *reinterpret_cast<Chunk*>(to) = *reinterpret_cast<const Chunk*>(from);
      } else {
        for (int k = 0; k < rows - r0 - r; ++k) to[k] = from[k];
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * threads, r = e % tile_rows;
      const int c = out_columns[e / tile_rows];
      if (r0 + r < rows && c < N) X[r0 + r + c * ld] = out[e / tile_rows * ldo + r];
    }
  }
}

// A block per pair and gram_apply_rows rows of W or of V: the rows' 32 columns times Q, written in place
// (the block reads all 32 inputs of its rows before it writes an output). In double each warp
// forms 16 rows of the product on the tensor cores; in float each thread a 4 x 4 patch with FMAs.
// The results pass through shared memory so that the stores are whole column segments.
template <class T>
__global__ void __launch_bounds__(gram_apply_threads, gram_apply_blocks_per_sm)
    gram_apply(GlobalState<T> G, GramWork<T> work, int round, int w_tiles, int v_tiles) {
  wait_for_previous_kernel();
  constexpr int ldq = apply_ldq, ldt = apply_ldt, ldo = apply_ld_out<T>;
  // Q_sk at q[s * ldq + k]; column s of the rows at tile[s * ldt], then output k at tile[k * ldo]
  // (gram_apply_shared_bytes).
  extern __shared__ __align__(16) unsigned char apply_shared[];
  T* const q = reinterpret_cast<T*>(apply_shared);
  T* const tile = q + gram_width * ldq;
  int* const in_columns = reinterpret_cast<int*>(tile + gram_width * ldt);
  int* const out_columns = in_columns + gram_width;
  const std::int64_t item = blockIdx.x / (w_tiles + v_tiles);
  const int t = blockIdx.x % (w_tiles + v_tiles);
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, item, matrix, first);
  const bool rotated = work.rotated[item];
  // Q and the rows arrive by asynchronous copies: no registers held while they are in flight. Q
  // and the columns are asked for together with the flags (a stopped matrix's scratch is stale
  // but readable), so that their latencies overlap.
  const T* rotation = work.rotations + item * (gram_width * gram_width);
#pragma unroll
  for (int i = 0; i < gram_width * gram_width / gram_apply_threads; ++i) {
    const int e = threadIdx.x + i * gram_apply_threads;
    copy_async(q + e / gram_width * ldq + e % gram_width, rotation + e, true);
  }
  commit_copies();
  if (threadIdx.x < gram_width) {
    in_columns[threadIdx.x] = work.in_columns[item * gram_width + threadIdx.x];
    out_columns[threadIdx.x] = work.out_columns[item * gram_width + threadIdx.x];
  }
  if (!active || !rotated) {  // uniform over the block
    wait_copies<0>();
    return;
  }
  const bool on_w = t < w_tiles;
  T* X = on_w ? G.w(matrix) : G.v(matrix);
  const std::int64_t ld = on_w ? G.ldw : G.ldv;
  const int rows = on_w ? G.M : G.N;
  const int r0 = (on_w ? t : t - w_tiles) * gram_apply_rows;
  __syncthreads();  // the columns known
  copy_tile_async<gram_apply_rows, gram_apply_threads>(tile, ldt, X, ld, rows, G.N, r0,
                                                        [&](int slot) { return in_columns[slot]; });
  wait_copies<0>();
  __syncthreads();
  RowsTimesQ<T> product;
  product.multiply(tile, ldt, q, ldq);
  let_next_kernel_start();
  __syncthreads();  // every input read: the tile takes the outputs
  product.stage(tile, ldo);
  __syncthreads();
  store_columns<gram_apply_rows, gram_apply_threads>(tile, ldo, X, ld, rows, r0, out_columns, G.N);
}

// The fused round: a round's partials, solve and apply in one launch, for rounds whose pairs all
// fit on the GPU at once (a single matrix up to a few hundred columns). A cluster of blocks takes a
// pair: block r of K loads its share of the rows once (w_rows of W from r w_rows, v_rows of V from
// r v_rows) into shared memory and forms their part of G on the tensor cores; the K parts are added
// from each other's shared memory in rank order (distributed shared memory), so that every block
// holds the same G and, solving it with the same arithmetic, the same Q; then each block multiplies
// its own rows by Q and stores them. The three kernels each paid a launch, a trip of G or Q through
// L2 and the wait for the slowest block before them; the fused round pays one launch and two
// cluster barriers.
// Rows of W and V per block, together: one product's worth (a chunk) where the clusters fit, else
// two. On the H200, double, a round of 256 x 256 took 14.5 us in clusters of 4 blocks of 128 rows
// against 16.5 in 2 of 256 (and 16.2 in 8 of 64 + 64 padding); 512 x 512 fits 16 clusters of 4 blocks
// of 256 rows, not of 8 of 128.
constexpr int fused_preferred_rows = gram_apply_rows;
constexpr int fused_max_rows = 2 * gram_apply_rows;
constexpr int fused_max_cluster = 8;  // the portable cluster size
constexpr int fused_chunk_rows = gram_apply_rows;  // rows per product (RowsTimesQ)
struct FusedShape {
  int cluster = 0;            // blocks per pair; 0: the rounds do not fit
  int w_rows = 0, v_rows = 0;  // rows of W and of V per block: multiples of gram_tile_rows
};
constexpr int fused_ldt = fused_max_rows + 4;  // 4 (mod 16), as the apply's tile
template <class T>
constexpr std::size_t fused_shared_bytes =
    sizeof(T) * gram_width * (fused_ldt + apply_ld_out<T> + gram_width + apply_ldq);

template <class T>
__global__ void __launch_bounds__(gram_solve_threads, 1)
    gram_round_fused(GlobalState<T> G, FusedShape shape, int round) {
#if ROOFLAB_HAS_CLUSTERS
  namespace cg = cooperative_groups;
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = SolveShared<T>::ld, ldt = fused_ldt, ldo = apply_ld_out<T>, ldq = apply_ldq;
  extern __shared__ __align__(16) unsigned char fused_shared[];
  __shared__ __align__(16) SolveShared<T> sh;
  T* const tile = reinterpret_cast<T*>(fused_shared);  // row r of slot s at tile[s * ldt + r]
  T* const out = tile + gram_width * ldt;               // a chunk's outputs, output k at out[k * ldo]
  T* const part = out + gram_width * ldo;               // this block's part of G, G_kl at k * 32 + l
  T* const q = part + gram_width * gram_width;          // Q by output rank: Q_sk at q[s * ldq + k]
  const cg::cluster_group cluster = cg::this_cluster();
  const int block_rank = int(cluster.block_rank());
  const int lane = threadIdx.x & 31, part_index = threadIdx.x >> 5, k0 = part_index * solve_rows;
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, blockIdx.x / shape.cluster, matrix, first);
  int* pos = G.pos_of(matrix);
  const int column = pos[first + lane];
  const bool real = column < G.N;
  T* error_scales = G.error_scales_of(matrix);
  const T lane_scale = active && real ? error_scales[column] : T(0);
  const int w0 = block_rank * shape.w_rows, v0 = block_rank * shape.v_rows;
  T* W = G.w(matrix);
  T* V = G.v(matrix);
  const auto column_of = [&](int slot) { return __shfl_sync(0xffffffffu, column, slot); };
  if (active) {  // uniform over the cluster
    // W's rows and V's in two groups: G needs only W's, and V's arrive while the pair solves.
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(tile + r, ldt, W, G.ldw, G.M, G.N,
                                                                            w0 + r, column_of);
    commit_copies();
    for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          tile + shape.w_rows + r, ldt, V, G.ldv, G.N, G.N, v0 + r, column_of);
    commit_copies();
    wait_copies<1>();
    __syncthreads();
    SolveGramPatch<T> patch;
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows) patch.add_tile(tile + r, ldt);
    patch.for_each([&](int k, int l, T value) { part[k * gram_width + l] = value; });
  }
  cluster.sync();  // every block's part is in

  const InnerOrder order{!inner_sweep_is_full(round, G.block_positions, gram_full_inner_period)};
  const int lane_column = seat_column(order.seat(lane));
  T x[solve_rows] = {};  // G_kl, k = k0 + kk, l = lane: the parts in rank order, the same in every block
  if (active) {
    for (int r = 0; r < shape.cluster; ++r) {
      const T* other = cluster.map_shared_rank(part, r);
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk) x[kk] += other[(k0 + kk) * gram_width + lane];
    }
  }
  cluster.barrier_arrive();  // done with the other blocks' parts; they wait for this before leaving
  if (active) {
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
    clear_gram_noise(x, lane_scale, order, sh);
    const PairSolve<T> solved = solve_pair(G, order, sh, x);
    if (threadIdx.x == 0) raise_to(&G.off_bits[matrix], double(solved.off));
    T* norms = G.norms_of(matrix);
    if (!solved.rotated) {
      if (block_rank == 0 && part_index == 0) {
        if (real) norms[column] = solved.diagonal;
        pos[first + (lane + gram_block) % gram_width] = column;
      }
    } else {
      let_next_kernel_start();
      T eigenvalue;
      const int rank = rank_outputs(sh, solved.now, order, column, real, eigenvalue);
      const T* const q_now = sh.q(solved.now);
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk)
        q[(k0 + kk) * ldq + rank] = q_now[(k0 + kk) * ld + lane_column];
      if (block_rank == 0 && part_index == 0) {
        const T scale = output_error_scale(sh, solved.now, order, lane_scale);
        const int target = sh.slot_column[rank];
        if (real) {
          norms[target] = fmax(eigenvalue, T(0));
          error_scales[target] = scale;
        }
        pos[first + (rank + gram_block) % gram_width] = target;
      }
      wait_copies<0>();  // V's rows
      __syncthreads();   // Q and V's rows in
      // The rows times Q, a chunk at a time; output k goes to column slot_column[k] (the real
      // columns by decreasing eigenvalue, as gram_solve's out_columns).
      const int rows = shape.w_rows + shape.v_rows;
      for (int c = 0; c < rows; c += fused_chunk_rows) {
        RowsTimesQ<T> product;
        product.multiply(tile + c, ldt, q, ldq);
        product.stage(out, ldo);
        __syncthreads();
        for (int h = 0; h < fused_chunk_rows && c + h < rows; h += gram_tile_rows) {
          const int t = c + h;  // the tile's row: W's rows first, then V's
          const bool on_w = t < shape.w_rows;
          store_columns<gram_tile_rows, gram_solve_threads>(out + h, ldo, on_w ? W : V, on_w ? G.ldw : G.ldv,
                                                            on_w ? G.M : G.N, on_w ? w0 + t : v0 + t - shape.w_rows,
                                                            sh.slot_column, G.N);
        }
        __syncthreads();  // the outputs stored: the next chunk's may take their place
      }
    }
  }
  wait_copies<0>();  // a pair left alone leaves no copy in flight into memory it gives up
  cluster.barrier_wait();
#else
  __trap();  // launched only where DeviceFeatures::clusters() holds
#endif
}

// One block's share of `rows` rows split over `blocks` blocks, in whole tiles.
int row_share(int rows, int blocks) { return round_up((rows + blocks - 1) / blocks, gram_tile_rows); }

// The cluster size and rows per block of the fused round for an M x N matrix (V's rows too when
// uv): the fewest blocks whose shares fit `max_rows`; cluster 0 when none does.
FusedShape fused_shape(int M, int N, bool uv, int max_rows) {
  for (int blocks = 1; blocks <= fused_max_cluster; ++blocks) {
    const int w_rows = row_share(M, blocks), v_rows = uv ? row_share(N, blocks) : 0;
    if (w_rows + v_rows <= max_rows) return {blocks, w_rows, v_rows};
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// The Gram schedule in one cluster per matrix (the ladder's rung 14), for matrices whose pairs of
// blocks and rows fit one cluster: every sweep in one launch, the columns in shared memory from
// the first round to the last. Block (p, h) of the cluster (the h-th of `split` blocks of pair p)
// holds share h of the rows of W and V for the 32 columns of positions 2p and 2p + 1, the ring's
// pair in even rounds, and a third half for position 2p + 2, which pair p + 1's blocks lend it
// for an odd round: they write their outputs of position 2p + 2 straight into its shared memory,
// and it writes its outputs of that position back into theirs. A cluster barrier then ends the
// round: no launch, no load of the rows through L2 and no store (on the H200, double, a fused
// round of 100 x 100 spent 1.6 us loading, 1.0 storing and 0.8 to the next launch). Reading the
// lent half from the neighbour after the barrier instead took the same time (100 x 100: 878
// against 877 us for the kernel under Nsight Compute).
// The positions start in column order and are never sorted: the sweeps alternate the direction
// of the pairs' outputs instead (the larger half to the higher position in even sweeps, to the
// lower one in odd ones), so that the ring carries the columns back and forth as the sorted start
// of each fused sweep does (sorted at the start, on the H200 in double 100 x 100 took 695 and 697
// us over two seeds against 691 and 684, 125 x 125 727 and 725 against 696 and 705, the same
// sweeps). A pair that is orthogonal swaps its halves, so a sweep
// that rotates nothing pairs every two blocks once and every two columns of a block in its first
// round: its verdict is the whole matrix's. The all-pairs test (cluster_all_pairs_test) mostly
// stands for that sweep.
constexpr int cluster_sweeps_max_blocks = 8;  // the portable cluster size
constexpr int cluster_sweeps_max_rows = 2 * fused_chunk_rows;
struct ClusterShape {
  int pairs = 0;               // pairs of blocks of the ring; 0: the matrix does not fit
  int split = 0;               // blocks per pair, each with a share of the rows
  int w_rows = 0, v_rows = 0;  // rows of W and of V per block: multiples of gram_tile_rows
  int ldt = 0;                 // a slot's stride: its rows rounded up to whole products, plus 4
  __host__ __device__ int blocks() const { return pairs * split; }
};
template <class T>
std::size_t cluster_shared_bytes(const ClusterShape& shape) {
  return sizeof(T) * (3 * gram_block * std::size_t(shape.ldt) + gram_width * (apply_ldq + gram_width));
}

// The shape for an M x N matrix of `block_positions` positions (V's rows too when uv): the fewest
// blocks per pair whose shares are one product of rows, else two.
ClusterShape cluster_shape(int M, int N, bool uv, int block_positions) {
  const int pairs = block_positions / 2;
  for (const int max_rows : {fused_chunk_rows, cluster_sweeps_max_rows})
    for (int split = 1; split * pairs <= cluster_sweeps_max_blocks; ++split) {
      const int w_rows = row_share(M, split), v_rows = uv ? row_share(N, split) : 0;
      if (w_rows + v_rows <= max_rows)
        return {pairs, split, w_rows, v_rows, round_up(w_rows + v_rows, fused_chunk_rows) + 4};
    }
  return {};
}

// The all-pairs test inside the cluster (as gram_all_pairs_test does for the fused rounds): after a
// sweep whose largest cosine was at most sqrt(tol), the largest scaled off-diagonal over every
// pair of the matrix's columns, the same in every block; when it is within tol, it stands for the
// sweep that would rotate nothing. Jacobi converges quadratically: after a sweep at x the pairs
// are off by about x^2, so a test after a larger x is likely to fail (100 x 100 met 4.2e-5 in its
// eighth sweep and 1.9e-13 in its ninth; at the fused path's threshold, tol^(1/4), it tested after
// both, and the first test failed). On the H200, double, against no test in the same run: 100 x
// 100 621 and 615 us over two seeds against 679 and 675; 125 x 125 626 and 636 against 689 and 701
// (the same sweeps). Group p,
// the 32 columns of positions 2p and 2p + 1 (slots 0..31 of pair p's blocks), forms its shares of
// its products with groups p + d (mod P) for d = 0 .. P / 2 (of two groups P / 2 apart only the
// lower one), reading the other group's rows from the shared memory of the block with the same
// rows, into `products` (d at [d * 1024]). After a barrier block h of pair p adds up the shares of
// d = h, h + split, ... and scales them by the column norms, the diagonals of d = 0 (0 for rounding
// noise, by the slots' error scales: such a column is left out, as the sweeps leave it). Every
// thread of every block calls it.
constexpr int cluster_test_products = 4;  // held by SolveShared's buffers: P up to 7
static_assert(cluster_test_products * gram_width * gram_width <= 4 * SolveShared<float>::buffer_size,
              "the test's products fit the solve's buffers");
#if ROOFLAB_HAS_CLUSTERS
template <class T>
__device__ T cluster_all_pairs_test(const cooperative_groups::cluster_group& cluster, const ClusterShape& shape,
                                    const T* slots, const T* slot_scales, T* products, T* norms,
                                    T& block_max, unsigned long long* team_scratch) {
  const int P = shape.pairs, rank = int(cluster.block_rank()), pair = rank / shape.split;
  const int share = rank % shape.split;
  const auto formed = [&](int group, int d) { return !(2 * d == P && group >= d); };
  for (int d = 0; 2 * d <= P; ++d) {
    if (!formed(pair, d)) continue;
    const T* other = cluster.map_shared_rank(slots, (pair + d) % P * shape.split + share);
    SolveGramPatch<T> patch;
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows) patch.add_tiles(slots + r, other + r, shape.ldt);
    T* const product = products + d * gram_width * gram_width;
    patch.for_each([&](int k, int l, T value) { product[k * gram_width + l] = value; });
  }
  cluster.sync();  // every block's shares are in
  T off = 0;
  for (int d = share; 2 * d <= P; d += shape.split) {
    if (!formed(pair, d)) continue;
    const int other = (pair + d) % P;
    __syncthreads();  // the previous products' norms are read
    if (threadIdx.x < 2 * gram_width) {  // the two groups' column norms, from their diagonal products
      const int group = threadIdx.x < gram_width ? pair : other, k = threadIdx.x % gram_width;
      T norm = 0;
      for (int h = 0; h < shape.split; ++h)
        norm += cluster.map_shared_rank(products, group * shape.split + h)[k * (gram_width + 1)];
      const T scale = cluster.map_shared_rank(slot_scales, group * shape.split)[k];
      norms[threadIdx.x] = is_rounding_noise(norm, scale) ? T(0) : norm;
    }
    __syncthreads();
    constexpr int per_thread = gram_width * gram_width / gram_solve_threads;
    T product[per_thread] = {};
    for (int h = 0; h < shape.split; ++h) {
      const T* shares = cluster.map_shared_rank(products, pair * shape.split + h) + d * gram_width * gram_width;
#pragma unroll
      for (int i = 0; i < per_thread; ++i) product[i] += shares[threadIdx.x + i * gram_solve_threads];
    }
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int k = (threadIdx.x + i * gram_solve_threads) / gram_width, l = threadIdx.x % gram_width;
      if (d > 0 || k < l)  // 0 for padding: a zero column
        off = fmax(off, scaled_off_diagonal(norms[k], norms[gram_width + l], product[i]));
    }
  }
  off = BlockTeam{team_scratch}.max(off);
  if (threadIdx.x == 0) block_max = off;
  cluster.sync();  // every block's largest is in, and every share read
  for (int r = 0; r < shape.blocks(); ++r) off = fmax(off, *cluster.map_shared_rank(&block_max, r));
  return off;
}
#endif

template <class T>
__global__ void __launch_bounds__(gram_solve_threads, 1)
    gram_cluster_sweeps(GlobalState<T> G, ClusterShape shape) {
#if ROOFLAB_HAS_CLUSTERS
  namespace cg = cooperative_groups;
  constexpr unsigned full = 0xffffffffu;
  constexpr int ld = SolveShared<T>::ld, ldq = apply_ldq;
  wait_for_previous_kernel();
  extern __shared__ __align__(16) unsigned char cluster_shared[];
  __shared__ __align__(16) SolveShared<T> sh;
  __shared__ int ids[3 * gram_block];  // each slot's column (>= N: padding)
  // Each slot's error scale (jacobi_math.hpp, RoundingNoise); -1 until the column's first round,
  // whose fresh squared norm it then is.
  __shared__ T scales[3 * gram_block];
  __shared__ T block_off;              // the block's largest cosine of the sweep just ended
  __shared__ T block_test;             // the block's largest in the all-pairs test
  __shared__ T column_norms[gram_width], sigmas[gram_width];  // the block's share, then the whole
  __shared__ T test_norms[2 * gram_width];
  __shared__ unsigned long long team_scratch[32];
  const int ldt = shape.ldt;
  T* const slots = reinterpret_cast<T*>(cluster_shared);  // row r of slot s at slots[s * ldt + r]
  T* const q = slots + 3 * gram_block * ldt;              // Q, output k at column k: Q_sk at q[s * ldq + k]
  T* const part = q + gram_width * ldq;                   // this block's part of G, G_kl at k * 32 + l
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = int(cluster.block_rank()), pair = rank / shape.split;
  const std::int64_t matrix = blockIdx.x / shape.blocks();
  if (!G.active[matrix]) return;  // uniform over the cluster
  const int lane = threadIdx.x & 31, k0 = (threadIdx.x >> 5) * solve_rows;
  const int w0 = rank % shape.split * shape.w_rows, v0 = rank % shape.split * shape.v_rows;
  const int rows = shape.w_rows + shape.v_rows;
  T* W = G.w(matrix);
  T* V = G.v(matrix);

  // Positions 2p and 2p + 1 (slots 0..31), columns 32p .. 32p + 31: W's rows first, then V's; the
  // rows past them zero.
  {
    const int column = 2 * pair * gram_block + lane;
    if (threadIdx.x < gram_width) {
      ids[threadIdx.x] = column;
      scales[threadIdx.x] = T(-1);
    }
    const auto column_of = [&](int slot) { return __shfl_sync(full, column, slot); };
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(slots + r, ldt, W, G.ldw, G.M, G.N,
                                                                            w0 + r, column_of);
    for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          slots + shape.w_rows + r, ldt, V, G.ldv, G.N, G.N, v0 + r, column_of);
    commit_copies();
    for (int e = threadIdx.x; e < 3 * gram_block * (ldt - rows); e += gram_solve_threads)
      slots[e / (ldt - rows) * ldt + rows + e % (ldt - rows)] = T(0);
    wait_copies<0>();
  }
  cluster.sync();  // the neighbours' slots are ready for this block's outputs

  const int rounds = 2 * shape.pairs;
  T sweep_off = 0, off = 0;
  int sweep = 0;
  for (int step = 0;; ++step) {
    const int round = step % rounds;
    const bool odd = round & 1;
    if (step > 0) {
      cluster.sync();  // the previous round's outputs are in, in every block
      if (round == 0) {  // a sweep ended: every block reads every block's largest cosine
        off = 0;
        for (int r = 0; r < shape.blocks(); ++r) off = fmax(off, *cluster.map_shared_rank(&block_off, r));
        ++sweep;
        if (!(off > G.P.tol) || sweep >= G.P.max_sweeps) break;
        if (off <= sqrt(G.P.tol) && shape.pairs / 2 < cluster_test_products) {
          const T tested = cluster_all_pairs_test(cluster, shape, slots, scales, sh.buffers, test_norms,
                                                  block_test, team_scratch);
          if (!(tested > G.P.tol)) {  // the test counts as the last sweep
            ++sweep;
            off = tested;
            break;
          }
        }
        sweep_off = 0;
      }
    }
    // The round's 32 slots: positions 2p, 2p + 1, or in an odd round 2p + 1, 2p + 2 (the last pair
    // then has no partner).
    T* const tile = slots + (odd ? gram_block : 0) * ldt;
    int* const tile_ids = ids + (odd ? gram_block : 0);
    T* const tile_scales = scales + (odd ? gram_block : 0);
    const bool works = !odd || pair + 1 < shape.pairs;
    const int column = tile_ids[lane];
    const T lane_scale = works && column < G.N ? tile_scales[lane] : T(0);
    if (works) {
      SolveGramPatch<T> patch;
      for (int r = 0; r < shape.w_rows; r += gram_tile_rows) patch.add_tile(tile + r, ldt);
      patch.for_each([&](int k, int l, T value) { part[k * gram_width + l] = value; });
    }
    if (shape.split > 1)
      cluster.sync();  // the pair's parts are in
    else
      __syncthreads();
    if (works) {
      const InnerOrder order{!inner_sweep_is_full(round, rounds, gram_full_inner_period)};
      const int lane_column = seat_column(order.seat(lane));
      T x[solve_rows] = {};  // G_kl, k = k0 + kk, l = lane: the parts in rank order, the same in every block
      for (int r = pair * shape.split; r < (pair + 1) * shape.split; ++r) {
        const T* other = cluster.map_shared_rank(part, r);
#pragma unroll
        for (int kk = 0; kk < solve_rows; ++kk) x[kk] += other[(k0 + kk) * gram_width + lane];
      }
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk) sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
      clear_gram_noise(x, lane_scale, order, sh);
      const PairSolve<T> solved = solve_pair(G, order, sh, x);
      sweep_off = fmax(sweep_off, solved.off);
      // In the column's first round its scale is its fresh squared norm.
      const T scale = lane_scale < 0 ? solved.diagonal : lane_scale;
      // Where the round's outputs go, slots 0..15 to `low` and 16..31 to `high`: the half that the
      // next round's pair borrows (after an even round, position 2p to pair p - 1's third half) or
      // returns (after an odd one, 2p + 2 to pair p + 1's first) goes straight to the neighbour.
      T* low = tile;
      int* low_ids = tile_ids;
      T* low_scales = tile_scales;
      T* high = tile + gram_block * ldt;
      int* high_ids = tile_ids + gram_block;
      T* high_scales = tile_scales + gram_block;
      if (odd) {
        high = cluster.map_shared_rank(slots, rank + shape.split);
        high_ids = cluster.map_shared_rank(ids, rank + shape.split);
        high_scales = cluster.map_shared_rank(scales, rank + shape.split);
      } else if (pair > 0) {
        low = cluster.map_shared_rank(slots, rank - shape.split) + gram_width * ldt;
        low_ids = cluster.map_shared_rank(ids, rank - shape.split) + gram_width;
        low_scales = cluster.map_shared_rank(scales, rank - shape.split) + gram_width;
      }
      if (!solved.rotated) {
        // Left alone, the pair's halves still trade positions, as the fused round's do.
        for (int e = threadIdx.x; e < gram_block * ldt; e += gram_solve_threads) {
          const T first = tile[e], second = tile[e + gram_block * ldt];
          low[e] = second;
          high[e] = first;
        }
        const T second_scale = __shfl_down_sync(full, scale, gram_block);
        if (threadIdx.x < gram_block) {
          low_ids[threadIdx.x] = tile_ids[threadIdx.x + gram_block];
          low_scales[threadIdx.x] = second_scale;
          high_ids[threadIdx.x] = column;
          high_scales[threadIdx.x] = scale;
        }
      } else {
        T eigenvalue;
        const int output = rank_outputs(sh, solved.now, order, column, column < G.N, eigenvalue);
        // Even sweeps send the larger half to the higher position, odd ones to the lower: output
        // k lands in slot (k + 16) mod 32 or k.
        const int to = sweep % 2 == 0 ? (output + gram_block) % gram_width : output;
        const T* const q_now = sh.buffers + (2 + solved.now) * SolveShared<T>::buffer_size;
#pragma unroll
        for (int kk = 0; kk < solve_rows; ++kk) q[(k0 + kk) * ldq + to] = q_now[(k0 + kk) * ld + lane_column];
        const int output_column = sh.slot_column[output];
        const T output_scale = output_error_scale(sh, solved.now, order, scale);
        __syncthreads();  // Q is in
        for (int c = 0; c < rows; c += fused_chunk_rows) {
          RowsTimesQ<T> product;
          product.multiply(tile + c, ldt, q, ldq);
          // The chunk's inputs are read: its outputs may take their place. In double a warp reads
          // and writes only its own 16 rows; in float a thread's outputs are other warps' inputs.
          if constexpr (sizeof(T) == 8)
            __syncwarp();
          else
            __syncthreads();
          product.stage(low + c, high + c, ldt);
        }
        if (threadIdx.x < gram_width) {
          (to < gram_block ? low_ids : high_ids)[to % gram_block] = output_column;
          (to < gram_block ? low_scales : high_scales)[to % gram_block] = output_scale;
        }
      }
    }
    if (round == rounds - 1 && threadIdx.x == 0) block_off = sweep_off;
  }

  // Sigma of each column (the pair's blocks' shares of its squared norm added in rank order, the
  // same in each), then positions 2p and 2p + 1 back to their columns, W's divided by sigma when
  // the vectors are wanted: global_column_norms and global_normalize for the other schedules.
  for (int s = threadIdx.x >> 5; s < gram_width; s += solve_parts) {
    T sum = 0;
    for (int r = lane; r < shape.w_rows; r += 32) sum = fma(slots[s * ldt + r], slots[s * ldt + r], sum);
    sum = group_sum(sum, 32);
    if (lane == 0) column_norms[s] = sum;
  }
  cluster.sync();  // the pair's shares are in
  if (threadIdx.x < gram_width) {
    T sum = 0;
    for (int r = pair * shape.split; r < (pair + 1) * shape.split; ++r)
      sum += cluster.map_shared_rank(column_norms, r)[threadIdx.x];
    const T sigma = sigma_from_norm2(sum, scales[threadIdx.x]);
    sigmas[threadIdx.x] = sigma;
    if (rank % shape.split == 0 && ids[threadIdx.x] < G.N) G.norms_of(matrix)[ids[threadIdx.x]] = sigma;
  }
  __syncthreads();
  if (G.P.uv)
    for (int e = threadIdx.x; e < gram_width * shape.w_rows; e += gram_solve_threads) {
      const int s = e / shape.w_rows, r = e % shape.w_rows;
      if (sigmas[s] > 0) slots[s * ldt + r] /= sigmas[s];
    }
  __syncthreads();
  for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
    store_columns<gram_tile_rows, gram_solve_threads>(slots + r, ldt, W, G.ldw, G.M, w0 + r, ids, G.N);
  for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
    store_columns<gram_tile_rows, gram_solve_threads>(slots + shape.w_rows + r, ldt, V, G.ldv, G.N, v0 + r,
                                                      ids, G.N);
  if (rank == 0 && threadIdx.x == 0) {
    G.sweeps[matrix] = sweep;
    G.converged[matrix] = !(off > G.P.tol);
    G.off_bits[matrix] = static_cast<unsigned long long>(__double_as_longlong(double(off)));
    G.active[matrix] = 0;
  }
  cluster.sync();  // no block leaves while another may still read its shared memory
#else
  __trap();  // launched only where DeviceFeatures::clusters() holds
#endif
}

// The all-pairs test (jacobi_math.hpp): whether the columns are orthogonal to tol after a sweep
// that met only small off-diagonals, in one launch instead of the sweep that would rotate nothing.
// A block per matrix and pair of 32-column groups (first <= second, by column index) forms
// W_first^T W_second, 64 rows at a time by asynchronous copies (tensor cores in double, FMAs in
// float, as the partials do), and raises the matrix's test_bits to its largest |G_pq| /
// sqrt(norm_p norm_q) over p < q, with the tracked norms (the solves' eigenvalues). Each tile's
// products are summed apart and then added, as the partials' slices are: tol is sqrt(M) eps, about
// the rounding of a dot product summed in one chain over M rows. With one chain the test cost
// instead of saving (H200, double, against no test in the same run: 256 x 256 3.18 against 3.08
// ms, 1024 x 1024 20.0 against 18.9 ms); with tile sums 2.96 against 3.39 and 18.4 against 18.8.
// Pairs found just above tol, up to recheck_capacity of them a block, are formed again from the
// columns with compensated sums (CompensatedSum), and their products and norms as accurate as the
// columns allow decide: a sweep is not spent on what was only the rounding of the test's sums.
// The kernel also ends the sweep and starts the next one, in place of three small kernels a sweep:
// its blocks sort the positions by tracked norm for the next sweep (rank_chunk, as
// global_sweep_start does; harmless for a matrix that stops), and each matrix's last block to
// finish, which the arrivals count, ends the sweep (sweep_end) with the test's verdict and clears
// the bits for the next one. The next sweep's first round publishes the count (the Gram kernels
// call publish_previous_count).
constexpr int test_ld = gram_tile_rows + 4;  // 4 (mod 16), as the partials' tiles
constexpr int recheck_capacity = 64;
constexpr double recheck_factor = 16;  // rechecked: tol < scaled off-diagonal <= 16 tol
constexpr int test_tile_size = 2 * gram_width * test_ld;
template <class T>
constexpr int gram_test_shared_bytes = int(2 * test_tile_size * sizeof(T));

// Whether the test takes an active matrix at the end of this sweep: the sweep leaves it sweeping
// on (sweep_end: off-diagonals above tol, sweeps left), and they were all small.
template <class T>
__device__ bool takes_all_pairs_test(const GlobalState<T>& G, std::int64_t matrix) {
  const double off = bits_as_double(G.off_bits[matrix]);
  return off > double(G.P.tol) && G.sweeps[matrix] + 1 < G.P.max_sweeps &&
         off <= double(all_pairs_test_threshold(G.P.tol));
}

// One block's share of the test: the pairs of column groups `first` and `second`. Every thread of
// the block calls it.
template <class T>
__device__ void test_group_pair(const GlobalState<T>& G, std::int64_t matrix, int first, int second,
                                T* tiles, unsigned long long* team_scratch) {
  const T* W = G.w(matrix);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  GramQuarter<T> gram;
  stream_tiles(
      0, G.M, tiles, test_tile_size,
      [&](int r0, T* tile) {  // slots 0..31 the first group's columns, 32..63 the second's
        copy_tile_async<gram_tile_rows, gram_threads, 2 * gram_width>(
            tile, test_ld, W, G.ldw, G.M, G.N, r0, [&](int slot) {
              return slot < gram_width ? gram_width * first + slot : gram_width * (second - 1) + slot;
            });
      },
      [&](const T* tile) {  // a tile's products summed on their own, then added: see above
        GramQuarter<T> tile_gram;
        tile_gram.add_tile(tile, test_ld, gram_width);
#pragma unroll
        for (int b = 0; b < gram.outer; ++b)
#pragma unroll
          for (int a = 0; a < gram.inner; ++a) gram.sum[b][a] += tile_gram.sum[b][a];
      });
  const T* norms = G.norms_of(matrix);
  __shared__ int2 recheck[recheck_capacity];  // (p, q)
  __shared__ int rechecks;
  if (threadIdx.x == 0) rechecks = 0;
  __syncthreads();
  const T tol = G.P.tol;
  T off = 0;
#pragma unroll
  for (int b = 0; b < gram.outer; ++b)
#pragma unroll
    for (int a = 0; a < gram.inner; ++a) {
      const int p = gram_width * first + gram.row(b, a), q = gram_width * second + gram.column(b, a);
      if (p >= q || q >= G.N) continue;
      const T cosine = scaled_off_diagonal(norms[p], norms[q], gram.sum[b][a]);
      if (cosine > tol && cosine <= T(recheck_factor) * tol) {
        const int slot = atomicAdd(&rechecks, 1);
        if (slot < recheck_capacity) {
          recheck[slot] = make_int2(p, q);
          continue;
        }
      }
      off = fmax(off, cosine);
    }
  __syncthreads();
  // A warp per pair to recheck: the lanes' compensated sums over every 32nd row, then combined.
  const int count = min(rechecks, recheck_capacity);
  for (int r = warp; r < count; r += gram_threads / 32) {
    const T* wp = W + std::int64_t(recheck[r].x) * G.ldw;
    const T* wq = W + std::int64_t(recheck[r].y) * G.ldw;
    CompensatedSum<T> dot, pp, qq;
    for (int row = lane; row < G.M; row += 32) {
      const T x = wp[row], y = wq[row];
      dot.add_product(x, y);
      pp.add_product(x, x);
      qq.add_product(y, y);
    }
    const auto combined = [](CompensatedSum<T> sum, const CompensatedSum<T>& other) {
      sum.add(other);
      return sum;
    };
    dot = detail::warp_reduce(dot, combined);  // lane 0 holds the whole sums
    pp = detail::warp_reduce(pp, combined);
    qq = detail::warp_reduce(qq, combined);
    if (lane == 0) off = fmax(off, scaled_off_diagonal(pp.value(), qq.value(), dot.value()));
  }
  off = BlockTeam{team_scratch}.max(off);
  if (threadIdx.x == 0) raise_to(&G.test_bits[matrix], double(off));
}

// A block per matrix and pair of column groups.
template <class T>
__global__ void __launch_bounds__(gram_threads) gram_all_pairs_test(GlobalState<T> G, int groups) {
  extern __shared__ __align__(16) unsigned char test_shared[];
  __shared__ unsigned long long team_scratch[32];
  chain_small_kernel();  // most sweeps test nothing
  const int group_pairs = groups * (groups + 1) / 2;
  const std::int64_t matrix = blockIdx.x / group_pairs;
  if (!G.active[matrix]) return;  // uniform over the block
  const bool tested = takes_all_pairs_test(G, matrix);
  const int block = int(blockIdx.x % group_pairs);
  if (tested) {
    const GroupPair pair = upper_triangle_pair(block, groups);
    test_group_pair(G, matrix, pair.first, pair.second, reinterpret_cast<T*>(test_shared), team_scratch);
  }
  const int chunks = (G.positions + sort_columns - 1) / sort_columns;
  for (int chunk = block; chunk < chunks; chunk += group_pairs) {
    __syncthreads();  // a previous chunk's counts are read
    rank_chunk<gram_threads / 32>(G.norms_of(matrix), G.positions, chunk, G.pos_of(matrix));
  }
  if (threadIdx.x != 0) return;
  __threadfence();  // this block's raise of test_bits, before it arrives
  if (atomicAdd(&G.test_arrivals[matrix], 1) + 1 < group_pairs) return;
  __threadfence();  // every block arrived: their raises are visible
  sweep_end(G, matrix, G.active_count, tested);
  G.test_arrivals[matrix] = 0;
  if (!G.active[matrix]) return;  // a matrix that stops keeps its last off-diagonal for the report
  G.off_bits[matrix] = 0;
  G.test_bits[matrix] = 0;
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

// A block per matrix, when vectors are wanted: completes the columns of sigma 0 to an orthonormal
// set (pos as the scratch of which columns are done). Most matrices have none, which one pass over
// sigma finds (completion and the sort in one block per matrix took 22 us at 256 x 256).
template <class T>
__global__ void __launch_bounds__(global_threads) global_complete(GlobalState<T> G) {
  __shared__ unsigned long long scratch[32];
  wait_for_previous_kernel();
  const BlockTeam team{scratch};
  const std::int64_t matrix = blockIdx.x;
  if (G.bad[matrix]) return;  // uniform over the block
  const T* sigma = G.norms_of(matrix);
  int* pos = G.pos_of(matrix);
  bool incomplete = false;
  for (int c = team.rank(); c < G.N; c += team.size()) {
    pos[c] = sigma[c] > 0;
    incomplete = incomplete || !pos[c];
  }
  if (!__syncthreads_or(incomplete)) return;
  complete_orthonormal_columns(team, G.w(matrix), G.ldw, G.M, G.N, sigma, pos,
                               G.coefficients + matrix * G.positions, 32);
}

// The completion of one matrix with many columns of sigma 0 by Householder QR
// (complete_by_householder). One block numbers W's columns: those of sigma > 0 first (slots 0 ..
// r - 1, in column order), then the others (slots r .. N - 1), and counts the others.
template <class T>
__global__ void __launch_bounds__(global_threads)
    number_completion_slots(GlobalState<T> G, int* slot_of_column, unsigned* zero_count) {
  wait_for_previous_kernel();
  const T* sigma = G.norms_of(0);
  for (int c = threadIdx.x; c < G.N; c += blockDim.x) {
    int kept = 0, kept_before = 0;
    for (int other = 0; other < G.N; ++other) {
      kept += sigma[other] > 0;
      kept_before += other < c && sigma[other] > 0;
    }
    slot_of_column[c] = sigma[c] > 0 ? kept_before : kept + (c - kept_before);
    if (c == 0) *zero_count = unsigned(G.N - kept);
  }
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
    if (bad) {
      if (u_side)
        P.U[matrix * P.u_stride + i + r * std::int64_t(P.ldu)] = nan;
      else
        P.V[matrix * P.v_stride + i + r * std::int64_t(P.ldv)] = nan;
      continue;
    }
    write_output_element(P, matrix, transposed, G.w(matrix), G.ldw, G.v(matrix), G.ldv, i, r,
                         pos[r], u_side);
  }
}

// A grid that covers `items` work items of `per_block` each, capped at a few waves (the kernels
// stride over the rest).
unsigned grid_for(std::int64_t items, int per_block) {
  const std::int64_t blocks = (items + per_block - 1) / per_block;
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, 32ll * current_sm_count())));
}

// Launches a kernel that calls wait_for_previous_kernel() with programmatic dependent launch where
// the device and the loaded code have it: it may start before the stream's previous kernel
// completes (elsewhere it starts after, as any launch). Blocks go in clusters of `cluster`, which
// only a device with clusters is asked for.
template <class... Parameters, class... Arguments>
void launch_after_previous(void (*kernel)(Parameters...), std::int64_t blocks, int threads,
                           std::size_t shared_bytes, int cluster, cudaStream_t stream, const char* name,
                           Arguments... arguments) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (current_device_features().programmatic_launch()) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count++].val.clusterDim = {unsigned(cluster), 1, 1};
  }
  config.attrs = attributes;
  config.numAttrs = count;
  ROOFLAB_CUDA("svd", std::string("launching ") + name,
               cudaLaunchKernelEx(&config, kernel, arguments...));
  detail::check_launch("svd", name);
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// How many clusters of `cluster` blocks of gram_solve_threads threads with `bytes` of dynamic
// shared memory each the device holds at once, for a grid of `clusters` of them.
template <class... Parameters>
int max_active_clusters(void (*kernel)(Parameters...), std::int64_t clusters, int cluster, std::size_t bytes) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(clusters * cluster));
  config.blockDim = dim3(unsigned(gram_solve_threads));
  config.dynamicSmemBytes = bytes;
  cudaLaunchAttribute dimension{};
  dimension.id = cudaLaunchAttributeClusterDimension;
  dimension.val.clusterDim = {unsigned(cluster), 1, 1};
  config.attrs = &dimension;
  config.numAttrs = 1;
  int active = 0;
  ROOFLAB_CUDA("svd", "asking how many clusters of the kernel fit on the GPU",
               cudaOccupancyMaxActiveClusters(&active, kernel, &config));
  return active;
}

// Consecutive pieces of one scratch allocation: sizes from aligned() keep every piece aligned.
class ScratchPieces {
 public:
  explicit ScratchPieces(const StreamBuffer& scratch) : at_(scratch.as<unsigned char>()) {}
  template <class U>
  U* take(std::size_t bytes) {
    U* const piece = reinterpret_cast<U*>(at_);
    at_ += bytes;
    return piece;
  }

 private:
  unsigned char* at_;
};

// Every matrix's verdict on NaN or Inf and its scaling exponent, then W = A (or A^T) scaled by it
// and V = I when G.P.uv (global_max_abs, global_begin, global_load).
template <class T>
void load_scaled(const GlobalState<T>& G, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const std::int64_t batch = G.P.batch;
  const std::int64_t elements = std::int64_t(G.P.m) * G.P.n;
  // About 16 elements a thread: whole columns per block.
  const int columns = std::min(G.P.n, std::max(1, global_threads * 16 / G.P.m));
  const std::int64_t blocks_per_matrix = (G.P.n + columns - 1) / columns;
  require(batch * blocks_per_matrix < (std::int64_t(1) << 31), op, "batch", "too many elements");
  ROOFLAB_CUDA(op, "zeroing the matrices' largest entries",
               cudaMemsetAsync(G.max_bits, 0, sizeof(unsigned long long) * batch, stream));
  launch_after_previous(global_max_abs<T>, batch * blocks_per_matrix, global_threads, 0, 1, stream,
                        "global_max_abs", G, columns, int(blocks_per_matrix));
  const unsigned per_matrix_grid = unsigned((batch + global_threads - 1) / global_threads);
  launch_after_previous(global_begin<T>, per_matrix_grid, global_threads, 0, 1, stream, "global_begin", G);
  launch_after_previous(global_load<T>, grid_for(elements * batch, global_threads), global_threads, 0, 1,
                        stream, "global_load", G);
}

// Launches a cooperative kernel; false (and no error left behind) when the device cannot hold the
// grid at once after all, as under a tool that takes resources, so the caller can fall back to
// ordinary launches. Other errors throw.
bool launched_cooperatively(void* kernel, int blocks, int threads, void** arguments,
                            std::size_t shared_bytes, cudaStream_t stream) {
  const cudaError_t status = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(threads), arguments,
                                                         shared_bytes, stream);
  if (status == cudaErrorCooperativeLaunchTooLarge) {
    cudaGetLastError();  // not sticky: clear it
    return false;
  }
  ROOFLAB_CUDA("svd", "launching a cooperative kernel", status);
  return true;
}

// Blocks of b columns for the blocked schedule: the widest of 16, 8, 4 whose pair fits in shared
// memory and still gives a quarter of the SMs a pair of blocks per round; else the narrowest that
// fits (0: none). Wider blocks mean fewer rounds per sweep, narrower ones more blocks at once.
template <class T>
int blocked_width(int M, int N, int batch) {
  const int optin = shared_memory_optin();
  int narrowest_fitting = 0;
  for (const int b : {16, 8, 4}) {
    if (blocked_layout(M, b, sizeof(T)).bytes > optin) continue;
    narrowest_fitting = b;
    const std::int64_t pairs_per_round = std::int64_t(batch) * ((N + b - 1) / b + 1) / 2;
    if (b > 4 && 4 * pairs_per_round < current_sm_count()) continue;
    return b;
  }
  return narrowest_fitting;
}

// Threads of a blocked pair: b pairs per inner round, 32 lanes each for long columns (16 below
// 256 rows), so that one inner round is a few loads per lane.
int blocked_threads(int M, int block) {
  const int lanes = M >= 256 ? 32 : 16;
  return std::clamp(block * lanes, 32, blocked_max_threads);
}

// The cluster for `batch` M x N matrices when they fit and every matrix's cluster is on the GPU at
// once; pairs 0 otherwise.
template <class T>
ClusterShape cluster_sweeps_shape(int M, int N, bool uv, std::int64_t batch) {
  if (!current_device_features().clusters()) return {};
  const int blocks = (N + gram_block - 1) / gram_block;
  const ClusterShape shape = cluster_shape(M, N, uv, blocks + (blocks & 1));
  if (shape.pairs == 0) return {};
  const std::size_t bytes = cluster_shared_bytes<T>(shape);
  ROOFLAB_CUDA("svd", "letting the cluster kernel take its shared memory",
               cudaFuncSetAttribute(gram_cluster_sweeps<T>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  if (max_active_clusters(gram_cluster_sweeps<T>, batch, shape.blocks(), bytes) < batch) return {};
  return shape;
}

}  // namespace

template <class T>
bool blocked_fits(int m, int n) {
  return blocked_width<T>(std::max(m, n), std::min(m, n), 1) > 0;
}

template <class T>
bool runs_in_one_cluster(int m, int n, bool uv, int batch) {
  return cluster_sweeps_shape<T>(std::max(m, n), std::min(m, n), uv, batch).pairs > 0;
}

namespace {
// Completes the columns of sigma 0 of one matrix (batch 1, W normalized, sigma in G.norms) to an
// orthonormal set (defined with QR preconditioning, whose cuSOLVER calls it shares).
template <class T>
void complete_single_matrix(const GlobalState<T>& G, cudaStream_t stream);
}  // namespace

template <class T>
void run_global(const Problem<T>& problem, GlobalSchedule schedule, const Report& report,
                cudaStream_t stream) {
  constexpr const char* op = "svd";
  if (problem.batch == 0) return;
  GlobalState<T> G;
  G.P = problem;
  G.report = report;
  G.M = std::max(problem.m, problem.n);
  G.N = std::min(problem.m, problem.n);
  G.ldw = shared_leading_dimension(G.M);
  G.ldv = problem.uv ? shared_leading_dimension(G.N) : 0;
  const std::int64_t batch = problem.batch;
  BlockedLayout blocked;
  int blocked_lanes = 0, blocked_block_threads = 0;
  const bool blocked_schedule =
      schedule == GlobalSchedule::blocked || schedule == GlobalSchedule::blocked_persistent;
  const bool gram_schedule = schedule == GlobalSchedule::gram || schedule == GlobalSchedule::gram_fused ||
                             schedule == GlobalSchedule::gram_cluster;
  if (blocked_schedule) {
    G.block = blocked_width<T>(G.M, G.N, problem.batch);
    require(G.block > 0, op, "m, n", "columns too long for the blocked schedule's shared memory");
    const int blocks = (G.N + G.block - 1) / G.block;
    G.block_positions = blocks + (blocks & 1);
    G.positions = G.block_positions * G.block;
    blocked = blocked_layout(G.M, G.block, sizeof(T));
    blocked_block_threads = blocked_threads(G.M, G.block);
    blocked_lanes = lanes_per_pair(blocked_block_threads, blocked.slots);
    if (blocked.bytes > 48 * 1024) {
      ROOFLAB_CUDA(
          op, "letting the blocked rounds take their shared memory",
          cudaFuncSetAttribute(blocked_round<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               blocked.bytes));
      ROOFLAB_CUDA(
          op, "letting the persistent blocked kernel take its shared memory",
          cudaFuncSetAttribute(blocked_persistent<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               blocked.bytes));
    }
  } else if (gram_schedule) {
    G.block = gram_block;
    const int blocks = (G.N + gram_block - 1) / gram_block;
    G.block_positions = blocks + (blocks & 1);
    G.positions = G.block_positions * gram_block;
  } else {
    G.positions = G.N + (G.N & 1);
  }
  // The Gram schedule's round scratch: slices of rows enough for gram_partial_blocks_per_sm blocks
  // per SM per round.
  GramWork<T> gram;
  const std::int64_t gram_pairs = gram_schedule ? batch * (G.block_positions / 2) : 0;
  const int gram_w_tiles = (G.M + gram_apply_rows - 1) / gram_apply_rows;
  const int gram_v_tiles = problem.uv ? (G.N + gram_apply_rows - 1) / gram_apply_rows : 0;
  // The all-pairs test's blocks: a matrix's pairs of 32-column groups.
  const int test_groups = (G.N + gram_width - 1) / gram_width;
  const std::int64_t test_group_pairs = std::int64_t(test_groups) * (test_groups + 1) / 2;
  if (gram_pairs > 0) {
    require(batch * test_group_pairs < (std::int64_t(1) << 31), op, "batch", "too many matrices");
    ROOFLAB_CUDA(op, "letting the Gram apply take its shared memory",
                 cudaFuncSetAttribute(gram_apply<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(gram_apply_shared_bytes<T>)));
    ROOFLAB_CUDA(
        op, "letting the all-pairs test take its shared memory",
        cudaFuncSetAttribute(gram_all_pairs_test<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             gram_test_shared_bytes<T>));
    // The solves form the Gram matrices themselves when a round's solves alone fill the GPU, or
    // when the columns are two tiles of rows at most, where the partials kernel costs more in
    // latency than the solve's own two tiles (on the H200, double: 125 x 125 1.70 against 1.89
    // ms, 100 x 100 1.86 against 1.93 ms; with 256 rows 3.59 against 3.54 ms, 1024 rows 35.6
    // against 21.0 ms).
    int solves_per_sm = 0;
    ROOFLAB_CUDA(op, "asking how many blocks of a kernel fit on an SM",
                 cudaOccupancyMaxActiveBlocksPerMultiprocessor(&solves_per_sm, gram_solve<T>,
                                                               gram_solve_threads, 0));
    const bool solve_forms_gram = gram_pairs >= std::int64_t(solves_per_sm) * current_sm_count() ||
                                  G.M <= 2 * gram_tile_rows;
    const std::int64_t blocks = std::int64_t(gram_partial_blocks_per_sm) * current_sm_count();
    const std::int64_t wanted = (blocks + gram_pairs - 1) / gram_pairs;
    const int row_tiles = (G.M + gram_tile_rows - 1) / gram_tile_rows;
    const int slices = int(std::clamp<std::int64_t>(wanted, 1, row_tiles));
    gram.slice_rows = (row_tiles + slices - 1) / slices * gram_tile_rows;
    gram.slices = solve_forms_gram ? 0 : (G.M + gram.slice_rows - 1) / gram.slice_rows;
    require(gram_pairs * (gram_w_tiles + gram_v_tiles) < (std::int64_t(1) << 31), op, "batch",
            "too many matrices");
  }
  // The whole iteration in a cluster per matrix where every matrix's cluster fits on the GPU at
  // once.
  const ClusterShape cluster_sweeps = schedule == GlobalSchedule::gram_cluster
                                         ? cluster_sweeps_shape<T>(G.M, G.N, problem.uv, batch)
                                         : ClusterShape{};
  // The fused round where every pair of a round has its cluster on the GPU at once (else the
  // three kernels a round): blocks of one chunk of rows if such clusters fit, else of two.
  FusedShape fused;
  if (current_device_features().clusters() &&
      (schedule == GlobalSchedule::gram_fused ||
       (schedule == GlobalSchedule::gram_cluster && cluster_sweeps.pairs == 0))) {
    ROOFLAB_CUDA(
        op, "letting the fused Gram round take its shared memory",
        cudaFuncSetAttribute(gram_round_fused<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(fused_shared_bytes<T>)));
    for (const int max_rows : {fused_preferred_rows, fused_max_rows}) {
      const FusedShape shape = fused_shape(G.M, G.N, problem.uv, max_rows);
      if (shape.cluster == 0) continue;
      if (max_active_clusters(gram_round_fused<T>, gram_pairs, shape.cluster, fused_shared_bytes<T>) >= gram_pairs) {
        fused = shape;
        break;
      }
    }
  }

  // One allocation for all of the scratch, carved into aligned pieces.
  const std::size_t w_bytes = aligned(sizeof(T) * G.ldw * G.N * batch);
  const std::size_t v_bytes = aligned(sizeof(T) * G.ldv * G.N * batch);
  const std::size_t column_bytes = aligned(sizeof(T) * G.positions * batch);
  const std::size_t pos_bytes = aligned(sizeof(int) * G.positions * batch);
  const std::size_t word_bytes = aligned(sizeof(unsigned long long) * batch);
  const std::size_t int_bytes = aligned(sizeof(int) * batch);
  const std::size_t count_bytes = aligned(sizeof(unsigned) * problem.max_sweeps);
  constexpr std::size_t gram_square = gram_width * gram_width;
  const std::size_t partial_bytes = aligned(sizeof(T) * gram_square * gram.slices * gram_pairs);
  const std::size_t rotation_bytes = aligned(sizeof(T) * gram_square * gram_pairs);
  const std::size_t gram_column_bytes = aligned(sizeof(int) * gram_width * gram_pairs);
  const std::size_t rotated_bytes = aligned(sizeof(int) * gram_pairs);
  StreamBuffer scratch(w_bytes + v_bytes + 3 * column_bytes + pos_bytes + 3 * word_bytes +
                           6 * int_bytes + count_bytes + partial_bytes + rotation_bytes +
                           2 * gram_column_bytes + rotated_bytes,
                       stream, op);
  ScratchPieces pieces(scratch);
  G.W = pieces.take<T>(w_bytes);
  G.V = pieces.take<T>(v_bytes);
  G.norms = pieces.take<T>(column_bytes);
  G.coefficients = pieces.take<T>(column_bytes);
  G.error_scales = pieces.take<T>(column_bytes);
  G.pos = pieces.take<int>(pos_bytes);
  G.max_bits = pieces.take<unsigned long long>(word_bytes);
  G.off_bits = pieces.take<unsigned long long>(word_bytes);
  G.test_bits = pieces.take<unsigned long long>(word_bytes);
  G.exponent = pieces.take<int>(int_bytes);
  G.active = pieces.take<int>(int_bytes);
  G.sweeps = pieces.take<int>(int_bytes);
  G.converged = pieces.take<int>(int_bytes);
  G.bad = pieces.take<int>(int_bytes);
  G.test_arrivals = pieces.take<int>(int_bytes);
  // Per sweep: its count of matrices that sweep on.
  unsigned* const sweep_counts = pieces.take<unsigned>(count_bytes);
  gram.partials = pieces.take<T>(partial_bytes);
  gram.rotations = pieces.take<T>(rotation_bytes);
  gram.in_columns = pieces.take<int>(gram_column_bytes);
  gram.out_columns = pieces.take<int>(gram_column_bytes);
  gram.rotated = pieces.take<int>(rotated_bytes);

  const unsigned per_matrix_grid = unsigned((batch + global_threads - 1) / global_threads);
  const int sort_chunks = (G.positions + sort_columns - 1) / sort_columns;
  require(batch * sort_chunks < (std::int64_t(1) << 31), op, "batch", "too many matrices");
  ROOFLAB_CUDA(op, "zeroing the sweeps' counts of matrices still sweeping",
               cudaMemsetAsync(sweep_counts, 0, count_bytes, stream));
  ROOFLAB_CUDA(op, "zeroing the matrices' largest cosines",
               cudaMemsetAsync(G.off_bits, 0, word_bytes, stream));
  load_scaled(G, stream);
  const unsigned column_grid = grid_for(batch * G.positions, global_warps);
  if (cluster_sweeps.pairs == 0)  // the cluster's sweeps neither sort nor track norms
    launch_after_previous(global_column_norms<T>, column_grid, global_threads, 0, 1, stream,
                          "global_column_norms", G, false);

  // The persistent blocked kernel: as many blocks as can be resident, up to one per pair of a round.
  int persistent_blocks = 0;
  if (schedule == GlobalSchedule::blocked_persistent) {
    int per_sm = 0;
    ROOFLAB_CUDA(op, "asking how many blocks of a kernel fit on an SM",
                 cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                     &per_sm, blocked_persistent<T>, blocked_block_threads, blocked.bytes));
    const std::int64_t pairs = batch * (G.block_positions / 2);
    persistent_blocks =
        int(std::min<std::int64_t>(pairs, std::int64_t(per_sm) * current_sm_count()));
  }
  if (persistent_blocks > 0) {
    unsigned* counts = sweep_counts;
    void* arguments[] = {&G, &blocked, &blocked_lanes, &counts};
    if (!launched_cooperatively(reinterpret_cast<void*>(blocked_persistent<T>), persistent_blocks,
                                blocked_block_threads, arguments, blocked.bytes, stream))
      persistent_blocks = 0;  // per-round launches below
  }

  int cooperative_blocks = 0;
  if (schedule == GlobalSchedule::launch_per_sweep) {
    int per_sm = 0;
    ROOFLAB_CUDA(op, "asking how many blocks of a kernel fit on an SM",
                 cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, global_sweep_cooperative<T>,
                                                               global_threads, 0));
    const std::int64_t wanted = (batch * (G.positions / 2) + global_warps - 1) / global_warps;
    cooperative_blocks = int(std::max<std::int64_t>(
        1, std::min<std::int64_t>(wanted, std::int64_t(per_sm) * current_sm_count())));
  }
  // A sweep's rounds, first .. last - 1, in the schedule's kernels.
  const int rounds = blocked_schedule || gram_schedule ? G.block_positions : G.positions;
  const auto queue_rounds = [&](int first, int last) {
    for (int round = first; round < last; ++round) {
      if (blocked_schedule) {
        const std::int64_t blocks = batch * pairs_in_round(round, G.block_positions);
        require(blocks < (std::int64_t(1) << 31), op, "batch", "too many matrices");
        if (blocks == 0) continue;
        blocked_round<T><<<unsigned(blocks), blocked_block_threads, blocked.bytes, stream>>>(
            G, blocked, round, blocked_lanes);
        detail::check_launch(op, "blocked_round");
      } else if (gram_schedule) {
        const std::int64_t items = batch * pairs_in_round(round, G.block_positions);
        if (items == 0) continue;
        if (fused.cluster > 0) {
          launch_after_previous(gram_round_fused<T>, items * fused.cluster, gram_solve_threads,
                                fused_shared_bytes<T>, fused.cluster, stream, "gram_round_fused", G, fused,
                                round);
          continue;
        }
        if (!gram.solve_forms_gram())
          launch_after_previous(gram_partials<T>, items * gram.slices, gram_threads, 0, 1, stream,
                                "gram_partials", G, gram, round);
        launch_after_previous(gram_solve<T>, items, gram_solve_threads, 0, 1, stream, "gram_solve", G, gram,
                              round);
        launch_after_previous(gram_apply<T>, items * (gram_w_tiles + gram_v_tiles), gram_apply_threads,
                              gram_apply_shared_bytes<T>, 1, stream,
                              "gram_apply", G, gram, round, gram_w_tiles, gram_v_tiles);
      } else {
        const unsigned blocks = grid_for(batch * pairs_in_round(round, G.positions), global_warps);
        global_round<T><<<blocks, global_threads, 0, stream>>>(G, round);
        detail::check_launch(op, "global_round");
      }
    }
  };
  // The host queues each sweep and stops when one ends with no matrix left sweeping. So that the
  // GPU does not idle while the host waits for that count and then launches, sweep s + 1 is
  // queued before the host reads sweep s's count: its start (in the Gram schedule its first round)
  // copies the count to page-locked memory and marks the stream, its next rounds follow, and the
  // host waits for the mark, then queues the rest of the sweep or stops (those rounds then return
  // at once: no matrix is active).
  // Every sweep counts into its own counter, zeroed beforehand.
  constexpr int rounds_ahead = 2;
  thread_local PinnedBuffer<unsigned> published(1, cudaHostAllocMapped | cudaHostAllocPortable);
  ROOFLAB_CUDA(
      op, "mapping page-locked host memory for the device",
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&G.published_count), published.data(), 0));
  StreamMark counted(op);
  // Queues sweep `sweep`'s start and its first rounds; returns the rounds queued, or -1 when the
  // whole sweep went in one cooperative launch. In the Gram schedule the previous sweep's test
  // sorted the positions and the first round publishes the count: the mark follows that round.
  const auto queue_sweep_start = [&](int sweep) {
    G.active_count = sweep_counts + sweep;
    G.previous_count = sweep > 0 ? sweep_counts + sweep - 1 : nullptr;
    void* arguments[] = {&G};
    if (schedule == GlobalSchedule::launch_per_sweep &&
        launched_cooperatively(reinterpret_cast<void*>(global_sweep_cooperative<T>), cooperative_blocks,
                               global_threads, arguments, 0, stream)) {
      counted.record(stream);
      return -1;
    }
    int queued = 0;
    if (gram_schedule && sweep > 0)
      queue_rounds(0, ++queued);
    else
      launch_after_previous(global_sweep_start<T>, batch * sort_chunks, sort_threads, 0, 1, stream,
                            "global_sweep_start", G, sort_chunks);
    counted.record(stream);
    const int ahead = std::min(queued + rounds_ahead, rounds);
    queue_rounds(queued, ahead);
    return ahead;
  };
  // The sweep's other rounds and its end; in the Gram schedule the end comes with the all-pairs
  // test of the matrices whose sweep met only small off-diagonals (it returns at once for the
  // others).
  const auto queue_sweep_rest = [&](int queued) {
    if (queued < 0) return;
    queue_rounds(queued, rounds);
    if (gram_schedule)
      launch_after_previous(gram_all_pairs_test<T>, batch * test_group_pairs, gram_threads,
                            gram_test_shared_bytes<T>, 1, stream, "gram_all_pairs_test", G, test_groups);
    else
      launch_after_previous(global_sweep_end<T>, per_matrix_grid, global_threads, 0, 1, stream,
                            "global_sweep_end", G);
  };
  if (cluster_sweeps.pairs > 0) {
    launch_after_previous(gram_cluster_sweeps<T>, batch * cluster_sweeps.blocks(), gram_solve_threads,
                          cluster_shared_bytes<T>(cluster_sweeps), cluster_sweeps.blocks(), stream,
                          "gram_cluster_sweeps", G, cluster_sweeps);
  } else if (persistent_blocks == 0) {
    int queued = queue_sweep_start(0);
    for (int sweep = 0;; ++sweep) {
      queue_sweep_rest(queued);
      if (sweep + 1 == problem.max_sweeps) break;
      queued = queue_sweep_start(sweep + 1);
      counted.wait();
      if (*static_cast<volatile unsigned*>(published.data()) == 0) break;
    }
  }

  if (cluster_sweeps.pairs == 0)  // the cluster's sweeps leave sigma and U themselves
    launch_after_previous(global_column_norms<T>, column_grid, global_threads, 0, 1, stream,
                          "global_column_norms", G, true);
  if (problem.uv) {
    if (cluster_sweeps.pairs == 0)
      launch_after_previous(global_normalize<T>, grid_for(G.M * std::int64_t(G.N) * batch, global_threads),
                            global_threads, 0, 1, stream, "global_normalize", G);
    if (batch == 1)
      complete_single_matrix(G, stream);
    else
      launch_after_previous(global_complete<T>, batch, global_threads, 0, 1, stream, "global_complete", G);
  }
  const int order_chunks = (G.N + sort_columns - 1) / sort_columns;
  launch_after_previous(global_order<T>, batch * order_chunks, sort_threads, 0, 1, stream, "global_order",
                        G, order_chunks);
  const std::int64_t outputs = (G.N + (problem.uv ? std::int64_t(problem.m + problem.n) * G.N : 0)) * batch;
  launch_after_previous(global_write<T>, grid_for(outputs, global_threads), global_threads, 0, 1, stream,
                        "global_write", G);
}

// ---------------------------------------------------------------------------------------------
// QR preconditioning (the first step of LAPACK's dgejsv, without column pivoting). A tall M x N
// matrix W = A (A^T when m < n) is factored W = Q R by cuSOLVER's Householder QR; the Jacobi SVD
// runs on the N x N triangle, R = U_r S V_r^T, and W's left vectors come back as Q U_r, Q's N
// columns formed from the reflectors. The sweeps then rotate columns of N rows instead of M, and
// an R of at most 64 columns fits the register ring. Householder QR perturbs each column by a
// small multiple of its own norm, so column-graded matrices keep their small singular values'
// accuracy.

namespace {

// The typed cuSOLVER calls, overloaded on the element type.
cusolverStatus_t geqrf_buffer_size(cusolverDnHandle_t h, int m, int n, float* A, int lda, int* lwork) {
  return cusolverDnSgeqrf_bufferSize(h, m, n, A, lda, lwork);
}
cusolverStatus_t geqrf_buffer_size(cusolverDnHandle_t h, int m, int n, double* A, int lda, int* lwork) {
  return cusolverDnDgeqrf_bufferSize(h, m, n, A, lda, lwork);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, float* A, int lda, float* tau, float* work,
                       int lwork, int* info) {
  return cusolverDnSgeqrf(h, m, n, A, lda, tau, work, lwork, info);
}
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, double* A, int lda, double* tau, double* work,
                       int lwork, int* info) {
  return cusolverDnDgeqrf(h, m, n, A, lda, tau, work, lwork, info);
}
// The m x n Q with orthonormal columns from the n reflectors geqrf left in A and tau (cuSOLVER's
// ormqr, which would apply them to [U_r; 0] directly, took 1.2 ms at 1000 x 64 on the H200 against
// 45 us for this and a few for the product after it).
// The first n columns of Q = H_1 ... H_k (k <= n <= m).
cusolverStatus_t form_q_buffer_size(cusolverDnHandle_t h, int m, int n, int k, const float* A, int lda,
                                    const float* tau, int* lwork) {
  return cusolverDnSorgqr_bufferSize(h, m, n, k, A, lda, tau, lwork);
}
cusolverStatus_t form_q_buffer_size(cusolverDnHandle_t h, int m, int n, int k, const double* A, int lda,
                                    const double* tau, int* lwork) {
  return cusolverDnDorgqr_bufferSize(h, m, n, k, A, lda, tau, lwork);
}
cusolverStatus_t form_q(cusolverDnHandle_t h, int m, int n, int k, float* A, int lda, const float* tau,
                        float* work, int lwork, int* info) {
  return cusolverDnSorgqr(h, m, n, k, A, lda, tau, work, lwork, info);
}
cusolverStatus_t form_q(cusolverDnHandle_t h, int m, int n, int k, double* A, int lda, const double* tau,
                        double* work, int lwork, int* info) {
  return cusolverDnDorgqr(h, m, n, k, A, lda, tau, work, lwork, info);
}
// C = A B (A m x k, B k x n).
cublasStatus_t product(cublasHandle_t h, int m, int n, int k, const float* A, int lda,
                       const float* B, int ldb, float* C, int ldc) {
  const float one = 1, zero = 0;
  return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
}
cublasStatus_t product(cublasHandle_t h, int m, int n, int k, const double* A, int lda,
                       const double* B, int ldb, double* C, int ldc) {
  const double one = 1, zero = 0;
  return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc);
}

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
  if (problem.uv) ROOFLAB_CUSOLVER(op, form_q_buffer_size(solver, M, N, N, G.W, M, tau, &form_work));
  const int work_size = std::max({factor_work, form_work, 1});
  StreamBuffer work(sizeof(T) * std::size_t(work_size), stream, op);
  ROOFLAB_CUSOLVER(op, geqrf(solver, M, N, G.W, M, tau, work.as<T>(), work_size, info));
  qr_upper_triangle<T><<<grid_for(std::int64_t(N) * N, global_threads), global_threads, 0, stream>>>(
      G.W, M, N, R);
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

// The completion's one-block form (global_complete: classical Gram-Schmidt, a column at a time)
// takes up to this many multiply-adds, M N per column of sigma 0; beyond, Householder QR. The
// one block ran at a few GFLOP/s: the 100 x 100 zero matrix took 2.1 ms there against 0.55 ms for
// a random one, a rank-one 1024 x 1024 matrix 1.14 s (H100, double).
constexpr double one_block_completion_work = 1 << 18;

// W's kept columns U_r (sigma > 0) are orthonormal; the first N columns of the Q of their
// Householder QR, H_1 ... H_r, are U_r up to signs and then an orthonormal basis of what U_r
// leaves out: those complete W's columns of sigma 0. cuSOLVER's QR and formation of Q spread over
// the GPU, where the one-block completion goes a column at a time. The host reads how many
// columns need it (the stream waits for the sweeps' end here; svd waits for it anyway).
template <class T>
void complete_single_matrix(const GlobalState<T>& G, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const int M = G.M, N = G.N;
  thread_local PinnedBuffer<unsigned> zero_count(1, cudaHostAllocMapped | cudaHostAllocPortable);
  unsigned* device_count = nullptr;
  ROOFLAB_CUDA(op, "mapping the count of columns to complete",
               cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_count), zero_count.data(), 0));
  StreamBuffer slots(sizeof(int) * std::size_t(N), stream, op);
  launch_after_previous(number_completion_slots<T>, 1, global_threads, 0, 1, stream, "number_completion_slots",
                        G, slots.as<int>(), device_count);
  StreamMark numbered(op);
  numbered.record(stream);
  numbered.wait();
  const int zeros = int(*static_cast<volatile unsigned*>(zero_count.data()));
  if (zeros == 0) return;
  if (double(M) * N * zeros <= one_block_completion_work) {
    launch_after_previous(global_complete<T>, 1, global_threads, 0, 1, stream, "global_complete", G);
    return;
  }
  const int kept = N - zeros;
  const cusolverDnHandle_t solver = cusolver_handle(stream);
  StreamBuffer q(sizeof(T) * std::size_t(M) * N, stream, op), tau(sizeof(T) * std::size_t(N), stream, op),
      info(sizeof(int), stream, op);
  int factor_work = 0, form_work = 0;
  if (kept > 0)
    ROOFLAB_CUSOLVER(op, geqrf_buffer_size(solver, M, kept, q.as<T>(), M, &factor_work));
  ROOFLAB_CUSOLVER(op, form_q_buffer_size(solver, M, N, kept, q.as<T>(), M, tau.as<T>(), &form_work));
  const int work_size = std::max({factor_work, form_work, 1});
  StreamBuffer work(sizeof(T) * std::size_t(work_size), stream, op);
  // Q's columns past the kept ones are zero: cuSOLVER's QR reads past its matrix (initcheck found
  // its geqr2 kernel reading them), and orgqr overwrites them.
  ROOFLAB_CUDA(op, "clearing the completion's workspace", cudaMemsetAsync(q.data(), 0, q.bytes(), stream));
  const unsigned grid = grid_for(std::int64_t(M) * N, global_threads);
  launch_after_previous(move_completion_columns<T>, grid, global_threads, 0, 1, stream, "move_completion_columns",
                        G, q.as<T>(), slots.as<const int>(), true);
  if (kept > 0)
    ROOFLAB_CUSOLVER(op, geqrf(solver, M, kept, q.as<T>(), M, tau.as<T>(), work.as<T>(), work_size, info.as<int>()));
  ROOFLAB_CUSOLVER(op, form_q(solver, M, N, kept, q.as<T>(), M, tau.as<T>(), work.as<T>(), work_size, info.as<int>()));
  launch_after_previous(move_completion_columns<T>, grid, global_threads, 0, 1, stream, "move_completion_columns",
                        G, q.as<T>(), slots.as<const int>(), false);
}

}  // namespace

// A single tall matrix goes through QR preconditioning where that measured faster
// (docs/results/h200-round20-tall.json, commit 0cdd8a7, H200, double, against the best other
// path): with at most 64 columns, R goes to the register ring and it pays from 256 rows (256 x 64
// 0.58 against 0.98 ms, 1000 x 32 0.40 against 0.61, 1000 x 10 0.16 against 0.27; at 200 x 10
// 0.14 against 0.12 ms, at 128 x 64 0.92 against 0.81). Wider R go to the Gram schedule after a
// QR whose cost grows with the columns: in double only very tall ones pay (10000 x 100 2.44
// against 3.09 ms; 4096 x 100 2.11 against 1.96, and 20000 x 128 4.13 against 4.07 in
// docs/results/h200-round20-explore.json), in float, whose Gram schedule is slower on long
// columns, from about 40 rows per column (4096 x 100 1.76 against 3.02 ms). Beyond 128 columns it
// was not measured to pay.
template <class T>
bool qr_preconditioning_pays(int m, int n) {
  const std::int64_t N = std::min(m, n), M = std::max(m, n);
  if (N <= register_ring_max_columns) return M >= 256;
  return N <= 128 && M >= (sizeof(T) == 4 ? 32 : 96) * N;
}

// A single matrix of 49 to 64 columns and 65 to 255 rows (too long for the register ring, too
// short for QR preconditioning) goes to the Gram schedule rather than one block's shared memory:
// from 56 columns it was faster there at every height, at 48 and below mostly not, so the split
// is at 49 (docs/results/h200-round20-dispatch.json and h200-round20-explore.json, H200, double:
// 80 x 56 0.86 against 0.94 ms, 200 x 56 0.92 against 1.19, 128 x 64 0.78 against 1.05; 100 x 48
// 0.74 against 0.70, 200 x 48 0.75 against 0.86, 80 x 40 0.69 against 0.56; float 200 x 40 0.63
// against 0.51).
constexpr int gram_min_columns_alone = 49;

// The dispatch (docs/svd.md): fewer matrices than SMs of at most 64 x 64 go to the register ring
// (on the H200 25 x 25 in double took 190 us there against 325 us in one block's shared memory,
// docs/results/h200-round7-svd.json). Wider matrices, too few to give half the SMs a block each,
// go to the Gram schedule even when they fit in shared memory: it spreads each matrix's pairs of
// column blocks over the SMs (docs/results/h200-round11-rungs.json, H200: double 72 x 72 1.29
// against 1.54 ms in one block's shared memory, 100 x 100 1.71 against 3.14 ms; float 100 x 100
// 1.01 against 1.95 ms, 32 of them 1.53 against 2.31 ms, but 132 of them 2.91 against 2.31 ms).
// When the batch fills the GPU, small matrices stay in one warp's shared memory (no block
// barriers, many per SM); any other matrix that fits stays in a block's (100 x 128 x 128 in float:
// 3.39 ms there against 3.85 ms through Gram matrices); a matrix beyond shared memory goes to the
// Gram schedule (125 x 125 double: 2.52 ms against 8.78 ms for the blocked one;
// docs/results/h200-round8-svd.json).
template <class T>
Path production_path(int m, int n, int batch, bool uv) {
  const int N = std::min(m, n);
  const std::int64_t sms = current_sm_count();
  if (batch == 1 && qr_preconditioning_pays<T>(m, n)) return Path::qr_preconditioned;
  if (batch < sms && fits_in_registers<T>(m, n, uv)) return Path::register_ring;
  if (N > register_ring_max_columns && 2 * std::int64_t(batch) <= sms) return Path::gram;
  if (batch == 1 && N >= gram_min_columns_alone) return Path::gram;
  if (fits_on_chip<T>(m, n, uv)) {
    const bool warp_sized = on_chip_layout(m, n, sizeof(T), uv, false).bytes <= 48 * 1024;
    if (warp_sized && batch >= sms && (N <= 32 || batch >= 64 * sms)) return Path::warp_per_matrix;
    return Path::block_per_matrix;
  }
  return Path::gram;
}

template <class T>
void run_path(const Problem<T>& problem, Path path, const Report& report, cudaStream_t stream) {
  switch (path) {
    case Path::warp_per_matrix: return run_on_chip(problem, true, report, stream);
    case Path::block_per_matrix: return run_on_chip(problem, false, report, stream);
    case Path::register_ring: return run_in_registers(problem, report, stream);
    case Path::gram: return run_global(problem, GlobalSchedule::gram_cluster, report, stream);
    case Path::qr_preconditioned: return run_qr_preconditioned(problem, report, stream);
  }
}

template Path production_path<float>(int, int, int, bool);
template Path production_path<double>(int, int, int, bool);
template void run_path<float>(const Problem<float>&, Path, const Report&, cudaStream_t);
template void run_path<double>(const Problem<double>&, Path, const Report&, cudaStream_t);
template void run_global<float>(const Problem<float>&, GlobalSchedule, const Report&, cudaStream_t);
template void run_global<double>(const Problem<double>&, GlobalSchedule, const Report&, cudaStream_t);
template bool blocked_fits<float>(int, int);
template bool blocked_fits<double>(int, int);
template bool runs_in_one_cluster<float>(int, int, bool, int);
template bool runs_in_one_cluster<double>(int, int, bool, int);

}  // namespace rooflab::jacobi

namespace rooflab {

template <class T>
SvdInfo svd(const T* A, int m, int n, int lda, T* S, T* U, int ldu, T* V, int ldv,
            const SvdOptions& opt, cudaStream_t stream) {
  constexpr const char* op = "svd";
  const jacobi::Problem<T> problem =
      jacobi::single_matrix_problem(op, A, m, n, lda, S, U, ldu, V, ldv, opt);
  require(A != nullptr, op, "A", "must not be null");
  require(lda >= m, op, "lda", "must be at least m = " + std::to_string(m));
  require(S != nullptr, op, "S", "must not be null");
  if (opt.compute_uv) {
    require(U != nullptr, op, "U", "must not be null when compute_uv is set");
    require(V != nullptr, op, "V", "must not be null when compute_uv is set");
    require(ldu >= m, op, "ldu", "must be at least m = " + std::to_string(m));
    require(ldv >= n, op, "ldv", "must be at least n = " + std::to_string(n));
  }

  // The kernels write the status straight into page-locked host memory, kept per host thread: a
  // call then needs no scratch, no zeroed summary and no copy back, only the synchronization. On
  // an H200 the call took 136-142 us at 25 x 25 with them and takes 125-129 us without, against
  // 121-125 us for the register ring's kernel alone (the same five matrices); allocating the
  // page-locked memory on every call would cost about a millisecond.
  thread_local PinnedBuffer<jacobi::MatrixStatus> status(1, cudaHostAllocMapped | cudaHostAllocPortable);
  *status.data() = jacobi::MatrixStatus{};  // "not converged" unless the run says otherwise
  jacobi::MatrixStatus* device_status = nullptr;
  ROOFLAB_CUDA(
      op, "mapping page-locked host memory for the device",
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_status), status.data(), 0));
  const jacobi::Report report{device_status, nullptr};
  jacobi::run_path(problem, jacobi::production_path<T>(m, n, 1, opt.compute_uv), report, stream);
  ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
  const jacobi::MatrixStatus host_status = *status.data();
  require(!host_status.bad_input, op, "A", "contains NaN or Inf");
  return jacobi::to_info(host_status);
}

template SvdInfo svd<float>(const float*, int, int, int, float*, float*, int, float*, int,
                            const SvdOptions&, cudaStream_t);
template SvdInfo svd<double>(const double*, int, int, int, double*, double*, int, double*, int,
                             const SvdOptions&, cudaStream_t);

}  // namespace rooflab
