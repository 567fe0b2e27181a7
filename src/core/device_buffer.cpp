#include "rooflab/device_buffer.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "rooflab/error.hpp"

namespace rooflab {
namespace detail {

// The device's default pool hands its free memory back to the system at every synchronization
// (its release threshold is 0), so a call that synchronizes (rooflab::svd reads its status back)
// had its scratch mapped afresh by the next call. This pool keeps up to scratch_retained_bytes.
cudaMemPool_t scratch_pool(const char* op) {
  int device = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  static std::mutex mutex;
  // Never destroyed: at exit, CUDA may already be torn down when static destructors run.
  static auto* pools = new std::map<int, cudaMemPool_t>;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = pools->find(device);
  if (found != pools->end()) return found->second;
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = device;
  cudaMemPool_t pool = nullptr;
  ROOFLAB_CUDA(op, "creating the scratch memory pool of device " + std::to_string(device),
               cudaMemPoolCreate(&pool, &properties));
  std::uint64_t threshold = scratch_retained_bytes;
  ROOFLAB_CUDA(op, "setting the scratch pool's release threshold",
               cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  pools->emplace(device, pool);
  return pool;
}

}  // namespace detail

void throw_size_mismatch(std::size_t expected, std::size_t got) {
  throw Error("DeviceBuffer", "host",
              "holds " + std::to_string(got) + " elements, the buffer " + std::to_string(expected));
}

StreamBuffer::StreamBuffer(std::size_t bytes, cudaStream_t stream, const char* op)
    : bytes_(bytes), stream_(stream) {
  if (bytes == 0) return;
  // Inside a stream capture the graph owns its allocation (a memory node, valid for every launch
  // of the graph), and no pool may be created then.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ROOFLAB_CUDA(op, "asking whether the stream is capturing",
               cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone)
    ROOFLAB_CUDA(op, "allocating " + detail::describe_bytes(bytes) + " of scratch from the pool",
                 cudaMallocFromPoolAsync(&data_, bytes, detail::scratch_pool(op), stream));
  else
    ROOFLAB_CUDA(op, "allocating " + detail::describe_bytes(bytes) + " of graph-owned scratch",
                 cudaMallocAsync(&data_, bytes, stream));
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // no throwing from a destructor
}

}  // namespace rooflab
