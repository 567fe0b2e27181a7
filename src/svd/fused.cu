// The fused Gram round (the single-matrix ladder's rung 13): a round's partials, solve and apply in
// one launch of a cluster of blocks per pair of column blocks, for rounds whose pairs' clusters
// all fit on the GPU at once. Hopper only: the kernel body is behind ROOFLAB_HAS_CLUSTERS, and the
// host takes this schedule only where DeviceFeatures::clusters() holds (run_global.cu).
#include "svd/gram.cuh"

namespace rooflab::jacobi {
namespace {

// The fused round: a round's partials, solve and apply in one launch, for rounds whose pairs all
// fit on the GPU at once (a single matrix up to a few hundred columns). A cluster of blocks takes a
// pair: block r of K loads its share of the rows once (w_rows of W from r w_rows, v_rows of V from
// r v_rows) into shared memory and forms their part of G on the tensor cores; the K parts are added
// from each other's shared memory in rank order (distributed shared memory), so that every block
// holds the same G and, solving it with the same arithmetic, the same Q; then each block multiplies
// its own rows by Q and stores them. The three kernels each paid a launch, a trip of G or Q through
// L2 and the wait for the slowest block before them; the fused round pays one launch and two
// cluster barriers. Rows of W and V per block, together: one product's worth (a chunk) where the
// clusters fit, else two. On the H200, double, a round of 256 x 256 took 14.5 us in clusters of 4
// blocks of 128 rows against 16.5 in 2 of 256 (and 16.2 in 8 of 64 + 64 padding); 512 x 512 fits 16
// clusters of 4 blocks of 256 rows, not of 8 of 128.
constexpr int fused_preferred_rows = gram_apply_rows;
constexpr int fused_max_rows = 2 * gram_apply_rows;
constexpr int fused_max_cluster = 8;           // the portable cluster size
constexpr int fused_ldt = fused_max_rows + 4;  // 4 (mod 16), as the apply's tile
template <class T>
constexpr std::size_t fused_shared_bytes = sizeof(T) * gram_width*(fused_ldt + apply_ld_out<T> +
                                                                   gram_width + apply_ldq);

// One kernel of about 125 lines on purpose: its phases (load, partial G, the cluster's sum, the
// solve, the product) are separated by cluster barriers that every block must reach in the same
// order, and the phases' comments below are its chapters.
template <class T>
__global__ void __launch_bounds__(gram_solve_threads, 1)
    gram_round_fused(GlobalState<T> G, FusedShape shape, int round) {
#if ROOFLAB_HAS_CLUSTERS
  namespace cg = cooperative_groups;
  wait_for_previous_kernel();
  publish_previous_count(G);
  constexpr int ld = SolveShared<T>::ld, ldt = fused_ldt, ldo = apply_ld_out<T>, ldq = apply_ldq;
  extern __shared__ __align__(16) unsigned char fused_shared[];
  __shared__ __align__(16) SolveShared<T> sh;
  T* const tile = reinterpret_cast<T*>(fused_shared);  // row r of slot s at tile[s * ldt + r]
  T* const out = tile + gram_width * ldt;       // a chunk's outputs, output k at out[k * ldo]
  T* const part = out + gram_width * ldo;       // this block's part of G, G_kl at k * 32 + l
  T* const q = part + gram_width * gram_width;  // Q by output rank: Q_sk at q[s * ldq + k]
  const cg::cluster_group cluster = cg::this_cluster();
  const int block_rank = int(cluster.block_rank());
  const int lane = threadIdx.x & 31, part_index = threadIdx.x >> 5, k0 = part_index * solve_rows;
  std::int64_t matrix = 0;
  int first = 0;
  const bool active = gram_pair(G, round, blockIdx.x / shape.cluster, matrix, first);
  int* pos = G.pos_of(matrix);
  const int column = pos[first + lane];
  const bool real = column < G.N;
  T* error_scales = G.error_scales_of(matrix);
  const T lane_scale = active && real ? error_scales[column] : T(0);
  const bool formed = active && pair_is_formed(lane_scale);  // uniform over the cluster
  const int w0 = block_rank * shape.w_rows, v0 = block_rank * shape.v_rows;
  T* W = G.w(matrix);
  T* V = G.v(matrix);
  const auto column_of = [&](int slot) { return __shfl_sync(0xffffffffu, column, slot); };
  if (formed) {
    // W's rows and V's in two groups: G needs only W's, and V's arrive while the pair solves.
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          tile + r, ldt, W, G.ldw, G.M, G.N, w0 + r, column_of);
    commit_copies();
    for (int r = 0; r < shape.v_rows; r += gram_tile_rows)
      copy_tile_async<gram_tile_rows, gram_solve_threads, gram_width, false>(
          tile + shape.w_rows + r, ldt, V, G.ldv, G.N, G.N, v0 + r, column_of);
    commit_copies();
    wait_copies<1>();
    __syncthreads();
    SolveGramPatch<T> patch;
    for (int r = 0; r < shape.w_rows; r += gram_tile_rows) patch.add_tile(tile + r, ldt);
    patch.for_each([&](int k, int l, T value) { part[k * gram_width + l] = value; });
  }
  cluster.sync();  // every block's part is in

