// The timing ladder (the limiting-factors lecture): the same add kernel in every rung, timed by the
// rung itself in four ways. The harness times each run correctly (its own events, synchronized);
// the note says what the rung's method read, so the table puts the two side by side.
#include <chrono>
#include <cstdint>

#include "core/device_info.hpp"
#include "lab/timing.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

using host_clock = std::chrono::steady_clock;

double elapsed_ms(host_clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(host_clock::now() - begin).count();
}

// The kernel every rung times: the limiting-factors lecture's vector add, written grid-stride.
__global__ void add_timed(const float* __restrict__ a, const float* __restrict__ b,
                          float* __restrict__ out, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a[i] + b[i];
}

void launch_add(TimingWorkspace& w, cudaStream_t stream) {
  add_timed<<<current_sm_count() * 8, 256, 0, stream>>>(w.a.data(), w.b.data(), w.out.data(), w.n);
  detail::check_launch("bench timing", "add_timed");
}

TimingWorkspace& timing(Workspace& w) { return static_cast<TimingWorkspace&>(w); }

// Record, launch, record, wait for the stop event, read: the rung's own measurement of the kernel.
void time_with_events(TimingWorkspace& w, cudaStream_t stream) {
  ROOFLAB_CUDA("bench timing", "recording the start event", cudaEventRecord(w.start, stream));
  launch_add(w, stream);
  ROOFLAB_CUDA("bench timing", "recording the stop event", cudaEventRecord(w.stop, stream));
  ROOFLAB_CUDA("bench timing", "waiting for the stop event", cudaEventSynchronize(w.stop));
  float ms = 0;
  ROOFLAB_CUDA("bench timing", "reading the time between the events",
               cudaEventElapsedTime(&ms, w.start, w.stop));
  w.self_ms.push_back(ms);
}

// Rung 1 — events, synchronized: record, launch, record, cudaEventSynchronize(stop), then read.
// The events are timestamps on the GPU's own timeline; waiting for the stop event makes the
// interval complete before it is read. This is what the harness does for every row.
ROOFLAB_VARIANT(Variant{
    "timing",
    1,
    "events-synchronized",
    "record, launch, record, synchronize on stop, read: right",
    Where::gpu,
    false,
    no_limit,
    on<TimingWorkspace>(time_with_events),
    {},
    [](Workspace& w) {
      return timing(w).self_report(
          "GPU timestamps, read after the stop event completed: the kernel's time");
    }});

// Rung 2 — events, read without synchronizing (the lecture's "you get 0").
// The launch and both records return at once; the stop event has not happened yet when its time
// is asked for, so cudaEventElapsedTime answers cudaErrorNotReady and leaves the result untouched.
ROOFLAB_VARIANT(Variant{"timing",
                        2,
                        "events-unsynchronized",
                        "record, launch, record, read at once: 0 ms (not ready)",
                        Where::gpu,
                        false,
                        no_limit,
                        on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t stream) {
                          record_add(w, stream, "bench timing");
                          read_events_without_waiting(w, "bench timing");
                        }),
                        {},
                        [](Workspace& w) {
                          return timing(w).self_report(
                              "read before the stop event completed: nothing to read yet");
                        }});

// Rung 3 — a host clock around the launch and cudaStreamSynchronize.
// Right to within the launch latency and the host's wake-up after the synchronize (microseconds):
// fine for long kernels, misleading for short ones.
ROOFLAB_VARIANT(Variant{
    "timing",
    3,
    "host-clock-synchronized",
    "host clock around launch + cudaStreamSynchronize: right, plus overhead",
    Where::gpu,
    false,
    no_limit,
    on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t stream) {
      const auto begin = host_clock::now();
      launch_add(w, stream);
      ROOFLAB_CUDA("bench timing", "waiting for the kernel", cudaStreamSynchronize(stream));
      w.self_ms.push_back(elapsed_ms(begin));
    }),
    {},
    [](Workspace& w) {
      return timing(w).self_report(
          "the host waited for the GPU: right, plus launch and wake-up latency");
    }});

// Rung 4 — a host clock around the launch alone.
// A launch only queues the kernel and returns: the host clock measures the queueing, a few
// microseconds, however long the kernel then runs.
ROOFLAB_VARIANT(Variant{
    "timing",
    4,
    "host-clock-unsynchronized",
    "host clock around the launch alone: times only the launch",
    Where::gpu,
    false,
    no_limit,
    on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t stream) {
      const auto begin = host_clock::now();
      launch_add(w, stream);
      w.self_ms.push_back(elapsed_ms(begin));
    }),
    {},
    [](Workspace& w) {
      return timing(w).self_report(
          "a launch is asynchronous: without a synchronize, only the launch is timed");
    }});

// Rungs 5 and 6 — events around the kernel after the rung's own L2 flush, by writing, then by
// reading, twice the L2 size. Both evict the inputs; the write leaves L2 full of dirty lines, and
// the kernel that comes next pays for writing them back (up to the L2's size of extra write
// traffic), so memset-based flushes overstate the time of every op they precede. The harness
// flushes by reading.
void time_after_flush(TimingWorkspace& w, cudaStream_t stream, bool by_writing) {
  if (by_writing)
    w.flush.by_writing(stream);
  else
    w.flush(stream);
  time_with_events(w, stream);
}

ROOFLAB_VARIANT(Variant{
    "timing",
    5,
    "after-write-flush",
    "events after an L2 flush by memset: pays the dirty lines' write-back",
    Where::gpu,
    false,
    no_limit,
    on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t stream) {
      time_after_flush(w, stream, true);
    }),
    {},
    [](Workspace& w) {
      return timing(w).self_report(
          "the memset left L2 dirty: the kernel wrote those lines back in its own time");
    }});

ROOFLAB_VARIANT(Variant{
    "timing",
    6,
    "after-read-flush",
    "events after an L2 flush by reading: clean cache, the kernel's own time",
    Where::gpu,
    false,
    no_limit,
    on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t stream) {
      time_after_flush(w, stream, false);
    }),
    {},
    [](Workspace& w) {
      return timing(w).self_report(
          "the read left L2 clean: nothing of the inputs cached, nothing to write back");
    }});

}  // namespace
void record_add(TimingWorkspace& w, cudaStream_t stream, const char* op) {
  ROOFLAB_CUDA(op, "recording the start event", cudaEventRecord(w.start, stream));
  launch_add(w, stream);
  ROOFLAB_CUDA(op, "recording the stop event", cudaEventRecord(w.stop, stream));
}

void read_events_without_waiting(TimingWorkspace& w, const char* op) {
  float ms = 0;
  const cudaError_t status = cudaEventElapsedTime(&ms, w.start, w.stop);
  if (status == cudaErrorNotReady) {
    ++w.not_ready;
    // The refusal is the rung's lesson, not a failure: consume it if the runtime kept it as the
    // last error, so that the next launch check does not report it.
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  } else {
    ROOFLAB_CUDA(op, "reading the time between the events", status);
  }
  w.self_ms.push_back(ms);
}

}  // namespace rooflab::bench
