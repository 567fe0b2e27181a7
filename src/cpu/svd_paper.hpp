#pragma once
// The system of the Jacobi SVD paper (Bezruchenko & Egunov 2023) on the CPU: what the paper calls
// SVD by Jacobi's method is, as we read its listings, the cyclic Jacobi eigenvalue iteration for
// symmetric matrices. Column-major, like src/cpu/svd_reference.hpp.
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/svd_reference.hpp"

namespace rooflab::cpu {

// The off-diagonal threshold of the paper's iteration for this input: a pair (j, k) is rotated
// while |a_jk| or |a_kj| exceeds it, and the iteration stops when no off-diagonal element does. The
// paper names its threshold (offdiagonal_threshold) without printing its value; here it is 1e-13
// ||A||_F, a hundred times above the rounding floor of a rotation (a few ulps of the largest
// eigenvalue, which is at most ||A||_F), so the iteration always terminates, and low enough that
// the values read off the diagonal are accurate to about 1e-13 of the largest eigenvalue.
double paper_threshold(const Matrix& a);

// The rotation of pair (j, k), j < k: tau = (a_jj - a_kk) / (2 a_jk), t = sign(tau) / (|tau| +
// sqrt(1 + tau^2)), c = 1 / sqrt(1 + t^2), s = c t, as the paper sets them up (l. 170-178).
// sign(0) = 1 and R's entries are ours (the paper calls get_R and get_RT without printing them):
// R is the identity except R_jj = R_kk = c, R_jk = s, R_kj = -s; R A R^T has a zero at (j, k).
// Inline for the GPU rungs too (nvcc compiles it for the device), so both sides use one formula.
struct Rotation {
  double c = 1;
  double s = 0;
};
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline Rotation
    paper_rotation(double a_jj, double a_kk, double a_jk) {
  const double tau = (a_jj - a_kk) / (2 * a_jk);
  const double t = (tau >= 0 ? 1.0 : -1.0) / (std::abs(tau) + std::sqrt(1 + tau * tau));
  const double c = 1 / std::sqrt(1 + t * t);
  return Rotation{c, c * t};
}

// Whether pair (j, k) is rotated: either of its two elements above the threshold. The paper
// tests a_jk only, but its first version's convergence test (not_converged) looks at every
// off-diagonal element, and R A R^T
// leaves a_kj a few ulps of the largest eigenvalue away from a_jk (the 2 x 2 block is rounded
// twice, in different orders). An a_kj just above the threshold beside an a_jk just below would
// then never be rotated and the test never pass: about one input in a hundred (n = 67, seed
// 4200: from the tenth sweep on, one a_kj stays at 2.61487e-11 against a threshold of
// 2.61468e-11). Both elements being within rounding of each other, a pair above the threshold on
// either side has a_jk far from zero, and the rotation is still the paper's, from a_jk.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline bool
    pair_above_threshold(double a_jk, double a_kj, double threshold) {
  return std::abs(a_jk) > threshold || std::abs(a_kj) > threshold;
}

// One rotation of a run: the pair and its rotation, in the order the run applied them.
struct RotationStep {
  int j = 0;
  int k = 0;
  Rotation r;
};

struct PaperJacobiResult {
  std::vector<double>
      values;      // column sums of the final A, in diagonal order (the paper's read-out)
  Matrix u;        // U = R_1^T R_2^T ...: its columns are the eigenvectors
  Matrix v;        // V = ... R_2 R_1 = U^T
  int sweeps = 0;  // sweeps run before the convergence test passed
  std::int64_t rotations = 0;  // pairs above the threshold, rotated
  bool converged = false;      // false: max_sweeps ran out with an element above the threshold
};

// The paper's algorithm: while some off-diagonal |a_ij| > threshold, sweep the pairs j < k in
// row order and rotate each pair above the threshold (pair_above_threshold): A = R A R^T,
// V = R V, U = U R^T. R touches rows and columns j and k only, so the CPU applies it in O(n) per
// rotation (the GPU rungs form R and multiply, as the paper does). `a` must be square and exactly
// symmetric: the iteration solves the symmetric eigenvalue problem and does not converge on other
// matrices (std::invalid_argument otherwise). With `steps`, each rotation is appended to it.
PaperJacobiResult paper_jacobi(const Matrix& a, double threshold, int max_sweeps,
                               std::vector<RotationStep>* steps = nullptr);

// The rotations of a run applied again to A, and to U = V = I, without the pair tests and the
// convergence tests between them: the part of a run that the paper's profile of its CPU version
// puts at 80-85 % of its time (its rotation products, l. 75). Gives the run's final A, U and V bit
// for bit.
struct RotatedMatrices {
  Matrix a, u, v;
};
RotatedMatrices replay_rotations(const Matrix& a, const std::vector<RotationStep>& steps);

}  // namespace rooflab::cpu
