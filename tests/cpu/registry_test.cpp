#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "apps/rooflab/commands.hpp"
#include "bench/environment.hpp"
#include "bench/registry.hpp"
#include "cpu/svd_matrices.hpp"
#include "rooflab/error.hpp"

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

TEST(Registry, AddLadderHasItsRungsInOrder) {
  std::vector<std::string> names;
  for (const Variant* variant : registry().variants("add")) names.push_back(variant->name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-loop", "grid-stride", "contiguous-chunk",
                                             "float4", "cpu-threads"}));
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

TEST(ListCommand, SvdOpsListTheMatrixClassesAndOtherOpsDoNot) {
  for (const char* op : {"svd", "svd-batched"}) {
    std::ostringstream out;
    app::list(out, registry(), op);
    for (const cpu::SvdMatrixClass& matrix_class : cpu::svd_matrix_classes())
      EXPECT_NE(out.str().find(std::string(matrix_class.name) + " "), std::string::npos)
          << op << " " << matrix_class.name;
  }
  std::ostringstream out;
  app::list(out, registry(), "add");
  EXPECT_EQ(out.str().find("--matrix"), std::string::npos) << out.str();
}

app::BenchRequest svd_request(const std::string& op, const std::string& matrix) {
  app::BenchRequest request;
  request.op = op;
  request.m = "12";
  request.n = "8";
  request.matrix = matrix;
  return request;
}

TEST(BenchMatrixOption, SvdOpsTakeTheClassAndNameItInTheProblem) {
  const auto problems = app::to_problems(svd_request("svd-batched", "mode3-eps"), registry());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].matrix, "mode3-eps");
  EXPECT_EQ(registry().op("svd-batched").describe(problems[0]),
            "10000 x 12 x 8, float, mode3-eps matrices");
  EXPECT_EQ(
      registry().op("svd").describe(app::to_problems(svd_request("svd", "mixed"), registry())[0]),
      "12 x 8, double, mixed matrix");
}

TEST(BenchMatrixOption, SeveralClassesGiveAProblemEachInTheOrderGiven) {
  const auto problems = app::to_problems(svd_request("svd", "zero,rank-1,,mode3-eps"), registry());
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].matrix, "zero");
  EXPECT_EQ(problems[1].matrix, "rank-1");
  EXPECT_EQ(problems[2].matrix, "mode3-eps");
  for (const Problem& problem : problems) {
    EXPECT_EQ(problem.m, 12);
    EXPECT_EQ(problem.n, 8);
  }
  app::BenchRequest report_sizes;  // no size given: every report size, once per class
  report_sizes.op = "svd-batched";
  const std::size_t sizes = app::to_problems(report_sizes, registry()).size();
  report_sizes.matrix = "random,mixed";
  const auto both = app::to_problems(report_sizes, registry());
  ASSERT_EQ(both.size(), 2 * sizes);
  EXPECT_EQ(both[0].matrix, "random");
  EXPECT_EQ(both[1].matrix, "mixed");
  EXPECT_EQ(both[1].n, both[0].n);
  EXPECT_EQ(both[1].batch, both[0].batch);
}

TEST(BenchMatrixOption, AListWithAnUnknownClassOrNoClassFails) {
  EXPECT_THROW(app::to_problems(svd_request("svd", "zero,nosuch"), registry()), Error);
  try {
    app::to_problems(svd_request("svd", ",,"), registry());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "--matrix");
  }
  app::BenchRequest request;
  request.op = "add";
  request.n = "1000";
  request.matrix = "random,rank-1";
  EXPECT_THROW(app::to_problems(request, registry()), Error);
}

TEST(BenchMatrixOption, WithoutTheOptionSvdInputsAreRandomAtEveryReportSize) {
  EXPECT_EQ(app::to_problems(svd_request("svd", ""), registry())[0].matrix, "random");
  app::BenchRequest report_sizes;
  report_sizes.op = "svd-batched";
  for (const Problem& problem : app::to_problems(report_sizes, registry()))
    EXPECT_EQ(problem.matrix, "random") << problem.m << " x " << problem.n;
}

