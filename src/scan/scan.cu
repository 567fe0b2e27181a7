// The production prefix sum: one pass over the data (read n, write n) by a persistent grid that
// takes tiles in order from a ticket counter, and a deterministic decoupled look-back between tiles.
//
// Decoupled look-back (Merrill & Garland 2016) lets a tile find the sum of all earlier tiles from
// partial results that earlier tiles publish in global memory, so the data is read once and
// written once, like a copy. The classic form adds up whatever it finds (a predecessor's
// aggregate, or a finished inclusive prefix further back) and is therefore not reproducible for
// floating point: where the look-back stops depends on timing. Here every partial sum has one
// fixed definition instead: tile aggregates are the leaves of a radix-32 tree over tile indices,
// the tile closing a group of 32 publishes the group's sum (a fixed warp tree), and tile t's
// exclusive prefix is the sum, level by level from the top, of the complete groups before it in
// its ancestors' groups (the base-32 digits of t). Same input, same bits, on every run and every
// GPU. A tile waits only on entries of lower tile indices, and tile indices are tickets that only
// running blocks take, in order, so a tile never waits on a block that is not running.
//
// Where the time goes. A tile's look-back costs one to three L2 round trips. A block that holds one
// tile at a time has no loads in flight during them, nor during its ticket's round trip, its
// stores and the next block's launch (the first version did this: one tile per block, 5 blocks an
// SM, ~9 us from a block's start to its end on the H200, 2.36 TB/s at 2^28). So each block loops
// over tiles and issues the next tile's loads before it scans, looks back on and stores the
// current one, and claims the ticket after that at the same time. An SM then reads 4 blocks x
// 16 KB per loop period, the period being the look-back plus ~0.5 us of scan and stores: below
// ~4 us that is more than its share of the copy bandwidth (~16 KB/us at 4.2 TB/s read + write).
#include <cuda/atomic>

#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "core/warp_scan.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/detail/stream_scratch.hpp"
#include "rooflab/error.hpp"
#include "rooflab/scan.hpp"

