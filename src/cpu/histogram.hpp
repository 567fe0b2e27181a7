#pragma once
// CPU side of histogram_even: the bin rule written out as the API states it (independently of the
// device's), the CPU loop that stands in for the memory-basics lab's CPU version (its code not
// shown there), and the parallel reference the checks use.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"

namespace rooflab::cpu {

// The bin of v: min(bins - 1, floor((v - lo) * bins / (hi - lo))) in double, or -1 when v is
// outside [lo, hi) or NaN.
int even_bin(double v, double lo, double hi, int bins);

// The CPU baseline, rooflab's stand-in for the memory-basics lab's CPU version (not shown): one
// core, one pass; counts[0, bins) overwritten.
template <class T>
void histogram_serial(const T* in, std::int64_t n, int bins, double lo, double hi,
                      std::uint64_t* counts);

// The careful CPU baselines: what a C++ programmer who measured would write, exact all the same.
// Bytes are counted by value and folded into the bins once (the rule applied to 256 values);
// values on integer edges by a shift (histogram/even_bins.hpp), others by a multiply that finds
// the nearest bin edge and one comparison with the rule's own edge there (found once per call by
// a search over the doubles). One core, or every core with a histogram of its own, summed at the
// end; counts[0, bins) overwritten.
template <class T>
void histogram_fast(const T* in, std::int64_t n, int bins, double lo, double hi,
                    std::uint64_t* counts, bool every_core);

// Counts of n values of type T in partial histograms, one per part of [0, n) on a thread of its
// own: count(begin, end, slots) adds the values of [begin, end) into slots (bytes: 256 slots by
// value; else the bins). The parts are summed, and byte values folded into the bins by the rule.
// Parts: as many threads as 256 MB of partials allow, none under 2^16 values; 1 when
// every_core is false.
template <class T, class CountRange>
std::vector<std::uint64_t> histogram_in_parts(std::int64_t n, int bins, double lo, double hi,
                                              bool every_core, CountRange count) {
  constexpr bool bytes = std::is_same_v<T, std::uint8_t>;
  const std::size_t slots = bytes ? 256 : std::size_t(bins);
  const std::int64_t most_parts =
      std::max<std::int64_t>(1, (std::int64_t(1) << 25) / std::int64_t(slots));
  const int parts =
      every_core
          ? int(std::max<std::int64_t>(1, std::min<std::int64_t>({std::int64_t(cpu_threads()),
                                                                  most_parts, n / (1 << 16)})))
          : 1;
  // All parts in one block, 64 bytes between one's slots and the next's: no cache line holds two
  // threads' slots (histograms allocated one by one lie 16 bytes apart, sharing lines).
  const std::size_t stride = slots + 8;
  std::vector<std::uint64_t> partial(parts * stride, 0);
  std::vector<std::thread> threads;
  const std::int64_t per_part = (n + parts - 1) / parts;
  for (int part = 0; part < parts; ++part) {
    threads.emplace_back([&, part] {
      count(std::min(n, part * per_part), std::min(n, (part + 1) * per_part),
            partial.data() + part * stride);
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::uint64_t> counts(bins, 0);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    std::uint64_t total = 0;
    for (int part = 0; part < parts; ++part) total += partial[part * stride + slot];
    if (!bytes) {
      counts[slot] = total;
    } else if (const int bin = even_bin(double(slot), lo, hi, bins); bin >= 0) {
      counts[bin] += total;
    }
  }
  return counts;
}

// The reference: counts of the n values value(0), ..., value(n - 1) (of type T), on every core,
// each binned by the rule (bytes: each byte value once, at the fold).
template <class T, class Value>
std::vector<std::uint64_t> histogram_reference(std::int64_t n, int bins, double lo, double hi,
                                               Value value) {
  return histogram_in_parts<T>(
      n, bins, lo, hi, true, [&](std::int64_t begin, std::int64_t end, std::uint64_t* slots) {
        for (std::int64_t i = begin; i < end; ++i) {
          const T v = value(i);
          if constexpr (std::is_same_v<T, std::uint8_t>) {
            ++slots[v];
          } else if (const int bin = even_bin(double(v), lo, hi, bins); bin >= 0) {
            ++slots[bin];
          }
        }
      });
}

}  // namespace rooflab::cpu
