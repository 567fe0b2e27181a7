#pragma once
// The blocking copy as the synchronization point (the limiting-factors lecture): the lecture times
// its add with events and lets the device-to-host cudaMemcpy that follows the stop event do the
// waiting. The rungs read the events after that copy, and before it; both copy the sum back, and
// the check reads the host's copy.
#include <cstdint>

#include "lab/timing.hpp"

namespace rooflab::bench {

class MemcpySyncWorkspace : public TimingWorkspace {
 public:
  explicit MemcpySyncWorkspace(std::int64_t n);
  // Fresh inputs, poisoned device output (AddWorkspace), and a poisoned host copy of the output.
  void refill(std::uint64_t seed) override;
  // Compares host_out, the pageable buffer each rung copies the sum into, with the reference.
  Check check(Where where) override;
};

}  // namespace rooflab::bench
