#include "cpu/svd_paper.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace rooflab::cpu {
namespace {

Matrix identity(int n) {
  Matrix m = zeros(n, n);
  for (int i = 0; i < n; ++i) m(i, i) = 1;
  return m;
}

bool off_diagonal_above(const Matrix& a, double threshold) {
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.m; ++i)
      if (i != j && std::abs(a(i, j)) > threshold) return true;
  return false;
}

// Rows j and k of R M (the rows R changes).
void rotate_rows(Matrix& m, int j, int k, Rotation r) {
  for (int b = 0; b < m.n; ++b) {
    const double x = m(j, b), y = m(k, b);
    m(j, b) = r.c * x + r.s * y;
    m(k, b) = -r.s * x + r.c * y;
  }
}

// Columns j and k of M R^T (the columns R^T changes).
void rotate_columns(Matrix& m, int j, int k, Rotation r) {
  for (int i = 0; i < m.m; ++i) {
    const double x = m(i, j), y = m(i, k);
    m(i, j) = x * r.c + y * r.s;
    m(i, k) = -x * r.s + y * r.c;
  }
}

// R A R^T, V = R V and U = U R^T for one rotation.
void apply_rotation(Matrix& a, Matrix& u, Matrix& v, const RotationStep& step) {
  rotate_rows(a, step.j, step.k, step.r);  // R A, then (R A) R^T
  rotate_columns(a, step.j, step.k, step.r);
  rotate_rows(v, step.j, step.k, step.r);
  rotate_columns(u, step.j, step.k, step.r);
}

}  // namespace

double paper_threshold(const Matrix& a) {
  double squares = 0;
  for (const double value : a.values) squares += value * value;
  return 1e-13 * std::sqrt(squares);
}

PaperJacobiResult paper_jacobi(const Matrix& a, double threshold, int max_sweeps,
                               std::vector<RotationStep>* steps) {
  if (a.m != a.n)
    throw std::invalid_argument("paper_jacobi: a must be square, got " + std::to_string(a.m) +
                                " x " + std::to_string(a.n));
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < j; ++i)
      if (a(i, j) != a(j, i))
        throw std::invalid_argument(
            "paper_jacobi: a must be symmetric (the Jacobi eigenvalue "
            "iteration does not converge otherwise), but a(" +
            std::to_string(i) + ", " + std::to_string(j) + ") != a(" + std::to_string(j) + ", " +
            std::to_string(i) + ")");
  const int n = a.n;
  PaperJacobiResult result{{}, identity(n), identity(n)};
  Matrix work = a;
  while (off_diagonal_above(work, threshold)) {
    if (result.sweeps == max_sweeps) break;
    for (int j = 0; j + 1 < n; ++j)
      for (int k = j + 1; k < n; ++k) {
        if (!pair_above_threshold(work(j, k), work(k, j), threshold)) continue;
        const RotationStep step{j, k, paper_rotation(work(j, j), work(k, k), work(j, k))};
        apply_rotation(work, result.u, result.v, step);
        if (steps != nullptr) steps->push_back(step);
        ++result.rotations;
      }
    ++result.sweeps;
  }
  result.converged = !off_diagonal_above(work, threshold);
  result.values.assign(n, 0);
  for (int column = 0; column < n; ++column)
    for (int i = 0; i < n; ++i) result.values[column] += work(i, column);
  return result;
}

RotatedMatrices replay_rotations(const Matrix& a, const std::vector<RotationStep>& steps) {
  RotatedMatrices result{a, identity(a.n), identity(a.n)};
  for (const RotationStep& step : steps) apply_rotation(result.a, result.u, result.v, step);
  return result;
}

}  // namespace rooflab::cpu
