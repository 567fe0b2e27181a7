// The Gram schedule (the single-matrix ladder's rung 7): pairs of 16-column blocks ride the
// odd-even ring over blocks, and each pair of a round is diagonalized through its 32 x 32 Gram
// matrix by three kernels (gram_partials, gram_solve, gram_apply); after a sweep of only small
// off-diagonals the all-pairs test (gram_all_pairs_test) stands for the sweep that would rotate
// nothing. The device machinery is in gram.cuh, shared with the fused rounds (fused.cu) and the
// sweeps in one cluster (cluster.cu).
#include "rooflab/detail/warp_reduce.cuh"
#include "svd/gram.cuh"

namespace rooflab::jacobi {
namespace {

// A block per pair and slice of rows: the slice's contribution to the pair's Gram matrix, 64 rows
// at a time through shared memory (column s of the rows at tile[s * ld]). In double each warp
// forms a 16 x 16 quarter of G on the tensor cores (two 16 x 8 products per 4 rows); in float
// each thread accumulates a 2 x 4 patch with FMAs.
template <class T>
__global__ void __launch_bounds__(gram_threads, gram_partial_blocks_per_sm)
    gram_partials(GlobalState<T> G, GramWork<T> work, int round) {
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = gram_tile_rows + 4;  // 4 (mod 16): the fragments' lanes hit distinct banks
  __shared__ __align__(16) T tile[gram_width * ld];
  __shared__ int columns[gram_width];
  const std::int64_t item = blockIdx.x / work.slices;
  const int slice = blockIdx.x % work.slices;
  std::int64_t matrix = 0;
  int first = 0;
  if (!gram_pair(G, round, item, matrix, first)) return;  // uniform over the block
  // The solve leaves a pair that is not formed alone, its partials unread: the verdict comes from
  // the columns' error scales, whose loads are in flight with the first tile's.
  __shared__ bool formed;
  T lane_scale = 0;
  if (threadIdx.x < gram_width) {
    const int column = G.pos_of(matrix)[first + threadIdx.x];
    columns[threadIdx.x] = column;
    lane_scale = column < G.N ? G.error_scales_of(matrix)[column] : T(0);
  }
  const T* W = G.w(matrix);
  GramQuarter<T> gram;
  const int begin = slice * work.slice_rows, end = min(G.M, begin + work.slice_rows);
  // Each tile's loads are issued together, and the next tile's while this one is multiplied.
  constexpr int per_thread = gram_tile_rows * gram_width / gram_threads;
  T staged[per_thread];
  const auto load = [&](int r0) {
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * gram_threads, r = e % gram_tile_rows,
                c = columns[e / gram_tile_rows];
      staged[i] = r0 + r < end && c < G.N ? W[r0 + r + c * G.ldw] : T(0);
    }
  };
  __syncthreads();  // columns known
  load(begin);
  if (threadIdx.x < gram_width) {
    const bool pair_formed = pair_is_formed(lane_scale);
    if (threadIdx.x == 0) formed = pair_formed;
  }
  for (int r0 = begin; r0 < end; r0 += gram_tile_rows) {
    __syncthreads();      // the previous tile consumed (the first time: the verdict known)
    if (!formed) return;  // uniform over the block
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int e = threadIdx.x + i * gram_threads;
      tile[e / gram_tile_rows * ld + e % gram_tile_rows] = staged[i];
    }
    __syncthreads();
    if (r0 + gram_tile_rows < end) load(r0 + gram_tile_rows);
    gram.add_tile(tile, ld, 0);
  }
  let_next_kernel_start();
  T* out = work.partials + (item * work.slices + slice) * (gram_width * gram_width);
#pragma unroll
  for (int b = 0; b < gram.outer; ++b)
#pragma unroll
    for (int a = 0; a < gram.inner; ++a)
      out[gram.row(b, a) * gram_width + gram.column(b, a)] = gram.sum[b][a];
}

