// The Jacobi SVD paper's ladder (Bezruchenko & Egunov 2023): its Jacobi iteration ported to CUDA
// one optimization at a time, P1 to P6, each rung run at the sizes and thread shapes of its table.
//
// The algorithm of every rung: while some off-diagonal |a_ij| exceeds the threshold, sweep the
// pairs j < k in row order; for a pair above the threshold form the n x n rotation matrix R and
// its transpose and multiply, A = R A R^T, V = R V, U = U R^T. As in the paper, each product
// (multiply_matrices_only_jk) starts from a full copy of the operand and recomputes only rows j
// and k and columns j and k, every entry a length-n dot product: 16 n^2 multiply-adds and six
// n x n copies per rotation. The values are read off as column sums of the converged A.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/svd_paper.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "svd_paper/svd_paper_workspace.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* op_name = "bench svd-paper";

// Blocks x threads of every kernel of a rung: the paper's num_blocks and num_threads.
struct LaunchShape {
  int blocks;
  int threads;
};

// Which outputs a thread of a product takes: every q-th one starting at its own index, q being
// the threads that share the loop (the paper's listing 9), or a contiguous chunk (loop step 1).
enum class LoopStep { threads, one };

// Column-major, as cuBLAS's IDX2C macro, which the paper uses without defining it. Every n here
// is at most 2048, so n^2 fits an int.
__host__ __device__ inline int at(int row, int column, int n) { return row + column * n; }

// Entry (row, column) of the rotation R of pair (j, k): the identity but for four entries.
__host__ __device__ inline double rotation_entry(int row, int column, int j, int k,
                                                 cpu::Rotation rotation) {
  if ((row == j && column == j) || (row == k && column == k)) return rotation.c;
  if (row == j && column == k) return rotation.s;
  if (row == k && column == j) return -rotation.s;
  return row == column ? 1.0 : 0.0;
}

__device__ inline int global_thread() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline int global_threads() { return gridDim.x * blockDim.x; }

// ------------------------------------------------------------------------------------------
// The paper's kernels. Matrices are walked a column at a time with consecutive threads on
// consecutive rows, so stores coalesce.

// fill_as_identity on the device (P2 on; P1 fills on the host).
__global__ void fill_identity(double* matrix, int n) {
  for (int column = 0; column < n; ++column)
    for (int row = global_thread(); row < n; row += global_threads())
      matrix[at(row, column, n)] = row == column ? 1.0 : 0.0;
}

// The rotation's set-up on the device (P2 on): every thread derives c and s from a_jj, a_kk and
// a_jk (the same bits in every thread) and R, R^T are written in full, as the paper's
// fill_as_r / fill_as_rt do. Whether the pair rotates (cpu::pair_above_threshold) stays on the
// device, in `rotate`, which the products read: nothing crosses to the host per pair.
__global__ void set_up_rotation(const double* a, int n, int j, int k, double threshold, double* r,
                                double* rt, int* rotate) {
  const double a_jk = a[at(j, k, n)];
  const bool rotating = cpu::pair_above_threshold(a_jk, a[at(k, j, n)], threshold);
  if (global_thread() == 0) *rotate = rotating;
  if (!rotating) return;
  const cpu::Rotation rotation = cpu::paper_rotation(a[at(j, j, n)], a[at(k, k, n)], a_jk);
  for (int column = 0; column < n; ++column)
    for (int row = global_thread(); row < n; row += global_threads()) {
      r[at(row, column, n)] = rotation_entry(row, column, j, k, rotation);
      rt[at(row, column, n)] = rotation_entry(column, row, j, k, rotation);
    }
}

