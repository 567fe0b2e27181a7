#include "cpu/add.hpp"

namespace rooflab::cpu {

void add_serial(const float* a, const float* b, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace rooflab::cpu
