#pragma once
// Work on a second stream beside the caller's, with RAII: the constructor makes `side` wait for
// the work queued on `stream` so far (the fork); join() makes `stream` wait for the work queued on
// `side` so far. The destructor joins where join() was not called, also while an exception
// unwinds, so that buffers the side's work uses and `stream` frees afterwards outlive that work.
#include <cuda_runtime_api.h>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

class StreamFork {
 public:
  StreamFork(cudaStream_t stream, cudaStream_t side, const char* op)
      : stream_(stream), side_(side), op_(op) {
    ROOFLAB_CUDA(op_, "creating an event",
                 cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    try {  // nothing is queued on `side` yet: a failed fork only frees its event
      ROOFLAB_CUDA(op_, "recording the fork", cudaEventRecord(event_, stream_));
      ROOFLAB_CUDA(op_, "forking a stream", cudaStreamWaitEvent(side_, event_, 0));
    } catch (...) {
      cudaEventDestroy(event_);
      throw;
    }
  }
  ~StreamFork() {  // a destructor cannot report
    if (!joined_ && cudaEventRecord(event_, side_) == cudaSuccess)
      cudaStreamWaitEvent(stream_, event_, 0);
    cudaEventDestroy(event_);
  }
  StreamFork(const StreamFork&) = delete;
  StreamFork& operator=(const StreamFork&) = delete;

  void join() {
    ROOFLAB_CUDA(op_, "recording the join", cudaEventRecord(event_, side_));
    ROOFLAB_CUDA(op_, "joining a stream", cudaStreamWaitEvent(stream_, event_, 0));
    joined_ = true;
  }

 private:
  cudaStream_t stream_, side_;
  const char* op_;
  cudaEvent_t event_ = nullptr;
  bool joined_ = false;
};

}  // namespace rooflab
