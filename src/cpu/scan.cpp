#include "cpu/scan.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"

namespace rooflab::cpu {
namespace {

// a + b; integers in the unsigned type, where wrapping is defined.
template <class T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using Unsigned = std::make_unsigned_t<T>;
    return T(Unsigned(a) + Unsigned(b));
  } else {
    return a + b;
  }
}

// Neumaier's compensated sum: the running rounding error is kept apart and added back at the end,
// so the result errs by about 2 ulp of long double times sum |x_j|, whatever the count.
struct CompensatedSum {
  long double sum = 0;
  long double compensation = 0;
  void add(long double x) {
    const long double total = sum + x;
    compensation += std::fabs(sum) >= std::fabs(x) ? (sum - total) + x : (x - total) + sum;
    sum = total;
  }
  long double value() const { return sum + compensation; }
};

// The state of a check over one range of the array, merged in index order at the end.
struct PartCheck {
  double max_error = 0;
  std::int64_t failures = 0;
  std::int64_t first_failure = -1;
  double got = 0, expected = 0, allowed = 0;
  bool not_finite = false;
  void fail(std::int64_t i, double got_value, double expected_value, double allowed_value,
            bool finite) {
    if (failures++ == 0) {
      first_failure = i;
      got = got_value;
      expected = expected_value;
      allowed = allowed_value;
      not_finite = !finite;
    }
  }
};

ScanCheck merge(const std::vector<PartCheck>& parts, std::int64_t n, bool count_as_error) {
  ScanCheck result;
  result.compared = n;
  std::int64_t failures = 0;
  for (const PartCheck& part : parts) {
    failures += part.failures;
    result.error = std::max(result.error, part.max_error);
    if (part.failures > 0 && result.first_failure < 0) {  // parts are in index order
      result.first_failure = part.first_failure;
      result.got = part.got;
      result.expected = part.expected;
      result.allowed = part.allowed;
      result.not_finite = part.not_finite;
    }
  }
  if (count_as_error) result.error = double(failures);
  result.passed = failures == 0;
  return result;
}

template <class T>
ScanCheck check_floating(const T* in, const T* out, std::int64_t n, ScanKind kind,
                         RoundingBound bound) {
  const long double u = std::numeric_limits<T>::epsilon() / 2;  // unit roundoff
  const auto gamma = [u](std::int64_t depth) {
    const long double du = depth * u;
    return du < 1 ? du / (1 - du) : std::numeric_limits<long double>::infinity();
  };
  // Pass 1: each range's sum and sum of magnitudes; then each range's starting offset.
  struct Totals {
    CompensatedSum sum;
    long double magnitude = 0;
  };
  std::vector<Totals> totals(cpu_threads());
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    Totals local;
    for (std::int64_t i = begin; i < end; ++i) {
      local.sum.add(in[i]);
      local.magnitude += std::fabs(static_cast<long double>(in[i]));
    }
    totals[part] = local;
  });
  std::vector<Totals> offsets(totals.size());
  for (std::size_t part = 1; part < totals.size(); ++part) {
    offsets[part] = offsets[part - 1];
    offsets[part].sum.add(totals[part - 1].sum.sum);
    offsets[part].sum.add(totals[part - 1].sum.compensation);
    offsets[part].magnitude += totals[part - 1].magnitude;
  }
  // Pass 2: every output against the exact prefix and its bound.
  std::vector<PartCheck> parts(totals.size());
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    PartCheck local;
    CompensatedSum sum = offsets[part].sum;
    long double magnitude = offsets[part].magnitude;
    for (std::int64_t i = begin; i < end; ++i) {
      if (kind == ScanKind::inclusive) {
        sum.add(in[i]);
        magnitude += std::fabs(static_cast<long double>(in[i]));
      }
      const long double got = out[i];
      const long double expected = sum.value();
      const long double allowed = gamma(bound.depth(i)) * magnitude;
      const long double error = std::fabs(got - expected);
      if (!std::isfinite(got)) {
        local.fail(i, double(got), double(expected), double(allowed), false);
        local.max_error = std::numeric_limits<double>::infinity();
      } else {
        const long double units = magnitude > 0 ? error / (u * magnitude)
                                  : error == 0  ? 0
                                                : std::numeric_limits<long double>::infinity();
        local.max_error = std::max(local.max_error, double(units));
        if (error > allowed) local.fail(i, double(got), double(expected), double(allowed), true);
      }
      if (kind == ScanKind::exclusive) {
        sum.add(in[i]);
        magnitude += std::fabs(static_cast<long double>(in[i]));
      }
    }
    parts[part] = local;
  });
  ScanCheck result = merge(parts, n, false);
  result.tolerance = double(gamma(bound.depth(n - 1)) / u);
  return result;
}

