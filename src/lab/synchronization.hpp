#pragma once
// Synchronization between blocks (the limiting-factors lecture): every block sums its threads'
// values (1 to 4) in shared memory, then adds the block's total to one global counter, each rung by
// a different means: a spin lock built on atomicCAS, a compare-and-swap loop, one atomicAdd, and a
// ticket that lets the last block add up every block's partial after a memory fence. The count is
// the atomics lab's, checked exactly.
#include <cstdint>

#include "lab/atomics.hpp"

namespace rooflab::bench {

namespace sync_lab {
constexpr int block_threads = 256;
}  // namespace sync_lab

class SynchronizationWorkspace : public AtomicsWorkspace {
 public:
  explicit SynchronizationWorkspace(std::int64_t n);
  // Fresh values and a poisoned counter (AtomicsWorkspace); the lock free, the ticket at 0.
  void refill(std::uint64_t seed) override;

  unsigned blocks() const {
    return unsigned((n + sync_lab::block_threads - 1) / sync_lab::block_threads);
  }

  DeviceBuffer<unsigned> lock;                // 0: free, 1: held
  DeviceBuffer<unsigned> ticket;              // blocks that have published their partial
  DeviceBuffer<unsigned long long> partials;  // one per block, for the ticket rungs
};

}  // namespace rooflab::bench
