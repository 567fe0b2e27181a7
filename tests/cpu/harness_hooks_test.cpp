// The harness's extensions for the lab, without a GPU: notes beside measured rows, failures by
// design shown and not counted, and the host-transfer ceiling in every output.
#include <gtest/gtest.h>

#include <sstream>

#include "bench/format.hpp"
#include "bench/runner.hpp"

namespace rooflab::bench {
namespace {

Row measured_row(const std::string& name) {
  Row row;
  row.op = "lab";
  row.name = name;
  row.median_ms = row.min_ms = row.max_ms = 1.0;
  row.reps = 3;
  return row;
}

Row racy_row() {
  Row row = measured_row("plain-add");
  row.status = Status::failed;
  row.expected_failure = "a data race";
  row.note = "counted 12 of 4000";
  return row;
}

TEST(FailureByDesign, IsShownAsSuchAndNotCounted) {
  const Row racy = racy_row();
  EXPECT_NE(table_row(racy).find("FAILED (by design: a data race): counted 12 of 4000"),
            std::string::npos)
      << table_row(racy);
  EXPECT_NE(markdown_row(racy).find("FAILED (by design: a data race): counted 12 of 4000"),
            std::string::npos)
      << markdown_row(racy);
  EXPECT_FALSE(counts_as_failure(racy));
  Row broken = racy;
  broken.expected_failure.clear();
  EXPECT_TRUE(counts_as_failure(broken));
  EXPECT_NE(table_row(broken).find("FAILED: counted"), std::string::npos) << table_row(broken);
  EXPECT_FALSE(counts_as_failure(measured_row("fine")));
}

TEST(FailureByDesign, ReachesJsonAndCsv) {
  const Row racy = racy_row();
  EXPECT_EQ(to_json(racy)["expected_failure"], "a data race");
  EXPECT_EQ(to_json(racy)["status"], "FAILED");
  const std::string line = csv_row(racy);
  EXPECT_NE(line.find("a data race"), std::string::npos) << line;
  std::size_t header_fields = 1, row_fields = 1;
  for (char c : csv_header()) header_fields += c == ',';
  for (char c : line) row_fields += c == ',';
  EXPECT_EQ(row_fields, header_fields);
}

TEST(VariantNote, AppearsBesideAMeasuredRow) {
  Row row = measured_row("block-256");
  row.note = "4 blocks/SM, 50% occupancy, 64 registers, 0 B local";
  EXPECT_NE(table_row(row).find(row.note), std::string::npos) << table_row(row);
  EXPECT_NE(markdown_row(row).find("block-256 (4 blocks/SM"), std::string::npos)
      << markdown_row(row);
  const std::string plain = table_row(measured_row("plain"));
  EXPECT_NE(plain.back(), ' ') << "a row without a note ends at its check: '" << plain << "'";
}

TEST(HostTransferCeiling, IsTheMeasuredPinnedHostToDeviceRate) {
  Environment environment;
  environment.ceilings.host_to_device_bandwidth = 55e9;
  environment.ceilings.host_buffer_bytes = 64 << 20;
  EXPECT_EQ(environment.ceiling_value(Ceiling::host_transfer_bandwidth), 55e9);
  EXPECT_STREQ(ceiling_name(Ceiling::host_transfer_bandwidth), "host-transfer bandwidth");
  const auto json = to_json(environment);
  EXPECT_DOUBLE_EQ(json["ceilings"]["host_to_device_gbps"].get<double>(), 55.0);
  std::vector<Row> rows{measured_row("pinned-h2d")};
  derive_rates(rows, Model{55e6, 0, Ceiling::host_transfer_bandwidth}, environment);
  EXPECT_NEAR(rows[0].percent_of_ceiling, 100.0, 1e-9);
  EXPECT_EQ(rows[0].ceiling, "host-transfer bandwidth");
}

// The time budget cuts the repetitions to what fits, but not below 3 for a median, and never past
// what --reps asks: a slow rung with --reps 1 is timed once.
TEST(Repetitions, FitTheBudgetKeepThreeForAMedianAndNeverExceedWhatWasAsked) {
  RunOptions options;                               // 20 repetitions, 4 s a variant
  EXPECT_EQ(affordable_reps(1.0, options), 20);     // 20 of 1 ms fit
  EXPECT_EQ(affordable_reps(400.0, options), 10);   // 4 s of 400 ms runs
  EXPECT_EQ(affordable_reps(59000.0, options), 3);  // over budget: three for a median
  EXPECT_EQ(affordable_reps(0.0, options), 20);     // too fast to time: as asked
  options.reps = 1;
  EXPECT_EQ(affordable_reps(59000.0, options), 1);  // --reps 1 on a minute a run
  EXPECT_EQ(affordable_reps(1.0, options), 1);
  options.reps = 2;
  EXPECT_EQ(affordable_reps(59000.0, options), 2);
}

}  // namespace
}  // namespace rooflab::bench