// A block per pair: sums the slices' partial Grams (in a fixed order: reproducible) or forms G
// itself, solves (solve_pair) and leaves Q, the columns and the ranks for gram_apply.
template <class T>
__global__ void __launch_bounds__(gram_solve_threads)
    gram_solve(GlobalState<T> G, GramWork<T> work, int round) {
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = SolveShared<T>::ld;
  __shared__ __align__(16) SolveShared<T> sh;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5, k0 = part * solve_rows;
  const std::int64_t item = blockIdx.x;
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, item, matrix, first);
  int* pos = G.pos_of(matrix);
  const int column = pos[first + lane];  // asked for with the flag: the latencies overlap
  if (!active) return;                   // uniform over the block
  T* norms = G.norms_of(matrix);
  T* error_scales = G.error_scales_of(matrix);
  const bool real = column < G.N;
  const T lane_scale = real ? error_scales[column] : T(0);
  // A pair that is not formed is left alone; gram_partials left its partials unwritten. The verdict
  // waits until the partials' loads are in flight: asked for first, its load of the scales stood
  // before them (random 1024 x 1024 matrices, H200: 15.5 against 15.1-15.2 ms before the verdict
  // moved, 15.4 after; docs/results/h200-svd-one-round-sweeps-03e16b0.md, calls 1 and 2).
  const auto leave_unformed = [&] {
    if (part != 0) return;
    if (lane == 0) work.rotated[item] = 0;
    leave_pair_unformed(G, matrix, pos, first, column, lane_scale);
  };
  const InnerOrder order{!inner_sweep_is_full(round, G.block_positions, gram_full_inner_period)};

  // Warp w holds rows w R .. w R + R - 1 of G, lane l column l: formed here, or the sum of the
  // slices' partials.
  const int lane_column = seat_column(order.seat(lane));
  T x[solve_rows];  // G_kl, k = k0 + kk, l = lane
  if (work.solve_forms_gram()) {
    if (!pair_is_formed(lane_scale)) return leave_unformed();  // uniform over the block
    form_gram(G, matrix, column, order, sh.buffers, sh.g(0), ld);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) x[kk] = sh.g(0)[order.seat(k0 + kk) * ld + lane_column];
  } else {
    const T* partial = work.partials + item * work.slices * (gram_width * gram_width);
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) x[kk] = partial[(k0 + kk) * gram_width + lane];
#pragma unroll 4  // several slices' loads in flight at once
    for (int slice = 1; slice < work.slices; ++slice)
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk)
        x[kk] += partial[slice * (gram_width * gram_width) + (k0 + kk) * gram_width + lane];
    if (!pair_is_formed(lane_scale)) return leave_unformed();  // uniform over the block
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
  }
  clear_gram_noise(x, lane_scale, order, sh, G.noise ? G.noise + matrix : nullptr, lane_scale < 0);
  const PairSolve<T> solved = solve_pair(G, order, sh, x);
  if (threadIdx.x == 0) {
    raise_to(&G.off_bits[matrix], double(solved.off));
    if (solved.above_tol > 0) atomicAdd(&G.above_tol[matrix], unsigned(solved.above_tol));
  }
  if (!solved.rotated) {
    if (part != 0) return;
    if (lane == 0) work.rotated[item] = 0;
    leave_pair_unrotated(norms, error_scales, pos, first, column, real, lane_scale,
                         solved.diagonal);
    return;
  }
  let_next_kernel_start();
  T eigenvalue;
  const int rank = rank_outputs(sh, solved.now, order, column, real, eigenvalue);
  const T* const q_now = sh.buffers + (2 + solved.now) * SolveShared<T>::buffer_size;
  const std::int64_t base = item * gram_width;
#pragma unroll
  for (int kk = 0; kk < solve_rows; ++kk)
    work.rotations[(base + k0 + kk) * gram_width + rank] = q_now[(k0 + kk) * ld + lane_column];
  if (part != 0) return;
  const T scale = output_error_scale(sh, solved.now, order, lane_scale);
  const int target = sh.slot_column[rank];
  work.in_columns[base + lane] = column;
  work.out_columns[base + rank] = target;
  if (real) {
    norms[target] = fmax(eigenvalue, T(0));
    error_scales[target] = left_alone_scale(scale, solved.diagonal);
  }
  pos[first + (rank + gram_block) % gram_width] = target;
  if (lane == 0) work.rotated[item] = 1;
}

// A block per pair and gram_apply_rows rows of W or of V: the rows' 32 columns times Q, written in
// place (the block reads all 32 inputs of its rows before it writes an output). In double each warp
// forms 16 rows of the product on the tensor cores; in float each thread a 4 x 4 patch with FMAs.
// The results pass through shared memory so that the stores are whole column segments.
template <class T>
__global__ void __launch_bounds__(gram_apply_threads, gram_apply_blocks_per_sm)
    gram_apply(GlobalState<T> G, GramWork<T> work, int round, int w_tiles, int v_tiles) {
  wait_for_previous_kernel();
  constexpr int ldq = apply_ldq, ldt = apply_ldt, ldo = apply_ld_out<T>;
  // Q_sk at q[s * ldq + k]; column s of the rows at tile[s * ldt], then output k at tile[k * ldo]
  // (gram_apply_shared_bytes).
  extern __shared__ __align__(16) unsigned char apply_shared[];
  T* const q = reinterpret_cast<T*>(apply_shared);
  T* const tile = q + gram_width * ldq;
  int* const in_columns = reinterpret_cast<int*>(tile + gram_width * ldt);
  int* const out_columns = in_columns + gram_width;
  const std::int64_t item = blockIdx.x / (w_tiles + v_tiles);
  const int t = blockIdx.x % (w_tiles + v_tiles);
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, item, matrix, first);
  const bool rotated = work.rotated[item];
  // Q and the rows arrive by asynchronous copies: no registers held while they are in flight. Q
  // and the columns are asked for together with the flags (a stopped matrix's scratch is stale
  // but readable), so that their latencies overlap.
  const T* rotation = work.rotations + item * (gram_width * gram_width);
