#pragma once
// Page-locked host memory (cudaHostAlloc) with RAII: the memory the copy engines read and write
// directly, without the driver staging it through a bounce buffer as it must for malloc memory.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // flags: cudaHostAlloc's (cudaHostAllocMapped: kernels may read and write it too).
  explicit PinnedBuffer(std::size_t count, unsigned flags = cudaHostAllocDefault) : size_(count) {
    if (count > 0)
      ROOFLAB_CUDA("PinnedBuffer",
                   "allocating " + detail::describe_bytes(count * sizeof(T)) + " of pinned memory",
                   cudaHostAlloc(reinterpret_cast<void**>(&data_), count * sizeof(T), flags));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);  // a destructor cannot report
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) cudaFreeHost(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rooflab
