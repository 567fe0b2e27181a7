// `rooflab svd --in A.npy --out PREFIX`: the factors it writes reproduce the matrix, for a C-order
// float64 matrix and a Fortran-order float32 stack. Needs a GPU (skips without one); it lives with
// the CPU tests because the commands are linked there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../gpu/gpu_test.hpp"
#include "apps/rooflab/commands.hpp"
#include "core/random_stream.hpp"
#include "cpu/npy.hpp"
#include "scratch_directory.hpp"

namespace rooflab {
namespace {

class SvdCommand : public testing::GpuTest {
 protected:
  std::string path(const std::string& name) const { return scratch_.file(name); }

 private:
  const ScratchDirectory scratch_{"rooflab_svd_command"};
};

// max |A(b, i, j) - sum_l U(b, i, l) S(b, l) V(b, j, l)| with every array in C order.
double reconstruction_error(const std::vector<double>& a, const cpu::NpyArray& s,
                            const cpu::NpyArray& u, const cpu::NpyArray& v, int batch, int m,
                            int n) {
  const int k = std::min(m, n);
  double worst = 0;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double usv = 0;
        for (int l = 0; l < k; ++l)
          usv += u.at((std::int64_t(b) * m + i) * k + l) * s.at(std::int64_t(b) * k + l) *
                 v.at((std::int64_t(b) * n + j) * k + l);
        worst = std::max(worst, std::abs(a[(std::size_t(b) * m + i) * n + j] - usv));
      }
  return worst;
}

TEST_F(SvdCommand, FactorsOfACOrderMatrixReproduceIt) {
  const int m = 5, n = 3;
  std::vector<double> a(m * n);  // C order
  for (int e = 0; e < m * n; ++e) a[e] = bench::random_double(3, e);
  cpu::write_npy(path("a.npy"), {m, n}, cpu::NpyType::float64, a);
  std::ostringstream out;
  EXPECT_EQ(app::svd_command(out, path("a.npy"), path("f")), 0) << out.str();
  EXPECT_NE(out.str().find("converged"), std::string::npos) << out.str();
  const cpu::NpyArray s = cpu::read_npy(path("f_S.npy")), u = cpu::read_npy(path("f_U.npy")),
                      v = cpu::read_npy(path("f_V.npy"));
  EXPECT_EQ(s.shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(u.shape, (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(v.shape, (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(s.type, cpu::NpyType::float64);
  EXPECT_LT(reconstruction_error(a, s, u, v, 1, m, n), 1e-14);
}

TEST_F(SvdCommand, FactorsOfAFortranOrderFloatStackReproduceIt) {
  const int batch = 4, m = 3, n = 6;
  std::vector<double> c_order(batch * m * n);
  for (std::size_t e = 0; e < c_order.size(); ++e) c_order[e] = bench::random_float(4, e);
  // The same stack in Fortran order: element (b, i, j) at b + batch * (i + m * j).
  std::vector<float> fortran(c_order.size());
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        fortran[b + batch * (i + m * j)] = float(c_order[(b * m + i) * n + j]);
  {
    const std::string header = "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 3, 6), }";
    const std::size_t length = (10 + header.size() + 1 + 63) / 64 * 64 - 10;
    std::string bytes =
        std::string("\x93NUMPY\x01\x00", 8) + char(length & 255) + char(length >> 8) + header;
    bytes.append(length - header.size() - 1, ' ');
    bytes += '\n';
    bytes.append(reinterpret_cast<const char*>(fortran.data()), fortran.size() * sizeof(float));
    std::ofstream(path("stack.npy"), std::ios::binary)
        .write(bytes.data(), std::streamsize(bytes.size()));
  }
  std::ostringstream out;
  EXPECT_EQ(app::svd_command(out, path("stack.npy"), path("g")), 0) << out.str();
  const cpu::NpyArray s = cpu::read_npy(path("g_S.npy")), u = cpu::read_npy(path("g_U.npy")),
                      v = cpu::read_npy(path("g_V.npy"));
  EXPECT_EQ(s.shape, (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(u.shape, (std::vector<std::int64_t>{4, 3, 3}));
  EXPECT_EQ(v.shape, (std::vector<std::int64_t>{4, 6, 3}));
  EXPECT_EQ(u.type, cpu::NpyType::float32);
  EXPECT_LT(reconstruction_error(c_order, s, u, v, batch, m, n), 1e-5);
}

}  // namespace
}  // namespace rooflab