#pragma unroll
  for (int i = 0; i < gram_width * gram_width / gram_apply_threads; ++i) {
    const int e = threadIdx.x + i * gram_apply_threads;
    copy_async(q + e / gram_width * ldq + e % gram_width, rotation + e, true);
  }
  commit_copies();
  if (threadIdx.x < gram_width) {
    in_columns[threadIdx.x] = work.in_columns[item * gram_width + threadIdx.x];
    out_columns[threadIdx.x] = work.out_columns[item * gram_width + threadIdx.x];
  }
  if (!active || !rotated) {  // uniform over the block
    wait_copies<0>();
    return;
  }
  const bool on_w = t < w_tiles;
  T* X = on_w ? G.w(matrix) : G.v(matrix);
  const std::int64_t ld = on_w ? G.ldw : G.ldv;
  const int rows = on_w ? G.M : G.N;
  const int r0 = (on_w ? t : t - w_tiles) * gram_apply_rows;
  __syncthreads();  // the columns known
  copy_tile_async<gram_apply_rows, gram_apply_threads>(tile, ldt, X, ld, rows, G.N, r0,
                                                       [&](int slot) { return in_columns[slot]; });
  wait_copies<0>();
  __syncthreads();
  RowsTimesQ<T> product;
  product.multiply(tile, ldt, q, ldq);
  let_next_kernel_start();
  __syncthreads();  // every input read: the tile takes the outputs
  product.stage(tile, ldo);
  __syncthreads();
  store_columns<gram_apply_rows, gram_apply_threads>(tile, ldo, X, ld, rows, r0, out_columns, G.N);
}

// The all-pairs test (jacobi_math.hpp): whether the columns are orthogonal to tol after a sweep
// that met only small off-diagonals, in one launch instead of the sweep that would rotate nothing.
// A block per matrix, pair of 32-column groups (first <= second, by column index) and slice of rows
// (GramTest; one slice below test_split_tiles tiles) forms W_first^T W_second, 64 rows at a time by
// asynchronous copies (tensor cores in double, FMAs in float, as the partials do), and raises the
// matrix's test_bits to its largest |G_pq| / sqrt(norm_p norm_q) over p < q, with the tracked norms
// (the solves' eigenvalues), or after a sweep that found rounding noise the columns' squared norms
// from the same tiles (test_group_pair). Each tile's products are summed apart and then added, as
// the partials' slices are: tol is sqrt(M) u, about the rounding of a dot product summed in one
// chain over M rows. With one chain the test cost instead of saving (H200, double, against no test
// in the same run: 256 x 256 3.18 against 3.08 ms, 1024 x 1024 20.0 against 18.9 ms); with tile
// sums 2.96 against 3.39 and 18.4 against 18.8. Pairs found just above tol, up to recheck_capacity
// of them a block, are formed again from the columns with compensated sums (CompensatedSum), and
// their products and norms as accurate as the columns allow decide: a sweep is not spent on what
// was only the rounding of the test's sums. The kernel also ends the sweep and starts the next one,
// in place of three small kernels a sweep: its blocks sort the positions by tracked norm for the
// next sweep (rank_chunk, as global_sweep_start does; harmless for a matrix that stops), and each
// matrix's last block to finish, which the arrivals count, ends the sweep (sweep_end) with the
// test's verdict and clears the bits for the next one. The next sweep's first round publishes the
// count (the Gram kernels call publish_previous_count).
constexpr int test_ld = gram_tile_rows + 4;  // 4 (mod 16), as the partials' tiles
constexpr int recheck_capacity = 64;
constexpr int test_split_tiles = 8;  // the least tiles a test block streams before slices pay
// A test block's two teams of gram_threads, each over half of every tile's rows (test_group_pair).
constexpr int test_threads = 2 * gram_threads;
constexpr int test_slots = 2 * gram_width;  // a block's columns: its two groups
constexpr double recheck_factor = 16;       // rechecked: tol < scaled off-diagonal <= 16 tol
constexpr int test_tile_size = 2 * gram_width * test_ld;
template <class T>
constexpr int gram_test_shared_bytes = int(2 * test_tile_size * sizeof(T));

// Whether the test takes an active matrix at the end of this sweep: the sweep leaves it sweeping on
// (sweep_end: off-diagonals above tol, sweeps left), and either they were all small or the sweep is
// the first to find columns of rounding noise. Those are left out from then on, and what is left
// may well be orthogonal: a rank-one matrix's one column after its first sweep, which a second
// sweep of rounds only confirms (256 x 256, double: the test took about a seventeenth of that
// sweep's kernel time, H200, Nsight Compute). A matrix keeps finding its noise, so the test is
// taken once for it. Single matrices only (GlobalState::noise).
template <class T>
__device__ bool takes_all_pairs_test(const GlobalState<T>& G, std::int64_t matrix) {
  const double off = bits_as_double(G.off_bits[matrix]);
  const bool noise_first_found = G.noise != nullptr && G.noise[matrix] == 1;
  return off > double(G.P.tol) && G.sweeps[matrix] + 1 < G.P.max_sweeps &&
         (off <= double(all_pairs_test_threshold(G.P.tol)) || noise_first_found);
}

