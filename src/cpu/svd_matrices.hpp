#pragma once
// The SVD's test matrices: the input classes LAPACK's SVD tests draw (dlatms's singular-value
// modes, ddrvbd's scaled matrices) and the structured inputs users bring (exact ranks, ties,
// duplicated and zero columns), built in double and rounded to the type the SVD computes in, so
// that the tests and the benchmark can hand the GPU exactly the matrix the CPU checks against.
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/svd_reference.hpp"

namespace rooflab::cpu {

// One class of input: its name (as the command line takes it) and a one-line description.
struct SvdMatrixClass {
  const char* name;
  const char* description;
};

// Every class, "random" first.
const std::vector<SvdMatrixClass>& svd_matrix_classes();
bool is_svd_matrix_class(const std::string& name);
// The names, comma-separated, in the order of svd_matrix_classes(): what error messages and help
// list.
std::string svd_matrix_class_names();

// An m x n matrix (m, n >= 1) of class `name` for an SVD computed in type T (float or double):
// conditions and scalings follow from T's epsilon, underflow and overflow thresholds, and every
// entry is representable in T (rounded to T). Throws std::invalid_argument naming the valid
// classes for an unknown name. Same (name, m, n, seed) -> same matrix. "random" is the bench's
// device fill (core/random_stream.hpp, element i + j m of stream `seed`, in T's own grid);
// "mixed", a class of batches, is rank-1-integer for one matrix.
template <class T>
Matrix svd_test_matrix(const std::string& name, int m, int n, std::uint64_t seed);

// The class of matrix b of a batch of class `name`: `name`, except in a "mixed" batch, where
// every 4th matrix (b % 4 == 0) is "rank-1-integer" and the others "random".
std::string svd_batch_member_class(const std::string& name, std::int64_t b);

// Matrix b of a batch of class `name` drawn with `seed`, as the bench's svd and svd-batched
// workspaces hold it: a "random" member is the bench's device fill of the whole batch (elements
// b m n ... (b + 1) m n - 1 of stream `seed`), any other member svd_test_matrix<T>(its class, m,
// n, seed + b). Matrix 0 is svd_test_matrix<T>(name, m, n, seed).
template <class T>
Matrix svd_batch_test_matrix(const std::string& name, int m, int n, std::uint64_t seed,
                             std::int64_t b);

}  // namespace rooflab::cpu
