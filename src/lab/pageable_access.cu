// The pageable-access ladder (the Jacobi SVD paper): one kernel reads host words in place and
// writes them to device memory; the rungs differ in the kind of host memory it is handed.
#include <cstdint>

#include "core/device_query.hpp"
#include "lab/pageable_access.hpp"
#include "lab/transfer.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t page_bytes = 4096;

// Every load reaches across the host link (or faults the page over, rung 2 under HMM): 16-byte
// loads, so that each request carries as much as it can, where the host pointer allows them
// (`vectors` of them, the remaining words one at a time).
__global__ void read_host_words(const std::uint32_t* __restrict__ host,
                                std::uint32_t* __restrict__ out, std::int64_t words,
                                std::int64_t vectors) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t start = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t v = start; v < vectors; v += stride)
    reinterpret_cast<uint4*>(out)[v] = reinterpret_cast<const uint4*>(host)[v];
  for (std::int64_t i = vectors * 4 + start; i < words; i += stride) out[i] = host[i];
}

void launch_read(TransferWorkspace& w, const std::uint32_t* host, cudaStream_t stream) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(host) % sizeof(uint4) == 0;
  read_host_words<<<current_sm_count() * 8, 256, 0, stream>>>(host, w.device_destination.data(),
                                                              w.words, aligned ? w.words / 4 : 0);
  detail::check_launch("bench pageable-access", "read_host_words");
  w.written = TransferWorkspace::Destination::device;
}

// Rung 1 — pinned memory read by the kernel (zero-copy).
// cudaHostAlloc memory is mapped into the GPU's address space (with unified addressing its host
// pointer is valid in kernels): every load crosses the link as a small read, with no copy engine
// and no staging. It works on every supported GPU.
ROOFLAB_VARIANT(Variant{"pageable-access", 1, "pinned-kernel-read",
                        "a kernel reads cudaHostAlloc memory in place: zero-copy over the link",
                        Where::gpu, false, no_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          launch_read(w, w.pinned_source.data(), stream);
                        })});

// Rung 2 — malloc memory read by the kernel, where the system allows it.
// With cudaDevAttrPageableMemoryAccess = 1 the GPU resolves the process's own addresses: through
// the host's page tables (ATS: the loads cross a coherent link) or by migrating the pages it
// touches (HMM: page faults, as managed memory's first touch). Elsewhere the rung is skipped.
ROOFLAB_VARIANT(Variant{
    "pageable-access", 2, "pageable-kernel-read",
    "a kernel reads malloc memory in place (HMM or ATS systems only)", Where::gpu, false,
    [](const Problem&) { return pageable_access_limit(); },
    on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
      launch_read(w, w.pageable_source.data(), stream);
    }),
    // Where pages migrate on touch, a run leaves them on the device: the host writes one word of
    // every page back (the same value) so that each run starts with the pages on the host.
    on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t) {
      volatile std::uint32_t* words = w.pageable_source.data();
      for (std::int64_t i = 0; i < w.words; i += page_bytes / 4) words[i] = words[i];
    }),
    [](Workspace&) { return describe_pageable_access(pageable_access()); }});

}  // namespace
}  // namespace rooflab::bench
