// The Gram schedule in one cluster per matrix (the single-matrix ladder's rung 14): every sweep in
// one launch, the matrix's columns in the cluster's shared memory from the first round to the
// last, with its own all-pairs test. Hopper only: the kernel body is behind ROOFLAB_HAS_CLUSTERS,
// and cluster_sweeps_shape offers it only where DeviceFeatures::clusters() holds.
#include "svd/gram.cuh"

namespace rooflab::jacobi {
namespace {

// The Gram schedule in one cluster per matrix (the ladder's rung 14), for matrices whose pairs of
// blocks and rows fit one cluster: every sweep in one launch, the columns in shared memory from
// the first round to the last. Block (p, h) of the cluster (the h-th of `split` blocks of pair p)
// holds share h of the rows of W and V for the 32 columns of positions 2p and 2p + 1, the ring's
// pair in even rounds, and a third half for position 2p + 2, which pair p + 1's blocks lend it
// for an odd round: they write their outputs of position 2p + 2 straight into its shared memory,
// and it writes its outputs of that position back into theirs. A cluster barrier then ends the
// round: no launch, no load of the rows through L2 and no store (on the H200, double, a fused
// round of 100 x 100 spent 1.6 us loading, 1.0 storing and 0.8 to the next launch). Reading the
// lent half from the neighbour after the barrier instead took the same time (100 x 100: 878
// against 877 us for the kernel under Nsight Compute).
// The positions start in column order and are never sorted: the sweeps alternate the direction
// of the pairs' outputs instead (the larger half to the higher position in even sweeps, to the
// lower one in odd ones), so that the ring carries the columns back and forth as the sorted start
// of each fused sweep does (sorted at the start, on the H200 in double 100 x 100 took 695 and 697
// us over two seeds against 691 and 684, 125 x 125 727 and 725 against 696 and 705, the same
// sweeps). A pair that is orthogonal swaps its halves, so a sweep
// that rotates nothing pairs every two blocks once and every two columns of a block in its first
// round: its verdict is the whole matrix's. The all-pairs test (cluster_all_pairs_test) mostly
// stands for that sweep.
// Hopper runs clusters of up to 16 blocks when the kernel allows it (a non-portable size): 8 pairs
// of 2 blocks hold 256 columns with the vectors.
constexpr int largest_cluster_blocks = 16;
constexpr int cluster_sweeps_max_rows = 2 * fused_chunk_rows;
template <class T>
std::size_t cluster_shared_bytes(const ClusterShape& shape) {
  return sizeof(T) *
         (3 * gram_block * std::size_t(shape.ldt) + gram_width * (apply_ldq + gram_width));
}

// The shape for an M x N matrix of `block_positions` positions (V's rows too when uv) in at most
// `max_blocks` blocks: the fewest blocks per pair whose shares are one product of rows, else two.
ClusterShape cluster_shape(int M, int N, bool uv, int block_positions, int max_blocks) {
  const int pairs = block_positions / 2;
  for (const int max_rows : {fused_chunk_rows, cluster_sweeps_max_rows})
    for (int split = 1; split * pairs <= max_blocks; ++split) {
      const int w_rows = row_share(M, split), v_rows = uv ? row_share(N, split) : 0;
      if (w_rows + v_rows <= max_rows)
        return {pairs, split, w_rows, v_rows, round_up(w_rows + v_rows, fused_chunk_rows) + 4};
    }
  return {};
}

// The all-pairs test inside the cluster (as gram_all_pairs_test does for the fused rounds): after a
// sweep whose largest cosine was at most sqrt(tol), the largest scaled off-diagonal over every
// pair of the matrix's columns, the same in every block; when it is within tol, it stands for the
// sweep that would rotate nothing. Jacobi converges quadratically: after a sweep at x the pairs
// are off by about x^2, so a test after a larger x is likely to fail (100 x 100 met 4.2e-5 in its
// eighth sweep and 1.9e-13 in its ninth; at the fused path's threshold, tol^(1/4), it tested after
// both, and the first test failed). On the H200, double, against no test in the same run: 100 x
// 100 621 and 615 us over two seeds against 679 and 675; 125 x 125 626 and 636 against 689 and 701
// (the same sweeps). Group p,
// the 32 columns of positions 2p and 2p + 1 (slots 0..31 of pair p's blocks), forms its shares of
// its products with groups p + d (mod P) for d = 0 .. P / 2 (of two groups P / 2 apart only the
// lower one), reading the other group's rows from the shared memory of the block with the same
// rows, into `products` (d at [d * 1024], the solve's buffers) and, for d = 4 (P = 8), `fifth`
// (the round's part of G, free between rounds). After a barrier block h of pair p adds up the
// shares of d = h, h + split, ... and scales them by the column norms, the diagonals of d = 0 (0
// for rounding noise, by the slots' error scales: such a column is left out, as the sweeps leave
// it). Every thread of every block calls it.
constexpr int cluster_test_products = 4;  // held by SolveShared's buffers; a fifth by `part`
static_assert(cluster_test_products * gram_width * gram_width <=
                  4 * SolveShared<float>::buffer_size,
              "the test's products fit the solve's buffers");
#if ROOFLAB_HAS_CLUSTERS
template <class T>
__device__ T cluster_all_pairs_test(const cooperative_groups::cluster_group& cluster,
                                    const ClusterShape& shape, const T* slots, const T* slot_scales,
                                    T* products, T* fifth, T* norms, T& block_max,
                                    unsigned long long* team_scratch) {
  const int P = shape.pairs, rank = int(cluster.block_rank()), pair = rank / shape.split;
  const int share = rank % shape.split;
  const auto formed = [&](int group, int d) { return !(2 * d == P && group >= d); };
  const auto product_of = [&](T* own, int d) {
    return d < cluster_test_products ? own + d * gram_width * gram_width : fifth;
  };
  for (int d = 0; 2 * d <= P; ++d) {
    if (!formed(pair, d)) continue;
    const T* other = cluster.map_shared_rank(slots, (pair + d) % P * shape.split + share);
    SolveGramPatch<T> patch;
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
      patch.add_tiles(slots + r, other + r, shape.ldt);
    T* const product = product_of(products, d);
    patch.for_each([&](int k, int l, T value) { product[k * gram_width + l] = value; });
  }
  cluster.sync();  // every block's shares are in
  T off = 0;
  for (int d = share; 2 * d <= P; d += shape.split) {
    if (!formed(pair, d)) continue;
    const int other = (pair + d) % P;
    __syncthreads();  // the previous products' norms are read
    if (threadIdx.x <
        2 * gram_width) {  // the two groups' column norms, from their diagonal products
      const int group = threadIdx.x < gram_width ? pair : other, k = threadIdx.x % gram_width;
      T norm = 0;
      for (int h = 0; h < shape.split; ++h)
        norm += cluster.map_shared_rank(products, group * shape.split + h)[k * (gram_width + 1)];
      const T scale = cluster.map_shared_rank(slot_scales, group * shape.split)[k];
      norms[threadIdx.x] = is_rounding_noise(norm, scale) ? T(0) : norm;
    }
    __syncthreads();
    constexpr int per_thread = gram_width * gram_width / gram_solve_threads;
    T product[per_thread] = {};
    for (int h = 0; h < shape.split; ++h) {
      const T* shares = cluster.map_shared_rank(product_of(products, d), pair * shape.split + h);
#pragma unroll
      for (int i = 0; i < per_thread; ++i)
        product[i] += shares[threadIdx.x + i * gram_solve_threads];
    }
#pragma unroll
    for (int i = 0; i < per_thread; ++i) {
      const int k = (threadIdx.x + i * gram_solve_threads) / gram_width,
                l = threadIdx.x % gram_width;
      if (d > 0 || k < l)  // 0 for padding: a zero column
        off = fmax(off, scaled_off_diagonal(norms[k], norms[gram_width + l], product[i]));
    }
  }
  off = BlockTeam{team_scratch}.max(off);
  if (threadIdx.x == 0) block_max = off;
  cluster.sync();  // every block's largest is in, and every share read
  for (int r = 0; r < shape.blocks(); ++r) off = fmax(off, *cluster.map_shared_rank(&block_max, r));
  return off;
}
#endif

#if ROOFLAB_HAS_CLUSTERS
// What the end of a sweep may ask of the columns, from their fresh squared norms (each added up
// from its pair's blocks' shares of the rows, in `shares`), which the cluster does not track:
// whether they spread more than 1 / eps (the hand-over's test of the norms,
// wider_than_the_gram_resolves, jacobi_math.hpp), over how many binades the positive ones spread
// (the early hand-over's, spectrum_unfolding), and whether any is rounding noise by its slot's
// error scale. The same in every block; every thread of every block calls it. Not inlined, as it
// seldom runs: inlined, it cost a random 100 x 100 matrix 6-8% (H100, 766-769 against 712-727 us;
// docs/results/h100-svd-larger-cluster.txt), and a call at every sweep's end 2%. One copy per
// cluster kernel (`Caller`, the kernel's TestOnArrival): with one caller the compiler passes the
// kernel's shared arrays as constants, and the kernel without the test keeps the code it had alone.
struct ColumnsSeen {
  bool wider = false, noise = false;
  int binades = 0;
};
template <class T, bool Caller>
__device__ __noinline__ ColumnsSeen look_at_columns(
    const cooperative_groups::cluster_group& cluster, const ClusterShape& shape, const T* slots,
    const int* ids, const T* slot_scales, int N, T* shares, T* block_seen) {
  constexpr unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, pair = int(cluster.block_rank()) / shape.split;
  for (int s = threadIdx.x >> 5; s < gram_width; s += solve_parts) {
    T sum = 0;
    for (int r = lane; r < shape.w_rows; r += 32)
      sum = fma(slots[s * shape.ldt + r], slots[s * shape.ldt + r], sum);
    sum = group_sum(sum, 32);
    if (lane == 0) shares[s] = sum;
  }
  cluster.sync();  // the pair's shares are in
  if (threadIdx.x < gram_width) {
    T norm = 0;
    for (int r = pair * shape.split; r < (pair + 1) * shape.split; ++r)
      norm += cluster.map_shared_rank(shares, r)[threadIdx.x];
    const bool column = ids[threadIdx.x] < N;  // not padding
    T largest = column ? norm : T(0), least = column ? norm : T(INFINITY);
    T least_positive = column && norm > 0 ? norm : T(INFINITY);
    T noise = column && is_rounding_noise(norm, slot_scales[threadIdx.x]) ? T(1) : T(0);
    for (int offset = 16; offset > 0; offset >>= 1) {
      largest = fmax(largest, __shfl_xor_sync(full, largest, offset));
      least = fmin(least, __shfl_xor_sync(full, least, offset));
      least_positive = fmin(least_positive, __shfl_xor_sync(full, least_positive, offset));
      noise = fmax(noise, __shfl_xor_sync(full, noise, offset));
    }
    if (threadIdx.x == 0) {
      block_seen[0] = largest;
      block_seen[1] = least;
      block_seen[2] = noise;
      block_seen[3] = least_positive;
    }
  }
  cluster.sync();  // every block's view is in, and every share read
  T largest = 0, least = T(INFINITY), noise = 0, least_positive = T(INFINITY);
  for (int r = 0; r < shape.blocks(); ++r) {
    const T* seen = cluster.map_shared_rank(block_seen, r);
    largest = fmax(largest, seen[0]);
    least = fmin(least, seen[1]);
    noise = fmax(noise, seen[2]);
    least_positive = fmin(least_positive, seen[3]);
  }
  return {wider_than_the_gram_resolves(largest, least), noise > 0,
          binades_between(largest, least_positive)};
}
#endif

// One kernel of about 290 lines on purpose: every sweep runs inside it, its columns held in the
// cluster's shared memory from the first round to the last, and its phases (the round's solve,
// the exchange of the lent halves, the all-pairs test) are separated by cluster barriers that
// every block must reach in the same order; the phases' comments below are its chapters. Two
// instantiations (launch_cluster_sweeps): TestOnArrival for the matrices whose neighbouring columns
// arrive orthogonal; without it, for the others, the kernel's code stays as it was before the test
// (the test's code in the one kernel cost random matrices 2-4%, docs/svd.md).
template <class T, bool TestOnArrival>
__global__ void __launch_bounds__(gram_solve_threads, 1)
    gram_cluster_sweeps(GlobalState<T> G, ClusterShape shape) {
#if ROOFLAB_HAS_CLUSTERS
  namespace cg = cooperative_groups;
  constexpr unsigned full = 0xffffffffu;
  constexpr int ld = SolveShared<T>::ld, ldq = apply_ldq;
  wait_for_previous_kernel();
  extern __shared__ __align__(16) unsigned char cluster_shared[];
  __shared__ __align__(16) SolveShared<T> sh;
  __shared__ int ids[3 * gram_block];  // each slot's column (>= N: padding)
  // Each slot's error scale (jacobi_math.hpp, RoundingNoise); -1 until the column's first round,
  // which starts it from the column's fresh squared norm.
  __shared__ T scales[3 * gram_block];
  __shared__ T block_off;           // the block's largest cosine of the sweep just ended
  __shared__ unsigned block_above;  // its count of pairs above tol (the hand-over's)
  __shared__ T block_seen[4];       // what look_at_columns saw of its columns
  __shared__ T block_test;          // the block's largest in the all-pairs test
  __shared__ T column_norms[gram_width], sigmas[gram_width];  // the block's share, then the whole
  __shared__ T test_norms[2 * gram_width];
  __shared__ unsigned long long team_scratch[32];
  const int ldt = shape.ldt;
  T* const slots = reinterpret_cast<T*>(cluster_shared);  // row r of slot s at slots[s * ldt + r]
  T* const q = slots + 3 * gram_block * ldt;  // Q, output k at column k: Q_sk at q[s * ldq + k]
  T* const part = q + gram_width * ldq;       // this block's part of G, G_kl at k * 32 + l
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = int(cluster.block_rank()), pair = rank / shape.split;
  const std::int64_t matrix = blockIdx.x / shape.blocks();
  // Uniform over the cluster. The kernel that tests on arrival takes the matrices that ask for it,
  // and leaves each one stopped (active 0) for the kernel without the test, which runs after it.
  if (TestOnArrival ? G.active[matrix] != active_maybe_orthogonal : !G.active[matrix]) return;
  const int lane = threadIdx.x & 31, k0 = (threadIdx.x >> 5) * solve_rows;
  const int w0 = rank % shape.split * shape.w_rows, v0 = rank % shape.split * shape.v_rows;
  const int rows = shape.w_rows + shape.v_rows;
  T* W = G.w(matrix);
  T* V = G.v(matrix);

  // Positions 2p and 2p + 1 (slots 0..31), columns 32p .. 32p + 31: W's rows first, then V's; the
  // rows past them zero.
  {
    const int column = 2 * pair * gram_block + lane;
    if (threadIdx.x < gram_width) {
      ids[threadIdx.x] = column;
      scales[threadIdx.x] = T(-1);
    }
    const auto column_of = [&](int slot) { return __shfl_sync(full, column, slot); };
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          slots + r, ldt, W, G.ldw, G.M, G.N, w0 + r, column_of);
    for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          slots + shape.w_rows + r, ldt, V, G.ldv, G.N, G.N, v0 + r, column_of);
    commit_copies();
    for (int e = threadIdx.x; e < 3 * gram_block * (ldt - rows); e += gram_solve_threads)
      slots[e / (ldt - rows) * ldt + rows + e % (ldt - rows)] = T(0);
    wait_copies<0>();
  }
  cluster.sync();  // the neighbours' slots are ready for this block's outputs

