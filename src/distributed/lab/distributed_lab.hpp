#pragma once
// The lab's multi-GPU side, for the rooflab program (no NCCL types here: main.cpp includes this
// only where the program was built with rooflab::distributed, ROOFLAB_HAVE_DISTRIBUTED).
//
// `rooflab bench OP --gpus N` runs here rather than through the registry: a registry variant is one
// run on one stream of one device (Variant::run(Workspace&, cudaStream_t)), timed and L2-flushed by
// the runner on that device, while a sharded call needs a communicator, a stream and a host thread
// per GPU and a time that is the slowest rank's.
#include <cstdint>
#include <iosfwd>
#include <string>

namespace rooflab::dist::lab {

struct ShardedBenchOptions {
  std::string op;               // reduce, histogram, scan, latency, interconnect or all
  int gpus = 0;                 // ranks, GPUs 0..gpus-1 of this process
  std::int64_t n_per_rank = 0;  // 0: 2^30 (the size)
  int reps = 10;
  int warmup = 2;
  std::string format = "table";  // table or json
  std::string out;               // also write JSON here
};

// The ops `--gpus` accepts, for messages.
const char* sharded_bench_ops();
// Runs and prints; returns the number of rows that failed validation. Throws rooflab::Error on bad
// options (fewer GPUs than asked, an unknown op).
int sharded_bench(std::ostream& out, const ShardedBenchOptions& options);

// The CUDA devices this process sees (0 without a driver).
int visible_gpus();
// The interconnect ladder over `gpus` GPUs as a table (rooflab info, when gpus > 1).
void interconnect_table(std::ostream& out, int gpus);

}  // namespace rooflab::dist::lab
