// The memcpy-sync ladder (the limiting-factors lecture): record start, launch the add, record
// stop, copy the sum to the host with a copy that blocks the host until it is done, and read the
// events after that copy (the lecture's program) or before it (its pitfall). The row's note says
// what the rung's events read; the harness times the whole run, copy included.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "lab/memcpy_sync.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

const char* const op = "bench memcpy-sync";

// The sum to pageable host memory, on the stream the kernel ran on: as the lecture's cudaMemcpy,
// it starts after everything queued before it (the kernel, the stop event) and returns only once
// the bytes have landed (a device-to-host copy into pageable memory always does).
void copy_sum_to_host(MemcpySyncWorkspace& w, cudaStream_t stream) {
  require(std::int64_t(w.host_out.size()) == w.n, op, "host_out", "must hold n floats (refill)");
  ROOFLAB_CUDA(op, "copying the sum to pageable host memory",
               cudaMemcpyAsync(w.host_out.data(), w.out.data(), std::size_t(w.n) * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
}

MemcpySyncWorkspace& memcpy_sync(Workspace& w) { return static_cast<MemcpySyncWorkspace&>(w); }

// Rung 1 — events read after the blocking copy (the lecture's program without its
// cudaEventSynchronize(stop), which it says can be left out, 18:58-19:12). The copy could not
// start before the kernel and the stop event were done, and the host got control back only when
// it finished: the stop event has happened, the read gives the kernel's time, and a
// cudaEventSynchronize(stop) there would return at once.
ROOFLAB_VARIANT(Variant{"memcpy-sync",
                        1,
                        "read-after-memcpy",
                        "record, launch, record, blocking copy to the host, read: right",
                        Where::gpu,
                        false,
                        no_limit,
                        on<MemcpySyncWorkspace>([](MemcpySyncWorkspace& w, cudaStream_t stream) {
                          record_add(w, stream, op);
                          copy_sum_to_host(w, stream);
                          read_events_without_waiting(w, op);
                        }),
                        {},
                        [](Workspace& w) {
                          return memcpy_sync(w).self_report(
                              "the blocking copy waited for the kernel and the stop event: the "
                              "kernel's time, no event wait needed");
                        }});

// Rung 2 — events read before the copy (the lecture's "we get zero").
// The launch and the records return at once; the kernel is still running when the interval is
// asked for, so cudaEventElapsedTime answers cudaErrorNotReady and the reading stays 0. The copy
// that follows still waits, so the sum the host receives is right: only the timing is lost.
ROOFLAB_VARIANT(Variant{"memcpy-sync",
                        2,
                        "read-before-memcpy",
                        "record, launch, record, read, then the copy: 0 ms (not ready)",
                        Where::gpu,
                        false,
                        no_limit,
                        on<MemcpySyncWorkspace>([](MemcpySyncWorkspace& w, cudaStream_t stream) {
                          record_add(w, stream, op);
                          read_events_without_waiting(w, op);
                          copy_sum_to_host(w, stream);
                        }),
                        {},
                        [](Workspace& w) {
                          return memcpy_sync(w).self_report(
                              "read while the kernel ran: nothing to read yet, although the sum "
                              "arrives");
                        }});

}  // namespace
}  // namespace rooflab::bench
