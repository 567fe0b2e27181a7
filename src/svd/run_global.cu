// run_global: drives the global-memory schedules (global rounds, blocked, Gram, fused, cluster).
// It plans the problem's positions and each schedule's shapes, carves the scratch out of one
// allocation, loads the matrices, queues the sweeps (the host waits once a sweep for the count of
// matrices still sweeping, the next sweep already queued behind it) and writes the results. The
// kernels live in each schedule's file (global_schedule.cuh lists what they offer).
#include <algorithm>
#include <cstdint>

#include "core/pinned_buffer.hpp"
#include "core/stream_mark.hpp"
#include "svd/global_schedule.cuh"

namespace rooflab::jacobi {
namespace {

// What run_global decided for a problem: the schedule's family and each family's plan.
template <class T>
struct GlobalPlan {
  GlobalSchedule schedule;
  bool blocked = false;  // blocked or blocked_persistent
  bool gram = false;     // gram, gram_fused or gram_cluster
  BlockedPlan blocked_plan;
  GramPlan<T> gram_plan;
  // A sweep's rounds: over pairs of blocks in the blocked and Gram schedules, else of columns.
  int rounds(const GlobalState<T>& G) const {
    return blocked || gram ? G.block_positions : G.positions;
  }
};

// The positions of the ordering and every shape the schedule takes: the blocked layout, the Gram
// round scratch, the cluster of the whole iteration where every matrix's cluster fits on the GPU
// at once, and the fused round where every pair of a round has its cluster on the GPU at once
// (else the three kernels a round): blocks of one chunk of rows if such clusters fit, else of two.
template <class T>
GlobalPlan<T> plan_global(GlobalState<T>& G, GlobalSchedule schedule) {
  GlobalPlan<T> plan;
  plan.schedule = schedule;
  plan.blocked =
      schedule == GlobalSchedule::blocked || schedule == GlobalSchedule::blocked_persistent;
  plan.gram = schedule == GlobalSchedule::gram || schedule == GlobalSchedule::gram_fused ||
              schedule == GlobalSchedule::gram_cluster;
  if (plan.blocked)
    plan.blocked_plan = plan_blocked(G);
  else if (plan.gram)
    set_gram_positions(G);
  else
    G.positions = G.N + (G.N & 1);
  plan.gram_plan = plan_gram(G, plan.gram);
  if (schedule == GlobalSchedule::gram_cluster)
    plan.gram_plan.cluster = cluster_sweeps_shape<T>(G.M, G.N, G.P.uv, G.P.batch);
  if (current_device_features().clusters() &&
      (schedule == GlobalSchedule::gram_fused ||
       (schedule == GlobalSchedule::gram_cluster && plan.gram_plan.cluster.pairs == 0)))
    plan.gram_plan.fused = choose_fused_shape<T>(G.M, G.N, G.P.uv, plan.gram_plan.pairs);
  return plan;
}

// One allocation for all of the scratch, carved into aligned pieces: G's arrays, each sweep's
// count of matrices that sweep on and the test on arrival's, each one's two counts of columns that
// may still rotate (GlobalState::rotating_columns), then the Gram round scratch.
struct ScratchSizes {
  std::size_t w, v, column, pos, word, integer, count;
  std::size_t total(std::size_t gram) const {
    return w + v + 3 * column + pos + 3 * word + 11 * integer + count + gram;
  }
};
template <class T>
ScratchSizes scratch_sizes(const GlobalState<T>& G) {
  const std::int64_t batch = G.P.batch;
  return {aligned(sizeof(T) * G.ldw * G.N * batch),
          aligned(sizeof(T) * G.ldv * G.N * batch),
          aligned(sizeof(T) * G.positions * batch),
          aligned(sizeof(int) * G.positions * batch),
          aligned(sizeof(unsigned long long) * batch),
          aligned(sizeof(int) * batch),
          aligned(sizeof(unsigned) * 3 * (G.P.max_sweeps + 1))};
}
// Returns each sweep's count of matrices that sweep on, then the test on arrival's, then their
// counts of columns that may still rotate, two each. What starts cleared lies in one piece, from
// G.pos to the end of the Gram scratch's cleared pieces (cleared_bytes).
template <class T>
unsigned* carve_scratch(GlobalState<T>& G, GramPlan<T>& gram, const ScratchSizes& size,
                        const StreamBuffer& scratch) {
  ScratchPieces pieces(scratch);
  G.W = pieces.take<T>(size.w);
  G.V = pieces.take<T>(size.v);
  G.norms = pieces.take<T>(size.column);
  G.coefficients = pieces.take<T>(size.column);
  G.error_scales = pieces.take<T>(size.column);
  G.pos = pieces.take<int>(size.pos);
  G.max_bits = pieces.take<unsigned long long>(size.word);
  G.off_bits = pieces.take<unsigned long long>(size.word);
  G.test_bits = pieces.take<unsigned long long>(size.word);
  G.exponent = pieces.take<int>(size.integer);
  G.active = pieces.take<int>(size.integer);
  G.sweeps = pieces.take<int>(size.integer);
  G.converged = pieces.take<int>(size.integer);
  G.bad = pieces.take<int>(size.integer);
  G.test_arrivals = pieces.take<int>(size.integer);
  G.noise = pieces.take<int>(size.integer);
  G.above_tol = pieces.take<unsigned>(size.integer);
  G.floor_sweeps = pieces.take<int>(size.integer);
  G.unfolding_binades = pieces.take<int>(size.integer);
  G.neighbours_apart = pieces.take<int>(size.integer);
  unsigned* const sweep_counts = pieces.take<unsigned>(size.count);
  take_gram_scratch(gram, pieces);
  return sweep_counts;
}
template <class T>
std::size_t cleared_bytes(const GlobalState<T>& G, const GramPlan<T>& gram) {
  const auto* const start = reinterpret_cast<const unsigned char*>(G.pos);
  const auto* const gram_start = reinterpret_cast<const unsigned char*>(gram.work.rotations);
  return std::size_t(gram_start - start) + gram_cleared_bytes(gram);
}

// The host-driven sweeps. The host queues each sweep and stops when one ends with no matrix left
// sweeping. So that the GPU does not idle while the host waits for that count and then launches,
// sweep s + 1 is queued before the host reads sweep s's count: its start (in the Gram schedule its
// first round) copies the count to page-locked memory and marks the stream, its next rounds follow,
// and the host waits for the mark, then queues the rest of the sweep or stops (those rounds then
// return at once: no matrix is active). Every sweep counts into its own counter, zeroed beforehand.
template <class T>
class SweepQueue {
 public:
  SweepQueue(GlobalState<T>& G, const GlobalPlan<T>& plan, unsigned* sweep_counts,
             int cooperative_blocks, cudaStream_t stream)
      : G_(G),
        plan_(plan),
        sweep_counts_(sweep_counts),
        cooperative_blocks_(cooperative_blocks),
        stream_(stream),
        counted_("svd") {
    ROOFLAB_CUDA("svd", "mapping page-locked host memory for the device",
                 cudaHostGetDevicePointer(reinterpret_cast<void**>(&G_.published_count),
                                          published().data(), 0));
    G_.published_rotating = G_.published_count + 1;
    sort_chunks_ = (G.positions + sort_columns - 1) / sort_columns;
  }

