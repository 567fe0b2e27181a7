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
  // Queues a read of twice the L2 size on `stream`: every line the timed op could reuse is gone,
  // and every dirty line is written back now, so L2 is left holding clean lines only.
  void operator()(cudaStream_t stream);
  // Queues a write of twice the L2 size instead, as memset-based flushes do. It evicts as well but
  // leaves L2 full of dirty lines, and whatever runs next pays for writing them back: up to the L2
  // size of extra write traffic inside the timed region (the timing lab shows the cost).
  void by_writing(cudaStream_t stream);

 private:
  DeviceBuffer<unsigned char> scratch_;
  DeviceBuffer<unsigned> sink_;
  int next_byte_ = 0;
};

}  // namespace rooflab
