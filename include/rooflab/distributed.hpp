#pragma once
// Sharded primitives over NCCL (librooflab_distributed, CMake target rooflab::distributed; built
// only where NCCL is found). Each call takes the caller's communicator and this rank's shard on
// this rank's GPU, so one process per GPU, several GPUs per process (one thread per GPU) and
// several nodes all work; nothing here assumes one process or one host.
//
// - Collective: every rank of `comm` makes the same call (same function, element type and, where
//   said, the same bins, lo, hi or cols) in the same order, as with any NCCL collective.
// - The local part runs on the single-GPU library (rooflab::reduce, histogram_even, scans,
//   reduce_rows) on the comm's GPU; the call sets that device for its duration and restores the
//   caller's.
// - Reproducible: floating-point results are bitwise identical from run to run and on every rank.
//   Per-rank partials are all-gathered and combined in rank order, the same way on every rank,
//   never through an all-reduce, whose order NCCL does not specify (counts, integers, may be).
// - Arguments are checked collectively before any collective that depends on them: every rank
//   all-gathers a small record of its arguments (and its local result), then every rank throws
//   rooflab::Error naming the first bad rank ("rank 2 of 4: ...") if any rank's arguments were
//   bad, so a bad argument on one rank does not leave the others waiting. Each call therefore
//   synchronizes `stream` once (after that gather); the work after it is asynchronous. The
//   records travel through page-locked host memory, 192 bytes a rank, allocated by the first call
//   on a host thread and kept until the thread exits.
// - NCCL failures are rooflab::Error naming the rank, the NCCL call and the result
//   ("... ncclAllGather failed: unhandled cuda error (ncclUnhandledCudaError)"). A failure after
//   the check (a CUDA fault on one rank) can still leave the other ranks waiting: abort the
//   communicator (ncclCommAbort) as for any NCCL error.
// - The communicator must be a blocking one (the default); NCCL_NVLS_ENABLE=0 is what the tests
//   and benchmarks of rooflab run with (docs/distributed.md).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "rooflab/detail/element_type.hpp"
#include "rooflab/operators.hpp"

namespace rooflab::dist {
namespace detail {
using rooflab::detail::element_type_t;
using rooflab::detail::is_one_of_v;
// Compiled for float, double, int32_t, int64_t, uint32_t with Sum, Min, Max (reduce, reduce_rows,
// scans) and uint8_t, int32_t, float, double (histogram): src/distributed/library/.
template <class T, class Op>
void reduce_shards(ncclComm_t comm, const T* in, std::int64_t n, T* out, Op op,
                   cudaStream_t stream);
template <class T, class Op>
void reduce_rows_shards(ncclComm_t comm, const T* in, std::int64_t rows, std::int64_t cols, T* out,
                        Op op, cudaStream_t stream);
template <class T>
void scan_shards(ncclComm_t comm, const T* in, T* out, std::int64_t n, bool inclusive,
                 cudaStream_t stream);
template <class T>
void histogram_even_shards(ncclComm_t comm, const T* in, std::int64_t n, int bins, double lo,
                           double hi, std::uint64_t* counts, cudaStream_t stream);
template <class T>
inline constexpr bool reducible_v =
    is_one_of_v<T, float, double, std::int32_t, std::int64_t, std::uint32_t>;
}  // namespace detail

// *out on every rank = op over the concatenation of all ranks' in[0, n). Shards may differ in
// length and may be empty (n = 0, `in` then unused); at least one rank must hold an element. The
// total is op(...op(op(p_a, p_b), p_c)...) over the partials p_r = rooflab::reduce of each
// non-empty shard, in increasing rank order.
template <class T, class Op = Sum>
void reduce(ncclComm_t comm, const T* in, std::int64_t n, T* out, Op op = {},
            cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(
      detail::reducible_v<Element> && rooflab::detail::is_one_of_v<Op, Sum, Min, Max>,
      "rooflab::dist::reduce takes float, double, int32, int64, uint32 with Sum, Min, Max");
  detail::reduce_shards(comm, reinterpret_cast<const Element*>(in), n,
                        reinterpret_cast<Element*>(out), op, stream);
}

// Rows split across ranks: this rank holds `rows` rows (rows >= 0) of `cols` columns (the same
// cols on every rank, >= 1), row-major. `out` on every rank receives one value per row of the
// whole matrix, sum over ranks of rows, in rank order: rank r's rows start at the sum of the rows
// of ranks 0..r-1. Each value is rooflab::reduce_rows of its row, so no cross-rank arithmetic.
template <class T, class Op = Sum>
void reduce_rows(ncclComm_t comm, const T* in, std::int64_t rows, std::int64_t cols, T* out,
                 Op op = {}, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(
      detail::reducible_v<Element> && rooflab::detail::is_one_of_v<Op, Sum, Min, Max>,
      "rooflab::dist::reduce_rows takes float, double, int32, int64, uint32 with Sum, Min, Max");
  detail::reduce_rows_shards(comm, reinterpret_cast<const Element*>(in), rows, cols,
                             reinterpret_cast<Element*>(out), op, stream);
}

// Prefix sums over the concatenation of the shards in rank order: out (this rank's n elements)
// = offset_r + the local scan, where offset_r = ((t_a + t_b) + t_c) + ... over the totals t_q of
// the non-empty shards of ranks q < r (each the single-GPU rooflab::reduce of shard q), in
// increasing rank order (no offset on the first non-empty rank). Each rank reads its shard twice
// and writes it once: the reduce, then the scan continued from offset_r. n >= 0; in == out is
// allowed.
template <class T>
void inclusive_scan(ncclComm_t comm, const T* in, T* out, std::int64_t n,
                    cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(detail::reducible_v<Element>,
                "rooflab::dist::inclusive_scan takes float, double, int32, int64, uint32");
  detail::scan_shards(comm, reinterpret_cast<const Element*>(in), reinterpret_cast<Element*>(out),
                      n, true, stream);
}
template <class T>
void exclusive_scan(ncclComm_t comm, const T* in, T* out, std::int64_t n,
                    cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(detail::reducible_v<Element>,
                "rooflab::dist::exclusive_scan takes float, double, int32, int64, uint32");
  detail::scan_shards(comm, reinterpret_cast<const Element*>(in), reinterpret_cast<Element*>(out),
                      n, false, stream);
}

// counts[b] on every rank = the number of values of all shards in bin b (rooflab::histogram_even's
// rule); bins, lo and hi the same on every rank. Integer counts: summed by ncclAllReduce.
template <class T>
void histogram_even(ncclComm_t comm, const T* in, std::int64_t n, int bins, double lo, double hi,
                    std::uint64_t* counts, cudaStream_t stream = nullptr) {
  using Element = detail::element_type_t<T>;
  static_assert(detail::is_one_of_v<Element, std::uint8_t, std::int32_t, float, double>,
                "rooflab::dist::histogram_even takes uint8, int32, float and double values");
  detail::histogram_even_shards(comm, reinterpret_cast<const Element*>(in), n, bins, lo, hi, counts,
                                stream);
}

}  // namespace rooflab::dist
