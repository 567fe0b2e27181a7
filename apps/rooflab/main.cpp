// rooflab: the command line of the lab. Parsing only; the commands are in commands.cpp.
#include <CLI/CLI.hpp>

#include <iostream>
#include <random>

#include "commands.hpp"
#include "cpu/svd_matrices.hpp"
#include "rooflab/error.hpp"
#if ROOFLAB_HAVE_DISTRIBUTED
#include "bench/sizes.hpp"
#include "distributed/lab/distributed_lab.hpp"
#endif

namespace {

void add_run_options(CLI::App* command, rooflab::bench::RunOptions& options, std::string& seed) {
  command->add_option("--reps", options.reps, "timed repetitions (median reported)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--warmup", options.warmup, "untimed runs before timing")
      ->check(CLI::Range(0, 1000));
  command->add_flag("--hot", options.hot, "keep L2 warm between repetitions (default: flushed)");
  command->add_flag("--ignore-limits", options.ignore_limits,
                    "also run rungs beyond their size limits (slow rungs; you accept the wait)");
  command->add_option("--seed", seed, "seed of the random inputs (default: drawn at start)");
  command->add_flag(
      "--same-inputs", options.same_inputs,
      "every rung gets the same random inputs (default: each its own draw); for methods "
      "whose work depends on the input, such as the svd's sweeps");
}

std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + command->get_name();
  return names;
}

// The first word on the command line when it names no command, else empty. The program itself
// takes no option with a value, so its first word that is not an option is the command.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; }))
      if (command->check_name(word)) return {};
    return word;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rooflab;
  CLI::App app{
      "rooflab: GPU primitives, each optimization ladder validated and measured against "
      "the GPU's limits and the vendor libraries."};
  app.require_subcommand(1, 1);
  app.set_version_flag(
      "--version", [] { return app::version_text(); },
      "the version, the git commit and the CUDA runtime, then exit");

  std::string info_format = "table";
  auto* info_command = app.add_subcommand("info", "the device and its measured ceilings");
  info_command->add_option("--format", info_format, "table or json (csv and md print the table)");

  std::string list_op;
  auto* list_command = app.add_subcommand("list", "the ops, or one op's rungs (no GPU needed)");
  list_command->add_option("OP", list_op, "an op: its rungs, numbered, with their ideas");

  std::vector<std::string> table_paths;
  std::string table_op;
  auto* table_command = app.add_subcommand(
      "table", "markdown tables from a results file, or from several side by side (no GPU needed)");
  table_command
      ->add_option(
          "RESULTS", table_paths,
          "results .json files written by bench or report; with two or more, each op and problem "
          "gets one table: every file's median and % of its ceiling per rung, the later files' "
          "time over the first's, and a dash where a file lacks the rung")
      ->required();
  table_command->add_option("--op", table_op, "only this op's runs");

  app::BenchRequest request;
  std::string only, seed;
  auto* bench_command = app.add_subcommand(
      "bench", "validate and time every rung of one op (no size given: the op's report sizes)");
  bench_command->add_option("OP", request.op, "the op (rooflab list shows them)")->required();
  bench_command->add_option(
      "--n", request.n,
      "elements; bytes for transfer and pageable-access; columns for svd (2^28, 256M, 1G, 5e7)");
  bench_command->add_option("--rows", request.rows, "rows of a matrix");
  bench_command->add_option("--cols", request.cols, "columns of a matrix");
  bench_command->add_option("--m", request.m,
                            "rows of an svd matrix; heavy elements per 32 for divergence");
  bench_command->add_option("--batch", request.batch, "matrices in a batch");
  bench_command->add_option("--dtype", request.dtype, "element type (op-specific)");
  bench_command->add_option("--bins", request.bins, "histogram: number of bins");
  bench_command->add_option("--dist", request.dist,
                            "histogram: input values, uniform, equal, sorted, zipf, hot or normal, "
                            "with :identity for one bin per integer (default :scaled)");
  bench_command->add_option(
      "--matrix", request.matrix,
      "svd, svd-batched: the input matrices' class, or several comma-separated (a problem each), "
      "default random (rooflab list svd describes each): " +
          cpu::svd_matrix_class_names());
  bench_command->add_option("--only", only, "rungs to run, by number or name, comma-separated");
  bench_command->add_option("--format", request.format, "table, csv, json or md");
  bench_command->add_option(
      "--out", request.out,
      "also write the results to this file (.json, .csv, .md choose the format)");
  add_run_options(bench_command, request.options, seed);
  bool first_call = false;
  bench_command->add_flag(
      "--first-call", first_call,
      "instead: the first call of the one rung --only names, in this fresh process, step by step "
      "(the driver's start, the context, the workspace, the first and second runs)");
