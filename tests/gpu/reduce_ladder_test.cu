// The reduction ladders through the registry: every rung held to the exact sums at awkward sizes
// and shapes (the lab's inputs make every order of addition exact: reduce_workspace.hpp), and the
// seeds' volatile last-warp rung shown to racecheck.
//
// That rung is a data race on Volta and later GPUs, so its result is not guaranteed: the ladder
// tests leave it out, and the RaceByDesign tests, which run it, are left out of the sanitizer runs
// (gtest filter: -*RaceByDesign*). RaceByDesign.RacecheckFlagsTheVolatileRungButNotItsFix runs
// compute-sanitizer itself to show the race being caught.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "gpu_test.hpp"
#include "reduce/reduce_workspace.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* race_by_design = "last-warp-volatile";

// Every rung of `op` that can run `problem` (except the race; with `only`, only the rungs named
// there), on fresh inputs, prepared as the runner prepares them, checked.
void expect_every_rung_exact(const std::string& op, Problem problem, std::uint64_t& seed,
                             bool vendor_and_production_only = false,
                             const std::vector<std::string>& only = {}) {
  const Op& definition = registry().op(op);
  problem = definition.resolve(problem);
  const auto workspace = definition.make_workspace(problem);
  int checked = 0;
  for (const Variant* variant : registry().variants(op)) {
    if (variant->name == race_by_design) continue;
    if (variant->limit && !variant->limit(problem).empty()) continue;
    if (vendor_and_production_only && !variant->vendor && variant->name != "production") continue;
    if (!only.empty() && std::find(only.begin(), only.end(), variant->name) == only.end()) continue;
    workspace->refill(seed++);
    if (variant->prepare) variant->prepare(*workspace, nullptr);
    variant->run(*workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const Check check = workspace->check(variant->where);
    EXPECT_TRUE(check.passed) << op << " " << variant->name << ", " << definition.describe(problem)
                              << ", seed " << seed - 1 << ": " << check.detail;
    ++checked;
  }
  EXPECT_GE(checked, 2) << op << ", " << definition.describe(problem);
}

class ReduceLadder : public testing::GpuTest {};
class ReduceRowsLadder : public testing::GpuTest {};
class RaceByDesign : public testing::GpuTest {};

const std::int64_t awkward_sizes[] = {1, 2, 31, 32, 33, 1023, 1025, (1 << 20) + 7, (1 << 22) + 3};

TEST_F(ReduceLadder, EveryRungIsExactAtAwkwardSizes) {
  std::uint64_t seed = 2000;
  for (const std::int64_t n : awkward_sizes) {
    Problem problem;
    problem.n = n;
    expect_every_rung_exact("reduce", problem, seed);
  }
}

// The documents' rungs in their own type, int32 (whose sums wrap, in every order the same).
TEST_F(ReduceLadder, EveryRungIsExactForInt32AtAwkwardSizes) {
  std::uint64_t seed = 2200;
  for (const std::int64_t n : awkward_sizes) {
    Problem problem;
    problem.n = n;
    problem.dtype = "int32";
    expect_every_rung_exact("reduce", problem, seed);
  }
}

// The plain-loads rungs view the input as rows of 256 float4s and deal them to at most a wave of
// blocks in batches of 4: 4100 rows (the last partial) and a scalar tail of 3, then 8196 rows, give
// them blocks with several batches, a short last batch and the partial row.
TEST_F(ReduceLadder, PlainLoadRungsAreExactWhenBlocksTakeSeveralBatches) {
  std::uint64_t seed = 2500;
  for (const std::int64_t n : {(std::int64_t(1) << 24) + 4003, (std::int64_t(1) << 25) + 4003}) {
    Problem problem;
    problem.n = n;
    expect_every_rung_exact("reduce", problem, seed, false,
                            {"production", "plain-grid-stride", "even-share", "cub"});
  }
}

// Rung 22 adds in place: it must sum a copy and leave the workspace's input as it was, run after
// run, after its prepare (as the runner calls it) and without one (the rung then copies first).
TEST_F(ReduceLadder, InPlaceRungLeavesItsInputAsItWasRunAfterRun) {
  const std::uint64_t seed = 2600;
  Problem problem;
  problem.n = (1 << 20) + 7;
  problem.dtype = "int32";
  const Op& reduce = registry().op("reduce");
  problem = reduce.resolve(problem);
  const auto workspace = reduce.make_workspace(problem);
  auto& typed = static_cast<TypedReduceWorkspace<std::int32_t>&>(*workspace);
  const Variant* in_place = nullptr;
  for (const Variant* variant : registry().variants("reduce"))
    if (variant->name == "neighboured-in-place") in_place = variant;
  ASSERT_NE(in_place, nullptr);
  ASSERT_TRUE(in_place->prepare);
  workspace->refill(seed);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::int32_t> before = typed.in.download();
  for (int run = 0; run < 3; ++run) {
    if (run != 1) in_place->prepare(*workspace, nullptr);
    typed.out.fill_bytes(0xFF);
    in_place->run(*workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const Check check = workspace->check(Where::gpu);
    EXPECT_TRUE(check.passed) << "run " << run << ", seed " << seed << ": " << check.detail;
  }
  EXPECT_TRUE(typed.in.download() == before) << "the input changed, seed " << seed;
}

TEST_F(ReduceLadder, ProductionAndCubAreExactForEveryType) {
  std::uint64_t seed = 3000;
  for (const char* dtype : {"double", "int32", "int64", "uint32"})
    for (const std::int64_t n :
         {std::int64_t(1), std::int64_t(33), std::int64_t(1025), std::int64_t((1 << 20) + 7)}) {
      Problem problem;
      problem.n = n;
      problem.dtype = dtype;
      expect_every_rung_exact("reduce", problem, seed, true);
    }
}

struct Shape {
  std::int64_t rows, cols;
};
const Shape awkward_shapes[] = {{1, 1},      {1, (1 << 20) + 7}, {100003, 1}, {1009, 997},
                                {7919, 13},  {13, 7919},         {20000, 32}, {4099, 1001},
                                {100, 5003}, {3, 300007}};

TEST_F(ReduceRowsLadder, EveryRungIsExactAtAwkwardShapes) {
  std::uint64_t seed = 4000;
  for (const Shape shape : awkward_shapes) {
    Problem problem;
    problem.rows = shape.rows;
    problem.cols = shape.cols;
    expect_every_rung_exact("reduce-rows", problem, seed);
  }
}

// Rows of 32 floats, production's small-rows path at 8 lanes per row (a warp's pass covers 32
// of them): fewer rows than a pass, a pass and a row more or less, a partial last pass, and more
// passes than the path's grid holds, so that every warp strides on.
TEST_F(ReduceRowsLadder, EveryRungIsExactForRowsOf32Floats) {
  std::uint64_t seed = 4500;
  for (const std::int64_t rows : {1, 31, 33, 63, 65, 100003, (1 << 20) + 5}) {
    Problem problem;
    problem.rows = rows;
    problem.cols = 32;
    expect_every_rung_exact("reduce-rows", problem, seed);
  }
}

TEST_F(ReduceRowsLadder, ProductionAndCubAreExactForEveryType) {
  std::uint64_t seed = 5000;
  for (const char* dtype : {"double", "int32", "int64", "uint32"})
    for (const Shape shape : {Shape{7919, 13}, Shape{4099, 1001}, Shape{3, 300007}}) {
      Problem problem;
      problem.rows = shape.rows;
      problem.cols = shape.cols;
      problem.dtype = dtype;
      expect_every_rung_exact("reduce-rows", problem, seed, true);
    }
}

// ---------------------------------------------------------------------------------------------
// Races by design

// Started only by the next test, under racecheck: runs the reduce rung named by
// ROOFLAB_RACECHECK_RUNG on one block's worth of input. Its sum is not asserted (the race may
// or may not corrupt it); that CUDA ran it without an error is.
TEST_F(RaceByDesign, ChildRunsOneRungOnOneBlock) {
  const char* rung = std::getenv("ROOFLAB_RACECHECK_RUNG");
  if (rung == nullptr)
    GTEST_SKIP() << "started under racecheck by RacecheckFlagsTheVolatileRungButNotItsFix";
  Problem problem;
  problem.n = 512;  // one block of 256 threads, two elements each
  problem = registry().op("reduce").resolve(problem);
  const auto workspace = registry().op("reduce").make_workspace(problem);
  for (const Variant* variant : registry().variants("reduce")) {
    if (variant->name != rung) continue;
    workspace->refill(1);
    variant->run(*workspace, nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return;
  }
  FAIL() << "no reduce rung named " << rung;
}

std::string compute_sanitizer() {
  for (const char* candidate :
       {"/usr/local/cuda/bin/compute-sanitizer", "/usr/bin/compute-sanitizer"})
    if (access(candidate, X_OK) == 0) return candidate;
  FILE* which = popen("command -v compute-sanitizer 2>/dev/null", "r");
  if (which == nullptr) return {};
  std::array<char, 512> line{};
  std::string found = fgets(line.data(), int(line.size()), which) ? line.data() : "";
  pclose(which);
  while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
  return found;
}

// Runs ChildRunsOneRungOnOneBlock for `rung` under racecheck; returns the hazards it reports (-1
// when the output says neither), with the output in `output`.
int racecheck_hazards(const std::string& sanitizer, const std::string& rung, std::string& output) {
  std::array<char, 4096> self{};
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (length <= 0) return -1;
  // The child runs its one test whatever shard the parent is: a sharded parent's
  // GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX would filter it out.
  const std::string command =
      "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX "
      "ROOFLAB_RACECHECK_RUNG=" +
      rung + " '" + sanitizer + "' --tool racecheck '" +
      std::string(self.data(), std::size_t(length)) +
      "' --gtest_filter=RaceByDesign.ChildRunsOneRungOnOneBlock 2>&1";
  FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) return -1;
  std::array<char, 4096> chunk{};
  while (fgets(chunk.data(), int(chunk.size()), child)) output += chunk.data();
  pclose(child);
  std::smatch match;
  if (std::regex_search(output, match, std::regex("RACECHECK SUMMARY: ([0-9]+) hazard")))
    return std::stoi(match[1]);
  const bool clean = output.find("[  PASSED  ] 1 test") != std::string::npos &&
                     output.find("Race reported") == std::string::npos;
  return clean ? 0 : -1;
}

// True inside compute-sanitizer or a profiler: they inject themselves through these variables,
// and a second sanitizer cannot run under the first.
bool under_a_cuda_tool() {
  const char* preload = std::getenv("LD_PRELOAD");
  return std::getenv("CUDA_INJECTION64_PATH") != nullptr ||
         (preload != nullptr && std::string(preload).find("sanitizer") != std::string::npos);
}

TEST_F(RaceByDesign, RacecheckFlagsTheVolatileRungButNotItsFix) {
  if (under_a_cuda_tool()) GTEST_SKIP() << "already running under a CUDA tool";
  const std::string sanitizer = compute_sanitizer();
  if (sanitizer.empty()) GTEST_SKIP() << "compute-sanitizer not found";
  std::string volatile_output, syncwarp_output;
  EXPECT_GT(racecheck_hazards(sanitizer, race_by_design, volatile_output), 0) << volatile_output;
  EXPECT_EQ(racecheck_hazards(sanitizer, "last-warp-syncwarp", syncwarp_output), 0)
      << syncwarp_output;
}

}  // namespace
}  // namespace rooflab::bench
