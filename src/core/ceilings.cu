// The bandwidth ceilings every memory-bound table is compared against, and the launch floor.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/device_info.hpp"
#include "core/event_timer.hpp"
#include "core/pinned_buffer.hpp"
#include "core/stream_read.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab {
namespace {

__global__ void empty_kernel() {}

// The median over `reps` timed launches after a warm-up; `before` queues untimed work ahead of
// each start event.
template <class Launch, class Before>
double median_ms(Launch&& launch, int reps, Before&& before) {
  EventTimer timer;
  launch();  // warm-up
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    before();
    timer.start(nullptr);
    launch();
    timer.stop(nullptr);
    times.push_back(timer.elapsed_ms());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

}  // namespace

MeasuredCeilings measure_ceilings(const DeviceInfo& device) {
  const char* op = "measure_ceilings";
  std::size_t free_bytes = 0, total_bytes = 0;
  ROOFLAB_CUDA(op, "asking how much device memory is free",
               cudaMemGetInfo(&free_bytes, &total_bytes));
  // 1 GiB per buffer is ~20x the L2 of current GPUs; shrink on small cards.
  std::size_t bytes = std::min<std::size_t>(std::size_t(1) << 30, free_bytes / 4);
  bytes = std::max<std::size_t>(bytes / 16 * 16, std::size_t(device.l2_bytes) * 4);

  DeviceBuffer<unsigned char> source(bytes), destination(bytes);
  DeviceBuffer<unsigned> sink(1);
  source.fill_bytes(0x5A);
  constexpr int reps = 15;

  MeasuredCeilings ceilings;
  ceilings.buffer_bytes = bytes;
  const double copy_ms = median_ms(
      [&] {
        ROOFLAB_CUDA(op, "copying " + detail::describe_bytes(bytes) + " within the device",
                     cudaMemcpyAsync(destination.data(), source.data(), bytes,
                                     cudaMemcpyDeviceToDevice, nullptr));
      },
      reps, [] {});
  ceilings.copy_bandwidth = 2.0 * bytes / (copy_ms * 1e-3);

  const double read_ms =
      median_ms([&] { stream_read(source.data(), bytes, sink.data(), nullptr); }, reps, [] {});
  ceilings.read_bandwidth = bytes / (read_ms * 1e-3);

  // Behind a read of the source, as a rung is behind the L2 flush: the GPU is busy when the start
  // event is queued, so what gets timed is the launch, not the host's queueing of it.
  const double launch_ms = median_ms(
      [&] {
        empty_kernel<<<1, 32>>>();
        detail::check_launch(op, "empty_kernel");
      },
      reps, [&] { stream_read(source.data(), bytes, sink.data(), nullptr); });
  ceilings.launch_seconds = launch_ms * 1e-3;

  // 64 MiB per copy is far past the size where the host link's per-copy latency stops mattering
  // (the transfer lab sweeps 1 MiB to 1 GiB) and keeps the pinning cheap.
  const std::size_t host_bytes = std::min<std::size_t>(std::size_t(64) << 20, bytes);
  PinnedBuffer<unsigned char> pinned(host_bytes);
  std::fill(pinned.data(), pinned.data() + host_bytes, 0x5A);
  const double host_ms = median_ms(
      [&] {
        ROOFLAB_CUDA(op,
                     "copying " + detail::describe_bytes(host_bytes) + " from pinned host memory",
                     cudaMemcpyAsync(destination.data(), pinned.data(), host_bytes,
                                     cudaMemcpyHostToDevice, nullptr));
      },
      reps, [] {});
  ceilings.host_buffer_bytes = host_bytes;
  ceilings.host_to_device_bandwidth = host_bytes / (host_ms * 1e-3);
  return ceilings;
}

}  // namespace rooflab
