#pragma once
// Scan building blocks for device code (nvcc only): what one warp does, and what the threads of a
// block do together on one tile held in registers. Every combination happens in a fixed order
// (fixed shuffle trees, fixed serial chains, no atomics), so the same input gives the same bits on
// every run, floating point included.
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rooflab::detail {

constexpr unsigned full_warp_mask = 0xFFFFFFFFu;

// a + b. Integer sums wrap modulo 2^bits: they are computed in the unsigned type, where wrapping
// is defined, because a signed overflow would be undefined behaviour.
template <class T>
__device__ __forceinline__ T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using Unsigned = std::make_unsigned_t<T>;
    return T(Unsigned(a) + Unsigned(b));
  } else {
    return a + b;
  }
}

// Inclusive scan over the first `Lanes` lanes of a warp (Kogge-Stone: log2(Lanes) shuffle steps;
// lane i ends with x_0 + ... + x_i). Lanes at or beyond `Lanes` hold values that are not used.
template <class T, int Lanes = 32>
__device__ __forceinline__ T warp_inclusive_scan(T x, int lane) {
  static_assert(Lanes >= 1 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "a power of two up to 32");
#pragma unroll
  for (int delta = 1; delta < Lanes; delta *= 2) {
    const T before = __shfl_up_sync(full_warp_mask, x, delta);
    if (lane >= delta) x = wrapping_add(before, x);
  }
  return x;
}

// Sum of the 32 lanes' values in one fixed tree (pairs at distance 16, 8, 4, 2, 1 towards lane 0),
// handed to every lane. A butterfly (shfl_xor) would let each lane add in its own order, and float
// lanes could then disagree in the last bit; here every lane gets lane 0's bits.
template <class T>
__device__ __forceinline__ T warp_sum(T x) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2)
    x = wrapping_add(x, __shfl_down_sync(full_warp_mask, x, delta));
  return __shfl_sync(full_warp_mask, x, 0);
}

// One tile of Warps x 32 lanes x Rows x (16 / sizeof(T)) consecutive elements, scanned in
// registers.
//
// Layout ("warp-striped vectors"): warp w owns the contiguous slice [w, w + 1) * warp_elements of
// the tile; in it, lane l's row r is the 16-byte vector number r * 32 + l. Each load or store
// instruction of a warp therefore moves 512 contiguous bytes (fully coalesced, one LDG.128 or
// STG.128 per lane), with every row's vectors in flight at once to hide memory latency.
//
// The scan: a lane adds up its own vector serially, a warp scan (5 shuffles) combines the 32
// vectors of a row, a running carry chains the rows, and the warps' totals are combined through
// shared memory. Elements outside [0, n) read as zero and are never written, so a tile may hang
// over either end of the array.
template <class T, int Warps, int Rows>
struct TileScan {
  static constexpr int vector_elements = 16 / int(sizeof(T));
  static constexpr int threads = Warps * 32;
  static constexpr int warp_elements = Rows * 32 * vector_elements;
  static constexpr int tile_elements = Warps * warp_elements;
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- and 8-byte element types");

  // A native 16-byte vector type, so that loads and stores compile to LDG.128 and STG.128.
  using Vector = std::conditional_t<sizeof(T) == 4, uint4, ulonglong2>;

  struct Shared {
    T warp_totals[Warps];
  };

  T item[Rows][vector_elements];

  // The bits of one row as a native vector.
  __device__ __forceinline__ static Vector pack(const T (&elements)[vector_elements]) {
    if constexpr (sizeof(T) == 4) {
      return make_uint4(bits<std::uint32_t>(elements[0]), bits<std::uint32_t>(elements[1]),
                        bits<std::uint32_t>(elements[2]), bits<std::uint32_t>(elements[3]));
    } else {
      return make_ulonglong2(bits<unsigned long long>(elements[0]),
                             bits<unsigned long long>(elements[1]));
    }
  }
  template <class Bits>
  __device__ __forceinline__ static Bits bits(T value) {
    Bits result;
    std::memcpy(&result, &value, sizeof(T));
    return result;
  }

  // Offset of lane `lane`'s row `row` from the first element of the tile.
  __device__ __forceinline__ static int offset(int warp, int lane, int row) {
    return warp * warp_elements + (row * 32 + lane) * vector_elements;
  }

  // Loads the tile whose element 0 is in[first]; `first` may be negative (a tile hanging over the
  // start). Requires in + first to be 16-byte aligned, as a pointer value, so that every whole
  // vector inside [0, n) can be read with one 16-byte load.
  __device__ __forceinline__ void load(const T* in, std::int64_t first, std::int64_t n, int warp,
                                       int lane) {
#pragma unroll
    for (int row = 0; row < Rows; ++row) {
      const std::int64_t begin = first + offset(warp, lane, row);
      if (begin >= 0 && begin + vector_elements <= n) {
        const Vector vector = *reinterpret_cast<const Vector*>(in + begin);
        std::memcpy(item[row], &vector, sizeof(Vector));
      } else {
#pragma unroll
        for (int k = 0; k < vector_elements; ++k)
          item[row][k] = begin + k >= 0 && begin + k < n ? in[begin + k] : T(0);
      }
    }
  }

