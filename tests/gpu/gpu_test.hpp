#pragma once
// Base fixture of every GPU test: skips, saying why, where no CUDA device can be used (CI).
#include <gtest/gtest.h>

#include <string>

#include "core/device_info.hpp"

namespace rooflab::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_device_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

}  // namespace rooflab::testing
