// The memory-latency ladder (the limiting-factors lecture, the memory-basics lab): one thread, one
// chain of dependent loads, working sets from 127 lines (15.9 KiB) to 4 x L2, each an odd number of
// lines so that a power-of-two --n never ends where it began (latency_lab::odd_lines_bytes). Each
// load's address is the value the previous load returned, so no two are in flight: the time per
// load is the latency of the level that holds the chain. The kernel reads the SM's cycle counter
// and the GPU's nanosecond timer around its timed walk; each row's note gives both per load.
#include <cstdint>

#include "lab/memory_latency.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

const char* const op = "bench memory-latency";

__device__ __forceinline__ unsigned long long global_nanoseconds() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// The clocks around a timed walk. They are read as the instructions around the walk issue: the
// start may wait out the load before the walk (the start node), the end misses the walk's last
// load; either is one load of thousands.
struct WalkClock {
  long long cycles;
  unsigned long long ns;
};

__device__ __forceinline__ WalkClock start_clock() {
  return WalkClock{clock64(), global_nanoseconds()};
}

__device__ __forceinline__ void stop_clock(const WalkClock& started, unsigned long long* clocks) {
  const long long cycles = clock64();
  const unsigned long long ns = global_nanoseconds();
  clocks[0] = static_cast<unsigned long long>(cycles - started.cycles);
  clocks[1] = ns - started.ns;
}

// Rungs 2-5 — the chain in global memory, walked with plain loads (no __restrict__: not the
// read-only path). Warm: one walk of the whole cycle first (back to its start) puts a chain that
// fits in L1 or L2 there, whatever the harness's L2 flush did. Cold chains (4 x L2) go on where
// the last run stopped: each run meets lines no recent run touched.
template <bool Warm>
__global__ void chase_global(const std::uint32_t* chain, std::uint32_t* position,
                             std::int64_t cycle_length, std::int64_t steps,
                             unsigned long long* clocks) {
  std::uint32_t node = *position;
  if (Warm)
    for (std::int64_t k = 0; k < cycle_length; ++k) node = chain[node];
  const WalkClock started = start_clock();
  for (std::int64_t k = 0; k < steps; ++k) node = chain[node];
  stop_clock(started, clocks);
  *position = node;
}

// Rung 1 — the same 127-line (15.9 KiB) chain copied into shared memory and walked there.
// A shared-memory load goes to the SM's own banks: no tag lookup, no address translation, the
// shortest trip of any memory a program names (the memory-basics lab: less latency than global).
constexpr int shared_chain_words = int(on_chip_chain_bytes / 4);

__global__ void chase_shared(const std::uint32_t* __restrict__ chain, std::uint32_t* position,
                             std::int64_t steps, unsigned long long* clocks) {
  __shared__ std::uint32_t shared_chain[shared_chain_words];
  for (int k = threadIdx.x; k < shared_chain_words; k += blockDim.x) shared_chain[k] = chain[k];
  __syncthreads();
  if (threadIdx.x != 0) return;
  std::uint32_t node = *position;
  const WalkClock started = start_clock();
  for (std::int64_t k = 0; k < steps; ++k) node = shared_chain[node];
  stop_clock(started, clocks);
  *position = node;
}

ChainShape shape_in_shared(const MemoryLatencyWorkspace&) {
  return ChainShape{on_chip_chain_bytes, 1, true, true};
}
ChainShape shape_in_l1(const MemoryLatencyWorkspace&) {
  return ChainShape{on_chip_chain_bytes, 1, true, false};
}
ChainShape shape_in_l2(const MemoryLatencyWorkspace& w) {
  return ChainShape{l2_chain_bytes(w.l2_bytes), 1, true, false};
}
ChainShape shape_in_device(const MemoryLatencyWorkspace& w) {
  return ChainShape{device_chain_bytes(w.l2_bytes), 1, false, false};
}
ChainShape shape_within_lines(const MemoryLatencyWorkspace& w) {
  return ChainShape{device_chain_bytes(w.l2_bytes), latency_lab::line_words, false, false};
}

void launch_chase(MemoryLatencyWorkspace& w, cudaStream_t stream) {
  ++w.walks;
  if (w.shape.in_shared) {
    chase_shared<<<1, 32, 0, stream>>>(w.chain.data(), w.position.data(), w.steps, w.clocks.data());
    detail::check_launch(op, "chase_shared");
  } else if (w.shape.warm) {
    chase_global<true><<<1, 1, 0, stream>>>(w.chain.data(), w.position.data(), w.cycle_length,
                                            w.steps, w.clocks.data());
    detail::check_launch(op, "chase_global");
  } else {
    chase_global<false><<<1, 1, 0, stream>>>(w.chain.data(), w.position.data(), w.cycle_length,
                                             w.steps, w.clocks.data());
    detail::check_launch(op, "chase_global");
  }
}

template <ChainShape (*Shape)(const MemoryLatencyWorkspace&)>
Variant chase_rung(int number, const char* name, const char* idea) {
  return Variant{
      "memory-latency",
      number,
      name,
      idea,
      Where::gpu,
      false,
      no_limit,
      on<MemoryLatencyWorkspace>(launch_chase),
      on<MemoryLatencyWorkspace>(
          [](MemoryLatencyWorkspace& w, cudaStream_t) { w.use_chain(Shape(w)); }),
      [](Workspace& w) { return static_cast<MemoryLatencyWorkspace&>(w).latency_note(); }};
}

ROOFLAB_VARIANT(chase_rung<shape_in_shared>(1, "shared",
                                            "15.9 KiB chain in shared memory: the SM's own banks"));

// Rung 2 — 127 lines (15.9 KiB) in global memory, one node per 128-byte line: after the warm walk,
// every load hits L1 (the chain fits every supported GPU's L1), the fastest path to global memory.
ROOFLAB_VARIANT(chase_rung<shape_in_l1>(2, "l1", "15.9 KiB chain, one node per line: L1 hits"));

// Rung 3 — min(L2 / 2, 4 MiB): past every L1, inside L2. Each load misses L1 and crosses the
// on-chip network to an L2 slice and back (on a GPU whose L2 is split in two partitions, part of
// the lines sit in the far one).
ROOFLAB_VARIANT(chase_rung<shape_in_l2>(3, "l2", "chain of min(L2/2, 4 MiB): L1 misses, L2 hits"));

// Rung 4 — 4 x L2, one node per line, cold: every load misses L1 and L2 and goes to device
// memory. At this size some loads also miss the TLBs; the time includes those page-table walks.
ROOFLAB_VARIANT(chase_rung<shape_in_device>(
    4, "device", "chain of 4 x L2, one node per line: device-memory latency"));

// Rung 5 — the same lines, but the chain visits all 32 words of a line in order before it jumps.
// L1 fills 32-byte sectors: only a load that opens a new sector (1 in 8) misses it, and that one
// may find its sector in L2 if the line's first miss brought more than a sector from device
// memory. Against rung 4 it shows the unit of transfer: a whole sector arrives for one word.
ROOFLAB_VARIANT(chase_rung<shape_within_lines>(
    5, "device-within-line", "32 nodes per 128-byte line in order: 1 load in 8 opens a sector"));

}  // namespace
}  // namespace rooflab::bench
