#include "rooflab/detail/stream_scratch.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "rooflab/cuda_check.hpp"

namespace rooflab::detail {
namespace {

struct Entry {
  void* bytes = nullptr;
  std::size_t byte_capacity = 0;
  unsigned* counters = nullptr;
  std::size_t counter_capacity = 0;
};

// Keyed by device and the stream's id, which CUDA never reuses within a program (a handle can be:
// a destroyed stream's handle may come back for a new stream); the per-thread default stream
// resolves to each thread's own id.
using Key = std::pair<int, unsigned long long>;

struct Cache {
  std::mutex mutex;
  std::map<Key, Entry> entries;
  std::vector<void*> outgrown;  // kept alive for kernels queued before they were outgrown
};

Cache& cache() {
  // Never destroyed: at exit, CUDA may already be torn down when static destructors run.
  static Cache* instance = new Cache;
  return *instance;
}

// Geometric growth, so that a stream whose needs creep up reallocates only a few times.
std::size_t grown(std::size_t have, std::size_t need) { return std::max(need, 2 * have); }

}  // namespace

StreamScratch stream_scratch(std::size_t bytes, std::size_t counters, cudaStream_t stream,
                             const char* op) {
  int device = 0;
  ROOFLAB_CUDA(op, cudaGetDevice(&device));
  unsigned long long stream_id = 0;
  ROOFLAB_CUDA(op, cudaStreamGetId(stream, &stream_id));

  Cache& all = cache();
  const std::lock_guard<std::mutex> lock(all.mutex);
  Entry& entry = all.entries[Key{device, stream_id}];
  if (bytes > entry.byte_capacity) {
    const std::size_t capacity = grown(entry.byte_capacity, bytes);
    void* fresh = nullptr;
    ROOFLAB_CUDA(op, cudaMallocAsync(&fresh, capacity, stream));
    if (entry.bytes != nullptr) all.outgrown.push_back(entry.bytes);
    entry.bytes = fresh;
    entry.byte_capacity = capacity;
  }
  if (counters > entry.counter_capacity) {
    const std::size_t capacity = grown(entry.counter_capacity, counters);
    void* fresh = nullptr;
    ROOFLAB_CUDA(op, cudaMallocAsync(&fresh, capacity * sizeof(unsigned), stream));
    // Queued on the stream, so the zeros land before any kernel that is queued after this call.
    ROOFLAB_CUDA(op, cudaMemsetAsync(fresh, 0, capacity * sizeof(unsigned), stream));
    if (entry.counters != nullptr) all.outgrown.push_back(entry.counters);
    entry.counters = static_cast<unsigned*>(fresh);
    entry.counter_capacity = capacity;
  }
  return StreamScratch{entry.bytes, entry.counters};
}

}  // namespace rooflab::detail
