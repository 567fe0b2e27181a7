// transpose and its ladder, element for element: every rung at awkward shapes, every element size,
// round trips, unaligned pointers, 1 x N and N x 1, and more than 2^31 elements.
// TransposeHuge.* moves hundreds of megabytes to gigabytes: leave it out of compute-sanitizer runs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/runner.hpp"
#include "cpu/transpose.hpp"
#include "gpu_test.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/transpose.hpp"
#include "transpose/transpose_workspace.hpp"

namespace rooflab::bench {
namespace {

class TransposeLadder : public testing::GpuTest {};
class Transpose : public testing::GpuTest {};
class TransposeHuge : public testing::GpuTest {};

const std::pair<std::int64_t, std::int64_t> awkward_shapes[] = {
    {1, 1},    {1, 37},  {37, 1},    {2, 3},     {31, 33},   {33, 31},   {64, 64},     {64, 128},
    {128, 64}, {65, 63}, {127, 129}, {33, 4097}, {4097, 33}, {192, 320}, {1000, 1001}, {3, 70001}};

Problem resolved(std::int64_t rows, std::int64_t cols, const char* dtype) {
  Problem problem;
  problem.rows = rows;
  problem.cols = cols;
  problem.dtype = dtype;
  return registry().op("transpose").resolve(problem);
}

// Runs each selected variant the problem's limits allow and checks every element.
void expect_variants_exact(const Problem& problem, std::uint64_t& seed,
                           const std::vector<std::string>& only = {}) {
  TransposeWorkspace w(problem.rows, problem.cols, transpose_element(problem.dtype));
  const std::string what = registry().op("transpose").describe(problem);
  for (const Variant* variant : registry().variants("transpose")) {
    if (!only.empty() && std::find(only.begin(), only.end(), variant->name) == only.end()) continue;
    if (variant->limit && !variant->limit(problem).empty()) continue;
    w.refill(seed++);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    variant->run(w, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name << ", " << what;
    const Check check = w.check(variant->where);
    EXPECT_TRUE(check.passed) << variant->name << ", " << what << ", seed " << seed - 1 << ": "
                              << check.detail;
  }
}

std::vector<unsigned char> random_bytes(std::size_t count, std::mt19937& random) {
  std::vector<unsigned char> bytes(count);
  for (auto& b : bytes) b = static_cast<unsigned char>(random());
  return bytes;
}

template <int Bytes>
struct Element {  // a trivially copyable type of each size, aligned to 1 byte only
  unsigned char byte[Bytes];
};

// transpose<Element<size>> of rows x cols bytes placed `offset` bytes into device buffers,
// against the CPU loop.
template <int Bytes>
void expect_transpose_at_offset(std::int64_t rows, std::int64_t cols, std::size_t offset,
                                std::mt19937& random) {
  const std::size_t bytes = std::size_t(rows * cols) * Bytes;
  const auto host_in = random_bytes(bytes, random);
  std::vector<unsigned char> padded(bytes + offset);
  std::memcpy(padded.data() + offset, host_in.data(), bytes);
  DeviceBuffer<unsigned char> in(padded);
  DeviceBuffer<unsigned char> out(bytes + offset);
  out.fill_bytes(0xFF);
  transpose(reinterpret_cast<const Element<Bytes>*>(in.data() + offset), rows, cols,
            reinterpret_cast<Element<Bytes>*>(out.data() + offset));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = out.download();
  std::vector<unsigned char> want(bytes);
  cpu::transpose_serial(host_in.data(), rows, cols, Bytes, want.data());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + std::ptrdiff_t(offset)))
      << Bytes << "-byte elements, " << rows << " x " << cols << ", offset " << offset << " bytes";
}

TEST_F(TransposeLadder, EveryRungMatchesTheReferenceAtAwkwardShapes) {
  std::uint64_t seed = 6000;
  for (const auto& [rows, cols] : awkward_shapes)
    for (const char* dtype : {"float", "double"})
      expect_variants_exact(resolved(rows, cols, dtype), seed);
}

TEST_F(TransposeLadder, ProductionMovesEveryElementSize) {
  std::uint64_t seed = 7000;
  for (const auto& [rows, cols] : awkward_shapes)
    for (const char* dtype : {"uint8", "uint16", "float", "double", "float4"})
      expect_variants_exact(resolved(rows, cols, dtype), seed, {"production"});
  // Shapes whose rows are multiples of every packet width: the 16-byte paths of each size.
  for (const auto& [rows, cols] :
       {std::pair{256, 512}, std::pair{384, 128}, std::pair{129, 256}, std::pair{256, 129}})
    for (const char* dtype : {"uint8", "uint16", "float", "double", "float4"})
      expect_variants_exact(resolved(rows, cols, dtype), seed, {"production"});
}

TEST_F(TransposeLadder, ScalarTilesMatchTheReferenceAcrossManyTiles) {
  // Several full tiles down and across at odd pitches plus edge tiles on both sides: production's
  // scalar tiles (4- and 8-byte elements; 128 x 32 for floats at an odd pitch, 64 x 64 otherwise)
  // and the tall rung, whose 128-row tiles leave a 1-row edge at 4097 rows and none at 4096.
  std::uint64_t seed = 7300;
  const std::vector<std::string> scalar_tiles = {"tile32-rows8", "tile32-col-order", "production",
                                                 "tile128x32-col-order"};
  for (const auto& [rows, cols] :
       {std::pair{4097, 4099}, std::pair{4096, 4096}, std::pair{257, 1031}, std::pair{1031, 257},
        std::pair{128, 64}, std::pair{127, 65}})
    for (const char* dtype : {"float", "double"})
      expect_variants_exact(resolved(rows, cols, dtype), seed, scalar_tiles);
}

TEST_F(TransposeLadder, RowPitchesOfEveryAlignmentTakeWholeTiles) {
  // Full tiles whose rows start at every offset from a 16-byte boundary, on both sides: each
  // row's packets are shifted by its own misalignment and the ends moved lane by lane.
  std::uint64_t seed = 7500;
  for (const auto& [rows, cols] : {std::pair{129, 131}, std::pair{130, 257}, std::pair{259, 133},
                                   std::pair{385, 387}, std::pair{262, 390}, std::pair{257, 263}})
    for (const char* dtype : {"uint8", "uint16", "float", "double", "float4"})
      expect_variants_exact(resolved(rows, cols, dtype), seed, {"production"});
}

TEST_F(TransposeLadder, BandsOfEveryShortSideMatchTheReference) {
  // A side shorter than a tile: one band per slab, the last slab partial, both orientations,
  // long sides at every alignment.
  std::uint64_t seed = 7700;
  for (const auto& [rows, cols] :
       {std::pair{2, 100003}, std::pair{3, 4099}, std::pair{17, 12345}, std::pair{31, 5003},
        std::pair{32, 4096}, std::pair{33, 70001}, std::pair{63, 4101}, std::pair{127, 3001}})
    for (const char* dtype : {"uint8", "uint16", "float", "double", "float4"}) {
      expect_variants_exact(resolved(rows, cols, dtype), seed, {"production"});
      expect_variants_exact(resolved(cols, rows, dtype), seed, {"production"});
    }
}

TEST_F(TransposeLadder, TheRunnerValidatesAndTimesEveryRung) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.warmup = 1;
  Runner runner(registry(), environment, options);
  for (const auto& [rows, cols] : {std::pair{2048, 1024}, std::pair{1023, 1025}}) {
    const auto rows_run = runner.run("transpose", resolved(rows, cols, "float"));
    ASSERT_EQ(rows_run.size(), registry().variants("transpose").size());
    for (const Row& row : rows_run) {
      EXPECT_NE(row.status, Status::failed)
          << row.name << " " << rows << " x " << cols << ": " << row.note;
      if (row.status == Status::ok) EXPECT_GT(row.median_ms, 0) << row.name;
    }
  }
}

