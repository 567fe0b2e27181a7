#include "core/l2_flush.hpp"

#include "core/stream_read.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab {

L2Flush::L2Flush(std::size_t l2_bytes) : scratch_((2 * l2_bytes + 15) / 16 * 16), sink_(1) {
  // Defined contents for the reads, in place before any stream reads them.
  scratch_.fill_bytes(0x5A);
  ROOFLAB_CUDA("L2Flush", "filling the flush buffer", cudaStreamSynchronize(nullptr));
}

void L2Flush::operator()(cudaStream_t stream) {
  stream_read(scratch_.data(), scratch_.size(), sink_.data(), stream);
}

void L2Flush::by_writing(cudaStream_t stream) {
  // A changing value keeps the memset from being a no-op on lines that already hold it.
  next_byte_ = (next_byte_ + 1) & 0xFF;
  scratch_.fill_bytes(next_byte_, stream);
}

}  // namespace rooflab
