// The pageable-access op: the device's attributes and the problem. The workspace is the transfer
// lab's (the same sources, the device destination checked word by word); the rungs are in
// pageable_access.cu.
#include "lab/pageable_access.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <string>

#include "lab/transfer.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

PageableAccess pageable_access() {
  PageableAccess access;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&access.pageable_memory_access, cudaDevAttrPageableMemoryAccess,
                             device) != cudaSuccess ||
      cudaDeviceGetAttribute(&access.uses_host_page_tables,
                             cudaDevAttrPageableMemoryAccessUsesHostPageTables,
                             device) != cudaSuccess) {
    cudaGetLastError();  // a failed query is an answer here, not an error to carry on
    return PageableAccess{};
  }
  access.queried = true;
  return access;
}

std::string describe_pageable_access(const PageableAccess& access) {
  if (!access.queried) return "the device's attributes could not be read";
  return fmt::format("cudaDevAttrPageableMemoryAccess = {}, ...UsesHostPageTables = {}",
                     access.pageable_memory_access, access.uses_host_page_tables);
}

std::string pageable_access_limit() {
  const PageableAccess access = pageable_access();
  if (access.pageable_memory_access == 1) return {};
  return "a kernel cannot read pageable host memory on this system (" +
         describe_pageable_access(access) + "; it needs HMM or ATS)";
}

namespace {

constexpr std::int64_t mib = std::int64_t(1) << 20;

ROOFLAB_OP(Op{
    "pageable-access",
    "a kernel reads --n bytes of host memory in place: pinned (mapped) and malloc memory (the "
    "Jacobi SVD paper)",
    [](Problem problem) { return resolve_transfer_bytes(problem, "pageable-access", 64 * mib); },
    [](const Problem& problem) {
      return std::to_string(problem.n) + " bytes read by a kernel from host memory";
    },
    [](const Problem& problem) {
      return Model{double(problem.n), 0, Ceiling::host_transfer_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<TransferWorkspace>(problem.n);
    },
    [](bool quick) {
      Problem problem;
      problem.n = (quick ? 16 : 64) * mib;
      return std::vector<Problem>{problem};
    },
    {"--n"},
});

// Rung 0 — memcpy between two malloc buffers: what host memory itself sustains, for scale.
ROOFLAB_VARIANT(Variant{
    "pageable-access", 0, "host-memcpy", "one CPU core copying host memory (for scale)", Where::cpu,
    false, no_limit, on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t) {
      std::memcpy(w.pageable_destination.data(), w.pageable_source.data(), std::size_t(w.bytes));
    })});

}  // namespace
}  // namespace rooflab::bench
