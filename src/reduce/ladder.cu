// The reduce ladder: one sum over n elements, from one atomic per element to the production path.
// Rungs 3-7, 9 and 10 are the kernels of Harris's "Optimizing Parallel Reduction in CUDA" (his
// kernels 1 to 7), named V0-V6 after the Harris's reduction document's V1-V6 (it covers V2-V6; V1
// and the kernel before it, here V0, are from the first part of its series, not among the course
// documents), rung 8 rooflab's __syncwarp fix of rung 7, rungs 11-15 the loop-unrolling lab's
// unrolling steps, rung 16 what today's GPUs add (shuffles, 16-byte loads, one pass), rung 17
// production. Rungs 18-19 are production's one-pass kernel written for aligned floats, with plain
// read-only loads: rung 18 deals the input by grid stride as production does (beside rung 17 it
// shows what production's generality costs), rung 19 deals each block a contiguous range (CUB's
// GridEvenShare, rake mapping). Rung 20 is CUB. Rungs 21 and 22 came later and are numbered after
// the ladder, so that earlier results keep their numbers: rung 21 is a step of the loop-unrolling
// lab, rung 22 the kernel its "nearly 10x" starts from (its previous post's naive neighboured
// reduction, not among the course documents; the lab shows no code for it, so its in-place form
// here is rooflab's reading). The course documents' kernels leave one partial per block; their
// run() finishes on the device by running the same kernel again over the partials
// (reduce_in_passes), so every rung's time includes it. Their rungs (2-15, 21 and 22) take float
// and int32 (the loop-unrolling lab sums ints, and so do Harris's NVIDIA slides, 2^22 of them,
// which are not among the course documents; the Harris's reduction document names no type); rungs
// 16, 18 and 19 take float.
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "core/device_info.hpp"
#include "reduce/block_trees.cuh"
#include "reduce/reduce_workspace.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/reduce.cuh"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

using FloatWorkspace = TypedReduceWorkspace<float>;
constexpr const char* op_name = "bench reduce";
constexpr unsigned harris_threads =
    256;  // rooflab's block for V0-V6 (the Harris's reduction document names none)
constexpr unsigned unroll_threads =
    1024;  // the loop-unrolling lab's block (grid 16384 x 1024 for 2^24)

std::string float_only(const Problem& problem) {
  return problem.dtype == "float"
             ? std::string()
             : "these rungs are written for float (production and CUB take every type)";
}

std::string float_or_int32(const Problem& problem) {
  return problem.dtype == "float" || problem.dtype == "int32"
             ? std::string()
             : "the documents' rungs take float and int32 (production and CUB take every type)";
}

// Adapts fn(TypedReduceWorkspace<T>&, stream) to Variant::run for T = float and int32, the types
// float_or_int32 lets through.
template <class Fn>
std::function<void(Workspace&, cudaStream_t)> on_float_or_int32(Fn fn) {
  return [fn](Workspace& workspace, cudaStream_t stream) {
    if (static_cast<ReduceWorkspace&>(workspace).dtype == DType::i32)
      fn(static_cast<TypedReduceWorkspace<std::int32_t>&>(workspace), stream);
    else
      fn(static_cast<FloatWorkspace&>(workspace), stream);
  };
}

// The element type of a reduce workspace.
template <class W>
using element_of = std::remove_pointer_t<decltype(std::declval<W&>().in.data())>;

// Finishes on the device what a per-block kernel starts. pass(in, partial, count, blocks) turns
// count values into one partial per block of per_block values; it runs again over its own
// partials until one value is left, the last pass writing *out. (The documents do not show how they
// add the partials; this is the least that keeps the result on the device: log_per_block(n)
// launches, the partials in stream-ordered scratch.) In is const T, or T for a pass that works in
// place (rung 22): the later passes' inputs are this function's own scratch, so writable too.
template <class In, class T, class Pass>
void reduce_in_passes(In* in, std::int64_t n, T* out, std::int64_t per_block, cudaStream_t stream,
                      Pass pass) {
  const auto blocks_for = [per_block](std::int64_t count) {
    return (count + per_block - 1) / per_block;
  };
  const std::int64_t first_level = blocks_for(n);
  StreamBuffer scratch(sizeof(T) * std::size_t(first_level + blocks_for(first_level)), stream,
                       op_name);
  T* const levels[2] = {scratch.as<T>(), scratch.as<T>() + first_level};
  In* source = in;
  std::int64_t count = n;
  for (int level = 0;; ++level) {
    const std::int64_t blocks = blocks_for(count);
    T* target = blocks == 1 ? out : levels[level % 2];
    pass(source, target, count, unsigned(blocks));
    if (blocks == 1) return;
    source = target;
    count = blocks;
  }
}

