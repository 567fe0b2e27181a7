#pragma once
// The lab's histogram inputs: for each element type and bin mapping, the bounds [lo, hi) and six
// distributions of the values, drawn on the device by counter-based streams (element i is a pure
// function of the seed, i and the input's shape). The check bins the values the device drew
// (downloaded), so a generator that uses pow() need not give the host's bits.
//
// Bin mappings:
//   scaled    the type's own bounds, many values to a bin: int32 [-10^6, 2 * 10^6), float and
//             double [0, 1), uint8 [0, 256). Distributions that spread values spread them over
//             the counted range and a sixteenth of it on each side (a ninth of uniform values
//             falls outside [lo, hi), so the out-of-range test is exercised), uint8 over its
//             counted range alone. The bounds and
//             grids are chosen so that CUB bins exactly as the API's rule does.
//   identity  one bin per integer: lo = 0, hi = bins, values the integers in [0, bins) (uint8:
//             [0, min(bins, 256))). At 256 bins uint8's two mappings are the same.
// Distributions (over the counted range unless said):
//   uniform   uniform over the spread range.
//   equal     every value the same (scaled: 123457, 77, 0.3; identity: 77 mod bins): one hot bin.
//   sorted    ascending over the spread range, element i at fraction i / n of it.
//   zipf      value rank r (the r-th smallest value of the counted range, r >= 1) with
//             probability proportional to r^-1.1: the continuous power law's inverse CDF.
//   hot       90% of the values at the middle of one of 4 bins (bins / 8, 3 bins / 8, 5 bins / 8,
//             7 bins / 8), the rest uniform over the spread range.
//   normal    the sum of four uniforms (Irwin-Hall, a bell) over the spread range.
#include <math.h>

#include <cstdint>

#include "bench/random.hpp"