// The paper's multiply_matrices_only_jk_gpu: res = first * second, where res already holds a copy
// of the operand that the rotation leaves unchanged outside rows j, k and columns j, k. The threads
// split in four consecutive quarters (row j, row k, column j, column k), so that with more than one
// warp the warps do not diverge; with 32 threads the four branches share one warp and run one after
// another. The split here is by the global thread index; listing 8 splits by threadIdx alone, so
// that more than one block would repeat the product. Each entry is a length-n dot product, computed
// by one thread in order (so every launch shape and loop step gives the same bits).
template <LoopStep step>
__global__ void multiply_only_jk_gpu(const double* first, const double* second, double* res, int n,
                                     int j, int k, const int* rotate) {
  if (rotate != nullptr && *rotate == 0) return;
  const int quarter = global_threads() / 4;
  const int operation = global_thread() / quarter;
  if (operation >= 4) return;
  const int lane = global_thread() - operation * quarter;
  int begin = lane, end = n, stride = quarter;
  if (step == LoopStep::one) {
    const int chunk = (n + quarter - 1) / quarter;
    begin = min(n, lane * chunk);
    end = min(n, begin + chunk);
    stride = 1;
  }
  if (operation < 2) {
    const int row = operation == 0 ? j : k;
    for (int b = begin; b < end; b += stride) {
      double sum = 0;
      for (int c = 0; c < n; ++c) sum += first[at(row, c, n)] * second[at(c, b, n)];
      res[at(row, b, n)] = sum;
    }
  } else {
    const int column = operation == 2 ? j : k;
    for (int a = begin; a < end; a += stride) {
      if (a == j || a == k) continue;  // rows j and k are the row quarters' entries
      double sum = 0;
      for (int c = 0; c < n; ++c) sum += first[at(a, c, n)] * second[at(c, column, n)];
      res[at(a, column, n)] = sum;
    }
  }
}

// The paper's is_converged_gpu, over every off-diagonal element (the printed listing's loop stops
// at m, which covers the first column only). Threads that find one write the same 1.
__global__ void flag_off_diagonal_above(const double* a, int n, double threshold, int* above) {
  for (int column = 0; column < n; ++column)
    for (int row = global_thread(); row < n; row += global_threads())
      if (row != column && fabs(a[at(row, column, n)]) > threshold) {
        *above = 1;
        return;
      }
}

// The paper's getSums: each value is the sum of a column of the converged A, whose off-diagonal
// elements are all below the threshold.
__global__ void column_sums(const double* a, int n, double* sums) {
  for (int column = global_thread(); column < n; column += global_threads()) {
    double sum = 0;
    for (int row = 0; row < n; ++row) sum += a[at(row, column, n)];
    sums[column] = sum;
  }
}

// ------------------------------------------------------------------------------------------
// Host side.

void check_last_launch(const char* kernel) { detail::check_launch(op_name, kernel); }

// The L1 / shared-memory split every kernel of a run asks for (P6 varies it; the others ask for
// the default). The attribute belongs to the kernel, not the launch, so each run sets it anew.
template <class Kernel>
void prefer_carveout(Kernel* kernel, int percent) {
  ROOFLAB_CUDA(
      op_name, "setting the kernel's shared-memory carveout",
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
}
void prefer_carveout(int percent) {
  prefer_carveout(fill_identity, percent);
  prefer_carveout(set_up_rotation, percent);
  prefer_carveout(multiply_only_jk_gpu<LoopStep::threads>, percent);
  prefer_carveout(multiply_only_jk_gpu<LoopStep::one>, percent);
  prefer_carveout(flag_off_diagonal_above, percent);
  prefer_carveout(column_sums, percent);
}

void copy_matrix(double* to, const double* from, int n, cudaStream_t stream) {
  ROOFLAB_CUDA(
      op_name, "copying a matrix",
      cudaMemcpyAsync(to, from, std::size_t(n) * n * sizeof(double), cudaMemcpyDefault, stream));
}

void synchronize(cudaStream_t stream) {
  ROOFLAB_CUDA(op_name, "waiting for the stream", cudaStreamSynchronize(stream));
}

// The paper's multiply_matrices_only_jk: a full copy of the operand the product keeps, then the
// kernel recomputes rows and columns j and k.
template <LoopStep step>
void multiply_only_jk(LaunchShape shape, const double* first, const double* second, double* res,
                      bool keep_first, int n, int j, int k, const int* rotate,
                      cudaStream_t stream) {
  copy_matrix(res, keep_first ? first : second, n, stream);
  multiply_only_jk_gpu<step>
      <<<shape.blocks, shape.threads, 0, stream>>>(first, second, res, n, j, k, rotate);
  check_last_launch("multiply_only_jk_gpu");
}

// The paper's buffers: A, V, U and their products R A, R V, U R^T, then R and R^T (n x n each),
// and two flags: this pair rotates, an element is above the threshold.
struct PaperBuffers {
  double* a;
  double* v;
  double* u;
  double* rotated_a;
  double* rotated_v;
  double* rotated_u;
  double* r;
  double* rt;
  int* rotate;
  int* above;
};
constexpr int paper_matrices = 8;

PaperBuffers paper_buffers(double* const (&m)[paper_matrices], int* flags) {
  return PaperBuffers{m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], flags, flags + 1};
}

