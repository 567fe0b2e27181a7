// The scan ladder (the parallel prefix sum the limiting-factors lecture announces): from a
// block-wide scan in shared memory to a single pass at copy speed. Rungs 2-5 scan blocks of 1024
// elements and share one second level; rungs 6-10 scan tiles held in registers (warp_scan.cuh) and
// differ in how a tile learns the sum of the tiles before it, in the order tiles are taken, and in
// tile size.
#include <cub/device/device_scan.cuh>
#include <cuda/atomic>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "core/device_info.hpp"
#include "scan/warp_scan.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/scan.hpp"
#include "scan/scan_candidates.hpp"
#include "scan/scan_workspace.hpp"

namespace rooflab::bench {
namespace {

using detail::wrapping_add;
constexpr const char* bench_scan = "bench scan";

// The GPU ladder is built for the report's types; the production path and CUB for every type.
template <class Fn>
std::function<void(Workspace&, cudaStream_t)> on_ladder_types(Fn fn) {
  return on_scan<float, std::int32_t>(fn);
}
const auto ladder_types_only = built_for<float, std::int32_t>();

// ---------------------------------------------------------------------------------------------
// The second level of rungs 2-5. A block scan turns each block of 1024 elements into its local
// inclusive scan and reports the block's total; the totals are scanned in place by the same block
// scan (recursively: 2^20 totals take two more levels), and scanned total b - 1 is added to every
// element of block b. Reading and writing the array twice, these rungs move 4 n elements.
constexpr int block_elements = 1024;

// Scans each 1024-element block of in into out (in == out allowed); unless block_totals is null,
// block b's total goes to block_totals[b].
template <class T>
using BlockScan = void (*)(const T* in, T* out, T* block_totals, std::int64_t n,
                           cudaStream_t stream);

// One block per data block b >= 1: out[b * 1024 + j] += scanned_totals[b - 1].
template <class T>
__global__ void add_block_offsets(T* out, const T* scanned_totals, std::int64_t n) {
  const std::int64_t block = std::int64_t(blockIdx.x) + 1;
  const T offset = scanned_totals[block - 1];
  for (int j = int(threadIdx.x); j < block_elements; j += int(blockDim.x)) {
    const std::int64_t i = block * block_elements + j;
    if (i < n) out[i] = wrapping_add(offset, out[i]);
  }
}

template <class T>
void scan_by_blocks(BlockScan<T> block_scan, const T* in, T* out, std::int64_t n,
                    cudaStream_t stream) {
  const std::int64_t blocks = (n + block_elements - 1) / block_elements;
  if (blocks == 1) {
    block_scan(in, out, nullptr, n, stream);
    return;
  }
  StreamBuffer totals(std::size_t(blocks) * sizeof(T), stream, bench_scan);
  block_scan(in, out, totals.as<T>(), n, stream);
  scan_by_blocks(block_scan, totals.as<T>(), totals.as<T>(), blocks, stream);
  add_block_offsets<<<unsigned(blocks - 1), 256, 0, stream>>>(out, totals.as<T>(), n);
  detail::check_launch(bench_scan, "add_block_offsets");
}

unsigned block_count(std::int64_t n) { return unsigned((n + block_elements - 1) / block_elements); }

// Rung 2 — Hillis-Steele within a block (Hillis & Steele 1986).
// Step k adds the element 2^k places back: 10 steps for 1024 elements, but n log n additions,
// every step a round trip through shared memory and a __syncthreads (double-buffered, one a step).
template <class T>
__global__ void __launch_bounds__(block_elements)
    hillis_steele_block(const T* in, T* out, T* block_totals, std::int64_t n) {
  __shared__ T buffer[2][block_elements];
  const int t = int(threadIdx.x);
  const std::int64_t i = std::int64_t(blockIdx.x) * block_elements + t;
  buffer[0][t] = i < n ? in[i] : T(0);
  __syncthreads();
  int current = 0;
  for (int offset = 1; offset < block_elements; offset *= 2) {
    const T x = buffer[current][t];
    buffer[1 - current][t] = t >= offset ? wrapping_add(buffer[current][t - offset], x) : x;
    current = 1 - current;
    __syncthreads();
  }
  if (i < n) out[i] = buffer[current][t];
  if (block_totals != nullptr && t == block_elements - 1)
    block_totals[blockIdx.x] = buffer[current][t];
}

template <class T>
void launch_hillis_steele(const T* in, T* out, T* block_totals, std::int64_t n,
                          cudaStream_t stream) {
  hillis_steele_block<<<block_count(n), block_elements, 0, stream>>>(in, out, block_totals, n);
  detail::check_launch(bench_scan, "hillis_steele_block");
}

// Rung 3 — Blelloch's work-efficient scan (Blelloch 1990; GPU Gems 3, ch. 39).
// An up-sweep builds a tree of partial sums in place and a down-sweep turns it into the exclusive
// scan: 2 (n - 1) additions instead of n log n, 512 threads for 1024 elements. But the tree's
// strides are powers of two, so a warp's accesses crowd onto fewer banks as the stride grows:
// 2-way at stride 1, up to 32-way at stride 16, where every active lane hits one bank.
// Rung 4 — the same with bank-conflict-free padding (GPU Gems 3, ch. 39): one word skipped every
// 32, index i stored at i + i / 32, spreads each stride's accesses over all 32 banks.
template <class T, bool Padded>
__global__ void __launch_bounds__(block_elements / 2)
    blelloch_block(const T* in, T* out, T* block_totals, std::int64_t n) {
  constexpr int shared_elements = Padded ? block_elements + block_elements / 32 : block_elements;
  __shared__ T tree[shared_elements];
  const auto slot = [](int index) { return Padded ? index + index / 32 : index; };
  const int t = int(threadIdx.x);
  const std::int64_t base = std::int64_t(blockIdx.x) * block_elements;
  const int a = t;
  const int b = t + block_elements / 2;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  tree[slot(a)] = xa;
  tree[slot(b)] = xb;
  int stride = 1;
  for (int active = block_elements / 2; active > 0; active /= 2, stride *= 2) {
    __syncthreads();
    if (t < active) {
      const int left = stride * (2 * t + 1) - 1;
      const int right = stride * (2 * t + 2) - 1;
      tree[slot(right)] = wrapping_add(tree[slot(left)], tree[slot(right)]);
    }
  }
  if (t == 0) {  // thread 0 made the last up-sweep step itself: no barrier needed
    if (block_totals != nullptr) block_totals[blockIdx.x] = tree[slot(block_elements - 1)];
    tree[slot(block_elements - 1)] = T(0);
  }
  for (int active = 1; active < block_elements; active *= 2) {
    stride /= 2;
    __syncthreads();
    if (t < active) {
      const int left = stride * (2 * t + 1) - 1;
      const int right = stride * (2 * t + 2) - 1;
      const T left_sum = tree[slot(left)];
      tree[slot(left)] = tree[slot(right)];
      tree[slot(right)] = wrapping_add(tree[slot(right)], left_sum);
    }
  }
  __syncthreads();
  if (base + a < n) out[base + a] = wrapping_add(tree[slot(a)], xa);  // exclusive + own = inclusive
  if (base + b < n) out[base + b] = wrapping_add(tree[slot(b)], xb);
}

template <class T, bool Padded>
void launch_blelloch(const T* in, T* out, T* block_totals, std::int64_t n, cudaStream_t stream) {
  blelloch_block<T, Padded>
      <<<block_count(n), block_elements / 2, 0, stream>>>(in, out, block_totals, n);
  detail::check_launch(bench_scan, Padded ? "blelloch_block<padded>" : "blelloch_block");
}

// Rung 5 — warp shuffles (__shfl_up_sync, Kepler and later).
// A warp scans its 32 values in registers: 5 shuffle steps, no shared memory, no barrier. Only
// the 32 warp totals pass through shared memory, scanned by one warp: 2 barriers a block instead
// of 10 (Hillis-Steele) or 20 (Blelloch).
template <class T>
__global__ void __launch_bounds__(block_elements)
    warp_shuffle_block(const T* in, T* out, T* block_totals, std::int64_t n) {
  __shared__ T warp_totals[block_elements / 32];
  const int t = int(threadIdx.x);
  const int lane = t % 32;
  const int warp = t / 32;
  const std::int64_t i = std::int64_t(blockIdx.x) * block_elements + t;
  T x = detail::warp_inclusive_scan(i < n ? in[i] : T(0), lane);
  if (lane == 31) warp_totals[warp] = x;
  __syncthreads();
  if (warp == 0) warp_totals[lane] = detail::warp_inclusive_scan(warp_totals[lane], lane);
  __syncthreads();
  if (warp > 0) x = wrapping_add(warp_totals[warp - 1], x);
  if (i < n) out[i] = x;
  if (block_totals != nullptr && t == block_elements - 1) block_totals[blockIdx.x] = x;
}

template <class T>
void launch_warp_shuffle(const T* in, T* out, T* block_totals, std::int64_t n,
                         cudaStream_t stream) {
  warp_shuffle_block<<<block_count(n), block_elements, 0, stream>>>(in, out, block_totals, n);
  detail::check_launch(bench_scan, "warp_shuffle_block");
}

ROOFLAB_VARIANT(Variant{
    "scan", 2, "hillis-steele", "every thread adds the element 2^k back: log n steps, n log n adds",
    Where::gpu, false, ladder_types_only, on_ladder_types([](auto& w, cudaStream_t stream) {
      using T = typename std::decay_t<decltype(w)>::value_type;
      scan_by_blocks<T>(launch_hillis_steele<T>, w.in.data(), w.out.data(), w.n, stream);
    })});

ROOFLAB_VARIANT(Variant{
    "scan", 3, "blelloch", "up-sweep, down-sweep: 2n adds, but power-of-two strides hit one bank",
    Where::gpu, false, ladder_types_only, on_ladder_types([](auto& w, cudaStream_t stream) {
      using T = typename std::decay_t<decltype(w)>::value_type;
      scan_by_blocks<T>(launch_blelloch<T, false>, w.in.data(), w.out.data(), w.n, stream);
    })});

ROOFLAB_VARIANT(Variant{
    "scan", 4, "blelloch-padded", "one padding word every 32: the tree's strides spread over banks",
    Where::gpu, false, ladder_types_only, on_ladder_types([](auto& w, cudaStream_t stream) {
      using T = typename std::decay_t<decltype(w)>::value_type;
      scan_by_blocks<T>(launch_blelloch<T, true>, w.in.data(), w.out.data(), w.n, stream);
    })});

ROOFLAB_VARIANT(Variant{
    "scan", 5, "warp-shuffle", "warps scan in registers with shuffles; only warp totals use shared",
    Where::gpu, false, ladder_types_only, on_ladder_types([](auto& w, cudaStream_t stream) {
      using T = typename std::decay_t<decltype(w)>::value_type;
      scan_by_blocks<T>(launch_warp_shuffle<T>, w.in.data(), w.out.data(), w.n, stream);
    })});

// ---------------------------------------------------------------------------------------------
// Tiles in registers for rungs 6 and 7: 8 warps x 32 lanes x 4 rows of 16-byte vectors, 4096
// elements of 4 bytes.
template <class T>
using RegisterTile = detail::TileScan<T, 8, 4>;
constexpr int tile_threads = RegisterTile<float>::threads;

// Rung 6 — reduce, then scan: three kernels (the classic "reduce-then-scan", Merrill & Grimshaw).
// The array is cut into one partition per resident block. Kernel 1 sums each partition, kernel 2
// scans the partition sums in one block, kernel 3 scans each partition again from its offset.
// Tiles in registers with 16-byte loads instead of one element a thread, and no pass over the
// output: 3 n elements of traffic (read, read again, write) instead of 4 n.
template <class T>
__global__ void __launch_bounds__(tile_threads)
    reduce_partitions(const T* in, T* partition_sums, std::int64_t n,
                      std::int64_t tiles_per_partition) {
  using Tile = RegisterTile<T>;
  __shared__ typename Tile::Shared shared;
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  T sum = T(0);
  for (std::int64_t k = 0; k < tiles_per_partition; ++k) {
    const std::int64_t first =
        (std::int64_t(blockIdx.x) * tiles_per_partition + k) * Tile::tile_elements;
    if (first >= n) break;
    Tile tile;
    tile.load(in, first, n, warp, lane);
    sum = wrapping_add(sum, tile.reduce(shared, warp, lane));
    __syncthreads();  // the next tile reuses `shared`
  }
  if (threadIdx.x == 0) partition_sums[blockIdx.x] = sum;
}

// Kernel 2: the partition sums become their exclusive scan, in place, in one block.
template <class T>
__global__ void __launch_bounds__(tile_threads) scan_partition_sums(T* sums, std::int64_t count) {
  using Tile = RegisterTile<T>;
  __shared__ typename Tile::Shared shared;
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  T carry = T(0);
  for (std::int64_t first = 0; first < count; first += Tile::tile_elements) {
    Tile tile;
    tile.load(sums, first, count, warp, lane);
    const T total = tile.template scan<false>(shared, warp, lane);
    tile.add(carry);
    tile.store(sums, first, count, true, warp, lane);
    carry = wrapping_add(carry, total);
    __syncthreads();
  }
}

// Kernel 3: each partition scanned tile by tile, carrying the running sum from its offset.
template <class T>
__global__ void __launch_bounds__(tile_threads)
    scan_partitions(const T* in, T* out, const T* partition_offsets, std::int64_t n,
                    std::int64_t tiles_per_partition) {
  using Tile = RegisterTile<T>;
  __shared__ typename Tile::Shared shared;
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  T carry = partition_offsets[blockIdx.x];
  for (std::int64_t k = 0; k < tiles_per_partition; ++k) {
    const std::int64_t first =
        (std::int64_t(blockIdx.x) * tiles_per_partition + k) * Tile::tile_elements;
    if (first >= n) break;
    Tile tile;
    tile.load(in, first, n, warp, lane);
    const T total = tile.template scan<true>(shared, warp, lane);
    tile.add(carry);
    tile.store(out, first, n, true, warp, lane);
    carry = wrapping_add(carry, total);
    __syncthreads();
  }
}

template <class T>
void reduce_then_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  // One partition per block that can be resident at once: a single wave, every SM busy to the end.
  static const int blocks_per_sm = [] {
    int blocks = 0;
    ROOFLAB_CUDA(bench_scan, "asking how many partition blocks fit on an SM",
                 cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, scan_partitions<T>,
                                                               tile_threads, 0));
    return std::max(blocks, 1);
  }();
  const std::int64_t tiles =
      (n + RegisterTile<T>::tile_elements - 1) / RegisterTile<T>::tile_elements;
  const std::int64_t resident = std::int64_t(current_sm_count()) * blocks_per_sm;
  const std::int64_t tiles_per_partition = (tiles + resident - 1) / resident;
  const std::int64_t partitions = (tiles + tiles_per_partition - 1) / tiles_per_partition;
  StreamBuffer sums(std::size_t(partitions) * sizeof(T), stream, bench_scan);
  reduce_partitions<<<unsigned(partitions), tile_threads, 0, stream>>>(in, sums.as<T>(), n,
                                                                       tiles_per_partition);
  detail::check_launch(bench_scan, "reduce_partitions");
  scan_partition_sums<<<1, tile_threads, 0, stream>>>(sums.as<T>(), partitions);
  detail::check_launch(bench_scan, "scan_partition_sums");
  scan_partitions<<<unsigned(partitions), tile_threads, 0, stream>>>(in, out, sums.as<T>(), n,
                                                                     tiles_per_partition);
  detail::check_launch(bench_scan, "scan_partitions");
}