// The verdict of the test on arrival (before the first sweep, every active matrix whose
// neighbouring columns passed global_column_norms's test): a matrix whose columns arrive
// orthogonal (zero, identity, diagonal, or factored already) has converged, the test standing for
// the sweep that would rotate nothing; the others sweep on, no sweep counted.
template <class T>
__device__ void arrival_end(const GlobalState<T>& G, std::int64_t matrix, unsigned* active_count) {
  // The test's blocks raised test_bits by atomics in this kernel: read past the L1 cache.
  const unsigned long long test_bits =
      *static_cast<volatile unsigned long long*>(&G.test_bits[matrix]);
  if (bits_as_double(test_bits) > double(G.P.tol)) {
    atomicAdd(active_count, 1u);
    return;
  }
  G.sweeps[matrix] = 1;
  G.converged[matrix] = 1;
  G.active[matrix] = 0;
  G.off_bits[matrix] = test_bits;
}

// Whether every tracked norm of column group `first` or of `second` is negligible (a zero
// matrix's, zero columns): then each pair of the two has a negligible column and an off-diagonal of
// 0, and the test has nothing to read (the 512 x 512 zero matrix's test on arrival took 25.1 us
// reading its tiles; H200, double, docs/results/h200-ncu-svd-structured-e070880.json). Thread
// t < 64 looks at slot t; every thread of the block calls it.
template <class T>
__device__ bool has_negligible_group(const GlobalState<T>& G, std::int64_t matrix, int first,
                                     int second) {
  const int t = int(threadIdx.x);
  const int column = t < gram_width ? gram_width * first + t : gram_width * (second - 1) + t;
  const bool negligible =
      t < 2 * gram_width &&
      (column >= G.N || !(G.norms_of(matrix)[column] >= Precision<T>::negligible));
  return __syncthreads_and(t >= gram_width || negligible) ||
         __syncthreads_and(t < gram_width || t >= 2 * gram_width || negligible);
}

// A slice's record in GramTest::partials: the first team's sums of the product, the threads' values
// side by side, then the columns' fresh squared norms.
template <class T>
constexpr int test_partial_values = int(GramQuarter<T>::sums) * gram_threads + test_slots;
// A pair's arrivals count the slices formed from bit 16 (test_slice_tiles keeps them under 2^15).
constexpr unsigned slice_formed = 1u << 16;

// With slices of rows, every slice's block of pair `pair_slot` (matrix * group_pairs + pair) calls
// it: leaves the block's sums (the first team's `gram`, thread s < test_slots's column norm) in the
// pair's partials where it `formed` them, and arrives. The pair's last block, where every slice
// formed its sums, returns true with the sums of all slices in `gram` and `norm`, added in slice
// order (the same whichever block is last); the others return false. A slice may not form where
// another does: on arrival a block that sees test_bits raised by another pair's block skips a
// matrix that fails anyway.
template <class T>
__device__ bool last_of_slices(const GramTest<T>& test, std::int64_t pair_slot, int slice,
                               bool formed, GramQuarter<T>& gram, T& norm) {
  constexpr int outer = GramQuarter<T>::outer, inner = GramQuarter<T>::inner,
                sums = GramQuarter<T>::sums;
  T* const partials = test.partials + pair_slot * test.slices * test_partial_values<T>;
  const bool sums_here = threadIdx.x < gram_threads, norm_here = threadIdx.x < test_slots;
  if (formed) {
    T* const mine = partials + slice * test_partial_values<T> + threadIdx.x;
    if (sums_here)
#pragma unroll
      for (int b = 0; b < outer; ++b)
#pragma unroll
        for (int a = 0; a < inner; ++a) mine[(b * inner + a) * gram_threads] = gram.sum[b][a];
    if (norm_here) mine[sums * gram_threads] = norm;
    __threadfence();  // the sums, before the block arrives
  }
  __shared__ bool judges;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned mark = formed ? slice_formed + 1 : 1u;
    const unsigned arrived = atomicAdd(&test.pair_arrivals[pair_slot], mark) + mark;
    const bool last = (arrived & (slice_formed - 1)) == unsigned(test.slices);
    judges = last && arrived / slice_formed == unsigned(test.slices);
    if (last) test.pair_arrivals[pair_slot] = 0;  // for the next test
  }
  __syncthreads();
  if (!judges) return false;
  gram = GramQuarter<T>{};
  norm = 0;
  for (int other = 0; other < test.slices; ++other) {
    const T* const theirs = partials + other * test_partial_values<T> + threadIdx.x;
    if (sums_here)
#pragma unroll
      for (int b = 0; b < outer; ++b)
#pragma unroll
        for (int a = 0; a < inner; ++a)
          gram.sum[b][a] += __ldcg(theirs + (b * inner + a) * gram_threads);
    if (norm_here) norm += __ldcg(theirs + sums * gram_threads);
  }
  return true;
}

