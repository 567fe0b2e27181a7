// The svd and svd-batched workspace: the device holds exactly the matrices the host checks
// against, for every input class, and the check looks at every matrix of a batch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/random_stream.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "gpu_test.hpp"
#include "svd/svd_workspace.hpp"

namespace rooflab::bench {
namespace {

class SvdWorkspaceTest : public testing::GpuTest {};

template <class T>
void expect_device_holds_host_matrices(const std::string& matrix_class, std::uint64_t seed) {
  constexpr int m = 5, n = 3, batch = 9;
  SvdWorkspace<T> workspace(m, n, batch, matrix_class);
  workspace.refill(seed);
  const std::vector<T> device = workspace.a.download();
  for (int b = 0; b < batch; ++b) {
    const cpu::Matrix host = workspace.host_matrix(b);
    for (std::size_t e = 0; e < host.values.size(); ++e)
      ASSERT_EQ(double(device[std::size_t(b) * m * n + e]), host.values[e])
          << matrix_class << " matrix " << b << " element " << e;
  }
}

TEST_F(SvdWorkspaceTest, DeviceHoldsExactlyTheHostMatrixOfEveryClass) {
  for (const cpu::SvdMatrixClass& matrix_class : cpu::svd_matrix_classes()) {
    expect_device_holds_host_matrices<float>(matrix_class.name, 3);
    expect_device_holds_host_matrices<double>(matrix_class.name, 4);
  }
}

TEST_F(SvdWorkspaceTest, RandomClassIsTheDeviceFillOfTheWholeBatch) {
  SvdWorkspace<float> workspace(7, 6, 5, "random");
  workspace.refill(12);
  const std::vector<float> device = workspace.a.download();
  for (std::size_t i = 0; i < device.size(); ++i) ASSERT_EQ(device[i], random_float(12, i)) << i;
}

TEST_F(SvdWorkspaceTest, RefillDrawsTheSeedsBatchAgainAndAnotherSeedsAnew) {
  SvdWorkspace<double> workspace(6, 6, 4, "mode3");
  workspace.refill(5);
  const std::vector<double> first = workspace.a.download();
  workspace.refill(6);
  EXPECT_NE(workspace.a.download(), first);
  workspace.refill(5);
  EXPECT_EQ(workspace.a.download(), first);
}

// LAPACK's SVD of every matrix of the batch into S, U and V on the device.
template <class T>
void upload_lapack_svds(SvdWorkspace<T>& workspace) {
  std::vector<T> s, u, v;
  for (int b = 0; b < workspace.batch; ++b) {
    const cpu::Svd svd = cpu::lapack_svd(workspace.host_matrix(b));
    s.insert(s.end(), svd.s.begin(), svd.s.end());
    u.insert(u.end(), svd.u.values.begin(), svd.u.values.end());
    v.insert(v.end(), svd.v.values.begin(), svd.v.values.end());
  }
  workspace.s.upload(s);
  workspace.u.upload(u);
  workspace.v.upload(v);
}

TEST_F(SvdWorkspaceTest, CheckLooksAtEveryMatrixOfTheBatch) {
  // 211 is none of the 64 evenly spread matrices (0, 4, ..., 208, 213, ..., 299) checked before.
  SvdWorkspace<float> workspace(6, 4, 300, "mixed");
  workspace.refill(8);
  upload_lapack_svds(workspace);
  const Check correct = workspace.check(Where::gpu);
  EXPECT_TRUE(correct.passed) << correct.detail;
  EXPECT_NE(correct.detail.find("all 300 matrices checked"), std::string::npos) << correct.detail;

  std::vector<float> s = workspace.s.download();
  s[211 * 4 + 1] *= 1.01f;
  workspace.s.upload(s);
  const Check wrong = workspace.check(Where::gpu);
  EXPECT_FALSE(wrong.passed);
  EXPECT_NE(wrong.detail.find("matrix 211:"), std::string::npos) << wrong.detail;
}

}  // namespace
}  // namespace rooflab::bench
