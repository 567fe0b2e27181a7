#pragma once
// The state every global-memory schedule shares (GlobalState: each matrix's W, V, norms, positions
// and convergence in global memory), the device steps they share (the start and end of a sweep,
// the sort by norm, the chaining of kernels by programmatic dependent launch) and the host's
// launch helpers. Included by each schedule's file (global_rounds.cu, blocked.cu, gram.cu,
// fused.cu, cluster.cu), by global_ends.cu, run_global.cu and qr_preconditioning.cu.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/device_features.hpp"
#include "core/device_query.hpp"
#include "core/programmatic_launch.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {

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
  T* coefficients = nullptr;  // positions per matrix: the completion's scratch (coefficients, tau)
  // Positions per matrix, by column: error scales (jacobi_math.hpp, RoundingNoise).
  T* error_scales = nullptr;
  int* pos = nullptr;  // positions per matrix: column at each position, then output order
  unsigned long long* max_bits = nullptr;   // per matrix: bits of max |a| as a double
  unsigned long long* off_bits = nullptr;   // per matrix: bits of this sweep's max cosine
  unsigned long long* test_bits = nullptr;  // per matrix: bits of the all-pairs test's max cosine
  int* test_arrivals = nullptr;  // per matrix: the all-pairs test's blocks done this sweep
  // Bit 0 set when a round of this sweep found a column of rounding noise (clear_gram_noise), bit
  // 1 when one of the sweep before did. Only where a single matrix takes the Gram schedule
  // through host-driven sweeps, or a cluster larger than the portable size: the cases that take
  // the test on arrival (run_global.cu), the host-driven sweeps the test after noise too
  // (gram.cu); null elsewhere. In a batch they saved nothing (the slowest matrix sets its time)
  // and cost up to 4% (16 float rank-64 256 x 256 matrices, H100).
  int* noise = nullptr;
  // Per matrix, where the host drives the Gram schedule's sweeps (null elsewhere): this sweep's
  // count of pairs of columns in different blocks found above tol, of `pairs_across` (the
  // hand-over, sweep_end), and how many sweeps in a row ended at the Gram products' rounding floor
  // (stays_at_the_gram_floor).
  unsigned* above_tol = nullptr;
  long long pairs_across = 0;
  int* floor_sweeps = nullptr;
  // Per matrix, beside above_tol: the binades its columns' norms spread over after sweep
  // unfolding_first_look, which the early hand-over's test compares with.
  int* unfolding_binades = nullptr;
  int* exponent = nullptr;
  int* active = nullptr;  // nonzero while the matrix still sweeps (active_sweeping, below)
  // Per matrix, where the portable cluster takes the matrices (null elsewhere): nonzero where
  // global_max_abs found two neighbouring columns of A that are not orthogonal to within tol.
  int* neighbours_apart = nullptr;
  int* sweeps = nullptr;
  int* converged = nullptr;
  int* bad = nullptr;
  unsigned* active_count = nullptr;  // this sweep's count of matrices that sweep on
  // The host-driven schedules: the previous sweep's count (null in the first sweep), which the
  // sweep's start copies to the host's page-locked `published_count`.
  const unsigned* previous_count = nullptr;
  unsigned* published_count = nullptr;
  // Where one matrix takes the host-driven Gram sweeps (`noise` set): the columns that may still
  // rotate (a positive error scale, left_alone_scale) and those of them without a positive tracked
  // norm, counted by this sweep's test as it sorts the positions (two words), the previous sweep's
  // (null in the first sweep: the test on arrival publishes its own), and where the sweep's first
  // kernel publishes them beside the count.
  unsigned* rotating_columns = nullptr;
  const unsigned* previous_rotating = nullptr;
  unsigned* published_rotating = nullptr;
  Report report;

  __device__ T* w(std::int64_t matrix) const { return W + matrix * ldw * N; }
  __device__ T* v(std::int64_t matrix) const { return V + matrix * ldv * N; }
  __device__ T* norms_of(std::int64_t matrix) const { return norms + matrix * positions; }
  __device__ int* pos_of(std::int64_t matrix) const { return pos + matrix * positions; }
  __device__ T* error_scales_of(std::int64_t matrix) const {
    return error_scales + matrix * positions;
  }
};

