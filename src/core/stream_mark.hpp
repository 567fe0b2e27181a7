#pragma once
// A point in a stream for the host to wait on: a CUDA event without timing (the cheaper kind),
// with RAII.
#include <cuda_runtime_api.h>

#include "rooflab/cuda_check.hpp"

namespace rooflab {

class StreamMark {
 public:
  explicit StreamMark(const char* op) : op_(op) {
    ROOFLAB_CUDA(op_, "creating an event",
                 cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~StreamMark() { cudaEventDestroy(event_); }  // a destructor cannot report
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;

  // Marks the stream here (replacing the previous mark).
  void record(cudaStream_t stream) {
    ROOFLAB_CUDA(op_, "recording an event on the stream", cudaEventRecord(event_, stream));
  }
  // Returns once the work queued before the mark has completed.
  void wait() {
    ROOFLAB_CUDA(op_, "waiting for the work queued before an event", cudaEventSynchronize(event_));
  }

 private:
  const char* op_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace rooflab
