// The blocked schedule (the single-matrix ladder's rungs 5 and 6): pairs of column blocks swept
// in one block's shared memory, a launch per round or the whole iteration in one cooperative
// launch.
#include "svd/global_schedule.cuh"

namespace rooflab::jacobi {
namespace {

// The blocked schedule (the ladder's rung 5). The sorted positions are cut into blocks of b
// columns; the odd-even ring runs over blocks, and a block of threads takes each pair of blocks:
// it gathers their 2b columns of W into shared memory, sweeps them once with the on-chip team
// routine (accumulating the rotations into a 2b x 2b Q instead of V), writes them back, applies Q
// to the 2b columns of V (V_pair <- V_pair Q, rows streamed through the same shared memory) and
// swaps the two blocks' positions. Each column pair of the matrix meets once per outer sweep, and
// the sweep is converged when every pair of blocks arrived orthogonal.

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
      team_sweeps(team, Wb, L.ldb, M, slots, Q, slots, slots, G.P.uv, inner_norms, inner_scales,
                  false, inner_pos, G.P.tol, inner_sweeps, lanes);

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
    team.sync();                                // Wb is free: V's 2b columns (N <= M rows) go there
    for (int e = rank; e < N * slots; e += threads) {
      const int i = e % N, s = e / N, c = columns[s];
      Wb[i + s * L.ldb] = c < N ? V[i + c * G.ldv] : T(0);
    }
    team.sync();
    for (int e = rank; e < N * slots; e += threads) {
      const int i = e % N, s = e / N, c = columns[s];
      if (c >= N) continue;
      T sum = 0;
      for (int from = 0; from < slots; ++from)
        sum = fma(Wb[i + from * L.ldb], Q[from + s * slots], sum);
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
    for (std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
         matrix < G.P.batch; matrix += std::int64_t(gridDim.x) * blockDim.x)
      sweep_end(G, matrix, &active_counts[sweep], false);
    grid.sync();
    if (*static_cast<volatile unsigned*>(&active_counts[sweep]) == 0) break;
  }
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

}  // namespace

template <class T>
BlockedPlan plan_blocked(GlobalState<T>& G) {
  constexpr const char* op = "svd";
  G.block = blocked_width<T>(G.M, G.N, G.P.batch);
  require(G.block > 0, op, "m, n", "columns too long for the blocked schedule's shared memory");
  const int blocks = (G.N + G.block - 1) / G.block;
  G.block_positions = blocks + (blocks & 1);
  G.positions = G.block_positions * G.block;
  BlockedPlan plan;
  plan.layout = blocked_layout(G.M, G.block, sizeof(T));
  plan.threads = blocked_threads(G.M, G.block);
  plan.lanes = lanes_per_pair(plan.threads, plan.layout.slots);
  if (plan.layout.bytes > 48 * 1024) {
    ROOFLAB_CUDA(op, "letting the blocked rounds take their shared memory",
                 cudaFuncSetAttribute(blocked_round<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      plan.layout.bytes));
    ROOFLAB_CUDA(
        op, "letting the persistent blocked kernel take its shared memory",
        cudaFuncSetAttribute(blocked_persistent<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             plan.layout.bytes));
  }
  return plan;
}

template <class T>
void launch_blocked_round(const GlobalState<T>& G, const BlockedPlan& plan, int round,
                          cudaStream_t stream) {
  constexpr const char* op = "svd";
  const std::int64_t blocks = std::int64_t(G.P.batch) * pairs_in_round(round, G.block_positions);
  require(blocks < (std::int64_t(1) << 31), op, "batch", "too many matrices");
  if (blocks == 0) return;
  blocked_round<T><<<unsigned(blocks), plan.threads, plan.layout.bytes, stream>>>(
      G, plan.layout, round, plan.lanes);
  detail::check_launch(op, "blocked_round");
}

template <class T>
int persistent_blocked_blocks(const GlobalState<T>& G, const BlockedPlan& plan) {
  int per_sm = 0;
  ROOFLAB_CUDA("svd", "asking how many blocks of a kernel fit on an SM",
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, blocked_persistent<T>,
                                                             plan.threads, plan.layout.bytes));
  const std::int64_t pairs = std::int64_t(G.P.batch) * (G.block_positions / 2);
  return int(std::min<std::int64_t>(pairs, std::int64_t(per_sm) * current_sm_count()));
}

template <class T>
bool launch_blocked_persistent(const GlobalState<T>& G, const BlockedPlan& plan, int blocks,
                               unsigned* sweep_counts, cudaStream_t stream) {
  GlobalState<T> state = G;
  BlockedLayout layout = plan.layout;
  int lanes = plan.lanes;
  void* arguments[] = {&state, &layout, &lanes, &sweep_counts};
  return launched_cooperatively(reinterpret_cast<void*>(blocked_persistent<T>), blocks,
                                plan.threads, arguments, plan.layout.bytes, stream);
}

template <class T>
bool blocked_fits(int m, int n) {
  return blocked_width<T>(std::max(m, n), std::min(m, n), 1) > 0;
}

#define ROOFLAB_INSTANTIATE(T)                                                               \
  template BlockedPlan plan_blocked<T>(GlobalState<T>&);                                     \
  template void launch_blocked_round<T>(const GlobalState<T>&, const BlockedPlan&, int,      \
                                        cudaStream_t);                                       \
  template int persistent_blocked_blocks<T>(const GlobalState<T>&, const BlockedPlan&);      \
  template bool launch_blocked_persistent<T>(const GlobalState<T>&, const BlockedPlan&, int, \
                                             unsigned*, cudaStream_t);                       \
  template bool blocked_fits<T>(int, int);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
