#pragma once
// Evicts the L2 cache between timed runs, so that a measurement of a large op reflects device
// memory rather than data left in L2 by the previous repetition.
#include <cstddef>

#include <cuda_runtime_api.h>

#include "rooflab/device_buffer.hpp"

namespace rooflab {

class L2Flush {
 public:
  explicit L2Flush(std::size_t l2_bytes);
  // Queues a write of twice the L2 size on `stream`: every line the timed op could reuse is gone.
  void operator()(cudaStream_t stream);

 private:
  DeviceBuffer<unsigned char> scratch_;
  int next_byte_ = 0;
};

}  // namespace rooflab
