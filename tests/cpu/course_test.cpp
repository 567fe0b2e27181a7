// rooflab report --course: every course figure names a run the bench accepts and a rung its op
// has, and the page puts the document's time beside today's (no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "apps/rooflab/commands.hpp"
#include "bench/course.hpp"
#include "rooflab/error.hpp"

namespace rooflab {
namespace {

TEST(CourseFigures, EveryFigureNamesARunTheBenchAcceptsAndARungOfItsOp) {
  const std::set<std::string> documents{"the memory-basics lab", "Harris's reduction",
                                        "the loop-unrolling lab", "the limiting-factors lecture",
                                        "the Jacobi SVD paper"};
  const std::vector<bench::CourseFigure>& figures = bench::course_figures();
  ASSERT_FALSE(figures.empty());
  for (const bench::CourseFigure& figure : figures) {
    SCOPED_TRACE(figure.item + " (" + figure.document + ", " + figure.place + ")");
    EXPECT_FALSE(figure.item.empty());
    EXPECT_FALSE(figure.place.empty());
    EXPECT_FALSE(figure.what.empty());
    EXPECT_FALSE(figure.document_device.empty());
    EXPECT_EQ(documents.count(figure.document), 1u) << "not a glossary name: " << figure.document;
    EXPECT_GT(figure.document_ms, 0);
    ASSERT_TRUE(bench::registry().has_op(figure.op)) << figure.op;
    const app::BenchRequest request = app::course_request(figure);
    EXPECT_NO_THROW(EXPECT_EQ(app::to_problems(request, bench::registry()).size(), 1u));
    const auto variants = bench::registry().variants(figure.op);
    EXPECT_TRUE(
        std::any_of(variants.begin(), variants.end(),
                    [&](const bench::Variant* variant) { return variant->name == figure.rung; }))
        << figure.op << " has no rung " << figure.rung;
  }
}

// --document runs one document's figures: together the documents' are every figure, in the same
// order; a name that is not a document with figures is refused, naming those that are.
TEST(CourseFigures, OneDocumentsFiguresOrAUsageErrorNamingTheDocuments) {
  const std::vector<bench::CourseFigure>& all = bench::course_figures();
  EXPECT_EQ(app::course_figures_of("").size(), all.size());
  std::vector<std::string> documents;
  for (const bench::CourseFigure& figure : all)
    if (std::find(documents.begin(), documents.end(), figure.document) == documents.end())
      documents.push_back(figure.document);
  EXPECT_GE(documents.size(), 4u);
  std::vector<std::string> items, all_items;
  for (const std::string& document : documents)
    for (const bench::CourseFigure& figure : app::course_figures_of(document)) {
      EXPECT_EQ(figure.document, document) << figure.item;
      items.push_back(figure.item);
    }
  for (const bench::CourseFigure& figure : all) all_items.push_back(figure.item);
  EXPECT_EQ(items, all_items);  // documents in the order of their first figure, as course.md
  // The name as course.md's heading writes it, capitalized.
  EXPECT_EQ(app::course_figures_of("The Jacobi SVD paper").size(),
            app::course_figures_of("the Jacobi SVD paper").size());
  EXPECT_FALSE(app::course_figures_of("The Jacobi SVD paper").empty());
  for (const char* refused : {"the paper", "Harris's reduction"}) {
    try {
      app::course_figures_of(refused);
      ADD_FAILURE() << refused << " was taken for a document with figures";
    } catch (const app::UsageError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(std::string("'") + refused + "' is not a document with timed figures"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("the Jacobi SVD paper"), std::string::npos) << message;
    }
  }
}

TEST(CourseFigures, AFlagTheBenchDoesNotTakeIsRefusedNamingTheItem) {
  bench::CourseFigure figure;
  figure.item = "X1";
  figure.op = "reduce";
  figure.options = {"--reps", "5"};
  EXPECT_THROW(app::course_request(figure), Error);
  figure.options = {"--n"};  // a flag without its value
  EXPECT_THROW(app::course_request(figure), Error);
  figure.options = {"--n", "2^22", "--dtype", "float"};
  const app::BenchRequest request = app::course_request(figure);
  EXPECT_EQ(request.n, "2^22");
  EXPECT_EQ(request.dtype, "float");
}

TEST(CourseMarkdown, GivesTheDocumentsTimeTodaysAndTheirRatioPerDocument) {
  // Made-up figures: the page's layout is under test, not any document's numbers.
  std::vector<bench::CourseFigure> figures(3);
  figures[0] = {"A1",           "document A", "l. 10", "a CPU loop", "histogram",
                {"--n", "5e7"}, "cpu-loop",   20.5,    "device A"};
  figures[1] = {"A2",           "document A",   "l. 20", "a naive kernel", "histogram",
                {"--n", "5e7"}, "naive-global", 1000.5,  "device A"};
  figures[2] = {
      "B1", "document B", "section 2", "a tree", "reduce", {"--n", "2^22"}, "interleaved-divergent",
      8.5,  "device B"};
  const std::vector<bench::CourseMeasurement> today{
      {true, 410.0, ""}, {true, 5.0, ""}, {false, 0, "skipped: too large"}};
  const std::string page = bench::course_markdown(figures, today, "GPU Z");
  EXPECT_NE(page.find("GPU Z"), std::string::npos);
  EXPECT_NE(page.find("## document A"), std::string::npos);
  EXPECT_NE(page.find("## document B"), std::string::npos);
  EXPECT_LT(page.find("## document A"), page.find("## document B"));
  EXPECT_NE(page.find("| A1 | l. 10 | a CPU loop | `histogram --n 5e7 (cpu-loop)` | 20.5 ms "
                      "(device A) | 410 ms | 0.05x |"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("| 1000.5 ms (device A) | 5 ms | 200.10x |"), std::string::npos) << page;
  EXPECT_NE(page.find("| skipped: too large | - |"), std::string::npos) << page;
}

}  // namespace
}  // namespace rooflab
