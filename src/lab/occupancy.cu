// The occupancy ladder (the limiting-factors lecture): one kernel, every block size, then its
// registers capped until they spill. Each rung's note shows what the compiler and the occupancy
// calculator say.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>

#include "lab/occupancy.hpp"
#include "lab/patterns.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t tile_elements = std::int64_t(lab::tile_rows) * lab::warp_size;

// One warp per 32 x 32 tile: lane l loads column l (each row a coalesced 128-byte load), smooths
// it in registers for `passes` passes and stores it. All 32 values are live through the pass loop,
// so the kernel wants 32 registers for data alone plus addresses and temporaries; the loop is
// where a spilled value costs a local-memory load and store on every pass.
template <int Block>
__device__ __forceinline__ void smooth_tile_column(const float* __restrict__ in,
                                                   float* __restrict__ out, std::int64_t n,
                                                   int passes) {
  const std::int64_t warp = (std::int64_t(blockIdx.x) * Block + threadIdx.x) / lab::warp_size;
  const std::int64_t first = warp * tile_elements + threadIdx.x % lab::warp_size;
  float x[lab::tile_rows];
#pragma unroll
  for (int k = 0; k < lab::tile_rows; ++k) {
    const std::int64_t i = first + k * lab::warp_size;
    x[k] = i < n ? in[i] : 0.0f;
  }
  lab::smooth_column(x, passes);
#pragma unroll
  for (int k = 0; k < lab::tile_rows; ++k) {
    const std::int64_t i = first + k * lab::warp_size;
    if (i < n) out[i] = x[k];
  }
}

// __launch_bounds__(Block, MinBlocks): the compiler must fit MinBlocks blocks of Block threads on
// an SM, so it may use at most 65536 / (Block x MinBlocks) registers per thread.
template <int Block, int MinBlocks>
__global__ void __launch_bounds__(Block, MinBlocks)
    smooth_tiles_bounded(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                         int passes) {
  smooth_tile_column<Block>(in, out, n, passes);
}

// __maxnreg__(Registers): the per-kernel form of nvcc's -maxrregcount.
template <int Block, int Registers>
__global__ void __launch_bounds__(Block) __maxnreg__(Registers)
    smooth_tiles_capped(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                        int passes) {
  smooth_tile_column<Block>(in, out, n, passes);
}

using SmoothKernel = void (*)(const float*, float*, std::int64_t, int);

LaunchFacts facts_of(SmoothKernel kernel, int block_threads) {
  const char* op = "bench occupancy";
  LaunchFacts facts;
  facts.block_threads = block_threads;
  cudaFuncAttributes attributes{};
  ROOFLAB_CUDA(op, "reading the kernel's attributes",
               cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  facts.registers = attributes.numRegs;
  facts.local_bytes = attributes.localSizeBytes;
  ROOFLAB_CUDA(op, "asking how many blocks of the kernel fit on an SM",
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(&facts.blocks_per_sm, kernel,
                                                             block_threads, 0));
  int device = 0, threads_per_sm = 0;
  ROOFLAB_CUDA(op, "finding the current device", cudaGetDevice(&device));
  ROOFLAB_CUDA(
      op, "reading the threads an SM holds",
      cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  facts.occupancy = double(facts.blocks_per_sm) * block_threads / threads_per_sm;
  return facts;
}

template <SmoothKernel Kernel, int Block>
LaunchFacts smooth_facts() {
  return facts_of(Kernel, Block);
}

template <SmoothKernel Kernel, int Block>
void launch_smooth(OccupancyWorkspace& w, cudaStream_t stream) {
  const std::int64_t threads = (w.n + tile_elements - 1) / tile_elements * lab::warp_size;
  const auto blocks = unsigned((threads + Block - 1) / Block);
  Kernel<<<blocks, Block, 0, stream>>>(w.in.data(), w.out.data(), w.n, w.passes);
  detail::check_launch("bench occupancy", "smooth_tiles");
}

std::map<std::string, LaunchFacts (*)()>& facts_by_rung() {
  static std::map<std::string, LaunchFacts (*)()> table;
  return table;
}

template <SmoothKernel Kernel, int Block>
Variant smooth_rung(int number, const char* name, const char* idea) {
  facts_by_rung()[name] = &smooth_facts<Kernel, Block>;
  return Variant{"occupancy", number,
                 name,        idea,
                 Where::gpu,  false,
                 no_limit,    on<OccupancyWorkspace>(launch_smooth<Kernel, Block>),
                 {},          [](Workspace&) { return describe(smooth_facts<Kernel, Block>()); }};
}

// Rungs 1-6 — the block size, 32 to 1024 threads, registers left to the compiler.
// An SM holds at most 32 blocks, 2048 threads and 65536 registers: blocks of 32 threads stop at
// 32 x 32 = 1024 threads (or fewer, at this kernel's register count); larger blocks are limited
// by registers. A block of 1024 must fit in 65536 registers, so __launch_bounds__(1024) holds
// the compiler to 64 per thread. More warps per SM hide more latency, until something else
// (here, the add-and-halve chain's own parallelism) is the limit.
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<32, 1>, 32>(
    1, "block-32", "32 threads per block: the 32-blocks-per-SM limit caps occupancy")));
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<64, 1>, 64>(2, "block-64",
                                                              "64 threads per block")));
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<128, 1>, 128>(3, "block-128",
                                                                "128 threads per block")));
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<256, 1>, 256>(
    4, "block-256", "256 threads per block, registers as the compiler likes")));
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<512, 1>, 512>(5, "block-512",
                                                                "512 threads per block")));
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<1024, 1>, 1024>(
    6, "block-1024", "1024 threads per block: at most 64 registers each")));

// Rung 7 — 32 registers, via __launch_bounds__(256, 8).
// Eight blocks of 256 on one SM leave 32 registers per thread: 100% occupancy, but the 32 live
// values no longer fit, and the compiler spills some to local memory (ptxas -v: "bytes spill
// stores"; the note: local bytes). Each spilled value now costs a store and a load per pass.
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_bounded<256, 8>, 256>(
    7, "block-256-regs-32", "__launch_bounds__(256, 8): 32 registers, spills for 100% occupancy")));

// Rung 8 — 24 registers, via __maxnreg__(24) (per-kernel -maxrregcount).
// Most of the tile now lives in local memory: a few hundred bytes per thread, more than L1 holds
// for 2048 threads, so the spills travel to L2 on every pass. Occupancy is no substitute for
// registers: the fastest rung is the one that keeps its working set in them.
ROOFLAB_VARIANT((smooth_rung<smooth_tiles_capped<256, 24>, 256>(
    8, "block-256-regs-24", "__maxnreg__(24): most of the tile spilled to local memory")));

}  // namespace

LaunchFacts occupancy_launch_facts(const std::string& rung) {
  const auto found = facts_by_rung().find(rung);
  if (found == facts_by_rung().end())
    throw Error("bench occupancy", "rung", "'" + rung + "' is not an occupancy rung");
  return found->second();
}

}  // namespace rooflab::bench
