#pragma once
// What every sharded call shares: who this rank is, NCCL errors that name the rank, and the
// collective argument check (each rank's arguments and local result, all-gathered as one record
// per rank, so that every rank sees every rank's verdict before any collective that depends on it).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rooflab::dist::detail {

struct Rank {
  const char* op = "";  // "dist::reduce"
  ncclComm_t comm = nullptr;
  int rank = 0;
  int ranks = 1;
  int device = 0;
  std::string name() const;  // "rank 2 of 4"
};

// The comm's rank, size and device; throws (locally: nothing collective has happened yet) if the
// comm is null or NCCL cannot answer.
Rank rank_of(ncclComm_t comm, const char* op);

// "ncclUnhandledCudaError", ... (NCCL names no result by itself, only describes it).
const char* nccl_result_name(ncclResult_t result);
// Throws rooflab::Error(op, "", "<rank>: <call> failed: <description>: <last error>", "<name>")
// unless `result` is ncclSuccess; waits out ncclInProgress on a nonblocking comm first.
void check_nccl(ncclResult_t result, const Rank& rank, const char* call);
// ROOFLAB_CUDA with the rank named.
void check_cuda(cudaError_t status, const Rank& rank, const std::string& doing);

// Makes the comm's GPU current for a scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(const Rank& rank);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// One rank's arguments and local result, as all-gathered (fixed size, plain bytes). The first
// bad argument's name and what is wrong travel as text, so every rank can say it.
struct ShardRecord {
  std::int32_t bad = 0;  // 0: good; 1: a bad argument; 2: the local part failed
  std::int32_t bins = 0;
  std::int64_t size = 0;  // n, or rows
  std::int64_t cols = 0;
  double lo = 0, hi = 0;
  char argument[24] = {};
  char problem[112] = {};
  alignas(16) unsigned char value[16] = {};  // written on the device: a partial, a last element
};
static_assert(sizeof(ShardRecord) == 192, "records are all-gathered as plain bytes");

// Fills the record's complaint, the first one only.
void complain(ShardRecord& record, const char* argument, const std::string& problem, int bad = 1);
inline void require_arg(ShardRecord& record, bool condition, const char* argument,
                        const std::string& problem) {
  if (!condition) complain(record, argument, problem);
}
// Null / misalignment / memory not on the comm's GPU (host memory, another device's).
void require_device_pointer(ShardRecord& record, const Rank& rank, const void* pointer,
                            std::size_t alignment, const char* argument);

// The records of every rank, on the device of this rank (stream-ordered scratch).
class RecordExchange {
 public:
  RecordExchange(const Rank& rank, cudaStream_t stream);
  ~RecordExchange();
  RecordExchange(const RecordExchange&) = delete;
  RecordExchange& operator=(const RecordExchange&) = delete;

  // Where this rank's local result goes before exchange() (16 device bytes).
  unsigned char* own_value() const;
  // Copies `own` (but not its value, already on the device) into this rank's slot, all-gathers the
  // slots (ncclAllGather, in place), waits for them, and returns them. Throws on every rank,
  // naming the first bad rank, if any record is bad.
  std::vector<ShardRecord> exchange(const ShardRecord& own);

 private:
  Rank rank_;
  cudaStream_t stream_;
  unsigned char* slots_ = nullptr;
};

// Throws on every rank if the records disagree on a value that must be the same everywhere.
void require_same_everywhere(const Rank& rank, const std::vector<ShardRecord>& records,
                             const char* argument,
                             bool (*same)(const ShardRecord&, const ShardRecord&),
                             std::string (*show)(const ShardRecord&));

}  // namespace rooflab::dist::detail
