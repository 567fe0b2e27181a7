#pragma once
// Element-wise comparison of an output with a reference computed in double, in parallel.
// A NaN in the output where the reference has none (a poisoned element nobody wrote) never passes.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/parallel.hpp"

namespace rooflab::cpu {

struct Comparison {
  double max_error = 0;           // max over elements of |out - ref| / max(|ref|, floor)
  std::int64_t worst_index = -1;  // where max_error was, or the first NaN
  double worst_output = 0;
  double worst_reference = 0;
  bool has_nan = false;
  std::int64_t compared = 0;
  bool within(double tolerance) const { return !has_nan && max_error <= tolerance; }
  std::string describe() const;
};

// reference(i) gives element i in double; floor keeps relative error meaningful near zero.
template <class T, class Reference>
Comparison compare_relative(const T* out, std::int64_t n, Reference reference, double floor) {
  std::vector<Comparison> parts(cpu_threads());
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    Comparison local;
    for (std::int64_t i = begin; i < end; ++i) {
      const double got = double(out[i]);
      const double want = reference(i);
      if (std::isnan(got) != std::isnan(want)) {  // unwritten, or a NaN where none belongs
        local = Comparison{0, i, got, want, true};
        break;
      }
      if (std::isnan(want)) continue;  // NaN expected and produced
      const double error = std::abs(got - want) / std::max(std::abs(want), floor);
      if (error > local.max_error || local.worst_index < 0)
        local = Comparison{error, i, got, want, false};
    }
    parts[part] = local;
  });
  Comparison total;
  for (const Comparison& part : parts) {
    if (part.worst_index < 0) continue;
    if (part.has_nan) {
      if (!total.has_nan || part.worst_index < total.worst_index) total = part;
    } else if (!total.has_nan && (total.worst_index < 0 || part.max_error > total.max_error)) {
      total = part;
    }
  }
  total.compared = n;
  return total;
}

// Exact comparison (integers, counts, bit-reproducibility): reference(i) gives element i as T.
// max_error is the number of mismatching elements; worst_index the first of them.
template <class T, class Reference>
Comparison compare_exact(const T* out, std::int64_t n, Reference reference) {
  std::vector<std::int64_t> mismatches(cpu_threads(), 0), first(cpu_threads(), -1);
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int part) {
    for (std::int64_t i = begin; i < end; ++i)
      if (!(out[i] == T(reference(i)))) {
        if (first[part] < 0) first[part] = i;
        ++mismatches[part];
      }
  });
  Comparison total;
  total.compared = n;
  std::int64_t count = 0;
  for (std::size_t part = 0; part < first.size(); ++part) {
    count += mismatches[part];
    if (first[part] >= 0 && (total.worst_index < 0 || first[part] < total.worst_index))
      total.worst_index = first[part];
  }
  total.max_error = double(count);
  if (total.worst_index >= 0) {
    total.worst_output = double(out[total.worst_index]);
    total.worst_reference = double(T(reference(total.worst_index)));
  }
  return total;
}

}  // namespace rooflab::cpu