template <class T>
ScanCheck check_integer(const T* in, const T* out, std::int64_t n, ScanKind kind) {
  std::vector<T> totals(cpu_threads(), T(0));
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    T sum = T(0);
    for (std::int64_t i = begin; i < end; ++i) sum = wrapping_add(sum, in[i]);
    totals[part] = sum;
  });
  std::vector<T> offsets(totals.size(), T(0));
  for (std::size_t part = 1; part < totals.size(); ++part)
    offsets[part] = wrapping_add(offsets[part - 1], totals[part - 1]);
  std::vector<PartCheck> parts(totals.size());
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    PartCheck local;
    T sum = offsets[part];
    for (std::int64_t i = begin; i < end; ++i) {
      if (kind == ScanKind::inclusive) sum = wrapping_add(sum, in[i]);
      if (out[i] != sum) local.fail(i, double(out[i]), double(sum), 0, true);
      if (kind == ScanKind::exclusive) sum = wrapping_add(sum, in[i]);
    }
    parts[part] = local;
  });
  return merge(parts, n, true);
}

}  // namespace

std::int64_t RoundingBound::depth(std::int64_t i) const {
  if (elements_per_extra_rounding <= 0) return roundings;
  return roundings + (i + elements_per_extra_rounding) / elements_per_extra_rounding;
}

std::string ScanCheck::describe() const {
  if (compared == 0) return "no elements compared";
  if (passed) return "all " + std::to_string(compared) + " elements within tolerance";
  std::ostringstream text;
  text.precision(17);
  text << (not_finite ? "not finite (unwritten or invalid) at " : "wrong at ") << "index "
       << first_failure << ": got " << got << ", expected " << expected;
  if (allowed > 0) text << " +- " << allowed;
  return text.str();
}

template <class T>
void inclusive_scan_serial(const T* in, T* out, std::int64_t n) {
  T sum = T(0);
  for (std::int64_t i = 0; i < n; ++i) out[i] = sum = wrapping_add(sum, in[i]);
}

template <class T>
void inclusive_scan_threads(const T* in, T* out, std::int64_t n) {
  std::vector<T> totals(cpu_threads(), T(0));
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    T sum = T(0);
    for (std::int64_t i = begin; i < end; ++i) sum = wrapping_add(sum, in[i]);
    totals[part] = sum;
  });
  std::vector<T> offsets(totals.size(), T(0));
  for (std::size_t part = 1; part < totals.size(); ++part)
    offsets[part] = wrapping_add(offsets[part - 1], totals[part - 1]);
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    T sum = offsets[part];
    for (std::int64_t i = begin; i < end; ++i) out[i] = sum = wrapping_add(sum, in[i]);
  });
}

template <class T>
ScanCheck check_scan(const T* in, const T* out, std::int64_t n, ScanKind kind,
                     [[maybe_unused]] RoundingBound bound) {
  if constexpr (std::is_floating_point_v<T>)
    return check_floating(in, out, n, kind, bound);
  else
    return check_integer(in, out, n, kind);
}

#define ROOFLAB_INSTANTIATE_CPU_SCAN(T)                                \
  template void inclusive_scan_serial<T>(const T*, T*, std::int64_t);  \
  template void inclusive_scan_threads<T>(const T*, T*, std::int64_t); \
  template ScanCheck check_scan<T>(const T*, const T*, std::int64_t, ScanKind, RoundingBound);
ROOFLAB_INSTANTIATE_CPU_SCAN(float)
ROOFLAB_INSTANTIATE_CPU_SCAN(double)
ROOFLAB_INSTANTIATE_CPU_SCAN(std::int32_t)
ROOFLAB_INSTANTIATE_CPU_SCAN(std::int64_t)
ROOFLAB_INSTANTIATE_CPU_SCAN(std::uint32_t)
#undef ROOFLAB_INSTANTIATE_CPU_SCAN

}  // namespace rooflab::cpu
