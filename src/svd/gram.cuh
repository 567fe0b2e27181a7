#pragma once
// The Gram schedule's device machinery, shared by its three files: the Gram kernels (gram.cu), the
// fused round (fused.cu) and the sweeps in one cluster per matrix (cluster.cu). Tiles of rows
// staged by asynchronous copies, products on the tensor cores (double) or by FMAs (float), a pair's
// two-sided Jacobi solve of its 32 x 32 Gram matrix, and the product of rows and the rotations.
// The cp.async and mma paths are behind __CUDA_ARCH__ with their fallbacks.
#include "svd/global_schedule.cuh"

namespace rooflab::jacobi {

// The Gram schedule (the ladder's rung 7): the blocked ring with the inner work moved off the
// columns. Blocks of 16 columns ride the same odd-even ring; for each pair of blocks of a round
// (32 columns, a warp's width) three kernels run: gram_partials forms the pair's Gram matrix
// G = W_p^T W_p in slices of rows, gram_solve diagonalizes G by two-sided Jacobi (a thread
// per 2 x 2 block of G and Q in shared memory) and sorts the eigenvalues,
// and gram_apply replaces the pair's columns of W and V by W_p Q and V_p Q. The columns cross
// memory three times per pair of blocks, and an inner round touches 32 x 32 numbers where the
// blocked schedule's touches all M rows of the 2b columns. When a round's solves alone fill the
// GPU (a large batch), or the columns are short, the solve forms G itself (form_gram) and the
// partials kernel drops out.
// The Gram test is the column test (|G_pq| <= tol sqrt(G_pp G_qq) on freshly formed dot
// products), so convergence means the same.

constexpr int gram_width = 32;              // columns of a pair of blocks: a lane each
constexpr int gram_block = gram_width / 2;  // columns of a block
constexpr int gram_tile_rows = 64;          // rows staged in shared memory at a time
constexpr int gram_threads = 128;
// One inner sweep per pair of blocks: on the H200, 256 x 256 in double took 10.0, 13.3 and 17.2 ms
// with 1, 2 and 3 (the outer sweeps barely fall).
constexpr int gram_inner_sweeps = 1;
// Every gram_full_inner_period-th round of an outer sweep (round 0 among them, and at least two a
// sweep: inner_sweep_is_full) the inner sweep takes every pair of the 32 columns (31 rounds); the
// others take only the 256 pairs between the two blocks (16 rounds), as the pairs within a block
// met in round 0. The outer sweeps grow a little, the solves shrink more: on the H200, double, with
// 2 such rounds a sweep against every round full, 100 x 100 1.52 against 1.82 ms (10 against 9
// sweeps), 256 x 256 3.16 against 3.43 ms (11 against 9), 1024 x 1024 19.8 against 21.4 ms. Once
// the rest of a round had shrunk, every 5th round against 2 evenly spaced ones a sweep (the same
// at 100 and 125 columns, whose rings have 8 positions), same run: 256 x 256 1.84, 1.71, 1.89
// against 2.01, 1.99, 1.88 ms (seeds 1, 2, 3); 512 x 512 4.95, 5.46 against 5.03, 5.21 ms (seeds
// 1, 2); 1024 x 1024 14.5 against 15.2 ms. Every 4th: 1.91, 2.07, 2.12; 4.93, 5.14; 15.6 ms.
constexpr int gram_full_inner_period = 5;

// The inner ordering of a pair of blocks' solve in one round: the circle method over the 32
// columns, or the cross ordering (jacobi_math.hpp).
struct InnerOrder {
  bool cross = false;
  __device__ int seat(int column) const {
    return cross ? cross_seat(column, 0, gram_width) : circle_seat(column, 0, gram_width);
  }
  __device__ int next_seat(int seat) const {
    return cross ? next_cross_seat(seat, gram_width) : next_circle_seat(seat, gram_width);
  }
  // Rounds of one inner sweep; then every column is back in its first seat.
  __device__ int rounds() const { return cross ? gram_block : gram_width - 1; }
  // Whether G_kl is one of the pairs this ordering rotates.
  __device__ bool rotates(int k, int l) const {
    return cross ? (k < gram_block) != (l < gram_block) : k != l;
  }
};
// The Gram matrices' row slices: enough for this many partials blocks per SM in a round (a long
// matrix's columns are summed by several blocks). The kernel takes 128 registers, so 4 blocks are
// resident: on the H200 at 7b19479, 4 against 8 took 2048 x 2048 double to 91.9 from 94.5 ms (the
// round's partials 17.3 against 18.4 us: one wave of longer slices); 1024 x 1024 has 16 slices of
// one tile either way. (At 5a872e0, 8 against 2: 1024 x 1024 27.3 against 28.4 ms.) Tiles by
// asynchronous copies instead of registers (6 blocks per SM by shared memory) took 7.65 against
// 6.65 us a round at 1024 x 1024, the same 18.4 us at 2048 x 2048.
constexpr int gram_partial_blocks_per_sm = 4;
// Rows of W or V per apply block (a warp per 16 of them), and its blocks per SM. The rows arrive by
// asynchronous copies, which hold no registers. On the H200, a round of a batch of 100 x 256 x 256
// double: 64 rows 68 us at 5, 6 or 7 blocks per SM (71.5 with the rows staged in registers at 4),
// 128 rows 62.5 us at 4 blocks (69 at 3), 256 rows 74 us at 2; 2048 x 2048: 49.6, 47.2, 53.6 us.
// 16-byte copies and stores then took the 128-row rounds to 52 and 42 us.
constexpr int gram_apply_rows = 128;
constexpr int gram_apply_blocks_per_sm = 4;
constexpr int gram_apply_threads = 2 * gram_apply_rows;
// Threads of a pair's solve: one per 2 x 2 block of the 32 x 32 Gram matrix in each round.
constexpr int gram_solve_threads = (gram_width / 2) * (gram_width / 2);

// Pair `item` of round `round`: its matrix and first position; false when the matrix stopped.
template <class T>
__device__ bool gram_pair(const GlobalState<T>& G, int round, std::int64_t item,
                          std::int64_t& matrix, int& first) {
  const int pairs = pairs_in_round(round, G.block_positions);
  matrix = item / pairs;
  first = first_position(round, int(item % pairs)) * gram_block;
  return G.active[matrix];
}

// The 16 x 8 x 4 double-precision tensor-core product D += A B of a warp (DMMA, sm_90): lane
// (g, t) = (lane / 4, lane % 4) holds A_gt and A_g+8,t, B_tg, and in d[e] the element of D at
// (mma_row(e), mma_col(e)). On the H200 it runs at twice the rate of the 8 x 8 x 4 form (64
// against 33 TFLOP/s with every SM busy), whose pipe was the apply's busiest unit.
__device__ __forceinline__ void mma_16x8x4(double (&d)[4], double a0, double a1, double b) {
#if __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, "
      "%2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(b));
#elif __CUDA_ARCH__ >= 800
  // Ampere and Ada have only the 8 x 8 x 4 form: rows 0-7 (a0) and rows 8-15 (a1) one each.
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a0), "d"(b));
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[2]), "+d"(d[3])
      : "d"(a1), "d"(b));