// One block's share of the test: the pairs of column groups `first` and `second` over the rows of
// `slice`, with the tracked norms or, `fresh`, the columns' squared norms from the same tiles and
// rounding noise left out; with slices, judged by the pair's last block (last_of_slices). Its two
// teams each form the product over half of every tile's rows, twice the warps on the block's chain
// of tiles (each copies and multiplies half as much), and the second team's sums are added to the
// first's through the spent tiles. Every thread of the block calls it.
template <class T>
__device__ void test_group_pair(const GlobalState<T>& G, const GramTest<T>& test,
                                std::int64_t matrix, int pair, int slice, int first, int second,
                                bool fresh, T* tiles, unsigned long long* team_scratch) {
  const T* W = G.w(matrix);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int half_rows = gram_tile_rows / 2;
  const int team = int(threadIdx.x) / gram_threads;  // rows team * half_rows on of each tile
  GramQuarter<T> gram;
  // The 64 columns' fresh squared norms: thread t sums the squares of slot t % 64 over every
  // fourth row of each tile.
  constexpr int slots = test_slots, shares = test_threads / slots;
  const int my_slot = threadIdx.x % slots, my_share = threadIdx.x / slots;
  T my_norm = 0;
  const int begin = slice * test.slice_rows, end = min(G.M, begin + test.slice_rows);
  stream_tiles(
      begin, end, tiles, test_tile_size,
      [&](int r0, T* tile) {  // slots 0..31 the first group's columns, 32..63 the second's
        copy_tile_async<gram_tile_rows, test_threads, test_slots>(
            tile, test_ld, W, G.ldw, G.M, G.N, r0, [&](int slot) {
              return slot < gram_width ? gram_width * first + slot
                                       : gram_width * (second - 1) + slot;
            });
      },
      [&](const T* tile) {  // a tile's products summed on their own, then added: see above
        if (fresh)
          for (int r = my_share; r < gram_tile_rows; r += shares) {
            const T x = tile[my_slot * test_ld + r];
            my_norm = fma(x, x, my_norm);
          }
        GramQuarter<T> tile_gram;
        tile_gram.add_tile<half_rows>(tile + team * half_rows, test_ld, gram_width);
#pragma unroll
        for (int b = 0; b < gram.outer; ++b)
#pragma unroll
          for (int a = 0; a < gram.inner; ++a) gram.sum[b][a] += tile_gram.sum[b][a];
      });
  // The teams' sums added (the second's through the tiles, spent: stream_tiles ends on a barrier),
  // and the norms' shares.
  constexpr int sums = GramQuarter<T>::sums;
  T* const second_team = tiles;  // sums * gram_threads, within one tile
  static_assert(sums * gram_threads <= test_tile_size, "the second team's sums fit in a tile");
  __shared__ T norm_shares[shares][slots];
  norm_shares[my_share][my_slot] = my_norm;
  if (team == 1)
#pragma unroll
    for (int b = 0; b < gram.outer; ++b)
#pragma unroll
      for (int a = 0; a < gram.inner; ++a)
        second_team[(b * gram.inner + a) * gram_threads + threadIdx.x - gram_threads] =
            gram.sum[b][a];
  __syncthreads();
  if (team == 0)
#pragma unroll
    for (int b = 0; b < gram.outer; ++b)
#pragma unroll
      for (int a = 0; a < gram.inner; ++a)
        gram.sum[b][a] += second_team[(b * gram.inner + a) * gram_threads + threadIdx.x];
  T slot_norm = 0;  // thread s < slots: column slot s's
  if (threadIdx.x < slots)
#pragma unroll
    for (int share = 0; share < shares; ++share) slot_norm += norm_shares[share][threadIdx.x];
  if (test.slices > 1 &&
      !last_of_slices(test, matrix * test.group_pairs + pair, slice, true, gram, slot_norm))
    return;
  __shared__ T slot_norms[slots];
  if (threadIdx.x < slots) slot_norms[threadIdx.x] = slot_norm;
  __shared__ int2 recheck[recheck_capacity];  // (p, q)
  __shared__ int rechecks;
  if (threadIdx.x == 0) rechecks = 0;
  __syncthreads();
  const T* norms = G.norms_of(matrix);
  const auto norm_of = [&](int column, int slot) {
    return fresh ? slot_norms[slot] : norms[column];
  };
  // Rounding noise (by the column's error scale, as the rounds judge it on their fresh Gram
  // matrices) is left out: the sweeps leave such a column alone, and sigma_from_norm2 makes it 0.
  const T* error_scales = G.error_scales_of(matrix);
  const auto off_diagonal = [&](int p, int q, T alpha, T beta, T gamma) {
    return fresh && (is_rounding_noise(alpha, fabs(error_scales[p])) ||
                     is_rounding_noise(beta, fabs(error_scales[q])))
               ? T(0)
               : scaled_off_diagonal(alpha, beta, gamma);
  };
  const T tol = G.P.tol;
  T off = 0;
#pragma unroll
  for (int b = 0; b < gram.outer; ++b)
#pragma unroll
    for (int a = 0; a < gram.inner; ++a) {
      const int p = gram_width * first + gram.row(b, a),
                q = gram_width * second + gram.column(b, a);
      if (team != 0 || p >= q || q >= G.N) continue;  // the first team holds the sums
      const T cosine = off_diagonal(p, q, norm_of(p, gram.row(b, a)),
                                    norm_of(q, gram_width + gram.column(b, a)), gram.sum[b][a]);
      if (cosine > tol && cosine <= T(recheck_factor) * tol) {
        const int slot = atomicAdd(&rechecks, 1);
        if (slot < recheck_capacity) {
          recheck[slot] = make_int2(p, q);
          continue;
        }
      }
      off = fmax(off, cosine);
    }
  __syncthreads();
  // A warp per pair to recheck: the lanes' compensated sums over every 32nd row, then combined.
  const int count = min(rechecks, recheck_capacity);
  for (int r = warp; r < count; r += test_threads / 32) {
    const T* wp = W + std::int64_t(recheck[r].x) * G.ldw;
    const T* wq = W + std::int64_t(recheck[r].y) * G.ldw;
    CompensatedSum<T> dot, pp, qq;
    for (int row = lane; row < G.M; row += 32) {
      const T x = wp[row], y = wq[row];
      dot.add_product(x, y);
      pp.add_product(x, x);
      qq.add_product(y, y);
    }
    const auto combined = [](CompensatedSum<T> sum, const CompensatedSum<T>& other) {
      sum.add(other);
      return sum;
    };
    dot = detail::warp_reduce(dot, combined);  // lane 0 holds the whole sums
    pp = detail::warp_reduce(pp, combined);
    qq = detail::warp_reduce(qq, combined);
    if (lane == 0)
      off =
          fmax(off, off_diagonal(recheck[r].x, recheck[r].y, pp.value(), qq.value(), dot.value()));
  }
  off = BlockTeam{team_scratch}.max(off);
  if (threadIdx.x == 0) raise_to(&G.test_bits[matrix], double(off));
}

