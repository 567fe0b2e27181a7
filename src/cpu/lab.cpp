#include "cpu/lab.hpp"

#include <atomic>

#include "cpu/parallel.hpp"
#include "lab/patterns.hpp"

namespace rooflab::cpu {

void heavy_or_copy(const float* in, float* out, std::int64_t n, int spacing, int iterations) {
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t i = begin; i < end; ++i)
      out[i] = lab::is_heavy(i, spacing) ? lab::heavy_work(in[i], iterations) : in[i];
  });
}

namespace {

constexpr std::int64_t tile_elements = std::int64_t(lab::tile_rows) * lab::warp_size;

// One column per (tile, lane), as one GPU thread holds it; columns are independent.
template <class T>
void smooth_tiles_as(const float* in, T* out, std::int64_t n, int passes) {
  const std::int64_t columns = (n + tile_elements - 1) / tile_elements * lab::warp_size;
  parallel_ranges(columns, [&](std::int64_t begin, std::int64_t end, int) {
    T x[lab::tile_rows];
    for (std::int64_t column = begin; column < end; ++column) {
      const std::int64_t first = column / lab::warp_size * tile_elements + column % lab::warp_size;
      for (int k = 0; k < lab::tile_rows; ++k) {
        const std::int64_t i = first + k * lab::warp_size;
        x[k] = i < n ? T(in[i]) : T(0);
      }
      lab::smooth_column(x, passes);
      for (int k = 0; k < lab::tile_rows; ++k) {
        const std::int64_t i = first + k * lab::warp_size;
        if (i < n) out[i] = x[k];
      }
    }
  });
}

}  // namespace

void smooth_tiles(const float* in, float* out, std::int64_t n, int passes) {
  smooth_tiles_as(in, out, n, passes);
}

std::vector<double> smooth_tiles_reference(const float* in, std::int64_t n, int passes) {
  std::vector<double> reference(static_cast<std::size_t>(n));
  smooth_tiles_as(in, reference.data(), n, passes);
  return reference;
}

std::uint64_t sum_privatized(const std::uint32_t* values, std::int64_t n) {
  std::atomic<std::uint64_t> total{0};
  parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int) {
    std::uint64_t local = 0;
    for (std::int64_t i = begin; i < end; ++i) local += values[i];
    total.fetch_add(local, std::memory_order_relaxed);
  });
  return total.load();
}

}  // namespace rooflab::cpu