TEST_F(Transpose, RoundTripReturnsTheInput) {
  std::mt19937 random(21);
  const auto round_trip = [&](auto zero, std::int64_t rows, std::int64_t cols) {
    using T = decltype(zero);
    const std::size_t count = std::size_t(rows * cols);
    std::vector<T> host(count);
    const auto bytes = random_bytes(count * sizeof(T), random);
    std::memcpy(host.data(), bytes.data(), bytes.size());
    DeviceBuffer<T> in(host), middle(count), back(count);
    transpose(in.data(), rows, cols, middle.data());
    transpose(middle.data(), cols, rows, back.data());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = back.download();
    EXPECT_EQ(std::memcmp(got.data(), host.data(), count * sizeof(T)), 0)
        << sizeof(T) << "-byte elements, " << rows << " x " << cols << " (seed 21)";
  };
  // awkward_shapes, then full tiles of every kernel at odd pitches, both orientations.
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes(std::begin(awkward_shapes),
                                                            std::end(awkward_shapes));
  shapes.insert(shapes.end(), {{129, 4099}, {4099, 129}, {385, 259}, {4097, 4099}});
  for (const auto& [rows, cols] : shapes) {
    round_trip(std::uint8_t{}, rows, cols);
    round_trip(std::uint16_t{}, rows, cols);
    round_trip(float{}, rows, cols);
    round_trip(std::int64_t{}, rows, cols);
    round_trip(double2{}, rows, cols);
  }
}