#else
  // Turing has no double tensor cores: the same product and layout by shuffles and FMAs. Lane
  // (group, in_group) holds A's rows group and group + 8 at column in_group, and B's column group
  // at row in_group; its outputs are rows group, group + 8 by columns 2 in_group, 2 in_group + 1.
  const int lane = threadIdx.x & 31, group = lane >> 2, in_group = lane & 3;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const double low = __shfl_sync(0xffffffffu, a0, 4 * group + k);
    const double high = __shfl_sync(0xffffffffu, a1, 4 * group + k);
    const double b0 = __shfl_sync(0xffffffffu, b, 8 * in_group + k);
    const double b1 = __shfl_sync(0xffffffffu, b, 8 * in_group + 4 + k);
    d[0] = fma(low, b0, d[0]);
    d[1] = fma(low, b1, d[1]);
    d[2] = fma(high, b0, d[2]);
    d[3] = fma(high, b1, d[3]);
  }
#endif
}
// Row and column, within the 16 x 8 product, of element e of the lane's accumulator.
__device__ __forceinline__ int mma_row(int e) { return ((threadIdx.x & 31) >> 2) + 8 * (e >> 1); }
__device__ __forceinline__ int mma_col(int e) { return 2 * (threadIdx.x & 3) + (e & 1); }

// One element from global to shared memory by an asynchronous copy (cp.async), which holds no
// register while it is in flight: a block keeps a whole tile of rows loading with few registers,
// so more blocks share an SM. With `valid` false the element is zero and nothing is read.
// Turing has no cp.async: there the copies are plain loads and stores, done when the call returns,
// so that committing and waiting have nothing to do.
template <class T>
__device__ __forceinline__ void copy_async(T* shared, const T* global, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(address), "l"(global),
               "n"(int(sizeof(T))), "r"(valid ? int(sizeof(T)) : 0)
               : "memory");
#else
  *shared = valid ? *global : T(0);
#endif
}
// 16 bytes of a column (16 / sizeof(T) consecutive elements, both addresses 16-byte aligned) from
// global to shared memory, the first `valid` elements read and the rest zero: cp.async.cg, a
// quarter or half the copies of the element form, and L1 left alone.
template <class T>
__device__ __forceinline__ void copy_async_chunk(T* shared, const T* global, int valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid * int(sizeof(T)))
               : "memory");
#else
  for (int e = 0; e < int(16 / sizeof(T)); ++e) shared[e] = e < valid ? global[e] : T(0);
#endif
}
// Closes the copies issued since the last call into a group.
__device__ __forceinline__ void commit_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most `pending` of this thread's groups are still in flight (then a barrier
// makes every thread's copies visible to the block).
template <int pending>
__device__ __forceinline__ void wait_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

// Issues, as one group, the asynchronous copies of rows r0 .. r0 + tile_rows - 1 of `slots` (a
// pair's 32) columns of X (leading dimension ld, `rows` rows) into tile, column slot s at tile[s *
// ldt]; column_of(slot) names slot's column, those >= N and the rows past `rows` read as zero.
// 16-byte copies when every column starts on 16 bytes, else one element a copy; `threads` threads
// share them. With `commit` false the copies join the group the caller commits next.
// A thread copies the same rows of every `step`-th slot: its rows, their bounds and its place in
// the tile are worked out once, and each copy is left its column's address (in the all-pairs
// test's SASS, 119 instructions for four 16-byte copies, where working out each copy's row and
// slot took 162).
template <int tile_rows, int threads, int slots = gram_width, bool commit = true, class T,
          class ColumnOf>
