#pragma once
// Counter-based random streams: element i of a stream is a pure function of (seed, i), so the
// device fills 2^28 elements in microseconds and the CPU reference regenerates any element
// without copying the input back. The float and double values lie on a 2^-23 (2^-52) grid in
// [-1, 1): every step is exact, so host and device produce the same bits whatever the compiler
// contracts into FMAs. Plain C++ when not compiled by nvcc.
#include <cstdint>

#if defined(__CUDACC__)
#define ROOFLAB_HOST_DEVICE __host__ __device__
#else
#define ROOFLAB_HOST_DEVICE
#endif

namespace rooflab::bench {

ROOFLAB_HOST_DEVICE inline std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  // splitmix64's finalizer over a Weyl sequence keyed by the seed.
  std::uint64_t x = index + 0x9E3779B97F4A7C15ull * (seed + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ROOFLAB_HOST_DEVICE inline float random_float(std::uint64_t seed, std::uint64_t index) {
  const std::int32_t k = std::int32_t(random_bits(seed, index) >> 40) - (1 << 23);
  return float(k) * (1.0f / float(1 << 23));
}

ROOFLAB_HOST_DEVICE inline double random_double(std::uint64_t seed, std::uint64_t index) {
  const std::int64_t k = std::int64_t(random_bits(seed, index) >> 11) - (std::int64_t(1) << 52);
  return double(k) * (1.0 / double(std::int64_t(1) << 52));
}

// Uniform integer in [lo, hi] (hi - lo < 2^32).
ROOFLAB_HOST_DEVICE inline std::int64_t random_integer(std::uint64_t seed, std::uint64_t index,
                                                       std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = std::uint64_t(hi - lo) + 1;
  return lo + std::int64_t(((random_bits(seed, index) >> 32) * span) >> 32);
}

}  // namespace rooflab::bench
