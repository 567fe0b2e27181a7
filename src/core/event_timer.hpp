#pragma once
// A pair of CUDA events around a region of one stream. elapsed_ms() waits for the stop event first:
// reading an event that has not completed gives nothing (the limiting-factors lecture's pitfall).
#include <cuda_runtime_api.h>

namespace rooflab {

class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  float elapsed_ms();  // synchronizes on the stop event

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace rooflab
