// The two reduction ops of the lab, reduce (Harris's reduction and the loop-unrolling lab: one sum
// over n elements) and reduce-rows (the Harris's reduction document's batched reduction: one sum
// per row), with their CPU rungs. The GPU rungs are in ladder.cu and rows_ladder.cu.
#include <limits>
#include <string>

#include "cpu/reduce.hpp"
#include "reduce/reduce_workspace.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

constexpr std::int64_t kibi = std::int64_t(1) << 10;
constexpr std::int64_t mebi = std::int64_t(1) << 20;

std::string resolve_dtype(const Problem& problem, const char* op) {
  return dtype_name(parse_dtype(problem.dtype, reduce_dtypes(), DType::f32, op));
}

double element_bytes(const Problem& problem) {
  double bytes = 0;
  visit_dtype(parse_dtype(problem.dtype, reduce_dtypes(), DType::f32, "bench"),
              [&](auto zero) { bytes = sizeof(zero); });
  return bytes;
}

Problem shape(std::int64_t rows, std::int64_t cols) {
  Problem problem;
  problem.rows = rows;
  problem.cols = cols;
  problem.dtype = "float";
  return problem;
}

ROOFLAB_OP(Op{
    "reduce",
    "sum of n elements (Harris's reduction and the loop-unrolling lab): n x sizeof(T) bytes read "
    "once, one add each",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 24;
      require(problem.n >= 1, "bench reduce", "--n", "must be at least 1");
      problem.dtype = resolve_dtype(problem, "bench reduce");
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", " + problem.dtype;
    },
    [](const Problem& problem) {
      const double n = double(problem.n);
      return Model{n * element_bytes(problem), n, Ceiling::read_bandwidth};
    },
    [](const Problem& problem) {
      return make_reduce_workspace(
          parse_dtype(problem.dtype, reduce_dtypes(), DType::f32, "bench reduce"), 1, problem.n);
    },
    [](bool quick) {
      std::vector<Problem> problems;
      for (const int power : quick ? std::vector<int>{20} : std::vector<int>{24, 28}) {
        Problem problem;
        problem.n = std::int64_t(1) << power;
        problem.dtype = "float";
        problems.push_back(problem);
      }
      return problems;
    },
    {"--n"},
});

ROOFLAB_OP(Op{
    "reduce-rows",
    "one sum per row of a rows x cols matrix (the Harris's reduction document's batched "
    "reduction), any shape",
    [](Problem problem) {
      if (problem.rows == 0) problem.rows = 64 * kibi;
      if (problem.cols == 0) problem.cols = 4 * kibi;
      require(problem.rows >= 1, "bench reduce-rows", "--rows", "must be at least 1");
      require(problem.cols >= 1, "bench reduce-rows", "--cols", "must be at least 1");
      require(problem.rows <= std::numeric_limits<std::int64_t>::max() / problem.cols,
              "bench reduce-rows", "--rows", "times --cols does not fit in 64 bits");
      problem.dtype = resolve_dtype(problem, "bench reduce-rows");
      return problem;
    },
    [](const Problem& problem) {
      return "rows = " + std::to_string(problem.rows) + ", cols = " + std::to_string(problem.cols) +
             ", " + problem.dtype;
    },
    [](const Problem& problem) {
      const double n = double(problem.rows) * double(problem.cols);
      return Model{n * element_bytes(problem), n, Ceiling::read_bandwidth};
    },
    [](const Problem& problem) {
      return make_reduce_workspace(
          parse_dtype(problem.dtype, reduce_dtypes(), DType::f32, "bench reduce-rows"),
          problem.rows, problem.cols);
    },
    [](bool quick) {
      // Tiny rows, medium rows (two widths), long rows, a few huge rows: each path of the
      // production dispatch, 128 MiB to 1 GiB of floats (quick: the same shapes, smaller).
      if (quick)
        return std::vector<Problem>{shape(64 * kibi, 32), shape(16 * kibi, 1 * kibi),
                                    shape(4 * kibi, 4 * kibi), shape(64, 256 * kibi),
                                    shape(8, 2 * mebi)};
      return std::vector<Problem>{shape(1 * mebi, 32), shape(256 * kibi, 1 * kibi),
                                  shape(64 * kibi, 4 * kibi), shape(1 * kibi, 256 * kibi),
                                  shape(8, 32 * mebi)};
    },
    {"--rows", "--cols"},
});

// Rung 0 — one CPU core, one loop (rooflab's stand-in for the loop-unrolling lab's CPU sum, which
// it times but does not show), summing in double (integers in wrapping unsigned arithmetic).
ROOFLAB_VARIANT(Variant{
    "reduce", 0, "cpu-serial",
    "one CPU core, one loop (for the loop-unrolling lab's CPU sum, whose code it does not show)",
    Where::cpu, false, no_limit, [](Workspace& workspace, cudaStream_t) {
      with_element_type(workspace, [](auto& w) {
        w.prepare_host();
        w.host_out[0] = cpu::sum_serial(w.host_in.data(), w.cols);
      });
    }});

// Rung 1 — every CPU core, a contiguous range each: the fair CPU baseline, bounded by the host's
// memory bandwidth rather than one core's add latency.
ROOFLAB_VARIANT(Variant{"reduce", 1, "cpu-parallel", "every CPU core, a contiguous range each",
                        Where::cpu, false, no_limit, [](Workspace& workspace, cudaStream_t) {
                          with_element_type(workspace, [](auto& w) {
                            w.prepare_host();
                            w.host_out[0] = cpu::sum_parallel(w.host_in.data(), w.cols);
                          });
                        }});

// Rung 0 — every CPU core on the rows (a share of the elements each, whatever the shape).
ROOFLAB_VARIANT(Variant{
    "reduce-rows", 0, "cpu-parallel", "every CPU core, an equal share of the elements each",
    Where::cpu, false, no_limit, [](Workspace& workspace, cudaStream_t) {
      with_element_type(workspace, [](auto& w) {
        w.prepare_host();
        cpu::row_sums_parallel(w.host_in.data(), w.rows, w.cols, w.host_out.data());
      });
    }});

}  // namespace
}  // namespace rooflab::bench
