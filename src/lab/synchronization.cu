// The synchronization ladder (the limiting-factors lecture names a lock, compare-and-swap, exchange
// and the fences; the last-block ticket is rooflab's): blocks cannot wait for each other, so a
// result shared between them is guarded by a lock, updated by an atomic, or gathered by the last
// block to finish, which a memory fence makes safe. Every rung sums the same values per block in
// shared memory first; they differ only in how the block totals meet.
#include <cstdint>

#include "lab/synchronization.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

using sync_lab::block_threads;
const char* const op = "bench synchronization";

// The block's total, in every thread: shared-memory atomics (the atomics lab's rung 4), which
// resolve inside the SM.
__device__ __forceinline__ unsigned block_total(const std::uint32_t* __restrict__ values,
                                                std::int64_t n) {
  __shared__ unsigned total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) atomicAdd(&total, values[i]);
  __syncthreads();
  return total;
}

// Rung 1 — a spin lock: thread 0 of each block takes the lock with atomicCAS(0 -> 1), adds its
// total with a plain read and write, and frees the lock with atomicExch. Holders follow one
// another: each handoff is several round trips to L2 (the winning CAS, the read, the write, the
// fence, the release) while the other blocks' CAS attempts queue at the same address.
__global__ void add_under_lock(const std::uint32_t* __restrict__ values, std::int64_t n,
                               unsigned long long* counter, unsigned* lock) {
  const unsigned total = block_total(values, n);
  if (threadIdx.x != 0) return;
  while (atomicCAS(lock, 0u, 1u) != 0u) {
  }
  __threadfence();  // the counter is read only once the lock is held
  volatile unsigned long long* guarded = counter;
  *guarded = *guarded + total;
  __threadfence();  // the new count is visible to every SM before the lock is released
  atomicExch(lock, 0u);
}

// Rung 2 — lock-free: a compare-and-swap loop (the way to build any atomic operation from CAS).
// A block reads the counter and swaps in counter + total if nobody changed it meanwhile, or
// retries with the value it found. No block waits for another to release anything, but a busy
// counter costs retries.
__global__ void add_by_cas_loop(const std::uint32_t* __restrict__ values, std::int64_t n,
                                unsigned long long* counter) {
  const unsigned total = block_total(values, n);
  if (threadIdx.x != 0 || total == 0) return;
  unsigned long long seen = *static_cast<volatile unsigned long long*>(counter);
  unsigned long long assumed;
  do {
    assumed = seen;
    seen = atomicCAS(counter, assumed, assumed + total);
  } while (seen != assumed);
}

// Rung 3 — one atomicAdd per block: the L2 slice that owns the counter applies the additions in
// turn, one round trip per block and no retries.
__global__ void add_by_atomic(const std::uint32_t* __restrict__ values, std::int64_t n,
                              unsigned long long* counter) {
  const unsigned total = block_total(values, n);
  if (threadIdx.x == 0 && total != 0) atomicAdd(counter, static_cast<unsigned long long>(total));
}

// Rungs 4 and 5 — a ticket: each block writes its total to partials[block], fences, then takes a
// ticket (atomicAdd); the block with the last ticket sums the partials. Without the fence the
// ticket could be seen before the partial. __threadfence orders the two for the GPU;
// __threadfence_system for the host and peer devices too: a longer wait for the same guarantee.
template <bool SystemFence>
__global__ void add_by_last_block(const std::uint32_t* __restrict__ values, std::int64_t n,
                                  unsigned long long* counter, unsigned long long* partials,
                                  unsigned* ticket) {
  const unsigned total = block_total(values, n);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
    if (SystemFence)
      __threadfence_system();
    else
      __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;  // the same for the whole block: no thread skips the barrier below
  __shared__ unsigned long long grand_total;
  if (threadIdx.x == 0) grand_total = 0;
  __syncthreads();
  unsigned long long sum = 0;
  for (unsigned k = threadIdx.x; k < gridDim.x; k += block_threads)
    sum += __ldcg(&partials[k]);  // from L2: this SM's L1 may not see other SMs' writes
  atomicAdd(&grand_total, sum);
  __syncthreads();
  if (threadIdx.x == 0) *counter = grand_total;
}

// Each run starts from a zero counter, a free lock and ticket 0 (the lock is free after every run
// that finished; zeroing it too keeps a failed run from blocking the next).
void reset(SynchronizationWorkspace& w, cudaStream_t stream) {
  ROOFLAB_CUDA(op, "zeroing the counter",
               cudaMemsetAsync(w.counter.data(), 0, sizeof(unsigned long long), stream));
  ROOFLAB_CUDA(op, "freeing the lock", cudaMemsetAsync(w.lock.data(), 0, sizeof(unsigned), stream));
  ROOFLAB_CUDA(op, "zeroing the ticket",
               cudaMemsetAsync(w.ticket.data(), 0, sizeof(unsigned), stream));
}

void launch_lock(SynchronizationWorkspace& w, cudaStream_t stream) {
  reset(w, stream);
  add_under_lock<<<w.blocks(), block_threads, 0, stream>>>(w.values.data(), w.n, w.counter.data(),
                                                           w.lock.data());
  detail::check_launch(op, "add_under_lock");
}

void launch_cas_loop(SynchronizationWorkspace& w, cudaStream_t stream) {
  reset(w, stream);
  add_by_cas_loop<<<w.blocks(), block_threads, 0, stream>>>(w.values.data(), w.n, w.counter.data());
  detail::check_launch(op, "add_by_cas_loop");
}

void launch_atomic(SynchronizationWorkspace& w, cudaStream_t stream) {
  reset(w, stream);
  add_by_atomic<<<w.blocks(), block_threads, 0, stream>>>(w.values.data(), w.n, w.counter.data());
  detail::check_launch(op, "add_by_atomic");
}

template <bool SystemFence>
void launch_ticket(SynchronizationWorkspace& w, cudaStream_t stream) {
  reset(w, stream);
  add_by_last_block<SystemFence><<<w.blocks(), block_threads, 0, stream>>>(
      w.values.data(), w.n, w.counter.data(), w.partials.data(), w.ticket.data());
  detail::check_launch(op, "add_by_last_block");
}

ROOFLAB_VARIANT(Variant{
    "synchronization", 1, "cas-lock",
    "a spin lock (atomicCAS, atomicExch) around counter += block total", Where::gpu, false,
    at_most_n(std::int64_t(1) << 24,
              "one lock handoff per block: 65536 handoffs are plenty to show their cost"),
    on<SynchronizationWorkspace>(launch_lock)});
ROOFLAB_VARIANT(Variant{"synchronization", 2, "cas-loop",
                        "lock-free: atomicCAS(counter, seen, seen + total) until it takes",
                        Where::gpu, false, no_limit,
                        on<SynchronizationWorkspace>(launch_cas_loop)});
ROOFLAB_VARIANT(Variant{"synchronization", 3, "atomic-add",
                        "one atomicAdd per block: no lock, no retries", Where::gpu, false, no_limit,
                        on<SynchronizationWorkspace>(launch_atomic)});
ROOFLAB_VARIANT(Variant{"synchronization", 4, "ticket-fence",
                        "partial, __threadfence, ticket: the last block adds the partials",
                        Where::gpu, false, no_limit,
                        on<SynchronizationWorkspace>(launch_ticket<false>)});
ROOFLAB_VARIANT(Variant{"synchronization", 5, "ticket-fence-system",
                        "the same with __threadfence_system: ordered for the host too", Where::gpu,
                        false, no_limit, on<SynchronizationWorkspace>(launch_ticket<true>)});

}  // namespace
}  // namespace rooflab::bench