__device__ __forceinline__ void copy_tile_async(T* tile, int ldt, const T* X, std::int64_t ld,
                                                int rows, int N, int r0, ColumnOf column_of) {
  constexpr int chunk = 16 / sizeof(T), chunks = tile_rows / chunk;  // 16-byte copies per column
  if (ld % chunk == 0) {
    static_assert(threads % chunks == 0, "a thread's rows are the same in every column it copies");
    constexpr int step = threads / chunks;
    static_assert(slots % step == 0, "the threads share the columns evenly");
    const int r = chunk * (int(threadIdx.x) % chunks), first = int(threadIdx.x) / chunks;
    const int valid_rows = max(0, min(chunk, rows - r0 - r));
    const T* from = X + r0 + r;
    T* to = tile + first * ldt + r;
#pragma unroll 4
    for (int i = 0; i < slots / step; ++i) {
      const int c = column_of(first + i * step);
      const int valid = c < N ? valid_rows : 0;
      copy_async_chunk(to + i * step * ldt, valid > 0 ? from + c * ld : X, valid);
    }
  } else {
    static_assert(threads % tile_rows == 0, "a thread's row is the same in every column it copies");
    constexpr int step = threads / tile_rows;
    static_assert(slots % step == 0, "the threads share the columns evenly");
    const int r = int(threadIdx.x) % tile_rows, first = int(threadIdx.x) / tile_rows;
    const bool in_rows = r0 + r < rows;
    const T* from = X + r0 + r;
    T* to = tile + first * ldt + r;
#pragma unroll 4
    for (int i = 0; i < slots / step; ++i) {
      const int c = column_of(first + i * step);
      const bool valid = in_rows && c < N;
      copy_async(to + i * step * ldt, valid ? from + c * ld : X, valid);
    }
  }
  if (commit) commit_copies();
}

// Calls consume(tile) on the tiles of rows begin .. end - 1 in order, gram_tile_rows at a time,
// each loaded by load(r0, tile) into one of two buffers of tile_size while the one before it is
// consumed. Every thread of the block calls it.
template <class T, class Load, class Consume>
__device__ __forceinline__ void stream_tiles(int begin, int end, T* tiles, int tile_size, Load load,
                                             Consume consume) {
  load(begin, tiles);
  int buffer = 0;
  for (int r0 = begin; r0 < end; r0 += gram_tile_rows, buffer ^= 1) {
    if (r0 + gram_tile_rows < end) {
      load(r0 + gram_tile_rows,
           tiles + (buffer ^ 1) * tile_size);  // consumed before the last barrier
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();  // the tile is in, from every thread
    consume(tiles + buffer * tile_size);
    __syncthreads();  // consumed: the next loads may overwrite it
  }
}

// Adds a tile's `rows` rows to blocks of the product X^T Y on the tensor cores (x_tile and y_tile
// hold column s of their rows at [s * ld]): X's columns 16 row_block .. 16 row_block + 15 against
// `count` blocks of 8 of Y's columns from 8 first_block; sum[b][e] accumulates element
// (16 row_block + mma_row(e), 8 (first_block + b) + mma_col(e)). With x_tile = y_tile, a block of
// the Gram matrix.
template <int rows = gram_tile_rows, int count>
__device__ __forceinline__ void add_tile_product(const double* x_tile, const double* y_tile, int ld,
                                                 int row_block, int first_block,
                                                 double (&sum)[count][4]) {
  const int lane = threadIdx.x & 31, group = lane >> 2, in_group = lane & 3;
  const double* a = x_tile + (16 * row_block + group) * ld + in_group;
  const double* b = y_tile + (8 * first_block + group) * ld + in_group;
  // Unrolled 4 times the partials needed 150 registers, more than their 4 blocks per SM allow. A
  // single block (a solve's share) is unrolled whole: every load is issued before the products
  // wait on them, which matters where y_tile is another block's shared memory.
  constexpr int unroll = count == 1 ? rows / 4 : 2;
#pragma unroll unroll
  for (int k = 0; k < rows; k += 4)
#pragma unroll
    for (int nt = 0; nt < count; ++nt) mma_16x8x4(sum[nt], a[k], a[8 * ld + k], b[8 * nt * ld + k]);
}
// The same in float, with FMAs: a thread's patch, X's columns i0 .. i0 + R - 1 against Y's
// j0 .. j0 + C - 1, accumulated in sum[c][r].
template <int rows = gram_tile_rows, int R, int C>
__device__ __forceinline__ void add_tile_product(const float* x_tile, const float* y_tile, int ld,
                                                 int i0, int j0, float (&sum)[C][R]) {
#pragma unroll 4
  for (int k = 0; k < rows; ++k)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < C; ++c)
        sum[c][r] = fma(x_tile[(i0 + r) * ld + k], y_tile[(j0 + c) * ld + k], sum[c][r]);
}
// A 32 x 32 product shared by gram_threads threads (the partials' Gram, the all-pairs test's pair
// of groups, whose block has two such teams): thread t's place is t % gram_threads. In double warp
// w holds the 16 x 16 quarter at rows 16 (w % 2) and column blocks 2 (w / 2) + b, element a of
// block b as add_tile_product lays it out; in float thread t the 2 x 4 patch at (2 (t % 16), 4 (t /
// 16)), element (a, b) at sum[b][a].
template <class T>
struct GramQuarter {
  static constexpr int outer = sizeof(T) == 8 ? 2 : 4, inner = 8 / outer, sums = outer * inner;
  T sum[outer][inner] = {};
  // Adds a tile's `rows` rows (column s at tile[s * ld]): the product's rows are columns 0..31 of
  // the tile, its columns the 32 from `first_column`.
  template <int rows = gram_tile_rows>
  __device__ __forceinline__ void add_tile(const T* tile, int ld, int first_column) {
    const int t = threadIdx.x % gram_threads, warp = t >> 5;
    if constexpr (sizeof(T) == 8)
      add_tile_product<rows>(tile, tile, ld, warp % 2, first_column / 8 + 2 * (warp / 2), sum);
    else
      add_tile_product<rows>(tile, tile, ld, 2 * (t % 16), first_column + 4 * (t / 16), sum);
  }
  // Row and column in the product of sum[b][a].
  __device__ __forceinline__ static int row(int b, int a) {
    const int t = threadIdx.x % gram_threads;
    if constexpr (sizeof(T) == 8) return 16 * ((t >> 5) % 2) + mma_row(a);
    return 2 * (t % 16) + a;
  }
  __device__ __forceinline__ static int column(int b, int a) {
    const int t = threadIdx.x % gram_threads;
    if constexpr (sizeof(T) == 8) return 8 * (2 * ((t >> 5) / 2) + b) + mma_col(a);
    return 4 * (t / 16) + b;
  }
};

