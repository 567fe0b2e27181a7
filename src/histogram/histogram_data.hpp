#pragma once
// The lab's histogram inputs: for each element type, the bounds [lo, hi) and two distributions
// of the values, drawn by counter-based streams so that the host regenerates any element.
// A ninth of the uniform values falls outside [lo, hi), so the out-of-range test is exercised;
// the bounds and grids are chosen so that CUB bins exactly as the API's rule does (integer
// bounds for the integers, [0, 1) and power-of-two grids for the floating types).
#include <cstdint>

#include "bench/random.hpp"

namespace rooflab::bench {

enum class Distribution {
  uniform,  // values spread over [lo - range / 16, hi + range / 16)
  equal,    // every value the same (inside [lo, hi)): one hot bin, the worst case for atomics
};

template <class T>
struct HistogramData;

template <>
struct HistogramData<std::int32_t> {
  static constexpr double lo = -1000000, hi = 2000000;
  ROOFLAB_HOST_DEVICE static std::int32_t sample(std::uint64_t seed, std::uint64_t i, Distribution dist) {
    if (dist == Distribution::equal) return 123457;
    return std::int32_t(random_integer(seed, i, -1187500, 2187499));
  }
};

template <>
struct HistogramData<std::uint8_t> {
  static constexpr double lo = 0, hi = 256;  // every byte counted, one bin per value at 256 bins
  ROOFLAB_HOST_DEVICE static std::uint8_t sample(std::uint64_t seed, std::uint64_t i, Distribution dist) {
    if (dist == Distribution::equal) return 77;
    return std::uint8_t(random_integer(seed, i, 0, 255));
  }
};

template <>
struct HistogramData<float> {
  static constexpr double lo = 0, hi = 1;
  // k / 2^23 for k in [-2^19, 17 * 2^19): [-1/16, 17/16) on a grid every float holds exactly.
  ROOFLAB_HOST_DEVICE static float sample(std::uint64_t seed, std::uint64_t i, Distribution dist) {
    if (dist == Distribution::equal) return 0.3f;
    return float(random_integer(seed, i, -(1 << 19), 17 * (1 << 19) - 1)) * (1.0f / float(1 << 23));
  }
};

template <>
struct HistogramData<double> {
  static constexpr double lo = 0, hi = 1;
  // k / 2^52 for k in [-2^48, 17 * 2^48): [-1/16, 17/16) on the finest grid doubles hold there.
  ROOFLAB_HOST_DEVICE static double sample(std::uint64_t seed, std::uint64_t i, Distribution dist) {
    if (dist == Distribution::equal) return 0.3;
    const std::uint64_t spread = ((random_bits(seed, i) >> 11) * 18) >> 5;  // [0, 18 * 2^48)
    return double(std::int64_t(spread) - (std::int64_t(1) << 48)) * (1.0 / double(std::int64_t(1) << 52));
  }
};

}  // namespace rooflab::bench
