// Uses the installed rooflab::distributed from plain C++: the header compiles and the sharded
// entry points link against the installed library and NCCL. Run without arguments it checks only
// that; a communicator needs several processes or GPUs, which the multi-GPU tests set up.
#include <rooflab/distributed.hpp>

#include <cstdint>
#include <cstdio>

int main(int argc, char**) {
  if (argc > 1) {  // never taken by the test: keeps the calls, so the link must resolve them
    ncclComm_t comm = nullptr;
    float* data = nullptr;
    std::uint64_t* counts = nullptr;
    rooflab::dist::reduce(comm, data, 1, data, rooflab::Sum{}, nullptr);
    rooflab::dist::inclusive_scan(comm, data, data, 1, nullptr);
    rooflab::dist::histogram_even(comm, data, 1, 16, 0.0, 1.0, counts, nullptr);
  }
  std::puts("distributed consumer: rooflab::distributed links");
  return 0;
}