// A solve block's share of a pair's Gram matrix G = X^T X, formed from tiles of 64 rows (column s
// of the rows at tile[s * ld]): in double warp w the 16 x 8 block at rows 16 (w % 2),
// columns 8 (w / 2) on the tensor cores, as add_tile_product lays it out; in float thread t the
// 2 x 2 patch at (2 (t % 16), 2 (t / 16)) with FMAs.
template <class T>
struct SolveGramPatch {
  std::conditional_t<sizeof(T) == 8, double[1][4], float[2][2]> sum = {};
  __device__ __forceinline__ void add_tile(const T* tile, int ld) { add_tiles(tile, tile, ld); }
  // The same share of X^T Y, X's columns in x_tile and Y's in y_tile.
  __device__ __forceinline__ void add_tiles(const T* x_tile, const T* y_tile, int ld) {
    const int warp = threadIdx.x >> 5;
    if constexpr (sizeof(T) == 8)
      add_tile_product(x_tile, y_tile, ld, warp % 2, warp / 2, sum);
    else
      add_tile_product(x_tile, y_tile, ld, 2 * (threadIdx.x % 16), 2 * (threadIdx.x / 16), sum);
  }
  // Calls put(k, l, G_kl) for each element of the patch.
  template <class Put>
  __device__ __forceinline__ void for_each(Put put) const {
    if constexpr (sizeof(T) == 8) {
      const int warp = threadIdx.x >> 5;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        put(16 * (warp % 2) + mma_row(e), 8 * (warp / 2) + mma_col(e), sum[0][e]);
    } else {
      const int i0 = 2 * (threadIdx.x % 16), j0 = 2 * (threadIdx.x / 16);
#pragma unroll
      for (int b = 0; b < 2; ++b)
#pragma unroll
        for (int a = 0; a < 2; ++a) put(i0 + a, j0 + b, sum[b][a]);
    }
  }
};

// Where seat s's element lies in a row of the solve's G or Q: the even seats first, then the odd
// ones (solve_pair says why).
__device__ __forceinline__ int seat_column(int seat) {
  return (seat & 1) * (gram_width / 2) + (seat >> 1);
}

// gram_solve's own formation, for rounds with pairs enough to fill the GPU with solves or columns
// of at most two tiles of rows: the solve's block forms its pair's Gram matrix itself, 64 rows at a
// time by asynchronous copies into two tiles that share the memory of G's and Q's buffers (the next
// tile loads while this one is multiplied), and leaves G in `g0` in the ordering's first seats. The
// partials kernel and its trip through memory drop out. `column` is lane l's W column: position
// first + l.
template <class T>
__device__ void form_gram(const GlobalState<T>& G, std::int64_t matrix, int column,
                          const InnerOrder& order, T* tiles, T* g0, int ld_g) {
  constexpr int ld = gram_tile_rows + 4;  // 4 (mod 16): the fragments' lanes hit distinct banks
  constexpr int tile_size = gram_width * ld;
  const T* W = G.w(matrix);
  SolveGramPatch<T> patch;
  stream_tiles(
      0, G.M, tiles, tile_size,
      [&](int r0, T* tile) {  // lane `slot` holds the slot's column
        copy_tile_async<gram_tile_rows, gram_solve_threads>(
            tile, ld, W, G.ldw, G.M, G.N, r0,
            [&](int slot) { return __shfl_sync(0xffffffffu, column, slot); });
      },
      [&](const T* tile) { patch.add_tile(tile, ld); });
  patch.for_each([&](int k, int l, T value) {
    g0[order.seat(k) * ld_g + seat_column(order.seat(l))] = value;
  });
}

// a when p, else b, by a select instruction. Written as a conditional, the solve's exact diagonal
// block compiled to a branch that split every warp every round (two lanes of each take it); as
// selects, 256 x 256 double took 2.13 against 2.17 ms and 1024 x 1024 15.8 against 16.0 ms (H200).
__device__ __forceinline__ double select_value(bool p, double a, double b) {
  double r;
  asm("{.reg .pred q; setp.ne.s32 q, %3, 0; selp.f64 %0, %1, %2, q;}"
      : "=d"(r)
      : "d"(a), "d"(b), "r"(int(p)));
  return r;
}
__device__ __forceinline__ float select_value(bool p, float a, float b) {
  float r;
  asm("{.reg .pred q; setp.ne.s32 q, %3, 0; selp.f32 %0, %1, %2, q;}"
      : "=f"(r)
      : "f"(a), "f"(b), "r"(int(p)));
  return r;
}

// A pair's solve, shared by gram_solve, gram_round_fused and the cluster's kernel: a block of 256
// threads diagonalizes the pair's 32 x 32 Gram matrix G by two-sided Jacobi, G <- J^T G J, in the
// rounds of the circle method (or, in most rounds of the ring, of the cross ordering: only the
// pairs between the two blocks, gram_full_inner_period). A round's J rotates 16 disjoint pairs of
// columns, so J^T G J changes G in 2 x 2 blocks, each on its own: the block of rows of pair i and
// columns of pair j becomes R_i^T G_ij R_j. Thread (i, j) owns that block for the round, computes
// R_j itself and takes R_i from the lane that computed it, and rotates Q's columns of pair j in its
// two rows. G and Q are kept in seat coordinates (InnerOrder): in round r pair j's columns sit at
// seats 2j and 2j + 1 (indexed by column, the gathers cost 2.5 times their ideal wavefronts), and a
// thread writes its outputs to the next round's seats, in the other of two buffers; one barrier per
// round. Within a row the even seats come first, then the odd ones (seat_column): the 16 threads of
// a row read pair j's two elements at j and 16 + j, and in the cross ordering, where even seats
// stay and odd ones move down a pair, they write 16 consecutive elements of each half. Kept as
// neighbours, pairs of seats 16 bytes apart, every store met a two-way bank conflict (8 of a
// round's 14 shared accesses); split, 256 x 256 double took 2.16 against 2.32 ms, 512 x 512 5.32
// against 5.66 ms on the H200. The outputs are ordered by decreasing eigenvalue (padding last), the
// larger half going to the second block's positions, as the odd-even ring's swap sends it on.
constexpr int solve_parts = gram_solve_threads / 32;
constexpr int solve_rows =
    gram_width / solve_parts;  // rows of G per warp: warp w rows w R .. w R + R - 1
