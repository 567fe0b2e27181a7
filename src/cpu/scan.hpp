#pragma once
// Prefix sums on the CPU: the scan ladder's baselines, and the check of any scan's output against
// its input. Integer sums wrap modulo 2^bits (two's complement), as on the GPU. Instantiated for
// float, double, int32_t, int64_t, uint32_t.
#include <cstdint>
#include <string>

namespace rooflab::cpu {

// out[i] = in[0] + ... + in[i], summed in T by one core, left to right. in == out allowed.
template <class T>
void inclusive_scan_serial(const T* in, T* out, std::int64_t n);

// The same on every core: each thread sums its range, the range totals are scanned, then each
// thread scans its range again starting from its offset (in is read twice). in == out allowed.
template <class T>
void inclusive_scan_threads(const T* in, T* out, std::int64_t n);

enum class ScanKind { inclusive, exclusive };

// The rounding error a floating-point scan may show. Summing any set of numbers through D rounded
// additions, in any tree, errs by at most gamma(D) * sum |x_j|, gamma(D) = D u / (1 - D u), u the
// unit roundoff (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2). depth(i) bounds D
// for output i: `roundings` for the trees of every output, plus one per
// `elements_per_extra_rounding` elements before it (0: none) for chains that grow along the array.
struct RoundingBound {
  std::int64_t roundings = 0;
  std::int64_t elements_per_extra_rounding = 0;
  std::int64_t depth(std::int64_t i) const;
};

// The production path's bound (rooflab::inclusive_scan, derived in docs/scan.md, "Accuracy"): an
// element passes through at most 20 roundings inside its tile, a tile total 19; each of at most 7
// look-back levels adds 5 (a warp tree) plus 1 (combining the levels), and the tile prefix is
// added once: 19 + 7 * 6 + 1 = 62 <= 64. The GPU tests hold the production path to it and the lab
// holds every GPU rung to it: a bound that grew along the array would let an output that stops
// being written after the first few million elements pass as rounding error.
inline constexpr RoundingBound production_scan_rounding{64, 0};

struct ScanCheck {
  bool passed = false;
  // Floating point: max over i of |out_i - exact_i| / (u * sum_j |x_j|) over the sum's terms, the
  // error in units that make the bound's D directly comparable. Integers: mismatching elements.
  double error = 0;
  double tolerance = 0;  // floating point: gamma(depth(n - 1)) / u; integers: 0
  std::int64_t first_failure = -1;
  double got = 0;
  double expected = 0;
  double allowed = 0;       // floating point: the bound at first_failure
  bool not_finite = false;  // first_failure is NaN or infinite (an unwritten, poisoned element)
  std::int64_t compared = 0;
  std::string describe() const;
};

// Compares out with the scan of in. Floating point: against a compensated sum in long double
// (error about 2^-63 of sum |x_j|, far below any bound here), within `bound`; integers: exactly,
// wrapping modulo 2^bits (`bound` unused).
template <class T>
ScanCheck check_scan(const T* in, const T* out, std::int64_t n, ScanKind kind, RoundingBound bound);

}  // namespace rooflab::cpu
