// The shared-memory ladder (the memory-basics lab, the limiting-factors lecture): the same bytes
// read from shared memory by every thread, first at full width, then one word per lane with the
// lanes 1 to 33 words apart, so that the number of lanes sharing a bank shows in the time.
#include <cstdint>

#include "lab/shared_memory.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

using shared_lab::block_threads;

unsigned blocks_for(std::int64_t threads) {
  return unsigned((threads + block_threads - 1) / block_threads);
}

// Every block copies the table into its shared memory (coalesced, 16 words a thread) first.
__device__ __forceinline__ void load_table(const std::uint32_t* __restrict__ table,
                                           std::uint32_t* shared_table) {
  for (int k = threadIdx.x; k < shared_lab::table_words; k += block_threads)
    shared_table[k] = table[k];
  __syncthreads();
}

// Every kernel adds pass & pass_mask to its addresses, and the host passes reload_mask, 0, which
// the compiler cannot know: each pass must load its words again, where it could otherwise keep the
// last pass's values (nothing is written between passes). It costs an add per pass, not per load.
constexpr int reload_mask = 0;

// Rung 1 — 16-byte loads, conflict-free: the bandwidth rung.
// Each lane reads 4 words per instruction and a warp's 32 chunks are 512 consecutive bytes, served
// in 4 passes of 128 bytes that use all 32 banks: the SM's full 128 bytes per clock, with a
// quarter of the instructions of 4-byte loads, so issue does not limit it.
__global__ void __launch_bounds__(block_threads)
    sum_shared_chunks(const std::uint32_t* __restrict__ table, std::uint32_t* __restrict__ sums,
                      std::int64_t n, int pass_mask) {
  __shared__ uint4 chunks[shared_lab::table_words / 4];
  load_table(table, reinterpret_cast<std::uint32_t*>(chunks));
  const int warp = int(threadIdx.x) / lab::warp_size;
  const int lane = int(threadIdx.x) % lab::warp_size;
  std::uint32_t sum = 0;
  for (int pass = 0; pass < shared_lab::passes; ++pass) {
#pragma unroll
    for (int v = 0; v < shared_lab::chunks_per_pass; ++v) {
      const uint4 chunk = chunks[shared_lab::vector_chunk(warp, lane, v) + (pass & pass_mask)];
      sum += chunk.x + chunk.y + chunk.z + chunk.w;
    }
  }
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) sums[i] = sum;
}

// Rungs 2-8 — 4-byte words, lane l reading word l x Stride + column.
// A bank serves one word per clock; the lanes that ask one bank for different words wait their
// turn. Stride 1 puts the 32 lanes on 32 banks; stride 2^k puts them on 32 / 2^k banks, 2^k lanes
// each (2^k passes per request, 32 at stride 32: one bank for the whole warp); stride 33, the
// padded tile's, walks the 32 banks again: conflict-free.
template <int Stride>
__global__ void __launch_bounds__(block_threads)
    sum_shared_strided(const std::uint32_t* __restrict__ table, std::uint32_t* __restrict__ sums,
                       std::int64_t n, int pass_mask) {
  __shared__ std::uint32_t words[shared_lab::table_words];
  load_table(table, words);
  const int warp = int(threadIdx.x) / lab::warp_size;
  const int lane = int(threadIdx.x) % lab::warp_size;
  std::uint32_t sum = 0;
  for (int pass = 0; pass < shared_lab::passes; ++pass) {
#pragma unroll
    for (int column = 0; column < shared_lab::words_per_pass; ++column)
      sum += words[shared_lab::strided_word(warp, lane, column, Stride) + (pass & pass_mask)];
  }
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i < n) sums[i] = sum;
}

void launch_chunks(SharedMemoryWorkspace& w, cudaStream_t stream) {
  w.stride = 0;
  sum_shared_chunks<<<blocks_for(w.n), block_threads, 0, stream>>>(w.table.data(), w.sums.data(),
                                                                   w.n, reload_mask);
  detail::check_launch("bench shared-memory", "sum_shared_chunks");
}

template <int Stride>
void launch_strided(SharedMemoryWorkspace& w, cudaStream_t stream) {
  w.stride = Stride;
  sum_shared_strided<Stride><<<blocks_for(w.n), block_threads, 0, stream>>>(
      w.table.data(), w.sums.data(), w.n, reload_mask);
  detail::check_launch("bench shared-memory", "sum_shared_strided");
}

Variant rung(int number, const char* name, const char* idea,
             void (*launch)(SharedMemoryWorkspace&, cudaStream_t)) {
  return Variant{
      "shared-memory",
      number,
      name,
      idea,
      Where::gpu,
      false,
      no_limit,
      on<SharedMemoryWorkspace>(launch),
      {},
      [](Workspace& w) { return static_cast<SharedMemoryWorkspace&>(w).ceiling_note(); }};
}

ROOFLAB_VARIANT(rung(1, "chunks-16B", "16-byte loads, 512 consecutive bytes a warp: bandwidth",
                     launch_chunks));
ROOFLAB_VARIANT(rung(2, "stride-1", "4-byte words, lanes 1 word apart: 32 banks, no conflict",
                     launch_strided<1>));
ROOFLAB_VARIANT(rung(3, "stride-2", "lanes 2 words apart: 2 lanes per bank, 2-way conflicts",
                     launch_strided<2>));
ROOFLAB_VARIANT(rung(4, "stride-4", "lanes 4 words apart: 4-way bank conflicts",
                     launch_strided<4>));
ROOFLAB_VARIANT(rung(5, "stride-8", "lanes 8 words apart: 8-way bank conflicts",
                     launch_strided<8>));
ROOFLAB_VARIANT(rung(6, "stride-16", "lanes 16 words apart: 16-way bank conflicts",
                     launch_strided<16>));
ROOFLAB_VARIANT(rung(7, "stride-32", "lanes 32 words apart: one bank, 32-way conflicts",
                     launch_strided<32>));
ROOFLAB_VARIANT(rung(8, "stride-33", "lanes 33 words apart (a padded row): conflict-free again",
                     launch_strided<33>));

}  // namespace
}  // namespace rooflab::bench
