#pragma once
#include <cstdint>

namespace rooflab::cpu {

// The CPU baseline of lecture 003's vector add: one core, one loop.
void add_serial(const float* a, const float* b, float* out, std::int64_t n);

}  // namespace rooflab::cpu
