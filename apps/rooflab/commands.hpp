#pragma once
// The rooflab program's commands, separated from argument parsing so that tests can call them.
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/course.hpp"
#include "bench/format.hpp"
#include "bench/registry.hpp"
#include "bench/runner.hpp"

namespace rooflab::app {

// Raised for bad command-line input: printed as one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct BenchRequest {
  std::string op;
  std::string n, rows, cols, m, batch, bins;  // as typed; parsed by to_problems
  std::string dtype;
  std::string dist;
  std::string matrix;  // svd, svd-batched: the input matrices' class, or several comma-separated
                       // (empty: random)
  std::string format = "table";
  std::string out;
  bench::RunOptions options;
};

// The non-empty parts of a comma-separated list ("1,,3," gives "1" and "3").
std::vector<std::string> split_commas(const std::string& text);

// Sizes parsed and checked against the op before any GPU work: bad input fails in one line.
// Without any size option, the op's report problems (its tables), each with --dtype if given.
// A size of 0, a size option the op does not read and an --only naming no rung of the op are
// rejected too (rooflab::Error).
std::vector<bench::Problem> to_problems(const BenchRequest& request,
                                        const bench::Registry& registry);

// `rooflab --version`: the version, the git commit of the build and the CUDA runtime (and the
// driver's CUDA version, or that there is none). Needs no GPU.
std::string version_text();

// `rooflab list [OP]`: works without a GPU; an unknown op is a UsageError naming the ops. An op
// that takes --matrix lists the classes too.
void list(std::ostream& out, const bench::Registry& registry, const std::string& op);
// `rooflab table RESULTS.json... [--op OP]`: markdown tables from a results file (no GPU needed),
// or from several side by side (bench::markdown_comparison). An op with no runs in the file, or in
// none of the files, is a UsageError naming the ops each has; so is a file that is not a results
// file, naming it.
void table(std::ostream& out, const std::vector<std::string>& results_paths, const std::string& op);
// `rooflab info`: the device, its ceilings and the lecture's peak arithmetic.
void info(std::ostream& out, const bench::Environment& environment, bench::Format format);
std::string info_text(const bench::Environment& environment);
// `rooflab bench OP`: returns the number of FAILED rows.
int bench(std::ostream& out, const BenchRequest& request);
// `rooflab bench OP --only RUNG --first-call`: what one rung's first call costs in a fresh process,
// by the host's clock, each step synchronized: finding the device (the driver's start), creating
// the context, the workspace (allocation and the input's fill), the rung's first run and its
// second. The memory-basics lab's naive histogram and transpose each took about a second
// (docs/course.md, M6 and M10): what would a timed region that began before the context hold?
// Needs exactly one problem and one rung; the rung's result is checked. Returns 1 when the
// check fails.
int first_call(std::ostream& out, const BenchRequest& request);

// `rooflab report`: every op at its report sizes into DIR/report.md, results.json and charts.
// rooflab report's line before ladder `index` (from 1) of `total`: which, the time so far and, from
// the second on, an estimate of what is left at the average time per ladder so far.
std::string progress_line(int index, int total, const std::string& what, double elapsed_seconds);

int report(std::ostream& out, const std::string& directory, bool quick,
           const bench::RunOptions& options);

// The bench request that reproduces a course figure: its op and options (a flag the bench does
// not take is a rooflab::Error naming it).
BenchRequest course_request(const bench::CourseFigure& figure);
// The figures `rooflab report --course` runs: every one when `document` is empty, else that
// document's (its name as course.md's headings give it, in any case), in their order; another name, or a
// document without timed figures (Harris's reduction gives none in its text), is a UsageError
// naming the documents that have them.
std::vector<bench::CourseFigure> course_figures_of(const std::string& document);
// `rooflab report --course [--document NAME]`: each figure's rung on its problem (each problem run
// once, only the rungs the figures name) beside the document's time, into DIR/course.md and
// DIR/course-results.json. One document at a time fits a run into a shorter time limit.
int course_report(std::ostream& out, const std::string& directory, const std::string& document,
                  const bench::RunOptions& options);

// `rooflab svd --in A.npy [--out PREFIX]`: the SVD of a float32 or float64 matrix (rank 2, m x n)
// or stack (rank 3, b x m x n) read from .npy, in C or Fortran order; writes PREFIX_S.npy,
// PREFIX_U.npy and PREFIX_V.npy (C order, the input's type) when a prefix is given, and prints
// the sweeps and the residual. Bad files, types and ranks are usage errors.
int svd_command(std::ostream& out, const std::string& in, const std::string& prefix);

// Raised when a GPU command finds no usable device: printed as one line, exit status 1.
struct NoDevice : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void require_gpu();

}  // namespace rooflab::app