template <class T>
struct SolveShared {
  // Pair j's diagonal elements G(2j, 2j) and G(2j, 2j + 1) lie 2 ld + 1 (odd) elements after pair
  // j - 1's, so the 16 pairs' loads of them fall on distinct banks.
  static constexpr int ld = gram_width + 2;
  static constexpr int buffer_size = gram_width * ld;
  // G at g(b)[seat(k) * ld + seat_column(seat(l))], Q at q(b)[k * ld + seat_column(seat(l))]
  // (k: input position); this round's buffer and the next's. form_gram first stages two tiles of
  // rows in the same memory.
  T buffers[4 * buffer_size];
  T part_max[solve_parts];
  int part_above_tol[solve_parts];
  int slot_column[gram_width];  // the real columns first, in position order, then the padding
  int ranks_ahead[solve_parts][gram_width];  // rank_outputs: each warp's count for each lane
  __device__ T* g(int b) { return buffers + b * buffer_size; }
  __device__ T* q(int b) { return buffers + (2 + b) * buffer_size; }
};
static_assert(4 * SolveShared<double>::buffer_size >= 2 * gram_width * (gram_tile_rows + 4),
              "form_gram's tiles fit");

// The solve's result: the test's largest cosine, its count of pairs of columns one from each block
// above tol, whether the pair was rotated (false: orthogonal to tol, nothing changed), lane l's
// G_ll as formed, and which buffer holds the final G and Q.
template <class T>
struct PairSolve {
  T off = 0;
  int above_tol = 0;
  bool rotated = false;
  T diagonal = 0;
  int now = 0;
};

// Rounding noise (jacobi_math.hpp, RoundingNoise) among a pair's columns, found on the fresh Gram
// matrix before the solve: a column whose G_ll, its fresh squared norm, lies within its error scale
// (lane_scale, lane l's) gets G_ll = 0, and the solve leaves it alone as it does a negligible
// column: not tested, not rotated, eigenvalue 0, its output its input. Its content is not cleared:
// its error scale goes with it (output_error_scale) and finds it noise again at every later
// formation and at the end (sigma_from_norm2). x holds G_kl, k = k0 + kk, l = lane, and g(0) the
// same in seat order; only the thread that holds G_ll reads and writes it, so solve_pair's first
// barrier is the only one needed. A find sets bit 0 of *noise (GlobalState::noise) where given. A
// column whose scale carries the mark (`marked`, left_alone_scale) is noise whatever the rounding
// of this formation: a solve that rotated it would pass its negated scale on to other columns.
template <class T>
__device__ __forceinline__ void clear_gram_noise(T (&x)[solve_rows], T lane_scale,
                                                 const InnerOrder& order, SolveShared<T>& sh,
                                                 int* noise, bool marked = false) {
  constexpr int ld = SolveShared<T>::ld;
  const int lane = threadIdx.x & 31, k0 = (threadIdx.x >> 5) * solve_rows;
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk)
    if (k0 + kk == lane && (marked ? x[kk] > T(0) : is_rounding_noise(x[kk], lane_scale))) {
      x[kk] = T(0);
      sh.g(0)[order.seat(lane) * ld + seat_column(order.seat(lane))] = T(0);
      if (noise != nullptr) atomicOr(noise, 1);
    }
}

// The host-driven Gram rounds (fused and three kernels; GlobalState::error_scales) negate the
// error scale of a column that a solve left alone for want of a norm (rounding noise, or an exact
// zero: its fresh G_ll 0 after clear_gram_noise). No later solve rotates it, so its content and
// its scale's magnitude stay, and so does the verdict: a round reads it from the sign, and a pair
// with at most one column of positive scale is left alone without being formed (pair_is_formed).
// The all-pairs test and the final norms take the scale's magnitude.
template <class T>
__device__ __forceinline__ T left_alone_scale(T scale, T fresh_diagonal) {
  return fresh_diagonal == T(0) ? -fabs(scale) : scale;
}

// Whether a pair's solve may rotate anything: at least two of its 32 columns (a lane each, in
// every warp) have a positive error scale (0: a zero column or padding; negative: left alone).
// The same in every warp of the pair's blocks.
template <class T>
__device__ __forceinline__ bool pair_is_formed(T lane_scale) {
  return __popc(__ballot_sync(0xffffffffu, lane_scale > T(0))) > 1;
}

// A pair left alone unformed: its halves trade positions, as a solve that rotates nothing has
// them do, and a column of it left alone as noise still counts as found (GlobalState::noise). Warp
// 0 of one block of the pair calls it.
template <class T>
__device__ __forceinline__ void leave_pair_unformed(const GlobalState<T>& G, std::int64_t matrix,
                                                    int* pos, int first, int column, T lane_scale) {
  const int lane = threadIdx.x & 31;
  pos[first + (lane + gram_block) % gram_width] = column;
  if (__any_sync(0xffffffffu, lane_scale < T(0)) && lane == 0 && G.noise != nullptr)
    atomicOr(G.noise + matrix, 1);
}

