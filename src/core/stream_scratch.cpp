#include "rooflab/detail/stream_scratch.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "rooflab/cuda_check.hpp"

namespace rooflab::detail {
namespace {

struct Slot {
  // The stream whose scratch this is: its id, which CUDA never reuses within a program (a handle
  // can be: a destroyed stream's handle may come back for a new stream); the per-thread default
  // stream resolves to each thread's own id.
  unsigned long long stream_id = 0;
  void* bytes = nullptr;
  std::size_t byte_capacity = 0;
  unsigned* counters = nullptr;
  std::size_t counter_capacity = 0;
  // Buffers replaced by larger ones while another call held the slot (that call's kernels are not
  // queued yet); freed, stream-ordered, by the next call that finds the slot free.
  std::vector<void*> outgrown;
  cudaEvent_t last_use = nullptr;  // recorded after the kernels of every call that held the slot
  std::uint64_t used_at = 0;       // when a call last took it (least recently used goes first)
  int leases = 0;                  // calls that took the slot and have not queued their kernels yet
};

struct Cache {
  std::mutex mutex;
  std::map<int, std::vector<Slot>> devices;
  std::uint64_t clock = 0;
};

Cache& cache() {
  // Never destroyed: at exit, CUDA may already be torn down when static destructors run.
  static Cache* instance = new Cache;
  return *instance;
}

// Geometric growth, so that a stream whose needs creep up reallocates only a few times.
std::size_t grown(std::size_t have, std::size_t need) { return std::max(need, 2 * have); }

// The slot of `stream_id` among a device's slots: its own, a new one while there are fewer than
// stream_scratch_slots, else the least recently used one that no call holds, with `stream`
// ordered behind that slot's last use first. -1 when every slot is held by a call in progress.
int take_slot(std::vector<Slot>& slots, unsigned long long stream_id, cudaStream_t stream,
              const char* op) {
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].stream_id == stream_id) return int(i);
  if (slots.size() < stream_scratch_slots) {
    Slot slot;
    slot.stream_id = stream_id;
    ROOFLAB_CUDA(op, "creating the event of a scratch slot",
                 cudaEventCreateWithFlags(&slot.last_use, cudaEventDisableTiming));
    slots.push_back(slot);
    return int(slots.size() - 1);
  }
  int oldest = -1;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].leases == 0 && (oldest < 0 || slots[i].used_at < slots[oldest].used_at))
      oldest = int(i);
  if (oldest < 0) return -1;
  ROOFLAB_CUDA(op, "ordering the stream after the last use of the scratch it takes over",
               cudaStreamWaitEvent(stream, slots[oldest].last_use, 0));
  slots[oldest].stream_id = stream_id;
  return oldest;
}

}  // namespace

StreamScratch::StreamScratch(std::size_t bytes, std::size_t counters, cudaStream_t stream,
                             const char* op)
    : stream_(stream) {
  if (bytes == 0 && counters == 0) return;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ROOFLAB_CUDA(op, "asking whether the stream is capturing",
               cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device_));
    unsigned long long stream_id = 0;
    ROOFLAB_CUDA(op, "reading the stream's id", cudaStreamGetId(stream, &stream_id));
    Cache& all = cache();
    const std::lock_guard<std::mutex> lock(all.mutex);
    std::vector<Slot>& slots = all.devices[device_];
    const int taken = take_slot(slots, stream_id, stream, op);
    if (taken >= 0) {
      Slot& slot = slots[std::size_t(taken)];
      if (slot.leases == 0) {
        // Every kernel that used these was queued on this stream, or on the slot's previous
        // stream, which this one now waits for: a stream-ordered free comes after them all.
        for (void* old : slot.outgrown)
          ROOFLAB_CUDA(op, "freeing outgrown scratch", cudaFreeAsync(old, stream));
        slot.outgrown.clear();
      }
      if (bytes > slot.byte_capacity) {
        const std::size_t capacity = grown(slot.byte_capacity, bytes);
        void* fresh = nullptr;
        ROOFLAB_CUDA(op, "allocating " + describe_bytes(capacity) + " of scratch",
                     cudaMallocAsync(&fresh, capacity, stream));
        if (slot.bytes != nullptr) slot.outgrown.push_back(slot.bytes);
        slot.bytes = fresh;
        slot.byte_capacity = capacity;
      }
      if (counters > slot.counter_capacity) {
        const std::size_t capacity = grown(slot.counter_capacity, counters);
        void* fresh = nullptr;
        ROOFLAB_CUDA(op, "allocating " + std::to_string(capacity) + " scratch counters",
                     cudaMallocAsync(&fresh, capacity * sizeof(unsigned), stream));
        // Queued on the stream, so the zeros land before any kernel queued after this call.
        ROOFLAB_CUDA(op, "zeroing " + std::to_string(capacity) + " scratch counters",
                     cudaMemsetAsync(fresh, 0, capacity * sizeof(unsigned), stream));
        if (slot.counters != nullptr) slot.outgrown.push_back(slot.counters);
        slot.counters = static_cast<unsigned*>(fresh);
        slot.counter_capacity = capacity;
      }
      ++slot.leases;
      slot.used_at = ++all.clock;
      slot_ = taken;
      bytes_ = slot.bytes;
      counters_ = slot.counters;
      return;
    }
  }
  // Inside a stream capture (the graph then owns allocation and memset nodes, valid for every
  // launch of the graph), or with every slot held by calls in progress on other threads: scratch
  // of this call's own, released stream-ordered after its kernels.
  const std::size_t counters_at = (bytes + 255) / 256 * 256;
  own_ = std::make_unique<StreamBuffer>(counters_at + counters * sizeof(unsigned), stream, op);
  bytes_ = own_->data();
  counters_ = reinterpret_cast<unsigned*>(static_cast<char*>(own_->data()) + counters_at);
  if (counters > 0)
    ROOFLAB_CUDA(op, "zeroing " + std::to_string(counters) + " scratch counters",
                 cudaMemsetAsync(counters_, 0, counters * sizeof(unsigned), stream));
}

StreamScratch::~StreamScratch() {
  if (slot_ < 0) return;
  Cache& all = cache();
  const std::lock_guard<std::mutex> lock(all.mutex);
  Slot& slot = all.devices[device_][std::size_t(slot_)];
  // Recorded after this call's kernels, which are queued by now. No throwing from a destructor:
  // an error here is the context's sticky error, which the caller's next CUDA call reports.
  cudaEventRecord(slot.last_use, stream_);
  --slot.leases;
}

std::size_t stream_scratch_slots_in_use() {
  int device = 0;
  ROOFLAB_CUDA("stream_scratch_slots_in_use", "finding the current device", cudaGetDevice(&device));
  Cache& all = cache();
  const std::lock_guard<std::mutex> lock(all.mutex);
  return all.devices[device].size();
}

}  // namespace rooflab::detail
