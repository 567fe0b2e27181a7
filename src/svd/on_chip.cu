// The on-chip schedules (the batched ladder's production rungs): each matrix's working set (W, V,
// norms, order) in shared memory, owned by one thread (the smallest matrices: up to 128 a block, no
// shuffles, no barriers), one warp (small matrices: many per block, no block barriers) or one
// block (up to the 227 KB a Hopper block can opt into). Every matrix converges on its own: a
// converged matrix's team stops and its SM takes the next one.
#include <algorithm>

#include "core/device_features.hpp"
#include "core/device_query.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"
#include "svd/jacobi.cuh"

namespace rooflab::jacobi {
namespace {

// Four matrices per block in warp-per-matrix mode: enough warps per block to schedule well, few
// enough that a block's shared memory stays a fraction of the SM's.
constexpr int max_warps_per_block = 4;

template <class T>
__global__ void __launch_bounds__(max_warps_per_block * 32)
    svd_warp_per_matrix(Problem<T> P, OnChipLayout L, int lanes, Report report) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5;
  const std::int64_t matrix = std::int64_t(blockIdx.x) * (blockDim.x >> 5) + warp;
  if (matrix >= P.batch) return;  // the whole warp: a team never splits
  on_chip_svd(WarpTeam{}, smem + std::size_t(warp) * L.bytes, L, P, matrix, lanes, report);
}

constexpr int max_threads_per_block = 128;

// A thread per matrix: every pair of a round one after the other, each dot product a loop over the
// column's few rows in the thread's own slice of shared memory. A warp-per-matrix team spends most
// lanes idle on such a matrix (3 x 3: two pairs a round, 3 of 16 lanes with a row each) and five
// shuffle steps on every sum. Slices: thread_slice_bytes (jacobi_math.hpp), no bank conflicts.
template <class T>
__global__ void __launch_bounds__(max_threads_per_block)
    svd_thread_per_matrix(Problem<T> P, OnChipLayout L, int slice_bytes, Report report) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::int64_t matrix = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (matrix >= P.batch) return;  // a thread team shares nothing with its neighbours
  on_chip_svd(ThreadTeam{}, smem + std::size_t(threadIdx.x) * slice_bytes, L, P, matrix, 1, report);
}

template <class T>
__global__ void __launch_bounds__(1024)
    svd_block_per_matrix(Problem<T> P, OnChipLayout L, int lanes, Report report) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockTeam team{reinterpret_cast<unsigned long long*>(smem + L.team_offset)};
  for (std::int64_t matrix = blockIdx.x; matrix < P.batch; matrix += gridDim.x) {
    on_chip_svd(team, smem, L, P, matrix, lanes, report);
    __syncthreads();
  }
}

int next_power_of_two(int value) {
  int power = 1;
  while (power < value) power *= 2;
  return power;
}

// A block team: a power-of-two number of lanes per pair, no more lanes than rows. Few matrices:
// 16 lanes per pair, so each round is short (latency); many: 4, so more blocks fit per SM.
int block_team_threads(const OnChipLayout& L, int batch) {
  const int pairs = next_power_of_two(std::max(1, L.n_pad / 2));
  const int lanes = std::min(batch < 2 * current_sm_count() ? 16 : 4, next_power_of_two(L.M));
  return std::clamp(pairs * lanes, 32, 1024);
}

// A block of thread teams: 128 matrices, fewer where their slices would not fit the shared memory
// or where the batch would leave SMs without a block (8716 matrices: 64 a block), never fewer than
// a warp's.
int thread_team_threads(int slice_bytes, int batch) {
  const int by_memory = shared_memory_optin() / slice_bytes;
  const int by_batch = batch / current_sm_count();
  return std::clamp(std::min(by_memory, by_batch) / 32 * 32, 32, max_threads_per_block);
}

}  // namespace

int shared_memory_optin() { return current_device_features().shared_per_block; }

template <class T>
bool fits_on_chip(int m, int n, bool uv) {
  return on_chip_layout(m, n, sizeof(T), uv, true).bytes <= shared_memory_optin();
}

template <class T>
bool fits_in_a_thread(int m, int n, bool uv) {
  return std::int64_t(thread_slice_bytes(m, n, sizeof(T), uv)) * 32 <= shared_memory_optin();
}

template <class T>
void run_on_chip(const Problem<T>& problem, OnChipTeam team, const Report& report,
                 cudaStream_t stream) {
  if (problem.batch == 0) return;
  const int optin = shared_memory_optin();
  if (team == OnChipTeam::thread) {
    const OnChipLayout L = on_chip_layout(problem.m, problem.n, sizeof(T), problem.uv, false);
    const int slice = thread_slice_bytes(problem.m, problem.n, sizeof(T), problem.uv);
    require(std::int64_t(slice) * 32 <= optin, "svd", "m, n",
            "matrix too large for a thread's slice of shared memory");
    const int threads = thread_team_threads(slice, problem.batch);
    const int bytes = threads * slice;
    allow_shared_memory(svd_thread_per_matrix<T>, bytes);
    const auto blocks = unsigned((std::int64_t(problem.batch) + threads - 1) / threads);
    svd_thread_per_matrix<T><<<blocks, threads, bytes, stream>>>(problem, L, slice, report);
    detail::check_launch("svd", "svd_thread_per_matrix");
  } else if (team == OnChipTeam::warp) {
    const OnChipLayout L = on_chip_layout(problem.m, problem.n, sizeof(T), problem.uv, false);
    require(L.bytes <= optin, "svd", "m, n", "matrix too large for one warp's shared memory");
    const int warps = std::clamp(optin / L.bytes, 1, max_warps_per_block);
    const int bytes = warps * L.bytes;
    allow_shared_memory(svd_warp_per_matrix<T>, bytes);
    const auto blocks = unsigned((std::int64_t(problem.batch) + warps - 1) / warps);
    svd_warp_per_matrix<T>
        <<<blocks, warps * 32, bytes, stream>>>(problem, L, lanes_per_pair(32, L.n_pad), report);
    detail::check_launch("svd", "svd_warp_per_matrix");
  } else {
    const OnChipLayout L = on_chip_layout(problem.m, problem.n, sizeof(T), problem.uv, true);
    require(L.bytes <= optin, "svd", "m, n", "matrix too large for one block's shared memory");
    const int threads = block_team_threads(L, problem.batch);
    allow_shared_memory(svd_block_per_matrix<T>, L.bytes);
    svd_block_per_matrix<T><<<unsigned(problem.batch), threads, L.bytes, stream>>>(
        problem, L, lanes_per_pair(threads, L.n_pad), report);
    detail::check_launch("svd", "svd_block_per_matrix");
  }
}

template bool fits_on_chip<float>(int, int, bool);
template bool fits_on_chip<double>(int, int, bool);
template bool fits_in_a_thread<float>(int, int, bool);
template bool fits_in_a_thread<double>(int, int, bool);
template void run_on_chip<float>(const Problem<float>&, OnChipTeam, const Report&, cudaStream_t);
template void run_on_chip<double>(const Problem<double>&, OnChipTeam, const Report&, cudaStream_t);

}  // namespace rooflab::jacobi
