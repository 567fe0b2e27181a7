#pragma once
// The four output formats of measured rows, and the results-file JSON. Plain C++ (CI tests it).
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/environment.hpp"
#include "bench/runner.hpp"

namespace rooflab::bench {

enum class Format { table, csv, json, md };
Format parse_format(const std::string& text);  // throws rooflab::Error on an unknown format
// The format a results file's extension asks for (.json, .csv, .md), else `fallback`.
Format format_for_path(const std::string& path, Format fallback);

// One op on one problem, measured.
struct Run {
  std::string op;
  std::string problem;
  Model model;
  std::vector<Row> rows;
};

nlohmann::json to_json(const Environment& environment);
nlohmann::json to_json(const Row& row);
nlohmann::json to_json(const Run& run);
// The results file: {"rooflab": version, "environment": ..., "seed": ..., "same_inputs": ...,
// "runs": [...]}.
nlohmann::json results_json(const Environment& environment, std::uint64_t seed,
                            const std::vector<Run>& runs, bool same_inputs = false);

// The inverse of to_json(Row), for reading results files back.
Row row_from_json(const nlohmann::json& json);
// Markdown tables of every run in a results file (optionally one op's only), each titled with the
// problem and the device, commit and date it was measured on: what docs pages copy.
std::string markdown_tables(const nlohmann::json& results, const std::string& op = {});

// A results file and the path it was read from, for tables of several side by side.
struct ResultsFile {
  std::string path;
  nlohmann::json results;
};
// Short names for results files side by side: the device's name; with the build of its kernels
// (environment.device.kernels) where two files share a name, then the file's name where two are
// still alike.
std::vector<std::string> results_labels(const std::vector<ResultsFile>& files);
// The runs of several results files side by side (optionally one op's only): a line per file with
// its device, commit and date, then for each op and problem in any file a table of the rungs with
// each file's median time and percent of its ceiling, and each later file's time over the first
// file's. "—" where a file lacks the rung. (Problems named before the svd's input classes match
// the random class.)
std::string markdown_comparison(const std::vector<ResultsFile>& files, const std::string& op = {});

// Writes rows as they are measured. table, csv and md print each row at once; json prints the
// whole document at finish().
class RowWriter {
 public:
  RowWriter(std::ostream& out, Format format, const Environment& environment, std::uint64_t seed,
            bool same_inputs = false);
  void begin_run(const std::string& op, const std::string& problem, const Model& model);
  void row(const Row& row);
  void end_run(const std::vector<Row>& rows);
  void finish();

 private:
  std::ostream& out_;
  Format format_;
  const Environment& environment_;
  std::uint64_t seed_;
  bool same_inputs_;
  bool csv_header_written_ = false;
  std::vector<Run> runs_;
};

// A markdown table of measured rows (used by report and by --format md).
std::string markdown_header(const std::string& ceiling);
std::string markdown_row(const Row& row);
std::string table_header(const std::string& ceiling);
std::string table_row(const Row& row);
std::string csv_header();
std::string csv_row(const Row& row);

// "12.3 ms", "45.6 us": a duration for people.
std::string human_time(double ms);

}  // namespace rooflab::bench
