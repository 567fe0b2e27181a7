// The global rounds (the single-matrix ladder's rungs 1 and 2): a warp per column pair of every
// matrix, one launch per round of disjoint pairs or one cooperative launch per sweep with a
// grid-wide barrier between rounds. Also the sweep's start (the sort by tracked norm) and end
// that the host-driven schedules queue (the Gram schedule only a batch's first start: its all-pairs
// test ends each sweep and sorts for the next).
#include "svd/global_schedule.cuh"

namespace rooflab::jacobi {
namespace {

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
  for (std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       matrix < G.P.batch; matrix += std::int64_t(gridDim.x) * blockDim.x)
    sweep_end(G, matrix, G.active_count, false);
}

}  // namespace

template <class T>
void launch_sweep_start(const GlobalState<T>& G, int sort_chunks, cudaStream_t stream) {
  launch_after_previous("svd", global_sweep_start<T>, std::int64_t(G.P.batch) * sort_chunks,
                        sort_threads, 0, 1, stream, "global_sweep_start", G, sort_chunks);
}

template <class T>
void launch_global_round(const GlobalState<T>& G, int round, cudaStream_t stream) {
  const unsigned blocks =
      grid_for(std::int64_t(G.P.batch) * pairs_in_round(round, G.positions), global_warps);
  global_round<T><<<blocks, global_threads, 0, stream>>>(G, round);
  detail::check_launch("svd", "global_round");
}

template <class T>
void launch_sweep_end(const GlobalState<T>& G, cudaStream_t stream) {
  const unsigned per_matrix_grid =
      unsigned((std::int64_t(G.P.batch) + global_threads - 1) / global_threads);
  launch_after_previous("svd", global_sweep_end<T>, per_matrix_grid, global_threads, 0, 1, stream,
                        "global_sweep_end", G);
}

template <class T>
int cooperative_sweep_blocks(const GlobalState<T>& G) {
  int per_sm = 0;
  ROOFLAB_CUDA("svd", "asking how many blocks of a kernel fit on an SM",
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, global_sweep_cooperative<T>,
                                                             global_threads, 0));
  const std::int64_t wanted =
      (std::int64_t(G.P.batch) * (G.positions / 2) + global_warps - 1) / global_warps;
  return int(std::max<std::int64_t>(
      1, std::min<std::int64_t>(wanted, std::int64_t(per_sm) * current_sm_count())));
}

template <class T>
bool launch_sweep_cooperatively(const GlobalState<T>& G, int blocks, cudaStream_t stream) {
  GlobalState<T> state = G;
  void* arguments[] = {&state};
  return launched_cooperatively(reinterpret_cast<void*>(global_sweep_cooperative<T>), blocks,
                                global_threads, arguments, 0, stream);
}

#define ROOFLAB_INSTANTIATE(T)                                                    \
  template void launch_sweep_start<T>(const GlobalState<T>&, int, cudaStream_t);  \
  template void launch_global_round<T>(const GlobalState<T>&, int, cudaStream_t); \
  template void launch_sweep_end<T>(const GlobalState<T>&, cudaStream_t);         \
  template int cooperative_sweep_blocks<T>(const GlobalState<T>&);                \
  template bool launch_sweep_cooperatively<T>(const GlobalState<T>&, int, cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
