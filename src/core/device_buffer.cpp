#include "rooflab/device_buffer.hpp"

#include <string>

#include "rooflab/error.hpp"

namespace rooflab {

void throw_size_mismatch(std::size_t expected, std::size_t got) {
  throw Error("DeviceBuffer", "host", "holds " + std::to_string(got) + " elements, the buffer " +
                                          std::to_string(expected));
}

StreamBuffer::StreamBuffer(std::size_t bytes, cudaStream_t stream, const char* op)
    : bytes_(bytes), stream_(stream) {
  if (bytes > 0) ROOFLAB_CUDA(op, cudaMallocAsync(&data_, bytes, stream));
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // no throwing from a destructor
}

}  // namespace rooflab
