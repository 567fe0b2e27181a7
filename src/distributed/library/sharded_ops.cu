// The sharded primitives: the local part on the single-GPU library, one all-gather of a record per
// rank (arguments, and the local partial where there is one), then the combination in rank order,
// the same on every rank (include/rooflab/distributed.hpp).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "distributed/library/collective.hpp"
#include "distributed/shard_math.hpp"
#include "rooflab/distributed.hpp"
#include "rooflab/error.hpp"
#include "rooflab/histogram.hpp"
#include "rooflab/reduce.hpp"
#include "rooflab/scan.hpp"

namespace rooflab::dist::detail {
namespace {

// Runs the local part; a failure there becomes the rank's complaint, so that the rank still
// joins the record exchange and every rank throws, instead of the others waiting for it.
template <class Fn>
void local_part(ShardRecord& own, Fn fn) {
  if (own.bad != 0) return;
  try {
    fn();
  } catch (const std::exception& error) {
    complain(own, "", error.what(), 2);
  }
}

template <class T>
T value_at(const ShardRecord& record) {
  T value;
  std::memcpy(&value, record.value, sizeof(T));
  return value;
}

template <class T>
__global__ void store_total(T* out, T total) {
  *out = total;
}

std::string show_int(std::int64_t value) { return std::to_string(value); }
std::string show_double(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace

template <class T, class Op>
void reduce_shards(ncclComm_t comm, const T* in, std::int64_t n, T* out, Op op,
                   cudaStream_t stream) {
  const Rank rank = rank_of(comm, "dist::reduce");
  DeviceScope scope(rank);
  RecordExchange exchange(rank, stream);
  ShardRecord own;
  own.size = n;
  require_arg(own, n >= 0, "n", "must not be negative (got " + std::to_string(n) + ")");
  if (n > 0) require_device_pointer(own, rank, in, sizeof(T), "in");
  require_device_pointer(own, rank, out, sizeof(T), "out");
  // The partial goes straight into this rank's record.
  if (n > 0)
    local_part(own, [&] {
      rooflab::reduce(in, n, reinterpret_cast<T*>(exchange.own_value()), op, stream);
    });
  const std::vector<ShardRecord> records = exchange.exchange(own);

  std::vector<T> partials(records.size());
  std::vector<bool> counted(records.size());
  for (std::size_t r = 0; r < records.size(); ++r) {
    counted[r] = records[r].size > 0;
    partials[r] = value_at<T>(records[r]);
  }
  bool found = false;
  const T total = fold_in_rank_order(partials, counted, op, found);
  if (!found)
    throw Error(rank.op, "n", "every rank's shard is empty: the reduction needs an element");
  // As a kernel's argument: queued at once, where a copy from pageable memory may first wait for
  // the stream.
  store_total<<<1, 1, 0, stream>>>(out, total);
  check_cuda(cudaGetLastError(), rank, "launching store_total");
}

template <class T, class Op>
void reduce_rows_shards(ncclComm_t comm, const T* in, std::int64_t rows, std::int64_t cols, T* out,
                        Op op, cudaStream_t stream) {
  const Rank rank = rank_of(comm, "dist::reduce_rows");
  DeviceScope scope(rank);
  RecordExchange exchange(rank, stream);
  ShardRecord own;
  own.size = rows;
  own.cols = cols;
  require_arg(own, rows >= 0, "rows", "must not be negative (got " + std::to_string(rows) + ")");
  require_arg(own, cols >= 1, "cols", "must be at least 1 (got " + std::to_string(cols) + ")");
  if (rows > 0) require_device_pointer(own, rank, in, sizeof(T), "in");
  require_device_pointer(own, rank, out, sizeof(T), "out");
  const std::vector<ShardRecord> records = exchange.exchange(own);
  require_same_everywhere(
      rank, records, "cols",
      [](const ShardRecord& a, const ShardRecord& b) { return a.cols == b.cols; },
      [](const ShardRecord& r) { return show_int(r.cols); });
  std::vector<std::int64_t> sizes;
  for (const ShardRecord& record : records) sizes.push_back(record.size);
  const std::vector<std::int64_t> offsets = shard_offsets(sizes);
  if (offsets.back() == 0)
    throw Error(rank.op, "rows", "every rank holds 0 rows: nothing to reduce");

  if (rows > 0)
    rooflab::reduce_rows(in, rows, cols, out + offsets[std::size_t(rank.rank)], op, stream);
  // An all-gather of unequal parts: each rank broadcasts its rows' results in place.
  check_nccl(ncclGroupStart(), rank, "ncclGroupStart");
  for (int q = 0; q < rank.ranks; ++q) {
    if (sizes[std::size_t(q)] == 0) continue;
    T* part = out + offsets[std::size_t(q)];
    check_nccl(ncclBroadcast(part, part, std::size_t(sizes[std::size_t(q)]) * sizeof(T), ncclUint8,
                             q, comm, stream),
               rank, "ncclBroadcast of the row results");
  }
  check_nccl(ncclGroupEnd(), rank, "ncclGroupEnd (row results)");
}

template <class T>
void scan_shards(ncclComm_t comm, const T* in, T* out, std::int64_t n, bool inclusive,
                 cudaStream_t stream) {
  const Rank rank = rank_of(comm, inclusive ? "dist::inclusive_scan" : "dist::exclusive_scan");
  DeviceScope scope(rank);
  RecordExchange exchange(rank, stream);
  ShardRecord own;
  own.size = n;
  require_arg(own, n >= 0, "n", "must not be negative (got " + std::to_string(n) + ")");
  if (n > 0) {
    require_device_pointer(own, rank, in, sizeof(T), "in");
    require_device_pointer(own, rank, out, sizeof(T), "out");
    const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
    const std::uintptr_t bytes = std::uintptr_t(n) * sizeof(T);
    require_arg(own, a == b || a + bytes <= b || b + bytes <= a, "out",
                "overlaps in without being equal to it");
  }
  // The record's value: the shard's total, by the single-GPU reduce (read n). Once the totals are
  // gathered, the scan continues from the earlier shards' (read n, write n): 3n bytes in all.
  if (n > 0)
    local_part(own, [&] {
      rooflab::reduce(in, n, reinterpret_cast<T*>(exchange.own_value()), Sum{}, stream);
    });
  const std::vector<ShardRecord> records = exchange.exchange(own);

  // offset_r: the totals of the non-empty shards before this rank, folded in rank order.
  std::vector<T> totals;
  std::vector<bool> counted;
  for (int q = 0; q < rank.rank; ++q) {
    totals.push_back(value_at<T>(records[std::size_t(q)]));
    counted.push_back(records[std::size_t(q)].size > 0);
  }
  bool found = false;
  const T offset = fold_in_rank_order(totals, counted, Sum{}, found);
  if (n == 0) return;
  if (found && inclusive)
    rooflab::detail::inclusive_scan_elements_after(in, out, n, offset, stream);
  else if (found)
    rooflab::detail::exclusive_scan_elements_after(in, out, n, offset, stream);
  else if (inclusive)
    rooflab::inclusive_scan(in, out, n, stream);
  else
    rooflab::exclusive_scan(in, out, n, stream);
}

template <class T>
void histogram_even_shards(ncclComm_t comm, const T* in, std::int64_t n, int bins, double lo,
                           double hi, std::uint64_t* counts, cudaStream_t stream) {
  const Rank rank = rank_of(comm, "dist::histogram_even");
  DeviceScope scope(rank);
  RecordExchange exchange(rank, stream);
  ShardRecord own;
  own.size = n;
  own.bins = bins;
  own.lo = lo;
  own.hi = hi;
  require_arg(own, n >= 0, "n", "must not be negative (got " + std::to_string(n) + ")");
  require_arg(own, bins >= 1 && bins <= (1 << 24), "bins",
              "must be in [1, 2^24] (got " + std::to_string(bins) + ")");
  require_arg(own, std::isfinite(lo) && std::isfinite(hi) && lo < hi, "hi",
              "lo and hi must be finite with lo < hi (got " + show_double(lo) + ", " +
                  show_double(hi) + ")");
  if (own.bad == 0)
    require_arg(own, std::isfinite((hi - lo) * bins) && std::isfinite(bins / (hi - lo)), "hi",
                "(hi - lo) * bins and bins / (hi - lo) must be finite");
  if (n > 0) require_device_pointer(own, rank, in, sizeof(T), "in");
  require_device_pointer(own, rank, counts, sizeof(std::uint64_t), "counts");
  local_part(own, [&] { rooflab::histogram_even(in, n, bins, lo, hi, counts, stream); });
  const std::vector<ShardRecord> records = exchange.exchange(own);
  require_same_everywhere(
      rank, records, "bins",
      [](const ShardRecord& a, const ShardRecord& b) { return a.bins == b.bins; },
      [](const ShardRecord& r) { return show_int(r.bins); });
  require_same_everywhere(
      rank, records, "lo", [](const ShardRecord& a, const ShardRecord& b) { return a.lo == b.lo; },
      [](const ShardRecord& r) { return show_double(r.lo); });
  require_same_everywhere(
      rank, records, "hi", [](const ShardRecord& a, const ShardRecord& b) { return a.hi == b.hi; },
      [](const ShardRecord& r) { return show_double(r.hi); });
  // Integer counts: any order of the sums gives the same bits.
  check_nccl(ncclAllReduce(counts, counts, std::size_t(bins), ncclUint64, ncclSum, comm, stream),
             rank, "ncclAllReduce of the counts");
}

#define ROOFLAB_DIST_REDUCE(T, Op)                                                              \
  template void reduce_shards<T, Op>(ncclComm_t, const T*, std::int64_t, T*, Op, cudaStream_t); \
  template void reduce_rows_shards<T, Op>(ncclComm_t, const T*, std::int64_t, std::int64_t, T*, \
                                          Op, cudaStream_t);
#define ROOFLAB_DIST_NUMERIC(T) \
  ROOFLAB_DIST_REDUCE(T, Sum)   \
  ROOFLAB_DIST_REDUCE(T, Min)   \
  ROOFLAB_DIST_REDUCE(T, Max)   \
  template void scan_shards<T>(ncclComm_t, const T*, T*, std::int64_t, bool, cudaStream_t);
ROOFLAB_DIST_NUMERIC(float)
ROOFLAB_DIST_NUMERIC(double)
ROOFLAB_DIST_NUMERIC(std::int32_t)
ROOFLAB_DIST_NUMERIC(std::int64_t)
ROOFLAB_DIST_NUMERIC(std::uint32_t)
#define ROOFLAB_DIST_HISTOGRAM(T)                                                                 \
  template void histogram_even_shards<T>(ncclComm_t, const T*, std::int64_t, int, double, double, \
                                         std::uint64_t*, cudaStream_t);
ROOFLAB_DIST_HISTOGRAM(std::uint8_t)
ROOFLAB_DIST_HISTOGRAM(std::int32_t)
ROOFLAB_DIST_HISTOGRAM(float)
ROOFLAB_DIST_HISTOGRAM(double)

}  // namespace rooflab::dist::detail
