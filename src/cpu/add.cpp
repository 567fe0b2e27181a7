#include "cpu/add.hpp"

#include "cpu/parallel.hpp"

namespace rooflab::cpu {

void add_serial(const float* a, const float* b, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void add_threads(const float* a, const float* b, float* out, std::int64_t n) {
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int) {
    add_serial(a + begin, b + begin, out + begin, end - begin);
  });
}

}  // namespace rooflab::cpu