  // Every sweep, until one leaves no matrix sweeping or the sweeps run out. Where the matrix takes
  // the test on arrival (GlobalState::noise), the first sweep's first rounds follow it and the
  // host waits for its count before it queues the rest: a matrix whose columns arrive orthogonal
  // (a zero matrix, an identity) stops there, without the sweep's other rounds.
  // A single matrix whose columns that may still rotate fit one pair of blocks sweeps them in one
  // round (few_columns_rotate).
  void run() {
    int queued = queue_sweep_start(0);
    bool one_round = false;
    if (G_.noise != nullptr) {
      counted_.wait();
      if (published(0) == 0) return;
      one_round = few_columns_rotate();
    }
    for (int sweep = 0;; ++sweep) {
      queue_sweep_rest(queued, one_round);
      if (sweep + 1 == G_.P.max_sweeps) break;
      queued = queue_sweep_start(sweep + 1);
      counted_.wait();
      if (published(0) == 0) break;
      one_round = few_columns_rotate();
    }
  }

 private:
  static constexpr int rounds_ahead = 2;

  // The count of matrices that sweep on (word 0) and, for a single matrix, its two counts of
  // columns that may still rotate (GlobalState::rotating_columns).
  static PinnedBuffer<unsigned>& published() {
    thread_local PinnedBuffer<unsigned> count(3, cudaHostAllocMapped | cudaHostAllocPortable);
    return count;
  }
  static unsigned published(int word) {
    return static_cast<volatile unsigned*>(published().data())[word];
  }

