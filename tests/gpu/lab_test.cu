// The limiting-factor lab (the limiting-factors lecture) on the device: every rung but the
// deliberate race matches its reference at awkward sizes, the race is shown failing, and the
// harness's hooks (prepare, note, failure by design) do what the lab relies on. The memory
// experiments (constant and shared memory, latency, synchronization, the blocking copy, pageable
// access) likewise, and a barrier in divergent code is shown to finish where every thread reaches
// one.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/runner.hpp"
#include "gpu_test.hpp"
#include "lab/atomics.hpp"
#include "lab/coalescing.hpp"
#include "lab/constant_memory.hpp"
#include "lab/divergence.hpp"
#include "lab/memcpy_sync.hpp"
#include "lab/memory_latency.hpp"
#include "lab/occupancy.hpp"
#include "lab/pageable_access.hpp"
#include "lab/shared_memory.hpp"
#include "lab/synchronization.hpp"
#include "lab/timing.hpp"
#include "lab/transfer.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

class TransferLadder : public testing::GpuTest {};
class CoalescingLadder : public testing::GpuTest {};
class DivergenceLadder : public testing::GpuTest {};
class AtomicsLadder : public testing::GpuTest {};
class AtomicsRacyByDesign : public testing::GpuTest {};
class OccupancyLadder : public testing::GpuTest {};
class TimingLadder : public testing::GpuTest {};
class HarnessHooks : public testing::GpuTest {};
class LabRunner : public testing::GpuTest {};
class ConstantMemoryLadder : public testing::GpuTest {};
class SharedMemoryLadder : public testing::GpuTest {};
class MemoryLatencyLadder : public testing::GpuTest {};
class SynchronizationLadder : public testing::GpuTest {};
class MemcpySyncLadder : public testing::GpuTest {};
class PageableAccessLadder : public testing::GpuTest {};
class DivergentBarrierByDesign : public testing::GpuTest {};

const Variant& rung(const std::string& op, const std::string& name) {
  for (const Variant* variant : registry().variants(op))
    if (variant->name == name) return *variant;
  throw std::runtime_error("no rung " + op + "/" + name);
}

// True where the variant's limit skips it at this problem (in reports, saying why): a size
// beyond the rung, a host cache the host does not report.
bool skipped_at(const Variant& variant, const Problem& problem) {
  return variant.limit && !variant.limit(problem).empty();
}

