#pragma once
// Host-device transfers: the same bytes moved from pageable (malloc) and pinned (cudaHostAlloc)
// memory, as the limiting-factors lecture compares them, and from managed (cudaMallocManaged)
// memory, which the Jacobi SVD paper uses; the host link bounds their rate.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "bench/registry.hpp"
#include "core/pinned_buffer.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

// cudaMallocManaged memory with RAII: one pointer valid on the host and the device, its pages
// migrating to whichever side touches them (or to where cudaMemPrefetchAsync sends them).
template <class T>
class ManagedBuffer {
 public:
  explicit ManagedBuffer(std::size_t count) : size_(count) {
    if (count > 0)
      ROOFLAB_CUDA("ManagedBuffer",
                   "allocating " + detail::describe_bytes(count * sizeof(T)) + " of managed memory",
                   cudaMallocManaged(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~ManagedBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  ManagedBuffer(const ManagedBuffer&) = delete;
  ManagedBuffer& operator=(const ManagedBuffer&) = delete;

  T* data() noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Every source holds the same random words (never the poison 0xFFFFFFFF), every destination is
// poisoned before a run, so one reference checks whichever destination the rung wrote.
class TransferWorkspace : public Workspace {
 public:
  explicit TransferWorkspace(std::int64_t bytes);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Managed pages back on the host, unmapped from the device (the first-touch starting state).
  void managed_to_host(cudaStream_t stream);
  // Managed pages onto the device, asynchronously on `stream`.
  void managed_to_device(cudaStream_t stream);

  enum class Destination { device, pageable, pinned };
  Destination written = Destination::device;  // set by each rung: where its copy landed

  std::int64_t bytes;
  std::int64_t words;
  int device_ordinal = 0;
  DeviceBuffer<std::uint32_t> device_source, device_destination;
  std::vector<std::uint32_t> pageable_source, pageable_destination;
  PinnedBuffer<std::uint32_t> pinned_source, pinned_destination;
  ManagedBuffer<std::uint32_t> managed;

 private:
  std::uint64_t seed_ = 0;
};

// The problem of an op whose workspace is a TransferWorkspace: --n bytes (default_bytes when not
// given), a positive multiple of 4 and at most 4 GiB; a bad --n is a rooflab::Error naming `op`.
Problem resolve_transfer_bytes(Problem problem, const std::string& op, std::int64_t default_bytes);

// Whether the device can migrate managed pages on demand (cudaDevAttrConcurrentManagedAccess):
// without it, the first-touch, prefetch and managed-resident rungs cannot run.
bool device_migrates_managed_memory();

}  // namespace rooflab::bench