#if ROOFLAB_HAVE_DISTRIBUTED
  int gpus = 0;  // --gpus N: the sharded ops over N GPUs (src/distributed/lab), not the registry
  bench_command
      ->add_option("--gpus", gpus,
                   std::string("run OP sharded over this many GPUs (NCCL; OP: ") +
                       dist::lab::sharded_bench_ops() + "), --n elements a rank (default 2^30)")
      ->check(CLI::Range(1, 1024));
#endif

  std::string report_directory = "rooflab-report";
  bool quick = false;
  bench::RunOptions report_options;
  std::string report_seed;
  auto* report_command = app.add_subcommand(
      "report", "every ladder at its report sizes: report.md, results.json, charts");
  report_command->add_option("--out", report_directory, "output directory");
  report_command->add_flag("--quick", quick, "smaller sizes, for a fast look");
  bool course = false;
  auto* course_flag =
      report_command->add_flag("--course", course,
                               "instead: the timed figures of the course documents beside the "
                               "rungs that reproduce them on the documents' axes (course.md)");
  std::string course_document;
  report_command
      ->add_option("--document", course_document,
                   "with --course: that document's figures only (its name as course.md's "
                   "headings give it, in any case, e.g. \"the Jacobi SVD paper\")")
      ->needs(course_flag);
  add_run_options(report_command, report_options, report_seed);

  std::string svd_in, svd_out;
  auto* svd_command = app.add_subcommand(
      "svd",
      "SVD of a float32/float64 .npy matrix (m, n) or stack (b, m, n): PREFIX_S, _U, _V.npy");
  svd_command->add_option("--in", svd_in, "the .npy file (C or Fortran order)")->required();
  svd_command->add_option("--out", svd_out, "write PREFIX_S.npy, PREFIX_U.npy, PREFIX_V.npy");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    if (const std::string command = unknown_command(app, argc, argv); !command.empty()) {
      std::cerr << "rooflab: '" << command
                << "' is not a command (the commands: " << command_names(app)
                << "; see rooflab --help)\n";
      return 2;
    }
    std::cerr << "rooflab: " << error.what() << " (see rooflab --help)\n";
    return 2;
  }

  try {
    const auto seed_of = [](const std::string& text) -> std::uint64_t {
      if (text.empty()) return std::random_device{}();
      try {
        return std::stoull(text);
      } catch (const std::exception&) {
        throw app::UsageError("rooflab: --seed: '" + text + "' is not a non-negative integer");
      }
    };
    // Bad names in list and info are usage errors, like bench's.
    const auto usage = [](auto&& action) {
      try {
        return action();
      } catch (const Error& error) {
        throw app::UsageError(error.what());
      }
    };
    if (*list_command) {
      usage([&] { app::list(std::cout, bench::registry(), list_op); });
      return 0;
    }
    if (*table_command) {
      app::table(std::cout, table_paths, table_op);
      return 0;
    }
    if (*info_command) {
      const auto format = usage([&] { return bench::parse_format(info_format); });
      app::require_gpu();
      app::info(std::cout, bench::make_environment(), format);
#if ROOFLAB_HAVE_DISTRIBUTED
      // The interconnect ladder where there is an interconnect (the table form only: json stays one
      // object).
      if (const int count = dist::lab::visible_gpus(); count > 1 && format == bench::Format::table)
        dist::lab::interconnect_table(std::cout, count);
#endif
      return 0;
    }
    if (*svd_command) return app::svd_command(std::cout, svd_in, svd_out);
    if (*bench_command) {
#if ROOFLAB_HAVE_DISTRIBUTED
      if (gpus > 0) {
        dist::lab::ShardedBenchOptions sharded;
        sharded.op = request.op;
        sharded.gpus = gpus;
        sharded.n_per_rank =
            usage([&] { return request.n.empty() ? 0 : bench::parse_size(request.n, "--n"); });
        sharded.reps = request.options.reps;
        sharded.format = request.format;
        sharded.out = request.out;
        app::require_gpu();
        return dist::lab::sharded_bench(std::cout, sharded) == 0 ? 0 : 3;
      }
#endif
      request.options.only = app::split_commas(only);
      request.options.seed = seed_of(seed);
      if (first_call) return app::first_call(std::cout, request) == 0 ? 0 : 3;
      return app::bench(std::cout, request) == 0 ? 0 : 3;
    }
    report_options.seed = seed_of(report_seed);
    if (course)
      return app::course_report(std::cout, report_directory, course_document, report_options) == 0
                 ? 0
                 : 3;
    return app::report(std::cout, report_directory, quick, report_options) == 0 ? 0 : 3;
  } catch (const app::UsageError& error) {
    std::cerr << error.what() << "\n";
    return 2;
  } catch (const app::NoDevice& error) {
    std::cerr << "rooflab: " << error.what() << "; this command needs an NVIDIA GPU\n";
    return 1;
  } catch (const Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "rooflab: " << error.what() << "\n";
    return 1;
  }
}