std::size_t paper_matrix_bytes(int n) {
  return std::size_t(paper_matrices) * n * n * sizeof(double);
}

// cudaMallocManaged memory (the paper's alloc_matrix_gpu), freed on destruction.
template <class T>
class ManagedArray {
 public:
  explicit ManagedArray(std::size_t count) {
    ROOFLAB_CUDA(op_name, "allocating managed memory",
                 cudaMallocManaged(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~ManagedArray() { cudaFree(data_); }
  ManagedArray(const ManagedArray&) = delete;
  ManagedArray& operator=(const ManagedArray&) = delete;
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
};

// Managed memory can be oversubscribed; these rungs never ask for more than the device has free,
// so that what they measure is migration, not eviction.
std::size_t require_free_device_memory(std::size_t bytes) {
  std::size_t free = 0, total = 0;
  ROOFLAB_CUDA(op_name, "asking how much device memory is free", cudaMemGetInfo(&free, &total));
  if (bytes > free)
    throw Error(op_name, "--n",
                "needs " + std::to_string(bytes) + " bytes of managed memory, more than the " +
                    std::to_string(free) + " bytes free on the device");
  return bytes;
}

// The buffers in managed memory (P1, P2), one allocation per matrix as the paper's
// alloc_matrix_gpu makes them, so that the host touching R moves R's pages, not A's. The host
// reads the convergence flag in place.
class ManagedPaperBuffers {
 public:
  ManagedPaperBuffers(int n, cudaStream_t stream) : flags_(2), stream_(stream) {
    require_free_device_memory(paper_matrix_bytes(n));
    double* m[paper_matrices];
    for (int i = 0; i < paper_matrices; ++i) {
      matrices_[i] = std::make_unique<ManagedArray<double>>(std::size_t(n) * n);
      m[i] = matrices_[i]->data();
    }
    buffers_ = paper_buffers(m, flags_.data());
  }
  // Work queued on the stream may still use the memory; a destructor cannot report an error.
  ~ManagedPaperBuffers() { cudaStreamSynchronize(stream_); }
  ManagedPaperBuffers(const ManagedPaperBuffers&) = delete;
  ManagedPaperBuffers& operator=(const ManagedPaperBuffers&) = delete;
  const PaperBuffers& pointers() const { return buffers_; }
  bool element_above(cudaStream_t stream) const {
    synchronize(stream);
    return *buffers_.above != 0;
  }

 private:
  std::unique_ptr<ManagedArray<double>> matrices_[paper_matrices];
  ManagedArray<int> flags_;
  cudaStream_t stream_;
  PaperBuffers buffers_;
};

// The buffers in device memory, stream-ordered (P3 on: the paper's "not unified"). The flag
// crosses to the host by an explicit copy.
class DevicePaperBuffers {
 public:
  DevicePaperBuffers(int n, cudaStream_t stream)
      : matrices_(paper_matrix_bytes(n), stream, op_name),
        flags_(2 * sizeof(int), stream, op_name) {
    double* m[paper_matrices];
    for (int i = 0; i < paper_matrices; ++i) m[i] = matrices_.as<double>() + std::size_t(i) * n * n;
    buffers_ = paper_buffers(m, flags_.as<int>());
  }
  const PaperBuffers& pointers() const { return buffers_; }
  bool element_above(cudaStream_t stream) const {
    int above = 0;
    ROOFLAB_CUDA(
        op_name, "copying the count of elements above tolerance to the host",
        cudaMemcpyAsync(&above, buffers_.above, sizeof(int), cudaMemcpyDeviceToHost, stream));
    synchronize(stream);
    return above != 0;
  }

 private:
  StreamBuffer matrices_;
  StreamBuffer flags_;
  PaperBuffers buffers_;
};

// ------------------------------------------------------------------------------------------
// Size limits (paper_limit): what keeps `rooflab bench svd-paper --warmup 0` to about three
// minutes on an H100 or H200 by this model (docs/svd-paper.md gives its prediction per cell). A
// run visits 5-6 n^2 pairs (n^2 / 2 per sweep, 10-12 sweeps from n = 100 on: docs/svd-paper.md)
// and rotates 3.5-4 n^2 of them. From P2 on every pair costs the host eleven stream operations
// (about 28 us to enqueue), and a rotating pair costs the GPU about 17 us of copies and launch
// gaps, the set-up (2 n^2 stores) and four products. A product is latency-bound on few warps
// (per output a chain of n dependent multiply-adds, about 25 cycles an iteration with its loads)
// and L1-bound on one SM: a row quarter's thread reads its own column of `second`, one cache
// line per load, so the row quarters cost about 2 n^2 L1 wavefronts (10 us at n = 100, 40 us at
// 200) however many threads share the block. The harness validates a cell once and times it at
// least three times, up to 4 s of repetitions: a cell costs about max(4 s, four runs).

// Rung 1 — P1, the paper's first GPU version (its listings 1-9; Table 1's GPU column, Table 2's
// "before"). Only the products run on the GPU, one block of 32 threads. The host reads A in
// managed memory for every pair and writes R, R^T for every pair it rotates, and scans A for
// convergence after every sweep, so pages fault across PCIe in both directions at every rotation,
// and the host waits for the GPU twice per rotation.

// Table 2 ran on 32 threads (l. 445); Table 1's first version launches 32 (Listing 7).
constexpr LaunchShape paper_shape{1, 32};

void fill_identity_on_host(double* matrix, int n) {
  for (int column = 0; column < n; ++column)
    for (int row = 0; row < n; ++row) matrix[at(row, column, n)] = row == column ? 1.0 : 0.0;
}

bool off_diagonal_above_on_host(const double* a, int n, double threshold) {
  for (int column = 0; column < n; ++column)
    for (int row = 0; row < n; ++row)
      if (row != column && std::abs(a[at(row, column, n)]) > threshold) return true;
  return false;
}

void rotate_pair_from_host(const PaperBuffers& b, int n, int j, int k, double threshold,
                           cudaStream_t stream) {
  const double a_jk = b.a[at(j, k, n)];  // the host reads memory the GPU wrote last
  if (!cpu::pair_above_threshold(a_jk, b.a[at(k, j, n)], threshold)) return;
  const cpu::Rotation rotation = cpu::paper_rotation(b.a[at(j, j, n)], b.a[at(k, k, n)], a_jk);
  for (int column = 0; column < n; ++column)
    for (int row = 0; row < n; ++row) {
      b.r[at(row, column, n)] = rotation_entry(row, column, j, k, rotation);
      b.rt[at(row, column, n)] = rotation_entry(column, row, j, k, rotation);
    }
  multiply_only_jk<LoopStep::threads>(paper_shape, b.r, b.a, b.rotated_a, false, n, j, k, nullptr,
                                      stream);
  multiply_only_jk<LoopStep::threads>(paper_shape, b.r, b.v, b.rotated_v, false, n, j, k, nullptr,
                                      stream);
  multiply_only_jk<LoopStep::threads>(paper_shape, b.u, b.rt, b.rotated_u, true, n, j, k, nullptr,
                                      stream);
  synchronize(stream);
  multiply_only_jk<LoopStep::threads>(paper_shape, b.rotated_a, b.rt, b.a, true, n, j, k, nullptr,
                                      stream);
  copy_matrix(b.v, b.rotated_v, n, stream);
  copy_matrix(b.u, b.rotated_u, n, stream);
  synchronize(stream);
}

void run_first_version(SvdPaperWorkspace& w, cudaStream_t stream) {
  const int n = w.n;
  prefer_carveout(cudaSharedmemCarveoutDefault);
  ManagedPaperBuffers buffers(n, stream);
  const PaperBuffers& b = buffers.pointers();
  copy_matrix(b.a, w.input.data(), n, stream);
  synchronize(stream);
  fill_identity_on_host(b.u, n);
  fill_identity_on_host(b.v, n);
  int sweeps = 0;
  bool converged = false;
  for (;;) {
    converged = !off_diagonal_above_on_host(b.a, n, w.threshold);
    if (converged || sweeps == w.max_sweeps) break;
    for (int j = 0; j + 1 < n; ++j)
      for (int k = j + 1; k < n; ++k) rotate_pair_from_host(b, n, j, k, w.threshold, stream);
    ++sweeps;
  }
  std::vector<double> sums(n, 0.0);  // the paper's getSum, on the host
  for (int column = 0; column < n; ++column)
    for (int row = 0; row < n; ++row) sums[column] += b.a[at(row, column, n)];
  ROOFLAB_CUDA(op_name, "copying the eigenvalues to the device",
               cudaMemcpyAsync(w.values.data(), sums.data(), n * sizeof(double),
                               cudaMemcpyHostToDevice, stream));
  copy_matrix(w.vectors.data(), b.u, n, stream);
  synchronize(stream);
  w.vectors_written = true;
  w.report_sweeps(sweeps, converged);
}

ROOFLAB_VARIANT(Variant{
    "svd-paper", 1, "managed-host",
    "P1: products on 1x32 GPU threads, the host in managed memory every rotation (Tables 1, 2)",
    Where::gpu, false,
    paper_limit(table1 | table2, 50,
                "the host touches managed memory at every one of ~4n^2 rotations (page faults both "
                "ways, two host waits): seconds per run beyond"),
    on<SvdPaperWorkspace>(run_first_version)});

// ------------------------------------------------------------------------------------------
// Rungs 2 on — everything on the device. The host only enqueues: per pair a set-up kernel and
// the four products with their copies (eleven stream operations, no wait); per sweep the
// convergence test, whose one flag is all that crosses to the host.

template <LoopStep step>
void enqueue_pair(const PaperBuffers& b, int n, int j, int k, double threshold, LaunchShape shape,
                  cudaStream_t stream) {
  set_up_rotation<<<shape.blocks, shape.threads, 0, stream>>>(b.a, n, j, k, threshold, b.r, b.rt,
                                                              b.rotate);
  check_last_launch("set_up_rotation");
  // R A, R V and U R^T, then A = (R A) R^T; V and U take their products back by copies.
  multiply_only_jk<step>(shape, b.r, b.a, b.rotated_a, false, n, j, k, b.rotate, stream);
  multiply_only_jk<step>(shape, b.r, b.v, b.rotated_v, false, n, j, k, b.rotate, stream);
  multiply_only_jk<step>(shape, b.u, b.rt, b.rotated_u, true, n, j, k, b.rotate, stream);
  multiply_only_jk<step>(shape, b.rotated_a, b.rt, b.a, true, n, j, k, b.rotate, stream);
  copy_matrix(b.v, b.rotated_v, n, stream);
  copy_matrix(b.u, b.rotated_u, n, stream);
}

template <LoopStep step, class Buffers>
void run_on_device(SvdPaperWorkspace& w, cudaStream_t stream, LaunchShape shape, int carveout) {
  const int n = w.n;
  prefer_carveout(carveout);
  Buffers buffers(n, stream);
  const PaperBuffers& b = buffers.pointers();
  copy_matrix(b.a, w.input.data(), n, stream);
  fill_identity<<<shape.blocks, shape.threads, 0, stream>>>(b.u, n);
  check_last_launch("fill_identity");
  fill_identity<<<shape.blocks, shape.threads, 0, stream>>>(b.v, n);
  check_last_launch("fill_identity");
  int sweeps = 0;
  bool converged = false;
  for (;;) {
    ROOFLAB_CUDA(op_name, "zeroing the count of elements above tolerance",
                 cudaMemsetAsync(b.above, 0, sizeof(int), stream));
    flag_off_diagonal_above<<<shape.blocks, shape.threads, 0, stream>>>(b.a, n, w.threshold,
                                                                        b.above);
    check_last_launch("flag_off_diagonal_above");
    converged = !buffers.element_above(stream);
    if (converged || sweeps == w.max_sweeps) break;
    for (int j = 0; j + 1 < n; ++j)
      for (int k = j + 1; k < n; ++k) enqueue_pair<step>(b, n, j, k, w.threshold, shape, stream);
    ++sweeps;
  }
  column_sums<<<shape.blocks, shape.threads, 0, stream>>>(b.a, n, w.values.data());
  check_last_launch("column_sums");
  copy_matrix(w.vectors.data(), b.u, n, stream);
  w.vectors_written = true;
  w.report_sweeps(sweeps, converged);
}

constexpr const char* table2_cost =
    "about 3.5n^2 rotations of four products on one warp, 0.2 ms each rotation at n = 100: "
    "about 8 s per run there";

// Rung 2 — P2, everything on the device, still in managed memory (Table 2's "after, unified").
// Identity fills, the rotation's set-up and the convergence test become kernels; the host no
// longer touches the matrices, so no page migrates after the first touch and the host stops
// waiting per rotation. The paper's version went less far: its host still copied a_jk for every
// pair, and for every rotation read the set-up's three elements and wrote four entries each of R
// and R^T (docs/svd-paper.md). What is left of managed memory: the allocation, first-touch
// faults and the flag's page moving to the host and back once per sweep.
ROOFLAB_VARIANT(Variant{
    "svd-paper", 2, "device-managed",
    "P2: fills, test and (unlike the paper) the set-up in kernels; managed memory (Table 2)",
    Where::gpu, false, paper_limit(table2, 75, table2_cost),
    on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
      run_on_device<LoopStep::threads, ManagedPaperBuffers>(w, stream, paper_shape,
                                                            cudaSharedmemCarveoutDefault);
    })});

// Rung 3 — P3, the same in device memory (Table 2's "after, not unified"): stream-ordered
// allocations, and the flag comes back by an explicit copy.
ROOFLAB_VARIANT(Variant{
    "svd-paper", 3, "device-malloc",
    "P3: P2 with device memory instead of managed (Table 2's cudaMalloc; cudaMallocAsync here)",
    Where::gpu, false, paper_limit(table2, 75, table2_cost),
    on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
      run_on_device<LoopStep::threads, DevicePaperBuffers>(w, stream, paper_shape,
                                                           cudaSharedmemCarveoutDefault);
    })});

