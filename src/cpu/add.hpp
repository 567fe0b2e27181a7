#pragma once
#include <cstdint>

namespace rooflab::cpu {

// rooflab's CPU baseline for the limiting-factors lecture's vector add (the lecture times none):
// one core, one loop.
void add_serial(const float* a, const float* b, float* out, std::int64_t n);

// The same loop on every core, a contiguous range each: the host's memory bandwidth, not one
// core's, is then the limit.
void add_threads(const float* a, const float* b, float* out, std::int64_t n);

}  // namespace rooflab::cpu