// As the runner validates: fresh inputs, the variant's prepare, one run, the check. Every rung
// that can run the problem, except one that fails by design (tested on its own).
void expect_every_rung_validates(const std::string& op, const Problem& problem,
                                 Workspace& workspace, std::uint64_t& seed) {
  const std::string description = registry().op(op).describe(problem);
  for (const Variant* variant : registry().variants(op)) {
    if (!variant->expected_failure.empty()) continue;
    if (skipped_at(*variant, problem)) continue;
    workspace.refill(seed);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (variant->prepare) variant->prepare(workspace, nullptr);
    variant->run(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << op << " " << variant->name;
    const Check check = workspace.check(variant->where);
    EXPECT_TRUE(check.passed) << op << " " << variant->name << " (" << description << ") seed "
                              << seed << ": " << check.detail;
    ++seed;
  }
}

Problem resolved(const std::string& op, std::int64_t n, std::int64_t m = 0) {
  Problem problem;
  problem.n = n;
  problem.m = m;
  return registry().op(op).resolve(problem);
}

TEST_F(TransferLadder, EveryRungCopiesEveryWordAtAwkwardSizes) {
  std::uint64_t seed = 3000;
  for (const std::int64_t bytes :
       {std::int64_t(4), std::int64_t(12), std::int64_t(4092), std::int64_t(4100),
        std::int64_t(12300), (std::int64_t(1) << 20) + 12}) {
    TransferWorkspace workspace(bytes);
    expect_every_rung_validates("transfer", resolved("transfer", bytes), workspace, seed);
  }
}

int last_prefetch_location(TransferWorkspace& workspace) {
  int type = -1;
  EXPECT_EQ(
      cudaMemRangeGetAttribute(&type, sizeof type, cudaMemRangeAttributeLastPrefetchLocationType,
                               workspace.managed.data(), workspace.managed.bytes()),
      cudaSuccess);
  return type;
}

TEST_F(TransferLadder, PrepareLeavesTheManagedPagesWhereEachRungStarts) {
  if (!device_migrates_managed_memory())
    GTEST_SKIP() << "the device does not migrate managed memory";
  TransferWorkspace workspace(std::int64_t(1) << 20);
  workspace.refill(1);
  for (const char* name : {"managed-first-touch", "managed-prefetch"}) {
    rung("transfer", "managed-resident").prepare(workspace, nullptr);  // pages on the device first
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(last_prefetch_location(workspace), int(cudaMemLocationTypeDevice));
    rung("transfer", name).prepare(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const int host = last_prefetch_location(workspace);  // the host, or one of its NUMA nodes
    EXPECT_TRUE(host == cudaMemLocationTypeHost || host == cudaMemLocationTypeHostNuma ||
                host == cudaMemLocationTypeHostNumaCurrent)
        << name << ": last prefetch location type " << host;
  }
}

TEST_F(CoalescingLadder, EveryRungMatchesTheReferenceAtAwkwardSizes) {
  std::uint64_t seed = 4000;
  for (const std::int64_t n :
       {std::int64_t(1), std::int64_t(2), std::int64_t(31), std::int64_t(33), std::int64_t(1000),
        std::int64_t(1023), std::int64_t(1025), std::int64_t(4097), (std::int64_t(1) << 20) + 7,
        (std::int64_t(1) << 22) + 3}) {
    CoalescingWorkspace workspace(n);
    expect_every_rung_validates("coalescing", resolved("coalescing", n), workspace, seed);
  }
}

TEST_F(DivergenceLadder, EveryRungMatchesTheReferenceForEveryHeavyCount) {
  std::uint64_t seed = 5000;
  for (const int heavy_per_warp : {1, 2, 4, 8, 16, 32})
    for (const std::int64_t n : {std::int64_t(1), std::int64_t(33), std::int64_t(1000),
                                 std::int64_t(4099), std::int64_t(40000)}) {
      DivergenceWorkspace workspace(n, 32 / heavy_per_warp);
      expect_every_rung_validates("divergence", resolved("divergence", n, heavy_per_warp),
                                  workspace, seed);
    }
}

TEST_F(AtomicsLadder, EveryCorrectRungCountsExactly) {
  std::uint64_t seed = 6000;
  for (const std::int64_t n :
       {std::int64_t(1), std::int64_t(31), std::int64_t(32), std::int64_t(33), std::int64_t(255),
        std::int64_t(256), std::int64_t(257), std::int64_t(100003), std::int64_t(1) << 20}) {
    AtomicsWorkspace workspace(n);
    expect_every_rung_validates("atomics", resolved("atomics", n), workspace, seed);
  }
}

// compute-sanitizer's racecheck reports this test's kernel by design: exclude *RacyByDesign*.
TEST_F(AtomicsRacyByDesign, PlainAddLosesMostUpdatesAndFailsTheCheck) {
  const std::int64_t n = std::int64_t(1) << 20;
  AtomicsWorkspace workspace(n);
  workspace.refill(7);
  rung("atomics", "plain-add").run(workspace, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const Check check = workspace.check(Where::gpu);
  EXPECT_FALSE(check.passed) << check.detail;
  // The 32 lanes of a warp store one old value plus their own: one store survives per warp
  // instruction, so far more than half of the total goes missing.
  EXPECT_GT(check.error, 0.5) << check.detail;
}

TEST_F(AtomicsRacyByDesign, RunnerShowsItFailedByDesignWithoutCountingIt) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.only = {"plain-add"};
  Runner runner(registry(), environment, options);
  const auto rows = runner.run("atomics", resolved("atomics", 100000));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::failed);
  EXPECT_FALSE(rows[0].expected_failure.empty());
  EXPECT_FALSE(counts_as_failure(rows[0]));
  EXPECT_EQ(rows[0].reps, 0);
}

TEST_F(OccupancyLadder, EveryRungMatchesTheReferenceAtAwkwardSizes) {
  std::uint64_t seed = 7000;
  for (const std::int64_t n :
       {std::int64_t(1), std::int64_t(31), std::int64_t(1024), std::int64_t(1025),
        std::int64_t(3000), std::int64_t(33000), (std::int64_t(1) << 20) + 5}) {
    OccupancyWorkspace workspace(n);
    expect_every_rung_validates("occupancy", resolved("occupancy", n), workspace, seed);
  }
}

TEST_F(OccupancyLadder, CappedRungsSpillToLocalMemoryAndTheOthersDoNot) {
  for (const Variant* variant : registry().variants("occupancy")) {
    if (variant->where != Where::gpu) continue;
    const LaunchFacts facts = occupancy_launch_facts(variant->name);
    EXPECT_GE(facts.blocks_per_sm, 1) << variant->name;
    EXPECT_GT(facts.occupancy, 0) << variant->name;
    EXPECT_LE(facts.occupancy, 1) << variant->name;
    const bool capped = variant->name.find("-regs-") != std::string::npos;
    EXPECT_EQ(facts.local_bytes > 0, capped) << variant->name << ": " << describe(facts);
  }
  EXPECT_LE(occupancy_launch_facts("block-256-regs-32").registers, 32);
  EXPECT_LE(occupancy_launch_facts("block-256-regs-24").registers, 24);
  EXPECT_GT(occupancy_launch_facts("block-256-regs-24").local_bytes,
            occupancy_launch_facts("block-256-regs-32").local_bytes);
  EXPECT_LE(occupancy_launch_facts("block-1024").registers, 64);
  EXPECT_DOUBLE_EQ(occupancy_launch_facts("block-256-regs-32").occupancy, 1.0);
  EXPECT_THROW(occupancy_launch_facts("block-3"), Error);
}

TEST_F(OccupancyLadder, NotesShowBlocksPerSmRegistersAndLocalBytes) {
  OccupancyWorkspace workspace(1024);
  for (const Variant* variant : registry().variants("occupancy")) {
    if (!variant->note) continue;
    const std::string note = variant->note(workspace);
    EXPECT_NE(note.find("blocks/SM"), std::string::npos) << note;
    EXPECT_NE(note.find("registers"), std::string::npos) << note;
    EXPECT_NE(note.find("B local"), std::string::npos) << note;
  }
}

TEST_F(TimingLadder, EveryRungComputesTheAddAndRecordsWhatItsClockRead) {
  std::uint64_t seed = 8000;
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(1000), (std::int64_t(1) << 20) + 1}) {
    TimingWorkspace workspace(n);
    expect_every_rung_validates("timing", resolved("timing", n), workspace, seed);
    for (const Variant* variant : registry().variants("timing")) {
      workspace.refill(seed++);
      variant->run(workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(workspace.self_ms.size(), 1u) << variant->name;
      EXPECT_GE(workspace.self_ms[0], 0) << variant->name;
      EXPECT_NE(variant->note(workspace).find("its own clock read"), std::string::npos)
          << variant->name;
    }
  }
  // A refused read is the lesson, not an error: nothing may linger for the next launch check.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(HarnessHooks, PrepareRunsBeforeValidationEveryWarmupAndEveryRepetition) {
  Registry local;
  local.add_op(registry().op("add"));
  Variant counted = testing::last_device_rung("add");
  int prepared = 0;
  counted.prepare = [&prepared](Workspace&, cudaStream_t) { ++prepared; };
  local.add_variant(counted);
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.warmup = 2;
  Runner runner(local, environment, options);
  const auto rows = runner.run("add", resolved("add", 4097));
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].status, Status::ok) << rows[0].note;
  EXPECT_EQ(rows[0].reps, 3);
  EXPECT_EQ(prepared, 1 + 2 + 3);
}

