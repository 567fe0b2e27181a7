// The production prefix sum: one pass over the data (read n, write n), one tile per block, and a
// deterministic decoupled look-back between tiles.
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
// GPU. There is no chain: a group's sum is published by the tile that closes it as soon as its 31
// siblings have published theirs, and every level is read at once, so a tile waits about as long
// as in the classic form (for its predecessor's aggregate). Integer types take the same path:
// wrapping addition is associative, so any order would give the same bits, and the tree costs
// no more than the classic look-back (docs/scan.md, "Measured candidates").
//
// Tile t is block t (blockIdx.x), as in CUB: the loads start as soon as a block starts, without
// an atomic ticket first. Forward progress: a tile only ever waits on entries published by tiles
// of lower index, and the hardware dispatches the blocks of a 1-D grid in increasing index order,
// so when block t runs, every block before it has been dispatched, holds its SM until it
// finishes, and (by induction on the index) finishes. The programming model does not promise
// this order; CUB's DeviceScan relies on it on every GPU, and so does this path.
#include <cuda/atomic>

#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "scan/warp_scan.cuh"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/scan.hpp"
#include "scan/scan_candidates.hpp"

namespace rooflab {
namespace {

// 8 warps x 8 rows x one 16-byte vector per lane: 32 KB a tile (8192 floats, 4096 doubles), with
// 128 bytes in flight per thread while the tile loads and 4 blocks (128 KB) an SM. Measured on an
// H200, 8192-element tiles beat 4096 (fewer look-backs, barriers and block starts per byte).
constexpr int scan_warps = 8;
constexpr int scan_rows = 8;

constexpr int radix_bits = 5;  // a warp reads a whole group of 32 entries at once
constexpr int radix = 1 << radix_bits;
// Fewer than 2^31 tiles need at most 7 levels (32^7 = 2^35). Warp 0 publishes; warps 1 to 7
// each read one level, so the whole look-back costs one round trip to L2 when nobody is late.
constexpr int max_levels = 7;

// An entry of the tree is stored as one 64-bit word per 32 bits of T: a ready tag in the high half,
// the payload in the low half. Each word is written once, with one atomic store, so a reader that
// sees the tag sees its payload; no fence is needed, and 8-byte types need no 128-bit atomics.
constexpr unsigned long long ready_tag = 1ull << 32;

// Tile and entry indices are 32-bit (fewer than 2^31 tiles, fewer than 2^32 entries in all): the
// look-back runs while a thread holds its whole tile in registers, and 64-bit index arithmetic
// there pushed the kernel into spills.
// Level m of the tree holds floor(tiles / 32^m) entries; the levels are stored one after another.
struct Lookback {
  unsigned long long* words;  // zero at launch
  unsigned tiles;             // fewer than 2^31
  int levels;                 // 0: a single tile, nothing to look back on
};

template <class T>
constexpr int words_per_entry = int(sizeof(T)) / 4;

template <class T>
__device__ __forceinline__ unsigned long long* entry_words(const Lookback& lookback, int level,
                                                           unsigned index) {
  unsigned level_begin = 0;
  for (unsigned count = lookback.tiles; level > 0; --level, count >>= radix_bits)
    level_begin += count;
  return lookback.words + std::size_t(level_begin + index) * words_per_entry<T>;
}

// The index a lane passes to read_published when it asks for no entry.
constexpr unsigned no_entry = ~0u;

// Lane c < words_per_entry stores word c of the entry; every lane holds `value`.
template <class T>
__device__ __forceinline__ void publish(const Lookback& lookback, int level, unsigned index,
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

// Entry `index` of `level` in each lane that asks for one (index != no_entry), once it is
// published; zero in the other lanes. Warp-collective: polls, sleeping a fixed 64 ns between
// polls, until every asking lane has its entry.
template <class T>
__device__ __forceinline__ T read_published(const Lookback& lookback, int level, unsigned index) {
  unsigned long long word[words_per_entry<T>] = {};
  bool ready = index == no_entry;
  unsigned long long* const entry = ready ? nullptr : entry_words<T>(lookback, level, index);
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
    // A late entry belongs to a tile still loading or summing, mostly the predecessor, due
    // within a few hundred ns: poll every 64 ns. (Backing off by doubling up to 512 ns
    // overslept it: on an H200 that took 738 against 717 us for 2^28 floats, 746 against 711
    // for int32.)
    __nanosleep(64);
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
__device__ void publish_and_close_groups(const Lookback& lookback, unsigned tile, T total,
                                         int lane) {
  publish(lookback, 0, tile, total, lane);
  unsigned index = tile;
  T value = total;
  for (int level = 0; level + 1 < lookback.levels && index % radix == radix - 1; ++level) {
    const T sibling = read_published<T>(
        lookback, level, lane < radix - 1 ? index - (radix - 1) + unsigned(lane) : no_entry);
    value = detail::warp_sum(lane < radix - 1 ? sibling : value);
    index >>= radix_bits;
    publish(lookback, level + 1, index, value, lane);
  }
}

// Warp 1 + level: the sum of the complete groups of `level` that precede the tile inside its
// ancestor's group (as many as the tile index's base-32 digit at that level).
template <class T>
__device__ T sum_of_earlier_groups(const Lookback& lookback, int level, unsigned tile, int lane) {
  const unsigned position = tile >> (radix_bits * level);
  const int digit = int(position % radix);
  if (digit == 0) return T(0);
  return detail::warp_sum(read_published<T>(
      lookback, level, lane < digit ? position - unsigned(digit) + unsigned(lane) : no_entry));
}

// One tile per block, tile t = block t. `shift` places the tiles so that in + (tile start) is
// 16-byte aligned: tile t covers elements
// [t * tile_elements - shift, (t + 1) * tile_elements - shift). With add_carry, `carry` is added
// to every output last (the scan continues one that ended at carry).
// 1024 resident threads an SM (4 blocks of 256 or 2 of 512): 64 registers a thread. The inclusive
// forms fit without spills; the exclusive ones spill a few words (sm_90, CUDA 12), in the
// look-back, after the loads are issued.
template <class T, bool Inclusive, int Warps, int Rows>
__global__ void __launch_bounds__(Warps * 32, 1024 / (Warps * 32))
    scan_tiles(const T* in, T* out, std::int64_t n, int shift, bool vector_store, Lookback lookback,
               bool add_carry, T carry) {
  static_assert(Warps >= max_levels + 1, "one warp per level plus the publishing warp");
  using Tile = detail::TileScan<T, Warps, Rows>;
  __shared__ typename Tile::Shared tile_shared;
  __shared__ T level_sums[max_levels];
  const int warp = int(threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  const unsigned tile_index = blockIdx.x;  // see "Forward progress" at the top
  const std::int64_t first = std::int64_t(tile_index) * Tile::tile_elements - shift;

  Tile tile;
  tile.load(in, first, n, warp, lane);
  const T slice_total = tile.template scan_warp_slice<Inclusive>(lane);
  T tile_total;
  const T before_warp = tile.combine_warps(tile_shared, slice_total, warp, lane, tile_total);
  if (lookback.levels > 0) {
    if (warp == 0) {
      publish_and_close_groups(lookback, tile_index, tile_total, lane);
    } else if (warp <= lookback.levels) {
      const T sum = sum_of_earlier_groups<T>(lookback, warp - 1, tile_index, lane);
      if (lane == 0) level_sums[warp - 1] = sum;
    }
  }
  if (warp > 0) tile.add(before_warp);
  if (lookback.levels > 0) {
    __syncthreads();
    // From the top level down, in the same order in every thread and every run.
    T prefix = T(0);
    for (int level = lookback.levels - 1; level >= 0; --level)
      prefix = detail::wrapping_add(prefix, level_sums[level]);
    if (tile_index > 0) tile.add(prefix);
  }
  if (add_carry) tile.add(carry);
  tile.store(out, first, n, vector_store, warp, lane);
}

// `carry`, where given, is added to every output last.
template <class T, bool Inclusive, int Warps = scan_warps, int Rows = scan_rows>
void scan(const char* op, const T* in, T* out, std::int64_t n, cudaStream_t stream,
          std::optional<T> carry = std::nullopt) {
  require(n >= 0, op, "n", "must not be negative (got " + std::to_string(n) + ")");
  if (n == 0) return;
  require(in != nullptr, op, "in", "is null");
  require(out != nullptr, op, "out", "is null");
  const auto in_address = reinterpret_cast<std::uintptr_t>(in);
  const auto out_address = reinterpret_cast<std::uintptr_t>(out);
  require(in_address % sizeof(T) == 0, op, "in", "is not aligned to its element size");
  require(out_address % sizeof(T) == 0, op, "out", "is not aligned to its element size");
  // One block per tile: the grid's x dimension holds fewer than 2^31 blocks.
  using Tile = detail::TileScan<T, Warps, Rows>;
  constexpr std::int64_t tile_elements = Tile::tile_elements;
  const std::int64_t max_n = std::int64_t(INT_MAX - 1) * tile_elements;
  require(n <= max_n, op, "n", "exceeds " + std::to_string(max_n) + " elements");
  const std::uintptr_t bytes = std::uintptr_t(n) * sizeof(T);
  require(in == out || in_address + bytes <= out_address || out_address + bytes <= in_address, op,
          "out", "overlaps in without being equal to it");

  const int shift = int(in_address % 16 / sizeof(T));
  const bool vector_store = out_address % 16 == in_address % 16;
  const std::int64_t tiles = (n + shift + tile_elements - 1) / tile_elements;

  Lookback lookback{};
  lookback.tiles = unsigned(tiles);
  std::optional<StreamBuffer> scratch;
  if (tiles > 1) {
    std::int64_t entries = 0;
    for (std::int64_t count = tiles; count > 0; count /= radix, ++lookback.levels) entries += count;
    // Every entry starts at zero (no ready tag), in one memset on the stream (stream-ordered
    // scratch is reused, so it holds the previous call's tags).
    const std::size_t scratch_bytes =
        sizeof(unsigned long long) * std::size_t(entries * words_per_entry<T>);
    scratch.emplace(scratch_bytes, stream, op);
    ROOFLAB_CUDA(op, "zeroing the look-back tree",
                 cudaMemsetAsync(scratch->data(), 0, scratch_bytes, stream));
    lookback.words = scratch->as<unsigned long long>();
  }
  scan_tiles<T, Inclusive, Warps, Rows><<<unsigned(tiles), Tile::threads, 0, stream>>>(
      in, out, n, shift, vector_store, lookback, carry.has_value(), carry.value_or(T(0)));
  detail::check_launch(op, Inclusive ? "scan_tiles<inclusive>" : "scan_tiles<exclusive>");
}

}  // namespace

namespace detail {

template <class T>
void inclusive_scan_elements(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  scan<T, true>("inclusive_scan", in, out, n, stream);
}

template <class T>
void exclusive_scan_elements(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  scan<T, false>("exclusive_scan", in, out, n, stream);
}

template <class T>
void inclusive_scan_elements_after(const T* in, T* out, std::int64_t n, T carry,
                                   cudaStream_t stream) {
  scan<T, true>("inclusive_scan", in, out, n, stream, carry);
}

template <class T>
void exclusive_scan_elements_after(const T* in, T* out, std::int64_t n, T carry,
                                   cudaStream_t stream) {
  scan<T, false>("exclusive_scan", in, out, n, stream, carry);
}

#define ROOFLAB_INSTANTIATE_SCAN(T)                                                            \
  template void inclusive_scan_elements<T>(const T*, T*, std::int64_t, cudaStream_t);          \
  template void exclusive_scan_elements<T>(const T*, T*, std::int64_t, cudaStream_t);          \
  template void inclusive_scan_elements_after<T>(const T*, T*, std::int64_t, T, cudaStream_t); \
  template void exclusive_scan_elements_after<T>(const T*, T*, std::int64_t, T, cudaStream_t);
ROOFLAB_INSTANTIATE_SCAN(float)
ROOFLAB_INSTANTIATE_SCAN(double)
ROOFLAB_INSTANTIATE_SCAN(std::int32_t)
ROOFLAB_INSTANTIATE_SCAN(std::int64_t)
ROOFLAB_INSTANTIATE_SCAN(std::uint32_t)
#undef ROOFLAB_INSTANTIATE_SCAN

template <class T>
void inclusive_scan_16k_tiles(const T* in, T* out, std::int64_t n, cudaStream_t stream) {
  scan<T, true, 2 * scan_warps, scan_rows>("inclusive_scan", in, out, n, stream);
}

template void inclusive_scan_16k_tiles<float>(const float*, float*, std::int64_t, cudaStream_t);
template void inclusive_scan_16k_tiles<std::int32_t>(const std::int32_t*, std::int32_t*,
                                                     std::int64_t, cudaStream_t);

}  // namespace detail

}  // namespace rooflab
