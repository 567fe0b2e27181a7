#include "core/l2_flush.hpp"

namespace rooflab {

L2Flush::L2Flush(std::size_t l2_bytes) : scratch_(2 * l2_bytes) {}

void L2Flush::operator()(cudaStream_t stream) {
  // A changing value keeps the memset from being a no-op on lines that already hold it.
  scratch_.fill_bytes(next_byte_, stream);
  next_byte_ = (next_byte_ + 1) & 0xFF;
}

}  // namespace rooflab