  const int rounds = 2 * shape.pairs;
  const long long pairs_across = pairs_across_blocks(G.N, gram_block);
  const T floor_off = T(gram_floor<T>(G.M));
  T sweep_off = 0, off = 0;
  // The sweep's pairs of columns above tol, counted by each pair's first block.
  unsigned sweep_above = 0;
  int sweep = 0, floor_sweeps = 0;
  int binades_first = 0;  // the columns' spread after sweep unfolding_first_look
  bool at_the_floor = false;
  // The all-pairs test on arrival, for the matrices whose neighbouring columns all arrived
  // orthogonal (global_max_abs): columns already orthogonal (an identity, a diagonal matrix) stop
  // before the sweep that would rotate nothing, which the test stands for. The slots' error scales
  // are not yet known, so no column counts as rounding noise.
  bool arrived_orthogonal = false;
  if constexpr (TestOnArrival) {
    const T arrival = cluster_all_pairs_test(cluster, shape, slots, scales, sh.buffers, part,
                                             test_norms, block_test, team_scratch);
    arrived_orthogonal = !(arrival > G.P.tol);
    if (arrived_orthogonal) {  // the test counts as the first sweep
      sweep = 1;
      off = arrival;
    }
  }
  for (int step = 0; !arrived_orthogonal; ++step) {
    const int round = step % rounds;
    const bool odd = round & 1;
    if (step > 0) {
      cluster.sync();    // the previous round's outputs are in, in every block
      if (round == 0) {  // a sweep ended: every block reads every block's largest cosine and count
        off = 0;
        long long above = 0;
        for (int r = 0; r < shape.blocks(); ++r) {
          off = fmax(off, *cluster.map_shared_rank(&block_off, r));
          above += *cluster.map_shared_rank(&block_above, r);
        }
        ++sweep;
        if (!(off > G.P.tol) || sweep >= G.P.max_sweeps) break;
        T checked = off;  // the sweep's largest cosine, or the all-pairs test's where it ran
        // The first sweep's columns: whether some are rounding noise, and their spread, which the
        // early hand-over's test compares with.
        static_assert(unfolding_first_look == 1, "the hand-over's first look is the noise's");
        bool noise = false;
        if (sweep == 1) {
          const ColumnsSeen seen = look_at_columns<T, TestOnArrival>(
              cluster, shape, slots, ids, scales, G.N, column_norms, block_seen);
          noise = seen.noise;
          binades_first = seen.binades;
        }
        // The all-pairs test, where the sweep met only small off-diagonals (up to 7 pairs: at 8 it
        // saved random 256 x 256 matrices no sweep, H100), or where the first sweep left columns of
        // rounding noise (a rank-one matrix's): with the noise left out, the test finds what the
        // sweep left.
        if ((off <= sqrt(G.P.tol) && shape.pairs / 2 < cluster_test_products) || noise) {
          const T tested = cluster_all_pairs_test(cluster, shape, slots, scales, sh.buffers, part,
                                                  test_norms, block_test, team_scratch);
          if (!(tested > G.P.tol)) {  // the test counts as the last sweep
            ++sweep;
            off = tested;
            break;
          }
          checked = tested;
        }
        // The Gram products' rounding floor and the hand-over, as the host-driven sweeps judge
        // them (stays_at_the_gram_floor and hands_over, global_state.cuh); the norms are looked
        // at only where the sweep and the count qualify.
        floor_sweeps = checked <= floor_off ? floor_sweeps + 1 : 0;
        if (floor_sweeps >= gram_floor_sweeps) {
          at_the_floor = true;
          off = checked;
          break;
        }
        if (G.P.second_try_follows && still_rotating_late(sweep, above, pairs_across) &&
            look_at_columns<T, TestOnArrival>(cluster, shape, slots, ids, scales, G.N, column_norms,
                                              block_seen)
                .wider)
          break;  // unconverged: the second try takes the matrix
        if (G.P.second_try_follows && G.P.batch == 1 && unfolding_applies<GramUnfolding, T>(G.N) &&
            unfolding_looks_at<GramUnfolding>(sweep, above, pairs_across)) {
          const int binades = look_at_columns<T, TestOnArrival>(cluster, shape, slots, ids, scales,
                                                                G.N, column_norms, block_seen)
                                  .binades;
          if (spectrum_unfolding<GramUnfolding>(binades, binades_first)) break;  // the same
        }
        sweep_off = 0;
        sweep_above = 0;
      }
    }
    // The round's 32 slots: positions 2p, 2p + 1, or in an odd round 2p + 1, 2p + 2 (the last pair
    // then has no partner).
    T* const tile = slots + (odd ? gram_block : 0) * ldt;
    int* const tile_ids = ids + (odd ? gram_block : 0);
    T* const tile_scales = scales + (odd ? gram_block : 0);
    const bool works = !odd || pair + 1 < shape.pairs;
    const int column = tile_ids[lane];
    const T lane_scale = works && column < G.N ? tile_scales[lane] : T(0);
    // Slots whose error scale is 0 hold zero columns (or padding): a zero column is never rotated,
    // so its scale stays 0. A pair of them only trades its halves: no product, no solve (every
    // round of a zero matrix's sweep but the first, which finds each column's scale). The same in
    // every warp and every block of the pair: the slots are the lanes.
    const bool zero_pair = __all_sync(full, lane_scale == T(0));
    if (works && !zero_pair) {
      SolveGramPatch<T> patch;
      for (int r = 0; r < shape.w_rows; r += gram_tile_rows) patch.add_tile(tile + r, ldt);
      patch.for_each([&](int k, int l, T value) { part[k * gram_width + l] = value; });
    }
    if (shape.split > 1)
      cluster.sync();  // the pair's parts are in
    else
      __syncthreads();
    if (works) {
      const InnerOrder order{!inner_sweep_is_full(round, rounds, gram_full_inner_period)};
      const int lane_column = seat_column(order.seat(lane));
      PairSolve<T> solved;  // a zero pair: nothing rotated
      if (!zero_pair) {
        T x[solve_rows] =
            {};  // G_kl, k = k0 + kk, l = lane: the parts in rank order, the same in every block
        for (int r = pair * shape.split; r < (pair + 1) * shape.split; ++r) {
          const T* other = cluster.map_shared_rank(part, r);
#pragma unroll
          for (int kk = 0; kk < solve_rows; ++kk) x[kk] += other[(k0 + kk) * gram_width + lane];
        }
#pragma unroll
        for (int kk = 0; kk < solve_rows; ++kk)
          sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
        clear_gram_noise(x, lane_scale, order, sh, nullptr);  // the sweep's end looks for noise
        solved = solve_pair(G, order, sh, x);
        sweep_off = fmax(sweep_off, solved.off);
        if (rank % shape.split == 0) sweep_above += unsigned(solved.above_tol);  // once a pair
      }
      // In the column's first round its scale starts from its fresh squared norm.
      const T scale = lane_scale < 0 ? initial_error_scale(solved.diagonal, G.N) : lane_scale;
      // Where the round's outputs go, slots 0..15 to `low` and 16..31 to `high`: the half that the
      // next round's pair borrows (after an even round, position 2p to pair p - 1's third half) or
      // returns (after an odd one, 2p + 2 to pair p + 1's first) goes straight to the neighbour.
      T* low = tile;
      int* low_ids = tile_ids;
      T* low_scales = tile_scales;
      T* high = tile + gram_block * ldt;
      int* high_ids = tile_ids + gram_block;
      T* high_scales = tile_scales + gram_block;
      if (odd) {
        high = cluster.map_shared_rank(slots, rank + shape.split);
        high_ids = cluster.map_shared_rank(ids, rank + shape.split);
        high_scales = cluster.map_shared_rank(scales, rank + shape.split);
      } else if (pair > 0) {
        low = cluster.map_shared_rank(slots, rank - shape.split) + gram_width * ldt;
        low_ids = cluster.map_shared_rank(ids, rank - shape.split) + gram_width;
        low_scales = cluster.map_shared_rank(scales, rank - shape.split) + gram_width;
      }
      if (!solved.rotated) {
        // Left alone, the pair's halves still trade positions, as the fused round's do.
        for (int e = threadIdx.x; e < gram_block * ldt; e += gram_solve_threads) {
          const T first = tile[e], second = tile[e + gram_block * ldt];
          low[e] = second;
          high[e] = first;
        }
        const T second_scale = __shfl_down_sync(full, scale, gram_block);
        if (threadIdx.x < gram_block) {
          low_ids[threadIdx.x] = tile_ids[threadIdx.x + gram_block];
          low_scales[threadIdx.x] = second_scale;
          high_ids[threadIdx.x] = column;
          high_scales[threadIdx.x] = scale;
        }
      } else {
        T eigenvalue;
        const int output = rank_outputs(sh, solved.now, order, column, column < G.N, eigenvalue);
        // Even sweeps send the larger half to the higher position, odd ones to the lower: output
        // k lands in slot (k + 16) mod 32 or k.
        const int to = sweep % 2 == 0 ? (output + gram_block) % gram_width : output;
        const T* const q_now = sh.buffers + (2 + solved.now) * SolveShared<T>::buffer_size;
#pragma unroll
        for (int kk = 0; kk < solve_rows; ++kk)
          q[(k0 + kk) * ldq + to] = q_now[(k0 + kk) * ld + lane_column];
        const int output_column = sh.slot_column[output];
        __syncthreads();  // Q is in
        for (int c = 0; c < rows; c += fused_chunk_rows) {
          RowsTimesQ<T> product;
          product.multiply(tile + c, ldt, q, ldq);
          // The chunk's inputs are read: its outputs may take their place. In double a warp reads
          // and writes only its own 16 rows; in float a thread's outputs are other warps' inputs.
          if constexpr (sizeof(T) == 8)
            __syncwarp();
          else
            __syncthreads();
          product.stage(low + c, high + c, ldt);
        }
        // Warp 0 alone, after the product: the solve's Q (in sh) stays until the next round's
        // solve. Computed by every warp before the barrier above, the output scales took 0.41 M of
        // the 0.76 M instructions that the rounding-noise tracking added to the kernel's 9.94 M
        // for a random 100 x 100 matrix (H100, h100-ncu-svd-noise-tracking.json).
        if (threadIdx.x < gram_width) {
          const T output_scale = output_error_scale(sh, solved.now, order, scale);
          (to < gram_block ? low_ids : high_ids)[to % gram_block] = output_column;
          (to < gram_block ? low_scales : high_scales)[to % gram_block] = output_scale;
        }
      }
    }
    if (round == rounds - 1 && threadIdx.x == 0) {
      block_off = sweep_off;
      block_above = sweep_above;
    }
  }