  // Whether the next sweep's round 0 takes every pair of columns that may still rotate: a single
  // matrix's, at most 32 of them, each with a positive tracked norm, so that the sort put them at
  // positions 0 to 31, round 0's first pair, whose inner sweep is full (gram_full_inner_period).
  // Every other column is left alone (noise, zero, padding: a scale of at most 0), and so is every
  // other pair, unformed: the rest of the sweep would rotate nothing. A rank-2 1024 x 1024 matrix
  // spent 3 sweeps of 64 rounds on its 2 columns.
  bool few_columns_rotate() const {
    return G_.rotating_columns != nullptr && published(1) <= unsigned(2 * G_.block) &&
           published(2) == 0;
  }

  // A sweep's rounds, first .. last - 1, in the schedule's kernels.
  void queue_rounds(int first, int last) {
    const GramPlan<T>& gram = plan_.gram_plan;
    for (int round = first; round < last; ++round) {
      if (plan_.blocked) {
        launch_blocked_round(G_, plan_.blocked_plan, round, stream_);
      } else if (plan_.gram) {
        const std::int64_t items =
            std::int64_t(G_.P.batch) * pairs_in_round(round, G_.block_positions);
        if (items == 0) continue;
        if (gram.fused.cluster > 0)
          launch_fused_round(G_, gram.fused, items, round, stream_);
        else
          launch_gram_round(G_, gram, items, round, stream_);
      } else {
        launch_global_round(G_, round, stream_);
      }
    }
  }

  // Queues sweep `sweep`'s start and its first rounds; returns the rounds queued, or -1 when the
  // whole sweep went in one cooperative launch. In the Gram schedule after the first sweep the
  // previous sweep's test sorted the positions and the first round publishes the count: the mark
  // follows that round. Before the first sweep, where the matrix takes the test on arrival, that
  // test publishes its counts itself and the mark follows it; elsewhere global_sweep_start sorts
  // the positions and publishes, and the mark follows it.
  int queue_sweep_start(int sweep) {
    G_.active_count = sweep_counts_ + sweep;
    G_.previous_count = sweep > 0 ? sweep_counts_ + sweep - 1 : nullptr;
    if (G_.noise != nullptr) {
      G_.rotating_columns = rotating_counts(sweep);
      G_.previous_rotating = sweep > 0 ? rotating_counts(sweep - 1) : nullptr;
    }
    if (plan_.schedule == GlobalSchedule::launch_per_sweep &&
        launch_sweep_cooperatively(G_, cooperative_blocks_, stream_)) {
      counted_.record(stream_);
      return -1;
    }
    if (G_.noise != nullptr && sweep == 0) {
      unsigned* const arrival_count = sweep_counts_ + G_.P.max_sweeps;
      G_.active_count = arrival_count;
      G_.rotating_columns = rotating_counts(G_.P.max_sweeps);
      launch_all_pairs_test(G_, plan_.gram_plan, true, stream_);
      G_.active_count = sweep_counts_;
      G_.rotating_columns = rotating_counts(0);
      // The test publishes its counts itself: the mark follows it, and the first rounds follow the
      // mark to cover the host's wait (a matrix whose columns arrive orthogonal finds them
      // stopped). At d6ea7ba, which queued none behind the test, a rank-1 matrix planned as sm_75
      // took 251 against 6ab31f9's 225 us at 100 x 100 and 410 against 363 us at 256 x 256 (H200,
      // one run each), a 512 x 512 identity 83-86 against 87-93 us.
      G_.previous_count = nullptr;
      G_.previous_rotating = nullptr;
      counted_.record(stream_);
      const int ahead = std::min(1 + rounds_ahead, plan_.rounds(G_));
      queue_rounds(0, ahead);
      return ahead;
    }
    int queued = 0;
    if (plan_.gram && sweep > 0)
      queue_rounds(0, ++queued);
    else
      launch_sweep_start(G_, sort_chunks_, stream_);
    counted_.record(stream_);
    // The counts are published: the rounds behind need not write the host's memory again.
    G_.previous_count = nullptr;
    G_.previous_rotating = nullptr;
    const int ahead = std::min(queued + rounds_ahead, plan_.rounds(G_));
    queue_rounds(queued, ahead);
    return ahead;
  }

