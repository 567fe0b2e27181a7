// The scan ladder through the registry, and the production inclusive / exclusive scan: every type,
// awkward sizes and alignments, in place, reproducibility, wraparound, and more than 2^31 elements.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/random.hpp"
#include "bench/registry.hpp"
#include "cpu/parallel.hpp"
#include "cpu/scan.hpp"
#include "gpu_test.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/reduce.hpp"
#include "rooflab/scan.hpp"
#include "scan/scan_workspace.hpp"

namespace rooflab {
namespace {

using cpu::ScanKind;

class ScanLadder : public testing::GpuTest {};
class InclusiveScan : public testing::GpuTest {};
class ExclusiveScan : public testing::GpuTest {};

// Sizes around every boundary of the ladder: warps (32), blocks (1024), tiles (4096, 8192 and
// 16384 elements), the production look-back groups (32 tiles), more than one look-back window of
// 32 tiles for every tile size, and the block rungs' third level.
const std::int64_t ladder_sizes[] = {1,
                                     31,
                                     32,
                                     33,
                                     1025,
                                     4095,
                                     4097,
                                     8191,
                                     8193,
                                     16383,
                                     16385,
                                     32 * 4096 + 1,
                                     32 * 8192 + 1,
                                     70 * 16384 + 5,
                                     (1 << 20) + 7};

TEST_F(ScanLadder, EveryRungMatchesTheReferenceAtAwkwardSizesTwiceInARow) {
  std::uint64_t seed = 6000;
  for (const char* dtype : {"float", "int32", "double", "int64", "uint32"}) {
    for (const std::int64_t n : ladder_sizes) {
      bench::Problem problem;
      problem.n = n;
      problem.dtype = dtype;
      const bench::Op& op = bench::registry().op("scan");
      problem = op.resolve(problem);
      auto workspace = op.make_workspace(problem);
      for (const bench::Variant* variant : bench::registry().variants("scan")) {
        if (variant->limit && !variant->limit(problem).empty()) continue;
        workspace->refill(seed++);
        // Twice: the harness times repeated runs on the same workspace, so a rung must reset its
        // own state (tile counters, flags) on every call.
        for (int run = 0; run < 2; ++run) {
          variant->run(*workspace, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
        }
        const bench::Check check = workspace->check(variant->where);
        EXPECT_TRUE(check.passed) << variant->name << " " << dtype << " n=" << n
                                  << " seed=" << seed - 1 << ": " << check.detail;
      }
    }
  }
}

// The rungs that promise the same bits on every run (production and its candidates), through the
// registry as the lab runs them: 4096 float tiles of 8192 elements, three look-back levels.
TEST_F(ScanLadder, DeterministicRungsGiveTheSameFloatBitsOnEveryRun) {
  bench::Problem problem;
  problem.n = (1 << 25) + 5;
  problem.dtype = "float";
  const bench::Op& op = bench::registry().op("scan");
  problem = op.resolve(problem);
  auto workspace = op.make_workspace(problem);
  auto& floats = dynamic_cast<bench::TypedScanWorkspace<float>&>(*workspace);
  const std::uint64_t seed = 6500;
  workspace->refill(seed);
  int checked = 0;
  for (const bench::Variant* variant : bench::registry().variants("scan")) {
    if (variant->name != "production" && variant->name != "production-16k") continue;
    ++checked;
    variant->run(*workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const std::vector<float> first = floats.out.download();
    for (int run = 1; run < 4; ++run) {
      floats.out.fill_bytes(0xFF);
      variant->run(*workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
      const std::vector<float> again = floats.out.download();
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0)
          << variant->name << " run " << run << ", seed " << seed;
    }
  }
  EXPECT_EQ(checked, 2) << "a deterministic rung was renamed or removed";
}

// Random inputs on the device: floating point on the 2^-23 / 2^-52 grid in [-1, 1); integers over
// a range whose sums wrap (int32 and uint32) so that wraparound is exercised too.
template <class T>
DeviceBuffer<T> random_input(std::int64_t n, std::uint64_t seed) {
  DeviceBuffer<T> buffer(std::size_t(n + 8));  // room for the offsets of the alignment tests
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    bench::fill_random(buffer.data(), n + 8, seed, nullptr);
  else if constexpr (std::is_signed_v<T>)
    bench::fill_random_integers(buffer.data(), n + 8, seed, -(std::int64_t(1) << 30),
                                std::int64_t(1) << 30, nullptr);
  else
    bench::fill_random_integers(buffer.data(), n + 8, seed, 0, (std::int64_t(1) << 31) - 1,
                                nullptr);
  return buffer;
}

template <class T>
std::vector<T> download_range(const T* device, std::int64_t n) {
  std::vector<T> host(n);
  if (n > 0)
    EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

template <class T>
void expect_scan_matches(ScanKind kind, std::int64_t n, std::int64_t in_offset,
                         std::int64_t out_offset, std::uint64_t seed) {
  DeviceBuffer<T> in = random_input<T>(n, seed);
  DeviceBuffer<T> out(std::size_t(n + 8));
  out.fill_bytes(0xFF);
  const T* in_start = in.data() + in_offset;
  T* out_start = out.data() + out_offset;
  if (kind == ScanKind::inclusive)
    inclusive_scan(in_start, out_start, n);
  else
    exclusive_scan(in_start, out_start, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> host_in = download_range(in_start, n);
  const std::vector<T> host_out = download_range(out_start, n);
  const auto check =
      cpu::check_scan(host_in.data(), host_out.data(), n, kind, cpu::production_scan_rounding);
  EXPECT_TRUE(check.passed) << "n=" << n << " in+" << in_offset << " out+" << out_offset
                            << " seed=" << seed << ": " << check.describe();
  // Nothing written outside [out_start, out_start + n).
  const std::vector<T> whole = out.download();
  const T poison = [] {
    T value;
    std::memset(&value, 0xFF, sizeof(T));
    return value;
  }();
  for (std::int64_t i = 0; i < std::int64_t(whole.size()); ++i) {
    if (i >= out_offset && i < out_offset + n) continue;
    EXPECT_EQ(std::memcmp(&whole[i], &poison, sizeof(T)), 0)
        << "wrote element " << i - out_offset << " of n=" << n;
  }
}

// Tile boundaries of 4-byte (8192) and 8-byte (4096) types, look-back groups of 32 tiles, and a
// third look-back level (more than 1024 tiles of either size).
const std::int64_t production_sizes[] = {1,
                                         2,
                                         31,
                                         32,
                                         33,
                                         1025,
                                         4095,
                                         4096,
                                         4097,
                                         8191,
                                         8192,
                                         8193,
                                         3 * 4096 + 1,
                                         32 * 8192 - 1,
                                         32 * 8192,
                                         32 * 8192 + 1,
                                         (1 << 20) + 7,
                                         (1 << 23) + (1 << 18) + 5};

template <class T>
void expect_every_size_matches(ScanKind kind, std::uint64_t seed) {
  for (const std::int64_t n : production_sizes) expect_scan_matches<T>(kind, n, 0, 0, seed++);
}

TEST_F(InclusiveScan, MatchesTheReferenceForEveryTypeAtAwkwardSizes) {
  expect_every_size_matches<float>(ScanKind::inclusive, 100);
  expect_every_size_matches<double>(ScanKind::inclusive, 200);
  expect_every_size_matches<std::int32_t>(ScanKind::inclusive, 300);
  expect_every_size_matches<std::int64_t>(ScanKind::inclusive, 400);
  expect_every_size_matches<std::uint32_t>(ScanKind::inclusive, 500);
}

TEST_F(ExclusiveScan, MatchesTheReferenceForEveryTypeAtAwkwardSizes) {
  expect_every_size_matches<float>(ScanKind::exclusive, 600);
  expect_every_size_matches<double>(ScanKind::exclusive, 700);
  expect_every_size_matches<std::int32_t>(ScanKind::exclusive, 800);
  expect_every_size_matches<std::int64_t>(ScanKind::exclusive, 900);
  expect_every_size_matches<std::uint32_t>(ScanKind::exclusive, 1000);
}

TEST_F(InclusiveScan, UnalignedPointersMatchTheReference) {
  std::uint64_t seed = 1100;
  for (const std::int64_t n : {std::int64_t(5), std::int64_t(8195), std::int64_t(32 * 8192 + 3)}) {
    // Same misalignment for in and out (vector stores), and different (element stores).
    for (const auto& [in_offset, out_offset] :
         {std::pair{1, 1}, std::pair{2, 2}, std::pair{3, 3}, std::pair{1, 0}, std::pair{0, 3},
          std::pair{2, 1}}) {
      expect_scan_matches<float>(ScanKind::inclusive, n, in_offset, out_offset, seed++);
      expect_scan_matches<std::int32_t>(ScanKind::exclusive, n, in_offset, out_offset, seed++);
    }
    for (const auto& [in_offset, out_offset] :
         {std::pair{1, 1}, std::pair{1, 0}, std::pair{0, 1}}) {
      expect_scan_matches<double>(ScanKind::inclusive, n, in_offset, out_offset, seed++);
      expect_scan_matches<std::int64_t>(ScanKind::exclusive, n, in_offset, out_offset, seed++);
    }
  }
}

template <class T>
std::vector<T> scan_on_device(ScanKind kind, const DeviceBuffer<T>& in, std::int64_t n,
                              bool in_place) {
  DeviceBuffer<T> out{std::size_t(n)};
  if (in_place)
    EXPECT_EQ(cudaMemcpy(out.data(), in.data(), n * sizeof(T), cudaMemcpyDeviceToDevice),
              cudaSuccess);
  const T* source = in_place ? out.data() : in.data();
  if (kind == ScanKind::inclusive)
    inclusive_scan(source, out.data(), n);
  else
    exclusive_scan(source, out.data(), n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return out.download();
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST_F(InclusiveScan, InPlaceGivesTheSameBitsAsOutOfPlace) {
  const std::int64_t n = (1 << 22) + 5;
  const std::uint64_t seed = 1200;
  const DeviceBuffer<float> in = random_input<float>(n, seed);
  EXPECT_TRUE(same_bits(scan_on_device(ScanKind::inclusive, in, n, false),
                        scan_on_device(ScanKind::inclusive, in, n, true)))
      << "seed " << seed;
}

TEST_F(ExclusiveScan, InPlaceGivesTheSameBitsAsOutOfPlace) {
  const std::int64_t n = (1 << 22) + 5;
  const std::uint64_t seed = 1300;
  const DeviceBuffer<double> in = random_input<double>(n, seed);
  EXPECT_TRUE(same_bits(scan_on_device(ScanKind::exclusive, in, n, false),
                        scan_on_device(ScanKind::exclusive, in, n, true)))
      << "seed " << seed;
}

// A scan continued from a carry (what the sharded scans of rooflab::dist call): carry + the plain
// scan at the same pointers (the tiles follow in's alignment, and float sums the tiles), bit for
// bit, for every type and both kinds, with a carry whose sums wrap for integers, at an unaligned
// output and in place there; nothing written outside the output.
template <class T>
void expect_continued_scan_is_carry_plus_scan(ScanKind kind, std::int64_t n, T carry,
                                              std::uint64_t seed) {
  const DeviceBuffer<T> in = random_input<T>(n, seed);
  for (const bool in_place : {false, true}) {
    // The output at out + 3, among poisoned elements; in place, the input is copied there first.
    const auto run = [&](std::optional<T> continued_from) {
      DeviceBuffer<T> out(std::size_t(n + 8));
      out.fill_bytes(0xFF);
      T* out_start = out.data() + 3;
      const T* source = in.data();
      if (in_place) {
        EXPECT_EQ(cudaMemcpy(out_start, in.data(), n * sizeof(T), cudaMemcpyDeviceToDevice),
                  cudaSuccess);
        source = out_start;
      }
      if (continued_from && kind == ScanKind::inclusive)
        detail::inclusive_scan_elements_after(source, out_start, n, *continued_from, nullptr);
      else if (continued_from)
        detail::exclusive_scan_elements_after(source, out_start, n, *continued_from, nullptr);
      else if (kind == ScanKind::inclusive)
        inclusive_scan(source, out_start, n);
      else
        exclusive_scan(source, out_start, n);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      return out.download();
    };
    std::vector<T> expected = run(std::nullopt);
    for (std::int64_t i = 3; i < 3 + n; ++i) {
      if constexpr (std::is_integral_v<T>)
        expected[i] = T(std::make_unsigned_t<T>(carry) + std::make_unsigned_t<T>(expected[i]));
      else
        expected[i] = carry + expected[i];
    }
    const std::vector<T> continued = run(carry);
    EXPECT_EQ(std::memcmp(continued.data(), expected.data(), expected.size() * sizeof(T)), 0)
        << "n=" << n << (in_place ? " in place" : "") << " seed=" << seed;
  }
}

template <class T>
void expect_continued_scans_match(T carry, std::uint64_t seed) {
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(8191), std::int64_t(8193),
                               std::int64_t(32 * 8192 + 1), std::int64_t((1 << 20) + 7)})
    for (const ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive})
      expect_continued_scan_is_carry_plus_scan<T>(kind, n, carry, seed++);
}

TEST_F(InclusiveScan, ContinuedFromACarryIsTheCarryPlusTheScanBitForBit) {
  expect_continued_scans_match<float>(1234.5f, 1500);
  expect_continued_scans_match<double>(-0.1, 1600);
  expect_continued_scans_match<std::int32_t>(std::numeric_limits<std::int32_t>::max() - 5, 1700);
  expect_continued_scans_match<std::int64_t>(std::int64_t(1) << 62, 1800);
  expect_continued_scans_match<std::uint32_t>(4000000000u, 1900);
}

// Thousands of tiles racing through the look-back: the float results must not depend on which
// tile finished first.
TEST_F(InclusiveScan, FloatResultsAreBitwiseIdenticalOverRepeatedRuns) {
  const std::int64_t n = (1 << 24) + 3;
  const std::uint64_t seed = 1400;
  const DeviceBuffer<float> in = random_input<float>(n, seed);
  const std::vector<float> first = scan_on_device(ScanKind::inclusive, in, n, false);
  for (int run = 1; run < 5; ++run)
    EXPECT_TRUE(same_bits(first, scan_on_device(ScanKind::inclusive, in, n, false)))
        << "run " << run << ", seed " << seed;
}

TEST_F(ExclusiveScan, DoubleResultsAreBitwiseIdenticalOverRepeatedRuns) {
  const std::int64_t n = (1 << 23) + 3;
  const std::uint64_t seed = 1500;
  const DeviceBuffer<double> in = random_input<double>(n, seed);
  const std::vector<double> first = scan_on_device(ScanKind::exclusive, in, n, false);
  for (int run = 1; run < 5; ++run)
    EXPECT_TRUE(same_bits(first, scan_on_device(ScanKind::exclusive, in, n, false)))
        << "run " << run << ", seed " << seed;
}

// One call of a sequence queued on a stream: its input, its output, and what it was.
template <class T>
struct QueuedScan {
  ScanKind kind;
  std::int64_t n;
  std::uint64_t seed;
  DeviceBuffer<T> in;
  DeviceBuffer<T> out;

  QueuedScan(ScanKind kind_, std::int64_t n_, std::uint64_t seed_)
      : kind(kind_), n(n_), seed(seed_), in(random_input<T>(n_, seed_)), out(std::size_t(n_)) {
    out.fill_bytes(0xFF);
    // The input and the poison are queued on the default stream, which the tests' non-blocking
    // streams do not wait for: set-up must be complete before a scan is queued.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void enqueue(cudaStream_t stream) {
    if (kind == ScanKind::inclusive)
      inclusive_scan(in.data(), out.data(), n, stream);
    else
      exclusive_scan(in.data(), out.data(), n, stream);
  }
  void expect_exact() const {
    const std::vector<T> host_in = download_range(in.data(), n);
    const std::vector<T> host_out = out.download();
    const auto check = cpu::check_scan(host_in.data(), host_out.data(), n, kind, {});
    EXPECT_TRUE(check.passed) << "n=" << n << " seed=" << seed << ": " << check.describe();
  }
};

// RAII for a non-blocking stream of the test's own.
class TestStream {
 public:
  TestStream() {
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  ~TestStream() { cudaStreamDestroy(stream_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// The look-back tree lives in per-stream scratch that every call zeroes before its kernel. Queued
// back to back with no synchronization: calls after a larger one (a stale entry would read as
// published), of the other entry width (8-byte types use two words an entry),
// with a reduction in between (it counts in the same scratch), each exact.
TEST_F(InclusiveScan, ScratchLeftByEarlierCallsOnTheStreamNeverLeaksIntoLaterOnes) {
  TestStream stream;
  QueuedScan<std::int32_t> large(ScanKind::inclusive, (1 << 23) + 5, 1700);   // 1025 tiles
  QueuedScan<std::int32_t> groups(ScanKind::exclusive, 32 * 8192 + 1, 1701);  // 33 tiles
  QueuedScan<std::int64_t> wide_large(ScanKind::inclusive, (1 << 21) + 3, 1702);
  QueuedScan<std::uint32_t> two_tiles(ScanKind::inclusive, 8193, 1703);
  DeviceBuffer<std::int32_t> reduced(1);
  QueuedScan<std::int64_t> wide_small(ScanKind::exclusive, 3 * 4096 + 1, 1704);
  QueuedScan<std::int32_t> again(ScanKind::inclusive, (1 << 20) + 7, 1705);
  large.enqueue(stream);
  groups.enqueue(stream);
  wide_large.enqueue(stream);
  two_tiles.enqueue(stream);
  reduce(large.in.data(), large.n, reduced.data(), Sum{}, stream);
  wide_small.enqueue(stream);
  again.enqueue(stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  large.expect_exact();
  groups.expect_exact();
  wide_large.expect_exact();
  two_tiles.expect_exact();
  wide_small.expect_exact();
  again.expect_exact();
}

// Two streams, two sets of scratch: scans running at the same time do not take each other's
// tickets or read each other's tree.
TEST_F(InclusiveScan, ConcurrentCallsOnTwoStreamsAreEachExact) {
  TestStream first_stream, second_stream;
  QueuedScan<std::int32_t> first(ScanKind::inclusive, (1 << 23) + 11, 1800);
  QueuedScan<std::int32_t> second(ScanKind::inclusive, (1 << 23) + 13, 1801);
  for (int round = 0; round < 3; ++round) {
    first.enqueue(first_stream);
    second.enqueue(second_stream);
  }
  ASSERT_EQ(cudaStreamSynchronize(first_stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(second_stream), cudaSuccess);
  first.expect_exact();
  second.expect_exact();
}

TEST_F(InclusiveScan, ZeroElementsLeavesTheOutputUntouched) {
  DeviceBuffer<float> in(std::vector<float>{1.0f, 2.0f});
  DeviceBuffer<float> out(std::vector<float>{7.0f, 8.0f});
  inclusive_scan(in.data(), out.data(), 0);
  exclusive_scan(in.data(), out.data(), 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.download(), (std::vector<float>{7.0f, 8.0f}));
}

TEST_F(InclusiveScan, SignedIntegerSumsWrapAroundLikeTwosComplement) {
  const std::int32_t big = std::numeric_limits<std::int32_t>::max() / 2 + 1;  // 2^30
  const std::vector<std::int32_t> values = {big, big, big, big, -1, 5};
  DeviceBuffer<std::int32_t> in(values), out(values.size());
  inclusive_scan(in.data(), out.data(), std::int64_t(values.size()));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.download(), (std::vector<std::int32_t>{
                                big, std::numeric_limits<std::int32_t>::min(), -big, 0, -1, 4}));
}

TEST_F(ExclusiveScan, GivesZeroFirstAndTheSumsOfThePrecedingElements) {
  DeviceBuffer<std::int64_t> in(std::vector<std::int64_t>{3, -1, 4, 1, -5});
  DeviceBuffer<std::int64_t> out(5);
  exclusive_scan(in.data(), out.data(), 5);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(out.download(), (std::vector<std::int64_t>{0, 3, 2, 6, 7}));
}

// 64-bit indexing end to end: 2^31 + 12345 uint32 elements (8.6 GB each way; about 17 GB of device
// memory and 17 GB of host memory for the check), sums wrapping modulo 2^32. Four look-back
// levels (524 292 tiles). Slow under compute-sanitizer: its name (Large...) leaves it out there.
TEST_F(InclusiveScan, LargeBeyondTwoTo31ElementsMatchesExactly) {
  const std::int64_t n = (std::int64_t(1) << 31) + 12345;
  const std::size_t bytes = std::size_t(n) * sizeof(std::uint32_t);
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  if (free_bytes < 2 * bytes + (std::size_t(1) << 30))
    GTEST_SKIP() << "needs " << (2 * bytes >> 30) + 1 << " GiB of free device memory, "
                 << (free_bytes >> 30) << " GiB free";
  const std::uint64_t seed = 1600;
  std::vector<std::uint32_t> host_in(n);
  {
    DeviceBuffer<std::uint32_t> in(n);
    bench::fill_random_integers(in.data(), n, seed, 0, 7, nullptr);
    DeviceBuffer<std::uint32_t> out(n);
    out.fill_bytes(0xFF);
    inclusive_scan(in.data(), out.data(), n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::uint32_t> host_out = out.download();
    cpu::parallel_ranges(n, [&](std::int64_t begin, std::int64_t end, int) {
      for (std::int64_t i = begin; i < end; ++i)
        host_in[i] = std::uint32_t(bench::random_integer(seed, std::uint64_t(i), 0, 7));
    });
    const auto check = cpu::check_scan(host_in.data(), host_out.data(), n, ScanKind::inclusive, {});
    EXPECT_TRUE(check.passed) << "seed " << seed << ": " << check.error << " mismatches, "
                              << check.describe();
  }
}

}  // namespace
}  // namespace rooflab
