#include "cpu/histogram.hpp"

#include <cmath>

namespace rooflab::cpu {

int even_bin(double v, double lo, double hi, int bins) {
  if (!(v >= lo && v < hi)) return -1;
  const double t = (v - lo) * bins / (hi - lo);  // no multiply-add here for a compiler to fuse
  return std::min(bins - 1, int(std::floor(t)));
}

template <class T>
void histogram_serial(const T* in, std::int64_t n, int bins, double lo, double hi,
                      std::uint64_t* counts) {
  std::fill(counts, counts + bins, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const int bin = even_bin(double(in[i]), lo, hi, bins);
    if (bin >= 0) ++counts[bin];
  }
}

template void histogram_serial(const std::uint8_t*, std::int64_t, int, double, double,
                               std::uint64_t*);
template void histogram_serial(const std::int32_t*, std::int64_t, int, double, double,
                               std::uint64_t*);
template void histogram_serial(const float*, std::int64_t, int, double, double, std::uint64_t*);
template void histogram_serial(const double*, std::int64_t, int, double, double, std::uint64_t*);

}  // namespace rooflab::cpu