  // The sweep's other rounds and its end; in the Gram schedule the end comes with the all-pairs
  // test of the matrices whose sweep met only small off-diagonals (it returns at once for the
  // others). Where `one_round`, round 0 and those queued ahead, then round 0's pairing once more:
  // the columns that may still rotate, which round 0 took in one pair, have moved with the rounds
  // to a pair of that pairing's, whose full inner sweep rotates them again. One Gram rotation
  // leaves a pair off by about eps times its condition: without the second, a rank-2 512 x 512
  // matrix took a sweep more than it did in sweeps of every round (4 against 3).
  void queue_sweep_rest(int queued, bool one_round) {
    if (queued < 0) return;
    if (one_round) {
      queue_rounds(queued, std::max(queued, 1));
      queue_rounds(0, 1);
    } else {
      queue_rounds(queued, plan_.rounds(G_));
    }
    if (plan_.gram)
      launch_all_pairs_test(G_, plan_.gram_plan, false, stream_);
    else
      launch_sweep_end(G_, stream_);
  }

  // Sweep s's two counts of columns that may still rotate (s = max_sweeps: the test on arrival's).
  unsigned* rotating_counts(int sweep) const {
    return sweep_counts_ + (G_.P.max_sweeps + 1) + 2 * sweep;
  }

