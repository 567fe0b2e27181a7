#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "apps/rooflab/commands.hpp"
#include "bench/format.hpp"
#include "rooflab/error.hpp"
#include "scratch_directory.hpp"

namespace rooflab::bench {
namespace {

Environment fake_environment() {
  Environment environment;
  environment.device.name = "Test GPU";
  environment.device.cc_major = 9;
  environment.device.cc_minor = 0;
  environment.device.sm_count = 132;
  environment.device.sm_clock_khz = 1980000;
  environment.device.memory_clock_khz = 2619000;
  environment.device.memory_bus_bits = 5120;
  environment.ceilings.copy_bandwidth = 3000e9;
  environment.ceilings.read_bandwidth = 3200e9;
  environment.commit = "abc123";
  environment.date = "2026-11-22T00:00:00Z";
  environment.version = "0.1.0";
  return environment;
}

Row measured(const std::string& name, double ms, bool cpu = false) {
  Row row;
  row.op = "add";
  row.name = name;
  row.cpu = cpu;
  row.median_ms = row.min_ms = row.max_ms = ms;
  row.reps = 5;
  return row;
}

TEST(DeriveRates, GigabytesPerSecondAndPercentOfCeiling) {
  std::vector<Row> rows{measured("gpu", 1.0)};
  derive_rates(rows, Model{3e9, 1e9, Ceiling::copy_bandwidth}, fake_environment());
  EXPECT_DOUBLE_EQ(rows[0].gbps, 3000.0);
  EXPECT_DOUBLE_EQ(rows[0].gflops, 1000.0);
  EXPECT_DOUBLE_EQ(rows[0].percent_of_ceiling, 100.0);
  EXPECT_EQ(rows[0].ceiling, "copy bandwidth");
}

TEST(DeriveRates, SpeedupsAgainstPreviousAndCpuSkipFailedRows) {
  std::vector<Row> rows{measured("cpu", 100.0, true), measured("slow", 10.0),
                        measured("broken", 1.0), measured("fast", 2.0)};
  rows[2].status = Status::failed;
  derive_rates(rows, Model{1e9, 0, Ceiling::read_bandwidth}, fake_environment());
  EXPECT_EQ(rows[0].speedup_vs_previous, 0);
  EXPECT_DOUBLE_EQ(rows[0].speedup_vs_cpu, 1.0);  // the baseline itself
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_previous, 10.0);
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_cpu, 10.0);
  EXPECT_EQ(rows[2].gbps, 0);
  EXPECT_DOUBLE_EQ(rows[3].speedup_vs_previous, 5.0);
  EXPECT_DOUBLE_EQ(rows[3].speedup_vs_cpu, 50.0);
}

TEST(DeriveRates, CpuColumnIsAgainstTheFastestCpuRowThatRan) {
  std::vector<Row> rows{measured("cpu-serial", 80.0, true), measured("cpu-threads", 8.0, true),
                        measured("cpu-broken", 1.0, true), measured("gpu", 2.0)};
  rows[2].status = Status::failed;  // a failed CPU row is no baseline
  derive_rates(rows, Model{1e9, 0, Ceiling::read_bandwidth}, fake_environment());
  EXPECT_DOUBLE_EQ(rows[0].speedup_vs_cpu, 0.1);
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_cpu, 1.0);
  EXPECT_EQ(rows[2].speedup_vs_cpu, 0);
  EXPECT_DOUBLE_EQ(rows[3].speedup_vs_cpu, 4.0);
}

TEST(DeriveRates, ComputeBoundOpsCompareFlopsWithThePeak) {
  std::vector<Row> rows{measured("gemm", 1.0)};
  const Environment environment = fake_environment();
  derive_rates(rows, Model{1e6, environment.device.fp32_peak() * 1e-3, Ceiling::fp32_peak},
               environment);
  EXPECT_NEAR(rows[0].percent_of_ceiling, 100.0, 1e-9);
}

