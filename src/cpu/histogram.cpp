#include "cpu/histogram.hpp"

#include <cmath>
#include <type_traits>

#include "histogram/even_bins.hpp"

namespace rooflab::cpu {
namespace {

// Counts of in[begin, end) added into partial[0, bins) (bytes: into partial[0, 256) by value),
// by the cheapest evaluation that gives the rule's bins, as the device's production path chooses
// them: integer edges, then single precision (int32 and float), then the rule itself.
template <class T>
void count_range(const T* in, std::int64_t begin, std::int64_t end, const detail::EvenBins& rule,
                 std::uint64_t* partial) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    for (std::int64_t i = begin; i < end; ++i) ++partial[in[i]];
  } else {
    const bool integer_edges = std::is_same_v<T, std::int32_t> ? rule.integer_edges_int
                               : std::is_same_v<T, float>      ? rule.integer_edges_float
                                                               : rule.integer_edges_double;
    for (std::int64_t i = begin; i < end; ++i) {
      const T v = in[i];
      bool counted;
      if constexpr (std::is_same_v<T, std::int32_t>)
        counted = v >= rule.first_int && v <= rule.last_int;
      else if constexpr (std::is_same_v<T, float>)
        counted = v >= rule.first_float && v < rule.end_float;
      else
        counted = v >= rule.lo && v < rule.hi;
      if (!counted) continue;
      if (integer_edges) {
        ++partial[detail::integer_edge_bin(v, rule)];
        continue;
      }
      if constexpr (!std::is_same_v<T, double>) {
        if (rule.single_precision) {
          const detail::FastBin fast = detail::fast_bin_single(detail::to_single(v), rule);
          ++partial[fast.near_edge ? even_bin(double(v), rule.lo, rule.hi, rule.bins) : fast.bin];
          continue;
        }
      }
      ++partial[even_bin(double(v), rule.lo, rule.hi, rule.bins)];
    }
  }
}

}  // namespace

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

template <class T>
void histogram_fast(const T* in, std::int64_t n, int bins, double lo, double hi,
                    std::uint64_t* counts, bool every_core) {
  const detail::EvenBins rule = detail::make_even_bins(bins, lo, hi);
  const std::vector<std::uint64_t> total = histogram_in_parts<T>(
      n, bins, lo, hi, every_core, [&](std::int64_t begin, std::int64_t end, std::uint64_t* slots) {
        count_range(in, begin, end, rule, slots);
      });
  std::copy(total.begin(), total.end(), counts);
}

template void histogram_serial(const std::uint8_t*, std::int64_t, int, double, double,
                               std::uint64_t*);
template void histogram_serial(const std::int32_t*, std::int64_t, int, double, double,
                               std::uint64_t*);
template void histogram_serial(const float*, std::int64_t, int, double, double, std::uint64_t*);
template void histogram_serial(const double*, std::int64_t, int, double, double, std::uint64_t*);
template void histogram_fast(const std::uint8_t*, std::int64_t, int, double, double, std::uint64_t*,
                             bool);
template void histogram_fast(const std::int32_t*, std::int64_t, int, double, double, std::uint64_t*,
                             bool);
template void histogram_fast(const float*, std::int64_t, int, double, double, std::uint64_t*, bool);
template void histogram_fast(const double*, std::int64_t, int, double, double, std::uint64_t*,
                             bool);

}  // namespace rooflab::cpu