TEST(BenchMatrixOption, UnknownClassFailsNamingTheClasses) {
  try {
    app::to_problems(svd_request("svd", "nosuch"), registry());
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "--matrix");
    const std::string expected =
        "'nosuch' is not a matrix class (" + cpu::svd_matrix_class_names() + ")";
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

TEST(BenchMatrixOption, OtherOpsRejectAClassButRandom) {
  app::BenchRequest request;
  request.op = "add";
  request.n = "1000";
  request.matrix = "rank-1";
  EXPECT_THROW(app::to_problems(request, registry()), Error);
  request.matrix = "random";
  EXPECT_NO_THROW(app::to_problems(request, registry()));
}

TEST(BenchMatrixOption, OnlyTheSvdAndSvdBatchedOpsTakeAClass) {
  for (const std::string& name : registry().op_names())
    EXPECT_EQ(registry().op(name).takes_matrix_class, name == "svd" || name == "svd-batched")
        << name;
}

// A request for `op` giving each size of `problem` that is set, as a user would type it.
app::BenchRequest request_for(const std::string& op, const Problem& problem) {
  app::BenchRequest request;
  request.op = op;
  const auto typed = [](std::int64_t value) {
    return value ? std::to_string(value) : std::string();
  };
  request.n = typed(problem.n);
  request.rows = typed(problem.rows);
  request.cols = typed(problem.cols);
  request.m = typed(problem.m);
  request.batch = typed(problem.batch);
  request.bins = typed(problem.bins);
  request.dtype = problem.dtype;
  return request;
}

std::string bench_error(const app::BenchRequest& request) {
  try {
    app::to_problems(request, registry());
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(BenchSizes, EveryOpAcceptsItsReportSizesTypedOut) {
  // An op's own report sizes, typed out as options (its defaults among them), pass the checks.
  for (const std::string& op : registry().op_names())
    for (const bool quick : {false, true})
      for (const Problem& problem : registry().op(op).report_problems(quick))
        EXPECT_EQ(bench_error(request_for(op, problem)), "no error")
            << op << ": " << registry().op(op).describe(problem);
}

TEST(BenchSizes, ASizeTheOpDoesNotReadFailsNamingTheSizesItDoes) {
  app::BenchRequest request;
  request.op = "reduce";
  request.rows = "5";
  EXPECT_NE(bench_error(request).find("'--rows': does not apply to reduce (reduce takes --n)"),
            std::string::npos)
      << bench_error(request);
  request.op = "svd";
  request.rows.clear();
  request.batch = "1";
  EXPECT_NE(bench_error(request).find("'--batch': does not apply to svd (svd takes --m, --n)"),
            std::string::npos)
      << bench_error(request);
}

TEST(BenchSizes, ZeroIsRefusedRatherThanReadAsTheDefault) {
  for (const char* op : {"svd", "svd-batched"}) {
    app::BenchRequest request;
    request.op = op;
    request.m = "0";
    EXPECT_NE(bench_error(request).find("'--m': must be at least 1"), std::string::npos)
        << bench_error(request);
  }
}

TEST(BenchOnly, ARungTheOpDoesNotHaveFailsBeforeAnyGpuWork) {
  app::BenchRequest request;
  request.op = "svd";
  request.options.only = {"99"};
  EXPECT_NE(bench_error(request).find("'99' is not a rung of svd"), std::string::npos)
      << bench_error(request);
  request.options.only = {registry().variants("svd").front()->name};
  EXPECT_EQ(bench_error(request), "no error");
}

// --first-call measures one rung on one problem: anything else is refused before the GPU is
// touched (no GPU needed for these).
TEST(FirstCallCommand, NeedsOneProblemAndOneRungItCanRun) {
  const auto usage_error = [](const app::BenchRequest& request) -> std::string {
    std::ostringstream out;
    try {
      app::first_call(out, request);
    } catch (const app::UsageError& error) {
      EXPECT_TRUE(out.str().empty()) << out.str();
      return error.what();
    } catch (const std::exception& error) {
      return std::string("not a usage error: ") + error.what();
    }
    return "no error";
  };
  app::BenchRequest request;
  request.op = "histogram";
  request.options.only = {"naive-global"};
  EXPECT_NE(usage_error(request).find("give the problem's sizes"), std::string::npos);
  request.n = "5e7";
  request.options.only = {};
  EXPECT_NE(usage_error(request).find("exactly one rung"), std::string::npos);
  request.options.only = {"1", "2"};
  EXPECT_NE(usage_error(request).find("exactly one rung"), std::string::npos);
  request.op = "reduce";
  request.n = "2^20";
  request.dtype = "double";
  request.options.only = {"unroll8"};
  EXPECT_NE(usage_error(request).find("unroll8 skips this problem"), std::string::npos)
      << usage_error(request);
}

TEST(ListCommand, UnknownOpIsAUsageErrorNamingTheOps) {
  std::ostringstream out;
  try {
    app::list(out, registry(), "nosuchop");
    FAIL() << "no error";
  } catch (const app::UsageError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("rooflab list: 'nosuchop' is not an op (the ops: ", 0), 0u) << message;
    EXPECT_NE(message.find("reduce"), std::string::npos) << message;
  }
}

TEST(VersionText, NamesVersionCommitAndCudaRuntime) {
  const std::string text = app::version_text();
  EXPECT_EQ(
      text.rfind("rooflab " + build_version() + " (commit " + build_commit() + "), CUDA runtime ",
                 0),
      0u)
      << text;
}

TEST(ReportProgress, SaysWhichLadderTheTimeSoFarAndAnEstimateOfTheRest) {
  EXPECT_EQ(app::progress_line(1, 40, "add, n = 268435456, float", 0.2),
            "rooflab report: ladder 1 of 40 (add, n = 268435456, float); 0s elapsed");
  // 10 ladders in 150 s: 15 s each, and 30 to go, this one included.
  EXPECT_EQ(app::progress_line(11, 40, "reduce, n = 16777216, float", 150),
            "rooflab report: ladder 11 of 40 (reduce, n = 16777216, float); 2m30s elapsed, about "
            "7m30s left");
}

}  // namespace
}  // namespace rooflab::bench