// A pair whose solve rotated nothing: each column's norm is its fresh diagonal, a column whose
// diagonal is 0 and whose scale is positive is marked left alone (left_alone_scale), and the pair's
// halves trade positions, as after every solve. Lane l of one warp of the pair calls it for its
// column (`real`: not padding).
template <class T>
__device__ __forceinline__ void leave_pair_unrotated(T* norms, T* error_scales, int* pos, int first,
                                                     int column, bool real, T lane_scale,
                                                     T diagonal) {
  const int lane = threadIdx.x & 31;
  if (real) {
    norms[column] = diagonal;
    if (lane_scale > T(0) && diagonal == T(0))
      error_scales[column] = left_alone_scale(lane_scale, diagonal);
  }
  pos[first + (lane + gram_block) % gram_width] = column;
}

// Lane l's output error scale once a rotated pair's solve is done: output l of W Q is
// sum_k W_k Q_kl, so its scale is sum_k E_k Q_kl^2, E_k lane k's input scale. A column the solve
// left alone (noise, zero or padding) has e_l for its column of Q and exact zeros elsewhere in its
// row: it keeps its scale and adds nothing to the others'. Every lane of a warp calls it; one warp
// is enough (its lanes hold the 32 outputs). Four sums side by side: one chain of 32 dependent
// multiply-adds was the longest stretch it added to a round.
template <class T>
__device__ __forceinline__ T output_error_scale(SolveShared<T>& sh, int now,
                                                const InnerOrder& order, T lane_scale) {
  constexpr int ld = SolveShared<T>::ld, chains = 4;
  const int lane = threadIdx.x & 31, lane_column = seat_column(order.seat(lane));
  const T* const q = sh.buffers + (2 + now) * SolveShared<T>::buffer_size;
  T sums[chains] = {};
#pragma unroll 8
  for (int k = 0; k < gram_width; ++k) {
    const T q_kl = q[k * ld + lane_column];
    sums[k % chains] = fma(__shfl_sync(0xffffffffu, lane_scale, k), q_kl * q_kl, sums[k % chains]);
  }
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

// Tests the pair on G (in g(0), seat order, and x[kk] = G_kl, k = k0 + kk, l = lane) and, when it
// is not orthogonal to tol, runs the inner rounds. Every thread of the block calls it; it ends on
// a barrier.
// Long (about 90 lines) on purpose: the test and the inner rounds share the lane's row of G and
// its column of Q in registers, which a split would pass through shared memory.
template <class T>
__device__ __forceinline__ PairSolve<T> solve_pair(const GlobalState<T>& G, const InnerOrder& order,
                                                   SolveShared<T>& sh, const T (&x)[solve_rows]) {
  constexpr int pairs = gram_width / 2, ld = SolveShared<T>::ld;
  static_assert(pairs * pairs == gram_solve_threads, "a thread per 2 x 2 block of G");
  constexpr unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5, k0 = part * solve_rows;
  const int lane_seat = order.seat(lane), lane_column = seat_column(lane_seat);
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk)
    sh.q(0)[(k0 + kk) * ld + lane_column] = k0 + kk == lane ? T(1) : T(0);
  __syncthreads();

  // The test on the fresh Gram: max |G_kl| / sqrt(G_kk G_ll) over columns that are not negligible,
  // for the pairs this round's ordering rotates (the others are tested in the sweep's full rounds).
  PairSolve<T> result;
  result.diagonal = sh.g(0)[lane_seat * ld + lane_column];
  const T inverse_root =
      result.diagonal >= Precision<T>::negligible ? rsqrt_of_normal(result.diagonal) : T(0);
  T off = 0;
  int above_tol = 0;  // G_kl, k in the first block and l in the second: each such pair once
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk) {
    const T cosine = fabs(x[kk]) * __shfl_sync(full, inverse_root, k0 + kk) * inverse_root;
    off = order.rotates(k0 + kk, lane) ? fmax(off, cosine) : off;
    above_tol += k0 + kk < gram_block && lane >= gram_block && cosine > G.P.tol;
  }
  off = warp_max(off);
  above_tol = group_sum(above_tol, 32);
  if (lane == 0) {
    sh.part_max[part] = off;
    sh.part_above_tol[part] = above_tol;
  }
  __syncthreads();
  above_tol = 0;