TEST(LeastTime, IsTheLaunchPlusTheModelAtItsCeiling) {
  Environment environment = fake_environment();
  const Model read{3.2e9, 1e9, Ceiling::read_bandwidth};  // 1 ms at 3200 GB/s
  EXPECT_EQ(environment.least_seconds(read), 0) << "no launch floor measured: no least time";
  environment.ceilings.launch_seconds = 3e-6;
  EXPECT_DOUBLE_EQ(environment.least_seconds(read), 1e-3 + 3e-6);
  const Model compute{1, environment.device.fp64_peak() * 2e-3,
                      Ceiling::fp64_peak};  // 2 ms of flops
  EXPECT_DOUBLE_EQ(environment.least_seconds(compute), 2e-3 + 3e-6);
}

TEST(LeastTime, AppearsInTheTitleTheResultsAndTheirMarkdown) {
  Environment environment = fake_environment();
  environment.ceilings.launch_seconds = 2.5e-6;
  const Model model{3.2e6, 0, Ceiling::read_bandwidth};  // 1 us at 3200 GB/s
  std::ostringstream out;
  RowWriter writer(out, Format::table, environment, 1);
  writer.begin_run("reduce", "n = 800000, float", model);
  EXPECT_NE(out.str().find("least time 3.5 us (launch 2.5 us + the model at the ceiling)"),
            std::string::npos)
      << out.str();
  std::vector<Row> rows{measured("gpu", 0.01)};
  derive_rates(rows, model, environment);
  const auto results =
      results_json(environment, 1, {bench::Run{"reduce", "n = 800000, float", model, rows}});
  EXPECT_DOUBLE_EQ(results["environment"]["ceilings"]["launch_us"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(results["runs"][0]["model"]["least_time_ms"].get<double>(), 3.5e-3);
  EXPECT_DOUBLE_EQ(results["runs"][0]["model"]["launch_us"].get<double>(), 2.5);
  const std::string markdown = markdown_tables(results);
  EXPECT_NE(markdown.find(
                "Least time of one kernel: 3.5 us (the launch, 2.5 us, plus the model at the read "
                "bandwidth)."),
            std::string::npos)
      << markdown;
}

TEST(Formats, ParseNamesAndRejectOthers) {
  EXPECT_EQ(parse_format("table"), Format::table);
  EXPECT_EQ(parse_format("csv"), Format::csv);
  EXPECT_EQ(parse_format("json"), Format::json);
  EXPECT_EQ(parse_format("md"), Format::md);
  EXPECT_THROW(parse_format("xml"), Error);
}

TEST(Formats, OutFileExtensionChoosesTheFormat) {
  EXPECT_EQ(format_for_path("results.json", Format::table), Format::json);
  EXPECT_EQ(format_for_path("rows.csv", Format::table), Format::csv);
  EXPECT_EQ(format_for_path("table.md", Format::json), Format::md);
  EXPECT_EQ(format_for_path("results.txt", Format::csv), Format::csv);
}

TEST(Formats, CsvQuotesFieldsWithCommasAndQuotes) {
  Row row = measured("x", 1.0);
  row.problem = "rows = 3, cols = 4";
  row.note = "said \"no\"";
  const std::string line = csv_row(row);
  EXPECT_NE(line.find("\"rows = 3, cols = 4\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"said \"\"no\"\"\""), std::string::npos) << line;
  // As many fields as the header names.
  std::size_t header_fields = 1;
  for (char c : csv_header()) header_fields += c == ',';
  Row plain = measured("y", 1.0);
  std::size_t row_fields = 1;
  for (char c : csv_row(plain)) row_fields += c == ',';
  EXPECT_EQ(row_fields, header_fields);
}

TEST(Formats, TableShowsFailedAndSkippedWithReasons) {
  Row failed = measured("broken", 0);
  failed.status = Status::failed;
  failed.note = "NaN at index 7";
  Row skipped = measured("slow", 0);
  skipped.status = Status::skipped;
  skipped.note = "too slow";
  EXPECT_NE(table_row(failed).find("FAILED: NaN at index 7"), std::string::npos);
  EXPECT_NE(table_row(skipped).find("skipped: too slow"), std::string::npos);
  EXPECT_NE(markdown_row(failed).find("FAILED: NaN at index 7"), std::string::npos);
}

TEST(Formats, JsonResultsCarryDeviceCommitDateAndRows) {
  const Environment environment = fake_environment();
  std::vector<Row> rows{measured("gpu", 2.0)};
  derive_rates(rows, Model{6e9, 0, Ceiling::copy_bandwidth}, environment);
  const auto document =
      results_json(environment, 42, {bench::Run{"add", "n = 1", Model{6e9, 0}, rows}});
  const auto parsed = nlohmann::json::parse(document.dump());
  EXPECT_EQ(parsed["environment"]["device"]["name"], "Test GPU");
  EXPECT_EQ(parsed["environment"]["commit"], "abc123");
  EXPECT_EQ(parsed["environment"]["date"], "2026-11-22T00:00:00Z");
  EXPECT_EQ(parsed["seed"], 42);
  EXPECT_EQ(parsed["same_inputs"], false);
  EXPECT_EQ(parsed["runs"][0]["rows"][0]["name"], "gpu");
  EXPECT_DOUBLE_EQ(parsed["runs"][0]["rows"][0]["gbps"].get<double>(), 3000.0);
  EXPECT_EQ(parsed["runs"][0]["rows"][0]["status"], "ok");
}

TEST(Formats, ResultsAndTableSayWhenEveryRungHadTheSameInputs) {
  const Environment environment = fake_environment();
  const std::vector<bench::Run> runs{
      bench::Run{"svd", "n = 25", Model{1, 1}, {measured("gpu", 1.0)}}};
  EXPECT_EQ(results_json(environment, 7, runs, true)["same_inputs"], true);
  std::ostringstream same, own;
  RowWriter(same, Format::table, environment, 7, true).finish();
  RowWriter(own, Format::table, environment, 7).finish();
  EXPECT_NE(same.str().find("seed 7, the same inputs for every rung"), std::string::npos)
      << same.str();
  EXPECT_EQ(own.str().find("the same inputs"), std::string::npos) << own.str();
}

TEST(Formats, RowsReadBackFromJsonAsWritten) {
  Row row = measured("fast", 2.5);
  row.rung = 7;
  row.vendor = true;
  row.status = Status::failed;
  row.note = "NaN at 3";
  row.expected_failure = "races on purpose";
  row.error = 0.5;
  const Row back = row_from_json(nlohmann::json::parse(to_json(row).dump()));
  EXPECT_EQ(to_json(back), to_json(row));
  // A results file written before rows carried the field reads as failing not by design.
  nlohmann::json older = to_json(row);
  older.erase("expected_failure");
  EXPECT_EQ(row_from_json(older).expected_failure, "");
}

TEST(Formats, AnInfiniteToleranceSurvivesTheTripThroughJson) {
  Row row = measured("cpu", 1.0, true);
  row.tolerance = std::numeric_limits<double>::infinity();
  const Row back = row_from_json(nlohmann::json::parse(to_json(row).dump()));
  EXPECT_EQ(back.tolerance, std::numeric_limits<double>::infinity());
}

TEST(Formats, MarkdownTablesFromAResultsFileNameTheirProvenance) {
  const Environment environment = fake_environment();
  std::vector<Row> rows{measured("gpu", 2.0)};
  derive_rates(rows, Model{6e9, 0, Ceiling::copy_bandwidth}, environment);
  const auto results = results_json(environment, 1,
                                    {bench::Run{"add", "n = 1", Model{6e9, 0}, rows},
                                     bench::Run{"scan", "n = 2", Model{1, 0}, rows}});
  const std::string all = markdown_tables(results);
  EXPECT_NE(all.find("#### add: n = 1 (Test GPU, commit abc123, 2026-11-22T00:00:00Z)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("| 0 | gpu | 2 ms |"), std::string::npos) << all;
  EXPECT_NE(all.find("#### scan"), std::string::npos);
  EXPECT_EQ(markdown_tables(results, "add").find("#### scan"), std::string::npos);
}

TEST(Formats, WriterStreamsEachRowAtOnceAndJsonAtFinish) {
  const Environment environment = fake_environment();
  for (Format format : {Format::table, Format::csv, Format::md}) {
    std::ostringstream out;
    RowWriter writer(out, format, environment, 7);
    writer.begin_run("add", "n = 1", Model{12, 1});
    writer.row(measured("first", 1.0));
    EXPECT_NE(out.str().find("first"), std::string::npos) << int(format);
  }
  std::ostringstream out;
  RowWriter writer(out, Format::json, environment, 7);
  writer.begin_run("add", "n = 1", Model{12, 1});
  const Row row = measured("first", 1.0);
  writer.row(row);
  EXPECT_EQ(out.str(), "");
  writer.end_run({row});
  writer.finish();
  EXPECT_EQ(nlohmann::json::parse(out.str())["runs"][0]["rows"][0]["name"], "first");
}

// An add run of rungs numbered from 0, named and timed as given, with rates on the fake device:
// 2 ms moves its 6 GB at 100% of the copy ceiling.
bench::Run add_run(const std::string& problem,
                   const std::vector<std::pair<std::string, double>>& times) {
  const Model model{6e9, 0, Ceiling::copy_bandwidth};
  std::vector<Row> rows;
  for (const auto& [name, ms] : times) {
    rows.push_back(measured(name, ms));
    rows.back().rung = int(rows.size()) - 1;
    rows.back().problem = problem;
  }
  derive_rates(rows, model, fake_environment());
  return bench::Run{"add", problem, model, rows};
}

// A results file measured on `device` with kernels built as `kernels`.
nlohmann::json results_on(const std::string& device, const std::string& kernels,
                          const std::vector<bench::Run>& runs) {
  nlohmann::json results = results_json(fake_environment(), 1, runs);
  results["environment"]["device"]["name"] = device;
  results["environment"]["device"]["kernels"] = kernels;
  return results;
}

TEST(TableComparison, TwoDevicesSideBySideWithTheTimeOverTheFirst) {
  const std::string native = "sm_90 code from compute_90";
  const auto first =
      results_on("GPU A", native, {add_run("n = 1", {{"loop", 4.0}, {"fast", 2.0}})});
  auto second = results_on("GPU B", native, {add_run("n = 1", {{"loop", 2.0}, {"fast", 1.0}})});
  second["environment"]["commit"] = "def456";
  second["environment"]["device"]["dispatch_arch"] = 80;
  const std::string text = markdown_comparison({{"dir/a.json", first}, {"b.json", second}});
  EXPECT_NE(text.find("- GPU A: GPU A, sm_90 code from compute_90, commit abc123, "
                      "2026-11-22T00:00:00Z (dir/a.json)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("- GPU B: GPU B, sm_90 code from compute_90, dispatch for sm_80, commit def456"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("#### add: n = 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| # | variant | GPU A median | % of copy bandwidth | GPU B median | % of "
                      "copy bandwidth | "
                      "GPU B / GPU A |\n|---:|---|---:|---:|---:|---:|---:|\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| 0 | loop | 4 ms | 50.0% | 2 ms | 100.0% | 0.5 |\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("| 1 | fast | 2 ms | 100.0% | 1 ms | 200.0% | 0.5 |\n"), std::string::npos)
      << text;
}

TEST(TableComparison, OneDeviceTwoBuildsAreToldApartByTheirKernels) {
  const bench::Run run = add_run("n = 1", {{"fast", 2.0}});
  const std::string native = "sm_90 code from compute_90";
  const std::string ptx = "compute_80 PTX, compiled by the driver for sm_90";
  const std::vector<ResultsFile> files{{"native.json", results_on("GPU A", native, {run})},
                                       {"ptx.json", results_on("GPU A", ptx, {run})},
                                       {"other.json", results_on("GPU B", native, {run})}};
  EXPECT_EQ(results_labels(files),
            (std::vector<std::string>{"GPU A (sm_90 code from compute_90)",
                                      "GPU A (compute_80 PTX, compiled by the driver for sm_90)",
                                      "GPU B"}));
  EXPECT_NE(markdown_comparison(files).find("| GPU A (compute_80 PTX, compiled by the driver for "
                                            "sm_90) / GPU A (sm_90 code from compute_90) |"),
            std::string::npos);
}

TEST(TableComparison, OneDeviceAndOneBuildAreToldApartByTheFileName) {
  const auto results =
      results_on("GPU A", "sm_90 code from compute_90", {add_run("n = 1", {{"fast", 2.0}})});
  EXPECT_EQ(results_labels({{"runs/monday.json", results}, {"runs/tuesday.json", results}}),
            (std::vector<std::string>{"GPU A (sm_90 code from compute_90) [monday.json]",
                                      "GPU A (sm_90 code from compute_90) [tuesday.json]"}));
  EXPECT_EQ(results_labels({{"old/r.json", results}, {"new/r.json", results}}),
            (std::vector<std::string>{"GPU A (sm_90 code from compute_90) [old/r.json]",
                                      "GPU A (sm_90 code from compute_90) [new/r.json]"}));
}

TEST(TableComparison, ARungMissingInOneFileShowsDashes) {
  const auto first = results_on("GPU A", "", {add_run("n = 1", {{"loop", 4.0}, {"fast", 2.0}})});
  const auto second = results_on("GPU B", "", {add_run("n = 1", {{"loop", 2.0}})});
  const std::string text = markdown_comparison({{"a.json", first}, {"b.json", second}});
  EXPECT_NE(text.find("| 1 | fast | 2 ms | 100.0% | — | — | — |\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| 0 | loop | 4 ms | 50.0% | 2 ms | 100.0% | 0.5 |\n"), std::string::npos)
      << text;
}

TEST(TableComparison, AProblemInOneFileOnlyGetsItsTableWithDashesForTheOther) {
  const auto first = results_on(
      "GPU A", "", {add_run("n = 1", {{"fast", 2.0}}), add_run("n = 2", {{"fast", 4.0}})});
  const auto second = results_on("GPU B", "", {add_run("n = 1", {{"fast", 1.0}})});
  const std::string text = markdown_comparison({{"a.json", first}, {"b.json", second}});
  EXPECT_NE(text.find("#### add: n = 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| 0 | fast | 4 ms | 50.0% | — | — | — |\n"), std::string::npos) << text;
}

TEST(TableComparison, AnOpAbsentFromOneFileIsSaidOnItsLineAndLeavesItsColumnsEmpty) {
  bench::Run scan = add_run("n = 3", {{"fast", 2.0}});
  scan.op = "scan";
  const auto first = results_on("GPU A", "", {add_run("n = 1", {{"fast", 2.0}}), scan});
  const auto second = results_on("GPU B", "", {add_run("n = 1", {{"fast", 1.0}})});
  const std::string text = markdown_comparison({{"a.json", first}, {"b.json", second}}, "scan");
  EXPECT_NE(text.find("(b.json); no runs of 'scan'\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("(a.json); no runs"), std::string::npos) << text;
  EXPECT_EQ(text.find("#### add"), std::string::npos) << text;
  EXPECT_NE(text.find("#### scan: n = 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| 0 | fast | 2 ms | 100.0% | — | — | — |\n"), std::string::npos) << text;
}

TEST(TableComparison, SkippedAndFailedRungsHaveNoRatio) {
  bench::Run run = add_run("n = 1", {{"slow", 8.0}, {"broken", 1.0}});
  run.rows[0].status = Status::skipped;
  run.rows[1].status = Status::failed;
  const auto first = results_on("GPU A", "", {add_run("n = 1", {{"slow", 8.0}, {"broken", 2.0}})});
  const std::string text =
      markdown_comparison({{"a.json", first}, {"b.json", results_on("GPU B", "", {run})}});
  EXPECT_NE(text.find("| 0 | slow | 8 ms | 25.0% | skipped |  | — |\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| 1 | broken | 2 ms | 100.0% | FAILED |  | — |\n"), std::string::npos)
      << text;
}

TEST(TableComparison, ProblemsNamedBeforeTheSvdInputClassesMatchTheRandomClass) {
  bench::Run older = add_run("25 x 25, double", {{"fast", 2.0}});
  bench::Run newer = add_run("25 x 25, double, random matrix", {{"fast", 1.0}});
  const std::string text = markdown_comparison({{"old.json", results_on("GPU A", "", {older})},
                                                {"new.json", results_on("GPU B", "", {newer})}});
  EXPECT_NE(text.find("#### add: 25 x 25, double\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("#### add: 25 x 25, double, random matrix"), std::string::npos) << text;
  EXPECT_NE(text.find("| 0 | fast | 2 ms | 100.0% | 1 ms | 200.0% | 0.5 |\n"), std::string::npos)
      << text;
}

TEST(TableComparison, AFilesSecondRunOfAProblemPairsWithTheOtherFilesSecond) {
  const auto first = results_on(
      "GPU A", "", {add_run("n = 1", {{"fast", 2.0}}), add_run("n = 1", {{"fast", 4.0}})});
  const auto second = results_on(
      "GPU B", "", {add_run("n = 1", {{"fast", 1.0}}), add_run("n = 1", {{"fast", 1.0}})});
  const std::string text = markdown_comparison({{"a.json", first}, {"b.json", second}});
  EXPECT_NE(text.find("#### add: n = 1 (run 2 of this problem)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("| 0 | fast | 4 ms | 50.0% | 1 ms | 200.0% | 0.25 |\n"), std::string::npos)
      << text;
}

// `rooflab table` on files: results written to a fresh directory.
class TableCommand : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = scratch_.file(name);
    std::ofstream(path) << text;
    return path;
  }

 private:
  const ScratchDirectory scratch_{"rooflab_table_command"};
};

TEST_F(TableCommand, OneFilePrintsItsMarkdownTablesAsBefore) {
  const auto results = results_on("GPU A", "", {add_run("n = 1", {{"fast", 2.0}})});
  std::ostringstream out;
  app::table(out, {write("a.json", results.dump())}, "");
  EXPECT_EQ(out.str(), markdown_tables(results));
}

TEST_F(TableCommand, TwoFilesPrintTheComparison) {
  const auto first = results_on("GPU A", "", {add_run("n = 1", {{"fast", 2.0}})});
  const auto second = results_on("GPU B", "", {add_run("n = 1", {{"fast", 1.0}})});
  const std::vector<std::string> paths{write("a.json", first.dump()),
                                       write("b.json", second.dump())};
  std::ostringstream out;
  app::table(out, paths, "");
  EXPECT_EQ(out.str(), markdown_comparison({{paths[0], first}, {paths[1], second}}));
}

TEST_F(TableCommand, ABadFileAmongSeveralIsNamed) {
  const std::string good =
      write("good.json", results_on("GPU A", "", {add_run("n = 1", {{"fast", 2.0}})}).dump());
  const std::string missing =
      (std::filesystem::temp_directory_path() / "rooflab_no_such_results.json").string();
  for (const std::string& bad : {write("broken.json", "{\"environment\": "),
                                 write("runless.json", "{\"environment\": {}}"), missing}) {
    std::ostringstream out;
    try {
      app::table(out, {good, bad}, "");
      ADD_FAILURE() << bad << " was read as results";
    } catch (const app::UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("'" + bad + "'"), std::string::npos) << error.what();
    }
    EXPECT_EQ(out.str(), "") << bad;
  }
}

TEST_F(TableCommand, AnOpInNoFileNamesEachFilesOps) {
  const std::string first =
      write("a.json", results_on("GPU A", "", {add_run("n = 1", {{"fast", 2.0}})}).dump());
  const std::string second = write("b.json", results_on("GPU B", "", {}).dump());
  std::ostringstream out;
  try {
    app::table(out, {first, second}, "scan");
    ADD_FAILURE() << "no file has scan, yet it printed: " << out.str();
  } catch (const app::UsageError& error) {
    EXPECT_EQ(std::string(error.what()), "rooflab table: no file has runs of 'scan' ('" + first +
                                             "': its ops: add; '" + second + "': it has no runs)");
  }
}

TEST(Formats, HumanTimePicksTheUnit) {
  EXPECT_EQ(human_time(0.0123), "12.3 us");
  EXPECT_EQ(human_time(4.56), "4.56 ms");
  EXPECT_EQ(human_time(2500), "2.5 s");
}

}  // namespace
}  // namespace rooflab::bench
