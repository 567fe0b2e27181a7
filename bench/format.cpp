#include "bench/format.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <tuple>

#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

std::string speedup(double factor) { return factor > 0 ? fmt::format("{:.2f}x", factor) : "-"; }

std::string check_text(const Row& row) {
  if (row.status == Status::skipped) return "-";
  return fmt::format("{:.1e} <= {:.0e}", row.error, row.tolerance);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// "FAILED", or "FAILED (by design: <why>)" for a variant that is wrong on purpose.
std::string failed_text(const Row& row) {
  if (row.expected_failure.empty()) return "FAILED";
  return "FAILED (by design: " + row.expected_failure + ")";
}

std::string ceiling_short(const std::string& ceiling) {
  return ceiling.substr(0, ceiling.find(' '));  // "copy bandwidth" -> "copy"
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Format parse_format(const std::string& text) {
  if (text == "table") return Format::table;
  if (text == "csv") return Format::csv;
  if (text == "json") return Format::json;
  if (text == "md") return Format::md;
  throw Error("bench", "--format", "'" + text + "' is not a format (table, csv, json, md)");
}

Format format_for_path(const std::string& path, Format fallback) {
  if (ends_with(path, ".json")) return Format::json;
  if (ends_with(path, ".csv")) return Format::csv;
  if (ends_with(path, ".md")) return Format::md;
  return fallback;
}

std::string human_time(double ms) {
  if (ms >= 1e3) return fmt::format("{:.3g} s", ms * 1e-3);
  if (ms >= 1) return fmt::format("{:.3g} ms", ms);
  return fmt::format("{:.3g} us", ms * 1e3);
}

nlohmann::json to_json(const Environment& environment) {
  const DeviceInfo& d = environment.device;
  return {{"device",
           {{"name", d.name},
            {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
            {"sm_count", d.sm_count},
            {"l2_bytes", d.l2_bytes},
            {"sm_clock_mhz", d.sm_clock_khz / 1000.0},
            {"memory_clock_mhz", d.memory_clock_khz / 1000.0},
            {"memory_bus_bits", d.memory_bus_bits},
            {"global_memory_bytes", d.global_memory_bytes},
            {"driver", cuda_version_string(d.driver_version)},
            {"runtime", cuda_version_string(d.runtime_version)},
            {"kernels", describe_kernel_build(environment.features)},
            {"dispatch_arch", environment.features.arch},
            {"shared_per_block_bytes", environment.features.shared_per_block}}},
          {"ceilings",
           {{"theoretical_bandwidth_gbps", d.theoretical_bandwidth() * 1e-9},
            {"copy_bandwidth_gbps", environment.ceilings.copy_bandwidth * 1e-9},
            {"read_bandwidth_gbps", environment.ceilings.read_bandwidth * 1e-9},
            {"fp32_peak_gflops", d.fp32_peak() * 1e-9},
            {"fp64_peak_gflops", d.fp64_peak() * 1e-9},
            {"host_to_device_gbps", environment.ceilings.host_to_device_bandwidth * 1e-9},
            {"measured_with_bytes", environment.ceilings.buffer_bytes},
            {"host_to_device_measured_with_bytes", environment.ceilings.host_buffer_bytes},
            {"launch_us", environment.ceilings.launch_seconds * 1e6}}},
          {"commit", environment.commit},
          {"date", environment.date},
          {"rooflab", environment.version}};
}

nlohmann::json to_json(const Row& row) {
  return {{"op", row.op},
          {"problem", row.problem},
          {"rung", row.rung},
          {"name", row.name},
          {"idea", row.idea},
          {"vendor", row.vendor},
          {"cpu", row.cpu},
          {"status", status_name(row.status)},
          {"note", row.note},
          {"expected_failure", row.expected_failure},
          {"error", row.error},
          {"tolerance", row.tolerance},
          {"reps", row.reps},
          {"median_ms", row.median_ms},
          {"min_ms", row.min_ms},
          {"max_ms", row.max_ms},
          {"bytes", row.bytes},
          {"flops", row.flops},
          {"gbps", row.gbps},
          {"gflops", row.gflops},
          {"ceiling", row.ceiling},
          {"percent_of_ceiling", row.percent_of_ceiling},
          {"speedup_vs_previous", row.speedup_vs_previous},
          {"speedup_vs_cpu", row.speedup_vs_cpu}};
}

namespace {

// JSON has no infinity or NaN: nlohmann writes them as null. A tolerance of null was infinite
// (a check that only requires a finite result); any other null number was NaN.
double number(const nlohmann::json& json, const char* key) {
  const auto& value = json.at(key);
  if (!value.is_null()) return value.get<double>();
  return std::string(key) == "tolerance" ? std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

Row row_from_json(const nlohmann::json& json) {
  Row row;
  row.op = json.at("op");
  row.problem = json.at("problem");
  row.rung = json.at("rung");
  row.name = json.at("name");
  row.idea = json.at("idea");
  row.vendor = json.at("vendor");
  row.cpu = json.at("cpu");
  const std::string status = json.at("status");
  row.status = status == "ok" ? Status::ok : status == "skipped" ? Status::skipped : Status::failed;
  row.note = json.at("note");
  row.expected_failure = json.value("expected_failure", "");  // absent from older results files
  row.error = number(json, "error");
  row.tolerance = number(json, "tolerance");
  row.reps = json.at("reps");
  row.median_ms = number(json, "median_ms");
  row.min_ms = number(json, "min_ms");
  row.max_ms = number(json, "max_ms");
  row.bytes = number(json, "bytes");
  row.flops = number(json, "flops");
  row.gbps = number(json, "gbps");
  row.gflops = number(json, "gflops");
  row.ceiling = json.at("ceiling");
  row.percent_of_ceiling = number(json, "percent_of_ceiling");
  row.speedup_vs_previous = number(json, "speedup_vs_previous");
  row.speedup_vs_cpu = number(json, "speedup_vs_cpu");
  return row;
}

std::string markdown_tables(const nlohmann::json& results, const std::string& op) {
  const auto& environment = results.at("environment");
  const std::string provenance = fmt::format(
      "{}, commit {}, {}", environment.at("device").at("name").get<std::string>(),
      environment.at("commit").get<std::string>(), environment.at("date").get<std::string>());
  std::string text;
  for (const auto& run : results.at("runs")) {
    if (!op.empty() && run.at("op") != op) continue;
    text += fmt::format("#### {}: {} ({})\n\n", run.at("op").get<std::string>(),
                        run.at("problem").get<std::string>(), provenance);
    if (const auto& model = run.at("model"); model.contains("least_time_ms")) {
      const std::string launch =
          model.contains("launch_us")
              ? ", " + human_time(model.at("launch_us").get<double>() * 1e-3) + ","
              : "";
      text +=
          fmt::format("Least time of one kernel: {} (the launch{} plus the model at the {}).\n\n",
                      human_time(model.at("least_time_ms").get<double>()), launch,
                      model.at("ceiling").get<std::string>());
    }
    text += markdown_header(run.at("model").at("ceiling")) + "\n";
    for (const auto& row : run.at("rows")) text += markdown_row(row_from_json(row)) + "\n";
    text += "\n";
  }
  return text;
}

namespace {

constexpr const char* absent = "—";  // a rung, or a whole run, that a file does not have

// Results written before svd and svd-batched named their input classes have problems without one,
// and their inputs were random: "25 x 25, double" is "25 x 25, double, random matrix".
std::string comparable_problem(const std::string& problem) {
  for (const std::string suffix : {", random matrix", ", random matrices"})
    if (ends_with(problem, suffix)) return problem.substr(0, problem.size() - suffix.size());
  return problem;
}

// One op on one problem across the files: each file's run of it, or null. A file that measured a
// problem twice pairs its second run with the other files' second runs.
struct ComparedRun {
  std::string op;
  std::string problem;  // as the first file that has it names it
  int occurrence = 0;   // 0: the files' first run of this problem; 1: their second; ...
  std::vector<const nlohmann::json*> runs;
};

// The compared runs of every op (or of `op` only), in the order the files first name them.
std::vector<ComparedRun> compared_runs(const std::vector<ResultsFile>& files,
                                       const std::string& op) {
  std::vector<ComparedRun> compared;
  std::map<std::tuple<std::string, std::string, int>, std::size_t> index;
  for (std::size_t f = 0; f < files.size(); ++f) {
    std::map<std::pair<std::string, std::string>, int>
        seen;  // this file's runs of each problem so far
    for (const auto& run : files[f].results.at("runs")) {
      const std::string run_op = run.at("op");
      if (!op.empty() && run_op != op) continue;
      const std::string problem = run.at("problem");
      const std::string key = comparable_problem(problem);
      const int occurrence = seen[{run_op, key}]++;
      const auto [place, added] = index.try_emplace({run_op, key, occurrence}, compared.size());
      if (added)
        compared.push_back(
            {run_op, problem, occurrence, std::vector<const nlohmann::json*>(files.size())});
      compared[place->second].runs[f] = &run;
    }
  }
  return compared;
}

// One file's cells for one rung: its median and percent of ceiling, what happened where it has
// no time, "—" where it lacks the rung.
std::string compared_cells(const std::optional<Row>& row) {
  if (!row) return fmt::format("{} | {}", absent, absent);
  if (row->status == Status::skipped) return "skipped | ";
  if (row->status == Status::failed)
    return row->expected_failure.empty() ? "FAILED | " : "FAILED (by design) | ";
  return fmt::format("{} | {:.1f}%", human_time(row->median_ms), row->percent_of_ceiling);
}

// A file's time for a rung over the first file's: below 1, the file is faster.
std::string time_ratio(const std::optional<Row>& row, const std::optional<Row>& first) {
  const auto timed = [](const std::optional<Row>& r) {
    return r && r->status == Status::ok && r->median_ms > 0;
  };
  return timed(row) && timed(first) ? fmt::format("{:.3g}", row->median_ms / first->median_ms)
                                    : absent;
}

std::string compared_table(const ComparedRun& compared, const std::vector<std::string>& labels) {
  const std::size_t files = compared.runs.size();
  // Each rung, by number and name, with each file's row of it.
  std::map<std::pair<int, std::string>, std::vector<std::optional<Row>>> rungs;
  std::set<std::string> ceilings;
  std::vector<std::string> least_times;
  for (std::size_t f = 0; f < files; ++f) {
    if (!compared.runs[f]) continue;
    const auto& run = *compared.runs[f];
    const auto& model = run.at("model");
    ceilings.insert(model.at("ceiling").get<std::string>());
    if (model.contains("least_time_ms"))
      least_times.push_back(
          fmt::format("{} {}", labels[f], human_time(model.at("least_time_ms").get<double>())));
    for (const auto& json : run.at("rows")) {
      Row row = row_from_json(json);
      rungs.try_emplace({row.rung, row.name}, files).first->second[f] = std::move(row);
    }
  }
  const std::string ceiling = ceilings.size() == 1 ? *ceilings.begin() : "its ceiling";
  const std::string again =
      compared.occurrence ? fmt::format(" (run {} of this problem)", compared.occurrence + 1) : "";
  std::string text = fmt::format("#### {}: {}{}\n\n", compared.op, compared.problem, again);
  if (!least_times.empty())
    text += fmt::format("Least time of one kernel (the launch plus the model at the {}): {}.\n\n",
                        ceiling, fmt::join(least_times, ", "));
  text += "| # | variant |";
  for (std::size_t f = 0; f < files; ++f)
    text += fmt::format(" {} median | % of {} |", labels[f], ceiling) +
            (f ? fmt::format(" {} / {} |", labels[f], labels[0]) : "");
  text += "\n|---:|---|";
  for (std::size_t f = 0; f < files; ++f) text += f ? "---:|---:|---:|" : "---:|---:|";
  text += "\n";
  for (const auto& [rung, rows] : rungs) {
    const Row& named =
        **std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.has_value(); });
    text += fmt::format("| {} | {} |", rung.first,
                        named.vendor ? named.name + " (vendor)" : named.name);
    for (std::size_t f = 0; f < files; ++f)
      text += " " + compared_cells(rows[f]) + " |" +
              (f ? " " + time_ratio(rows[f], rows[0]) + " |" : "");
    text += "\n";
  }
  return text + "\n";
}

}  // namespace

std::vector<std::string> results_labels(const std::vector<ResultsFile>& files) {
  std::vector<std::string> labels;
  for (const ResultsFile& file : files)
    labels.push_back(file.results.at("environment").at("device").at("name").get<std::string>());
  // Adds more(i) to each label that another file's label equals.
  const auto tell_apart = [&](auto&& more) {
    std::map<std::string, int> count;
    for (const std::string& label : labels) ++count[label];
    for (std::size_t i = 0; i < labels.size(); ++i)
      if (count[labels[i]] > 1) labels[i] += more(i);
  };
  tell_apart([&](std::size_t i) {
    const std::string kernels =
        files[i].results.at("environment").at("device").value("kernels", "");
    return kernels.empty() ? std::string() : " (" + kernels + ")";
  });
  // The file's name, or its path where two files of that name are given.
  std::map<std::string, int> names;
  for (const ResultsFile& file : files)
    ++names[std::filesystem::path(file.path).filename().string()];
  tell_apart([&](std::size_t i) {
    const std::string name = std::filesystem::path(files[i].path).filename().string();
    return " [" + (names[name] > 1 ? files[i].path : name) + "]";
  });
  return labels;
}

std::string markdown_comparison(const std::vector<ResultsFile>& files, const std::string& op) {
  const std::vector<std::string> labels = results_labels(files);
  const std::vector<ComparedRun> compared = compared_runs(files, op);
  std::string text =
      "Side by side: each file's median time and percent of its own device's measured ceiling, and "
      "each "
      "later file's time over the first file's (below 1: faster).\n\n";
  for (std::size_t f = 0; f < files.size(); ++f) {
    const auto& environment = files[f].results.at("environment");
    const auto& device = environment.at("device");
    text += fmt::format("- {}: {}", labels[f], device.at("name").get<std::string>());
    if (const std::string kernels = device.value("kernels", ""); !kernels.empty())
      text += ", " + kernels;
    if (const int arch = device.value("dispatch_arch", 0); arch > 0)
      text += fmt::format(", dispatch for sm_{}", arch);
    text += fmt::format(", commit {}, {} ({})", environment.at("commit").get<std::string>(),
                        environment.at("date").get<std::string>(), files[f].path);
    if (std::none_of(compared.begin(), compared.end(),
                     [&](const ComparedRun& run) { return run.runs[f]; }))
      text += op.empty() ? "; no runs" : fmt::format("; no runs of '{}'", op);
    text += "\n";
  }
  text += "\n";
  for (const ComparedRun& run : compared) text += compared_table(run, labels);
  return text;
}

nlohmann::json to_json(const Run& run) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& row : run.rows) rows.push_back(to_json(row));
  return {{"op", run.op},
          {"problem", run.problem},
          {"model",
           {{"bytes", run.model.bytes},
            {"flops", run.model.flops},
            {"ceiling", ceiling_name(run.model.ceiling)}}},
          {"rows", rows}};
}

nlohmann::json results_json(const Environment& environment, std::uint64_t seed,
                            const std::vector<Run>& runs, bool same_inputs) {
  nlohmann::json list = nlohmann::json::array();
  for (const Run& run : runs) {
    nlohmann::json item = to_json(run);
    if (const double least = environment.least_seconds(run.model); least > 0) {
      item["model"]["least_time_ms"] = least * 1e3;
      item["model"]["launch_us"] =
          environment.ceilings.launch_seconds * 1e6;  // merged files keep one environment
    }
    list.push_back(item);
  }
  return {{"rooflab", environment.version},
          {"environment", to_json(environment)},
          {"seed", seed},
          {"same_inputs", same_inputs},
          {"runs", list}};
}

std::string table_header(const std::string& ceiling) {
  return fmt::format("{:>3}  {:<22} {:>10} {:>10} {:>10} {:>9} {:>7} {:>9} {:>8} {:>9}  {}", "#",
                     "variant", "median", "min", "max", "GB/s", "%" + ceiling_short(ceiling),
                     "GFLOP/s", "vs prev", "vs CPU", "check");
}

std::string table_row(const Row& row) {
  const std::string name = row.name + (row.vendor ? " *" : "");
  if (row.status == Status::skipped)
    return fmt::format("{:>3}  {:<22} skipped: {}", row.rung, name, row.note);
  if (row.status == Status::failed)
    return fmt::format("{:>3}  {:<22} {}: {} ({})", row.rung, name, failed_text(row), row.note,
                       check_text(row));
  return fmt::format(
      "{:>3}  {:<22} {:>10} {:>10} {:>10} {:>9.1f} {:>6.1f}% {:>9.1f} {:>8} {:>9}  {}{}", row.rung,
      name, human_time(row.median_ms), human_time(row.min_ms), human_time(row.max_ms), row.gbps,
      row.percent_of_ceiling, row.gflops, speedup(row.speedup_vs_previous),
      speedup(row.speedup_vs_cpu), check_text(row), row.note.empty() ? "" : "  " + row.note);
}

std::string markdown_header(const std::string& ceiling) {
  return fmt::format(
      "| # | variant | median | min | max | GB/s | % of {} | GFLOP/s | vs previous | vs CPU | "
      "check |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
      ceiling);
}

std::string markdown_row(const Row& row) {
  std::string name = row.vendor ? row.name + " (vendor)" : row.name;
  if (row.status != Status::ok)
    return fmt::format("| {} | {} | {}: {} | | | | | | | | |", row.rung, name,
                       row.status == Status::failed ? failed_text(row) : status_name(row.status),
                       row.note);
  if (!row.note.empty()) name += " (" + row.note + ")";
  return fmt::format("| {} | {} | {} | {} | {} | {:.1f} | {:.1f}% | {:.1f} | {} | {} | {} |",
                     row.rung, name, human_time(row.median_ms), human_time(row.min_ms),
                     human_time(row.max_ms), row.gbps, row.percent_of_ceiling, row.gflops,
                     speedup(row.speedup_vs_previous), speedup(row.speedup_vs_cpu),
                     check_text(row));
}

std::string csv_header() {
  return "op,problem,rung,name,vendor,cpu,status,note,error,tolerance,reps,median_ms,min_ms,"
         "max_ms,bytes,flops,gbps,gflops,ceiling,percent_of_ceiling,speedup_vs_previous,"
         "speedup_vs_cpu,expected_failure";
}

std::string csv_row(const Row& row) {
  return fmt::format(
      "{},{},{},{},{},{},{},{},{:.6g},{:.3g},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},"
      "{:.6g},{:.6g},{},{:.4g},{:.4g},{:.4g},{}",
      csv_field(row.op), csv_field(row.problem), row.rung, csv_field(row.name), row.vendor, row.cpu,
      status_name(row.status), csv_field(row.note), row.error, row.tolerance, row.reps,
      row.median_ms, row.min_ms, row.max_ms, row.bytes, row.flops, row.gbps, row.gflops,
      csv_field(row.ceiling), row.percent_of_ceiling, row.speedup_vs_previous, row.speedup_vs_cpu,
      csv_field(row.expected_failure));
}

RowWriter::RowWriter(std::ostream& out, Format format, const Environment& environment,
                     std::uint64_t seed, bool same_inputs)
    : out_(out),
      format_(format),
      environment_(environment),
      seed_(seed),
      same_inputs_(same_inputs) {}

void RowWriter::begin_run(const std::string& op, const std::string& problem, const Model& model) {
  runs_.push_back(Run{op, problem, model, {}});
  const std::string ceiling = ceiling_name(model.ceiling);
  std::string title =
      fmt::format("{}: {} on {} | model {:.4g} MB, {:.4g} MFLOP | {} {:.1f} {}", op, problem,
                  environment_.device.name, model.bytes * 1e-6, model.flops * 1e-6, ceiling,
                  environment_.ceiling_value(model.ceiling) * 1e-9,
                  is_compute_ceiling(model.ceiling) ? "GFLOP/s" : "GB/s");
  if (const double least = environment_.least_seconds(model); least > 0)
    title += fmt::format(" | least time {} (launch {} + the model at the ceiling)",
                         human_time(least * 1e3),
                         human_time(environment_.ceilings.launch_seconds * 1e3));
  switch (format_) {
    case Format::table: out_ << "\n" << title << "\n" << table_header(ceiling) << std::endl; break;
    case Format::md:
      out_ << "\n### " << title << "\n\n" << markdown_header(ceiling) << std::endl;
      break;
    case Format::csv:
      if (!csv_header_written_) out_ << csv_header() << std::endl;
      csv_header_written_ = true;
      break;
    case Format::json: break;
  }
}

void RowWriter::row(const Row& row) {
  switch (format_) {
    case Format::table: out_ << table_row(row) << std::endl; break;
    case Format::md: out_ << markdown_row(row) << std::endl; break;
    case Format::csv: out_ << csv_row(row) << std::endl; break;
    case Format::json: break;
  }
}

void RowWriter::end_run(const std::vector<Row>& rows) { runs_.back().rows = rows; }

void RowWriter::finish() {
  if (format_ == Format::json)
    out_ << results_json(environment_, seed_, runs_, same_inputs_).dump(2) << std::endl;
  if (format_ == Format::table)
    out_ << "(* vendor library; check: error <= tolerance against the CPU reference; seed " << seed_
         << (same_inputs_ ? ", the same inputs for every rung" : "") << ", commit "
         << environment_.commit << ")" << std::endl;
}

}  // namespace rooflab::bench