// G.active of a matrix that still sweeps. Where the portable cluster takes the matrices, one whose
// neighbouring columns all arrived orthogonal (G.neighbours_apart 0) starts at
// active_maybe_orthogonal instead, which sends it to the cluster kernel that tests it on arrival
// (cluster.cu); a random matrix goes straight to the one without the test, and pays neither for the
// test's run nor for its code.
constexpr int active_sweeping = 1, active_maybe_orthogonal = 2;

// Sigma of a column from its fresh squared norm: 0 for a negligible column or rounding noise.
template <class T>
__device__ __forceinline__ T sigma_from_norm2(T norm2, T error_scale) {
  return norm2 >= Precision<T>::negligible && !is_rounding_noise(norm2, error_scale) ? sqrt(norm2)
                                                                                     : T(0);
}

constexpr int global_threads = 256;
constexpr int global_warps = global_threads / 32;

// Hopper's thread-block clusters, in device code compiled for sm_90 on (and in the host pass, which
// sees every kernel). The host launches the kernels that need them only where DeviceFeatures says
// the loaded code has them (core/device_features.hpp).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define ROOFLAB_HAS_CLUSTERS 1
#else
#define ROOFLAB_HAS_CLUSTERS 0
#endif

// The setup and final kernels, the Gram kernels and the small kernels of a sweep's start and end
// follow one another with programmatic dependent launch (core/programmatic_launch.cuh).
using detail::launch_after_previous;
using detail::let_next_kernel_start;
using detail::wait_for_previous_kernel;

__device__ __forceinline__ double bits_as_double(unsigned long long bits) {
  return __longlong_as_double(static_cast<long long>(bits));
}

// Raises `word`, the bits of a non-negative double, to `value` (off_bits, test_bits).
__device__ __forceinline__ void raise_to(unsigned long long* word, double value) {
  if (value > 0) atomicMax(word, static_cast<unsigned long long>(__double_as_longlong(value)));
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
  rank_sort_descending(team, G.norms_of(matrix), G.positions, Placement::sorted, G.pos_of(matrix));
  if (team.rank() == 0) G.off_bits[matrix] = 0;
}

// Whether the matrix's sweeps stall and a second try follows (still_rotating_late and
// wider_than_the_gram_resolves, jacobi_math.hpp), or a single matrix's spectrum unfolds slowly
// (the early hand-over, spectrum_unfolding): then it stops here, unconverged, and the second try
// takes it. Its columns' norms are read only where the sweep and the count already qualify, and
// after sweep unfolding_first_look, whose spread the early hand-over's test compares with.
template <class T>
__device__ bool hands_over(const GlobalState<T>& G, std::int64_t matrix, int sweeps) {
  if (G.above_tol == nullptr || !G.P.second_try_follows) return false;
  const long long above = G.above_tol[matrix];
  const bool late = still_rotating_late(sweeps, above, G.pairs_across);
  const bool single = G.P.batch == 1;
  const bool first_look =
      single && sweeps == unfolding_first_look && unfolding_applies<GramUnfolding, T>(G.N);
  const bool unfolding = single && unfolding_applies<GramUnfolding, T>(G.N) &&
                         unfolding_looks_at<GramUnfolding>(sweeps, above, G.pairs_across);
  if (!late && !first_look && !unfolding) return false;
  const T* norms = G.norms_of(matrix);
  T largest = 0, least = norms[0], least_positive = T(INFINITY);
  for (int c = 0; c < G.N; ++c) {
    largest = fmax(largest, norms[c]);
    least = fmin(least, norms[c]);
    if (norms[c] > 0) least_positive = fmin(least_positive, norms[c]);
  }
  if (late) return wider_than_the_gram_resolves(largest, least);
  const int binades = binades_between(largest, least_positive);
  if (first_look) G.unfolding_binades[matrix] = binades;
  return unfolding && spectrum_unfolding<GramUnfolding>(binades, G.unfolding_binades[matrix]);
}