// Runs a per-block kernel and finishes its partials with reduce_in_passes.
template <class T, class Kernel>
void run_in_passes(Kernel kernel, unsigned threads, std::int64_t per_block, const char* name,
                   TypedReduceWorkspace<T>& w, cudaStream_t stream) {
  reduce_in_passes(w.in.data(), w.cols, w.out.data(), per_block, stream,
                   [&](const T* in, T* partial, std::int64_t count, unsigned blocks) {
                     kernel<<<blocks, threads, 0, stream>>>(in, partial, count);
                     detail::check_launch(op_name, name);
                   });
}

// A document rung's run(): kernel_of(T{}) is its kernel for the workspace's element type.
template <class KernelOf>
std::function<void(Workspace&, cudaStream_t)> in_passes(KernelOf kernel_of, unsigned threads,
                                                        std::int64_t per_block, const char* name) {
  return on_float_or_int32([=](auto& w, cudaStream_t stream) {
    using T = element_of<std::decay_t<decltype(w)>>;
    run_in_passes(kernel_of(T{}), threads, per_block, name, w, stream);
  });
}

// Turns a run-time block size into a template argument (the Harris's reduction document's switch):
// fn receives it as a std::integral_constant.
template <class Fn>
void with_block_size(unsigned threads, Fn fn) {
  switch (threads) {
    case 128: return fn(std::integral_constant<unsigned, 128>{});
    case 256: return fn(std::integral_constant<unsigned, 256>{});
    case 512: return fn(std::integral_constant<unsigned, 512>{});
    case 1024: return fn(std::integral_constant<unsigned, 1024>{});
  }
  throw Error(op_name, "threads", std::to_string(threads) + " is not 128, 256, 512 or 1024");
}

// Sum of in[first + k * stride] for k < Loads (0 past n): every load is issued before any add
// (the loop-unrolling lab's a1 ... a8), so Loads of them are in flight at once.
template <int Loads, class T>
__device__ __forceinline__ T sum_of_loads(const T* in, std::int64_t first, std::int64_t stride,
                                          std::int64_t n) {
  T loaded[Loads];
#pragma unroll
  for (int k = 0; k < Loads; ++k) {
    const std::int64_t i = first + std::int64_t(k) * stride;
    loaded[k] = i < n ? in[i] : T(0);
  }
  T sum = loaded[0];  // not 0 + loaded[0]: that add would wait for the first load
#pragma unroll
  for (int k = 1; k < Loads; ++k) sum += loaded[k];
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Rung 2 — one global atomicAdd per element (the naive reduction).
// Every thread adds its element straight into *out: correct, but all n atomics hit one address,
// and the L2 slice that owns it serializes them. (Floating-point atomics also make the order, and
// so the rounding, differ from run to run; the lab's inputs keep every order exact.)
template <class T>
__global__ void reduce_atomic_global(const T* in, T* out, std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, in[i]);
}

// Rung 22 — neighboured pairs in place in global memory (the loop-unrolling lab's starting point,
// 0.010491 in the first row of its summary table, which gives no unit: seconds, by docs/reduce.md's
// reading of its "ms"; its previous post's naive kernel, which is not among the course documents
// and whose code the lab does not show; this form is rooflab's reading of it; numbered last).
// Rung 3's tree with no shared memory: each block of 1024 threads (the loop-unrolling lab's) halves
// its own slice where it lies, the threads with t % 2s == 0 adding element t + s. Every step loads
// and stores through L1 and L2 instead of shared memory, with rung 3's divergence and slow %. It
// destroys what it sums, so it runs on a copy of the input that its prepare makes, untimed.
template <class T>
__global__ void reduce_neighboured_in_place(T* data, T* partial, std::int64_t n) {
  const unsigned t = threadIdx.x;
  const std::int64_t first = std::int64_t(blockIdx.x) * blockDim.x;
  T* const slice = data + first;
  // The last block's slice may be short: a pair whose second element is past n is not added.
  const std::int64_t count = n - first < blockDim.x ? n - first : std::int64_t(blockDim.x);
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < count) slice[t] += slice[t + stride];
    __syncthreads();  // also orders the block's global-memory writes before the next step's reads
  }
  if (t == 0) partial[blockIdx.x] = slice[0];
}

