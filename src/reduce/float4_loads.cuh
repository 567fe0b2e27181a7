#pragma once
// The 16-byte loads of the reduction ladders' candidate rungs (ladder.cu, rows_ladder.cu), which
// measure production's L2 evict-first hint against plain loads.
#include "rooflab/detail/reduce.cuh"

namespace rooflab::bench {

// One 16-byte load: plain (ld.global.nc) or with production's L2 evict-first hint.
template <bool EvictFirst>
__device__ __forceinline__ float4 load_float4(const float4* source) {
  if constexpr (EvictFirst) {
    const auto vector = detail::load_vector(reinterpret_cast<const detail::Vector<float>*>(source));
    return make_float4(vector.lane[0], vector.lane[1], vector.lane[2], vector.lane[3]);
  } else {
    return __ldg(source);
  }
}

// The four lanes of a float4, added as a balanced tree (production's fold_vector order).
__device__ __forceinline__ float sum_of(const float4& v) { return (v.x + v.y) + (v.z + v.w); }

}  // namespace rooflab::bench