// Whether the matrix's sweep ended at the Gram products' rounding floor (its largest cosine `off`,
// at_the_gram_floor) and so did the one before: its count of such sweeps in a row is kept here.
template <class T>
__device__ bool stays_at_the_gram_floor(const GlobalState<T>& G, std::int64_t matrix, double off) {
  if (G.floor_sweeps == nullptr) return false;
  const int in_a_row = at_the_gram_floor<T>(off, G.M) ? G.floor_sweeps[matrix] + 1 : 0;
  G.floor_sweeps[matrix] = in_a_row;
  return in_a_row >= gram_floor_sweeps;
}

// End of a sweep, a thread per matrix: converged when no pair needed a rotation, or when the
// all-pairs test took the matrix (`tested`) and found every pair orthogonal (that test then counts
// as its last sweep), or when the sweep and the one before ended at the Gram products' rounding
// floor (the test's largest cosine, where it took the matrix, is the one reported). A matrix whose
// sweeps stall stops unconverged (hands_over).
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
  } else if (stays_at_the_gram_floor(G, matrix, tested ? bits_as_double(test_bits) : off)) {
    G.converged[matrix] = 1;
    G.active[matrix] = 0;
    if (tested) G.off_bits[matrix] = test_bits;
  } else if (hands_over(G, matrix, sweeps)) {
    G.active[matrix] = 0;
  } else {
    atomicAdd(active_count, 1u);
  }
}

// The counts of a sweep's end to the host: the matrices that sweep on, and where given the columns
// that may still rotate (GlobalState::rotating_columns).
template <class T>
__device__ void publish_counts(const GlobalState<T>& G, const unsigned* count,
                               const unsigned* rotating) {
  *G.published_count = *count;
  if (rotating != nullptr) {
    G.published_rotating[0] = rotating[0];
    G.published_rotating[1] = rotating[1];
  }
}

// The previous sweep's counts, final once a sweep starts (its kernels all completed), to the host:
// it decides from them whether to queue the rest of this sweep. Called after the wait by the
// sweep's first kernels (SweepQueue gives the kernels behind them no previous counts; in round 0
// both gram_partials and gram_solve publish the same counts).
template <class T>
__device__ void publish_previous_count(const GlobalState<T>& G) {
  if (G.previous_count != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
    publish_counts(G, G.previous_count, G.previous_rotating);
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

// ---------------------------------------------------------------------------------------------
// The host side.

// A grid that covers `items` work items of `per_block` each, capped at a few waves (the kernels
// stride over the rest).
inline unsigned grid_for(std::int64_t items, int per_block) {
  const std::int64_t blocks = (items + per_block - 1) / per_block;
  return unsigned(
      std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, 32ll * current_sm_count())));
}

inline std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

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

// Launches a cooperative kernel; false (and no error left behind) when the device cannot hold the
// grid at once after all, as under a tool that takes resources, so the caller can fall back to
// ordinary launches. Other errors throw.
inline bool launched_cooperatively(void* kernel, int blocks, int threads, void** arguments,
                                   std::size_t shared_bytes, cudaStream_t stream) {
  const cudaError_t status = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(threads),
                                                         arguments, shared_bytes, stream);
  if (status == cudaErrorCooperativeLaunchTooLarge) {
    cudaGetLastError();  // not sticky: clear it
    return false;
  }
  ROOFLAB_CUDA("svd", "launching a cooperative kernel", status);
  return true;
}

}  // namespace rooflab::jacobi
