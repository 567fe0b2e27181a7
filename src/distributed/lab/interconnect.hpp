#pragma once
// The interconnect ladder: the link between GPUs as the next ceiling after the GPU's memory, each
// rung reported in nccl-tests' conventions (algorithm and bus bandwidth).
#include <cstddef>
#include <string>
#include <vector>

namespace rooflab::dist::lab {

struct LinkRow {
  int rung = 0;
  std::string name;
  std::string idea;
  std::string convention;  // "copy" (busbw = algbw), "all-reduce" 2(n-1)/n, "all-gather" (n-1)/n
  int ranks = 2;
  double bytes = 0;    // nccl-tests' size: the copy, the all-reduce buffer, the gathered buffer
  double seconds = 0;  // median
  double algbw = 0;    // bytes / seconds
  double busbw = 0;
  std::string skipped;  // non-empty: why the rung did not run
  std::string check;    // non-empty: the result was wrong
};

// Measures every rung over GPUs 0..gpus-1 (copies between GPUs 0 and 1) with `bytes` a rank.
// Sets NCCL_NVLS_ENABLE=0 before NCCL starts.
std::vector<LinkRow> measure_interconnect(int gpus, std::size_t bytes, int reps);

}  // namespace rooflab::dist::lab
