// The SVD's dispatch: which path solves `batch` m x n matrices of a type on this device, and the
// call that runs a problem on a path. Both entry points (rooflab::svd, rooflab::svd_batched) come
// here; each path is one schedule's file. The rules, in order (production_path):
//   1. one tall matrix where QR pays (qr_preconditioning_pays)  -> qr_preconditioned: QR first,
//      then R through these same rules;
//   2. fewer matrices than SMs of at most 64 x 64               -> register_ring;
//   3. wider than 64 columns, at most one matrix per 2 SMs      -> gram;
//   4. one matrix of 49 columns or more                         -> gram;
//   5. at most 9 columns, 192 elements and 1792 bytes of shared memory, at least 64 matrices
//      per SM (one for at most 16 elements)                     -> thread_per_matrix;
//   6. fits in shared memory: a warp's (48 KB) with a batch that fills the GPU and at most 32
//      columns or 64 matrices per SM                            -> warp_per_matrix;
//      else                                                     -> block_per_matrix;
//   7. anything else                                            -> gram.
// "gram" runs GlobalSchedule::gram_cluster: the sweeps in one cluster per matrix where the matrix
// fits one and every cluster fits on the GPU at once, else the fused rounds where a round's
// clusters fit, else the three Gram kernels a round (run_global.cu); clusters only where
// DeviceFeatures::clusters() holds (compute capability 9.0 on, and kernels compiled for it). The
// on-chip paths' shared memory is the device's opt-in (DeviceFeatures::shared_per_block).
// The measured reason is beside each rule. Plain C++.
#include <algorithm>
#include <cstdint>

#include "core/device_query.hpp"
#include "svd/jacobi.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::jacobi {
namespace {

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

// The smallest matrices go to a thread each. Against a warp per matrix on an H200
// (docs/results/h200-thread-per-matrix.json), 100000 of them: 14-20x faster at 2 x 2, 3 x 2 and
// 3 x 3, 6.8-9.6x at 4 x 4, 1.4-2.4x at 8 x 8, 9 x 9, 16 x 8, 32 x 4 and 64 x 3; even or
// slower at 64 x 4 (1.02x) and 32 x 8 (0.97x) in float, 10 x 10 in double (0.93x), 12 x 12 in float
// (0.92x). A thread runs a sweep's N (N - 1) / 2 pairs one after the other where a warp runs N / 2
// at once, and a larger slice of shared memory leaves fewer matrices an SM: at most 9 columns, 192
// elements and 1792 bytes of slice (double 16 x 8 has 1768, 10 x 10 1896). A thread's matrix then
// takes longer than a warp's, so the batch must fill the GPU: at 1000 matrices (under 8 an SM) the
// warp was 3.7x faster at 8 x 8 in double and 1.7x at 16 x 3 in float, at 8716 (66 an SM) the two
// were within 8% at 8 x 8 and 32 x 4 in double and the thread 1.9x faster at 16 x 3; matrices of at
// most 16 elements win from a matrix an SM (3 x 3 in float: 1.2x at 200).
constexpr int thread_per_matrix_max_columns = 9;
constexpr int thread_per_matrix_max_elements = 192;
constexpr int thread_per_matrix_max_slice_bytes = 1792;
constexpr int thread_per_matrix_min_batch_per_sm = 64;
constexpr int thread_per_matrix_tiny_elements = 16;

template <class T>
bool thread_per_matrix_pays(int m, int n, std::int64_t batch, bool uv) {
  const std::int64_t sms = current_sm_count(), elements = std::int64_t(m) * n;
  if (batch < sms || std::min(m, n) > thread_per_matrix_max_columns ||
      elements > thread_per_matrix_max_elements ||
      thread_slice_bytes(m, n, sizeof(T), uv) > thread_per_matrix_max_slice_bytes ||
      !fits_in_a_thread<T>(m, n, uv))
    return false;
  return elements <= thread_per_matrix_tiny_elements ||
         batch >= thread_per_matrix_min_batch_per_sm * sms;
}

}  // namespace

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
  if (thread_per_matrix_pays<T>(m, n, batch, uv)) return Path::thread_per_matrix;
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
    case Path::thread_per_matrix: return run_on_chip(problem, OnChipTeam::thread, report, stream);
    case Path::warp_per_matrix: return run_on_chip(problem, OnChipTeam::warp, report, stream);
    case Path::block_per_matrix: return run_on_chip(problem, OnChipTeam::block, report, stream);
    case Path::register_ring: return run_in_registers(problem, report, stream);
    case Path::gram: return run_global(problem, GlobalSchedule::gram_cluster, report, stream);
    case Path::qr_preconditioned: return run_qr_preconditioned(problem, false, report, stream);
    case Path::qr_transposed_triangle: return run_qr_preconditioned(problem, true, report, stream);
  }
}

// The second try. Where the production paths ran out of their 30 sweeps (geometric and
// log-uniform spectra at condition 1/eps from 512 x 512: U not orthonormal; an H100,
// docs/results/h100-svd-transposed-triangle.json), rung 15 took 11 to 12 sweeps alone and 10 to 12
// as the second try (h100-svd-second-try.json), and it took fewer than the production paths on
// every such spectrum measured; it is not the first try because its QR costs 0.8 ms at 100 x 100
// and 5 ms at 1024 x 1024 (the zero matrix's time), more than a random matrix's sweeps gain from
// it. A caller's max_sweeps below the default (LAPACK dgesvj's 30) bounds the work: no second try
// then.
bool tries_again_on_transposed_triangle(Path first, int max_sweeps) {
  return first != Path::qr_transposed_triangle && max_sweeps >= SvdOptions{}.max_sweeps;
}

template <class T>
bool solve_again_on_transposed_triangle(const Problem<T>& problem, int b, Path first,
                                        const Report& report, cudaStream_t stream) {
  if (!tries_again_on_transposed_triangle(first, problem.max_sweeps)) return false;
  Problem<T> matrix = problem;
  matrix.batch = 1;
  matrix.second_try_follows = false;
  matrix.A += b * problem.a_stride;
  matrix.S += b * problem.s_stride;
  if (problem.uv) {
    matrix.U += b * problem.u_stride;
    matrix.V += b * problem.v_stride;
  }
  run_path(matrix, Path::qr_transposed_triangle, Report{report.status, nullptr}, stream);
  return true;
}

template Path production_path<float>(int, int, int, bool);
template Path production_path<double>(int, int, int, bool);
template void run_path<float>(const Problem<float>&, Path, const Report&, cudaStream_t);
template void run_path<double>(const Problem<double>&, Path, const Report&, cudaStream_t);

template bool solve_again_on_transposed_triangle<float>(const Problem<float>&, int, Path,
                                                        const Report&, cudaStream_t);
template bool solve_again_on_transposed_triangle<double>(const Problem<double>&, int, Path,
                                                         const Report&, cudaStream_t);

}  // namespace rooflab::jacobi
