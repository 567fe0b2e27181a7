// Paper 004's ladder: every rung converges to LAPACK's eigenvalues, the device rungs agree bit for
// bit whatever their launch shape, loop step or carveout, a run stopped at its sweep limit fails,
// and the harness skips the rungs of other tables.
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/runner.hpp"
#include "gpu_test.hpp"
#include "svd_paper/svd_paper_workspace.hpp"

namespace rooflab::bench {
namespace {

class SvdPaperLadder : public testing::GpuTest {
 protected:
  void SetUp() override {
    testing::GpuTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // One validated run, on a non-blocking stream like the harness's.
  Check run_and_check(const Variant& variant, SvdPaperWorkspace& workspace, std::uint64_t seed) {
    workspace.refill(seed);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    variant.run(workspace, stream_);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << variant.name;
    return workspace.check(variant.where);
  }

  cudaStream_t stream_ = nullptr;
};

class SvdPaperHarness : public testing::GpuTest {};

// Few and small runs that reach every kernel of the paper's rungs, named apart from SvdPaper* so
// that the sanitizer runs, which leave the long SvdPaper* tests out, still cover each kernel.
class PaperJacobiKernels : public SvdPaperLadder {};

const Variant& svd_paper_rung(const std::string& name) {
  for (const Variant* variant : registry().variants("svd-paper"))
    if (variant->name == name) return *variant;
  throw std::runtime_error("no svd-paper rung " + name);
}

std::vector<const Variant*> device_loop_rungs() {  // P2 to P6: the rotation set up on the device
  std::vector<const Variant*> rungs;
  for (const Variant* variant : registry().variants("svd-paper"))
    if (variant->where == Where::gpu && !variant->vendor && variant->rung >= 2)
      rungs.push_back(variant);
  return rungs;
}

TEST_F(SvdPaperLadder, EveryRungMatchesLapackAtSmallSizes) {
  std::uint64_t seed = 4000;
  for (const int n : {1, 2, 8, 25, 33}) {
    SvdPaperWorkspace workspace(n);
    for (const Variant* variant : registry().variants("svd-paper")) {
      const Check check = run_and_check(*variant, workspace, seed);
      EXPECT_TRUE(check.passed) << variant->name << " n=" << n << " seed=" << seed << ": "
                                << check.detail;
      EXPECT_LE(check.error, SvdPaperWorkspace::tolerance) << variant->name << " n=" << n;
      ++seed;
    }
  }
}

TEST_F(SvdPaperLadder, DeviceRungsGiveTheSameBitsWhateverShapeStepOrCarveout) {
  const int n = 20;
  const std::uint64_t seed = 4100;
  SvdPaperWorkspace workspace(n);
  const std::vector<const Variant*> rungs = device_loop_rungs();
  ASSERT_EQ(rungs.size(), 13u);  // P2, P3, six shapes, two steps, three carveouts
  std::vector<double> first_values, first_vectors;
  for (const Variant* variant : rungs) {
    const Check check = run_and_check(*variant, workspace, seed);
    ASSERT_TRUE(check.passed) << variant->name << " seed=" << seed << ": " << check.detail;
    const std::vector<double> values = workspace.values.download();
    const std::vector<double> vectors = workspace.vectors.download();
    if (first_values.empty()) {
      first_values = values;
      first_vectors = vectors;
      continue;
    }
    EXPECT_EQ(values, first_values) << variant->name << " differs from " << rungs.front()->name;
    EXPECT_EQ(vectors, first_vectors) << variant->name << " differs from " << rungs.front()->name;
  }
}

// With 256 threads a quarter has 64 lanes: only beyond n = 64 does step 1 give a thread more than
// one output, so the loop steps are compared (and validated) there. This input is also one where
// rounding leaves a single a_kj above the threshold beside its a_jk below it (see
// cpu::pair_above_threshold): before pairs were tested on both elements, it never converged.
TEST_F(SvdPaperLadder, LoopStepsAgreeWhenEachThreadTakesSeveralOutputs) {
  const int n = 67;
  const std::uint64_t seed = 4200;
  SvdPaperWorkspace workspace(n);
  std::vector<std::vector<double>> values;
  for (const Variant* variant : registry().variants("svd-paper")) {
    if (variant->name != "step-1" && variant->name != "step-threads") continue;
    const Check check = run_and_check(*variant, workspace, seed);
    EXPECT_TRUE(check.passed) << variant->name << " seed=" << seed << ": " << check.detail;
    values.push_back(workspace.values.download());
  }
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], values[1]);
}

// n = 9: on 32 threads a quarter has 8 lanes, so lane 0 takes outputs 0 and 8. managed-host runs
// the products on host-written managed memory; threads-4x32 puts each quarter in its own block;
// step-1 runs the other kernels (identity fill, set-up, convergence test, column sums) and the
// contiguous-chunk product on 256 threads.
TEST_F(PaperJacobiKernels, EveryKernelMatchesLapackOnASmallMatrix) {
  const int n = 9;
  std::uint64_t seed = 4500;
  SvdPaperWorkspace workspace(n);
  for (const char* name : {"managed-host", "threads-4x32", "step-1"}) {
    const Check check = run_and_check(svd_paper_rung(name), workspace, seed);
    EXPECT_TRUE(check.passed) << name << " n=" << n << " seed=" << seed << ": " << check.detail;
    ++seed;
  }
}

// n = 65 on 256 threads: step 1 gives lane 0 outputs 0 and 1, step = threads outputs 0 and 64.
// One sweep (about 2000 rotations) keeps the run short; it fails the check for not converging,
// but every output is written and both steps must give the same bits.
TEST_F(PaperJacobiKernels, LoopStepsGiveTheSameBitsAfterASweepWithTwoOutputsPerThread) {
  const int n = 65;
  const std::uint64_t seed = 4600;
  SvdPaperWorkspace workspace(n);
  workspace.max_sweeps = 1;
  std::vector<std::vector<double>> values, vectors;
  for (const char* name : {"step-1", "step-threads"}) {
    const Check check = run_and_check(svd_paper_rung(name), workspace, seed);
    EXPECT_FALSE(check.passed) << name << " converged in one sweep at n=" << n;
    EXPECT_NE(check.detail.find("not converged"), std::string::npos)
        << name << ": " << check.detail;
    EXPECT_EQ(workspace.sweeps, 1) << name;
    values.push_back(workspace.values.download());
    vectors.push_back(workspace.vectors.download());
    for (const double value : values.back()) ASSERT_FALSE(std::isnan(value)) << name;
    for (const double value : vectors.back()) ASSERT_FALSE(std::isnan(value)) << name;
  }
  EXPECT_EQ(values[0], values[1]) << "seed=" << seed;
  EXPECT_EQ(vectors[0], vectors[1]) << "seed=" << seed;
}

TEST_F(SvdPaperLadder, EveryIterativeRungStoppedAtItsSweepLimitFailsTheCheck) {
  const int n = 40;  // above 32, where a vendor might switch to a small-matrix path
  SvdPaperWorkspace workspace(n);
  std::uint64_t seed = 4300;
  for (const Variant* variant : registry().variants("svd-paper")) {
    if (variant->name == "lapack-dsyev") continue;  // no sweeps: LAPACK's own reference call
    workspace.max_sweeps = 1;  // refill keeps it: a property of the problem, not of a run
    const Check check = run_and_check(*variant, workspace, seed);
    EXPECT_FALSE(check.passed) << variant->name << " seed=" << seed << " passed after one sweep";
    EXPECT_NE(check.detail.find("converge"), std::string::npos)
        << variant->name << ": " << check.detail;
    ++seed;
  }
}

TEST_F(SvdPaperLadder, UnrunWorkspaceFailsTheCheck) {
  SvdPaperWorkspace workspace(9);
  workspace.refill(4400);
  for (const Where where : {Where::gpu, Where::cpu}) {
    workspace.convergence = Convergence::unreported;
    Check check = workspace.check(where);
    EXPECT_FALSE(check.passed);
    EXPECT_NE(check.detail.find("no convergence"), std::string::npos) << check.detail;
    workspace.convergence = Convergence::converged;  // a rung that claims success but wrote nothing
    check = workspace.check(where);
    EXPECT_FALSE(check.passed);
    EXPECT_NE(check.detail.find("NaN"), std::string::npos) << check.detail;
  }
}

TEST_F(SvdPaperHarness, RunsTheRungsOfTheTableAndSkipsTheOthersSayingWhy) {
  const Environment environment = testing::environment_without_ceilings();
  RunOptions options;
  options.reps = 3;
  options.warmup = 0;
  options.only = {"cpu", "device-malloc", "threads-4x32", "cusolver-syevj"};
  Runner runner(registry(), environment, options);
  Problem problem;
  problem.n = 25;  // Tables 1 and 2
  const auto rows = runner.run("svd-paper", problem);
  ASSERT_EQ(rows.size(), 4u);
  for (const Row& row : rows) {
    if (row.name == "threads-4x32") {
      EXPECT_EQ(row.status, Status::skipped);
      EXPECT_NE(row.note.find("belongs to Table 3"), std::string::npos) << row.note;
    } else {
      EXPECT_EQ(row.status, Status::ok) << row.name << ": " << row.note;
      EXPECT_GT(row.median_ms, 0) << row.name;
    }
  }
}

}  // namespace
}  // namespace rooflab::bench