// Rungs 40-45 — P4, threads and blocks (Table 3): P3 on 1x32 up to 4x32 threads. With 32 threads
// a quarter is 8 lanes and the warp runs the four quarters one after another; with 64 the warp
// holds two quarters; from 128 on each quarter has whole warps. More warps also keep more loads
// in flight, and more blocks spread them over more SMs (and more L1).
Variant threads_variant(int rung, LaunchShape shape) {
  const std::string name =
      "threads-" + std::to_string(shape.blocks) + "x" + std::to_string(shape.threads);
  return Variant{
      "svd-paper",
      rung,
      name,
      "P4: P3 on " + std::to_string(shape.blocks) + " block(s) x " + std::to_string(shape.threads) +
          " threads (Table 3)",
      Where::gpu,
      false,
      paper_limit(table3, 64,
                  "about 3.5n^2 rotations of four products on at most four warps, six shapes: "
                  "2 to 7 s per run at n = 96"),
      on<SvdPaperWorkspace>([shape](SvdPaperWorkspace& w, cudaStream_t stream) {
        run_on_device<LoopStep::threads, DevicePaperBuffers>(w, stream, shape,
                                                             cudaSharedmemCarveoutDefault);
      })};
}
ROOFLAB_VARIANT(threads_variant(40, {1, 32}));
ROOFLAB_VARIANT(threads_variant(41, {1, 64}));
ROOFLAB_VARIANT(threads_variant(42, {2, 32}));
ROOFLAB_VARIANT(threads_variant(43, {1, 128}));
ROOFLAB_VARIANT(threads_variant(44, {2, 64}));
ROOFLAB_VARIANT(threads_variant(45, {4, 32}));

