// The Jacobi rotation's device arithmetic (src/svd/jacobi_math.hpp) against the host's: the
// binade scale read off the exponent words is frexp's, rsqrt_of_normal is bit for bit the
// library's rsqrt and within an ulp of 1/sqrt, and the device's rotations make random pairs of
// columns orthogonal and agree with the host's to a few ulps.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gpu_test.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/device_buffer.hpp"
#include "svd/jacobi_math.hpp"

namespace rooflab::jacobi {
namespace {

class SvdRotation : public testing::GpuTest {};

struct PairInput {
  double alpha, beta, gamma;  // two columns' squared norms and dot product
  double root_argument;       // a positive normal number for rsqrt_of_normal
};

struct DeviceOutput {
  double scale, root, library_root, c, s, t, cosine;
  int rotated;
};

__global__ void evaluate_rotations(const PairInput* in, int count, double tol, DeviceOutput* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const PairInput p = in[i];
  DeviceOutput o;
  o.scale = binade_scale(p.alpha, p.beta);
  o.root = rsqrt_of_normal(p.root_argument);
  o.library_root = rsqrt(p.root_argument);
  Rotation<double> r;
  o.rotated = jacobi_rotation(p.alpha, p.beta, p.gamma, tol, r, o.cosine);
  o.c = r.c;
  o.s = r.s;
  o.t = r.t;
  out[i] = o;
}

std::int64_t bits_of(double x) {
  std::int64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Pairs of correlated random columns of 40 rows (their sums in long double), spread over many
// binades, with equal norms, orthogonal and nearly parallel ones among them; arguments for
// the reciprocal root from 2^-1000 to 2^1000.
std::vector<PairInput> random_pairs(int count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-1000, 1000), magnitude(-60, 60);
  std::vector<PairInput> pairs(count);
  for (int k = 0; k < count; ++k) {
    const double p_scale = std::ldexp(1.0, magnitude(random)),
                 q_scale = std::ldexp(1.0, magnitude(random));
    const double mix = k % 7 == 0 ? 0.0 : (k % 11 == 0 ? 1e6 : normal(random));
    long double alpha = 0, beta = 0, gamma = 0;
    for (int row = 0; row < 40; ++row) {
      const double a = normal(random), b = normal(random);
      const long double p = p_scale * a, q = q_scale * (b + mix * a);
      alpha += p * p;
      beta += q * q;
      gamma += p * q;
    }
    PairInput& pair = pairs[k];
    pair.alpha = double(alpha);
    pair.beta = double(beta);
    pair.gamma = k % 17 == 0 ? 0.0 : double(gamma);
    if (k % 13 == 0) {  // equal norms (tau = 0, a rotation by 45 degrees), still a Gram matrix
      pair.beta = pair.alpha;
      pair.gamma = std::copysign(0.5 * pair.alpha, pair.gamma);
    }
    pair.root_argument = std::ldexp(unit(random), exponent(random));
  }
  return pairs;
}

TEST_F(SvdRotation, DeviceArithmeticMatchesTheHostAndTheLibrary) {
  constexpr int count = 1 << 16;
  const double eps = std::numeric_limits<double>::epsilon();
  const double tol = std::sqrt(40.0) * eps;
  const std::vector<PairInput> pairs = random_pairs(count, 20261124);
  DeviceBuffer<PairInput> in(pairs);
  DeviceBuffer<DeviceOutput> out(count);
  out.fill_bytes(0xff);  // poisoned: every field must be written
  evaluate_rotations<<<(count + 255) / 256, 256>>>(in.data(), count, tol, out.data());
  detail::check_launch("test", "evaluate_rotations");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<DeviceOutput> results = out.download();

  int rotated = 0;
  for (int k = 0; k < count; ++k) {
    const PairInput& p = pairs[k];
    const DeviceOutput& d = results[k];
    EXPECT_EQ(d.scale, binade_scale(p.alpha, p.beta)) << k;
    EXPECT_EQ(bits_of(d.root), bits_of(d.library_root)) << "x = " << p.root_argument;
    // Within an ulp of 1/sqrt(x) (the library's documented bound), measured in long double.
    const long double exact = 1.0L / std::sqrt(static_cast<long double>(p.root_argument));
    const long double ulp = std::ldexp(1.0L, std::ilogb(d.root) - 52);
    EXPECT_LE(std::abs(static_cast<long double>(d.root) - exact), ulp) << "x = " << p.root_argument;

    Rotation<double> host;
    double host_cosine = 0;
    const bool host_rotated = jacobi_rotation(p.alpha, p.beta, p.gamma, tol, host, host_cosine);
    EXPECT_NEAR(d.cosine, host_cosine, 4 * eps * host_cosine + 1e-300) << k;
    if (std::abs(host_cosine - tol) > 1e-3 * tol) ASSERT_EQ(d.rotated != 0, host_rotated) << k;
    if (!d.rotated) {
      EXPECT_EQ(d.c, 1.0) << k;
      EXPECT_EQ(d.s, 0.0) << k;
      continue;
    }
    ++rotated;
    // rsqrt against 1 / sqrt: each within an ulp or two of the exact (c, s, t).
    EXPECT_NEAR(d.c, host.c, 10 * eps) << k;
    EXPECT_NEAR(d.s, host.s, 10 * eps) << k;
    EXPECT_NEAR(d.t, host.t, 16 * eps * (1 + std::abs(host.t))) << k;
    const long double c = d.c, s = d.s;
    EXPECT_LE(std::abs(double(c * c + s * s - 1)), 4 * eps) << k;
    // p <- c p - s q, q <- s p + c q leaves the pair's dot product c s (alpha - beta) + (c^2 - s^2)
    // gamma.
    const long double after =
        c * s * (static_cast<long double>(p.alpha) - p.beta) + (c * c - s * s) * p.gamma;
    EXPECT_LE(std::abs(double(after)), 8 * eps * std::sqrt(p.alpha * p.beta)) << k;
  }
  EXPECT_GT(rotated, count / 2);  // most pairs are far from orthogonal
}

}  // namespace
}  // namespace rooflab::jacobi
