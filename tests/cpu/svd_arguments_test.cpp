// rooflab::svd and rooflab::svd_batched reject bad arguments before touching the GPU, naming the
// argument, so these run without one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"
#include "svd/jacobi.hpp"

namespace rooflab {
namespace {

// A non-null device-looking pointer that is never dereferenced: every case below fails first.
float* const fake = reinterpret_cast<float*>(std::uintptr_t(256));

std::string argument_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.argument();
  }
  return "(no error)";
}

TEST(SvdArguments, BadSizesAndPointersNameTheArgument) {
  EXPECT_EQ(argument_of([] { svd<float>(fake, 0, 4, 4, fake, fake, 4, fake, 4); }), "m");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, -1, 4, fake, fake, 4, fake, 4); }), "n");
  EXPECT_EQ(argument_of([] { svd<float>(nullptr, 4, 4, 4, fake, fake, 4, fake, 4); }), "A");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, 4, 3, fake, fake, 4, fake, 4); }), "lda");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, 4, 4, nullptr, fake, 4, fake, 4); }), "S");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, 4, 4, fake, nullptr, 4, fake, 4); }), "U");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, 4, 4, fake, fake, 4, nullptr, 4); }), "V");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 5, 4, 5, fake, fake, 4, fake, 4); }), "ldu");
  EXPECT_EQ(argument_of([] { svd<float>(fake, 4, 5, 4, fake, fake, 4, fake, 4); }), "ldv");
}

TEST(SvdArguments, BadOptionsNameTheOption) {
  SvdOptions no_sweeps;
  no_sweeps.max_sweeps = 0;
  EXPECT_EQ(argument_of(
                [&] { svd<double>(nullptr, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, no_sweeps); }),
            "opt.max_sweeps");
  SvdOptions negative_tol;
  negative_tol.tol = -1e-9;
  EXPECT_EQ(argument_of([&] { svd<float>(fake, 4, 4, 4, fake, fake, 4, fake, 4, negative_tol); }),
            "opt.tol");
  SvdOptions below_epsilon;  // as dgesvj (CTOL >= 1): no orthogonality below the unit roundoff
  below_epsilon.tol = 1e-10;
  EXPECT_EQ(argument_of([&] { svd<float>(fake, 4, 4, 4, fake, fake, 4, fake, 4, below_epsilon); }),
            "opt.tol");
  below_epsilon.tol = 1e-17;
  EXPECT_EQ(argument_of([&] {
              svd<double>(nullptr, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, below_epsilon);
            }),
            "opt.tol");
  SvdOptions unit_roundoff;  // u itself is a tol: the null A is then the error
  unit_roundoff.tol = std::numeric_limits<double>::epsilon() / 2;
  EXPECT_EQ(argument_of([&] {
              svd<double>(nullptr, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, unit_roundoff);
            }),
            "A");
  unit_roundoff.tol = std::nextafter(unit_roundoff.tol, 0.0);
  EXPECT_EQ(argument_of([&] {
              svd<double>(nullptr, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, unit_roundoff);
            }),
            "opt.tol");
  SvdOptions nan_tol;
  nan_tol.tol = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(
      argument_of([&] { svd_batched<float>(fake, 4, 4, 2, fake, fake, fake, nullptr, nan_tol); }),
      "opt.tol");
}

TEST(SvdArguments, BatchedChecksBatchAndPointers) {
  EXPECT_EQ(argument_of([] { svd_batched<float>(fake, 4, 4, -1, fake, fake, fake); }), "batch");
  EXPECT_EQ(argument_of([] { svd_batched<float>(nullptr, 4, 4, 3, fake, fake, fake); }), "A");
  EXPECT_EQ(argument_of([] { svd_batched<float>(fake, 4, 4, 3, nullptr, fake, fake); }), "S");
  EXPECT_EQ(argument_of([] { svd_batched<double>(nullptr, 4, 0, 3, nullptr, nullptr, nullptr); }),
            "n");
  // Values only: U and V may be null.
  SvdOptions values_only;
  values_only.compute_uv = false;
  EXPECT_EQ(
      argument_of([&] { svd<float>(fake, 4, 4, 4, nullptr, nullptr, 0, nullptr, 0, values_only); }),
      "S");
}

TEST(SvdArguments, EmptyBatchIsANoOp) {
  EXPECT_NO_THROW(svd_batched<float>(nullptr, 4, 4, 0, nullptr, nullptr, nullptr));
}

// The default is LAPACK dgesvj's (dgesvj.f: TOL = CTOL * dlamch('E'), CTOL = sqrt(M) with vectors
// and M without, dlamch('E') the unit roundoff 2^-53), so that sweep counts compare at one tol.
TEST(SvdArguments, TheDefaultToleranceIsDgesvjs) {
  EXPECT_EQ(jacobi::default_tolerance<double>(100, 64, true), 10 * std::ldexp(1.0, -53));
  EXPECT_EQ(jacobi::default_tolerance<double>(30, 256, false), 256 * std::ldexp(1.0, -53));
  EXPECT_EQ(jacobi::default_tolerance<float>(400, 400, true), 20 * std::ldexp(1.0f, -24));
}

}  // namespace
}  // namespace rooflab
