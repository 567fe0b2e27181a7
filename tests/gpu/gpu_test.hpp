#pragma once
// Base fixture of every GPU test: skips, saying why, where no CUDA device can be used (CI).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "bench/environment.hpp"
#include "bench/registry.hpp"
#include "core/device_info.hpp"

namespace rooflab::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_device_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

// The device's identity without measured ceilings: for tests that run the harness but do not
// look at percentages of a ceiling (measuring them costs a second per test).
inline bench::Environment environment_without_ceilings() {
  bench::Environment environment;
  environment.device = query_device();
  environment.commit = "test";
  return environment;
}

// The device rung of `op` with the highest number: for harness tests that need any rung that runs
// on the GPU (an op's last variant may be a CPU rung).
inline const bench::Variant& last_device_rung(const char* op) {
  const bench::Variant* last = nullptr;
  for (const bench::Variant* variant : bench::registry().variants(op))
    if (variant->where == bench::Where::gpu) last = variant;
  if (last == nullptr) throw std::logic_error(std::string(op) + " has no device rung");
  return *last;
}

}  // namespace rooflab::testing
