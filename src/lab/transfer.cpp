// The transfer op: problem, workspace and the CPU rung. GPU rungs are in transfer.cu.
#include "lab/transfer.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "bench/random.hpp"
#include "cpu/compare.hpp"
#include "cpu/parallel.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t mib = std::int64_t(1) << 20;
constexpr std::uint32_t poison = 0xFFFFFFFFu;  // never drawn: sources hold [0, 2^32 - 2]

std::uint32_t source_word(std::uint64_t seed, std::int64_t i) {
  return std::uint32_t(random_integer(seed, std::uint64_t(i), 0, poison - 1));
}

std::string size_text(std::int64_t bytes) {
  if (bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  return std::to_string(bytes) + " bytes";
}

int current_device() {
  int device = 0;
  ROOFLAB_CUDA("bench transfer", "finding the current device", cudaGetDevice(&device));
  return device;
}

// The managed buffer's word count, once it is known to fit: allocated after the device buffers,
// its pages must still fit on the device beside everything else. Never oversubscribe, or the
// prefetch rungs would measure eviction instead of the host link.
std::size_t managed_words_that_fit(std::int64_t bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  ROOFLAB_CUDA("bench transfer", "asking how much device memory is free",
               cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t headroom = std::size_t(256) << 20;  // L2 flush buffer, streams, ...
  require(std::size_t(bytes) + headroom <= free_bytes, "bench transfer", "--n",
          size_text(bytes) + " of managed memory would not fit in the device's " +
              std::to_string(free_bytes >> 20) + " MiB of free memory");
  return std::size_t(bytes / 4);
}

}  // namespace

bool device_migrates_managed_memory() {
  int device = 0, migrates = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&migrates, cudaDevAttrConcurrentManagedAccess, device) !=
          cudaSuccess) {
    cudaGetLastError();  // a failed query is an answer here, not an error to carry on
    return false;
  }
  return migrates != 0;
}

TransferWorkspace::TransferWorkspace(std::int64_t bytes)
    : bytes(bytes),
      words(bytes / 4),
      device_ordinal(current_device()),
      device_source(std::size_t(words)),
      device_destination(std::size_t(words)),
      pageable_source(std::size_t(words)),
      pageable_destination(std::size_t(words)),
      pinned_source(std::size_t(words)),
      pinned_destination(std::size_t(words)),
      managed(managed_words_that_fit(bytes)) {}

void TransferWorkspace::managed_to_host(cudaStream_t stream) {
  if (!device_migrates_managed_memory()) return;  // then the host owns the pages whenever idle
  cudaMemLocation host{};
  host.type = cudaMemLocationTypeHost;
  ROOFLAB_CUDA("bench transfer", "prefetching the managed buffer to the host",
               cudaMemPrefetchAsync(managed.data(), managed.bytes(), host, 0, stream));
}

void TransferWorkspace::managed_to_device(cudaStream_t stream) {
  cudaMemLocation device{};
  device.type = cudaMemLocationTypeDevice;
  device.id = device_ordinal;
  ROOFLAB_CUDA("bench transfer", "prefetching the managed buffer to the device",
               cudaMemPrefetchAsync(managed.data(), managed.bytes(), device, 0, stream));
}

void TransferWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  fill_random_integers(device_source.data(), words, seed, 0, poison - 1, nullptr);
  device_destination.fill_bytes(0xFF);
  // The host writes the managed words below: bring the pages home in bulk first rather than
  // fault them back one by one.
  managed_to_host(nullptr);
  ROOFLAB_CUDA("bench transfer", "waiting for the prefetch to the host", cudaDeviceSynchronize());
  std::uint32_t* managed_words = managed.data();
  std::uint32_t* pinned_words = pinned_source.data();
  std::uint32_t* pinned_out = pinned_destination.data();
  cpu::parallel_ranges(words, [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::uint32_t word = source_word(seed, i);
      pageable_source[i] = word;
      pinned_words[i] = word;
      managed_words[i] = word;
      pageable_destination[i] = poison;
      pinned_out[i] = poison;
    }
  });
}

Check TransferWorkspace::check(Where where) {
  std::vector<std::uint32_t> downloaded;
  const std::uint32_t* result = pageable_destination.data();
  if (where == Where::gpu) {
    switch (written) {
      case Destination::device:
        downloaded = device_destination.download();
        result = downloaded.data();
        break;
      case Destination::pageable: result = pageable_destination.data(); break;
      case Destination::pinned: result = pinned_destination.data(); break;
    }
  }
  const auto comparison =
      cpu::compare_exact(result, words, [&](std::int64_t i) { return source_word(seed_, i); });
  std::string detail = comparison.describe();
  if (comparison.max_error > 0)
    detail += " (" + std::to_string(std::int64_t(comparison.max_error)) + " words wrong)";
  return Check{comparison.within(0), comparison.max_error, 0, detail};
}

Problem resolve_transfer_bytes(Problem problem, const std::string& op, std::int64_t default_bytes) {
  const std::string where = "bench " + op;
  if (problem.n == 0) problem.n = default_bytes;
  require(problem.n >= 4 && problem.n % 4 == 0, where.c_str(), "--n",
          "counts bytes and must be a positive multiple of 4");
  require(problem.n <= std::int64_t(4096) * mib, where.c_str(), "--n",
          "must be at most 4 GiB (the workspace holds seven buffers of that size)");
  problem.dtype = "bytes";
  return problem;
}

namespace {

ROOFLAB_OP(Op{
    "transfer",
    "host <-> device copies of --n bytes from pageable and pinned memory (the limiting-factors "
    "lecture) and managed memory (the Jacobi SVD paper)",
    [](Problem problem) { return resolve_transfer_bytes(problem, "transfer", 256 * mib); },
    [](const Problem& problem) { return size_text(problem.n) + " each way"; },
    [](const Problem& problem) {
      return Model{double(problem.n), 0, Ceiling::host_transfer_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<TransferWorkspace>(problem.n);
    },
    [](bool quick) {
      std::vector<Problem> problems;
      for (const std::int64_t size :
           quick ? std::vector<std::int64_t>{mib, 64 * mib}
                 : std::vector<std::int64_t>{mib, 16 * mib, 256 * mib, 1024 * mib}) {
        Problem problem;
        problem.n = size;
        problems.push_back(problem);
      }
      return problems;
    },
    {"--n"},
});

// Rung 0 — memcpy between two malloc buffers: what host memory itself sustains, for scale.
ROOFLAB_VARIANT(Variant{
    "transfer", 0, "host-memcpy", "one CPU core copying host memory (for scale)", Where::cpu, false,
    no_limit, on<TransferWorkspace>([](TransferWorkspace& w, cudaStream_t) {
      std::memcpy(w.pageable_destination.data(), w.pageable_source.data(), std::size_t(w.bytes));
    })});

}  // namespace
}  // namespace rooflab::bench