// The columns of `chunk` (sort_columns of them, by index) that may still rotate, and those of them
// without a positive tracked norm, added to GlobalState::rotating_columns. Warp 0 calls it.
template <class T>
__device__ void count_rotating_columns(const GlobalState<T>& G, std::int64_t matrix, int chunk) {
  const int c = chunk * sort_columns + int(threadIdx.x);
  const bool rotating = c < G.N && G.error_scales_of(matrix)[c] > T(0);
  const bool unsorted = rotating && !(G.norms_of(matrix)[c] > T(0));
  const unsigned rotating_lanes = __ballot_sync(0xffffffffu, rotating);
  const unsigned unsorted_lanes = __ballot_sync(0xffffffffu, unsorted);
  if (threadIdx.x == 0 && rotating_lanes != 0) {
    atomicAdd(&G.rotating_columns[0], unsigned(__popc(rotating_lanes)));
    atomicAdd(&G.rotating_columns[1], unsigned(__popc(unsorted_lanes)));
  }
}

// A block per matrix, pair of column groups and slice of rows (GramTest); `on_arrival`: before the
// first sweep, every active matrix tested (arrival_end).
template <class T>
__global__ void __launch_bounds__(test_threads)
    gram_all_pairs_test(GlobalState<T> G, GramTest<T> test, bool on_arrival) {
  extern __shared__ __align__(16) unsigned char test_shared[];
  __shared__ unsigned long long team_scratch[32];
  chain_small_kernel();  // most sweeps test nothing
  const int blocks = test.blocks_per_matrix();
  const std::int64_t matrix = blockIdx.x / blocks;
  if (!G.active[matrix]) return;  // uniform over the block
  // On arrival test_bits hold the neighbouring columns' test: a matrix that failed it is not
  // tested again. Other blocks of this test raise them meanwhile: thread 0's reading decides.
  const bool tested = __syncthreads_or(
      threadIdx.x == 0 && (on_arrival ? !(bits_as_double(G.test_bits[matrix]) > double(G.P.tol))
                                      : takes_all_pairs_test(G, matrix)));
  const int block = int(blockIdx.x % blocks), pair = block / test.slices,
            slice = block % test.slices;
  const GroupPair groups = upper_triangle_pair(pair, test.groups);
  // Fresh norms after a sweep that found rounding noise: its columns' tracked norms (the solves'
  // eigenvalues) are off by about eps times the largest, and would fail the test.
  const bool fresh = G.noise != nullptr && (G.noise[matrix] & 1);
  if (tested && (fresh || !has_negligible_group(G, matrix, groups.first, groups.second)))
    test_group_pair(G, test, matrix, pair, slice, groups.first, groups.second, fresh,
                    reinterpret_cast<T*>(test_shared), team_scratch);
  else if (test.slices > 1) {
    GramQuarter<T> unformed;
    T norm = 0;
    last_of_slices(test, matrix * test.group_pairs + pair, slice, false, unformed, norm);
  }
  const int chunks = (G.positions + sort_columns - 1) / sort_columns;
  for (int chunk = block; chunk < chunks; chunk += blocks) {
    __syncthreads();  // a previous chunk's counts are read
    rank_chunk<test_threads / 32>(G.norms_of(matrix), G.positions, chunk, G.pos_of(matrix));
    if (G.rotating_columns != nullptr && threadIdx.x < sort_columns)
      count_rotating_columns(G, matrix, chunk);
  }
  if (threadIdx.x != 0) return;
  __threadfence();  // this block's raise of test_bits, before it arrives
  if (atomicAdd(&G.test_arrivals[matrix], 1) + 1 < blocks) return;
  __threadfence();  // every block arrived: their raises are visible
  if (on_arrival) {
    arrival_end(G, matrix, G.active_count);
    // One matrix (the test on arrival is a single matrix's): its counts are final, for the host to
    // read when it reaches the mark that follows this test (SweepQueue, which queues the first
    // rounds behind the mark meanwhile; not ahead of a cluster, which reads the count itself).
    if (G.published_count != nullptr) publish_counts(G, G.active_count, G.rotating_columns);
  } else
    sweep_end(G, matrix, G.active_count, tested);
  G.test_arrivals[matrix] = 0;
  if (!G.active[matrix]) return;  // a matrix that stops keeps its last off-diagonal for the report
  G.off_bits[matrix] = 0;
  G.test_bits[matrix] = 0;
  if (G.above_tol != nullptr) G.above_tol[matrix] = 0;
  if (G.noise != nullptr) G.noise[matrix] = (G.noise[matrix] & 1) << 1;
}

}  // namespace

