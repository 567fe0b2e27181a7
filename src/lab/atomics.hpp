#pragma once
// Atomics (the limiting-factors lecture): one counter, incremented by every thread by its value (1
// to 4), so that the total is a sum the CPU can check and the compiler cannot fold into a count of
// threads.
#include <cstdint>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

class AtomicsWorkspace : public Workspace {
 public:
  explicit AtomicsWorkspace(std::int64_t n);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;
  void prepare_host();  // host copy of the values for the CPU rung, once per refill

  std::int64_t n;
  DeviceBuffer<std::uint32_t> values;
  DeviceBuffer<unsigned long long> counter;  // one counter; each run zeroes it first
  std::vector<std::uint32_t> host_values;
  std::uint64_t host_counter = 0;

 private:
  std::uint64_t seed_ = 0;
};

}  // namespace rooflab::bench
