#pragma once
// Lecture 003's vector add, out = a + b over n floats: the first op of the lab, and the smallest
// complete example of an op (workspace, model, rungs).
#include <cstdint>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

class AddWorkspace : public Workspace {
 public:
  explicit AddWorkspace(std::int64_t n);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copies of the inputs for CPU variants, downloaded on first use after each refill.
  void prepare_host();

  std::int64_t n;
  DeviceBuffer<float> a, b, out;
  std::vector<float> host_a, host_b, host_out;

 private:
  std::uint64_t seed_a_ = 0, seed_b_ = 0;
};

}  // namespace rooflab::bench
