#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "apps/rooflab/commands.hpp"
#include "bench/registry.hpp"

namespace rooflab::bench {
namespace {

TEST(Registry, EveryVariantBelongsToARegisteredOp) {
  for (const std::string& op : registry().op_names()) EXPECT_TRUE(registry().has_op(op));
  std::set<std::string> ops;
  for (const std::string& op : registry().op_names()) ops.insert(op);
  EXPECT_TRUE(ops.count("add"));
}

TEST(Registry, RungNumbersAndNamesAreUniqueWithinEachOp) {
  for (const std::string& op : registry().op_names()) {
    std::set<int> rungs;
    std::set<std::string> names;
    for (const Variant* variant : registry().variants(op)) {
      EXPECT_TRUE(rungs.insert(variant->rung).second) << op << " rung " << variant->rung;
      EXPECT_TRUE(names.insert(variant->name).second) << op << " name " << variant->name;
      EXPECT_FALSE(variant->idea.empty()) << op << " " << variant->name;
      EXPECT_TRUE(bool(variant->run)) << op << " " << variant->name;
    }
  }
}

TEST(Registry, LadderIsInRungOrder) {
  for (const std::string& op : registry().op_names()) {
    int previous = -1;
    for (const Variant* variant : registry().variants(op)) {
      EXPECT_GT(variant->rung, previous) << op;
      previous = variant->rung;
    }
  }
}

TEST(Registry, EveryOpHasACpuRungAndAGpuRung) {
  for (const std::string& op : registry().op_names()) {
    bool cpu = false, gpu = false;
    for (const Variant* variant : registry().variants(op))
      (variant->where == Where::cpu ? cpu : gpu) = true;
    EXPECT_TRUE(cpu) << op;
    EXPECT_TRUE(gpu) << op;
  }
}

TEST(Registry, AddLadderHasTheLecturesRungs) {
  std::vector<std::string> names;
  for (const Variant* variant : registry().variants("add")) names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-loop", "grid-stride", "contiguous-chunk", "float4"}));
}

TEST(Registry, UnknownOpErrorListsKnownOps) {
  try {
    registry().op("nosuchop");
    FAIL();
  } catch (const std::exception& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'nosuchop' is not an op"), std::string::npos) << message;
    EXPECT_NE(message.find("add"), std::string::npos) << message;
  }
}

TEST(Registry, AtMostNSkipsBeyondTheLimitWithTheReason) {
  const auto limit = at_most_n(100, "too slow");
  Problem small, large;
  small.n = 100;
  large.n = 101;
  EXPECT_EQ(limit(small), "");
  EXPECT_EQ(limit(large), "too slow (limit n <= 100)");
}

TEST(Registry, OpsResolveDefaultsAndDescribeThem) {
  for (const std::string& name : registry().op_names()) {
    const Op& op = registry().op(name);
    const Problem problem = op.resolve(Problem{});
    EXPECT_FALSE(op.describe(problem).empty()) << name;
    EXPECT_GT(op.model(problem).bytes, 0) << name;
    EXPECT_FALSE(op.report_problems(true).empty()) << name;
  }
}

TEST(ListCommand, NamesEveryRungOfAnOp) {
  std::ostringstream out;
  app::list(out, registry(), "add");
  for (const Variant* variant : registry().variants("add"))
    EXPECT_NE(out.str().find(variant->name), std::string::npos) << variant->name;
}

}  // namespace
}  // namespace rooflab::bench
