#pragma once
// The global-memory schedules as run_global drives them: for each schedule's file, the plan it
// makes for a problem and the calls that queue its kernels. Each file defines its part (for float
// and double); run_global.cu puts them together into the sweeps.
#include <cstdint>

#include "svd/global_state.cuh"

namespace rooflab::jacobi {

// ---------------------------------------------------------------------------------------------
// Global rounds (global_rounds.cu): a warp per column pair, a launch per round, or a cooperative
// launch per sweep; and the sweep's start (the sort by norm) and end for the host-driven schedules
// (of the Gram schedule's sweeps, only a batch's first start).

template <class T>
void launch_sweep_start(const GlobalState<T>& G, int sort_chunks, cudaStream_t stream);
template <class T>
void launch_global_round(const GlobalState<T>& G, int round, cudaStream_t stream);
template <class T>
void launch_sweep_end(const GlobalState<T>& G, cudaStream_t stream);
// Blocks of the cooperative sweep: as many as can be resident, up to a warp per pair.
template <class T>
int cooperative_sweep_blocks(const GlobalState<T>& G);
// The whole sweep in one cooperative launch; false when the grid does not fit after all.
template <class T>
bool launch_sweep_cooperatively(const GlobalState<T>& G, int blocks, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// The blocked schedule (blocked.cu).

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

struct BlockedPlan {
  BlockedLayout layout;
  int threads = 0, lanes = 0;
};
// Sets G's blocks and positions for the blocked schedule and lets its kernels take their shared
// memory.
template <class T>
BlockedPlan plan_blocked(GlobalState<T>& G);
template <class T>
void launch_blocked_round(const GlobalState<T>& G, const BlockedPlan& plan, int round,
                          cudaStream_t stream);
// Blocks of the persistent kernel: as many as can be resident, up to one per pair of a round.
template <class T>
int persistent_blocked_blocks(const GlobalState<T>& G, const BlockedPlan& plan);
// The whole iteration in one cooperative launch (each sweep's count of matrices still sweeping in
// sweep_counts); false when the grid does not fit after all.
template <class T>
bool launch_blocked_persistent(const GlobalState<T>& G, const BlockedPlan& plan, int blocks,
                               unsigned* sweep_counts, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// The Gram schedule (gram.cu), its fused rounds (fused.cu) and its sweeps in one cluster per matrix
// (cluster.cu).

// A round's scratch, per pair of blocks of the round (the batch's pairs, matrix-major).
template <class T>
struct GramWork {
  T* partials = nullptr;       // per pair and slice of rows: the partial Gram, G_kl at k * 32 + l
  T* rotations = nullptr;      // per pair: Q, row = input position, column = output position
  int* in_columns = nullptr;   // per pair: W's column at each input position (>= N: padding)
  int* out_columns = nullptr;  // per pair: W's column that receives each output
  int* rotated = nullptr;      // per pair: 0 when the pair was orthogonal and is left alone
  int slices = 1, slice_rows = 0;
  // No slices: the round's solves form G themselves (form_gram).
  __host__ __device__ bool solve_forms_gram() const { return slices == 0; }
};

// The fused round's cluster (fused.cu).
struct FusedShape {
  int cluster = 0;             // blocks per pair; 0: the rounds do not fit
  int w_rows = 0, v_rows = 0;  // rows of W and of V per block: multiples of gram_tile_rows
};
// The cluster of the sweeps in one cluster per matrix (cluster.cu).
constexpr int portable_cluster_blocks = 8;  // every GPU with clusters runs such a cluster
struct ClusterShape {
  int pairs = 0;               // pairs of blocks of the ring; 0: the matrix does not fit
  int split = 0;               // blocks per pair, each with a share of the rows
  int w_rows = 0, v_rows = 0;  // rows of W and of V per block: multiples of gram_tile_rows
  int ldt = 0;                 // a slot's stride: its rows rounded up to whole products, plus 4
  __host__ __device__ int blocks() const { return pairs * split; }
  bool portable() const { return blocks() <= portable_cluster_blocks; }
};

// The all-pairs test's blocks (gram.cu): per matrix, a block per pair of 32-column groups and slice
// of rows. With more than one slice each block leaves its sums in `partials` and the pair's last
// block to arrive (pair_arrivals, cleared at the start and by that block) adds them up and judges.
template <class T>
struct GramTest {
  int groups = 0;
  int group_pairs = 0;                 // per matrix
  std::int64_t batch_group_pairs = 0;  // over the batch
  int slices = 1, slice_rows = 0;      // slice_rows: a multiple of gram_tile_rows
  T* partials = nullptr;               // per matrix, pair and slice: test_partial_values
  unsigned* pair_arrivals = nullptr;
  __host__ __device__ int blocks_per_matrix() const { return group_pairs * slices; }
};

// The Gram schedule's plan for a problem: its round scratch, the apply's tiles of rows, the
// all-pairs test's blocks, and the fused round's or the cluster's shape where run_global takes
// them (cluster 0, pairs 0: not taken).
template <class T>
struct GramPlan {
  GramWork<T> work;
  std::int64_t pairs = 0;  // pairs of blocks of a round, over the batch
  int w_tiles = 0, v_tiles = 0;
  GramTest<T> test;
  FusedShape fused;
  ClusterShape cluster;
};
// Sets G's blocks and positions for the Gram schedule.
template <class T>
void set_gram_positions(GlobalState<T>& G);
// The plan's round scratch and tiles (no scratch unless `gram` and the batch has pairs); lets the
// Gram kernels take their shared memory.
template <class T>
GramPlan<T> plan_gram(const GlobalState<T>& G, bool gram);
// The round scratch's bytes, and its pieces taken from one allocation in the same order.
template <class T>
std::size_t gram_scratch_bytes(const GramPlan<T>& plan);
template <class T>
void take_gram_scratch(GramPlan<T>& plan, ScratchPieces& pieces);
// The bytes at the start of the round scratch for the caller to clear: what gram_apply reads before
// it knows whether it needs them (a pair's rotation and columns, and its flag), then defined also
// where no solve wrote it, and the all-pairs test's pair arrivals.
template <class T>
std::size_t gram_cleared_bytes(const GramPlan<T>& plan);
// One round's three kernels (partials, solve, apply) for `items` pairs.
template <class T>
void launch_gram_round(const GlobalState<T>& G, const GramPlan<T>& plan, std::int64_t items,
                       int round, cudaStream_t stream);
// The sweep's end with the all-pairs test, and the sort for the next sweep; `on_arrival`: the test
// of every matrix before the first sweep, and the sort for it.
template <class T>
void launch_all_pairs_test(const GlobalState<T>& G, const GramPlan<T>& plan, bool on_arrival,
                           cudaStream_t stream);

// The fused round's shape for `pairs` pairs of M x N matrices, where every pair's cluster fits on
// the GPU at once (cluster 0 otherwise); and the launch of one round.
template <class T>
FusedShape choose_fused_shape(int M, int N, bool uv, std::int64_t pairs);
template <class T>
void launch_fused_round(const GlobalState<T>& G, const FusedShape& shape, std::int64_t items,
                        int round, cudaStream_t stream);

// The cluster for `batch` M x N matrices when they fit and every matrix's cluster is on the GPU at
// once; pairs 0 otherwise. And the launch of every sweep.
template <class T>
ClusterShape cluster_sweeps_shape(int M, int N, bool uv, std::int64_t batch);
template <class T>
void launch_cluster_sweeps(const GlobalState<T>& G, const ClusterShape& shape, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// Before the first sweep and after the last (global_ends.cu).

// Every matrix's verdict on NaN or Inf and its scaling exponent, then W = A (or A^T) scaled by it
// and V = I when G.P.uv (global_max_abs, global_begin, global_load). G.max_bits must start at 0.
template <class T>
void load_scaled(const GlobalState<T>& G, cudaStream_t stream);
// The tracked squared norms and error scales (final false), or sigma (final true).
template <class T>
void launch_column_norms(const GlobalState<T>& G, bool final, cudaStream_t stream);
// After the last sweep: sigma (unless the sweeps left it, as the cluster's do), U normalized and
// completed (unless left too), the output order, and S, U, V written.
template <class T>
void write_results(const GlobalState<T>& G, bool sweeps_left_sigma_and_u, cudaStream_t stream);

}  // namespace rooflab::jacobi