template <class T>
void set_gram_positions(GlobalState<T>& G) {
  G.block = gram_block;
  const int blocks = (G.N + gram_block - 1) / gram_block;
  G.block_positions = blocks + (blocks & 1);
  G.positions = G.block_positions * gram_block;
}

template <class T>
GramPlan<T> plan_gram(const GlobalState<T>& G, bool gram) {
  constexpr const char* op = "svd";
  const std::int64_t batch = G.P.batch;
  GramPlan<T> plan;
  // The round scratch: slices of rows enough for gram_partial_blocks_per_sm blocks per SM per
  // round.
  plan.pairs = gram ? batch * (G.block_positions / 2) : 0;
  plan.w_tiles = (G.M + gram_apply_rows - 1) / gram_apply_rows;
  plan.v_tiles = G.P.uv ? (G.N + gram_apply_rows - 1) / gram_apply_rows : 0;
  // The all-pairs test's blocks: a matrix's pairs of 32-column groups, each over slices of rows.
  plan.test.groups = (G.N + gram_width - 1) / gram_width;
  plan.test.group_pairs = plan.test.groups * (plan.test.groups + 1) / 2;
  plan.test.batch_group_pairs = batch * plan.test.group_pairs;
  if (plan.pairs == 0) return plan;
  require(plan.test.batch_group_pairs < (std::int64_t(1) << 31), op, "batch", "too many matrices");
  ROOFLAB_CUDA(op, "letting the Gram apply take its shared memory",
               cudaFuncSetAttribute(gram_apply<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(gram_apply_shared_bytes<T>)));
  ROOFLAB_CUDA(
      op, "letting the all-pairs test take its shared memory",
      cudaFuncSetAttribute(gram_all_pairs_test<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           gram_test_shared_bytes<T>));
  // The solves form the Gram matrices themselves when a round's solves alone fill the GPU, or
  // when the columns are two tiles of rows at most, where the partials kernel costs more in
  // latency than the solve's own two tiles (on the H200, double: 125 x 125 1.70 against 1.89
  // ms, 100 x 100 1.86 against 1.93 ms; with 256 rows 3.59 against 3.54 ms, 1024 rows 35.6
  // against 21.0 ms).
  int solves_per_sm = 0;
  ROOFLAB_CUDA(op, "asking how many blocks of a kernel fit on an SM",
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(&solves_per_sm, gram_solve<T>,
                                                             gram_solve_threads, 0));
  const bool solve_forms_gram =
      plan.pairs >= std::int64_t(solves_per_sm) * current_sm_count() || G.M <= 2 * gram_tile_rows;
  const std::int64_t blocks = std::int64_t(gram_partial_blocks_per_sm) * current_sm_count();
  const std::int64_t wanted = (blocks + plan.pairs - 1) / plan.pairs;
  const int row_tiles = (G.M + gram_tile_rows - 1) / gram_tile_rows;
  // The test's slices of rows. Up to 512 columns a matrix's pairs of groups are one block an SM or
  // less, each streaming every tile with its two teams (two warps a scheduler). Where a block would
  // stream test_split_tiles or more, slices fill one wave of blocks (test_slice_tiles), of two
  // tiles at least (a block streams through two buffers); the pair's last block then adds up the
  // slices' sums after a fence and an atomic, which cost about two or three tiles (H200, the test
  // on arrival of a 512 x 512 identity with blocks of one team: float 34.1 -> 24.8 us with 4
  // slices, double 27.7 -> 26.3 us with 2; with 2 slices of 256 x 256 float, the library call took
  // 66-69 us against 62).
  int tests_per_sm = 0;
  ROOFLAB_CUDA(op, "asking how many blocks of a kernel fit on an SM",
               cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                   &tests_per_sm, gram_all_pairs_test<T>, test_threads, gram_test_shared_bytes<T>));
  plan.test.slice_rows =
      test_slice_tiles(row_tiles, std::int64_t(tests_per_sm) * current_sm_count(),
                       plan.test.batch_group_pairs, test_split_tiles) *
      gram_tile_rows;
  plan.test.slices = (G.M + plan.test.slice_rows - 1) / plan.test.slice_rows;
  const int slices = int(std::clamp<std::int64_t>(wanted, 1, row_tiles));
  plan.work.slice_rows = (row_tiles + slices - 1) / slices * gram_tile_rows;
  plan.work.slices = solve_forms_gram ? 0 : (G.M + plan.work.slice_rows - 1) / plan.work.slice_rows;
  require(plan.pairs * (plan.w_tiles + plan.v_tiles) < (std::int64_t(1) << 31), op, "batch",
          "too many matrices");
  return plan;
}