  // Sigma of each column (the pair's blocks' shares of its squared norm added in rank order, the
  // same in each), then positions 2p and 2p + 1 back to their columns, W's divided by sigma when
  // the vectors are wanted: global_column_norms and global_normalize for the other schedules. The
  // shares are added up as look_at_columns adds them, written out again: one inlined helper for
  // both moved the kernel's register allocation and cost random 256 x 256 matrices 1% (1.694-1.698
  // against 1.670-1.682 ms, H100, three passes; docs/results/h100-svd-noise-factor.txt, run 3).
  for (int s = threadIdx.x >> 5; s < gram_width; s += solve_parts) {
    T sum = 0;
    for (int r = lane; r < shape.w_rows; r += 32)
      sum = fma(slots[s * ldt + r], slots[s * ldt + r], sum);
    sum = group_sum(sum, 32);
    if (lane == 0) column_norms[s] = sum;
  }
  cluster.sync();  // the pair's shares are in
  if (threadIdx.x < gram_width) {
    T sum = 0;
    for (int r = pair * shape.split; r < (pair + 1) * shape.split; ++r)
      sum += cluster.map_shared_rank(column_norms, r)[threadIdx.x];
    const T sigma = sigma_from_norm2(sum, scales[threadIdx.x]);
    sigmas[threadIdx.x] = sigma;
    if (rank % shape.split == 0 && ids[threadIdx.x] < G.N)
      G.norms_of(matrix)[ids[threadIdx.x]] = sigma;
  }
  __syncthreads();
  if (G.P.uv)
    for (int e = threadIdx.x; e < gram_width * shape.w_rows; e += gram_solve_threads) {
      const int s = e / shape.w_rows, r = e % shape.w_rows;
      if (sigmas[s] > 0) slots[s * ldt + r] /= sigmas[s];
    }
  __syncthreads();
  for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
    store_columns<gram_tile_rows, gram_solve_threads>(slots + r, ldt, W, G.ldw, G.M, w0 + r, ids,
                                                      G.N);
  for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
    store_columns<gram_tile_rows, gram_solve_threads>(slots + shape.w_rows + r, ldt, V, G.ldv, G.N,
                                                      v0 + r, ids, G.N);
  if (rank == 0 && threadIdx.x == 0) {
    G.sweeps[matrix] = sweep;
    G.converged[matrix] = !(off > G.P.tol) || at_the_floor;
    G.off_bits[matrix] = static_cast<unsigned long long>(__double_as_longlong(double(off)));
    G.active[matrix] = 0;
  }
  cluster.sync();  // no block leaves while another may still read its shared memory
#else
  __trap();  // launched only where DeviceFeatures::clusters() holds
#endif
}

}  // namespace

