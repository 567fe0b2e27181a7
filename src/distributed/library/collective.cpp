#include "distributed/library/collective.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/pinned_buffer.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::dist::detail {
namespace {

// Page-locked room for `count` records, one per host thread (a rank's calls come from one thread
// at a time, and exchange() waits for its copies before it returns). Copies to and from it are
// queued and return at once; a copy of pageable memory may first wait for the stream's earlier
// work (the local part), and the all-gather would be queued only then.
ShardRecord* record_staging(std::size_t count) {
  thread_local PinnedBuffer<ShardRecord> staging;
  if (staging.size() < count) staging = PinnedBuffer<ShardRecord>(count, cudaHostAllocPortable);
  return staging.data();
}

}  // namespace

std::string Rank::name() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(ranks);
}

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_unknown";
  }
}

void check_nccl(ncclResult_t result, const Rank& rank, const char* call) {
  // A nonblocking communicator answers ncclInProgress: wait until the call has been issued.
  while (result == ncclInProgress && rank.comm != nullptr) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(rank.comm, &state) != ncclSuccess) break;
    result = state;
  }
  if (result == ncclSuccess) return;
  std::string problem = rank.name() + ": " + call + " failed: " + ncclGetErrorString(result);
  if (rank.comm != nullptr) {
    const char* last = ncclGetLastError(rank.comm);
    if (last != nullptr && *last != '\0') problem += std::string(" (") + last + ")";
  }
  throw Error(rank.op, "", problem, nccl_result_name(result));
}

void check_cuda(cudaError_t status, const Rank& rank, const std::string& doing) {
  if (status != cudaSuccess)
    ::rooflab::detail::throw_cuda_error(status, rank.op, rank.name() + ": " + doing);
}

Rank rank_of(ncclComm_t comm, const char* op) {
  Rank rank;
  rank.op = op;
  if (comm == nullptr) throw Error(op, "comm", "is null");
  check_nccl(ncclCommUserRank(comm, &rank.rank), rank, "ncclCommUserRank");
  rank.comm = comm;
  check_nccl(ncclCommCount(comm, &rank.ranks), rank, "ncclCommCount");
  check_nccl(ncclCommCuDevice(comm, &rank.device), rank, "ncclCommCuDevice");
  return rank;
}

DeviceScope::DeviceScope(const Rank& rank) {
  check_cuda(cudaGetDevice(&previous_), rank, "reading the current device");
  if (previous_ == rank.device) return;
  check_cuda(cudaSetDevice(rank.device), rank,
             "making the comm's GPU " + std::to_string(rank.device) + " current");
}

DeviceScope::~DeviceScope() {
  int current = -1;
  if (previous_ >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous_)
    cudaSetDevice(previous_);
}

void complain(ShardRecord& record, const char* argument, const std::string& problem, int bad) {
  if (record.bad != 0) return;
  record.bad = bad;
  std::strncpy(record.argument, argument, sizeof(record.argument) - 1);
  std::strncpy(record.problem, problem.c_str(), sizeof(record.problem) - 1);
}

void require_device_pointer(ShardRecord& record, const Rank& rank, const void* pointer,
                            std::size_t alignment, const char* argument) {
  if (pointer == nullptr) return complain(record, argument, "is null");
  if (reinterpret_cast<std::uintptr_t>(pointer) % alignment != 0)
    return complain(record, argument, "is not aligned to its element size");
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return;              // cannot tell; the local call will say
  }
  if (attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost)
    return complain(record, argument,
                    "is host memory, not memory of GPU " + std::to_string(rank.device));
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != rank.device)
    return complain(record, argument,
                    "is on GPU " + std::to_string(attributes.device) + ", the comm's GPU is " +
                        std::to_string(rank.device));
}

RecordExchange::RecordExchange(const Rank& rank, cudaStream_t stream)
    : rank_(rank), stream_(stream) {
  const std::size_t bytes = sizeof(ShardRecord) * std::size_t(rank.ranks);
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&slots_), bytes, stream), rank,
             "allocating the argument records");
  check_cuda(cudaMemsetAsync(slots_, 0, bytes, stream), rank, "zeroing the argument records");
}

RecordExchange::~RecordExchange() {
  if (slots_ != nullptr) cudaFreeAsync(slots_, stream_);
}

unsigned char* RecordExchange::own_value() const {
  return slots_ + sizeof(ShardRecord) * std::size_t(rank_.rank) + offsetof(ShardRecord, value);
}

std::vector<ShardRecord> RecordExchange::exchange(const ShardRecord& own) {
  const std::size_t ranks = std::size_t(rank_.ranks);
  ShardRecord* const staging = record_staging(ranks + 1);  // the slots, then own
  staging[ranks] = own;
  unsigned char* slot = slots_ + sizeof(ShardRecord) * std::size_t(rank_.rank);
  check_cuda(cudaMemcpyAsync(slot, staging + ranks, offsetof(ShardRecord, value),
                             cudaMemcpyHostToDevice, stream_),
             rank_, "copying the argument record");
  check_nccl(ncclAllGather(slot, slots_, sizeof(ShardRecord), ncclUint8, rank_.comm, stream_),
             rank_, "ncclAllGather of the argument records");
  check_cuda(cudaMemcpyAsync(staging, slots_, sizeof(ShardRecord) * ranks, cudaMemcpyDeviceToHost,
                             stream_),
             rank_, "reading the argument records");
  check_cuda(cudaStreamSynchronize(stream_), rank_, "waiting for the argument records");
  std::vector<ShardRecord> records(staging, staging + ranks);
  int bad_ranks = 0;
  int first = -1;
  for (int r = 0; r < rank_.ranks; ++r)
    if (records[std::size_t(r)].bad != 0 && bad_ranks++ == 0) first = r;
  if (bad_ranks > 0) {
    const ShardRecord& record = records[std::size_t(first)];
    std::string problem =
        "rank " + std::to_string(first) + " of " + std::to_string(rank_.ranks) +
        (record.bad == 2 ? ": its local part failed: " : ": ") +
        std::string(record.problem, strnlen(record.problem, sizeof(record.problem)));
    if (bad_ranks > 1) problem += " (and " + std::to_string(bad_ranks - 1) + " more ranks)";
    if (first != rank_.rank) problem += " [seen by rank " + std::to_string(rank_.rank) + "]";
    throw Error(rank_.op,
                std::string(record.argument, strnlen(record.argument, sizeof(record.argument))),
                problem);
  }
  return records;
}

void require_same_everywhere(const Rank& rank, const std::vector<ShardRecord>& records,
                             const char* argument,
                             bool (*same)(const ShardRecord&, const ShardRecord&),
                             std::string (*show)(const ShardRecord&)) {
  for (std::size_t r = 1; r < records.size(); ++r)
    if (!same(records[0], records[r]))
      throw Error(rank.op, argument,
                  "must be the same on every rank: rank 0 passes " + show(records[0]) + ", rank " +
                      std::to_string(r) + " passes " + show(records[r]));
}

}  // namespace rooflab::dist::detail
