#pragma once
// Divergence (the memory-basics lab, the limiting-factors lecture): out[i] = heavy_work(in[i]) for
// the heavy elements (a fixed number in every 32), in[i] for the others. The rungs differ only in
// which thread takes which element, so whether the 32 lanes of a warp agree on the branch.
#include <cstdint>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

class DivergenceWorkspace : public Workspace {
 public:
  DivergenceWorkspace(std::int64_t n, int spacing);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;
  void prepare_host();  // host copy of the input for the CPU rung, once per refill

  std::int64_t n;
  int spacing;  // one heavy element every `spacing` (32 / heavy elements per warp)
  int iterations;
  DeviceBuffer<float> in, out;
  std::vector<float> host_in, host_out;

 private:
  std::uint64_t seed_ = 0;
};

}  // namespace rooflab::bench
