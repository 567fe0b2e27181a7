// The timing op: problem, workspace and the CPU rung. GPU rungs are in timing.cu.
#include "lab/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/device_info.hpp"
#include "cpu/add.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

TimingWorkspace::TimingWorkspace(std::int64_t n)
    : AddWorkspace(n), flush(std::size_t(current_l2_bytes())) {
  ROOFLAB_CUDA("bench timing", "creating the start event", cudaEventCreate(&start));
  const cudaError_t status = cudaEventCreate(&stop);
  if (status != cudaSuccess) cudaEventDestroy(start);
  ROOFLAB_CUDA("bench timing", "creating the stop event", status);
}

TimingWorkspace::~TimingWorkspace() {
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void TimingWorkspace::refill(std::uint64_t seed) {
  AddWorkspace::refill(seed);
  self_ms.clear();
  not_ready = 0;
}

std::string TimingWorkspace::self_report(const std::string& lesson) const {
  if (self_ms.empty()) return lesson;
  std::vector<double> sorted = self_ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::string refused;
  if (not_ready > 0)
    refused = fmt::format(", cudaEventElapsedTime said cudaErrorNotReady {} of {} times", not_ready,
                          self_ms.size());
  return fmt::format("its own clock read {:.4f} ms (median of {}{}): {}", median, self_ms.size(),
                     refused, lesson);
}

namespace {

ROOFLAB_OP(vector_add_op<TimingWorkspace>(
    "timing",
    "The limiting-factors lecture's timing pitfalls: one add kernel timed by "
    "its events, right and wrong, and by host clocks and after L2 flushes beside them (rooflab's "
    "additions)",
    25, 22));

// Rung 0 — the CPU loop, timed by a host clock around it: right, because CPU work is synchronous.
ROOFLAB_VARIANT(
    cpu_host_clock_rung("timing", "a host clock around CPU work: right, the work is synchronous"));

}  // namespace

Variant cpu_host_clock_rung(const std::string& op, const std::string& idea) {
  return Variant{op,
                 0,
                 "cpu-host-clock",
                 idea,
                 Where::cpu,
                 false,
                 no_limit,
                 on<TimingWorkspace>([](TimingWorkspace& w, cudaStream_t) {
                   w.prepare_host();
                   const auto begin = std::chrono::steady_clock::now();
                   cpu::add_serial(w.host_a.data(), w.host_b.data(), w.host_out.data(), w.n);
                   w.self_ms.push_back(std::chrono::duration<double, std::milli>(
                                           std::chrono::steady_clock::now() - begin)
                                           .count());
                 }),
                 {},
                 [](Workspace& w) {
                   return static_cast<TimingWorkspace&>(w).self_report(
                       "CPU work is synchronous: a host clock times it");
                 }};
}

}  // namespace rooflab::bench
