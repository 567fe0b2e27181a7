#pragma once
// Occupancy and registers (the limiting-factors lecture): one register-hungry kernel (each warp
// smooths a 32 x 32 tile held in registers, 32 floats per thread, lab::smooth_column) launched with
// block sizes from 32 to 1024 and with its registers capped until they spill to local memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

class OccupancyWorkspace : public Workspace {
 public:
  explicit OccupancyWorkspace(std::int64_t n);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;
  void prepare_host();  // host copy of the input for the CPU rung, once per refill

  std::int64_t n;
  int passes;
  DeviceBuffer<float> in, out;
  std::vector<float> host_in, host_out;
};

// What the compiler and the occupancy calculator say about one rung's kernel.
struct LaunchFacts {
  int block_threads = 0;
  int registers = 0;            // per thread (cudaFuncAttributes::numRegs)
  std::size_t local_bytes = 0;  // per thread: spilled registers live here (localSizeBytes)
  int blocks_per_sm = 0;        // cudaOccupancyMaxActiveBlocksPerMultiprocessor
  double occupancy = 0;         // resident threads / the SM's maximum
};

// The facts of the occupancy rung named `rung` (throws rooflab::Error for another name).
LaunchFacts occupancy_launch_facts(const std::string& rung);
// "8 blocks/SM, 100% occupancy, 32 registers, 0 B local": the note beside each rung's time.
std::string describe(const LaunchFacts& facts);

}  // namespace rooflab::bench