  const InnerOrder order{!inner_sweep_is_full(round, G.block_positions, gram_full_inner_period)};
  const int lane_column = seat_column(order.seat(lane));
  T x[solve_rows] =
      {};  // G_kl, k = k0 + kk, l = lane: the parts in rank order, the same in every block
  if (formed) {
    for (int r = 0; r < shape.cluster; ++r) {
      const T* other = cluster.map_shared_rank(part, r);
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk) x[kk] += other[(k0 + kk) * gram_width + lane];
    }
  }
  cluster.barrier_arrive();  // done with the other blocks' parts; they wait for this before leaving
  if (active && !formed) {
    if (block_rank == 0 && part_index == 0)
      leave_pair_unformed(G, matrix, pos, first, column, lane_scale);
  } else if (formed) {
#pragma unroll
    for (int kk = 0; kk < solve_rows; ++kk) sh.g(0)[order.seat(k0 + kk) * ld + lane_column] = x[kk];
    clear_gram_noise(x, lane_scale, order, sh, G.noise ? G.noise + matrix : nullptr,
                     lane_scale < 0);
    const PairSolve<T> solved = solve_pair(G, order, sh, x);
    if (threadIdx.x == 0) raise_to(&G.off_bits[matrix], double(solved.off));
    if (threadIdx.x == 0 && block_rank == 0 && solved.above_tol > 0)  // every block solves the pair
      atomicAdd(&G.above_tol[matrix], unsigned(solved.above_tol));
    T* norms = G.norms_of(matrix);
    if (!solved.rotated) {
      if (block_rank == 0 && part_index == 0)
        leave_pair_unrotated(norms, error_scales, pos, first, column, real, lane_scale,
                             solved.diagonal);
    } else {
      let_next_kernel_start();
      T eigenvalue;
      const int rank = rank_outputs(sh, solved.now, order, column, real, eigenvalue);
      const T* const q_now = sh.q(solved.now);
#pragma unroll
      for (int kk = 0; kk < solve_rows; ++kk)
        q[(k0 + kk) * ldq + rank] = q_now[(k0 + kk) * ld + lane_column];
      if (block_rank == 0 && part_index == 0) {
        const T scale = output_error_scale(sh, solved.now, order, lane_scale);
        const int target = sh.slot_column[rank];
        if (real) {
          norms[target] = fmax(eigenvalue, T(0));
          error_scales[target] = left_alone_scale(scale, solved.diagonal);
        }
        pos[first + (rank + gram_block) % gram_width] = target;
      }
      wait_copies<0>();  // V's rows
      __syncthreads();   // Q and V's rows in
      // The rows times Q, a chunk at a time; output k goes to column slot_column[k] (the real
      // columns by decreasing eigenvalue, as gram_solve's out_columns).
      const int rows = shape.w_rows + shape.v_rows;
      for (int c = 0; c < rows; c += fused_chunk_rows) {
        RowsTimesQ<T> product;
        product.multiply(tile + c, ldt, q, ldq);
        product.stage(out, ldo);
        __syncthreads();
        for (int h = 0; h < fused_chunk_rows && c + h < rows; h += gram_tile_rows) {
          const int t = c + h;  // the tile's row: W's rows first, then V's
          const bool on_w = t < shape.w_rows;
          store_columns<gram_tile_rows, gram_solve_threads>(
              out + h, ldo, on_w ? W : V, on_w ? G.ldw : G.ldv, on_w ? G.M : G.N,
              on_w ? w0 + t : v0 + t - shape.w_rows, sh.slot_column, G.N);
        }
        __syncthreads();  // the outputs stored: the next chunk's may take their place
      }
    }
  }
  wait_copies<0>();  // a pair left alone leaves no copy in flight into memory it gives up
  cluster.barrier_wait();
#else
  __trap();  // launched only where DeviceFeatures::clusters() holds
#endif
}

// The cluster size and rows per block of the fused round for an M x N matrix (V's rows too when
// uv): the fewest blocks whose shares fit `max_rows`; cluster 0 when none does.
FusedShape fused_shape(int M, int N, bool uv, int max_rows) {
  for (int blocks = 1; blocks <= fused_max_cluster; ++blocks) {
    const int w_rows = row_share(M, blocks), v_rows = uv ? row_share(N, blocks) : 0;
    if (w_rows + v_rows <= max_rows) return {blocks, w_rows, v_rows};
  }
  return {};
}

}  // namespace

template <class T>
FusedShape choose_fused_shape(int M, int N, bool uv, std::int64_t pairs) {
  ROOFLAB_CUDA(
      "svd", "letting the fused Gram round take its shared memory",
      cudaFuncSetAttribute(gram_round_fused<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(fused_shared_bytes<T>)));
  for (const int max_rows : {fused_preferred_rows, fused_max_rows}) {
    const FusedShape shape = fused_shape(M, N, uv, max_rows);
    if (shape.cluster == 0) continue;
    if (max_active_clusters(gram_round_fused<T>, pairs, shape.cluster, fused_shared_bytes<T>) >=
        pairs)
      return shape;
  }
  return {};
}

template <class T>
void launch_fused_round(const GlobalState<T>& G, const FusedShape& shape, std::int64_t items,
                        int round, cudaStream_t stream) {
  launch_after_previous("svd", gram_round_fused<T>, items * shape.cluster, gram_solve_threads,
                        fused_shared_bytes<T>, shape.cluster, stream, "gram_round_fused", G, shape,
                        round);
}

#define ROOFLAB_INSTANTIATE(T)                                                                     \
  template FusedShape choose_fused_shape<T>(int, int, bool, std::int64_t);                         \
  template void launch_fused_round<T>(const GlobalState<T>&, const FusedShape&, std::int64_t, int, \
                                      cudaStream_t);
ROOFLAB_INSTANTIATE(float)
ROOFLAB_INSTANTIATE(double)
#undef ROOFLAB_INSTANTIATE

}  // namespace rooflab::jacobi
