#pragma once
// The shared-memory block trees of the course documents' rungs (ladder.cu, rows_ladder.cu), for
// float and int32.

namespace rooflab::bench {

// The last warp's six steps written out, made correct on Volta and later (rung 8 of the reduce
// ladder): each lane reads into a register, the warp meets at __syncwarp, then each lane writes,
// and a second __syncwarp orders those writes before the next step's reads. Called by threads
// 0-31 with s[0, 64) live; thread 0 returns their sum.
template <class T>
__device__ __forceinline__ T last_warp_syncwarp(T* s, unsigned t) {
  T sum = s[t];
#pragma unroll
  for (unsigned offset = 32; offset > 0; offset /= 2) {
    sum += s[t + offset];
    __syncwarp();
    s[t] = sum;
    __syncwarp();
  }
  return sum;
}

// The whole block tree of Harris's V5 over s[0, Threads), the block size a template argument:
// each `if (Threads >= ...)` is decided by the compiler, which drops the dead steps, the loop and
// its counter. Every thread of the block calls it after s is written and synchronized; thread 0
// returns the sum.
template <unsigned Threads, class T>
__device__ __forceinline__ T complete_tree(T* s, unsigned t) {
  static_assert(Threads >= 64 && Threads <= 1024, "the last warp reads 64 values");
  if (Threads >= 1024) {
    if (t < 512) s[t] += s[t + 512];
    __syncthreads();
  }
  if (Threads >= 512) {
    if (t < 256) s[t] += s[t + 256];
    __syncthreads();
  }
  if (Threads >= 256) {
    if (t < 128) s[t] += s[t + 128];
    __syncthreads();
  }
  if (Threads >= 128) {
    if (t < 64) s[t] += s[t + 64];
    __syncthreads();
  }
  return t < 32 ? last_warp_syncwarp(s, t) : T(0);
}

}  // namespace rooflab::bench
