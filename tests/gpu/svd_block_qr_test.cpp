// The Householder QR in one block's shared memory (src/svd/block_qr.cu) against LAPACK's QR tests
// (dqrt01's ratios, <= 35): every SVD input class, scaled as the SVD hands W over (its largest
// entry in [1/2, 1)), columns of tiny, huge and subnormal entries, and shapes from 1 x 1 to tall
// ones and ones of more columns than the block has warps. Q is formed on the CPU, in long double, from
// the reflectors the GPU left; tau is poisoned with NaN first.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "gpu_test.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "svd/jacobi.hpp"

namespace rooflab {
namespace {

using Extended = long double;
constexpr double threshold = 35;  // LAPACK's bound on its test ratios

class BlockQr : public testing::GpuTest {};

// W scaled by a power of two so that its largest entry lies in [1/2, 1), as load_scaled hands it
// to the QR (a zero W as it is).
cpu::Matrix scaled_as_the_svd_does(cpu::Matrix w) {
  double largest = 0;
  for (const double x : w.values) largest = std::max(largest, std::fabs(x));
  if (largest == 0) return w;
  int exponent = 0;
  std::frexp(largest, &exponent);
  for (double& x : w.values) x = std::ldexp(x, -exponent);
  return w;
}

struct Factored {
  std::vector<double> w;    // geqrf's layout
  std::vector<double> tau;  // the reflectors' factors
};

template <class T>
Factored factor_on_gpu(const cpu::Matrix& w) {
  DeviceBuffer<T> device_w(std::vector<T>(w.values.begin(), w.values.end())), device_tau(w.n);
  device_tau.fill_bytes(0xFF);  // NaN
  jacobi::block_qr(device_w.data(), w.m, w.n, device_tau.data(), nullptr);
  ROOFLAB_CUDA("test", "the block QR", cudaDeviceSynchronize());
  const std::vector<T> factored = device_w.download(), tau = device_tau.download();
  return {std::vector<double>(factored.begin(), factored.end()),
          std::vector<double>(tau.begin(), tau.end())};
}

// Checks the factors of W (M x N, the type's values in double) as dqrt01 does: ||Q^T Q - I|| /
// (M eps) for Q's N columns and, per column j (Householder QR is backward stable column by
// column, which the graded classes rely on), ||w_j - Q r_j|| / (M eps ||w_j||), exactly 0 for a
// zero column. tau is 0 or in [1, 2], as LAPACK's dlarfg makes it.
void expect_backward_stable(const cpu::Matrix& w, const Factored& f, double eps,
                            const std::string& what) {
  const int M = w.m, N = w.n;
  for (int k = 0; k < N; ++k)
    ASSERT_TRUE(f.tau[k] == 0 || (f.tau[k] >= 1 && f.tau[k] <= 2))
        << what << ": tau[" << k << "] = " << f.tau[k];
  // Q = H_0 ... H_{N-1} [I; 0], applied to the identity's first N columns from H_{N-1} down.
  std::vector<Extended> q(std::size_t(M) * N, 0);
  for (int c = 0; c < N; ++c) q[c + std::size_t(c) * M] = 1;
  for (int k = N - 1; k >= 0; --k) {
    const Extended tau = f.tau[k];
    if (tau == 0) continue;
    for (int c = 0; c < N; ++c) {
      Extended* const column = &q[std::size_t(c) * M];
      Extended dot = column[k];
      for (int i = k + 1; i < M; ++i) dot += Extended(f.w[i + std::size_t(k) * M]) * column[i];
      column[k] -= tau * dot;
      for (int i = k + 1; i < M; ++i)
        column[i] -= tau * dot * Extended(f.w[i + std::size_t(k) * M]);
    }
  }
  double orthogonality = 0;
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < N; ++b) {
      Extended dot = 0;
      for (int i = 0; i < M; ++i) dot += q[i + std::size_t(a) * M] * q[i + std::size_t(b) * M];
      orthogonality = std::max(orthogonality, double(std::fabs(dot - (a == b ? 1 : 0))));
    }
  EXPECT_LE(orthogonality / (M * eps), threshold) << what << ": Q^T Q - I";
  for (int j = 0; j < N; ++j) {
    Extended residual2 = 0, norm2 = 0;
    for (int i = 0; i < M; ++i) {
      Extended qr = 0;
      for (int l = 0; l <= j; ++l) qr += q[i + std::size_t(l) * M] * f.w[l + std::size_t(j) * M];
      const Extended x = w(i, j);
      residual2 += (x - qr) * (x - qr);
      norm2 += x * x;
    }
    if (norm2 == 0)
      EXPECT_EQ(double(residual2), 0) << what << ": zero column " << j;
    else
      EXPECT_LE(double(std::sqrt(residual2 / norm2)) / (M * eps), threshold)
          << what << ": column " << j;
  }
}

template <class T>
void expect_every_class_factored(int m, int n) {
  if (!jacobi::block_qr_fits<T>(m, n)) {
    std::cout << "    " << m << " x " << n << " does not fit this device's block: not run\n";
    return;
  }
  const double eps = std::numeric_limits<T>::epsilon();
  for (const cpu::SvdMatrixClass& c : cpu::svd_matrix_classes()) {
    const cpu::Matrix w = scaled_as_the_svd_does(cpu::svd_test_matrix<T>(c.name, m, n, 7));
    const std::string what = std::string(c.name) + " " + std::to_string(m) + " x " +
                             std::to_string(n) + (sizeof(T) == 4 ? " float" : " double");
    expect_backward_stable(w, factor_on_gpu<T>(w), eps, what);
  }
}

// Shapes: a single entry, a column, square ones on both sides of the block's 32 warps (a warp
// owns columns k, k + 32, ...) and a tall one.
TEST_F(BlockQr, EveryMatrixClassPassesLapackQrTestsInBothPrecisions) {
  for (const auto& [m, n] : {std::pair{1, 1}, std::pair{9, 1}, std::pair{7, 3}, std::pair{32, 32},
                             std::pair{33, 33}, std::pair{70, 40}}) {
    expect_every_class_factored<double>(m, n);
    expect_every_class_factored<float>(m, n);
  }
}

// Larger shapes: square ones the second try hands the block, tall ones (columns of many rows a
// lane), and 150 x 150 in double (176 KB: within Hopper's opt-in of 227 KB, beyond A100's 163 KB;
// where it does not fit, the test says so).
TEST_F(BlockQr, LargeShapesPassLapackQrTestsInBothPrecisions) {
  for (const auto& [m, n] : {std::pair{100, 100}, std::pair{128, 128}, std::pair{160, 90},
                             std::pair{1000, 10}, std::pair{256, 64}, std::pair{150, 150}}) {
    expect_every_class_factored<double>(m, n);
    expect_every_class_factored<float>(m, n);
  }
}

// Columns whose entries' squares underflow (1e-200, and subnormal: 1e-309 in double) or overflow
// (1e300), a diagonal entry whose square overflows, and a column of zeros below its diagonal
// entry: the reflectors' norms are computed scaled, so every column still gets its reflector (in
// LAPACK's dgeqrf too).
TEST_F(BlockQr, TinyHugeAndSubnormalColumnsStillGetTheirReflectors) {
  const int m = 40, n = 8;
  cpu::Matrix w = scaled_as_the_svd_does(cpu::random_matrix(m, n, 11));
  for (int i = 0; i < m; ++i) {
    w(i, 1) *= 1e-200;
    w(i, 3) *= 1e-309;
    if (i > 4) w(i, 4) = 0;
    w(i, 5) *= 1e300;
  }
  w(7, 7) = 1e300;
  const Factored f = factor_on_gpu<double>(w);
  expect_backward_stable(w, f, std::numeric_limits<double>::epsilon(), "tiny columns");
  // LAPACK's R: the same diagonal up to signs.
  const cpu::ThinQr reference = cpu::householder_qr(w);
  for (int k = 0; k < n; ++k)
    EXPECT_NEAR(std::fabs(f.w[k + std::size_t(k) * m]), std::fabs(reference.r(k, k)),
                1e-9 * std::fabs(reference.r(k, k)))
        << "R[" << k << ", " << k << "]";
}

TEST_F(BlockQr, MatrixThatDoesNotFitIsAnError) {
  EXPECT_FALSE(jacobi::block_qr_fits<double>(3, 4));  // wide
  EXPECT_FALSE(jacobi::block_qr_fits<double>(4000, 1000));
  EXPECT_THROW(jacobi::block_qr<double>(nullptr, 4000, 1000, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace rooflab