// Rung 3 — interleaved addressing, divergent branching (V0, from the first part of the series the
// Harris's reduction document concludes).
// A block copies its 256 values to shared memory and halves them log2(256) times; at stride s,
// threads with t % 2s == 0 add. Active threads are scattered over every warp, so each step keeps
// all 8 warps busy for a shrinking handful of adds, and % is slow.
template <class T>
__global__ void reduce_interleaved_divergent(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * harris_threads + t;
  s[t] = i < n ? in[i] : T(0);  // out-of-range threads add nothing: any n works
  __syncthreads();
  for (unsigned stride = 1; stride < harris_threads; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// Rung 4 — interleaved addressing, strided index (V1, from the first part of the series the
// Harris's reduction document concludes).
// Thread t works on element 2st: the active threads are now the first ones, so whole warps retire
// and the branch no longer diverges inside a warp; but the index 2st makes the threads of a warp
// hit the same shared-memory banks (2-, 4-, ... 16-way conflicts), and each conflict replays the
// access.
template <class T>
__global__ void reduce_interleaved_strided(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * harris_threads + t;
  s[t] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned stride = 1; stride < harris_threads; stride *= 2) {
    const unsigned index = 2 * stride * t;
    if (index < harris_threads) s[index] += s[index + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// Rung 5 — sequential addressing (Harris's V2).
// Thread t adds element t + s with s halving from 128: a warp touches 32 consecutive words, so
// no bank conflicts, and the active threads stay contiguous. Half the threads idle from the
// first step on, though: each loads one element and then mostly waits.
template <class T>
__global__ void reduce_sequential(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * harris_threads + t;
  s[t] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned stride = harris_threads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// Rung 6 — first add during load (Harris's V3).
// Each thread loads two elements a block apart and adds them before the tree: half the blocks
// for the same n, so the idle half of V2's first step is gone and each thread has two loads in
// flight.
template <class T>
__global__ void reduce_first_add(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * (2 * harris_threads) + t;
  s[t] = sum_of_loads<2>(in, i, harris_threads, n);
  __syncthreads();
  for (unsigned stride = harris_threads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// Rung 7 — unroll the last warp with `volatile` (Harris's V4, the loop-unrolling lab's last-warp
// unroll).
// Below 64 live values only one warp works, so the documents drop the loop and the __syncthreads
// and write the six steps out, trusting the warp to run in lockstep, on a `volatile` array (the
// loop-unrolling lab: so that each result is written back to memory "rather than kept in shared
// memory or a cache", and the compiler does not reorder the steps; Harris's reduction document
// gives no reason). Since Volta the lanes of a warp are scheduled independently: nothing orders
// lane t+16's write of s[t+16] after lane t's read of it. A data race (racecheck reports it; see
// the RaceByDesign tests, left out of the sanitizer run); rung 8 fixes it.
template <class T>
__device__ void last_warp_volatile(volatile T* s, unsigned t) {
  s[t] += s[t + 32];
  s[t] += s[t + 16];
  s[t] += s[t + 8];
  s[t] += s[t + 4];
  s[t] += s[t + 2];
  s[t] += s[t + 1];
}

template <class T>
__global__ void reduce_last_warp_volatile(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * (2 * harris_threads) + t;
  s[t] = sum_of_loads<2>(in, i, harris_threads, n);
  __syncthreads();
  for (unsigned stride = harris_threads / 2; stride > 32; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) last_warp_volatile(s, t);
  if (t == 0) partial[blockIdx.x] = s[0];
}

// Rung 8 — the last warp made correct: __syncwarp between its steps (CUDA 9's answer to rung 7).
// Each step reads into a register, meets the warp at __syncwarp, writes, and meets it again: the
// same six steps without the loop or a block barrier, and no race. __syncwarp costs next to
// nothing when the warp is converged, which it is here.
template <class T>
__global__ void reduce_last_warp_syncwarp(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[harris_threads];
  const unsigned t = threadIdx.x;
  const std::int64_t i = std::int64_t(blockIdx.x) * (2 * harris_threads) + t;
  s[t] = sum_of_loads<2>(in, i, harris_threads, n);
  __syncthreads();
  for (unsigned stride = harris_threads / 2; stride > 32; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) {
    const T sum = last_warp_syncwarp(s, t);
    if (t == 0) partial[blockIdx.x] = sum;
  }
}

// Rung 9 — complete unroll, the block size a template argument (Harris's V5).
// With Threads known at compile time every step of the tree is written out and the dead ones are
// dropped: no loop counter, no comparisons. A switch turns the run-time block size into the
// template argument (with_block_size). Also the loop-unrolling lab's last rung, with 8 loads per
// thread (rung 15).
template <class T, unsigned Threads, int Loads>
__global__ void reduce_complete_unroll(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[Threads];
  const unsigned t = threadIdx.x;
  s[t] = sum_of_loads<Loads>(in, std::int64_t(blockIdx.x) * (Loads * Threads) + t, Threads, n);
  __syncthreads();
  const T sum = complete_tree<Threads>(s, t);
  if (t == 0) partial[blockIdx.x] = sum;
}

// Rung 10 — multiple adds per thread, algorithm cascading (Harris's V6).
// A fixed grid (one wave of resident blocks) strides over the input, each thread adding many
// elements, two per step, before the tree: the tree's cost is paid once per thread instead of
// once per two elements, and many independent loads per thread hide memory latency. Then one
// block folds the grid's partials (a second launch of the same kernel).
template <class T, unsigned Threads>
__global__ void reduce_multiple_adds(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[Threads];
  const unsigned t = threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * (2 * Threads);
  T sum = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * (2 * Threads) + t; i < n; i += stride)
    sum += sum_of_loads<2>(in, i, Threads, n);
  s[t] = sum;
  __syncthreads();
  sum = complete_tree<Threads>(s, t);
  if (t == 0) partial[blockIdx.x] = sum;
}

// Rungs 11-13 — unroll2, unroll4, unroll8 (the loop-unrolling lab).
// A block of 1024 threads sums Loads consecutive block-sized tiles: each thread issues Loads
// independent loads before one shared-memory tree (the loop-unrolling lab's sequential-addressing
// loop), and the grid shrinks Loads-fold. More loads in flight per thread is what raised the
// loop-unrolling lab's DRAM throughput from 23 to 49 GB/s. (The loop-unrolling lab reduced in place
// in global memory, destroying its input; here the tree runs in shared memory so that run() can be
// repeated. Rung 22 keeps the in-place form, on a copy.)
//
// Rung 21 — unroll8 with the last warp unrolled and nothing else (the loop-unrolling lab's
// reduceUnrollWarp8: 0.001294 -> 0.001009 there, printed as ms): the loop stops at 64 live values
// and rung 8's last warp does the six steps without a block barrier, six __syncthreads fewer per
// block (the document counts five, l. 347). The document took this step between rungs 13 and 14;
// it is numbered after the ladder so that earlier results keep their numbers. (The document's
// volatile unroll is rung 7's race.)
template <class T, int Loads, bool UnrollLastWarp = false>
__global__ void reduce_unrolled(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[unroll_threads];
  const unsigned t = threadIdx.x;
  s[t] = sum_of_loads<Loads>(in, std::int64_t(blockIdx.x) * (Loads * unroll_threads) + t,
                             unroll_threads, n);
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > (UnrollLastWarp ? 32u : 0u); stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if constexpr (UnrollLastWarp) {
    if (t < 32) {
      const T sum = last_warp_syncwarp(s, t);
      if (t == 0) partial[blockIdx.x] = sum;
    }
  } else if (t == 0) {
    partial[blockIdx.x] = s[0];
  }
}

// Rung 14 — unroll8 with the tree written out (the loop-unrolling lab's complete unroll + last
// warp).
// The steps above 32 are written out but still test blockDim.x at run time; the last warp is rung
// 8's (the loop-unrolling lab used the volatile unroll of rung 7). The loop-unrolling lab found no
// gain over unroll8 plus a last-warp unroll and put it down to the compiler having done that work
// already.
template <class T>
__global__ void reduce_unrolled_complete(const T* in, T* partial, std::int64_t n) {
  __shared__ T s[unroll_threads];
  constexpr int loads = 8;
  const unsigned t = threadIdx.x;
  s[t] = sum_of_loads<loads>(in, std::int64_t(blockIdx.x) * (loads * unroll_threads) + t,
                             unroll_threads, n);
  __syncthreads();
  if (blockDim.x >= 1024 && t < 512) s[t] += s[t + 512];
  __syncthreads();
  if (blockDim.x >= 512 && t < 256) s[t] += s[t + 256];
  __syncthreads();
  if (blockDim.x >= 256 && t < 128) s[t] += s[t + 128];
  __syncthreads();
  if (blockDim.x >= 128 && t < 64) s[t] += s[t + 64];
  __syncthreads();
  if (t < 32) {
    const T sum = last_warp_syncwarp(s, t);
    if (t == 0) partial[blockIdx.x] = sum;
  }
}

// Rung 16 — warp shuffles, 16-byte loads, grid-stride, one pass.
// What the documents did in shared memory now happens in registers: a thread folds float4s (4 in
// flight) over a grid-stride loop, a warp combines with __shfl_down_sync, a block through 8
// shared values; the last block to take the ticket (after __threadfence) folds the per-block
// partials, so there is no second launch. This rung allocates its partials and zeroes the ticket
// on every call; production keeps both per stream instead (the last block resets the ticket).
__global__ void __launch_bounds__(harris_threads)
    reduce_shuffle_one_pass(const float* in, std::int64_t n, float* out, float* partials,
                            unsigned* ticket) {
  __shared__ detail::BlockReduceStorage<float, harris_threads> storage;
  __shared__ bool last_block;
  const auto* in4 =
      reinterpret_cast<const float4*>(in);  // the workspace's buffer is 256-byte aligned
  const std::int64_t vectors = n / 4;
  const std::int64_t stride = std::int64_t(gridDim.x) * harris_threads;
  std::int64_t v = std::int64_t(blockIdx.x) * harris_threads + threadIdx.x;
  float sum = 0.0f;
  for (; v + 3 * stride < vectors; v += 4 * stride) {
    const float4 a = in4[v], b = in4[v + stride], c = in4[v + 2 * stride], d = in4[v + 3 * stride];
    sum += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w)) + ((c.x + c.y) + (c.z + c.w)) +
           ((d.x + d.y) + (d.z + d.w));
  }
  for (; v < vectors; v += stride) {
    const float4 a = in4[v];
    sum += (a.x + a.y) + (a.z + a.w);
  }
  for (std::int64_t i = vectors * 4 + std::int64_t(blockIdx.x) * harris_threads + threadIdx.x;
       i < n; i += stride)
    sum += in[i];
  sum = detail::block_reduce<harris_threads>(sum, Sum{}, storage);
  if (threadIdx.x == 0)
    last_block = detail::publish_and_take_ticket(partials + blockIdx.x, sum, ticket, gridDim.x);
  __syncthreads();
  if (!last_block) return;
  float total = 0.0f;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += harris_threads)
    total += detail::load_from_l2(partials + b);
  total = detail::block_reduce<harris_threads>(total, Sum{}, storage);
  if (threadIdx.x == 0) *out = total;
}

// Blocks of 256, 8 per SM: a wave where 8 fit (a 2048-thread SM, at most 32 registers a thread;
// rung 16's kernel takes more, and its grid runs as about 1.3 waves).
unsigned resident_wave() { return unsigned(current_sm_count()) * 8; }

// The complete-unroll rungs (9 and 15): reduce_complete_unroll with Loads loads a thread, the
// block of `threads` made a template argument by with_block_size, finished in passes.
template <int Loads>
std::function<void(Workspace&, cudaStream_t)> complete_unroll_in_passes(unsigned threads) {
  return on_float_or_int32([threads](auto& w, cudaStream_t stream) {
    using T = element_of<std::decay_t<decltype(w)>>;
    with_block_size(threads, [&](auto block_size) {
      constexpr unsigned block = decltype(block_size)::value;
      run_in_passes(reduce_complete_unroll<T, block, Loads>, block, Loads * block,
                    "reduce_complete_unroll", w, stream);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The registry entries, in story order.

ROOFLAB_VARIANT(Variant{
    "reduce", 2, "atomic-global", "one atomicAdd per element into one address: serialized in L2",
    Where::gpu, false,
    [](const Problem& problem) {
      const std::string why = float_or_int32(problem);
      return why.empty()
                 ? at_most_n(std::int64_t(1) << 28, "one address takes every atomic")(problem)
                 : why;
    },
    on_float_or_int32([](auto& w, cudaStream_t stream) {
      ROOFLAB_CUDA(op_name, "zeroing the result",
                   cudaMemsetAsync(w.out.data(), 0, sizeof(*w.out.data()), stream));
      const std::int64_t blocks = (w.cols + harris_threads - 1) / harris_threads;
      reduce_atomic_global<<<unsigned(blocks), harris_threads, 0, stream>>>(w.in.data(),
                                                                            w.out.data(), w.cols);
      detail::check_launch(op_name, "reduce_atomic_global");
    })});

ROOFLAB_VARIANT(Variant{
    "reduce", 22, "neighboured-in-place",
    "t % 2s == 0 adds in place in global memory: 002's starting point as rooflab reads it (its "
    "previous post, not a course document)",
    Where::gpu, false, float_or_int32, on_float_or_int32([](auto& w, cudaStream_t stream) {
      using T = element_of<std::decay_t<decltype(w)>>;
      reduce_in_passes(w.take_input_copy(stream), w.cols, w.out.data(), unroll_threads, stream,
                       [&](T* data, T* partial, std::int64_t count, unsigned blocks) {
                         reduce_neighboured_in_place<<<blocks, unroll_threads, 0, stream>>>(
                             data, partial, count);
                         detail::check_launch(op_name, "reduce_neighboured_in_place");
                       });
    }),
    on_float_or_int32([](auto& w, cudaStream_t stream) { w.copy_input(stream); })});

ROOFLAB_VARIANT(Variant{
    "reduce", 3, "interleaved-divergent",
    "V0: tid % 2s == 0 adds: divergent warps, slow modulo (Harris; not in 001)", Where::gpu, false,
    float_or_int32,
    in_passes([](auto zero) { return reduce_interleaved_divergent<decltype(zero)>; },
              harris_threads, harris_threads, "reduce_interleaved_divergent")});

ROOFLAB_VARIANT(Variant{
    "reduce", 4, "interleaved-strided",
    "V1: index 2st: no divergence, but bank conflicts (Harris; 001 recaps it)", Where::gpu, false,
    float_or_int32,
    in_passes([](auto zero) { return reduce_interleaved_strided<decltype(zero)>; }, harris_threads,
              harris_threads, "reduce_interleaved_strided")});

ROOFLAB_VARIANT(Variant{"reduce", 5, "sequential",
                        "V2: sequential addressing: conflict-free, half the threads idle (001)",
                        Where::gpu, false, float_or_int32,
                        in_passes([](auto zero) { return reduce_sequential<decltype(zero)>; },
                                  harris_threads, harris_threads, "reduce_sequential")});

ROOFLAB_VARIANT(Variant{"reduce", 6, "first-add",
                        "V3: two loads and an add per thread before the tree (001)", Where::gpu,
                        false, float_or_int32,
                        in_passes([](auto zero) { return reduce_first_add<decltype(zero)>; },
                                  harris_threads, 2 * harris_threads, "reduce_first_add")});

ROOFLAB_VARIANT(Variant{
    "reduce", 7, "last-warp-volatile",
    "V4 (001, 002): last warp unrolled with volatile, which they trust; a race since Volta",
    Where::gpu, false, float_or_int32,
    in_passes([](auto zero) { return reduce_last_warp_volatile<decltype(zero)>; }, harris_threads,
              2 * harris_threads, "reduce_last_warp_volatile")});

ROOFLAB_VARIANT(Variant{
    "reduce", 8, "last-warp-syncwarp", "V4 made correct: __syncwarp between the last warp's steps",
    Where::gpu, false, float_or_int32,
    in_passes([](auto zero) { return reduce_last_warp_syncwarp<decltype(zero)>; }, harris_threads,
              2 * harris_threads, "reduce_last_warp_syncwarp")});

ROOFLAB_VARIANT(Variant{"reduce", 9, "complete-unroll",
                        "V5: whole tree unrolled, block size a template argument (001)", Where::gpu,
                        false, float_or_int32, complete_unroll_in_passes<2>(harris_threads)});

ROOFLAB_VARIANT(Variant{
    "reduce", 10, "multiple-adds",
    "V6: many adds per thread before the tree (001); here in one wave of blocks", Where::gpu, false,
    float_or_int32, on_float_or_int32([](auto& w, cudaStream_t stream) {
      using T = element_of<std::decay_t<decltype(w)>>;
      with_block_size(harris_threads, [&](auto threads) {
        constexpr unsigned block = decltype(threads)::value;
        const std::int64_t wanted = (w.cols + 2 * block - 1) / (2 * block);
        const auto blocks = unsigned(std::min<std::int64_t>(wanted, resident_wave()));
        if (blocks == 1) {
          reduce_multiple_adds<T, block>
              <<<1, block, 0, stream>>>(w.in.data(), w.out.data(), w.cols);
          detail::check_launch(op_name, "reduce_multiple_adds");
          return;
        }
        StreamBuffer partials(sizeof(T) * blocks, stream, op_name);
        reduce_multiple_adds<T, block>
            <<<blocks, block, 0, stream>>>(w.in.data(), partials.as<T>(), w.cols);
        detail::check_launch(op_name, "reduce_multiple_adds");
        reduce_multiple_adds<T, block>
            <<<1, block, 0, stream>>>(partials.as<T>(), w.out.data(), blocks);
        detail::check_launch(op_name, "reduce_multiple_adds (partials)");
      });
    })});

ROOFLAB_VARIANT(Variant{"reduce", 11, "unroll2",
                        "2 tiles per block of 1024: two loads in flight per thread (002)",
                        Where::gpu, false, float_or_int32,
                        in_passes([](auto zero) { return reduce_unrolled<decltype(zero), 2>; },
                                  unroll_threads, 2 * unroll_threads, "reduce_unrolled<2>")});

ROOFLAB_VARIANT(Variant{"reduce", 12, "unroll4", "4 tiles per block: four loads in flight (002)",
                        Where::gpu, false, float_or_int32,
                        in_passes([](auto zero) { return reduce_unrolled<decltype(zero), 4>; },
                                  unroll_threads, 4 * unroll_threads, "reduce_unrolled<4>")});

ROOFLAB_VARIANT(Variant{"reduce", 13, "unroll8", "8 tiles per block: eight loads in flight (002)",
                        Where::gpu, false, float_or_int32,
                        in_passes([](auto zero) { return reduce_unrolled<decltype(zero), 8>; },
                                  unroll_threads, 8 * unroll_threads, "reduce_unrolled<8>")});

ROOFLAB_VARIANT(Variant{
    "reduce", 21, "unroll8-last-warp",
    "unroll8 + the last warp unrolled, the loop above it kept (002's "
    "reduceUnrollWarp8, its last warp made correct since Volta with __syncwarp)",
    Where::gpu, false, float_or_int32,
    in_passes([](auto zero) { return reduce_unrolled<decltype(zero), 8, true>; }, unroll_threads,
              8 * unroll_threads, "reduce_unrolled<8, true>")});

ROOFLAB_VARIANT(Variant{
    "reduce", 14, "unroll8-complete",
    "unroll8 + tree written out, blockDim tested at run time (002)", Where::gpu, false,
    float_or_int32,
    in_passes([](auto zero) { return reduce_unrolled_complete<decltype(zero)>; }, unroll_threads,
              8 * unroll_threads, "reduce_unrolled_complete")});

ROOFLAB_VARIANT(Variant{"reduce", 15, "unroll8-template",
                        "unroll8 + tree unrolled for a template block size (002)", Where::gpu,
                        false, float_or_int32, complete_unroll_in_passes<8>(unroll_threads)});

ROOFLAB_VARIANT(Variant{
    "reduce", 16, "shuffle-one-pass",
    "float4 loads, warp shuffles, last block finishes via ticket: one launch", Where::gpu, false,
    float_only, on<FloatWorkspace>([](FloatWorkspace& w, cudaStream_t stream) {
      const std::int64_t per_block = std::int64_t(harris_threads) * 16;  // 4 float4 per thread
      const auto blocks = unsigned(
          std::clamp<std::int64_t>((w.cols + per_block - 1) / per_block, 1, resident_wave()));
      StreamBuffer scratch(sizeof(float) * blocks + sizeof(unsigned), stream, op_name);
      auto* ticket = reinterpret_cast<unsigned*>(scratch.as<float>() + blocks);
      ROOFLAB_CUDA(op_name, "zeroing the ticket",
                   cudaMemsetAsync(ticket, 0, sizeof(unsigned), stream));
      reduce_shuffle_one_pass<<<blocks, harris_threads, 0, stream>>>(
          w.in.data(), w.cols, w.out.data(), scratch.as<float>(), ticket);
      detail::check_launch(op_name, "reduce_shuffle_one_pass");
    })});

// Rung 17 — rooflab::reduce: rung 16 generalized (every type and operator, any alignment and n,
// reproducible) and without per-call set-up: the grid is one wave from the occupancy API, the
// partials and the ticket stay in per-stream scratch that the last block leaves zeroed.
ROOFLAB_VARIANT(Variant{"reduce", 17, "production",
                        "rooflab::reduce: rung 16, any type/alignment, no per-call setup",
                        Where::gpu, false, no_limit, [](Workspace& workspace, cudaStream_t stream) {
                          with_element_type(workspace, [&](auto& w) {
                            rooflab::reduce(w.in.data(), w.cols, w.out.data(), Sum{}, stream);
                          });
                        }});

// ---------------------------------------------------------------------------------------------
// Rungs 18-19 — production's kernel for aligned floats alone, and a contiguous range per block,
// measured side by side with rung 17 and CUB. Each is one pass like production, with its
// per-stream scratch (no allocation, no memset per call), 256 threads and 4 plain 16-byte loads in
// flight per thread; they differ in how the input is dealt to blocks. They sum floats and need a
// 16-byte-aligned input (the workspace's buffer is 256-byte aligned).

// 16-byte loads in flight per thread (production's and CUB's number), 64 KiB per SM per 4 blocks.
constexpr int plain_loads = 4;

// How a rung deals the input's rows (harris_threads 16-byte vectors, 4 KiB) to its blocks.
enum class Dealing {
  grid_stride,  // production's: row r to block r % blocks; a batch of loads spans the whole grid
  // CUB's GridEvenShare, rake mapping: each block a contiguous range of rows, so a batch is one
  // 16 KiB run (CUB's DeviceReduce strip-mines instead: a 16 KiB tile, the next a grid apart)
  even_share,
};

// The four lanes of a float4, added as a balanced tree (production's fold_vector order).
__device__ __forceinline__ float sum_of(const float4& v) { return (v.x + v.y) + (v.z + v.w); }

// Each block folds its rows in batches of plain_loads (every load of a batch issued before any
// add; bounds checks only in the batch holding the last, partial row), then the vectors' scalar
// tail; then production's block fold and ticket: the last block folds the per-block partials in
// block order and resets the ticket.
// At most 32 registers, so that 8 blocks fill an SM as they do for production's float kernel.
template <Dealing Deal>
__global__ void __launch_bounds__(harris_threads, 8)
    reduce_plain_loads(const float* in, std::int64_t n, float* out, float* partials,
                       unsigned* ticket) {
  __shared__ detail::BlockReduceStorage<float, harris_threads> storage;
  __shared__ bool last_block;
  const auto* in4 = reinterpret_cast<const float4*>(in);
  const std::int64_t vectors = n / 4;
  const std::int64_t rows = (vectors + harris_threads - 1) / harris_threads;
  const std::int64_t full_rows = vectors / harris_threads;
  const std::int64_t block = blockIdx.x, blocks = gridDim.x;
  // This block's rows: first, first + step, ... (count of them).
  std::int64_t first = block, step = blocks;
  std::int64_t count = rows > block ? (rows - block - 1) / blocks + 1 : 0;
  if constexpr (Deal == Dealing::even_share) {
    const std::int64_t share = rows / blocks, extra = rows % blocks;
    first = block * share + (block < extra ? block : extra);
    step = 1;
    count = share + (block < extra);
  }
  const auto vector_of = [&](std::int64_t j) {
    return (first + j * step) * harris_threads + threadIdx.x;
  };
  float sum = 0.0f;
  std::int64_t j = 0;
  for (; j + plain_loads <= count && first + (j + plain_loads - 1) * step < full_rows;
       j += plain_loads) {
    float4 loaded[plain_loads];
#pragma unroll
    for (int k = 0; k < plain_loads; ++k) loaded[k] = __ldg(in4 + vector_of(j + k));
#pragma unroll
    for (int k = 0; k < plain_loads; ++k) sum += sum_of(loaded[k]);
  }
  for (; j < count; j += plain_loads) {
    float4 loaded[plain_loads];
#pragma unroll
    for (int k = 0; k < plain_loads; ++k) {
      const std::int64_t v = vector_of(j + k);
      loaded[k] =
          j + k < count && v < vectors ? __ldg(in4 + v) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < plain_loads; ++k) sum += sum_of(loaded[k]);
  }
  for (std::int64_t i = vectors * 4 + block * harris_threads + threadIdx.x; i < n;
       i += blocks * harris_threads)
    sum += in[i];
  sum = detail::block_reduce<harris_threads>(sum, Sum{}, storage);
  if (blocks == 1) {
    if (threadIdx.x == 0) *out = sum;
    return;
  }
  if (threadIdx.x == 0)
    last_block = detail::publish_and_take_ticket(partials + block, sum, ticket, gridDim.x);
  __syncthreads();
  if (!last_block) return;
  const float total = detail::fold_partials(partials, blocks, Sum{}, storage);
  if (threadIdx.x == 0) {
    *out = total;
    *ticket = 0;
  }
}

// Runs a plain-loads rung on enough blocks for plain_loads rows each, one wave at most.
template <Dealing Deal>
void run_plain_loads(FloatWorkspace& w, cudaStream_t stream) {
  static_assert(harris_threads == detail::reduce_block_threads, "production's block fold");
  constexpr auto kernel = reduce_plain_loads<Deal>;
  const std::int64_t rows = (w.cols / 4 + harris_threads - 1) / harris_threads;
  const int blocks = int(std::clamp<std::int64_t>((rows + plain_loads - 1) / plain_loads, 1,
                                                  detail::resident_blocks<kernel>(op_name)));
  const detail::StreamScratch scratch(blocks > 1 ? sizeof(float) * std::size_t(blocks) : 0,
                                      blocks > 1 ? 1 : 0, stream, op_name);
  kernel<<<blocks, harris_threads, 0, stream>>>(
      w.in.data(), w.cols, w.out.data(), static_cast<float*>(scratch.bytes()), scratch.counters());
  detail::check_launch(op_name, "reduce_plain_loads");
}

// Rung 18 — production's grid-stride kernel written for floats alone: an aligned input, no scalar
// head, bounds checks only in the last batch. Beside rung 17 it shows what production's
// generality (any type, operator and alignment) costs. (While production carried an L2
// evict-first hint, since removed, this was also production without it: docs/reduce.md.)
ROOFLAB_VARIANT(Variant{
    "reduce", 18, "plain-grid-stride", "production's grid-stride kernel for aligned floats alone",
    Where::gpu, false, float_only, on<FloatWorkspace>(run_plain_loads<Dealing::grid_stride>)});

// Rung 19 — a contiguous range of rows per block (CUB's GridEvenShare, rake mapping), 4 vectors
// per thread in flight (CUB's 256 threads x 16 floats per tile on sm_90), plain loads, one wave. A
// batch reads 16 KiB in one run instead of 4 KiB at four places 4 MiB apart; on an H200 that gave
// nothing measurable over rung 18 (246 against 247 us at 2^28): DRAM pages don't care.
ROOFLAB_VARIANT(Variant{"reduce", 19, "even-share",
                        "a contiguous range per block (GridEvenShare), 4 loads, plain, one pass",
                        Where::gpu, false, float_only,
                        on<FloatWorkspace>(run_plain_loads<Dealing::even_share>)});

// Rung 20 — CUB's DeviceReduce::Sum, as a user calls it: the temp-storage query, a stream-ordered
// allocation, the reduction (two kernels), the release.
ROOFLAB_VARIANT(Variant{
    "reduce", 20, "cub", "cub::DeviceReduce::Sum with its temp storage", Where::gpu, true, no_limit,
    [](Workspace& workspace, cudaStream_t stream) {
      with_element_type(workspace, [&](auto& w) {
        std::size_t bytes = 0;
        ROOFLAB_CUDA(
            op_name, "sizing cub::DeviceReduce::Sum's temporary storage",
            cub::DeviceReduce::Sum(nullptr, bytes, w.in.data(), w.out.data(), w.cols, stream));
        StreamBuffer temp(bytes, stream, op_name);
        ROOFLAB_CUDA(
            op_name, "running cub::DeviceReduce::Sum",
            cub::DeviceReduce::Sum(temp.data(), bytes, w.in.data(), w.out.data(), w.cols, stream));
      });
    }});

}  // namespace
}  // namespace rooflab::bench
