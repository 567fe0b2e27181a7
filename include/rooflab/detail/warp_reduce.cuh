#pragma once
// Warp- and block-wide reductions for device code (nvcc only), templated on the element type and
// the operator: rooflab::Sum, Min, Max or any associative, commutative operator with a static
// identity<T>(). The split follows CUB's: what one warp does with shuffles, what one block does
// with one round through shared memory. Kernels of any primitive may use them (reduce, scan
// totals, histogram privatization, ...). Every combination happens in a fixed order, so results
// are the same bits on every run.
#include <cstring>
#include <type_traits>

#include "rooflab/operators.hpp"

namespace rooflab::detail {

constexpr int warp_size = 32;
constexpr unsigned full_warp = 0xFFFFFFFFu;

template <class T>
constexpr bool has_native_shuffle =
    std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, long> ||
    std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> ||
    std::is_same_v<T, unsigned long long> || std::is_same_v<T, float> || std::is_same_v<T, double>;

// A shuffle for any trivially copyable T: `shuffle` (a __shfl_*_sync call) on the value where the
// hardware has an overload for T, else on its 4-byte words one by one.
template <class T, class Shuffle>
__device__ __forceinline__ T shuffle_words(T value, Shuffle shuffle) {
  if constexpr (has_native_shuffle<T>) {
    return shuffle(value);
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "reductions move values between lanes bitwise");
    constexpr int words = int((sizeof(T) + 3) / 4);
    unsigned word[words] = {};
    memcpy(word, &value, sizeof(T));
#pragma unroll
    for (int i = 0; i < words; ++i) word[i] = shuffle(word[i]);
    T result = value;
    memcpy(&result, word, sizeof(T));
    return result;
  }
}

// __shfl_down_sync for any trivially copyable T. Every lane of the warp must call it.
template <class T>
__device__ __forceinline__ T shuffle_down(T value, unsigned offset, int width = warp_size) {
  return shuffle_words(value,
                       [=](auto word) { return __shfl_down_sync(full_warp, word, offset, width); });
}

// __shfl_xor_sync for any trivially copyable T: the value of lane (this lane ^ mask). Every lane
// of the warp must call it.
template <class T>
__device__ __forceinline__ T shuffle_xor(T value, int mask) {
  return shuffle_words(value, [=](auto word) { return __shfl_xor_sync(full_warp, word, mask); });
}

// op over the values of each aligned group of `width` lanes (a power of two, at most 32); the
// group's first lane holds the result, the other lanes hold partial values. Every lane of the warp
// must call it: lanes without data contribute the operator's identity.
template <class T, class Op>
__device__ __forceinline__ T group_reduce(T value, Op op, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2)
    value = op(value, shuffle_down(value, unsigned(offset), width));
  return value;
}

// op over the 32 lanes of the warp; lane 0 holds the result (for 32-bit integers with Sum, Min or
// Max on sm_80 and later, every lane does: one __reduce_*_sync instruction replaces the five
// shuffle steps).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, unsigned>) {
    if constexpr (std::is_same_v<Op, Sum>) return T(__reduce_add_sync(full_warp, value));
    if constexpr (std::is_same_v<Op, Min>) return __reduce_min_sync(full_warp, value);
    if constexpr (std::is_same_v<Op, Max>) return __reduce_max_sync(full_warp, value);
  }
#endif
  return group_reduce(value, op, warp_size);
}

// Shared memory for block_reduce: one value per warp. Raw bytes, so that element types with
// constructors may be used too (a __shared__ variable cannot be constructed).
template <class T, int Threads>
struct BlockReduceStorage {
  alignas(T) unsigned char bytes[sizeof(T) * (Threads / warp_size)];
  __device__ T* per_warp() { return reinterpret_cast<T*>(bytes); }
};

// op over the values of all Threads threads of a one-dimensional block; thread 0 holds the result.
// Every thread must call it. Before `storage` is used again, the block must pass a __syncthreads().
template <int Threads, class T, class Op>
__device__ __forceinline__ T block_reduce(T value, Op op, BlockReduceStorage<T, Threads>& storage) {
  static_assert(Threads % warp_size == 0 && Threads <= 1024, "a block of whole warps");
  constexpr int warps = Threads / warp_size;
  value = warp_reduce(value, op);
  if constexpr (warps > 1) {
    const int lane = int(threadIdx.x) % warp_size;
    const int warp = int(threadIdx.x) / warp_size;
    T* per_warp = storage.per_warp();
    if (lane == 0) per_warp[warp] = value;
    __syncthreads();
    if (warp == 0) {
      value = lane < warps ? per_warp[lane] : Op::template identity<T>();
      value = warp_reduce(value, op);
    }
  }
  return value;
}

}  // namespace rooflab::detail