  GlobalState<T>& G_;
  const GlobalPlan<T>& plan_;
  unsigned* sweep_counts_;
  int cooperative_blocks_;
  cudaStream_t stream_;
  StreamMark counted_;
  int sort_chunks_ = 0;
};

// The test on arrival ahead of a cluster larger than the portable size, for a single matrix: the
// all-pairs test where the initial norms pass found each column orthogonal to the next, and the
// host waits for its count (into `arrival_count`, zeroed). A zero matrix or an identity stops there,
// converged in one sweep, where the cluster would run a whole sweep of rounds to find it out (256 x
// 256 on an H100: zero 120 against 90-92 us and the identity 136-147 against 80-82 us through the
// fused rounds' test; docs/results/h100-svd-larger-cluster.txt, run 1). Returns whether the matrix
// stopped.
template <class T>
bool arrives_orthogonal(GlobalState<T>& G, const GramPlan<T>& plan, unsigned* arrival_count,
                        cudaStream_t stream) {
  G.active_count = arrival_count;
  launch_all_pairs_test(G, plan, true, stream);
  thread_local PinnedBuffer<unsigned> count(1, cudaHostAllocPortable);
  ROOFLAB_CUDA("svd", "copying the count after the test on arrival",
               cudaMemcpyAsync(count.data(), arrival_count, sizeof(unsigned),
                               cudaMemcpyDeviceToHost, stream));
  ROOFLAB_CUDA("svd", "waiting for the test on arrival", cudaStreamSynchronize(stream));
  return *count.data() == 0;
}

}  // namespace

template <class T>
void run_global(const Problem<T>& problem, GlobalSchedule schedule, const Report& report,
                cudaStream_t stream) {
  constexpr const char* op = "svd";
  if (problem.batch == 0) return;
  GlobalState<T> G;
  G.P = problem;
  G.report = report;
  G.M = std::max(problem.m, problem.n);
  G.N = std::min(problem.m, problem.n);
  G.ldw = shared_leading_dimension(G.M);
  G.ldv = problem.uv ? shared_leading_dimension(G.N) : 0;
  const std::int64_t batch = problem.batch;
  GlobalPlan<T> plan = plan_global(G, schedule);
  const bool in_one_cluster = plan.gram_plan.cluster.pairs > 0;

  const ScratchSizes size = scratch_sizes(G);
  StreamBuffer scratch(size.total(gram_scratch_bytes(plan.gram_plan)), stream, op);
  unsigned* const sweep_counts = carve_scratch(G, plan.gram_plan, size, scratch);
  // The tests on arrival (GlobalState::noise) for a single matrix on the host-driven Gram sweeps,
  // and ahead of a cluster larger than the portable size (arrives_orthogonal below).
  const bool tested_on_arrival =
      plan.gram && batch == 1 && (!in_one_cluster || !plan.gram_plan.cluster.portable());
  if (!tested_on_arrival) G.noise = nullptr;
  // The portable cluster tests on arrival the matrices whose neighbouring columns arrive orthogonal
  // (global_max_abs looks at A's columns, which are W's where m >= n).
  if (!in_one_cluster || !plan.gram_plan.cluster.portable() || problem.m < problem.n)
    G.neighbours_apart = nullptr;
  // What the kernels add to or raise (the matrices' largest entries and cosines, each sweep's count
  // of matrices still sweeping, the host-driven Gram sweeps' counts of pairs above tol for the
  // hand-over, of sweeps at the Gram products' rounding floor and the early hand-over's spread)
  // starts at 0, and so do the column positions, which the round kernels read together with a
  // matrix's flag while a stopped matrix's are left unwritten (one that stops before its first
  // sweep, as a matrix with NaN or Inf does, never gets any), and the Gram scratch's cleared
  // pieces (gram_cleared_bytes): one clear where there were up to seven.
  ROOFLAB_CUDA(op, "clearing the sweeps' counts, flags and positions",
               cudaMemsetAsync(G.pos, 0, cleared_bytes(G, plan.gram_plan), stream));
  if (plan.gram && !in_one_cluster) {
    G.pairs_across = pairs_across_blocks(G.N, G.block);
  } else {
    G.above_tol = nullptr;
    G.floor_sweeps = nullptr;
    G.unfolding_binades = nullptr;
  }
  const int sort_chunks = (G.positions + sort_columns - 1) / sort_columns;
  require(batch * sort_chunks < (std::int64_t(1) << 31), op, "batch", "too many matrices");
  load_scaled(G, stream);
  // The cluster's sweeps neither sort nor track norms: they take the norms only for the test on
  // arrival.
  if (!in_one_cluster || tested_on_arrival) launch_column_norms(G, false, stream);

  // The persistent blocked kernel: the whole iteration in one cooperative launch where its blocks
  // can all be resident (else per-round launches).
  int persistent_blocks = 0;
  if (schedule == GlobalSchedule::blocked_persistent)
    persistent_blocks = persistent_blocked_blocks(G, plan.blocked_plan);
  if (persistent_blocks > 0 &&
      !launch_blocked_persistent(G, plan.blocked_plan, persistent_blocks, sweep_counts, stream))
    persistent_blocks = 0;
  const int cooperative_blocks =
      schedule == GlobalSchedule::launch_per_sweep ? cooperative_sweep_blocks(G) : 0;

  if (in_one_cluster && tested_on_arrival &&
      arrives_orthogonal(G, plan.gram_plan, sweep_counts + G.P.max_sweeps, stream)) {
    write_results(G, false, stream);
    return;
  }
  SweepQueue<T> sweeps(G, plan, sweep_counts, cooperative_blocks, stream);
  if (in_one_cluster)
    launch_cluster_sweeps(G, plan.gram_plan.cluster, stream);
  else if (persistent_blocks == 0)
    sweeps.run();
  write_results(G, in_one_cluster, stream);  // the cluster's sweeps leave sigma and U themselves
}

template void run_global<float>(const Problem<float>&, GlobalSchedule, const Report&, cudaStream_t);
template void run_global<double>(const Problem<double>&, GlobalSchedule, const Report&,
                                 cudaStream_t);

}  // namespace rooflab::jacobi
