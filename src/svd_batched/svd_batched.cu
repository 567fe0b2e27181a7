// rooflab::svd_batched: the SVD of many matrices. Each matrix's working set (W, V, norms, order)
// lives in shared memory, owned by one warp (small matrices: many per block, no block barriers)
// or by one block (up to the 227 KB a Hopper block can opt into); larger matrices go to the
// Gram schedule of src/svd/svd.cu (jacobi::production_path chooses). Every matrix converges on
// its own: a converged matrix's team stops and its SM takes the next one.
#include <algorithm>
#include <string>

#include "core/device_features.hpp"
#include "core/device_info.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
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

}  // namespace

int shared_memory_optin() { return current_device_features().shared_per_block; }

template <class T>
bool fits_on_chip(int m, int n, bool uv) {
  return on_chip_layout(m, n, sizeof(T), uv, true).bytes <= shared_memory_optin();
}

template <class T>
void run_on_chip(const Problem<T>& problem, bool warp_per_matrix, const Report& report,
                 cudaStream_t stream) {
  if (problem.batch == 0) return;
  const int optin = shared_memory_optin();
  if (warp_per_matrix) {
    const OnChipLayout L = on_chip_layout(problem.m, problem.n, sizeof(T), problem.uv, false);
    require(L.bytes <= optin, "svd", "m, n", "matrix too large for one warp's shared memory");
    const int warps = std::clamp(optin / L.bytes, 1, max_warps_per_block);
    const int bytes = warps * L.bytes;
    allow_shared_memory(svd_warp_per_matrix<T>, bytes);
    const auto blocks = unsigned((std::int64_t(problem.batch) + warps - 1) / warps);
    svd_warp_per_matrix<T><<<blocks, warps * 32, bytes, stream>>>(problem, L,
                                                                  lanes_per_pair(32, L.n_pad), report);
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
template void run_on_chip<float>(const Problem<float>&, bool, const Report&, cudaStream_t);
template void run_on_chip<double>(const Problem<double>&, bool, const Report&, cudaStream_t);

}  // namespace rooflab::jacobi

namespace rooflab {

template <class T>
void svd_batched(const T* A, int m, int n, int batch, T* S, T* U, T* V, SvdInfo* info,
                 const SvdOptions& opt, cudaStream_t stream) {
  constexpr const char* op = "svd_batched";
  const T tol = jacobi::resolve_options<T>(op, m, n, opt);
  require(batch >= 0, op, "batch", "must not be negative");
  if (batch == 0) return;
  require(A != nullptr, op, "A", "must not be null");
  require(S != nullptr, op, "S", "must not be null");
  require(!opt.compute_uv || U != nullptr, op, "U", "must not be null when compute_uv is set");
  require(!opt.compute_uv || V != nullptr, op, "V", "must not be null when compute_uv is set");

  const int k = std::min(m, n);
  jacobi::Problem<T> problem;
  problem.A = A;
  problem.lda = m;
  problem.a_stride = std::int64_t(m) * n;
  problem.m = m;
  problem.n = n;
  problem.batch = batch;
  problem.S = S;
  problem.U = U;
  problem.V = V;
  problem.ldu = m;
  problem.ldv = n;
  problem.s_stride = k;
  problem.u_stride = std::int64_t(m) * k;
  problem.v_stride = std::int64_t(n) * k;
  problem.tol = tol;
  problem.max_sweeps = opt.max_sweeps;
  problem.uv = opt.compute_uv;

  StreamBuffer summary(sizeof(jacobi::BatchSummary), stream, op);
  StreamBuffer statuses(info != nullptr ? sizeof(jacobi::MatrixStatus) * std::size_t(batch) : 0,
                        stream, op);
  ROOFLAB_CUDA(op, "zeroing the batch summary",
               cudaMemsetAsync(summary.data(), 0, summary.bytes(), stream));
  const jacobi::Report report{statuses.as<jacobi::MatrixStatus>(),
                              summary.as<jacobi::BatchSummary>()};
  jacobi::run_path(problem, jacobi::production_path<T>(m, n, batch, opt.compute_uv), report, stream);

  jacobi::BatchSummary host_summary{};
  ROOFLAB_CUDA(op, "copying the batch summary to the host",
               cudaMemcpyAsync(&host_summary, summary.data(), sizeof(host_summary),
                               cudaMemcpyDeviceToHost, stream));
  std::vector<jacobi::MatrixStatus> host_statuses(info != nullptr ? batch : 0);
  if (info != nullptr)
    ROOFLAB_CUDA(op, "copying the matrices' statuses to the host",
                 cudaMemcpyAsync(host_statuses.data(), statuses.data(), statuses.bytes(),
                                 cudaMemcpyDeviceToHost, stream));
  ROOFLAB_CUDA(op, "waiting for the stream", cudaStreamSynchronize(stream));
  for (int b = 0; b < int(host_statuses.size()); ++b) info[b] = jacobi::to_info(host_statuses[b]);

  if (host_summary.bad_count > 0)
    throw Error(op, "A",
                "matrix " + std::to_string(batch - int(host_summary.first_bad_key)) +
                    " contains NaN or Inf (" + std::to_string(host_summary.bad_count) +
                    " such matrices; their S, U, V are NaN, every other matrix's results are valid)");
  if (info == nullptr && host_summary.unconverged_count > 0)
    throw Error(op, "opt.max_sweeps",
                "matrix " + std::to_string(batch - int(host_summary.first_unconverged_key)) +
                    " did not converge in " + std::to_string(opt.max_sweeps) + " sweeps (" +
                    std::to_string(host_summary.unconverged_count) +
                    " such matrices); pass info to receive per-matrix convergence instead");
}

template void svd_batched<float>(const float*, int, int, int, float*, float*, float*, SvdInfo*,
                                 const SvdOptions&, cudaStream_t);
template void svd_batched<double>(const double*, int, int, int, double*, double*, double*,
                                  SvdInfo*, const SvdOptions&, cudaStream_t);

}  // namespace rooflab
