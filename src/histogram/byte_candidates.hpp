#pragma once
// Candidate designs for counting uint8 data (byte_candidates.cu), registered as histogram
// variants 8-11 next to production and CUB so that one device run measures them side by side.
// Each adds the counts of n bytes at `in` (any alignment, any n >= 1) to `counts`, binned by
// `rule`: the caller zeroes `counts` first.
#include <cuda_runtime.h>

#include <cstdint>

#include "histogram/even_bins.hpp"

namespace rooflab::bench {

// 8: one 256 x 32 table of 32-bit counters per block, column = lane: shared atomics, no conflicts.
void count_bytes_lane_atomics(const std::uint8_t* in, std::int64_t n, const detail::EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream);

// 9: lane-private 8-bit counters (8 KB per warp, 24 warps per SM), bumped by loads and stores.
void count_bytes_private_8bit(const std::uint8_t* in, std::int64_t n, const detail::EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream);

// 10: lane-private 16-bit counters, one copy (16 KB per warp, 12 warps per SM).
void count_bytes_private_16bit(const std::uint8_t* in, std::int64_t n, const detail::EvenBins& rule,
                               unsigned long long* counts, cudaStream_t stream);

// 11: bytes 0 and 1 of every word as in 9, bytes 2 and 3 as in 8 (20 warps per SM).
void count_bytes_hybrid_split(const std::uint8_t* in, std::int64_t n, const detail::EvenBins& rule,
                              unsigned long long* counts, cudaStream_t stream);

}  // namespace rooflab::bench