  // Stores the tile loaded from `first`; whole vectors with one 16-byte store when out + first is
  // 16-byte aligned (vector_aligned), otherwise element by element.
  __device__ __forceinline__ void store(T* out, std::int64_t first, std::int64_t n,
                                        bool vector_aligned, int warp, int lane) const {
#pragma unroll
    for (int row = 0; row < Rows; ++row) {
      const std::int64_t begin = first + offset(warp, lane, row);
      if (vector_aligned && begin >= 0 && begin + vector_elements <= n) {
        // Through the intrinsic: a plain vector assignment here gets merged with the scalar
        // branch below and split into 4-byte stores.
        __stwb(reinterpret_cast<Vector*>(out + begin), pack(item[row]));
      } else {
#pragma unroll
        for (int k = 0; k < vector_elements; ++k)
          if (begin + k >= 0 && begin + k < n) out[begin + k] = item[row][k];
      }
    }
  }

  // Scans the warp's slice in place (inclusive, or exclusive: element 0 of the slice becomes 0)
  // and returns the slice's total to every lane.
  template <bool Inclusive>
  __device__ __forceinline__ T scan_warp_slice(int lane) {
    T carry = T(0);
#pragma unroll
    for (int row = 0; row < Rows; ++row) {
#pragma unroll
      for (int k = 1; k < vector_elements; ++k)
        item[row][k] = wrapping_add(item[row][k - 1], item[row][k]);
      const T lane_inclusive = warp_inclusive_scan(item[row][vector_elements - 1], lane);
      const T previous_lane = __shfl_up_sync(full_warp_mask, lane_inclusive, 1);
      const T row_total = __shfl_sync(full_warp_mask, lane_inclusive, 31);
      const T base = lane == 0 ? carry : wrapping_add(carry, previous_lane);
      if constexpr (Inclusive) {
#pragma unroll
        for (int k = 0; k < vector_elements; ++k) item[row][k] = wrapping_add(base, item[row][k]);
      } else {
#pragma unroll
        for (int k = vector_elements - 1; k > 0; --k)
          item[row][k] = wrapping_add(base, item[row][k - 1]);
        item[row][0] = base;
      }
      carry = wrapping_add(carry, row_total);
    }
    return carry;
  }

  // Combines the warps' slice totals through shared memory (one __syncthreads; every thread of the
  // block must call). Returns the sum of the slices before this warp's and sets tile_total. The
  // caller must __syncthreads() before `shared` is used again.
  __device__ __forceinline__ T combine_warps(Shared& shared, T slice_total, int warp, int lane,
                                             T& tile_total) {
    if (lane == 0) shared.warp_totals[warp] = slice_total;
    __syncthreads();
    const T totals =
        warp_inclusive_scan<T, Warps>(lane < Warps ? shared.warp_totals[lane] : T(0), lane);
    tile_total = __shfl_sync(full_warp_mask, totals, Warps - 1);
    const T before_warp = __shfl_sync(full_warp_mask, totals, warp > 0 ? warp - 1 : 0);
    return warp > 0 ? before_warp : T(0);
  }

  // Scans the whole tile in place (inclusive or exclusive) and returns its total.
  template <bool Inclusive>
  __device__ __forceinline__ T scan(Shared& shared, int warp, int lane) {
    const T slice_total = scan_warp_slice<Inclusive>(lane);
    T tile_total;
    const T before_warp = combine_warps(shared, slice_total, warp, lane, tile_total);
    if (warp > 0) add(before_warp);
    return tile_total;
  }

  // The tile's total without scanning it (lane sums, one fixed warp tree, then the warps in order).
  // Same barrier contract as combine_warps.
  __device__ __forceinline__ T reduce(Shared& shared, int warp, int lane) {
    T lane_total = T(0);
#pragma unroll
    for (int row = 0; row < Rows; ++row)
#pragma unroll
      for (int k = 0; k < vector_elements; ++k) lane_total = wrapping_add(lane_total, item[row][k]);
    T tile_total;
    combine_warps(shared, warp_sum(lane_total), warp, lane, tile_total);
    return tile_total;
  }

  // Adds `offset` (the sum of everything before this thread's elements) to each element.
  __device__ __forceinline__ void add(T offset) {
#pragma unroll
    for (int row = 0; row < Rows; ++row)
#pragma unroll
      for (int k = 0; k < vector_elements; ++k) item[row][k] = wrapping_add(offset, item[row][k]);
  }
};

}  // namespace rooflab::detail