// Rungs 50-51 — P5, the loop's step (Table 4, 256 threads; one block is ours: the paper gives
// no block count). Step 1 hands each thread
// a contiguous chunk, so at each iteration a warp's column-quarter loads fall a chunk apart;
// step = threads (64 per quarter) puts consecutive threads on consecutive rows and the column
// quarters' loads coalesce. Row quarters read a column each either way: one L1 wavefront per
// thread and iteration, 2 n^2 per product on the block's one SM, which bounds both steps.
constexpr LaunchShape table4_shape{1, 256};
constexpr const char* table4_cost =
    "about 3.8n^2 rotations of four products, each about 2n^2 uncoalesced loads through one "
    "SM's L1: about 30 s per run at n = 200, minutes beyond";

ROOFLAB_VARIANT(Variant{"svd-paper", 50, "step-1",
                        "P5: 1x256 threads, each a contiguous chunk of outputs (Table 4)",
                        Where::gpu, false, paper_limit(table4, 100, table4_cost),
                        on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
                          run_on_device<LoopStep::one, DevicePaperBuffers>(
                              w, stream, table4_shape, cudaSharedmemCarveoutDefault);
                        })});

ROOFLAB_VARIANT(Variant{"svd-paper", 51, "step-threads",
                        "P5: 1x256 threads, loop step = threads: coalesced columns (Table 4)",
                        Where::gpu, false, paper_limit(table4, 100, table4_cost),
                        on<SvdPaperWorkspace>([](SvdPaperWorkspace& w, cudaStream_t stream) {
                          run_on_device<LoopStep::threads, DevicePaperBuffers>(
                              w, stream, table4_shape, cudaSharedmemCarveoutDefault);
                        })});

