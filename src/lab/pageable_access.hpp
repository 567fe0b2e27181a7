#pragma once
// Kernels reading host memory in place (the Jacobi SVD paper: since CUDA 8 and compute capability
// 6.0, memory from malloc or new is usable on the GPU). Pinned memory is mapped for every kernel;
// pageable memory only where the system lets the GPU use the process's page tables (HMM on Linux,
// or ATS on hardware-coherent hosts), which cudaDevAttrPageableMemoryAccess reports. The op moves
// --n bytes from each kind into device memory with a kernel, no copy call.
#include <string>

namespace rooflab::bench {

struct PageableAccess {
  bool queried = false;            // false: the attributes could not be read (no device)
  int pageable_memory_access = 0;  // cudaDevAttrPageableMemoryAccess
  int uses_host_page_tables = 0;   // cudaDevAttrPageableMemoryAccessUsesHostPageTables
};

// The current device's attributes; zeros (queried = false) when they cannot be read.
PageableAccess pageable_access();

// "cudaDevAttrPageableMemoryAccess = 1, ...UsesHostPageTables = 0"
std::string describe_pageable_access(const PageableAccess& access);

// Empty when a kernel may read pageable host memory on the current device; otherwise why not.
std::string pageable_access_limit();

}  // namespace rooflab::bench
