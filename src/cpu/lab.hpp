#pragma once
// CPU baselines of the limiting-factor lab (the limiting-factors lecture): the same results the GPU
// rungs compute, on every core. The references in double are in src/lab/patterns.hpp's formulas.
#include <cstdint>
#include <vector>

namespace rooflab::cpu {

// Divergence: out[i] = heavy_work(in[i]) where is_heavy(i, spacing), else in[i].
void heavy_or_copy(const float* in, float* out, std::int64_t n, int spacing, int iterations);

// Occupancy: every 32 x 32 tile's columns smoothed `passes` times (lab::smooth_column), in float
// as the GPU does, and in double as the reference.
void smooth_tiles(const float* in, float* out, std::int64_t n, int passes);
std::vector<double> smooth_tiles_reference(const float* in, std::int64_t n, int passes);

// Atomics: the sum of the values, each core summing its own range first (the CPU's privatization).
std::uint64_t sum_privatized(const std::uint32_t* values, std::int64_t n);

}  // namespace rooflab::cpu