// The cluster for `batch` M x N matrices when they fit and every matrix's cluster is on the GPU at
// once; pairs 0 otherwise.
template <class T>
ClusterShape cluster_sweeps_shape(int M, int N, bool uv, std::int64_t batch) {
  if (!current_device_features().clusters()) return {};
  const int blocks = (N + gram_block - 1) / gram_block, positions = blocks + (blocks & 1);
  // A portable cluster where one holds the matrix, else, for a single matrix in double, a larger
  // one. On an H100 a larger cluster against the fused rounds: double 256 x 256 1.70 against 2.11
  // ms, 160 x 160 1.02 against 1.50, 500 x 100 0.80 against 1.22; but float 256 x 256 2.40 against
  // 1.74 ms, and 4 double 256 x 256 matrices 2.46 against 2.23 ms
  // (docs/results/h100-svd-larger-cluster.txt, run 1).
  ClusterShape shape = cluster_shape(M, N, uv, positions, portable_cluster_blocks);
  if (shape.pairs == 0 && sizeof(T) == 8 && batch == 1)
    shape = cluster_shape(M, N, uv, positions, largest_cluster_blocks);
  if (shape.pairs == 0) return {};
  const std::size_t bytes = cluster_shared_bytes<T>(shape);
  // The kernel that tests on arrival runs only in the portable cluster (a larger one takes the test
  // ahead of its launch, run_global.cu).
  for (const auto kernel : {gram_cluster_sweeps<T, false>, gram_cluster_sweeps<T, true>}) {
    if (kernel == gram_cluster_sweeps<T, true> && !shape.portable()) continue;
    ROOFLAB_CUDA(
        "svd", "letting the cluster kernel take its shared memory",
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    if (!shape.portable())
      ROOFLAB_CUDA("svd", "letting the cluster kernel run in clusters of more than 8 blocks",
                   cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    if (max_active_clusters(kernel, batch, shape.blocks(), bytes) < batch) return {};
  }
  return shape;
}

template <class T>
bool runs_in_one_cluster(int m, int n, bool uv, int batch) {
  return cluster_sweeps_shape<T>(std::max(m, n), std::min(m, n), uv, batch).pairs > 0;
}

template <class T>
void launch_cluster_sweeps(const GlobalState<T>& G, const ClusterShape& shape,
                           cudaStream_t stream) {
  const std::int64_t blocks = std::int64_t(G.P.batch) * shape.blocks();
  const std::size_t bytes = cluster_shared_bytes<T>(shape);
  // The matrices whose neighbouring columns arrived orthogonal first, through the kernel that
  // tests them on arrival; then the others. Each kernel's clusters leave the other's matrices at
  // once.
  if (G.neighbours_apart != nullptr)
    launch_after_previous("svd", gram_cluster_sweeps<T, true>, blocks, gram_solve_threads, bytes,
                          shape.blocks(), stream, "gram_cluster_sweeps", G, shape);
  launch_after_previous("svd", gram_cluster_sweeps<T, false>, blocks, gram_solve_threads, bytes,
                        shape.blocks(), stream, "gram_cluster_sweeps", G, shape);
}

#define ROOFLAB_INSTANTIATE(T)                                                 \
  template ClusterShape cluster_sweeps_shape<T>(int, int, bool, std::int64_t); \
  template bool runs_in_one_cluster<T>(int, int, bool, int);                   \
  template void launch_cluster_sweeps<T>(const GlobalState<T>&, const ClusterShape&, cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