#pragma unroll
  for (int p = 0; p < solve_parts; ++p) {
    off = fmax(off, sh.part_max[p]);
    above_tol += sh.part_above_tol[p];
  }
  result.off = off;
  result.above_tol = above_tol;
  result.rotated = off > G.P.tol;
  if (!result.rotated)
    return result;  // orthogonal: W and V stay, the ring's swap moves the blocks on

  const int row_pair = threadIdx.x / pairs, column_pair = threadIdx.x % pairs;
  const int top = 2 * row_pair, left = 2 * column_pair;  // the block's seats
  // Where the block's columns sit next round: the same permutation every round.
  const int next_top = order.next_seat(top), next_top2 = order.next_seat(top + 1);
  const int next_left = seat_column(order.next_seat(left)),
            next_left2 = seat_column(order.next_seat(left + 1));
  const int left_column = seat_column(left), left_column2 = seat_column(left + 1);
  // A round from g(from), q(from) into g(to), q(to); the rounds alternate buffers two at a time,
  // so that every address is a register plus a constant.
  const auto round_step = [&](int from, int to) {
    const T* gc = sh.g(from);
    const T* qc = sh.q(from);
    const T alpha = gc[left * ld + left_column], gamma = gc[left * ld + left_column2];
    const T beta = gc[(left + 1) * ld + left_column2];
    // The block's rows and Q's, each as (seat 2j, seat 2j + 1).
    const T m00 = gc[top * ld + left_column], m01 = gc[top * ld + left_column2];
    const T m10 = gc[(top + 1) * ld + left_column], m11 = gc[(top + 1) * ld + left_column2];
    const T q00 = qc[top * ld + left_column], q01 = qc[top * ld + left_column2];
    const T q10 = qc[(top + 1) * ld + left_column], q11 = qc[(top + 1) * ld + left_column2];
    Rotation<T> rotation;
    const bool rotate = jacobi_rotation(alpha, beta, gamma, G.P.tol, rotation);
    const T c = rotation.c, s = rotation.s;
    // R_i from the lane of this warp whose column pair is i (lane i: the warp's row pairs are
    // below 16).
    const T ci = __shfl_sync(full, c, row_pair), si = __shfl_sync(full, s, row_pair);
    // With p, q the columns in seats 2j, 2j + 1: column p <- c p - s q, column q <- s p + c q;
    // then the rows alike with R_i. Each sum is written as the fma that takes the cosine's
    // product, so that its rounding does not change with the compiler's choice of contraction.
    const T n00 = fma(c, m00, -s * m01), n01 = fma(c, m01, s * m00);
    const T n10 = fma(c, m10, -s * m11), n11 = fma(c, m11, s * m10);
    const bool diagonal = row_pair == column_pair && rotate;
    // The pair's own 2 x 2 block exactly: the columns' new squared norms, their product 0.
    const T o00 = select_value(diagonal, fma(-rotation.t, gamma, alpha), fma(ci, n00, -si * n10));
    const T o01 = select_value(diagonal, T(0), fma(ci, n01, -si * n11));
    const T o10 = select_value(diagonal, T(0), fma(ci, n10, si * n00));
    const T o11 = select_value(diagonal, fma(rotation.t, gamma, beta), fma(ci, n11, si * n01));
    T* gn = sh.g(to);
    gn[next_top * ld + next_left] = o00;
    gn[next_top * ld + next_left2] = o01;
    gn[next_top2 * ld + next_left] = o10;
    gn[next_top2 * ld + next_left2] = o11;
    T* qn = sh.q(to);  // Q's rows stay: input positions
    qn[top * ld + next_left] = fma(c, q00, -s * q01);
    qn[top * ld + next_left2] = fma(c, q01, s * q00);
    qn[(top + 1) * ld + next_left] = fma(c, q10, -s * q11);
    qn[(top + 1) * ld + next_left2] = fma(c, q11, s * q10);
    __syncthreads();
  };
  const int steps = gram_inner_sweeps * order.rounds();
  for (int step = 0; step + 1 < steps; step += 2) {
    round_step(0, 1);
    round_step(1, 0);
  }
  if (steps & 1) round_step(0, 1);
  result.now = steps & 1;
  return result;
}

// Lane l's output rank once a rotated pair's solve is done: real columns by decreasing eigenvalue
// (ties by lane), padding after them; the outputs fill the real columns first, in position order
// (sh.slot_column, written here). Every thread of the block calls it. Warp w counts the lanes
// ahead among lanes 4w .. 4w + 3 and the warps' counts are added after one barrier: with every
// warp comparing against all 32 lanes (64 shuffles of a double each), the ranking took 1.06 us of
// a fused round, split 0.22 us (H200, 256 x 256, clocked in the kernel).
template <class T>
__device__ __forceinline__ int rank_outputs(SolveShared<T>& sh, int now, const InnerOrder& order,
                                            int column, bool real, T& eigenvalue) {
  constexpr unsigned full = 0xffffffffu;
  constexpr int ld = SolveShared<T>::ld;
  const int lane = threadIdx.x & 31, lane_seat = order.seat(lane);
  // The buffer with the result, by offset (indexing g or q at run time put them on the stack).
  eigenvalue =
      (sh.buffers + now * SolveShared<T>::buffer_size)[lane_seat * ld + seat_column(lane_seat)];
  const unsigned real_lanes = __ballot_sync(full, real);
  const unsigned below = (1u << lane) - 1;
  const int real_count = __popc(real_lanes);
  constexpr int per_warp = gram_width / solve_parts;
  const int part = threadIdx.x >> 5;
  int ahead_here = 0;
#pragma unroll
  for (int kk = 0; kk < per_warp; ++kk) {
    const int k = part * per_warp + kk;
    const T other = __shfl_sync(full, eigenvalue, k);
    ahead_here +=
        real && (real_lanes >> k & 1u) && ahead_when_descending(other, k, eigenvalue, lane);
  }
  sh.ranks_ahead[part][lane] = ahead_here;
  if (threadIdx.x < 32)
    sh.slot_column[real ? __popc(real_lanes & below) : real_count + __popc(~real_lanes & below)] =
        column;
  __syncthreads();
  int rank = real ? 0 : real_count + __popc(~real_lanes & below);
#pragma unroll
  for (int p = 0; p < solve_parts; ++p) rank += sh.ranks_ahead[p][lane];
  return rank;
}

// The apply's shared strides, 4 (mod 16) elements: a double product's fragment loads (lanes
// (group, in_group) at in_group * ld + group) then hit distinct banks. With 8 (mod 16) a round of
// 1024 x 1024 double took 13.0 against 11.7 us under Nsight Compute, and 1024 x 1024 20.6 against
// 19.2 ms, 2048 x 2048 92.5 against 86.9 ms (H200). The double outputs are staged at 2 (mod 8)
// instead, where lanes (group, in_group) store at 2 in_group * ld + group: in another run the
// round 10.2 against 10.6 us, 1024 x 1024 18.8 against 19.9 ms, 2048 x 2048 85.7 against 86.7 ms.
constexpr int apply_ldq = gram_width + 4, apply_ldt = gram_apply_rows + 4;
template <class T>
constexpr int apply_ld_out = sizeof(T) == 8 ? gram_apply_rows + 2 : apply_ldt;
template <class T>
constexpr std::size_t gram_apply_shared_bytes = sizeof(T) * gram_width*(apply_ldq + apply_ldt) +
                                                2 * gram_width * sizeof(int);