namespace rooflab {
namespace {

// 8 warps x 4 rows x one 16-byte vector per lane: 16 KB a tile (4096 floats, 2048 doubles), with
// 64 bytes in flight per thread while the tile loads.
constexpr int scan_warps = 8;
constexpr int scan_rows = 4;
template <class T>
using Tile = detail::TileScan<T, scan_warps, scan_rows>;

// A block holds two tiles in registers (the one it works on and the next one loading): 32
// registers of data a thread, 64 in all at 4 blocks an SM (4 x 256 x 64 = the whole register
// file). The grid is exactly that many blocks per SM, one resident wave.
constexpr int scan_blocks_per_sm = 4;

constexpr int radix_bits = 5;  // a warp reads a whole group of 32 entries at once
constexpr int radix = 1 << radix_bits;
// Fewer than 2^31 tiles need at most 7 levels (32^7 = 2^35). Warp 0 publishes; warps 1 to 7
// each read one level, so the whole look-back costs one round trip to L2 when nobody is late.
constexpr int max_levels = 7;
static_assert(scan_warps >= max_levels + 1, "one warp per level plus the publishing warp");

// An entry of the tree is stored as one 64-bit word per 32 bits of T: a ready tag in the high half,
// the payload in the low half. Each word is written once, with one atomic store, so a reader that
// sees the tag sees its payload; no fence is needed, and 8-byte types need no 128-bit atomics.
constexpr unsigned long long ready_tag = 1ull << 32;

// The look-back's state, in per-stream scratch (detail::StreamScratch) that is zero at launch and
// that the last block to finish leaves zero again: the next call needs no allocation and no memset.
// Level m of the tree holds floor(tiles / 32^m) entries; the levels are stored one after another,
// and the two counters after them.
struct Lookback {
  unsigned long long* words;   // the tree's entries, `word_count` words
  unsigned* tile_counter;      // hands out tile indices (tickets) in the order blocks ask
  unsigned* finished_blocks;   // blocks done with every ticket they took
  std::int64_t word_count;
  std::int64_t tiles;
  int levels;  // 0: a single tile, nothing to look back on and no scratch
};

template <class T>
constexpr int words_per_entry = int(sizeof(T)) / 4;

template <class T>
__device__ __forceinline__ unsigned long long* entry_words(const Lookback& lookback, int level,
                                                           std::int64_t index) {
  std::int64_t level_begin = 0;
  for (std::int64_t count = lookback.tiles; level > 0; --level, count /= radix)
    level_begin += count;
  return lookback.words + (level_begin + index) * words_per_entry<T>;
}

// Lane c < words_per_entry stores word c of the entry; every lane holds `value`.
template <class T>
__device__ __forceinline__ void publish(const Lookback& lookback, int level, std::int64_t index,
                                        T value, int lane) {
  std::uint32_t payload[words_per_entry<T>];
  std::memcpy(payload, &value, sizeof(T));
  if (lane < words_per_entry<T>) {
    const std::uint32_t mine = lane == 0 ? payload[0] : payload[words_per_entry<T> - 1];
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> word(
        entry_words<T>(lookback, level, index)[lane]);
    word.store(ready_tag | mine, cuda::memory_order_relaxed);
  }
}

// Entry `index` of `level` in each lane that asks for one (index >= 0), once it is published;
// zero in the other lanes. Warp-collective: polls, backing off, until every asking lane has its
// entry.
template <class T>
__device__ __forceinline__ T read_published(const Lookback& lookback, int level,
                                            std::int64_t index) {
  unsigned long long word[words_per_entry<T>] = {};
  bool ready = index < 0;
  unsigned long long* const entry = ready ? nullptr : entry_words<T>(lookback, level, index);
  unsigned sleep_ns = 64;
  while (true) {
    if (!ready) {
      ready = true;
#pragma unroll
      for (int c = 0; c < words_per_entry<T>; ++c) {
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> published(entry[c]);
        word[c] = published.load(cuda::memory_order_relaxed);
        ready = ready && (word[c] & ready_tag) != 0;
      }
    }
    if (__all_sync(detail::full_warp_mask, ready)) break;
    // A late entry belongs to a tile still summing or waiting itself: back off, doubling up to a
    // quarter microsecond. Each poll is an L2 round trip too (~0.5-1 us under load), which bounds
    // the polling traffic; a longer sleep would only add to the time by which a block oversleeps
    // the entry it waits for, and that time is the pipelined loop's period (see the top).
    __nanosleep(sleep_ns);
    sleep_ns = sleep_ns < 256 ? 2 * sleep_ns : sleep_ns;
  }
  std::uint32_t payload[words_per_entry<T>];
#pragma unroll
  for (int c = 0; c < words_per_entry<T>; ++c) payload[c] = std::uint32_t(word[c]);
  T value;
  std::memcpy(&value, payload, sizeof(T));
  return value;
}

// Warp 0: publishes the tile's total as level-0 entry `tile`; then, for as long as the entry just
// published closes a group of 32, publishes the group's sum (a fixed warp tree) one level up.
template <class T>
__device__ void publish_and_close_groups(const Lookback& lookback, std::int64_t tile, T total,
                                         int lane) {
  publish(lookback, 0, tile, total, lane);
  std::int64_t index = tile;
  T value = total;
  for (int level = 0; level + 1 < lookback.levels && index % radix == radix - 1; ++level) {
    const T sibling =
        read_published<T>(lookback, level, lane < radix - 1 ? index - (radix - 1) + lane : -1);
    value = detail::warp_sum(lane < radix - 1 ? sibling : value);
    index /= radix;
    publish(lookback, level + 1, index, value, lane);
  }
}

// Warp 1 + level: the sum of the complete groups of `level` that precede the tile inside its
// ancestor's group (as many as the tile index's base-32 digit at that level).
template <class T>
__device__ T sum_of_earlier_groups(const Lookback& lookback, int level, std::int64_t tile,
                                   int lane) {
  const std::int64_t position = tile >> (radix_bits * level);
  const int digit = int(position % radix);
  if (digit == 0) return T(0);
  return detail::warp_sum(
      read_published<T>(lookback, level, lane < digit ? position - digit + lane : -1));
}

// The next ticket, in every thread of the block (block-collective; `shared` is free on entry and
// on return).
__device__ __forceinline__ std::int64_t take_ticket(const Lookback& lookback, unsigned& shared) {
  __syncthreads();  // every thread has read the previous ticket from `shared`
  if (threadIdx.x == 0) shared = atomicAdd(lookback.tile_counter, 1u);
  __syncthreads();
  return shared;
}

// Called by every block once it is done with the scratch (its last ticket taken, its last look-back
// behind a barrier that thread 0 has passed); block-collective. Thread 0 counts the block out, and
// last_block_shared tells, after the caller's next barrier, whether this block is the last: the
// one that has every other block's reads and writes of the scratch behind it.
__device__ __forceinline__ void count_out(const Lookback& lookback, bool& last_block_shared) {
  if (threadIdx.x == 0) {
    __threadfence();  // this block's scratch accesses before the count that reports them
    const bool last = atomicAdd(lookback.finished_blocks, 1u) == gridDim.x - 1;
    if (last) __threadfence();  // and the last block's zeros after every counted block's accesses
    last_block_shared = last;
  }
}

// The last block zeroes the tree and the counters for the next call (block-collective).
__device__ void zero_scratch(const Lookback& lookback) {
  // About 8.3 bytes a tile (540 KB at 2^28 floats): a few microseconds for one SM (~64 B/clock to
  // L2), once a call, under 1% of the scan it ends.
  for (std::int64_t i = threadIdx.x; i < lookback.word_count; i += blockDim.x) lookback.words[i] = 0;
  if (threadIdx.x == 0) {
    *lookback.tile_counter = 0;
    *lookback.finished_blocks = 0;
  }
}

// A persistent grid: each block takes tiles by ticket until the tickets pass the last tile.
// `shift` places the tiles so that in + (tile start) is 16-byte aligned: tile t covers elements
// [t * tile_elements - shift, (t + 1) * tile_elements - shift).
//
// Deadlock freedom: a block takes its next ticket while it works on its current one, so a block
// holding an unfinished ticket either works on it or works on a lower one. The lowest unfinished
// tile therefore belongs to a running block that works on it, and it waits only on lower tiles,
// all finished: it finishes, whatever the grid size and however many blocks are resident.
template <class T, bool Inclusive>
__global__ void __launch_bounds__(Tile<T>::threads, scan_blocks_per_sm)
    scan_tiles(const T* in, T* out, std::int64_t n, int shift, bool vector_store,
               Lookback lookback) {
  __shared__ typename Tile<T>::Shared tile_shared;
  __shared__ unsigned ticket_shared;
  __shared__ T level_sums[max_levels];
  __shared__ bool last_block_shared;
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  const bool single_tile = lookback.levels == 0;
  const auto first_element = [&](std::int64_t tile_index) {
    return tile_index * Tile<T>::tile_elements - shift;
  };

  // The first tile starts loading, and its successor's ticket is claimed, before any work.
  std::int64_t tile_index = single_tile ? 0 : take_ticket(lookback, ticket_shared);
  std::int64_t next_index = lookback.tiles;
  Tile<T> loading;
  if (tile_index < lookback.tiles) {
    loading.load(in, first_element(tile_index), n, warp, lane);
    if (!single_tile) next_index = take_ticket(lookback, ticket_shared);
  } else {
    count_out(lookback, last_block_shared);  // no tile left for this block: done with the scratch
  }

  while (tile_index < lookback.tiles) {
    Tile<T> tile = loading;  // waits for this tile's loads
    // The next tile's loads fly while this one is scanned, looked back on and stored; the ticket
    // after it comes back in the meantime (none once the tickets have run out).
    unsigned following_ticket = 0;
    if (next_index < lookback.tiles) {
      loading.load(in, first_element(next_index), n, warp, lane);
      if (threadIdx.x == 0) following_ticket = atomicAdd(lookback.tile_counter, 1u);
    }

    const T slice_total = tile.template scan_warp_slice<Inclusive>(lane);
    T tile_total;
    // A barrier: this tile's uses of tile_shared, level_sums and ticket_shared start after every
    // thread's uses of them for the previous tile.
    const T before_warp = tile.combine_warps(tile_shared, slice_total, warp, lane, tile_total);
    if (!single_tile) {
      if (warp == 0) {
        publish_and_close_groups(lookback, tile_index, tile_total, lane);
      } else if (warp <= lookback.levels) {
        const T sum = sum_of_earlier_groups<T>(lookback, warp - 1, tile_index, lane);
        if (lane == 0) level_sums[warp - 1] = sum;
      }
    }
    if (warp > 0) tile.add(before_warp);
    if (threadIdx.x == 0) ticket_shared = following_ticket;
    __syncthreads();
    if (!single_tile && tile_index > 0) {
      // From the top level down, in the same order in every thread and every run.
      T prefix = T(0);
      for (int level = lookback.levels - 1; level >= 0; --level)
        prefix = detail::wrapping_add(prefix, level_sums[level]);
      tile.add(prefix);
    }
    // Done with the scratch after its last tile's barrier: counting out before the stores keeps
    // the fence from waiting for them.
    const bool last_tile = next_index >= lookback.tiles;
    if (!single_tile && last_tile) count_out(lookback, last_block_shared);
    tile.store(out, first_element(tile_index), n, vector_store, warp, lane);
    tile_index = next_index;
    next_index = ticket_shared;
  }
  if (single_tile) return;
  __syncthreads();
  if (last_block_shared) zero_scratch(lookback);
}

template <class T, bool Inclusive>
void scan(const char* op, const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  require(n >= 0, op, "n", "must not be negative (got " + std::to_string(n) + ")");
  if (n == 0) return;
  require(in != nullptr, op, "in", "is null");
  require(out != nullptr, op, "out", "is null");
  const auto in_address = reinterpret_cast<std::uintptr_t>(in);
  const auto out_address = reinterpret_cast<std::uintptr_t>(out);
  require(in_address % sizeof(T) == 0, op, "in", "is not aligned to its element size");
  require(out_address % sizeof(T) == 0, op, "out", "is not aligned to its element size");
  // Tickets are 32-bit: fewer than 2^31 tiles, with room for the few extra tickets blocks take.
  constexpr std::int64_t tile_elements = Tile<T>::tile_elements;
  const std::int64_t max_n = std::int64_t(INT_MAX - 1) * tile_elements;
  require(n <= max_n, op, "n", "exceeds " + std::to_string(max_n) + " elements");
  const std::uintptr_t bytes = std::uintptr_t(n) * sizeof(T);
  require(in == out || in_address + bytes <= out_address || out_address + bytes <= in_address, op,
          "out", "overlaps in without being equal to it");

  const int shift = int(in_address % 16 / sizeof(T));
  const bool vector_store = out_address % 16 == in_address % 16;
  const std::int64_t tiles = (n + shift + tile_elements - 1) / tile_elements;
  const std::int64_t resident = std::int64_t(scan_blocks_per_sm) * current_sm_count();
  const std::int64_t blocks = tiles < resident ? tiles : resident;

  Lookback lookback{};
  lookback.tiles = tiles;
  // Held until the kernel is queued: its destructor records the scratch's last use.
  std::optional<detail::StreamScratch> scratch;
  if (tiles > 1) {
    std::int64_t entries = 0;
    for (std::int64_t count = tiles; count > 0; count /= radix, ++lookback.levels) entries += count;
    lookback.word_count = entries * words_per_entry<T>;
    // Tree words and the two counters, all zero between calls.
    const std::size_t counters = 2 * std::size_t(lookback.word_count) + 2;
    scratch.emplace(0, counters, stream, op);
    lookback.words = reinterpret_cast<unsigned long long*>(scratch->counters());
    lookback.tile_counter = scratch->counters() + 2 * lookback.word_count;
    lookback.finished_blocks = lookback.tile_counter + 1;
  }
  scan_tiles<T, Inclusive><<<unsigned(blocks), Tile<T>::threads, 0, stream>>>(
      in, out, n, shift, vector_store, lookback);
  detail::check_launch(op, Inclusive ? "scan_tiles<inclusive>" : "scan_tiles<exclusive>");
}

}  // namespace

template <class T>
void inclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  scan<T, true>("inclusive_scan", in, out, n, stream);
}

template <class T>
void exclusive_scan(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  scan<T, false>("exclusive_scan", in, out, n, stream);
}

#define ROOFLAB_INSTANTIATE_SCAN(T)                                          \
  template void inclusive_scan<T>(const T*, T*, std::int64_t, cudaStream_t); \
  template void exclusive_scan<T>(const T*, T*, std::int64_t, cudaStream_t);
ROOFLAB_INSTANTIATE_SCAN(float)
ROOFLAB_INSTANTIATE_SCAN(double)
ROOFLAB_INSTANTIATE_SCAN(std::int32_t)
ROOFLAB_INSTANTIATE_SCAN(std::int64_t)
ROOFLAB_INSTANTIATE_SCAN(std::uint32_t)
#undef ROOFLAB_INSTANTIATE_SCAN

}  // namespace rooflab
