#pragma once
// rooflab::reduce and rooflab::reduce_rows for any element type and operator (nvcc only; included
// by rooflab.cuh). The library compiles the common instantiations (listed at the end of this
// file); a custom operator has a static identity<T>() and an associative, commutative
// operator()(T, T), and T is trivially copyable.
//
// Design (docs/reduce.md tells the story that led here):
//  - reduce: one pass. A grid of one wave of resident blocks strides over the input with 16-byte
//    loads through the read-only path, four in flight per thread (the last, partial batch too);
//    each block folds its share with shuffles, writes one partial, and the last block to take a
//    ticket folds the partials and writes the result. The ticket and the partials live in
//    per-stream scratch (stream_scratch.hpp) that the last block leaves ready for the next call:
//    one launch, no allocation and no memset per call.
//  - reduce_rows: three shapes of work, chosen by reduce_plan.hpp: a group of lanes per small row
//    (one wave of warps, each folding 8 loads of rows at a time by a reduce-scatter and storing
//    32 consecutive totals at once), a warp per medium row, a block per long row or per part of
//    one (the last part to finish a row folds the parts' partials, through a ticket per row).
//  - Any alignment: 16-byte vectors on the aligned body of each range, scalar head and tail.
//  - Reproducible: the grid and the order of every combination depend only on the sizes, the
//    alignment and the device, and partials are combined in index order, not in arrival order;
//    no floating-point atomics.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/launch_bounds.cuh"
#include "rooflab/detail/reduce_plan.hpp"
#include "rooflab/detail/stream_scratch.hpp"
#include "rooflab/detail/warp_reduce.cuh"
#include "rooflab/error.hpp"
#include "rooflab/operators.hpp"
#include "rooflab/reduce.hpp"

