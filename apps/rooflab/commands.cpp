#include "commands.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "bench/environment.hpp"
#include "bench/sizes.hpp"
#include "core/device_info.hpp"
#include "cpu/npy.hpp"
#include "cpu/svd_matrices.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"
#include "rooflab/svd.hpp"

namespace rooflab::app {
namespace {

std::int64_t size_or_zero(const std::string& text, const char* option) {
  return text.empty() ? 0 : bench::parse_size(text, option);
}

// "svd, svd-batched": the ops whose inputs are SVD test matrices of a class.
std::string ops_taking_matrix_class(const bench::Registry& registry) {
  std::string names;
  for (const std::string& name : registry.op_names())
    if (registry.op(name).takes_matrix_class) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// The size options of bench, each with where its text and its parsed value live.
struct SizeOption {
  const char* flag;
  std::string BenchRequest::*text;
  std::int64_t bench::Problem::*value;
};
constexpr SizeOption size_options[] = {
    {"--n", &BenchRequest::n, &bench::Problem::n},
    {"--rows", &BenchRequest::rows, &bench::Problem::rows},
    {"--cols", &BenchRequest::cols, &bench::Problem::cols},
    {"--m", &BenchRequest::m, &bench::Problem::m},
    {"--batch", &BenchRequest::batch, &bench::Problem::batch},
    {"--bins", &BenchRequest::bins, &bench::Problem::bins},
};

// --only names rungs by number or name; one that names none of the op's is a mistake, caught
// before any GPU work.
void require_rungs_exist(const bench::Registry& registry, const std::string& op,
                         const std::vector<std::string>& only) {
  const std::vector<const bench::Variant*> ladder = registry.variants(op);
  for (const std::string& wanted : only) {
    const bool found = std::any_of(
        ladder.begin(), ladder.end(),
        [&](const bench::Variant* variant) { return bench::selected(*variant, {wanted}); });
    if (found || ladder.empty()) continue;
    require(false, "bench", "--only",
            fmt::format(
                "'{}' is not a rung of {} (numbers {} to {} or names; rooflab list {} shows them)",
                wanted, op, ladder.front()->rung, ladder.back()->rung, op));
  }
}

void run_one(bench::Runner& runner, bench::RowWriter& writer, const bench::Registry& registry,
             const std::string& op, const bench::Problem& problem, std::vector<bench::Run>* runs,
             int* failures) {
  const bench::Op& definition = registry.op(op);
  const bench::Problem resolved = definition.resolve(problem);
  writer.begin_run(op, definition.describe(resolved), definition.model(resolved));
  const auto rows = runner.run(op, resolved, [&](const bench::Row& row) {
    writer.row(row);
    if (bench::counts_as_failure(row)) ++*failures;
  });
  writer.end_run(rows);
  if (runs) runs->push_back({op, definition.describe(resolved), definition.model(resolved), rows});
}

}  // namespace

void require_gpu() {
  const std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) throw NoDevice(why);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<bench::Problem> to_problems(const BenchRequest& request,
                                        const bench::Registry& registry) {
  const bench::Op& op = registry.op(request.op);
  const bool sizes_given = !(request.n.empty() && request.rows.empty() && request.cols.empty() &&
                             request.m.empty() && request.batch.empty() && request.bins.empty());
  std::vector<bench::Problem> problems;
  if (sizes_given) {
    bench::Problem problem;
    problem.n = size_or_zero(request.n, "--n");
    problem.rows = size_or_zero(request.rows, "--rows");
    problem.cols = size_or_zero(request.cols, "--cols");
    problem.m = size_or_zero(request.m, "--m");
    problem.batch = size_or_zero(request.batch, "--batch");
    problem.bins = size_or_zero(request.bins, "--bins");
    // 0 would read as "not given" (the op's default): every size given must be at least 1, and
    // one of the sizes the op reads (Op::size_options).
    for (const SizeOption& option : size_options) {
      if ((request.*option.text).empty()) continue;
      require(problem.*option.value > 0, "bench", option.flag, "must be at least 1");
      require(std::count(op.size_options.begin(), op.size_options.end(), option.flag) > 0, "bench",
              option.flag,
              fmt::format("does not apply to {} ({} takes {})", op.name, op.name,
                          op.size_options.empty()
                              ? "no size"
                              : fmt::format("{}", fmt::join(op.size_options, ", "))));
    }
    problems.push_back(problem);
  } else {
    problems = op.report_problems(false);
  }
  // --matrix names one class or several: each problem once per class, in the order given, so
  // that one process (one set of ceilings) measures a whole table of classes.
  std::vector<std::string> classes = split_commas(request.matrix);
  require(request.matrix.empty() || !classes.empty(), "bench", "--matrix", "names no class");
  if (classes.empty()) classes.push_back({});  // the op's default inputs
  // Every op draws random inputs; another class would be silently ignored.
  for (const std::string& matrix_class : classes)
    require(matrix_class.empty() || matrix_class == "random" || op.takes_matrix_class, "bench",
            "--matrix",
            "'" + matrix_class + "' applies to " + ops_taking_matrix_class(registry) + " only; " +
                request.op + " draws its own random inputs");
  std::vector<bench::Problem> resolved;
  for (bench::Problem problem : problems) {
    if (!request.dtype.empty()) problem.dtype = request.dtype;
    if (!request.dist.empty()) problem.dist = request.dist;
    for (const std::string& matrix_class : classes) {
      bench::Problem with_class = problem;
      if (!matrix_class.empty()) with_class.matrix = matrix_class;
      resolved.push_back(op.resolve(with_class));
    }
  }
  require_rungs_exist(registry, request.op, request.options.only);
  return resolved;
}

std::string version_text() {
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  return fmt::format(
      "rooflab {} (commit {}), CUDA runtime {}, {}", bench::build_version(), bench::build_commit(),
      runtime ? cuda_version_string(runtime) : "unknown",
      driver ? "NVIDIA driver for CUDA " + cuda_version_string(driver) : "no NVIDIA driver");
}

void list(std::ostream& out, const bench::Registry& registry, const std::string& op) {
  if (op.empty()) {
    std::size_t width = 0;  // the longest name: the summaries start in one column
    for (const std::string& name : registry.op_names()) width = std::max(width, name.size());
    for (const std::string& name : registry.op_names())
      out << fmt::format("{:<{}} {}\n", name, width, registry.op(name).summary);
    return;
  }
  if (!registry.has_op(op))
    throw UsageError(fmt::format("rooflab list: '{}' is not an op (the ops: {})", op,
                                 fmt::join(registry.op_names(), ", ")));
  const bench::Op& definition = registry.op(op);
  out << definition.name << ": " << definition.summary << "\n";
  for (const bench::Variant* variant : registry.variants(op)) {
    const char* kind = variant->vendor                       ? "vendor"
                       : variant->where == bench::Where::cpu ? "cpu"
                                                             : "gpu";
    out << fmt::format("{:>3}  {:<22} {:<6} {}\n", variant->rung, variant->name, kind,
                       variant->idea);
  }
  if (!definition.takes_matrix_class) return;
  out << "input classes (--matrix CLASS, default random):\n";
  for (const cpu::SvdMatrixClass& matrix_class : cpu::svd_matrix_classes())
    out << fmt::format("     {:<22} {}\n", matrix_class.name, matrix_class.description);
}

namespace {

// A results file read and checked: its markdown tables (making them reads every field they need)
// and its ops. A file that cannot be read or is not a results file is a UsageError naming it.
struct CheckedResults {
  bench::ResultsFile file;
  std::string tables;
  std::set<std::string> ops;
};

CheckedResults read_results(const std::string& path, const std::string& op) {
  std::ifstream stream(path);
  if (!stream) throw UsageError("rooflab: cannot read results file '" + path + "'");
  CheckedResults checked{{path, {}}, {}, {}};
  try {
    checked.file.results = nlohmann::json::parse(stream);
    checked.tables = bench::markdown_tables(checked.file.results, op);
    for (const auto& run : checked.file.results.at("runs"))
      checked.ops.insert(run.at("op").get<std::string>());
  } catch (const nlohmann::json::exception& error) {
    throw UsageError("rooflab: '" + path + "' is not a rooflab results file (" + error.what() +
                     ")");
  }
  return checked;
}

std::string ops_text(const std::set<std::string>& ops) {
  return ops.empty() ? "it has no runs" : fmt::format("its ops: {}", fmt::join(ops, ", "));
}

}  // namespace

void table(std::ostream& out, const std::vector<std::string>& results_paths,
           const std::string& op) {
  std::vector<CheckedResults> checked;
  for (const std::string& path : results_paths) checked.push_back(read_results(path, op));
  const auto has_op = [&](const CheckedResults& results) {
    return op.empty() || results.ops.count(op) > 0;
  };
  if (checked.size() == 1) {
    if (!has_op(checked[0]))
      throw UsageError(fmt::format("rooflab table: '{}' has no runs of '{}' ({})", results_paths[0],
                                   op, ops_text(checked[0].ops)));
    out << checked[0].tables;
    return;
  }
  if (std::none_of(checked.begin(), checked.end(), has_op)) {
    std::vector<std::string> each;
    for (const CheckedResults& results : checked)
      each.push_back(fmt::format("'{}': {}", results.file.path, ops_text(results.ops)));
    throw UsageError(
        fmt::format("rooflab table: no file has runs of '{}' ({})", op, fmt::join(each, "; ")));
  }
  std::vector<bench::ResultsFile> files;
  for (CheckedResults& results : checked) files.push_back(std::move(results.file));
  try {
    out << bench::markdown_comparison(files, op);
  } catch (const nlohmann::json::exception& error) {
    throw UsageError(
        fmt::format("rooflab table: cannot put these results side by side ({})", error.what()));
  }
}

std::string info_text(const bench::Environment& environment) {
  const DeviceInfo& d = environment.device;
  const double sm_mhz = d.sm_clock_khz / 1e3;
  const double memory_mhz = d.memory_clock_khz / 1e3;
  std::string text;
  text += fmt::format("device           {} (compute capability {}.{})\n", d.name, d.cc_major,
                      d.cc_minor);
  text += fmt::format("                 {} SMs, {:.1f} MB L2, {:.1f} GiB memory\n", d.sm_count,
                      d.l2_bytes / 1e6, d.global_memory_bytes / double(1 << 30));
  const DeviceFeatures& features = environment.features;
  text += fmt::format(
      "kernels          {}; thread-block clusters and programmatic launch: {}; shared "
      "memory {} KB a block (opt-in), {} KB an SM\n",
      describe_kernel_build(features), features.clusters() ? "yes" : "no (before sm_90)",
      features.shared_per_block / 1024, features.shared_per_sm / 1024);
  text += fmt::format("clocks           SM {:.0f} MHz, memory {:.0f} MHz, bus {} bits\n", sm_mhz,
                      memory_mhz, d.memory_bus_bits);
  text += fmt::format("versions         driver {}, runtime {}, rooflab {} ({})\n",
                      cuda_version_string(d.driver_version), cuda_version_string(d.runtime_version),
                      environment.version, environment.commit);
  text += fmt::format("bandwidth        theoretical {:.0f} GB/s = 2 x {:.0f} MHz x {} bits / 8\n",
                      d.theoretical_bandwidth() * 1e-9, memory_mhz, d.memory_bus_bits);
  text += fmt::format(
      "                 measured copy {:.0f} GB/s ({:.0f}% of theoretical): device-to-device "
      "memcpy, bytes read + written, {:.2f} GB buffers\n",
      environment.ceilings.copy_bandwidth * 1e-9,
      100 * environment.ceilings.copy_bandwidth / d.theoretical_bandwidth(),
      environment.ceilings.buffer_bytes * 1e-9);
  text += fmt::format(
      "                 measured read {:.0f} GB/s ({:.0f}% of theoretical): a kernel streaming "
      "16-byte loads\n",
      environment.ceilings.read_bandwidth * 1e-9,
      100 * environment.ceilings.read_bandwidth / d.theoretical_bandwidth());
  text += fmt::format(
      "host link        measured host-to-device {:.1f} GB/s: cudaMemcpy from pinned memory, {:.0f} "
      "MB copies (what transfers are bounded by)\n",
      environment.ceilings.host_to_device_bandwidth * 1e-9,
      environment.ceilings.host_buffer_bytes * 1e-6);
  text += fmt::format(
      "launch           measured {:.2f} us: an empty kernel of one warp, timed with events behind "
      "busy work (the floor under every timed kernel)\n",
      environment.ceilings.launch_seconds * 1e6);
  if (fp32_cores_per_sm(d.cc_major, d.cc_minor) == 0)
    text += fmt::format(
        "peaks            unknown: rooflab has no core counts for compute capability {}.{} "
        "(the compute-bound rungs report no % of ceiling)\n",
        d.cc_major, d.cc_minor);
  text += fmt::format("fp32 peak        {:.1f} TFLOP/s = {} SMs x {} cores x 2 flop x {:.0f} MHz\n",
                      d.fp32_peak() * 1e-12, d.sm_count, fp32_cores_per_sm(d.cc_major, d.cc_minor),
                      sm_mhz);
  text += fmt::format("fp64 peak        {:.1f} TFLOP/s = {} SMs x {} cores x 2 flop x {:.0f} MHz\n",
                      d.fp64_peak() * 1e-12, d.sm_count, fp64_cores_per_sm(d.cc_major, d.cc_minor),
                      sm_mhz);
  text += fmt::format(
      "ridge point      {:.1f} flop/byte in fp32 (peak / copy bandwidth): below it a "
      "kernel is memory-bound\n",
      d.fp32_peak() / environment.ceilings.copy_bandwidth);
  return text;
}

void info(std::ostream& out, const bench::Environment& environment, bench::Format format) {
  if (format == bench::Format::json)
    out << bench::to_json(environment).dump(2) << "\n";
  else
    out << info_text(environment);
}

int bench(std::ostream& out, const BenchRequest& request) {
  const bench::Registry& registry = bench::registry();
  bench::Format format;
  std::vector<bench::Problem> problems;
  try {
    format = bench::parse_format(request.format);
    problems = to_problems(request, registry);
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  std::ofstream file;
  if (!request.out.empty()) {
    file.open(request.out);
    if (!file) throw UsageError("rooflab: cannot write --out file '" + request.out + "'");
  }
  require_gpu();
  const bench::Environment environment = bench::make_environment();
  bench::Runner runner(registry, environment, request.options);
  bench::RowWriter writer(out, format, environment, request.options.seed,
                          request.options.same_inputs);
  std::vector<bench::Run> runs;
  int failures = 0;
  for (const bench::Problem& problem : problems)
    run_one(runner, writer, registry, request.op, problem, &runs, &failures);
  writer.finish();
  if (file) {
    bench::RowWriter file_writer(file, bench::format_for_path(request.out, format), environment,
                                 request.options.seed, request.options.same_inputs);
    for (const bench::Run& run : runs) {
      file_writer.begin_run(run.op, run.problem, run.model);
      for (const bench::Row& row : run.rows) file_writer.row(row);
      file_writer.end_run(run.rows);
    }
    file_writer.finish();
  }
  return failures;
}

int first_call(std::ostream& out, const BenchRequest& request) {
  const bench::Registry& registry = bench::registry();
  std::vector<bench::Problem> problems;
  try {
    problems = to_problems(request, registry);
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  if (problems.size() != 1)
    throw UsageError(
        "rooflab bench --first-call: give the problem's sizes and at most one --matrix class "
        "(one problem)");
  std::vector<const bench::Variant*> chosen;
  for (const bench::Variant* variant : registry.variants(request.op))
    if (!request.options.only.empty() && bench::selected(*variant, request.options.only))
      chosen.push_back(variant);
  if (chosen.size() != 1)
    throw UsageError("rooflab bench --first-call: name exactly one rung with --only");
  const bench::Variant& variant = *chosen.front();
  const bench::Op& op = registry.op(request.op);
  const bench::Problem problem = op.resolve(problems.front());
  if (variant.limit && !variant.limit(problem).empty())
    throw UsageError("rooflab bench --first-call: " + variant.name +
                     " skips this problem: " + variant.limit(problem));

  using clock = std::chrono::steady_clock;
  auto last = clock::now();
  const auto step = [&](const char* what) {
    const auto now = clock::now();
    out << fmt::format("  {:<44} {:>10.3f} ms\n", what,
                       std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  };
  const auto synchronize = [] {
    ROOFLAB_CUDA("bench --first-call", "waiting for the device", cudaDeviceSynchronize());
  };
  require_gpu();
  out << "first call of " << request.op << " rung " << variant.rung << " " << variant.name << ", "
      << op.describe(problem) << ", by the host's clock in a fresh process:\n";
  step("finding the device (the driver starts)");
  ROOFLAB_CUDA("bench --first-call", "creating the context", cudaFree(nullptr));
  step("creating the context (cudaFree(0))");
  const std::unique_ptr<bench::Workspace> workspace = op.make_workspace(problem);
  workspace->refill(request.options.seed);
  synchronize();
  step("the workspace: allocation and the input's fill");
  if (variant.prepare) variant.prepare(*workspace, nullptr);
  variant.run(*workspace, nullptr);
  synchronize();
  step("the rung, first run (its kernels load)");
  const bench::Check check = workspace->check(variant.where);
  // The set-up the runner does before every timed run (an in-place rung's copy of its input),
  // outside the second run's time as outside the harness's.
  if (variant.prepare) variant.prepare(*workspace, nullptr);
  synchronize();
  last = clock::now();
  variant.run(*workspace, nullptr);
  synchronize();
  step("the rung, second run");
  out << "  check: " << (check.passed ? "passed" : "FAILED") << ", " << check.detail << "\n";
  return check.passed ? 0 : 1;
}

namespace {
std::string minutes_and_seconds(double seconds) {
  const long whole = long(seconds + 0.5);
  return whole >= 60 ? fmt::format("{}m{:02}s", whole / 60, whole % 60) : fmt::format("{}s", whole);
}
}  // namespace

std::string progress_line(int index, int total, const std::string& what, double elapsed_seconds) {
  std::string line = fmt::format("rooflab report: ladder {} of {} ({}); {} elapsed", index, total,
                                 what, minutes_and_seconds(elapsed_seconds));
  if (index > 1)
    line += ", about " + minutes_and_seconds(elapsed_seconds / (index - 1) * (total - index + 1)) +
            " left";
  return line;
}

int report(std::ostream& out, const std::string& directory, bool quick,
           const bench::RunOptions& options) {
  namespace fs = std::filesystem;
  require_gpu();
  fs::create_directories(directory);
  const bench::Registry& registry = bench::registry();
  const bench::Environment environment = bench::make_environment();
  out << info_text(environment);

  bench::Runner runner(registry, environment, options);
  bench::RowWriter writer(out, bench::Format::table, environment, options.seed,
                          options.same_inputs);
  std::vector<bench::Run> runs;
  int failures = 0;
  std::vector<std::pair<std::string, bench::Problem>> ladders;
  for (const std::string& op : registry.op_names())
    for (const bench::Problem& problem : registry.op(op).report_problems(quick))
      ladders.emplace_back(op, problem);
  // Progress on stderr, so that the tables on stdout stay as they are: the report takes minutes.
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < ladders.size(); ++i) {
    const auto& [op, problem] = ladders[i];
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << progress_line(
                     int(i + 1), int(ladders.size()),
                     op + ", " + registry.op(op).describe(registry.op(op).resolve(problem)),
                     elapsed)
              << std::endl;
    run_one(runner, writer, registry, op, problem, &runs, &failures);
  }
  writer.finish();

  const fs::path results = fs::path(directory) / "results.json";
  std::ofstream(results)
      << bench::results_json(environment, options.seed, runs, options.same_inputs).dump(2) << "\n";

  std::ofstream markdown(fs::path(directory) / "report.md");
  markdown << "# rooflab report\n\n"
           << environment.date << ", commit " << environment.commit << ", seed " << options.seed
           << (options.same_inputs ? ", the same inputs for every rung" : "") << "\n\n```\n"
           << info_text(environment) << "```\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bench::Run& run = runs[i];
    markdown << "\n## " << run.op << ": " << run.problem << "\n\n"
             << bench::markdown_header(bench::ceiling_name(run.model.ceiling)) << "\n";
    for (const bench::Row& row : run.rows) markdown << bench::markdown_row(row) << "\n";
    markdown << "\n![" << run.op << " ladder](ladder-" << i << ".png)\n";
  }
  markdown << "\n## Roofline\n\n![every measured variant on the roofline](roofline.png)\n";
  std::set<std::string> ops;
  for (const bench::Run& run : runs) ops.insert(run.op);
  for (const std::string& op :
       ops)  // the per-op charts name each op's fastest rung and vendor rung
    markdown << "\n![" << op << " on the roofline](roofline-" << op << ".png)\n";

  const fs::path plot = fs::path(ROOFLAB_SOURCE_DIR) / "scripts" / "plot.py";
  const std::string arguments = " '" + results.string() + "' --out '" + directory + "'";
  const std::string command = "python3 '" + plot.string() + "' ladder" + arguments +
                              " && python3 '" + plot.string() + "' roofline" + arguments;
  if (!fs::exists(plot) || std::system(command.c_str()) != 0)
    out << "rooflab: charts not drawn (needs python3 with matplotlib and " << plot.string()
        << ")\n";
  out << "report written to " << directory
      << " (report.md, results.json, ladder-*.png, roofline*.png)\n";
  return failures;
}

BenchRequest course_request(const bench::CourseFigure& figure) {
  BenchRequest request;
  request.op = figure.op;
  const std::vector<std::pair<std::string, std::string BenchRequest::*>> flags{
      {"--n", &BenchRequest::n},          {"--rows", &BenchRequest::rows},
      {"--cols", &BenchRequest::cols},    {"--m", &BenchRequest::m},
      {"--batch", &BenchRequest::batch},  {"--bins", &BenchRequest::bins},
      {"--dtype", &BenchRequest::dtype},  {"--dist", &BenchRequest::dist},
      {"--matrix", &BenchRequest::matrix}};
  for (std::size_t i = 0; i < figure.options.size(); i += 2) {
    const std::string& flag = figure.options[i];
    const auto known = std::find_if(flags.begin(), flags.end(),
                                    [&](const auto& entry) { return entry.first == flag; });
    require(known != flags.end() && i + 1 < figure.options.size(), "report --course",
            figure.item.c_str(),
            "takes '" + flag + "' with a value: a course figure sets sizes, --dtype, --dist and " +
                "--matrix only");
    request.*(known->second) = figure.options[i + 1];
  }
  request.options.only = {figure.rung};
  return request;
}

std::vector<bench::CourseFigure> course_figures_of(const std::string& document) {
  const std::vector<bench::CourseFigure>& all = bench::course_figures();
  if (document.empty()) return all;
  std::vector<bench::CourseFigure> figures;
  std::vector<std::string> documents;
  // course.md's headings capitalize the names ("The Jacobi SVD paper"): any case is taken.
  const auto same_name = [&document](const std::string& name) {
    return std::equal(name.begin(), name.end(), document.begin(), document.end(),
                      [](char a, char b) {
                        return std::tolower(static_cast<unsigned char>(a)) ==
                               std::tolower(static_cast<unsigned char>(b));
                      });
  };
  for (const bench::CourseFigure& figure : all) {
    if (same_name(figure.document)) figures.push_back(figure);
    if (std::find(documents.begin(), documents.end(), figure.document) == documents.end())
      documents.push_back(figure.document);
  }
  if (figures.empty())
    throw UsageError(
        fmt::format("rooflab report --course: '{}' is not a document with timed figures (they "
                    "are: {})",
                    document, fmt::join(documents, ", ")));
  return figures;
}

int course_report(std::ostream& out, const std::string& directory, const std::string& document,
                  const bench::RunOptions& options) {
  namespace fs = std::filesystem;
  const bench::Registry& registry = bench::registry();
  const std::vector<bench::CourseFigure> figures = course_figures_of(document);
  // Each problem once, with the rungs its figures name: (op, problem) -> figures.
  std::vector<std::pair<bench::Problem, std::vector<std::size_t>>> ladders;
  std::vector<std::string> ladder_ops;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const BenchRequest request = course_request(figures[i]);
    const bench::Problem problem = to_problems(request, registry).at(0);
    const std::string what = registry.op(request.op).describe(problem);
    std::size_t l = 0;
    while (l < ladders.size() && !(ladder_ops[l] == request.op &&
                                   registry.op(request.op).describe(ladders[l].first) == what))
      ++l;
    if (l == ladders.size()) {
      ladders.push_back({problem, {}});
      ladder_ops.push_back(request.op);
    }
    ladders[l].second.push_back(i);
  }
  require_gpu();
  fs::create_directories(directory);
  const bench::Environment environment = bench::make_environment();
  bench::RowWriter writer(out, bench::Format::table, environment, options.seed,
                          options.same_inputs);
  std::vector<bench::Run> runs;
  std::vector<bench::CourseMeasurement> today(figures.size());
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t l = 0; l < ladders.size(); ++l) {
    bench::RunOptions ladder_options = options;
    ladder_options.only.clear();
    for (const std::size_t i : ladders[l].second) ladder_options.only.push_back(figures[i].rung);
    bench::Runner runner(registry, environment, ladder_options);
    std::cerr
        << progress_line(
               int(l + 1), int(ladders.size()),
               ladder_ops[l] + ", " + registry.op(ladder_ops[l]).describe(ladders[l].first),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
        << std::endl;
    run_one(runner, writer, registry, ladder_ops[l], ladders[l].first, &runs, &failures);
    for (const std::size_t i : ladders[l].second)
      for (const bench::Row& row : runs.back().rows)
        if (row.name == figures[i].rung)
          today[i] = row.status == bench::Status::ok
                         ? bench::CourseMeasurement{true, row.median_ms, ""}
                         : bench::CourseMeasurement{false, 0,
                                                    std::string(bench::status_name(row.status)) +
                                                        (row.note.empty() ? "" : ": " + row.note)};
  }
  writer.finish();
  std::ofstream(fs::path(directory) / "course-results.json")
      << bench::results_json(environment, options.seed, runs, options.same_inputs).dump(2) << "\n";
  std::ofstream(fs::path(directory) / "course.md") << bench::course_markdown(
      figures, today, environment.device.name + ", commit " + environment.commit);
  out << "course report written to " << directory << " (course.md, course-results.json)\n";
  return failures;
}

namespace {

// One matrix (or stack) of the svd command, column-major and packed like svd_batched's.
struct SvdInput {
  int batch = 1, m = 0, n = 0;
  bool stack = false;
  std::vector<double> packed;  // matrix b's (i, j) at b*m*n + i + j*m
};

SvdInput svd_input(const cpu::NpyArray& array, const std::string& path) {
  const std::size_t rank = array.shape.size();
  if (rank != 2 && rank != 3)
    throw UsageError("rooflab svd: " + path + " has rank " + std::to_string(rank) +
                     "; give a matrix (m, n) or a stack of matrices (b, m, n)");
  for (const std::int64_t extent : array.shape)
    if (extent < 1 || extent > std::numeric_limits<int>::max())
      throw UsageError("rooflab svd: " + path + " has an extent of " + std::to_string(extent) +
                       "; every extent must be in [1, 2^31)");
  SvdInput input;
  input.stack = rank == 3;
  input.batch = input.stack ? int(array.shape[0]) : 1;
  input.m = int(array.shape[rank - 2]);
  input.n = int(array.shape[rank - 1]);
  const std::int64_t B = input.batch, m = input.m, n = input.n;
  input.packed.resize(std::size_t(B * m * n));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        input.packed[std::size_t(b * m * n + i + j * m)] =
            array.at(array.fortran_order ? b + B * (i + m * j) : (b * m + i) * n + j);
  return input;
}

// rows x k column-major blocks of a packed batch, in C order of (batch, rows, k) or (rows, k).
std::vector<double> c_order(const std::vector<double>& packed, std::int64_t batch,
                            std::int64_t rows, std::int64_t k) {
  std::vector<double> out(packed.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t l = 0; l < k; ++l)
        out[std::size_t((b * rows + i) * k + l)] = packed[std::size_t(b * rows * k + i + l * rows)];
  return out;
}

template <class T>
int run_svd_command(std::ostream& out, const SvdInput& input, cpu::NpyType type,
                    const std::string& prefix) {
  const int B = input.batch, m = input.m, n = input.n, k = std::min(m, n);
  std::vector<T> host_a(input.packed.begin(), input.packed.end());
  DeviceBuffer<T> A(host_a), S(std::size_t(k) * B), U(std::size_t(m) * k * B),
      V(std::size_t(n) * k * B);
  std::vector<SvdInfo> info(B);
  if (input.stack)
    svd_batched<T>(A.data(), m, n, B, S.data(), U.data(), V.data(), info.data());
  else
    info[0] = svd<T>(A.data(), m, n, m, S.data(), U.data(), m, V.data(), n);
  const std::vector<T> s = S.download(), u = U.download(), v = V.download();

  int most_sweeps = 0, unconverged = 0;
  double worst_residual = 0;
  for (int b = 0; b < B; ++b) {
    most_sweeps = std::max(most_sweeps, info[b].sweeps);
    unconverged += !info[b].converged;
    cpu::Matrix a = cpu::zeros(m, n), left = cpu::zeros(m, k), right = cpu::zeros(n, k);
    for (std::size_t e = 0; e < a.values.size(); ++e)
      a.values[e] = double(host_a[b * a.values.size() + e]);
    for (std::size_t e = 0; e < left.values.size(); ++e)
      left.values[e] = u[b * left.values.size() + e];
    for (std::size_t e = 0; e < right.values.size(); ++e)
      right.values[e] = v[b * right.values.size() + e];
    const std::vector<double> values(s.begin() + std::ptrdiff_t(b) * k,
                                     s.begin() + std::ptrdiff_t(b + 1) * k);
    const double ulp = std::numeric_limits<T>::epsilon();
    // svd_accuracy's residual is ||A - U S V^T||_1 / (||A||_1 max(m, n) ulp).
    worst_residual =
        std::max(worst_residual,
                 cpu::svd_accuracy(a, values, left, right, ulp).residual * std::max(m, n) * ulp);
  }
  const char* type_name = type == cpu::NpyType::float32 ? "float32" : "float64";
  if (input.stack)
    out << fmt::format(
        "svd of {} matrices of {} x {} {}: at most {} sweeps, {}; largest residual "
        "||A - U S V^T||_1 / ||A||_1 = {:.3g}\n",
        B, m, n, type_name, most_sweeps,
        unconverged ? fmt::format("{} not converged", unconverged) : "all converged",
        worst_residual);
  else
    out << fmt::format(
        "svd of {} x {} {}: {} sweeps, {}; residual ||A - U S V^T||_1 / ||A||_1 = {:.3g}\n", m, n,
        type_name, most_sweeps, unconverged ? "NOT converged" : "converged", worst_residual);
  if (prefix.empty()) return unconverged ? 3 : 0;

  using Shape = std::vector<std::int64_t>;
  const auto shaped = [&](Shape matrix_shape) {
    if (input.stack) matrix_shape.insert(matrix_shape.begin(), B);
    return matrix_shape;
  };
  cpu::write_npy(prefix + "_S.npy", shaped({k}), type, std::vector<double>(s.begin(), s.end()));
  cpu::write_npy(prefix + "_U.npy", shaped({m, k}), type,
                 c_order(std::vector<double>(u.begin(), u.end()), B, m, k));
  cpu::write_npy(prefix + "_V.npy", shaped({n, k}), type,
                 c_order(std::vector<double>(v.begin(), v.end()), B, n, k));
  out << "wrote " << prefix << "_S.npy, " << prefix << "_U.npy, " << prefix
      << "_V.npy (A = U diag(S) V^T)\n";
  return unconverged ? 3 : 0;
}

}  // namespace

int svd_command(std::ostream& out, const std::string& in, const std::string& prefix) {
  cpu::NpyArray array;
  try {
    array = cpu::read_npy(in);
  } catch (const std::runtime_error& error) {
    throw UsageError(std::string("rooflab svd: ") + error.what());
  }
  const SvdInput input = svd_input(array, in);
  require_gpu();
  if (array.type == cpu::NpyType::float32)
    return run_svd_command<float>(out, input, array.type, prefix);
  return run_svd_command<double>(out, input, array.type, prefix);
}

}  // namespace rooflab::app