// The product of gram_apply_rows rows (column s at tile[s * ldt]) and Q (Q_sk at q[s * ldq + k]) by
// the gram_apply_threads threads of a block: in double each warp forms 16 rows on the tensor
// cores; in float each thread a 4 x 4 patch with FMAs.
template <class T>
struct RowsTimesQ {
  T sum[4][4] = {};
  __device__ __forceinline__ void multiply(const T* tile, int ldt, const T* q, int ldq) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, group = lane >> 2,
              in_group = lane & 3;
    if constexpr (
        sizeof(T) ==
        8) {  // the warp's rows times column block nt of Q at sum[nt], mma_16x8x4's layout
      // Unrolled whole, the product spilled 160 bytes at the 64 registers of 4 blocks per SM (H200,
      // with the partials also unrolled further: 1024 x 1024 double 20.9 against 18.4 ms, 2048 x
      // 2048 110 against 87 ms).
#pragma unroll 2
      for (int s0 = 0; s0 < gram_width; s0 += 4) {
        const T* a = tile + (s0 + in_group) * ldt + 16 * warp + group;
        const T* b = q + (s0 + in_group) * ldq + group;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma_16x8x4(sum[nt], a[0], a[8], b[8 * nt]);
      }
    } else {
      constexpr int row_groups = gram_apply_rows / 4;  // a thread's patch: 4 rows, 4 outputs
      const int r = 4 * (threadIdx.x % row_groups), k0 = 4 * (threadIdx.x / row_groups);
#pragma unroll 8
      for (int s = 0; s < gram_width; ++s)
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
          for (int b = 0; b < 4; ++b)
            sum[a][b] = fma(tile[s * ldt + r + a], q[s * ldq + k0 + b], sum[a][b]);
    }
  }
  // Writes the product's output k, row r at low[k * ldo + r] for k < 16, else at
  // high[(k - 16) * ldo + r].
  __device__ __forceinline__ void stage(T* low, T* high, int ldo) const {
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        constexpr int row_groups = gram_apply_rows / 4;
        if constexpr (sizeof(T) == 8) {  // outputs 8a .. 8a + 7
          (a < 2 ? low : high)[(8 * (a % 2) + mma_col(b)) * ldo + 16 * warp + mma_row(b)] =
              sum[a][b];
        } else {
          const int k = 4 * (threadIdx.x / row_groups) + b;
          (k < gram_block ? low : high)[k % gram_block * ldo + 4 * (threadIdx.x % row_groups) + a] =
              sum[a][b];
        }
      }
  }
  // Output k, row r at out[k * ldo + r].
  __device__ __forceinline__ void stage(T* out, int ldo) const {
    stage(out, out + gram_block * ldo, ldo);
  }
};

// Stores `tile_rows` staged rows of 32 outputs (output k's rows at out[k * ldo]) to rows
// r0 .. r0 + tile_rows - 1 of X's columns out_columns[k] (those < N; rows from `rows` on are
// dropped): 16 bytes a store where the columns allow, so the stores are whole column segments.
template <int tile_rows, int threads, class T>
__device__ __forceinline__ void store_columns(const T* out, int ldo, T* X, std::int64_t ld,
                                              int rows, int r0, const int* out_columns, int N) {
  using Chunk = std::conditional_t<sizeof(T) == 8, double2, float4>;
  constexpr int chunk = 16 / sizeof(T), chunks = tile_rows / chunk;  // per column
  constexpr int per_thread = tile_rows * gram_width / threads;
  if (ld % chunk == 0 && ldo % chunk == 0) {
#pragma unroll
    for (int i = 0; i < per_thread / chunk; ++i) {
      const int e = threadIdx.x + i * threads, slot = e / chunks, r = chunk * (e % chunks);
      const int c = out_columns[slot];
      if (c >= N || r0 + r >= rows) continue;
      const T* from = out + slot * ldo + r;
      T* to = X + r0 + r + c * ld;
      if (r0 + r + chunk <= rows) {
        *reinterpret_cast<Chunk*>(to) = *reinterpret_cast<const Chunk*>(from);
      } else {
        for (int k = 0; k < rows - r0 - r; ++k) to[k] = from[k];
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * threads, r = e % tile_rows;
      const int c = out_columns[e / tile_rows];
      if (r0 + r < rows && c < N) X[r0 + r + c * ld] = out[e / tile_rows * ldo + r];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shared by the schedules in clusters (fused.cu, cluster.cu).

constexpr int fused_chunk_rows = gram_apply_rows;  // rows per product (RowsTimesQ)

// One block's share of `rows` rows split over `blocks` blocks, in whole tiles.
inline int row_share(int rows, int blocks) {
  return round_up((rows + blocks - 1) / blocks, gram_tile_rows);
}

// How many clusters of `cluster` blocks of gram_solve_threads threads with `bytes` of dynamic
// shared memory each the device holds at once, for a grid of `clusters` of them.
template <class... Parameters>
int max_active_clusters(void (*kernel)(Parameters...), std::int64_t clusters, int cluster,
                        std::size_t bytes) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(clusters * cluster));
  config.blockDim = dim3(unsigned(gram_solve_threads));
  config.dynamicSmemBytes = bytes;
  cudaLaunchAttribute dimension{};
  dimension.id = cudaLaunchAttributeClusterDimension;
  dimension.val.clusterDim = {unsigned(cluster), 1, 1};
  config.attrs = &dimension;
  config.numAttrs = 1;
  int active = 0;
  ROOFLAB_CUDA("svd", "asking how many clusters of the kernel fit on the GPU",
               cudaOccupancyMaxActiveClusters(&active, kernel, &config));
  return active;
}

}  // namespace rooflab::jacobi