namespace rooflab::bench {

enum class Distribution { uniform, equal, sorted, zipf, hot, normal };
enum class Mapping { scaled, identity };

// What a value depends on besides (seed, i).
struct InputShape {
  Distribution dist = Distribution::uniform;
  Mapping mapping = Mapping::scaled;
  int bins = 256;
  std::int64_t n = 1;  // sorted: element i sits at fraction i / n of the range
};

// The values a type draws, as integers k of a grid (the value is k times the grid's step, or k
// itself for the identity mapping): the counted range [lo, hi) and the spread range around it.
struct ValueGrid {
  std::int64_t first_counted = 0;
  std::uint64_t counted = 1;
  std::int64_t first_spread = 0;
  std::uint64_t spread = 1;
};

ROOFLAB_HOST_DEVICE inline ValueGrid identity_grid(std::int64_t values) {
  return ValueGrid{0, std::uint64_t(values), 0, std::uint64_t(values)};
}

template <class T>
struct HistogramData;

template <>
struct HistogramData<std::int32_t> {
  ROOFLAB_HOST_DEVICE static double lo(Mapping m, int) {
    return m == Mapping::identity ? 0 : -1000000;
  }
  ROOFLAB_HOST_DEVICE static double hi(Mapping m, int bins) {
    return m == Mapping::identity ? bins : 2000000;
  }
  ROOFLAB_HOST_DEVICE static ValueGrid grid(Mapping m, int bins) {
    if (m == Mapping::identity) return identity_grid(bins);
    return ValueGrid{-1000000, 3000000, -1187500, 3375000};
  }
  ROOFLAB_HOST_DEVICE static std::int32_t value(std::int64_t k, Mapping) { return std::int32_t(k); }
  ROOFLAB_HOST_DEVICE static std::int32_t equal(Mapping m, int bins) {
    return m == Mapping::identity ? 77 % bins : 123457;
  }
};

template <>
struct HistogramData<std::uint8_t> {
  // Scaled: every byte counted, one bin per value at 256 bins.
  ROOFLAB_HOST_DEVICE static double lo(Mapping, int) { return 0; }
  ROOFLAB_HOST_DEVICE static double hi(Mapping m, int bins) {
    return m == Mapping::identity ? bins : 256;
  }
  ROOFLAB_HOST_DEVICE static ValueGrid grid(Mapping m, int bins) {
    return identity_grid(m == Mapping::identity && bins < 256 ? bins : 256);
  }
  ROOFLAB_HOST_DEVICE static std::uint8_t value(std::int64_t k, Mapping) { return std::uint8_t(k); }
  ROOFLAB_HOST_DEVICE static std::uint8_t equal(Mapping m, int bins) {
    return std::uint8_t(m == Mapping::identity && bins < 256 ? 77 % bins : 77);
  }
};

template <>
struct HistogramData<float> {
  ROOFLAB_HOST_DEVICE static double lo(Mapping, int) { return 0; }
  ROOFLAB_HOST_DEVICE static double hi(Mapping m, int bins) {
    return m == Mapping::identity ? bins : 1;
  }
  // Scaled: k / 2^23, counted k in [0, 2^23), spread k in [-2^19, 17 * 2^19): [-1/16, 17/16) on
  // a grid every float holds exactly.
  ROOFLAB_HOST_DEVICE static ValueGrid grid(Mapping m, int bins) {
    if (m == Mapping::identity) return identity_grid(bins);
    return ValueGrid{0, std::uint64_t(1) << 23, -(std::int64_t(1) << 19),
                     18 * (std::uint64_t(1) << 19)};
  }
  ROOFLAB_HOST_DEVICE static float value(std::int64_t k, Mapping m) {
    return m == Mapping::identity ? float(k) : float(k) * (1.0f / float(1 << 23));
  }
  ROOFLAB_HOST_DEVICE static float equal(Mapping m, int bins) {
    return m == Mapping::identity ? float(77 % bins) : 0.3f;
  }
};

template <>
struct HistogramData<double> {
  ROOFLAB_HOST_DEVICE static double lo(Mapping, int) { return 0; }
  ROOFLAB_HOST_DEVICE static double hi(Mapping m, int bins) {
    return m == Mapping::identity ? bins : 1;
  }
  // Scaled: k / 2^52, counted k in [0, 2^52), spread k in [-2^48, 17 * 2^48): the finest grid
  // doubles hold there.
  ROOFLAB_HOST_DEVICE static ValueGrid grid(Mapping m, int bins) {
    if (m == Mapping::identity) return identity_grid(bins);
    return ValueGrid{0, std::uint64_t(1) << 52, -(std::int64_t(1) << 48),
                     18 * (std::uint64_t(1) << 48)};
  }
  ROOFLAB_HOST_DEVICE static double value(std::int64_t k, Mapping m) {
    return m == Mapping::identity ? double(k) : double(k) * (1.0 / double(std::int64_t(1) << 52));
  }
  ROOFLAB_HOST_DEVICE static double equal(Mapping m, int bins) {
    return m == Mapping::identity ? double(77 % bins) : 0.3;
  }
};

// floor(a * b / 2^64): a fraction a / 2^64 of b.
ROOFLAB_HOST_DEVICE inline std::uint64_t fraction_of(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return std::uint64_t((unsigned __int128)a * b >> 64);
#endif
}

// The grid index of element i of the input: the distributions of the header comment.
template <class T>
ROOFLAB_HOST_DEVICE std::int64_t sample_index(std::uint64_t seed, std::uint64_t i,
                                              const InputShape& shape) {
  const ValueGrid grid = HistogramData<T>::grid(shape.mapping, shape.bins);
  const std::uint64_t bits = random_bits(seed, i);
  switch (shape.dist) {
    case Distribution::sorted: {
      const std::uint64_t step = ~std::uint64_t(0) / std::uint64_t(shape.n > 0 ? shape.n : 1);
      return grid.first_spread + std::int64_t(fraction_of(i * step, grid.spread));
    }
    case Distribution::zipf: {
      // Density x^-s on [1, R + 1), s = 1.1: x = (1 - u (1 - (R + 1)^(1 - s)))^(1 / (1 - s)).
      constexpr double one_less_s = -0.1;
      const double u = double(bits >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
      const double tail = pow(double(grid.counted) + 1, one_less_s);
      const double x = pow(1 - u * (1 - tail), 1 / one_less_s);
      const std::uint64_t rank = x < 1 ? 0 : std::uint64_t(x) - 1;  // 0-based
      return grid.first_counted + std::int64_t(rank < grid.counted ? rank : grid.counted - 1);
    }
    case Distribution::hot: {
      // The low 32 bits pick hot or not (90%), two high bits which of the 4 hot bins.
      if ((bits & 0xFFFFFFFFu) < std::uint64_t(0.9 * 4294967296.0)) {
        const int bin = int((2 * (bits >> 62) + 1) * std::uint64_t(shape.bins) / 8);
        const double middle = (bin + 0.5) * double(grid.counted) / shape.bins;
        return grid.first_counted + std::int64_t(middle);
      }
      return grid.first_spread + std::int64_t(fraction_of(random_bits(~seed, i), grid.spread));
    }
    case Distribution::normal: {
      const std::uint64_t sum =
          (bits & 0xFFFF) + (bits >> 16 & 0xFFFF) + (bits >> 32 & 0xFFFF) + (bits >> 48);
      return grid.first_spread + std::int64_t(fraction_of(sum << 46, grid.spread));  // sum < 2^18
    }
    default:  // uniform; equal does not come here
      return grid.first_spread + std::int64_t(fraction_of(bits, grid.spread));
  }
}

template <class T>
ROOFLAB_HOST_DEVICE T sample_histogram_value(std::uint64_t seed, std::uint64_t i,
                                             const InputShape& shape) {
  if (shape.dist == Distribution::equal) return HistogramData<T>::equal(shape.mapping, shape.bins);
  return HistogramData<T>::value(sample_index<T>(seed, i, shape), shape.mapping);
}

}  // namespace rooflab::bench
