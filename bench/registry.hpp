#pragma once
// The ladder as data. An Op says what a problem is (its sizes, its bytes-and-flops model, how to
// build a validated workspace); a Variant is one rung of that op's ladder (or a vendor comparator,
// or a CPU baseline). The CLI, the report and the GPU tests all iterate this registry: adding a
// rung is adding one ROOFLAB_VARIANT, next to its kernel or, for the kernels the library
// dispatches to (the SVD's), in the op's ladder.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rooflab::bench {

// The sizes a user asked for; an op fills in its defaults and rejects what it cannot run.
struct Problem {
  std::int64_t n = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t m = 0;
  std::int64_t batch = 0;
  std::string dtype;
  // Histogram only: the number of bins (--bins) and how the input is drawn (--dist: a
  // distribution, uniform, equal, sorted, zipf, hot or normal, and a bin mapping, ":scaled" or
  // ":identity"; histogram_op.cpp).
  std::int64_t bins = 0;
  std::string dist;
  // svd and svd-batched only (Op::takes_matrix_class): the class of the input matrices (--matrix,
  // cpu/svd_matrices.hpp); the op's resolve makes an empty one "random".
  std::string matrix;
};

// Which measured ceiling a row is compared against. host_transfer_bandwidth is the measured
// pinned host-to-device copy rate: what host-device transfers are bounded by (not HBM).
enum class Ceiling {
  copy_bandwidth,
  read_bandwidth,
  fp32_peak,
  fp64_peak,
  host_transfer_bandwidth
};
const char* ceiling_name(Ceiling ceiling);
// Whether the ceiling is a rate of flops (a peak) rather than of bytes.
bool is_compute_ceiling(Ceiling ceiling);

// The least work the op must do: bytes that must cross device memory, flops that must be done.
struct Model {
  double bytes = 0;
  double flops = 0;
  Ceiling ceiling = Ceiling::copy_bandwidth;
};

// Outcome of comparing a variant's output with the CPU reference.
struct Check {
  bool passed = false;
  double error = 0;      // the op's error measure (say, max relative error)
  double tolerance = 0;  // the bound it was held to
  std::string detail;    // first mismatch, unwritten element, ...
};

// Where a variant computes: CPU variants are timed with a host clock and checked on the host.
enum class Where { cpu, gpu };

// One problem instance: inputs on the device, the reference, and outputs to check. refill()
// draws fresh inputs from its seed (random, or the op's input class: an svd matrix class may be
// zero), recomputes the reference in higher precision and poisons the outputs, so that an element
// a variant fails to write cannot pass.
class Workspace {
 public:
  virtual ~Workspace() = default;
  virtual void refill(std::uint64_t seed) = 0;
  virtual Check check(Where where) = 0;
};

struct Variant {
  std::string op;
  int rung = 0;
  std::string name;  // short and stable: appears in the CLI, results files and docs
  std::string idea;  // one line: what this rung changes and why
  Where where = Where::gpu;
  bool vendor = false;  // a vendor library's implementation, shown for comparison
  // Empty when the variant can run this problem; otherwise why not ("skipped: <why>").
  std::function<std::string(const Problem&)> limit;
  // Computes the op once, asynchronously on `stream` (GPU) or synchronously (CPU).
  std::function<void(Workspace&, cudaStream_t)> run;
  // Optional. Restores the state the rung must start from (say, managed pages back on the host for
  // a first-touch rung) before every run the runner makes: validation, warm-up and each timed
  // repetition. It is outside the timed region: work it queues on `stream` precedes the start
  // event.
  std::function<void(Workspace&, cudaStream_t)> prepare = {};
  // Optional. What the rung reports about itself once timed (occupancy and registers, what its own
  // clock read), shown in the row's note next to the time.
  std::function<std::string(Workspace&)> note = {};
  // Non-empty for a rung that is wrong on purpose (the race a lesson is about): why it fails. Its
  // row reads "FAILED (by design: ...)" and does not count as a failure of the run.
  std::string expected_failure = {};
};

struct Op {
  std::string name;
  std::string summary;
  // Fills unset sizes with the op's defaults; throws rooflab::Error for sizes it cannot run.
  std::function<Problem(Problem)> resolve;
  std::function<std::string(const Problem&)> describe;  // "n = 268435456, float"
  std::function<Model(const Problem&)> model;
  std::function<std::unique_ptr<Workspace>(const Problem&)> make_workspace;
  // The sizes `rooflab report` measures (quick: a smaller set for a fast run).
  std::function<std::vector<Problem>(bool quick)> report_problems;
  // The size options the op reads ("--n", "--m", "--rows", "--cols", "--batch", "--bins"): the
  // command line refuses the others for it, before any GPU work (reduce --rows 5 would otherwise
  // measure the default n).
  std::vector<std::string> size_options;
  // Whether the op's inputs are SVD test matrices of a class (Problem::matrix, --matrix); the
  // command line rejects a class other than "random" for the other ops.
  bool takes_matrix_class = false;
};

class Registry {
 public:
  bool add_op(Op op);
  bool add_variant(Variant variant);

  const Op& op(const std::string& name) const;  // throws rooflab::Error naming the known ops
  bool has_op(const std::string& name) const { return ops_.count(name) != 0; }
  std::vector<std::string> op_names() const;  // sorted
  // The op's variants in ladder order (by rung number).
  std::vector<const Variant*> variants(const std::string& op) const;

 private:
  std::map<std::string, Op> ops_;
  std::map<std::string, std::vector<Variant>> variants_;
};

// The registry the rooflab program and the tests use; ops and rungs add themselves at start-up.
Registry& registry();

// Adapts a function on a concrete workspace type to Variant::run.
template <class ConcreteWorkspace, class Fn>
std::function<void(Workspace&, cudaStream_t)> on(Fn fn) {
  return [fn](Workspace& workspace, cudaStream_t stream) {
    fn(static_cast<ConcreteWorkspace&>(workspace), stream);
  };
}

// A limit for slow rungs: skipped, saying `why`, when problem.n exceeds max_n.
std::function<std::string(const Problem&)> at_most_n(std::int64_t max_n, std::string why);
inline std::string no_limit(const Problem&) { return {}; }

}  // namespace rooflab::bench

#define ROOFLAB_CONCAT_INNER(a, b) a##b
#define ROOFLAB_CONCAT(a, b) ROOFLAB_CONCAT_INNER(a, b)
// Registers at static-initialization time; the lab is linked as object files so nothing is dropped.
#define ROOFLAB_OP(...)                                                \
  static const bool ROOFLAB_CONCAT(rooflab_op_registered_, __LINE__) = \
      ::rooflab::bench::registry().add_op(__VA_ARGS__)
#define ROOFLAB_VARIANT(...)                                                \
  static const bool ROOFLAB_CONCAT(rooflab_variant_registered_, __LINE__) = \
      ::rooflab::bench::registry().add_variant(__VA_ARGS__)
