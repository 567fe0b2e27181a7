#include "core/event_timer.hpp"

#include "rooflab/cuda_check.hpp"

namespace rooflab {

EventTimer::EventTimer() {
  ROOFLAB_CUDA("EventTimer", "creating the start event", cudaEventCreate(&start_));
  const cudaError_t status = cudaEventCreate(&stop_);
  if (status != cudaSuccess) cudaEventDestroy(start_);
  ROOFLAB_CUDA("EventTimer", "creating the stop event", status);
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) {
  ROOFLAB_CUDA("EventTimer", "recording the start event", cudaEventRecord(start_, stream));
}

void EventTimer::stop(cudaStream_t stream) {
  ROOFLAB_CUDA("EventTimer", "recording the stop event", cudaEventRecord(stop_, stream));
}

float EventTimer::elapsed_ms() {
  ROOFLAB_CUDA("EventTimer", "waiting for the stop event", cudaEventSynchronize(stop_));
  float ms = 0;
  ROOFLAB_CUDA("EventTimer", "reading the time between the events",
               cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace rooflab
