// The transfer ladder (the limiting-factors lecture's pageable and pinned memory, the Jacobi SVD
// paper's managed memory): --n bytes across the host link, from each kind of host memory.
#include <algorithm>
#include <cstdint>

#include "core/device_info.hpp"
#include "lab/transfer.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t small_copy_bytes = 4096;  // one host page per copy

std::string managed_limit(const Problem&) {
  return device_migrates_managed_memory()
             ? std::string()
             : "this device cannot migrate managed pages on demand (concurrentManagedAccess = 0)";
}

// Reads managed words on the device and writes them to device memory: the reads are what pulls
// the pages across (by fault, or not at all when they were prefetched). 16-byte accesses, the
// last words % 4 words one at a time; the grid is sized to the GPU.
__global__ void copy_words(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out,
                           std::int64_t words) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t start = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t vectors = words / 4;
  const auto* in4 = reinterpret_cast<const uint4*>(in);
  auto* out4 = reinterpret_cast<uint4*>(out);
  for (std::int64_t v = start; v < vectors; v += stride) out4[v] = in4[v];
  for (std::int64_t i = vectors * 4 + start; i < words; i += stride) out[i] = in[i];
}

void launch_copy_from_managed(TransferWorkspace& w, cudaStream_t stream) {
  copy_words<<<current_sm_count() * 8, 256, 0, stream>>>(w.managed.data(),
                                                         w.device_destination.data(), w.words);
  detail::check_launch("bench transfer", "copy_words");
  w.written = TransferWorkspace::Destination::device;
}

void host_to_device(TransferWorkspace& w, const std::uint32_t* source, cudaStream_t stream) {
  ROOFLAB_CUDA("bench transfer",
               "copying " + detail::describe_bytes(std::size_t(w.bytes)) + " to the device",
               cudaMemcpyAsync(w.device_destination.data(), source, std::size_t(w.bytes),
                               cudaMemcpyHostToDevice, stream));
  w.written = TransferWorkspace::Destination::device;
}

// Rung 1 — pageable host-to-device (a plain malloc buffer, the lecture's default).
// The DMA engines can only read page-locked memory, so the driver first copies each piece into a
// pinned staging buffer with the CPU: two copies, the first at host memcpy speed.
ROOFLAB_VARIANT(Variant{"transfer", 1, "pageable-h2d",
                        "malloc memory: the driver stages it through a pinned buffer", Where::gpu,
                        false, no_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          host_to_device(w, w.pageable_source.data(), stream);
                        })});

// Rung 2 — pinned host-to-device (cudaHostAlloc, the lecture's cure).
// Page-locked memory is read by the copy engine directly: one DMA at the host link's rate.
ROOFLAB_VARIANT(Variant{"transfer", 2, "pinned-h2d",
                        "cudaHostAlloc memory: one DMA straight from the host pages", Where::gpu,
                        false, no_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          host_to_device(w, w.pinned_source.data(), stream);
                        })});

// Rung 3 — the same pinned bytes as many 4 KiB copies.
// Each copy pays a fixed cost (a call, a queue entry, a DMA descriptor: microseconds) that a 4 KiB
// payload cannot amortize: the link idles between copies. Batch transfers; copy big buffers.
ROOFLAB_VARIANT(Variant{
    "transfer", 3, "pinned-h2d-4k-copies",
    "one cudaMemcpyAsync per 4 KiB: per-copy overhead dominates", Where::gpu, false,
    at_most_n(std::int64_t(256) << 20,
              "one copy per 4 KiB page: 65536 copies are plenty to show it"),
    on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
      const auto* source = reinterpret_cast<const unsigned char*>(w.pinned_source.data());
      auto* destination = reinterpret_cast<unsigned char*>(w.device_destination.data());
      for (std::int64_t offset = 0; offset < w.bytes; offset += small_copy_bytes) {
        const auto bytes = std::size_t(std::min(small_copy_bytes, w.bytes - offset));
        ROOFLAB_CUDA("bench transfer",
                     "copying " + detail::describe_bytes(bytes) + " from the host to the device",
                     cudaMemcpyAsync(destination + offset, source + offset, bytes,
                                     cudaMemcpyHostToDevice, stream));
      }
      w.written = TransferWorkspace::Destination::device;
    })});

// Rung 4 — pageable device-to-host.
// Staged again, in the other direction, and the call returns only when the bytes have landed in
// the malloc buffer (the lecture: cudaMemcpy to the host is synchronous).
ROOFLAB_VARIANT(Variant{
    "transfer", 4, "pageable-d2h", "into malloc memory: DMA to a staging buffer, then a CPU copy",
    Where::gpu, false, no_limit,
    on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
      ROOFLAB_CUDA(
          "bench transfer",
          "copying " + detail::describe_bytes(std::size_t(w.bytes)) + " to pageable host memory",
          cudaMemcpyAsync(w.pageable_destination.data(), w.device_source.data(),
                          std::size_t(w.bytes), cudaMemcpyDeviceToHost, stream));
      w.written = TransferWorkspace::Destination::pageable;
    })});

// Rung 5 — pinned device-to-host: one DMA into page-locked memory.
ROOFLAB_VARIANT(Variant{
    "transfer", 5, "pinned-d2h", "into cudaHostAlloc memory: one DMA straight to the host pages",
    Where::gpu, false, no_limit,
    on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
      ROOFLAB_CUDA(
          "bench transfer",
          "copying " + detail::describe_bytes(std::size_t(w.bytes)) + " to pinned host memory",
          cudaMemcpyAsync(w.pinned_destination.data(), w.device_source.data(), std::size_t(w.bytes),
                          cudaMemcpyDeviceToHost, stream));
      w.written = TransferWorkspace::Destination::pinned;
    })});

const auto pages_on_host = on<TransferWorkspace>(
    [](TransferWorkspace& w, cudaStream_t stream) { w.managed_to_host(stream); });

// Rung 6 — managed memory, first touched by a kernel, without a prefetch.
// Every page starts on the host: the kernel's loads fault, the SM stalls while the driver
// migrates the pages in small groups, and the kernel resumes — fault handling, not the link, sets
// the pace. (prepare puts the pages back on the host before each run, outside the timing.)
ROOFLAB_VARIANT(Variant{"transfer", 6, "managed-first-touch",
                        "cudaMallocManaged pages pulled over by the kernel's page faults",
                        Where::gpu, false, managed_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          launch_copy_from_managed(w, stream);
                        }),
                        pages_on_host});

// Rung 7 — managed memory, cudaMemPrefetchAsync to the device, then the same kernel.
// The driver moves the whole range in large chunks before the kernel starts: no faults, close to
// the pinned copy's rate, and the kernel then reads device memory.
ROOFLAB_VARIANT(Variant{"transfer", 7, "managed-prefetch",
                        "cudaMemPrefetchAsync first: bulk migration, then no faults", Where::gpu,
                        false, managed_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          w.managed_to_device(stream);
                          launch_copy_from_managed(w, stream);
                        }),
                        pages_on_host});

// Rung 8 — managed memory already resident on the device: the kernel alone.
// Nothing crosses the link: once migrated, managed memory is device memory (HBM speed), which is
// why the rate here exceeds the host-link ceiling.
ROOFLAB_VARIANT(Variant{"transfer", 8, "managed-resident",
                        "pages already on the device: no transfer at all (for scale)", Where::gpu,
                        false, managed_limit,
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          launch_copy_from_managed(w, stream);
                        }),
                        on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t stream) {
                          w.managed_to_device(stream);
                        })});

}  // namespace
}  // namespace rooflab::bench