TEST_F(HarnessHooks, NoteOfATimedVariantLandsInItsRow) {
  Registry local;
  local.add_op(registry().op("add"));
  Variant noted = testing::last_device_rung("add");
  noted.note = [](Workspace& workspace) {
    return "n is " + std::to_string(static_cast<AddWorkspace&>(workspace).n);
  };
  local.add_variant(noted);
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  Runner runner(local, environment, options);
  const auto rows = runner.run("add", resolved("add", 4097));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::ok);
  EXPECT_EQ(rows[0].note, "n is 4097");
}

// Every lab op through the runner at small sizes (the race left out): each row validated, timed,
// with its notes; prepare hooks and limits exercised the way `rooflab bench` uses them.
TEST_F(LabRunner, EveryLabOpValidatesAndTimesThroughTheRunner) {
  const Environment environment = testing::environment_without_ceilings();
  const std::vector<Problem> problems{resolved("transfer", std::int64_t(1) << 20),
                                      resolved("coalescing", 5000),
                                      resolved("divergence", 5000, 16),
                                      resolved("divergence", 5000, 1),
                                      resolved("atomics", 5000),
                                      resolved("occupancy", 5000),
                                      resolved("timing", 5000)};
  const std::vector<std::string> ops{"transfer", "coalescing", "divergence", "divergence",
                                     "atomics",  "occupancy",  "timing"};
  for (std::size_t k = 0; k < ops.size(); ++k) {
    RunOptions options;
    options.reps = 3;
    options.warmup = 1;
    for (const Variant* variant : registry().variants(ops[k]))
      if (variant->expected_failure.empty()) options.only.push_back(variant->name);
    Runner runner(registry(), environment, options);
    for (const Row& row : runner.run(ops[k], problems[k])) {
      if (row.status == Status::skipped) continue;  // managed rungs on a device without migration
      EXPECT_EQ(row.status, Status::ok) << ops[k] << " " << row.name << ": " << row.note;
      EXPECT_GE(row.reps, 3) << ops[k] << " " << row.name;
      EXPECT_GT(row.median_ms, 0) << ops[k] << " " << row.name;
    }
  }
}

