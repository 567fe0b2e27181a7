#pragma once
// Validates and times the variants of one op on one problem. A rung never times itself: the
// runner owns fresh inputs, poisoned outputs, the check, warm-up, L2 flushing and the median.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/environment.hpp"
#include "bench/registry.hpp"

namespace rooflab::bench {

struct RunOptions {
  int reps = 20;     // timed repetitions (fewer when a variant would exceed the time budget)
  int warmup = 2;    // untimed runs before timing a GPU variant (CPU variants have none)
  bool hot = false;  // true: keep L2 warm between repetitions
  bool ignore_limits = false;     // true: run variants beyond their size limits too
  std::vector<std::string> only;  // rung numbers or names; empty: every variant
  std::uint64_t seed = 1;  // each variant that runs draws the next seed from here, CPU ones first
  // true: every variant's inputs are drawn with seed, so all of them solve the same problem (for
  // methods whose work depends on the input, such as the sweeps of a Jacobi SVD).
  bool same_inputs = false;
  double seconds_per_variant = 4;  // time budget for one variant's timed repetitions
};

// The timed repetitions of a variant whose first timed run took one_run_ms: as many as fit
// seconds_per_variant, at least 3 for a median, and never more than `reps` asks (--reps 1 on a
// rung of a minute a run times it once).
int affordable_reps(double one_run_ms, const RunOptions& options);

enum class Status { ok, failed, skipped };
const char* status_name(Status status);

struct Row {
  std::string op;
  std::string problem;  // Op::describe of the problem
  int rung = 0;
  std::string name;
  std::string idea;
  bool vendor = false;
  bool cpu = false;
  Status status = Status::ok;
  std::string note;  // why skipped, what failed, or what the variant reports about itself
  std::string
      expected_failure;  // the variant's reason to fail by design (Variant::expected_failure)
  double error = 0;
  double tolerance = 0;
  int reps = 0;
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double bytes = 0;  // model
  double flops = 0;  // model
  double gbps = 0;
  double gflops = 0;
  std::string ceiling;  // which ceiling % refers to
  double percent_of_ceiling = 0;
  double speedup_vs_previous = 0;  // 0: nothing earlier to compare with
  double speedup_vs_cpu = 0;
};

// A FAILED row counts against the run unless its variant fails by design.
bool counts_as_failure(const Row& row);

// True when `variant` is selected by --only (by rung number or name); empty selects all.
bool selected(const Variant& variant, const std::vector<std::string>& only);

// The fastest CPU row that ran, or nullptr: the reference of "vs CPU", which reads 1.00x there, so
// that a ladder that times a single-core loop and a multithreaded one is judged against the better.
const Row* fastest_cpu_row(const std::vector<Row>& rows);

// Fills the derived columns (rates, % of ceiling, speed-ups) of rows measured in ladder order,
// "vs CPU" against `cpu`; the first form takes the fastest CPU row among the rows.
void derive_rates(std::vector<Row>& rows, const Model& model, const Environment& environment);
void derive_rates(std::vector<Row>& rows, const Model& model, const Environment& environment,
                  const Row* cpu);

class Runner {
 public:
  Runner(const Registry& registry, const Environment& environment, RunOptions options);

  // Every selected variant of `op` on `problem`, in ladder order; on_row sees each row as soon as
  // it is measured (rates and speed-ups filled).
  std::vector<Row> run(const std::string& op, Problem problem,
                       const std::function<void(const Row&)>& on_row = {});

 private:
  const Registry& registry_;
  const Environment& environment_;
  RunOptions options_;
};

}  // namespace rooflab::bench
