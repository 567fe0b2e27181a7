// The add ladder and the harness around it: every rung validated at awkward sizes, and the
// runner shown to catch a wrong kernel.
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "add/add_workspace.hpp"
#include "bench/runner.hpp"
#include "gpu_test.hpp"
#include "rooflab/cuda_check.hpp"

namespace rooflab::bench {
namespace {

class AddLadder : public testing::GpuTest {};
class HarnessRunner : public testing::GpuTest {};

const std::int64_t awkward_sizes[] = {1, 2, 31, 32, 33, 1023, 1025, (1 << 20) + 7, (1 << 22) + 3};

TEST_F(AddLadder, EveryAddRungMatchesTheReferenceAtAwkwardSizes) {
  std::uint64_t seed = 1000;
  for (const std::int64_t n : awkward_sizes) {
    AddWorkspace workspace(n);
    for (const Variant* variant : registry().variants("add")) {
      workspace.refill(seed++);
      variant->run(workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const Check check = workspace.check(variant->where);
      EXPECT_TRUE(check.passed) << variant->name << " n=" << n << " seed=" << seed - 1 << ": "
                                << check.detail;
    }
  }
}

// A deliberately wrong rung: it forgets the last element. The harness must mark it FAILED.
__global__ void add_forgetting_the_last(const float* a, const float* b, float* out,
                                        std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n - 1) out[i] = a[i] + b[i];
}

TEST_F(HarnessRunner, MarksAWrongVariantFailedAndNeverTimesIt) {
  Registry local;
  local.add_op(registry().op("add"));
  local.add_variant(
      Variant{"add", 1, "forgets-last", "wrong on purpose", Where::gpu, false, no_limit,
              on<AddWorkspace>([](AddWorkspace& w, cudaStream_t stream) {
                add_forgetting_the_last<<<unsigned((w.n + 255) / 256), 256, 0, stream>>>(
                    w.a.data(), w.b.data(), w.out.data(), w.n);
                detail::check_launch("test", "add_forgetting_the_last");
              })});
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  Runner runner(local, environment, options);
  Problem problem;
  problem.n = 4097;
  const auto rows = runner.run("add", problem);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::failed);
  EXPECT_NE(rows[0].note.find("index 4096"), std::string::npos) << rows[0].note;
  EXPECT_EQ(rows[0].reps, 0);
  EXPECT_EQ(rows[0].median_ms, 0);
}

TEST_F(HarnessRunner, ValidatesAndTimesEveryAddRung) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.warmup = 1;
  Runner runner(registry(), environment, options);
  Problem problem;
  problem.n = (1 << 20) + 1;
  int seen = 0;
  const auto rows = runner.run("add", problem, [&](const Row&) { ++seen; });
  EXPECT_EQ(seen, int(rows.size()));
  ASSERT_EQ(rows.size(), registry().variants("add").size());
  for (const Row& row : rows) {
    EXPECT_EQ(row.status, Status::ok) << row.name << ": " << row.note;
    EXPECT_GE(row.reps, 3) << row.name;
    EXPECT_GT(row.median_ms, 0) << row.name;
    EXPECT_LE(row.min_ms, row.median_ms) << row.name;
    EXPECT_LE(row.median_ms, row.max_ms) << row.name;
    EXPECT_GT(row.gbps, 0) << row.name;
  }
}

TEST_F(HarnessRunner, SkipsAVariantBeyondItsLimitSayingWhy) {
  Registry local;
  local.add_op(registry().op("add"));
  Variant limited = testing::last_device_rung("add");
  limited.limit = at_most_n(1000, "too slow for large n");
  local.add_variant(limited);
  const Environment environment = testing::environment_without_ceilings();
  Runner runner(local, environment, RunOptions{});
  Problem problem;
  problem.n = 1001;
  const auto rows = runner.run("add", problem);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::skipped);
  EXPECT_EQ(rows[0].note, "too slow for large n (limit n <= 1000)");
}

TEST_F(HarnessRunner, OnlyRunsTheSelectedRungs) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.only = {"1", "float4"};
  Runner runner(registry(), environment, options);
  Problem problem;
  problem.n = 4096;
  const auto rows = runner.run("add", problem);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "grid-stride");
  EXPECT_EQ(rows[1].name, "float4");
}

TEST_F(HarnessRunner, ShowsEveryRowAgainstTheFastestCpuRungAlsoWhenThatRungComesLast) {
  // Rung 0 is the CPU loop made slower, rung 30 the loop itself: the device rung between them is
  // shown against rung 30 although rung 30 follows it.
  const Variant& loop = *registry().variants("add").front();
  ASSERT_EQ(loop.where, Where::cpu);
  Variant slow_loop = loop;
  slow_loop.name = "cpu-loop-slowed";
  slow_loop.run = [&loop](Workspace& workspace, cudaStream_t stream) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    loop.run(workspace, stream);
  };
  Variant fast_loop = loop;
  fast_loop.rung = 30;
  Registry local;
  local.add_op(registry().op("add"));
  local.add_variant(slow_loop);
  local.add_variant(testing::last_device_rung("add"));
  local.add_variant(fast_loop);
  RunOptions options;
  options.reps = 3;
  Runner runner(local, testing::environment_without_ceilings(), options);
  Problem problem;
  problem.n = 4096;
  std::vector<Row> shown;
  const auto rows = runner.run("add", problem, [&](const Row& row) { shown.push_back(row); });
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_EQ(shown.size(), 3u);
  for (const Row& row : rows) ASSERT_EQ(row.status, Status::ok) << row.name << ": " << row.note;
  EXPECT_EQ(rows[0].rung, 0);
  EXPECT_EQ(rows[2].rung, 30);
  EXPECT_GT(rows[0].median_ms, rows[2].median_ms);
  EXPECT_DOUBLE_EQ(rows[2].speedup_vs_cpu, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_cpu, rows[2].median_ms / rows[1].median_ms);
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_DOUBLE_EQ(shown[i].speedup_vs_cpu, rows[i].speedup_vs_cpu) << rows[i].name;
}

}  // namespace
}  // namespace rooflab::bench