TEST_F(ConstantMemoryLadder, EveryRungSumsTheTableExactlyAtAwkwardSizes) {
  std::uint64_t seed = 9000;
  for (const std::int64_t n :
       {std::int64_t(1), std::int64_t(31), std::int64_t(33), std::int64_t(1000), std::int64_t(4097),
        (std::int64_t(1) << 20) + 7}) {
    ConstantMemoryWorkspace workspace(n);
    expect_every_rung_validates("constant-memory", resolved("constant-memory", n), workspace, seed);
  }
}

TEST_F(SharedMemoryLadder, EveryRungSumsItsWordsExactlyAtAwkwardSizes) {
  std::uint64_t seed = 9100;
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(255), std::int64_t(257),
                               std::int64_t(5000), (std::int64_t(1) << 18) + 3}) {
    SharedMemoryWorkspace workspace(n);
    expect_every_rung_validates("shared-memory", resolved("shared-memory", n), workspace, seed);
  }
}

TEST_F(SharedMemoryLadder, NotesGiveTheConflictDegreeAndTheCeilingModel) {
  const std::map<std::string, std::string> conflicts{
      {"chunks-16B", "conflict-free"},        {"stride-1", "conflict-free"},
      {"stride-2", "2-way bank conflicts"},   {"stride-4", "4-way bank conflicts"},
      {"stride-8", "8-way bank conflicts"},   {"stride-16", "16-way bank conflicts"},
      {"stride-32", "32-way bank conflicts"}, {"stride-33", "conflict-free"}};
  SharedMemoryWorkspace workspace(4096);
  workspace.refill(1);
  for (const Variant* variant : registry().variants("shared-memory")) {
    if (!variant->note) continue;
    variant->run(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const std::string note = variant->note(workspace);
    ASSERT_EQ(conflicts.count(variant->name), 1u) << variant->name;
    EXPECT_NE(note.find(conflicts.at(variant->name)), std::string::npos)
        << variant->name << ": " << note;
    EXPECT_NE(note.find("shared-memory ceiling (model)"), std::string::npos) << note;
  }
}

TEST_F(MemoryLatencyLadder, EveryChainEndsWhereTheHostWalkEnds) {
  std::uint64_t seed = 9200;
  for (const std::int64_t steps : {std::int64_t(1), std::int64_t(1000), std::int64_t(20011)}) {
    MemoryLatencyWorkspace workspace(steps);
    expect_every_rung_validates("memory-latency", resolved("memory-latency", steps), workspace,
                                seed);
  }
}

// A run that did not walk fails the check, also at --n's default 2^16 loads: every chain is an odd
// number of lines, so a power-of-two walk never ends on the node it began from.
TEST_F(MemoryLatencyLadder, ARunThatDidNotWalkFailsTheCheck) {
  const std::int64_t steps = std::int64_t(1) << 16;
  const Problem problem = resolved("memory-latency", steps);
  MemoryLatencyWorkspace workspace(steps);
  for (const Variant* variant : registry().variants("memory-latency")) {
    if (skipped_at(*variant, problem)) continue;
    workspace.refill(41);
    variant->prepare(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    ++(variant->where == Where::gpu ? workspace.walks : workspace.host_walks);  // counted, not run
    const Check check = workspace.check(variant->where);
    EXPECT_FALSE(check.passed) << variant->name << ": " << check.detail;
  }
}

TEST_F(MemoryLatencyLadder, RepeatedRunsContinueTheWalkAndStillCheck) {
  const Problem problem = resolved("memory-latency", 777);
  MemoryLatencyWorkspace workspace(777);
  for (const Variant* variant : registry().variants("memory-latency")) {
    if (skipped_at(*variant, problem)) continue;
    workspace.refill(31);
    for (int run = 0; run < 3; ++run) {
      variant->prepare(workspace, nullptr);  // builds once, then leaves the walk where it is
      variant->run(workspace, nullptr);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const Check check = workspace.check(variant->where);
    EXPECT_TRUE(check.passed) << variant->name << ": " << check.detail;
    EXPECT_EQ(variant->where == Where::gpu ? workspace.walks : workspace.host_walks, 3)
        << variant->name;
  }
}

TEST_F(MemoryLatencyLadder, NotesGiveCyclesAndNanosecondsPerLoad) {
  const Problem problem = resolved("memory-latency", 4096);
  MemoryLatencyWorkspace workspace(4096);
  for (const Variant* variant : registry().variants("memory-latency")) {
    if (skipped_at(*variant, problem)) continue;
    workspace.refill(5);
    variant->prepare(workspace, nullptr);
    variant->run(workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const std::string note = variant->note(workspace);
    EXPECT_NE(note.find("ns per load"), std::string::npos) << variant->name << ": " << note;
    if (variant->where == Where::cpu) continue;
    EXPECT_NE(note.find("cycles"), std::string::npos) << variant->name << ": " << note;
    const std::vector<unsigned long long> clocks = workspace.clocks.download();
    EXPECT_GT(clocks[0], 0u) << variant->name;
    EXPECT_GT(clocks[1], 0u) << variant->name;
  }
}

TEST_F(SynchronizationLadder, EveryRungCountsExactlyAtAwkwardSizes) {
  std::uint64_t seed = 9300;
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(255), std::int64_t(256),
                               std::int64_t(257), std::int64_t(100003), std::int64_t(1) << 20}) {
    SynchronizationWorkspace workspace(n);
    expect_every_rung_validates("synchronization", resolved("synchronization", n), workspace, seed);
  }
}

TEST_F(SynchronizationLadder, EveryRungCountsExactlyRunAfterRunOverManyBlocks) {
  // 4096 blocks meeting at one counter, five runs each: a lost update or a stale partial would
  // show as a wrong count in one of them.
  const std::int64_t n = std::int64_t(1) << 20;
  SynchronizationWorkspace workspace(n);
  for (const Variant* variant : registry().variants("synchronization")) {
    if (variant->where != Where::gpu) continue;
    workspace.refill(41);
    for (int run = 0; run < 5; ++run) {
      variant->run(workspace, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
      const Check check = workspace.check(Where::gpu);
      EXPECT_TRUE(check.passed) << variant->name << " run " << run << ": " << check.detail;
    }
  }
}

TEST_F(MemcpySyncLadder, BothRungsDeliverTheSumToTheHostAndRecordTheirReading) {
  std::uint64_t seed = 9400;
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(1000), (std::int64_t(1) << 20) + 1}) {
    MemcpySyncWorkspace workspace(n);
    expect_every_rung_validates("memcpy-sync", resolved("memcpy-sync", n), workspace, seed);
    for (const Variant* variant : registry().variants("memcpy-sync")) {
      workspace.refill(seed++);
      variant->run(workspace, nullptr);
      ASSERT_EQ(workspace.self_ms.size(), 1u) << variant->name;
      EXPECT_GE(workspace.self_ms[0], 0) << variant->name;
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // a refused read leaves nothing behind
}

TEST_F(MemcpySyncLadder, AfterTheBlockingCopyTheStopEventIsAlwaysComplete) {
  MemcpySyncWorkspace workspace(std::int64_t(1) << 22);
  workspace.refill(3);
  const Variant& after = rung("memcpy-sync", "read-after-memcpy");
  for (int run = 0; run < 20; ++run) after.run(workspace, nullptr);
  EXPECT_EQ(workspace.not_ready, 0);
  for (const double ms : workspace.self_ms) EXPECT_GT(ms, 0);
  EXPECT_EQ(cudaEventQuery(workspace.stop), cudaSuccess);
}

TEST_F(PageableAccessLadder, EveryRungThatCanRunCopiesEveryWordAtAwkwardSizes) {
  std::uint64_t seed = 9500;
  for (const std::int64_t bytes :
       {std::int64_t(4), std::int64_t(12), std::int64_t(4100), (std::int64_t(1) << 20) + 12}) {
    TransferWorkspace workspace(bytes);
    expect_every_rung_validates("pageable-access", resolved("pageable-access", bytes), workspace,
                                seed);
  }
}

TEST_F(PageableAccessLadder, ThePageableRungRunsExactlyWhereTheAttributeSaysSo) {
  const PageableAccess access = pageable_access();
  ASSERT_TRUE(access.queried);
  const std::string limit = rung("pageable-access", "pageable-kernel-read").limit(Problem{});
  EXPECT_EQ(limit.empty(), access.pageable_memory_access == 1) << limit;
  if (!limit.empty())
    EXPECT_NE(limit.find("cudaDevAttrPageableMemoryAccess = 0"), std::string::npos) << limit;
  EXPECT_TRUE(rung("pageable-access", "pinned-kernel-read").limit(Problem{}).empty());
}

// Threads below `split` pass the barrier first and write after it; the others write first and pass
// the barrier after. Warp 1 of a 64-thread block splits at 48, so that warp's lanes meet
// __syncthreads at two different places: a barrier in divergent code. Every thread still reaches
// exactly one barrier, and since Volta a barrier counts threads rather than warps, so the block
// completes. compute-sanitizer --tool synccheck reports it as a barrier error (divergent threads):
// the test is named *ByDesign* and belongs outside sanitizer runs (ROOFLAB_SANITIZER_EXCLUDE).
__global__ void barrier_in_divergent_branch(int split, int* branch_taken) {
  const int t = int(threadIdx.x);
  if (t < split) {
    __syncthreads();
    branch_taken[t] = 1;
  } else {
    branch_taken[t] = 2;
    __syncthreads();
  }
}

TEST_F(DivergentBarrierByDesign, EveryThreadPassesOneBarrierAtOneOfTwoPlacesAndTheBlockFinishes) {
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
  if (props.major < 7)
    GTEST_SKIP() << "before Volta a barrier counts warps: the divergent warp could hang";
  constexpr int threads = 64, split = 48;
  DeviceBuffer<int> branch_taken(threads);
  branch_taken.fill_bytes(0);
  barrier_in_divergent_branch<<<1, threads>>>(split, branch_taken.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> taken = branch_taken.download();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(taken[t], t < split ? 1 : 2) << "thread " << t;
}

// The memory experiments through the runner at small sizes, as `rooflab bench` runs them: every
// row validated and timed, or skipped saying why (the pageable rung where the system lacks it).
TEST_F(LabRunner, EveryMemoryExperimentValidatesAndTimesThroughTheRunner) {
  const Environment environment = testing::environment_without_ceilings();
  const std::vector<std::string> ops{"constant-memory", "shared-memory", "memory-latency",
                                     "synchronization", "memcpy-sync",   "pageable-access"};
  const std::vector<Problem> problems{
      resolved("constant-memory", 5000), resolved("shared-memory", 5000),
      resolved("memory-latency", 5000),  resolved("synchronization", 5000),
      resolved("memcpy-sync", 5000),     resolved("pageable-access", std::int64_t(1) << 20)};
  for (std::size_t k = 0; k < ops.size(); ++k) {
    RunOptions options;
    options.reps = 3;
    options.warmup = 1;
    Runner runner(registry(), environment, options);
    for (const Row& row : runner.run(ops[k], problems[k])) {
      if (row.status == Status::skipped) {
        EXPECT_FALSE(row.note.empty()) << ops[k] << " " << row.name;
        continue;
      }
      EXPECT_EQ(row.status, Status::ok) << ops[k] << " " << row.name << ": " << row.note;
      EXPECT_GE(row.reps, 3) << ops[k] << " " << row.name;
      EXPECT_GT(row.median_ms, 0) << ops[k] << " " << row.name;
    }
  }
}

}  // namespace
}  // namespace rooflab::bench