ROOFLAB_VARIANT(Variant{"scan", 6, "reduce-then-scan",
                        "3 kernels: partition sums, their scan, partitions again (3n)", Where::gpu,
                        false, ladder_types_only, on_ladder_types([](auto& w, cudaStream_t stream) {
                          reduce_then_scan(w.in.data(), w.out.data(), w.n, stream);
                        })});

// Rung 7 — single pass with decoupled look-back (Merrill & Garland 2016).
// One tile per block, tile indices from an atomic counter in the order blocks start. A tile
// publishes its aggregate at once, then one warp looks back over 32 predecessors at a time,
// adding aggregates until it meets an inclusive prefix, and publishes its own. Status and value
// share one 64-bit word, written and read atomically. Data crosses memory once each way (2 n), as
// in a copy. Not reproducible for floats: where the look-back stops depends on timing.
enum : unsigned { status_invalid = 0, status_aggregate = 1, status_prefix = 2 };

template <class T>
__device__ __forceinline__ unsigned long long tile_status_word(unsigned status, T value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(T));
  return (static_cast<unsigned long long>(status) << 32) | bits;
}

template <class T>
__device__ __forceinline__ T tile_status_value(unsigned long long word) {
  const auto bits = std::uint32_t(word);
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// How a block learns which tile it scans. `ticket`: an atomic counter, in the order blocks start,
// so every lower index belongs to a block already running (a guarantee, at the price of an L2
// round trip before the first load). `block_index`: blockIdx.x, as CUB's DeviceScan does; this
// relies on the hardware starting blocks in increasing index order (true in practice, not
// promised by the programming model), and lets the loads start at once.
enum class TileOrder { ticket, block_index };

// The rung's kernel, shaped by the tile (Warps x 32 lanes x Rows 16-byte vectors), the resident
// blocks asked of the compiler (MinBlocks caps the registers a thread may use) and the tile order.
template <class T, int Warps, int Rows, int MinBlocks, TileOrder Order>
__global__ void __launch_bounds__(Warps * 32, MinBlocks)
    decoupled_lookback_scan(const T* in, T* out, std::int64_t n, unsigned long long* tile_status,
                            unsigned int* tile_counter) {
  static_assert(sizeof(T) == 4, "status and value packed into one 64-bit word");
  using Tile = detail::TileScan<T, Warps, Rows>;
  using Word = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
  __shared__ typename Tile::Shared shared;
  __shared__ T exclusive_shared;
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  std::int64_t tile_index = blockIdx.x;
  if constexpr (Order == TileOrder::ticket) {
    __shared__ unsigned int tile_index_shared;
    if (threadIdx.x == 0) tile_index_shared = atomicAdd(tile_counter, 1u);
    __syncthreads();
    tile_index = tile_index_shared;
  }
  const std::int64_t first = tile_index * Tile::tile_elements;

  Tile tile;
  tile.load(in, first, n, warp, lane);
  // The aggregate is known once the warps' totals are combined: warp 0 publishes it and looks back
  // while the other warps finish their slices.
  const T slice_total = tile.template scan_warp_slice<true>(lane);
  T aggregate;
  const T before_warp = tile.combine_warps(shared, slice_total, warp, lane, aggregate);
  if (warp == 0) {
    T exclusive = T(0);
    if (tile_index == 0) {
      if (lane == 0)
        Word(tile_status[0])
            .store(tile_status_word(status_prefix, aggregate), cuda::memory_order_relaxed);
    } else {
      if (lane == 0)
        Word(tile_status[tile_index])
            .store(tile_status_word(status_aggregate, aggregate), cuda::memory_order_relaxed);
      // Lane l looks at tile window_end - l; lanes before tile 0 see an empty inclusive prefix.
      for (std::int64_t window_end = tile_index - 1;; window_end -= 32) {
        const std::int64_t predecessor = window_end - lane;
        unsigned long long word = tile_status_word(status_prefix, T(0));
        if (predecessor >= 0)
          word = Word(tile_status[predecessor]).load(cuda::memory_order_relaxed);
        while (__any_sync(detail::full_warp_mask, word >> 32 == status_invalid)) {
          __nanosleep(64);
          if (word >> 32 == status_invalid)
            word = Word(tile_status[predecessor]).load(cuda::memory_order_relaxed);
        }
        const unsigned prefix_lanes =
            __ballot_sync(detail::full_warp_mask, word >> 32 == status_prefix);
        const int stop = prefix_lanes != 0 ? __ffs(int(prefix_lanes)) - 1 : 31;  // nearest prefix
        exclusive = wrapping_add(
            exclusive, detail::warp_sum(lane <= stop ? tile_status_value<T>(word) : T(0)));
        if (prefix_lanes != 0) break;
      }
      if (lane == 0)
        Word(tile_status[tile_index])
            .store(tile_status_word(status_prefix, wrapping_add(exclusive, aggregate)),
                   cuda::memory_order_relaxed);
    }
    if (lane == 0) exclusive_shared = exclusive;
  }
  if (warp > 0) tile.add(before_warp);
  __syncthreads();
  if (tile_index > 0) tile.add(exclusive_shared);
  tile.store(out, first, n, true, warp, lane);
}

template <class T, int Warps, int Rows, int MinBlocks, TileOrder Order>
void decoupled_lookback(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  using Tile = detail::TileScan<T, Warps, Rows>;
  const std::int64_t tiles = (n + Tile::tile_elements - 1) / Tile::tile_elements;
  // Counter and tile states start at zero (status_invalid): one memset of stream-ordered scratch.
  const std::size_t bytes = sizeof(unsigned long long) * std::size_t(1 + tiles);
  StreamBuffer scratch(bytes, stream, bench_scan);
  ROOFLAB_CUDA(bench_scan, "zeroing the tile states",
               cudaMemsetAsync(scratch.data(), 0, bytes, stream));
  decoupled_lookback_scan<T, Warps, Rows, MinBlocks, Order>
      <<<unsigned(tiles), Tile::threads, 0, stream>>>(
          in, out, n, scratch.as<unsigned long long>() + 1, scratch.as<unsigned int>());
  detail::check_launch(bench_scan, "decoupled_lookback_scan");
}

template <int Warps, int Rows, int MinBlocks, TileOrder Order>
std::function<void(Workspace&, cudaStream_t)> run_decoupled_lookback() {
  return on_ladder_types([](auto& w, cudaStream_t stream) {
    using T = typename std::decay_t<decltype(w)>::value_type;
    decoupled_lookback<T, Warps, Rows, MinBlocks, Order>(w.in.data(), w.out.data(), w.n, stream);
  });
}

// 8 warps x 4 rows: the tiles of rung 6 (4096 elements, 48 registers, 5 blocks an SM).
ROOFLAB_VARIANT(Variant{
    "scan", 7, "decoupled-lookback", "one pass (2n): tiles look back over predecessors' partials",
    Where::gpu, false, ladder_types_only, run_decoupled_lookback<8, 4, 1, TileOrder::ticket>()});

// Rung 8 — rung 7 in block-index order with tiles twice as large (the shape production takes).
// Tile = blockIdx.x, as in CUB: no atomic ticket before the loads, so a block's loads are
// requested as soon as it starts (forward progress relies on blocks starting in index order; see
// src/scan/scan.cu). 8 warps x 8 rows: 8192 elements (32 KB), 128 bytes in flight a thread,
// 4 blocks an SM, half the look-backs, barriers and block starts per byte. Still not
// reproducible for floats: the measure of what production's deterministic tree costs.
ROOFLAB_VARIANT(Variant{"scan", 8, "lookback-blockidx-8k",
                        "rung 7 in block-index order (as CUB) with 8192-element tiles", Where::gpu,
                        false, ladder_types_only,
                        run_decoupled_lookback<8, 8, 4, TileOrder::block_index>()});

// Rung 9 — the production path, rooflab::inclusive_scan (src/scan/scan.cu).
// Rung 8 made deterministic: partial sums form a fixed radix-32 tree over tile indices, read by
// one warp per level at once, so a tile's prefix has the same bits on every run. Any alignment
// (tiles shifted so that 16-byte vectors stay aligned), every type, n beyond 2^31.
ROOFLAB_VARIANT(Variant{
    "scan", 9, "production", "rung 8 with a fixed radix-32 look-back tree: same bits every run",
    Where::gpu, false, no_limit, on_every_scan_type([](auto& w, cudaStream_t stream) {
      inclusive_scan(w.in.data(), w.out.data(), w.n, stream);
    })});

// Candidate 10 — production with tiles twice as large again: 16 warps x 8 rows (16384 elements of
// 4 bytes, 64 KB, 512 threads), 2 blocks an SM (still 128 KB in flight). Halves the look-backs and
// block starts once more; tells whether the gap to CUB left at 8192 is per-tile overhead.
ROOFLAB_VARIANT(Variant{"scan", 10, "production-16k",
                        "production with 16384-element tiles (512 threads), 2 blocks an SM",
                        Where::gpu, false, ladder_types_only,
                        on_ladder_types([](auto& w, cudaStream_t stream) {
                          detail::inclusive_scan_16k_tiles(w.in.data(), w.out.data(), w.n, stream);
                        })});

// Rung 11 — CUB's DeviceScan::InclusiveSum, the vendor comparator: single pass with decoupled
// look-back, tuned per architecture. Its temporary storage is queried and allocated on the
// stream inside the timing, as a user of CUB would.
ROOFLAB_VARIANT(Variant{
    "scan", 11, "cub", "cub::DeviceScan::InclusiveSum (decoupled look-back, tuned per GPU)",
    Where::gpu, true, at_most_n(INT_MAX, "CUB comparator built with 32-bit sizes"),
    on_every_scan_type([](auto& w, cudaStream_t stream) {
      const int n = int(w.n);
      std::size_t bytes = 0;
      ROOFLAB_CUDA(
          bench_scan, "sizing cub::DeviceScan::InclusiveSum's temporary storage",
          cub::DeviceScan::InclusiveSum(nullptr, bytes, w.in.data(), w.out.data(), n, stream));
      StreamBuffer temporary(std::max<std::size_t>(bytes, 1), stream, bench_scan);
      ROOFLAB_CUDA(bench_scan, "running cub::DeviceScan::InclusiveSum",
                   cub::DeviceScan::InclusiveSum(temporary.data(), bytes, w.in.data(), w.out.data(),
                                                 n, stream));
    })});

}  // namespace
}  // namespace rooflab::bench
