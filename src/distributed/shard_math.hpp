#pragma once
// The arithmetic of sharding and of NCCL's bandwidth conventions: plain C++, no NCCL, no CUDA,
// so that the CPU tests check it (tests/cpu/distributed_math_test.cpp).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rooflab::dist {

// Where each shard starts in the concatenation in rank order: offsets[r] = sizes[0] + ... +
// sizes[r - 1] (offsets[0] = 0), and one more entry, the total. Sizes must be >= 0.
inline std::vector<std::int64_t> shard_offsets(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> offsets(sizes.size() + 1, 0);
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (sizes[r] < 0)
      throw std::invalid_argument("shard " + std::to_string(r) + " has a negative size");
    offsets[r + 1] = offsets[r] + sizes[r];
  }
  return offsets;
}

// `total` elements split over `ranks` as evenly as possible: the first total % ranks shards hold
// one element more.
inline std::vector<std::int64_t> even_shard_sizes(std::int64_t total, int ranks) {
  if (ranks < 1 || total < 0)
    throw std::invalid_argument("even_shard_sizes: ranks >= 1, total >= 0");
  std::vector<std::int64_t> sizes(std::size_t(ranks), total / ranks);
  for (std::int64_t r = 0; r < total % ranks; ++r) ++sizes[std::size_t(r)];
  return sizes;
}

// op folded left to right over values[i] for the i with counted[i] (the non-empty shards), in
// increasing index: ((v_a op v_b) op v_c) ... The first such value stands alone (no identity is
// added, so -0.0 stays -0.0). `found` says whether there was one.
template <class T, class Op>
T fold_in_rank_order(const std::vector<T>& values, const std::vector<bool>& counted, Op op,
                     bool& found) {
  T result{};
  found = false;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!counted[i]) continue;
    result = found ? op(result, values[i]) : values[i];
    found = true;
  }
  return result;
}

// nccl-tests' conventions (PERFORMANCE.md there): algorithm bandwidth is the bytes of the
// operation's size over the time; bus bandwidth scales it by what each link must carry, so that
// it compares with the link's speed whatever the number of ranks.
enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, send_recv };

// The factor busbw / algbw for `ranks` ranks: all-reduce 2(n-1)/n; all-gather and
// reduce-scatter (n-1)/n (their size being the whole gathered buffer); broadcast, reduce and a
// point-to-point copy 1.
inline double bus_bandwidth_factor(Collective collective, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_bandwidth_factor: ranks must be >= 1");
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (n - 1) / n;
    default: return 1.0;
  }
}

inline double algorithm_bandwidth(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds : 0;
}

inline double bus_bandwidth(Collective collective, int ranks, double bytes, double seconds) {
  return algorithm_bandwidth(bytes, seconds) * bus_bandwidth_factor(collective, ranks);
}

// A link's theoretical bandwidth in one direction, bytes/s: links x per-link rate. NVLink 4 (H100):
// 18 links x 25 GB/s per direction = 450 GB/s (900 GB/s both directions together).
inline double link_bandwidth(int links, double bytes_per_second_per_link) {
  return links > 0 ? links * bytes_per_second_per_link : 0;
}

// One NVLink's rate in one direction, bytes/s, on a GPU of compute capability major.minor: NVLink 3
// on A100 (8.0) and NVLink 4 on Hopper (9.0) 25 GB/s; NVLink 3 on GA102 (8.6, four x4 links, its
// whitepaper) 14.0625 GB/s; NVLink 5 (10.x) 50 GB/s. 0 for any other (no NVLink, or not known here).
inline double nvlink_per_link_rate(int major, int minor) {
  if ((major == 8 && minor == 0) || major == 9) return 25e9;
  if (major == 8 && minor == 6) return 14.0625e9;
  if (major == 10) return 50e9;
  return 0;
}

}  // namespace rooflab::dist