// Rungs 60-62 — P6, the L1 / shared-memory carveout (the paper saw no noticeable effect and gives
// no table; measured at Table 4's n = 100 beside P5). No kernel here uses shared memory, so the
// split only sizes L1: 0 asks for the largest L1, 100 for the largest shared memory (the smallest
// L1). At n = 100 a product touches about 240 KB, which fits the largest L1 of an H100 and not
// the smallest.
Variant carveout_variant(int rung, int percent) {
  return Variant{
      "svd-paper",
      rung,
      "carveout-" + std::to_string(percent),
      "P6: step-threads with preferred shared-memory carveout " + std::to_string(percent) + "%",
      Where::gpu,
      false,
      paper_limit(table4, 100,
                  "three carveouts of the 256-thread rung: one size keeps the bench short"),
      on<SvdPaperWorkspace>([percent](SvdPaperWorkspace& w, cudaStream_t stream) {
        run_on_device<LoopStep::threads, DevicePaperBuffers>(w, stream, table4_shape, percent);
      })};
}
ROOFLAB_VARIANT(carveout_variant(60, 0));
ROOFLAB_VARIANT(carveout_variant(61, 50));
ROOFLAB_VARIANT(carveout_variant(62, 100));

}  // namespace
}  // namespace rooflab::bench
