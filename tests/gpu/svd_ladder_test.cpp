// The svd and svd-batched ladders: every rung of ours passes the workspace's check (LAPACK's SVD
// tests) at small, odd and rectangular sizes; cuSOLVER's comparators are run too and their
// outcome printed (a vendor's accuracy is reported, not required).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "bench/registry.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "gpu_test.hpp"

namespace rooflab::bench {
namespace {

class SvdLadder : public testing::GpuTest {};

void expect_every_rung_passes(const std::string& op, Problem problem, std::uint64_t seed) {
  const Op& definition = registry().op(op);
  problem = definition.resolve(problem);
  const auto workspace = definition.make_workspace(problem);
  for (const Variant* variant : registry().variants(op)) {
    const std::string why_not = variant->limit ? variant->limit(problem) : std::string();
    if (!why_not.empty()) continue;
    workspace->refill(seed++);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    variant->run(*workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << variant->name;
    const Check check = workspace->check(variant->where);
    if (variant->vendor)
      std::cout << op << " " << definition.describe(problem) << " " << variant->name << ": "
                << (check.passed ? "passes" : "fails") << " (" << check.detail << ")\n";
    else
      EXPECT_TRUE(check.passed) << op << " " << definition.describe(problem) << " " << variant->name
                                << " seed " << seed - 1 << ": " << check.detail;
  }
}

Problem sized(std::int64_t m, std::int64_t n, std::int64_t batch, const char* dtype) {
  Problem problem;
  problem.m = m;
  problem.n = n;
  problem.batch = batch;
  problem.dtype = dtype;
  return problem;
}

TEST_F(SvdLadder, EverySvdRungPassesLapackTests) {
  expect_every_rung_passes("svd", sized(25, 25, 0, "double"), 10);
  expect_every_rung_passes("svd", sized(33, 20, 0, "float"), 20);
  expect_every_rung_passes("svd", sized(20, 33, 0, "double"), 30);
  expect_every_rung_passes("svd", sized(130, 130, 0, "double"), 40);
}

// The library rung's note names its sweeps and, for one double matrix, LAPACK dgesvj's on the
// same matrix, the bar of the count (rank-1-integer: dgesvj runs out of sweeps; float: no note).
TEST_F(SvdLadder, LibraryRungNotesDgesvjSweepsOnTheSameDoubleMatrix) {
  const Op& definition = registry().op("svd");
  const Variant* library = nullptr;
  for (const Variant* variant : registry().variants("svd"))
    if (variant->name == "rooflab-svd") library = variant;
  ASSERT_NE(library, nullptr);
  const std::pair<const char*, const char*> cases[] = {
      {"random", "double"}, {"mode3", "double"}, {"rank-1-integer", "double"}, {"random", "float"}};
  for (const auto& [matrix_class, dtype] : cases) {
    Problem problem = sized(100, 100, 0, dtype);
    problem.matrix = matrix_class;
    problem = definition.resolve(problem);
    const auto workspace = definition.make_workspace(problem);
    workspace->refill(3);
    library->run(*workspace, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << matrix_class;
    const std::string note = library->note(*workspace);
    const std::string what = std::string(matrix_class) + " " + dtype + ": " + note;
    ASSERT_NE(note.find(" sweeps"), std::string::npos) << what;
    if (std::string(dtype) == "float") {
      EXPECT_EQ(note.find("dgesvj"), std::string::npos) << what;
      continue;
    }
    const cpu::JacobiSweeps lapack =
        cpu::lapack_jacobi_sweeps(cpu::svd_test_matrix<double>(matrix_class, 100, 100, 3));
    EXPECT_NE(note.find("; LAPACK dgesvj " + std::to_string(lapack.sweeps) +
                        (lapack.converged ? "" : ", not converged")),
              std::string::npos)
        << what;
    EXPECT_EQ(lapack.converged, std::string(matrix_class) != "rank-1-integer") << what;
  }
}

TEST_F(SvdLadder, EverySvdBatchedRungPassesLapackTests) {
  expect_every_rung_passes("svd-batched", sized(8, 8, 100, "float"), 50);
  expect_every_rung_passes("svd-batched", sized(20, 13, 50, "double"), 60);
  expect_every_rung_passes("svd-batched", sized(13, 20, 50, "float"), 70);
  expect_every_rung_passes("svd-batched", sized(64, 64, 10, "float"), 80);
  expect_every_rung_passes("svd-batched", sized(130, 120, 3, "double"), 90);
}

}  // namespace
}  // namespace rooflab::bench
