#pragma once
// Owning device memory. DeviceBuffer is plain cudaMalloc memory with RAII and move-only
// semantics; StreamBuffer is stream-ordered temporary storage (cudaMallocAsync / cudaFreeAsync),
// which is what the library uses internally so that callers never size scratch space themselves.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : size_(count) {
    if (count > 0)
      ROOFLAB_CUDA("DeviceBuffer",
                   "allocating " + detail::describe_bytes(bytes()) + " of device memory",
                   cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }

  // Synchronous copies, for set-up and checking (never inside a timed region).
  void upload(const std::vector<T>& host) {
    require_same_size(host.size());
    if (size_ > 0)
      ROOFLAB_CUDA("DeviceBuffer", "copying " + detail::describe_bytes(bytes()) + " to the device",
                   cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_ > 0)
      ROOFLAB_CUDA("DeviceBuffer", "copying " + detail::describe_bytes(bytes()) + " to the host",
                   cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // Fills every byte with `byte`: 0xFF poisons floats with NaN and integers with -1 / max.
  void fill_bytes(int byte, cudaStream_t stream = nullptr) {
    if (size_ > 0)
      ROOFLAB_CUDA("DeviceBuffer", "filling " + detail::describe_bytes(bytes()) + " with one byte",
                   cudaMemsetAsync(data_, byte, bytes(), stream));
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFree(data_);  // a destructor cannot report; cudaFree only fails
    data_ = nullptr;                        // after an earlier error that was already reported
  }
  void require_same_size(std::size_t count) const;

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

void throw_size_mismatch(std::size_t expected, std::size_t got);

template <class T>
void DeviceBuffer<T>::require_same_size(std::size_t count) const {
  if (count != size_) throw_size_mismatch(size_, count);
}

// Stream-ordered scratch space: allocated on `stream` at construction, released on the same
// stream at destruction, so kernels queued before the destructor still see valid memory. Outside
// a stream capture it comes from a pool of rooflab's own on the current device, which keeps up to
// scratch_retained_bytes of freed memory for the next call (the default pool unmaps it at every
// synchronization, which a synchronizing call such as rooflab::svd then paid on every call: 61
// against 33 us over the kernel at 25 x 25 double, docs/svd.md); inside one, the graph owns the
// allocation.
inline constexpr std::size_t scratch_retained_bytes = std::size_t(256) << 20;
namespace detail {
// That pool, created on first use (never destroyed).
cudaMemPool_t scratch_pool(const char* op);
}  // namespace detail

class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream, const char* op);
  ~StreamBuffer();
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  void* data() const noexcept { return data_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace rooflab