// The pieces of the round scratch, in the order take_gram_scratch takes them.
namespace {
struct GramScratchBytes {
  std::size_t partials, rotations, columns, rotated, test_partials, test_arrivals;
};
template <class T>
GramScratchBytes gram_scratch_pieces(const GramPlan<T>& plan) {
  constexpr std::size_t gram_square = gram_width * gram_width;
  const std::size_t test_pairs =
      plan.test.slices > 1 ? std::size_t(plan.test.batch_group_pairs) : 0;
  return {aligned(sizeof(T) * gram_square * plan.work.slices * plan.pairs),
          aligned(sizeof(T) * gram_square * plan.pairs),
          aligned(sizeof(int) * gram_width * plan.pairs),
          aligned(sizeof(int) * plan.pairs),
          aligned(sizeof(T) * test_partial_values<T> * plan.test.slices * test_pairs),
          aligned(sizeof(unsigned) * test_pairs)};
}
}  // namespace

template <class T>
std::size_t gram_scratch_bytes(const GramPlan<T>& plan) {
  const GramScratchBytes bytes = gram_scratch_pieces(plan);
  return bytes.partials + bytes.rotations + 2 * bytes.columns + bytes.rotated +
         bytes.test_partials + bytes.test_arrivals;
}

// The pieces that start cleared come first (gram_cleared_bytes), the partials last.
template <class T>
void take_gram_scratch(GramPlan<T>& plan, ScratchPieces& pieces) {
  const GramScratchBytes bytes = gram_scratch_pieces(plan);
  plan.work.rotations = pieces.take<T>(bytes.rotations);
  plan.work.in_columns = pieces.take<int>(bytes.columns);
  plan.work.out_columns = pieces.take<int>(bytes.columns);
  plan.work.rotated = pieces.take<int>(bytes.rotated);
  plan.test.pair_arrivals = pieces.take<unsigned>(bytes.test_arrivals);
  plan.work.partials = pieces.take<T>(bytes.partials);
  plan.test.partials = pieces.take<T>(bytes.test_partials);
}

template <class T>
std::size_t gram_cleared_bytes(const GramPlan<T>& plan) {
  const GramScratchBytes bytes = gram_scratch_pieces(plan);
  return bytes.rotations + 2 * bytes.columns + bytes.rotated + bytes.test_arrivals;
}

template <class T>
void launch_gram_round(const GlobalState<T>& G, const GramPlan<T>& plan, std::int64_t items,
                       int round, cudaStream_t stream) {
  const GramWork<T>& gram = plan.work;
  if (!gram.solve_forms_gram())
    launch_after_previous("svd", gram_partials<T>, items * gram.slices, gram_threads, 0, 1, stream,
                          "gram_partials", G, gram, round);
  launch_after_previous("svd", gram_solve<T>, items, gram_solve_threads, 0, 1, stream, "gram_solve",
                        G, gram, round);
  launch_after_previous("svd", gram_apply<T>, items * (plan.w_tiles + plan.v_tiles),
                        gram_apply_threads, gram_apply_shared_bytes<T>, 1, stream, "gram_apply", G,
                        gram, round, plan.w_tiles, plan.v_tiles);
}

template <class T>
void launch_all_pairs_test(const GlobalState<T>& G, const GramPlan<T>& plan, bool on_arrival,
                           cudaStream_t stream) {
  launch_after_previous("svd", gram_all_pairs_test<T>,
                        std::int64_t(G.P.batch) * plan.test.blocks_per_matrix(), test_threads,
                        gram_test_shared_bytes<T>, 1, stream, "gram_all_pairs_test", G, plan.test,
                        on_arrival);
}

#define ROOFLAB_INSTANTIATE(T)                                                                     \
  template void set_gram_positions<T>(GlobalState<T>&);                                            \
  template GramPlan<T> plan_gram<T>(const GlobalState<T>&, bool);                                  \
  template std::size_t gram_scratch_bytes<T>(const GramPlan<T>&);                                  \
  template void take_gram_scratch<T>(GramPlan<T>&, ScratchPieces&);                                \
  template std::size_t gram_cleared_bytes<T>(const GramPlan<T>&);                                  \
  template void launch_gram_round<T>(const GlobalState<T>&, const GramPlan<T>&, std::int64_t, int, \
                                     cudaStream_t);                                                \
  template void launch_all_pairs_test<T>(const GlobalState<T>&, const GramPlan<T>&, bool,          \
                                         cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
