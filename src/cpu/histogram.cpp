#include "cpu/histogram.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "histogram/even_bins.hpp"

namespace rooflab::cpu {
namespace {

// The doubles in increasing order as consecutive unsigned integers (-0 just below +0), and back:
// a search over doubles becomes one over integers.
std::uint64_t double_order(double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >> 63 ? ~bits : bits | std::uint64_t(1) << 63;
}

double double_at(std::uint64_t order) {
  const std::uint64_t bits = order >> 63 ? order & ~(std::uint64_t(1) << 63) : ~order;
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Edge b of the rule (0 < b < bins): the smallest double of [lo, hi) that the rule puts in bin b
// or above, or hi where there is none. The rule's bin never decreases as v grows (each of its
// steps rounds monotonically), so bin b holds exactly the doubles of [edge b, edge b + 1). The
// search steps away from the real edge, lo + b (hi - lo) / bins, by 1, 2, 4, ... doubles until it
// has passed the rule's edge (a few doubles off, more where the doubles are far finer than lo's
// grid, as just below 0 with lo = -1), then bisects.
double rule_edge(const detail::EvenBins& rule, int b) {
  const auto reaches = [&](std::uint64_t order) {
    return even_bin(double_at(order), rule.lo, rule.hi, rule.bins) >= b;
  };
  // below never reaches bin b (lo is in bin 0); above reaches it or is hi.
  std::uint64_t below = double_order(rule.lo), above = double_order(rule.hi);
  const std::uint64_t guess =
      std::clamp(double_order(rule.lo + b * (rule.range / rule.bins)), below, above - 1);
  if (reaches(guess)) {
    above = guess;
    for (std::uint64_t step = 1; step < above - below; step *= 2) {
      if (!reaches(above - step)) {
        below = above - step;
        break;
      }
      above -= step;
    }
  } else {
    below = guess;
    for (std::uint64_t step = 1; step < above - below; step *= 2) {
      if (reaches(below + step)) {
        above = below + step;
        break;
      }
      below += step;
    }
  }
  while (above - below > 1) {
    const std::uint64_t middle = below + (above - below) / 2;
    (reaches(middle) ? above : below) = middle;
  }
  return double_at(above);
}

// The rule's edges 0 to bins (lo and hi at the ends), on every core if asked.
std::vector<double> rule_edges(const detail::EvenBins& rule, bool every_core) {
  std::vector<double> edges(std::size_t(rule.bins) + 1);
  edges.front() = rule.lo;
  edges.back() = rule.hi;
  const auto search = [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t b = std::max<std::int64_t>(begin, 1);
         b < std::min<std::int64_t>(end, rule.bins); ++b)
      edges[b] = rule_edge(rule, int(b));
  };
  // A search takes tens of nanoseconds: 2^12 of them a thread at the least, a tenth of a
  // millisecond, against tens of microseconds to start one.
  if (every_core)
    parallel_ranges(rule.bins + 1, search, 1 << 12);
  else
    search(0, rule.bins + 1, 0);
  return edges;
}

// Counts of in[begin, end) added into partial[0, bins) (bytes: into partial[0, 256) by value).
// Where every edge is an integer, by a shift (even_bins.hpp). Else t = (v - lo) * scale is the
// rule's quotient q up to a few roundings of 2^-53 times bins <= 2^24, so k = t + 1/2 rounded
// down, the edge nearest to v, lies within one of q: v is in bin k - 1 or k, whichever side of
// the rule's edge k it lies on (edges, rule_edges; k = bins at most, v < hi is below edge bins).
// A multiply, one load from a table that stays in cache, no branch but the range test. (The
// device's single-precision steps are libm calls here, fmaf, fmaxf and fminf, and a rounding
// towards minus infinity that the host emulates with a branch that goes either way at random and
// a call of nextafterf: 4 times slower than the plain loop.)
template <class T>
void count_range(const T* in, std::int64_t begin, std::int64_t end, const detail::EvenBins& rule,
                 bool integer_edges, const double* edges, std::uint64_t* partial) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    for (std::int64_t i = begin; i < end; ++i) ++partial[in[i]];
  } else {
    // Whether v lies in [lo, hi), tested in its own type (the same answer as in double).
    const auto counted = [&](T v) {
      if constexpr (std::is_same_v<T, std::int32_t>)
        return v >= rule.first_int && v <= rule.last_int;
      else if constexpr (std::is_same_v<T, float>)
        return v >= rule.first_float && v < rule.end_float;
      else
        return v >= rule.lo && v < rule.hi;
    };
    const auto count_each = [&](auto bin_of) {
      for (std::int64_t i = begin; i < end; ++i)
        if (const T v = in[i]; counted(v)) ++partial[bin_of(v)];
    };
    if (integer_edges) {
      count_each([&](T v) { return detail::integer_edge_bin(v, rule); });
    } else {
      count_each([&](T value) {
        const double v = double(value);
        const int k = std::min(int((v - rule.lo) * rule.scale + 0.5), rule.bins);
        return k - 1 + int(v >= edges[k]);
      });
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
  const bool integer_edges = std::is_same_v<T, std::int32_t> ? rule.integer_edges_int
                             : std::is_same_v<T, float>      ? rule.integer_edges_float
                                                             : rule.integer_edges_double;
  const std::vector<double> edges = std::is_same_v<T, std::uint8_t> || integer_edges
                                        ? std::vector<double>()
                                        : rule_edges(rule, every_core);
  const std::vector<std::uint64_t> total = histogram_in_parts<T>(
      n, bins, lo, hi, every_core, [&](std::int64_t begin, std::int64_t end, std::uint64_t* slots) {
        count_range(in, begin, end, rule, integer_edges, edges.data(), slots);
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
