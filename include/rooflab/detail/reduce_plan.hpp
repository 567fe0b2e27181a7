#pragma once
// How rooflab::reduce and rooflab::reduce_rows cut their work: plain host arithmetic, separate from
// the kernels so that it can be read, and tested, without a GPU. Every choice depends only on the
// sizes, the alignment and the device, which is what makes the results reproducible: the same call
// on the same GPU always builds the same summation tree.
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace rooflab::detail {

// Threads of every block the reductions launch: 8 warps, so that 8 blocks fill a 2048-thread SM.
constexpr int reduce_block_threads = 256;
// 16-byte loads each thread of the one-dimensional reduce issues before it adds any of them:
// 4 x 16 B x 2048 threads = 128 KiB in flight per SM, several times the ~25 KiB that hide HBM's
// latency at full bandwidth on an H100 or H200.
constexpr int reduce_loads_in_flight = 4;
// Loads each lane of the small-rows path issues before it combines any: 8 rows' units (16-byte
// vectors where the rows allow) per lane, 32 KiB in flight per block of 256 threads.
constexpr int small_rows_in_flight = 8;
// Resident blocks per SM that the launch bounds of these two kernels promise ptxas. Without a
// minimum, ptxas (CUDA 13, sm_90) kept them at 32-34 registers by issuing each load only after
// the adds of the one before had used its registers (read in the SASS): one 16-byte load in
// flight per thread instead of four in the 1-D reduce (for double and int64 even with its
// batches folded as a tree, reduce.cuh), three instead of eight on the small-rows path. With the
// minimum the batches go out back to back: 8 blocks of up to 32 registers for the 1-D reduce,
// 4 blocks of up to 64 for the small rows (8 x 16 B per lane; 1M rows of 32 floats took 35.3 us
// with 4, 35.7 with 5 and 38.1 without a minimum on an H200). Two instantiations spill a few
// bytes: the int64 sum, 8 bytes at 32 registers (it still streams as fast as floats: 100% of
// their bandwidth at 2^28), and rows of a single int64 summed, 12 bytes at 64.
constexpr int reduce_min_blocks_per_sm = 8;
constexpr int small_rows_min_blocks_per_sm = 4;
// The same for the blocks-per-row kernel, whose loop issued two loads before adding without a
// minimum (48 to 64 registers). At 8 blocks it issues four but spills its 64-bit indices around
// the last, partial batch to local memory, once per part; at 4 blocks (up to 64 registers) it
// issues four without spilling (sm_90 SASS): against no minimum, from 0.3% slower (1024 rows of
// 256K floats) to 7% faster (3 rows of 300007) on an H100, 1.5-1.8% faster on half of the eight
// shapes of docs/results/h100-reduce-rows-long.json.
constexpr int rows_by_blocks_min_blocks_per_sm = 4;
// 16-byte loads each lane of a warp-per-row issues before it adds any: 8 x 16 B per lane.
constexpr int warp_row_loads_in_flight = 8;
// Rows of at most this many 16-byte vectors go to one warp each (when there are enough of them):
// 4096 vectors = 64 KiB, 128 loads per lane; beyond, a block per row (or part of a row) keeps
// more loads in flight for each row.
constexpr std::int64_t warp_row_max_vectors = 4096;
// A part of a split row gives each thread at least this many 16-byte vectors to load, so that
// the ticket and the partial it costs stay small next to the reading.
constexpr std::int64_t split_min_vectors_per_thread = 8;
// Parts of a split row are whole multiples of 8 16-byte vectors, so that every part starts on a
// 128-byte line of the row's body: cut anywhere, each warp load of a part straddled five lines
// instead of four (8 rows of 32M floats in 132 parts of 63551 vectors: 381 us, against 359 us
// with the parts rounded up to 63552, on an H100; docs/results/h100-reduce-rows-long.json).
constexpr std::int64_t split_part_vector_multiple = 8;

// Vectors in each part of a row body of `vectors` cut in `splits` parts (the last may be shorter,
// or empty).
constexpr std::int64_t split_part_vectors(std::int64_t vectors, std::int64_t splits) {
  const std::int64_t even = (vectors + splits - 1) / splits;
  return (even + split_part_vector_multiple - 1) / split_part_vector_multiple *
         split_part_vector_multiple;
}

// Elements of T in one 16-byte load; 1 where T does not tile 16 bytes.
template <class T>
constexpr int vector_width() {
  return sizeof(T) <= 8 && 16 % sizeof(T) == 0 ? int(16 / sizeof(T)) : 1;
}

// Blocks of the one-pass reduce over n elements of `width` per vector: enough for each thread to
// have `reduce_loads_in_flight` vectors, at most one wave of resident blocks (the grid-stride loop
// covers the rest), at least one.
inline int reduce_blocks(std::int64_t n, int width, int resident_blocks) {
  const std::int64_t per_block =
      std::int64_t(width) * reduce_block_threads * reduce_loads_in_flight;
  const std::int64_t wanted = n / per_block + (n % per_block != 0);
  return int(std::clamp<std::int64_t>(wanted, 1, std::max(1, resident_blocks)));
}

// Rows one warp of the small-rows path covers per pass: small_rows_in_flight loads, each of
// 32 / lanes_per_row rows.
constexpr std::int64_t small_rows_per_pass(int lanes_per_row) {
  return std::int64_t(small_rows_in_flight) * (32 / lanes_per_row);
}

// Totals each lane holds after the small-rows path's reduce-scatter (reduce.cuh), which halves
// a lane's small_rows_in_flight values once per lane bit inside the group, three times at most.
constexpr int small_rows_kept(int lanes_per_row) {
  return lanes_per_row <= small_rows_in_flight ? small_rows_in_flight / lanes_per_row : 1;
}

// The row, counted from the first of the pass, that the lanes of `group` load at `step` on the
// small-rows path. Chosen so that the reduce-scatter leaves lane l with the totals of rows l,
// 32 + l, 64 + l, ... (up to 8 lanes per row), or the lanes of group g with rows 8g to 8g + 7,
// each total on lanes_per_row / 8 neighbouring lanes (16 or 32 lanes per row): see
// small_row_stored.
constexpr int small_row_of(int lanes_per_row, int group, int step) {
  if (lanes_per_row <= small_rows_in_flight) {
    const int kept = small_rows_kept(lanes_per_row);
    return 32 * (step % kept) + lanes_per_row * group + step / kept;
  }
  return small_rows_in_flight * group + step;
}

// The row, counted from the first of the pass, whose total `lane` stores from its kept value i;
// -1 where another lane stores that total. 32 lanes store 32 consecutive rows at once.
constexpr int small_row_stored(int lanes_per_row, int lane, int kept) {
  if (lanes_per_row <= small_rows_in_flight) return 32 * kept + lane;
  const int sharing = lanes_per_row / small_rows_in_flight;
  const int member = lane % lanes_per_row;
  if (member % sharing != 0) return -1;
  return small_rows_in_flight * (lane / lanes_per_row) + member / sharing;
}

// Blocks of the small-rows path: a warp per pass of rows, at most one wave of resident blocks
// (the warps stride over the passes beyond), at least one. (Capping the grid at 64 KiB of loads
// in flight per SM, 2 blocks instead of a wave's 8 then, made 1M x 32 floats 37% slower on an
// H200: 58.0 against 42.4 us.)
inline int small_rows_blocks(std::int64_t rows, int lanes_per_row, int resident_blocks) {
  const std::int64_t per_block = small_rows_per_pass(lanes_per_row) * (reduce_block_threads / 32);
  const std::int64_t wanted = rows / per_block + (rows % per_block != 0);
  return int(std::clamp<std::int64_t>(wanted, 1, std::max(1, resident_blocks)));
}

enum class RowsPath {
  lanes_per_row,   // small rows: a group of lanes of a warp per row, several rows per warp
  warp_per_row,    // medium rows, many of them
  blocks_per_row,  // long rows, or few rows: a block per row, or per part of a row
};

struct RowsPlan {
  RowsPath path = RowsPath::blocks_per_row;
  int lanes_per_row = 0;  // lanes_per_row: a power of two, at most 32
  bool vector_units =
      false;                // lanes_per_row: each lane loads one 16-byte vector (else one element)
  std::int64_t splits = 1;  // blocks_per_row: parts per row; above 1, the last part to finish
                            // a row combines the parts' partials (one ticket per row)
};

inline int next_power_of_two(std::int64_t value) {
  int power = 1;
  while (power < value) power *= 2;
  return power;
}

// rows_vector_aligned: every row starts on a 16-byte boundary (the matrix does, and a row is a
// whole number of 16-byte vectors).
inline RowsPlan plan_reduce_rows(std::int64_t rows, std::int64_t cols, int width,
                                 bool rows_vector_aligned, int sm_count, int resident_blocks) {
  RowsPlan plan;
  const bool vector_units = width > 1 && rows_vector_aligned;
  const std::int64_t units = vector_units ? cols / width : cols;
  if (units <= 32) {
    plan.path = RowsPath::lanes_per_row;
    plan.vector_units = vector_units;
    plan.lanes_per_row = next_power_of_two(units);
    return plan;
  }
  const std::int64_t vectors = cols / width + (cols % width != 0);
  if (vectors <= warp_row_max_vectors && rows >= 16 * std::int64_t(sm_count)) {
    plan.path = RowsPath::warp_per_row;
    return plan;
  }
  plan.path = RowsPath::blocks_per_row;
  // Fewer rows than resident blocks: each row split so that the parts fill one wave, every block
  // reading one part and all finishing together, as the 1-D reduce's grid does. More rows: split
  // until the grid holds about 8 waves, so that a short last wave idles the GPU for an eighth of
  // the time at most. Never into parts too small to stream.
  const std::int64_t resident = std::max(1, resident_blocks);
  const std::int64_t wanted = rows < resident ? resident / rows : (8 * resident + rows - 1) / rows;
  const std::int64_t most =
      std::max<std::int64_t>(1, vectors / (reduce_block_threads * split_min_vectors_per_thread));
  plan.splits = std::clamp<std::int64_t>(wanted, 1, most);
  return plan;
}

}  // namespace rooflab::detail