namespace rooflab {

int current_sm_count();  // the library's cached device query (src/core/device_query.cpp)

namespace detail {

// ---------------------------------------------------------------------------------------------
// Loading

template <class T>
struct alignas(16) Vector {
  T lane[vector_width<T>()];
};

// One 16-byte vector through the read-only path (ld.global.nc), whatever T is. (An L2 evict-first
// hint on these loads, tried and removed, only paid against the dirty lines a memset-based L2
// flush leaves; under a flush that leaves L2 clean it cost 4-9%: docs/reduce.md, "tried and not
// kept".)
template <class T>
__device__ __forceinline__ Vector<T> load_vector(const Vector<T>* source) {
  const uint4 words = __ldg(reinterpret_cast<const uint4*>(source));
  Vector<T> vector;
  memcpy(&vector, &words, sizeof(words));
  return vector;
}

// One element: through the read-only path where __ldg has an overload for T, plainly otherwise
// (custom types of rooflab.cuh).
template <class T>
__device__ __forceinline__ T load_element(const T* source) {
  if constexpr (std::is_arithmetic_v<T>) {
    return __ldg(source);
  } else {
    return *source;
  }
}

// op over lanes [Begin, Begin + Count) of a vector, as a balanced tree.
template <int Begin, int Count, class T, class Op>
__device__ __forceinline__ T fold_lanes(const Vector<T>& vector, Op op) {
  if constexpr (Count == 1) {
    return vector.lane[Begin];
  } else {
    return op(fold_lanes<Begin, Count / 2>(vector, op),
              fold_lanes<Begin + Count / 2, Count - Count / 2>(vector, op));
  }
}

template <class T, class Op>
__device__ __forceinline__ T fold_vector(const Vector<T>& vector, Op op) {
  return fold_lanes<0, vector_width<T>()>(vector, op);
}

// Elements of T before the first 16-byte boundary at or after `start` (at most `length`); none
// for types that are not loaded in 16-byte vectors.
template <class T>
__host__ __device__ __forceinline__ std::int64_t head_elements(const T* start,
                                                               std::int64_t length) {
  if (vector_width<T>() == 1) return 0;
  const auto misalignment = std::int64_t(reinterpret_cast<std::uintptr_t>(start) % 16);
  const std::int64_t head = misalignment == 0 ? 0 : (16 - misalignment) / std::int64_t(sizeof(T));
  return head < length ? head : length;
}

// acc op= fold(load(i)) for i = first, first + stride, ... below count. LoadsInFlight loads are
// issued before any of them is folded, which keeps bytes in flight while the adds wait; the last,
// partial batch too, so that it costs one round trip to memory rather than one per load (at
// 2^24 floats each thread of a one-wave grid loads 15 or 16 vectors: 3 full batches and 3 more
// that would otherwise wait for each other, or 4 full batches).
// How a full batch joins acc is the Batch policy, chosen by what ptxas (CUDA 13, sm_90) made of
// each kernel, read in the SASS and measured on an H200: folded one after another into acc
// (chain), the 1-D reduce's loads were moved down to just before their adds, one load in flight
// per thread; folded as a tree first, they go out back to back (with the kernel's minimum blocks
// per SM, reduce_plan.hpp). The warp-per-row kernel runs best with the chain (rows of 1024
// floats: 240 us with it, 321 us with the tree).
enum class Batch { chain, tree };

template <int LoadsInFlight, Batch Join, class T, class Op, class Load, class Fold>
__device__ __forceinline__ T strided_fold(T acc, std::int64_t first, std::int64_t count,
                                          std::int64_t stride, Op op, Load load, Fold fold) {
  static_assert(LoadsInFlight > 1 && (LoadsInFlight & (LoadsInFlight - 1)) == 0,
                "a power-of-two batch of loads");
  using Loaded = decltype(load(first));
  std::int64_t i = first;
  for (; i + (LoadsInFlight - 1) * stride < count; i += LoadsInFlight * stride) {
    Loaded loaded[LoadsInFlight];
#pragma unroll
    for (int k = 0; k < LoadsInFlight; ++k) loaded[k] = load(i + k * stride);
    if constexpr (Join == Batch::chain) {
#pragma unroll
      for (int k = 0; k < LoadsInFlight; ++k) acc = op(acc, fold(loaded[k]));
    } else {
      T folded[LoadsInFlight];
#pragma unroll
      for (int k = 0; k < LoadsInFlight; ++k) folded[k] = fold(loaded[k]);
#pragma unroll
      for (int width = LoadsInFlight / 2; width > 0; width /= 2)
#pragma unroll
        for (int k = 0; k < width; ++k) folded[k] = op(folded[k], folded[k + width]);
      acc = op(acc, folded[0]);
    }
  }
  Loaded loaded[LoadsInFlight - 1];  // at most LoadsInFlight - 1 indices are left
#pragma unroll
  for (int k = 0; k < LoadsInFlight - 1; ++k)
    if (i + k * stride < count) loaded[k] = load(i + k * stride);
#pragma unroll
  for (int k = 0; k < LoadsInFlight - 1; ++k)
    if (i + k * stride < count) acc = op(acc, fold(loaded[k]));
  return acc;
}

// This lane's share of op over start[0, length), for `lanes` lanes (a warp, a block, a grid: at
// least 16) of which this is `lane`: a scalar head up to the first 16-byte boundary, 16-byte
// vectors over the aligned body, a scalar tail. Neighbouring lanes load neighbouring vectors
// (coalesced).
template <int LoadsInFlight, Batch Join, class T, class Op>
__device__ __forceinline__ T lane_partial(const T* __restrict__ start, std::int64_t length,
                                          std::int64_t lane, std::int64_t lanes, Op op) {
  constexpr int width = vector_width<T>();
  T acc = Op::template identity<T>();
  T head = acc;
  std::int64_t scalar_begin = 0;
  if constexpr (width > 1) {
    const std::int64_t head_length = head_elements(start, length);  // < width <= lanes
    // Loaded now, combined last: combining it here would hold the lane until the load returns,
    // before it has issued any of the body's loads.
    if (lane < head_length) head = load_element(start + lane);
    const std::int64_t vectors = (length - head_length) / width;
    const auto* body = reinterpret_cast<const Vector<T>*>(start + head_length);
    acc = strided_fold<LoadsInFlight, Join>(
        acc, lane, vectors, lanes, op, [&](std::int64_t v) { return load_vector(body + v); },
        [&](const Vector<T>& vector) { return fold_vector(vector, op); });
    scalar_begin = head_length + vectors * width;
  }
  acc = strided_fold<LoadsInFlight, Join>(
      acc, scalar_begin + lane, length, lanes, op,
      [&](std::int64_t i) { return load_element(start + i); },
      [](const T& value) { return value; });
  return op(acc, head);
}

// Reads a value another block wrote in this kernel: from L2 (ld.cg), past this SM's L1, which is
// not coherent with the other SMs' writes.
template <class T>
__device__ __forceinline__ T load_from_l2(const T* source) {
  T value = *source;  // gives value its type; the dead plain load is dropped by the compiler
  if constexpr (sizeof(T) % 4 == 0) {
    unsigned word[sizeof(T) / 4];
#pragma unroll
    for (int i = 0; i < int(sizeof(T) / 4); ++i)
      word[i] = __ldcg(reinterpret_cast<const unsigned*>(source) + i);
    memcpy(&value, word, sizeof(T));
  } else {
    unsigned char byte[sizeof(T)];
#pragma unroll
    for (int i = 0; i < int(sizeof(T)); ++i)
      byte[i] = __ldcg(reinterpret_cast<const unsigned char*>(source) + i);
    memcpy(&value, byte, sizeof(T));
  }
  return value;
}

// Publishes this block's partial and takes a ticket; true for the block that arrives last, which
// then sees every other block's partial. Called by thread 0 only.
template <class T>
__device__ __forceinline__ bool publish_and_take_ticket(T* partial, T value, unsigned* ticket,
                                                        unsigned arrivals) {
  *partial = value;
  __threadfence();  // the partial is visible device-wide before the ticket counts it
  const bool last = atomicAdd(ticket, 1u) == arrivals - 1;
  if (last) __threadfence();  // and the last block sees every partial the ticket counted
  return last;
}

// op over partials[0, count) that other blocks of this kernel published, by a whole block (thread 0
// gets the result): each thread folds every reduce_block_threads-th partial in index order, with
// up to 8 loads in flight before it adds any (one round trip to L2 for up to 2048 partials).
template <class T, class Op>
__device__ __forceinline__ T fold_partials(const T* partials, std::int64_t count, Op op,
                                           BlockReduceStorage<T, reduce_block_threads>& storage) {
  constexpr int in_flight = 8;
  const T identity = Op::template identity<T>();
  T total = identity;
  for (std::int64_t base = threadIdx.x; base < count; base += in_flight * reduce_block_threads) {
    T loaded[in_flight];
#pragma unroll
    for (int k = 0; k < in_flight; ++k) {
      const std::int64_t i = base + std::int64_t(k) * reduce_block_threads;
      loaded[k] = i < count ? load_from_l2(partials + i) : identity;
    }
#pragma unroll
    for (int k = 0; k < in_flight; ++k) total = op(total, loaded[k]);
  }
  return block_reduce<reduce_block_threads>(total, op, storage);
}

// ---------------------------------------------------------------------------------------------
// Kernels

// The one-pass reduce: grid-stride over the input, a block fold, then the last
// block folds the gridDim.x partials in index order and resets the ticket for the next call.
template <class T, class Op>
__global__ void __launch_bounds__(reduce_block_threads,
                                  min_blocks_per_sm(reduce_block_threads, reduce_min_blocks_per_sm))
    reduce_kernel(const T* __restrict__ in, std::int64_t n, T* out, Op op, T* partials,
                  unsigned* ticket) {
  __shared__ BlockReduceStorage<T, reduce_block_threads> storage;
  __shared__ bool last_block;
  const std::int64_t lanes = std::int64_t(gridDim.x) * reduce_block_threads;
  const std::int64_t lane = std::int64_t(blockIdx.x) * reduce_block_threads + threadIdx.x;
  T value = lane_partial<reduce_loads_in_flight, Batch::tree>(in, n, lane, lanes, op);
  value = block_reduce<reduce_block_threads>(value, op, storage);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = value;
    return;
  }
  if (threadIdx.x == 0)
    last_block = publish_and_take_ticket(partials + blockIdx.x, value, ticket, gridDim.x);
  __syncthreads();
  if (!last_block) return;
  const T total = fold_partials(partials, gridDim.x, op, storage);
  if (threadIdx.x == 0) {
    *out = total;
    *ticket = 0;
  }
}

// Small rows: a group of Lanes neighbouring lanes (a power of two, at most 32) covers a row, each
// lane one unit of it (a 16-byte vector, or an element where rows are not 16-byte aligned), so
// one warp load reads 32 / Lanes whole rows. A warp works in passes of 256 / Lanes rows: it
// issues the small_rows_in_flight (8) loads of a pass before it combines any, folds them with a
// reduce-scatter across each group (a lane ends with whole rows' totals, after 7 shuffles where
// 8 separate group reductions would take 24), and stores 32 consecutive totals per store
// instruction. One wave of warps strides over the passes.

// Reduce-scatter across lanes Mask, Mask / 2, ... apart (partners in the same group), until Kept
// values are left: at each step a lane keeps half of its values (the lower half where its Mask bit
// is clear) combined with its partner's copy of that half, and sends the partner the other half.
template <int Mask, int Size, int Kept, class T, class Op>
__device__ __forceinline__ void reduce_scatter(const T (&value)[Size], T (&kept)[Kept], Op op) {
  if constexpr (Size == Kept) {
#pragma unroll
    for (int i = 0; i < Kept; ++i) kept[i] = value[i];
  } else {
    const bool upper = (threadIdx.x & Mask) != 0;
    T half[Size / 2];
#pragma unroll
    for (int i = 0; i < Size / 2; ++i) {
      const T low = value[i], high = value[i + Size / 2];
      half[i] = op(upper ? high : low, shuffle_xor(upper ? low : high, Mask));
    }
    reduce_scatter<Mask / 2, Size / 2, Kept>(half, kept, op);
  }
}

template <int Steps, class Unit, class Load, class Fold, class T>
__device__ __forceinline__ void load_then_fold(T (&value)[Steps], Unit identity, Load load,
                                               Fold fold) {
  Unit loaded[Steps];
#pragma unroll
  for (int k = 0; k < Steps; ++k) loaded[k] = load(k, identity);
#pragma unroll
  for (int k = 0; k < Steps; ++k) value[k] = fold(loaded[k]);
}

template <int Lanes, class T, class Op>
__global__ void __launch_bounds__(reduce_block_threads,
                                  min_blocks_per_sm(reduce_block_threads,
                                                    small_rows_min_blocks_per_sm))
    reduce_small_rows_kernel(const T* __restrict__ in, std::int64_t rows, std::int64_t cols,
                             T* __restrict__ out, Op op, bool vector_units) {
  constexpr int width = vector_width<T>();
  constexpr int steps = small_rows_in_flight;
  constexpr int kept = small_rows_kept(Lanes);
  const int lane = int(threadIdx.x) % warp_size;
  const int group = lane / Lanes;
  const int member = lane % Lanes;
  const std::int64_t warp =
      (std::int64_t(blockIdx.x) * reduce_block_threads + threadIdx.x) / warp_size;
  const std::int64_t warps = std::int64_t(gridDim.x) * (reduce_block_threads / warp_size);
  const std::int64_t units = vector_units ? cols / width : cols;
  const T identity = Op::template identity<T>();
  // `first` is the same for the whole warp, so every lane reaches the shuffles below.
  constexpr std::int64_t rows_per_pass = small_rows_per_pass(Lanes);
  for (std::int64_t first = warp * rows_per_pass; first < rows; first += warps * rows_per_pass) {
    // Loads this lane's unit of its row of step k, or `none` past the matrix or the row.
    const auto unit_of = [&](int k, auto none) {
      using Unit = decltype(none);
      const std::int64_t row = first + small_row_of(Lanes, group, k);
      if (row >= rows || member >= units) return none;
      if constexpr (std::is_same_v<Unit, T>)
        return load_element(in + row * cols + member);
      else
        return load_vector(reinterpret_cast<const Unit*>(in + row * cols) + member);
    };
    T value[steps];
    if constexpr (width > 1) {
      if (vector_units) {
        Vector<T> identities;
#pragma unroll
        for (int i = 0; i < width; ++i) identities.lane[i] = identity;
        load_then_fold(value, identities, unit_of,
                       [&](const Vector<T>& v) { return fold_vector(v, op); });
      } else {
        load_then_fold(value, identity, unit_of, [](const T& x) { return x; });
      }
    } else {
      load_then_fold(value, identity, unit_of, [](const T& x) { return x; });
    }
    T total[kept];
    reduce_scatter<Lanes / 2, steps, kept>(value, total, op);
    if constexpr (Lanes > steps) {
      // Each of the group's 8 totals is still split over Lanes / 8 neighbouring lanes.
#pragma unroll
      for (int mask = Lanes / steps / 2; mask > 0; mask /= 2)
        total[0] = op(total[0], shuffle_xor(total[0], mask));
    }
#pragma unroll
    for (int i = 0; i < kept; ++i) {
      const int stored = small_row_stored(Lanes, lane, i);
      if (stored >= 0 && first + stored < rows) out[first + stored] = total[i];
    }
  }
}

// Medium rows: a warp per row, every lane with warp_row_loads_in_flight vectors in flight.
template <class T, class Op>
__global__ void __launch_bounds__(reduce_block_threads)
    reduce_rows_by_warp_kernel(const T* __restrict__ in, std::int64_t rows, std::int64_t cols,
                               T* __restrict__ out, Op op) {
  const int lane = int(threadIdx.x) % warp_size;
  const std::int64_t warps = std::int64_t(gridDim.x) * (reduce_block_threads / warp_size);
  for (std::int64_t row =
           (std::int64_t(blockIdx.x) * reduce_block_threads + threadIdx.x) / warp_size;
       row < rows; row += warps) {
    T value = lane_partial<warp_row_loads_in_flight, Batch::chain>(in + row * cols, cols, lane,
                                                                   warp_size, op);
    value = warp_reduce(value, op);
    if (lane == 0) out[row] = value;
  }
}

// Long rows, or few: a block per part of a row (splits parts per row; one part is the whole
// row). Parts cut the row's aligned body at 128-byte lines, so only the first part has a scalar
// head and only the last a scalar tail. With several parts, the last part to finish a row folds
// the row's partials in part order and resets the row's ticket.
template <class T, class Op>
__global__ void __launch_bounds__(reduce_block_threads,
                                  min_blocks_per_sm(reduce_block_threads,
                                                    rows_by_blocks_min_blocks_per_sm))
    reduce_rows_by_blocks_kernel(const T* __restrict__ in, std::int64_t rows, std::int64_t cols,
                                 T* out, Op op, std::int64_t splits, T* partials,
                                 unsigned* tickets) {
  constexpr int width = vector_width<T>();
  __shared__ BlockReduceStorage<T, reduce_block_threads> storage;
  __shared__ bool finishes_row;
  for (std::int64_t task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const std::int64_t row = task / splits;
    const std::int64_t part = task % splits;
    const T* start = in + row * cols;
    const std::int64_t head = head_elements(start, cols);
    const std::int64_t vectors = (cols - head) / width;
    const std::int64_t per_part = split_part_vectors(vectors, splits);
    const auto cut = [&](std::int64_t p) {
      const std::int64_t at = head + p * per_part * width;
      return at < cols ? at : cols;
    };
    const std::int64_t begin = part == 0 ? 0 : cut(part);
    const std::int64_t end = part == splits - 1 ? cols : cut(part + 1);
    T value = lane_partial<reduce_loads_in_flight, Batch::tree>(
        start + begin, end - begin, threadIdx.x, reduce_block_threads, op);
    value = block_reduce<reduce_block_threads>(value, op, storage);
    if (splits == 1) {
      if (threadIdx.x == 0) out[row] = value;
    } else {
      if (threadIdx.x == 0)
        finishes_row =
            publish_and_take_ticket(partials + task, value, tickets + row, unsigned(splits));
      __syncthreads();
      if (finishes_row) {
        const T total = fold_partials(partials + row * splits, splits, op, storage);
        if (threadIdx.x == 0) {
          out[row] = total;
          tickets[row] = 0;
        }
      }
    }
    __syncthreads();  // storage and finishes_row are reused by the block's next task
  }
}

// ---------------------------------------------------------------------------------------------
// Launching

// The largest grid the reductions launch; their loops stride over whatever lies beyond.
constexpr std::int64_t max_grid_blocks = std::numeric_limits<int>::max();

inline unsigned grid_for(std::int64_t blocks) {
  return unsigned(blocks < max_grid_blocks ? (blocks > 0 ? blocks : 1) : max_grid_blocks);
}

// Blocks of Kernel that the current device holds at once, queried once per kernel and device.
template <auto Kernel>
int resident_blocks(const char* op) {
  constexpr int max_devices = 64;
  static std::atomic<int> cached[max_devices] = {};
  int device = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  std::atomic<int>& slot = cached[device < max_devices ? device : max_devices - 1];
  int blocks = slot.load(std::memory_order_relaxed);
  if (blocks == 0) {
    int per_sm = 0;
    ROOFLAB_CUDA(
        op, "asking how many reduction blocks fit on an SM",
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, reduce_block_threads, 0));
    blocks = (per_sm > 0 ? per_sm : 1) * current_sm_count();
    slot.store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

// The small-rows path for Lanes lanes per row (plan.lanes_per_row): one wave of blocks at most.
template <int Lanes, class T, class Op>
void reduce_small_rows(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op,
                       const RowsPlan& plan, cudaStream_t stream) {
  const char* name = "reduce_rows";
  constexpr auto kernel = reduce_small_rows_kernel<Lanes, T, Op>;
  const int blocks = small_rows_blocks(rows, Lanes, resident_blocks<kernel>(name));
  kernel<<<blocks, reduce_block_threads, 0, stream>>>(in, rows, cols, out, op, plan.vector_units);
  check_launch(name, "reduce_small_rows_kernel");
}

template <class T>
void require_element_aligned(const T* pointer, const char* op, const char* argument) {
  require(reinterpret_cast<std::uintptr_t>(pointer) % alignof(T) == 0, op, argument,
          "is not aligned to its element type (" + std::to_string(alignof(T)) + " bytes)");
}

// reduce_rows on the plan's path (arguments already checked).
template <class T, class Op>
void reduce_rows_on_plan(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op,
                         cudaStream_t stream) {
  const char* name = "reduce_rows";
  constexpr int width = vector_width<T>();
  constexpr auto by_blocks = reduce_rows_by_blocks_kernel<T, Op>;
  const bool rows_vector_aligned =
      width > 1 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && cols % width == 0;
  const RowsPlan plan = plan_reduce_rows(rows, cols, width, rows_vector_aligned, current_sm_count(),
                                         resident_blocks<by_blocks>(name));
  constexpr int warps_per_block = reduce_block_threads / warp_size;
  switch (plan.path) {
    case RowsPath::lanes_per_row:
      switch (plan.lanes_per_row) {
        case 1: return reduce_small_rows<1>(in, rows, cols, out, op, plan, stream);
        case 2: return reduce_small_rows<2>(in, rows, cols, out, op, plan, stream);
        case 4: return reduce_small_rows<4>(in, rows, cols, out, op, plan, stream);
        case 8: return reduce_small_rows<8>(in, rows, cols, out, op, plan, stream);
        case 16: return reduce_small_rows<16>(in, rows, cols, out, op, plan, stream);
        default: return reduce_small_rows<32>(in, rows, cols, out, op, plan, stream);
      }
    case RowsPath::warp_per_row: {
      reduce_rows_by_warp_kernel<T, Op>
          <<<grid_for((rows + warps_per_block - 1) / warps_per_block), reduce_block_threads, 0,
             stream>>>(in, rows, cols, out, op);
      check_launch(name, "reduce_rows_by_warp_kernel");
      return;
    }
    case RowsPath::blocks_per_row: {
      const std::int64_t tasks = rows * plan.splits;
      // Whole rows need no partials and no tickets.
      const bool split = plan.splits > 1;
      const StreamScratch scratch(split ? sizeof(T) * std::size_t(tasks) : 0,
                                  split ? std::size_t(rows) : 0, stream, name);
      by_blocks<<<grid_for(tasks), reduce_block_threads, 0, stream>>>(
          in, rows, cols, out, op, plan.splits, static_cast<T*>(scratch.bytes()),
          scratch.counters());
      check_launch(name, "reduce_rows_by_blocks_kernel");
      return;
    }
  }
}

template <class T, class Op>
void reduce_elements(const T* in, std::int64_t n, T* out, Op op, cudaStream_t stream) {
  static_assert(std::is_trivially_copyable_v<T>, "reduce moves values between threads bitwise");
  const char* name = "reduce";
  require(n >= 1, name, "n", "must be at least 1, got " + std::to_string(n));
  require(in != nullptr, name, "in", "is a null pointer (n = " + std::to_string(n) + ")");
  require(out != nullptr, name, "out", "is a null pointer");
  detail::require_element_aligned(in, name, "in");
  detail::require_element_aligned(out, name, "out");

  constexpr auto kernel = detail::reduce_kernel<T, Op>;
  const int blocks =
      detail::reduce_blocks(n, detail::vector_width<T>(), detail::resident_blocks<kernel>(name));
  // One block needs no partials and no ticket.
  const detail::StreamScratch scratch(blocks > 1 ? sizeof(T) * std::size_t(blocks) : 0,
                                      blocks > 1 ? 1 : 0, stream, name);
  kernel<<<blocks, detail::reduce_block_threads, 0, stream>>>(
      in, n, out, op, static_cast<T*>(scratch.bytes()), scratch.counters());
  detail::check_launch(name, "reduce_kernel");
}

template <class T, class Op>
void reduce_rows_elements(const T* in, std::int64_t rows, std::int64_t cols, T* out, Op op,
                          cudaStream_t stream) {
  static_assert(std::is_trivially_copyable_v<T>,
                "reduce_rows moves values between threads bitwise");
  const char* name = "reduce_rows";
  require(rows >= 1, name, "rows", "must be at least 1, got " + std::to_string(rows));
  require(cols >= 1, name, "cols", "must be at least 1, got " + std::to_string(cols));
  require(rows <= std::numeric_limits<std::int64_t>::max() / cols, name, "rows",
          "times cols does not fit in 64 bits");
  require(in != nullptr, name, "in", "is a null pointer");
  require(out != nullptr, name, "out", "is a null pointer");
  detail::require_element_aligned(in, name, "in");
  detail::require_element_aligned(out, name, "out");

  detail::reduce_rows_on_plan(in, rows, cols, out, op, stream);
}

// The instantiations the library compiles (src/reduce/reduce.cu); callers of these use them rather
// than compiling their own.
#define ROOFLAB_REDUCE_INSTANTIATION(prefix, T, Op)                                              \
  prefix template void reduce_elements<T, Op>(const T*, std::int64_t, T*, Op, cudaStream_t);     \
  prefix template void reduce_rows_elements<T, Op>(const T*, std::int64_t, std::int64_t, T*, Op, \
                                                   cudaStream_t);
#define ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, T) \
  ROOFLAB_REDUCE_INSTANTIATION(prefix, T, Sum)            \
  ROOFLAB_REDUCE_INSTANTIATION(prefix, T, Min)            \
  ROOFLAB_REDUCE_INSTANTIATION(prefix, T, Max)
#define ROOFLAB_REDUCE_INSTANTIATIONS(prefix)                  \
  ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, float)        \
  ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, double)       \
  ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, std::int32_t) \
  ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, std::int64_t) \
  ROOFLAB_REDUCE_INSTANTIATIONS_FOR_TYPE(prefix, std::uint32_t)

ROOFLAB_REDUCE_INSTANTIATIONS(extern)

}  // namespace detail
}  // namespace rooflab
