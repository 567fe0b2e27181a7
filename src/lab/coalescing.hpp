#pragma once
// Coalescing (the limiting-factors lecture's add against stupid_add, generalized): out = a + b over
// n floats, the same 12 bytes per element, with only the mapping of elements to threads changing.
#include <cstdint>

#include "add/add_workspace.hpp"

namespace rooflab::bench {

class CoalescingWorkspace : public AddWorkspace {
 public:
  explicit CoalescingWorkspace(std::int64_t n);
  // Fresh inputs, poisoned output, and a fresh random permutation of the 32 lanes.
  void refill(std::uint64_t seed) override;

  DeviceBuffer<std::uint8_t> lane_permutation;  // 32 entries: lane l takes element permutation[l]
};

// A random permutation of 0..31 drawn from `seed` (Fisher-Yates on the counter-based stream).
std::vector<std::uint8_t> random_lane_permutation(std::uint64_t seed);

}  // namespace rooflab::bench
