#pragma once
// Timing pitfalls (the limiting-factors lecture): the add kernel timed four ways by the rung
// itself, each row's note saying what that method read, beside the harness's own (correct) event
// timing of the same run.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "add/add_workspace.hpp"
#include "bench/registry.hpp"
#include "core/l2_flush.hpp"

namespace rooflab::bench {

class TimingWorkspace : public AddWorkspace {
 public:
  explicit TimingWorkspace(std::int64_t n);
  ~TimingWorkspace() override;
  TimingWorkspace(const TimingWorkspace&) = delete;
  TimingWorkspace& operator=(const TimingWorkspace&) = delete;
  // Fresh inputs and poisoned output (AddWorkspace), and no self-measurements yet.
  void refill(std::uint64_t seed) override;

  // What the rung's own method read on each run since the last refill (ms), and how many of
  // those reads the runtime refused as not ready.
  std::vector<double> self_ms;
  int not_ready = 0;
  // "its own clock read 0.271 ms (median of 23 runs): <lesson>"
  std::string self_report(const std::string& lesson) const;

  // The rung's own events (the harness has its own pair around the whole run).
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  // Rungs 5 and 6 flush L2 themselves, each by its method.
  L2Flush flush;
};

// The timed add on `stream` between the workspace's own start and stop events (errors name `op`).
void record_add(TimingWorkspace& w, cudaStream_t stream, const char* op);
// The events' interval read without waiting for the stop event, into self_ms: 0, counted in
// not_ready, when the runtime answers cudaErrorNotReady (the lesson, not a fault).
void read_events_without_waiting(TimingWorkspace& w, const char* op);

// Rung 0 of `op`, whose workspace is a TimingWorkspace: one CPU core adds into host memory, timed
// by a host clock around it (right: CPU work is synchronous); its note says what the clock read.
Variant cpu_host_clock_rung(const std::string& op, const std::string& idea);

}  // namespace rooflab::bench