TEST_F(Transpose, UnalignedPointersAreStillCorrect) {
  std::mt19937 random(22);
  for (const auto& [rows, cols] :
       {std::pair{64, 64}, std::pair{65, 130}, std::pair{1, 100}, std::pair{300, 7},
        std::pair{33, 1000}, std::pair{1000, 33}, std::pair{3, 5000}}) {
    for (const std::size_t offset : {0, 1, 2, 4, 8}) {
      expect_transpose_at_offset<2>(rows, cols, offset, random);
      expect_transpose_at_offset<4>(rows, cols, offset, random);
      expect_transpose_at_offset<8>(rows, cols, offset, random);
      expect_transpose_at_offset<16>(rows, cols, offset, random);
    }
  }
  // Aligned to the element but not to 16 bytes: every run of the full tiles and bands starts
  // off a packet boundary.
  for (const std::size_t offset : {4, 8, 12}) {
    expect_transpose_at_offset<4>(256, 512, offset, random);
    expect_transpose_at_offset<4>(33, 4096, offset, random);
    expect_transpose_at_offset<4>(4096, 33, offset, random);
  }
  for (const auto& [rows, cols] : {std::pair{256, 512}, std::pair{33, 4096}, std::pair{4096, 33}}) {
    expect_transpose_at_offset<8>(rows, cols, 8, random);
    expect_transpose_at_offset<2>(rows, cols, 6, random);
    expect_transpose_at_offset<1>(rows, cols, 5, random);
  }
}

TEST_F(Transpose, OneByNAndNByOneAreCopies) {
  std::mt19937 random(23);
  for (const std::int64_t n : {1, 2, 17, 4096, 1000003}) {
    const auto host = random_bytes(std::size_t(n) * 4, random);
    DeviceBuffer<unsigned char> in(host), out(host.size());
    for (const auto& [rows, cols] :
         {std::pair{std::int64_t(1), n}, std::pair{n, std::int64_t(1)}}) {
      out.fill_bytes(0);
      transpose(reinterpret_cast<const float*>(in.data()), rows, cols,
                reinterpret_cast<float*>(out.data()));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(out.download(), host) << rows << " x " << cols;
    }
  }
}

TEST_F(TransposeHuge, TheOddTargetShapesMatchTheReference) {
  std::uint64_t seed = 8500;
  const std::vector<std::string> fast = {"tile32-rows8", "tile32-col-order", "production",
                                         "tile128x32-col-order", "cublas-geam"};
  for (const auto& [rows, cols] :
       {std::pair{4097, 4099}, std::pair{33, 1 << 20}, std::pair{1 << 20, 33}})
    expect_variants_exact(resolved(rows, cols, "float"), seed, fast);
  // The scalar tiles' grids loop past 65535 tile rows (row-major) or tile columns (column-major,
  // production's order; 64 rows, so that production takes the tiles, not a band).
  expect_variants_exact(resolved(65536 * 64 + 3, 2, "float"), seed, fast);
  expect_variants_exact(resolved(2, 65536 * 64 + 3, "float"), seed, fast);
  expect_variants_exact(resolved(64, 65536 * 64 + 3, "float"), seed,
                        {"production", "tile128x32-col-order"});
}

TEST_F(TransposeHuge, MoreThanTwoTo31Elements) {
  // 46349^2 bytes > 2^31: every index of the tiles past 32 bits, odd shape, edge tiles included;
  // 3 x N and N x 3: the bands' slabs past 2^31 elements, on each side.
  std::uint64_t seed = 8000;
  expect_variants_exact(resolved(46349, 46349, "uint8"), seed, {"production"});
  expect_variants_exact(resolved(3, (std::int64_t(1) << 31) / 3 + 5, "uint16"), seed,
                        {"production"});
  expect_variants_exact(resolved((std::int64_t(1) << 31) / 3 + 5, 3, "uint8"), seed,
                        {"production"});
}

}  // namespace
}  // namespace rooflab::bench
