// The constant-memory ladder (the memory-basics lab, the limiting-factors lecture): the same sums
// of the same table, read from global or from __constant__ memory, one word per warp or 32.
#include <cstdint>
#include <string>
#include <vector>

#include "lab/constant_memory.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

namespace {

__constant__ std::uint32_t constant_table[constant_lab::table_words];

constexpr int block_threads = 256;

unsigned blocks_for(std::int64_t threads) {
  return unsigned((threads + block_threads - 1) / block_threads);
}

// Rungs 1 and 4 — the table in global memory (Constant false).
// The loads go through L1 (the table, 1 KiB, stays there after the first warps). A warp whose
// lanes all name one word is served by one sector, the word handed to every lane; 32 consecutive
// words are one 128-byte line, 4 sectors, one request: global memory serves both patterns in one
// pass.
// Rungs 2 and 3 — the table in __constant__ memory (Constant true).
// The constant cache answers one address per request and broadcasts it to every lane that asked
// for it: a warp naming one word costs one access (rung 2), a warp naming 32 different words is
// split into 32 accesses, one after another (rung 3). Constant memory suits values every lane of a
// warp reads at once: coefficients, sizes, a filter's taps.
template <bool Constant, bool Divergent>
__global__ void sum_table(const std::uint32_t* __restrict__ table, std::uint32_t* __restrict__ sums,
                          std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * block_threads + threadIdx.x;
  if (i >= n) return;
  const std::int64_t warp = i / lab::warp_size;
  const int lane = int(i % lab::warp_size);
  std::uint32_t sum = 0;
#pragma unroll 4
  for (int r = 0; r < constant_lab::reads_per_thread; ++r) {
    const int word = constant_lab::table_word(warp, r, lane, Divergent);
    if constexpr (Constant)
      sum += constant_table[word];
    else
      sum += table[word];
  }
  sums[i] = sum;
}

template <bool Divergent>
void launch_global(ConstantMemoryWorkspace& w, cudaStream_t stream) {
  w.divergent = Divergent;
  sum_table<false, Divergent>
      <<<blocks_for(w.n), block_threads, 0, stream>>>(w.table.data(), w.sums.data(), w.n);
  detail::check_launch("bench constant-memory", "sum_table (global)");
}

template <bool Divergent>
void launch_constant(ConstantMemoryWorkspace& w, cudaStream_t stream) {
  w.divergent = Divergent;
  sum_table<true, Divergent>
      <<<blocks_for(w.n), block_threads, 0, stream>>>(nullptr, w.sums.data(), w.n);
  detail::check_launch("bench constant-memory", "sum_table (constant)");
}

Variant rung(int number, const char* name, const char* idea,
             void (*launch)(ConstantMemoryWorkspace&, cudaStream_t)) {
  return Variant{"constant-memory", number, name,     idea,
                 Where::gpu,        false,  no_limit, on<ConstantMemoryWorkspace>(launch)};
}

ROOFLAB_VARIANT(rung(1, "global-broadcast",
                     "global memory, every lane of a warp reads one word: one sector per step",
                     launch_global<false>));
ROOFLAB_VARIANT(rung(2, "constant-broadcast",
                     "__constant__, every lane reads one word: one access, broadcast (vs prev)",
                     launch_constant<false>));
ROOFLAB_VARIANT(rung(3, "constant-divergent",
                     "__constant__, 32 lanes read 32 words: 32 accesses in turn (vs prev)",
                     launch_constant<true>));
ROOFLAB_VARIANT(rung(4, "global-divergent",
                     "global memory, 32 lanes read 32 consecutive words: one coalesced line",
                     launch_global<true>));

}  // namespace

void upload_constant_table(const std::vector<std::uint32_t>& words) {
  require(words.size() == std::size_t(constant_lab::table_words), "bench constant-memory", "table",
          "must hold " + std::to_string(constant_lab::table_words) + " words");
  ROOFLAB_CUDA("bench constant-memory", "copying the table to constant memory",
               cudaMemcpyToSymbol(constant_table, words.data(), words.size() * sizeof(words[0])));
}

}  // namespace rooflab::bench
