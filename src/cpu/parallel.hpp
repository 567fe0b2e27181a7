#pragma once
// A minimal parallel loop for CPU references and baselines over large inputs: [0, n) split into
// one contiguous range per hardware thread.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace rooflab::cpu {

inline int cpu_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// body(begin, end, part) for each part; parts = cpu_threads() unless n is small. Below
// min_per_part items a part, threads cost more than they save (2^16 for elementwise work; pass
// fewer when each item is heavy, like a matrix column).
template <class Body>
void parallel_ranges(std::int64_t n, Body body, std::int64_t min_per_part = 1 << 16) {
  min_per_part = std::max<std::int64_t>(1, min_per_part);
  const int parts =
      int(std::max<std::int64_t>(1, std::min<std::int64_t>(cpu_threads(), n / min_per_part)));
  if (parts == 1) {
    body(std::int64_t(0), n, 0);
    return;
  }
  std::vector<std::thread> threads;
  const std::int64_t per_part = (n + parts - 1) / parts;
  for (int part = 0; part < parts; ++part) {
    const std::int64_t begin = std::min(n, part * per_part);
    const std::int64_t end = std::min(n, begin + per_part);
    threads.emplace_back([=] { body(begin, end, part); });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace rooflab::cpu
