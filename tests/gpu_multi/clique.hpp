#pragma once
// Multi-GPU test support: N GPUs of this process as one NCCL clique (ncclCommInitAll), one host
// thread per rank (the sharded calls block on their argument check, so one thread cannot drive
// several ranks), and skips that say why where there are fewer GPUs than a test needs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/device_query.hpp"

namespace rooflab::testing {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
inline void check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(result));
}

// NVLink multicast (NVLS) stays off in every test and benchmark of rooflab (docs/distributed.md).
inline void keep_nvls_off() { setenv("NCCL_NVLS_ENABLE", "0", 1); }

// Empty when `needed` GPUs can be used, else why not.
inline std::string gpus_unavailable_reason(int needed) {
  // The library's reason where there is no device: it names a missing driver as such.
  if (std::string why = cuda_device_unavailable_reason(); !why.empty()) return why;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < needed)
    return "needs " + std::to_string(needed) + " GPUs, found " + std::to_string(count);
  return {};
}

class Clique {
 public:
  explicit Clique(int ranks) : comms_(std::size_t(ranks)), streams_(std::size_t(ranks)) {
    keep_nvls_off();
    check(ncclCommInitAll(comms_.data(), ranks, nullptr), "ncclCommInitAll");
    for (int r = 0; r < ranks; ++r) {
      check(cudaSetDevice(r), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&streams_[std::size_t(r)], cudaStreamNonBlocking),
            "cudaStreamCreate");
    }
  }
  ~Clique() {
    for (std::size_t r = 0; r < comms_.size(); ++r) {
      cudaSetDevice(int(r));
      cudaStreamDestroy(streams_[r]);
      ncclCommDestroy(comms_[r]);
    }
  }
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;

  int ranks() const { return int(comms_.size()); }
  ncclComm_t comm(int rank) const { return comms_[std::size_t(rank)]; }
  cudaStream_t stream(int rank) const { return streams_[std::size_t(rank)]; }

  // fn(rank) on one thread per rank, GPU `rank` current; rethrows the lowest rank's exception.
  void on_every_rank(const std::function<void(int)>& fn) const {
    std::vector<std::exception_ptr> failures(comms_.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks(); ++r)
      threads.emplace_back([&, r] {
        try {
          check(cudaSetDevice(r), "cudaSetDevice");
          fn(r);
        } catch (...) {
          failures[std::size_t(r)] = std::current_exception();
        }
      });
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& failure : failures)
      if (failure) std::rethrow_exception(failure);
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

// Device memory on the current GPU holding `values` (RAII; the test's own, not the library's).
template <class T>
class Shard {
 public:
  explicit Shard(const std::vector<T>& values, std::size_t extra = 0) : size_(values.size()) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), (size_ + extra + 1) * sizeof(T)),
          "cudaMalloc");
    if (size_ > 0)
      check(cudaMemcpy(data_, values.data(), size_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  explicit Shard(std::size_t size) : size_(size) {
    check(cudaMalloc(reinterpret_cast<void**>(&data_), (size_ + 1) * sizeof(T)), "cudaMalloc");
    check(cudaMemset(data_, 0xff, (size_ + 1) * sizeof(T)), "poisoning");
  }
  ~Shard() { cudaFree(data_); }
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;
  T* data() const { return data_; }
  std::vector<T> download(std::size_t count) const {
    std::vector<T> host(count);
    if (count > 0)
      check(cudaMemcpy(host.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rooflab::testing
