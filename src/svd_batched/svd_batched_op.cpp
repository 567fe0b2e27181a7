// The svd-batched op: `batch` m x n matrices, U, S and V of each. The problem, the model, the
// CPU rung and cuSOLVER's comparators (gesvdjBatched up to 32 x 32, gesvdj looped beyond, as
// PyTorch does); the GPU rungs are in ladder.cpp.
#include <algorithm>
#include <climits>
#include <string>

#include "bench/dtype.hpp"
#include "bench/registry.hpp"
#include "cpu/parallel.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/error.hpp"
#include "svd/cusolver_svd.hpp"
#include "svd/svd_workspace.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* op_name = "bench svd-batched";

Problem resolve_batched(Problem problem) {
  if (problem.m == 0 && problem.n == 0) problem.n = 32;
  if (problem.n == 0) problem.n = problem.m;
  if (problem.m == 0) problem.m = problem.n;
  if (problem.batch == 0) problem.batch = 10000;
  require(problem.m >= 1 && problem.m <= 4096, op_name, "--m", "must be in [1, 4096]");
  require(problem.n >= 1 && problem.n <= 4096, op_name, "--n", "must be in [1, 4096]");
  require(problem.batch >= 1 && problem.batch <= INT_MAX, op_name, "--batch",
          "must be in [1, 2^31)");
  require(problem.m * problem.n * problem.batch <= (std::int64_t(1) << 28), op_name,
          "--m, --n, --batch", "at most 2^28 elements in all");
  problem.dtype =
      dtype_name(parse_dtype(problem.dtype, {DType::f32, DType::f64}, DType::f32, op_name));
  problem.matrix = resolve_matrix_class(problem.matrix, op_name);
  return problem;
}

std::string describe_batched(const Problem& problem) {
  return std::to_string(problem.batch) + " x " + std::to_string(problem.m) + " x " +
         std::to_string(problem.n) + ", " + problem.dtype + ", " + problem.matrix + " matrices";
}

Model batched_model(const Problem& problem) {
  const double element = problem.dtype == "float" ? 4 : 8;
  const double m = double(problem.m), n = double(problem.n), k = std::min(m, n);
  const double batch = double(problem.batch);
  return Model{batch * element * (m * n + m * k + n * k + k),
               batch * nominal_svd_flops(problem.m, problem.n),
               problem.dtype == "float" ? Ceiling::fp32_peak : Ceiling::fp64_peak};
}

std::vector<Problem> batched_report_problems(bool quick) {
  std::vector<Problem> problems;
  const auto add = [&problems](std::int64_t batch, std::int64_t n, const char* dtype) {
    Problem problem;
    problem.batch = batch;
    problem.m = problem.n = n;
    problem.dtype = dtype;
    problems.push_back(problem);
  };
  if (quick) {
    for (const int n : {8, 16, 32}) add(1000, n, "float");
    add(100, 64, "float");
    add(10, 128, "double");
    return problems;
  }
  for (const char* dtype : {"float", "double"})
    for (const int n : {8, 16, 32}) add(10000, n, dtype);
  add(1000, 64, "float");
  add(1000, 64, "double");
  add(100, 128, "float");
  add(100, 128, "double");
  add(100, 256, "double");
  add(10, 512, "float");
  add(10, 512, "double");
  return problems;
}

ROOFLAB_OP(Op{
    "svd-batched",
    "one-sided Jacobi SVD of many m x n matrices (--m --n --batch --dtype --matrix), nominal "
    "4 M N^2 + 8 N^3 flops each",
    resolve_batched,
    describe_batched,
    batched_model,
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return make_svd_workspace(
          int(problem.m), int(problem.n), int(problem.batch),
          parse_dtype(problem.dtype, {DType::f32, DType::f64}, DType::f32, op_name),
          problem.matrix);
    },
    batched_report_problems,
    {"--m", "--n", "--batch"},
    /*takes_matrix_class=*/true,
});

// Flops of a batch's nominal SVDs: what the slow comparators' limits are measured in.
double batch_work(const Problem& problem) {
  return double(problem.batch) * nominal_svd_flops(problem.m, problem.n);
}

// Rung 0 — LAPACK dgesvd on the host, the matrices spread over the CPU's threads.
ROOFLAB_VARIANT(Variant{
    "svd-batched", 0, "cpu-lapack-gesvd", "LAPACK dgesvd per matrix on all host threads, in double",
    Where::cpu, false,
    [](const Problem& problem) -> std::string {
      if (batch_work(problem) <= 2e10) return {};
      return "LAPACK on the host would take minutes (limit batch x nominal flops <= 2e10)";
    },
    [](Workspace& workspace, cudaStream_t) {
      visit_svd_workspace(workspace, [](auto& w) {
        w.prepare_host();
        using T = typename std::decay_t<decltype(w.host_a)>::value_type;
        const std::size_t size = std::size_t(w.m) * w.n;
        cpu::parallel_ranges(
            w.batch,
            [&](std::int64_t begin, std::int64_t end, int) {
              for (std::int64_t b = begin; b < end; ++b) {
                cpu::Matrix a = cpu::zeros(w.m, w.n);
                for (std::size_t e = 0; e < size; ++e) a.values[e] = double(w.host_a[b * size + e]);
                const cpu::Svd svd = cpu::lapack_svd(a);
                for (int l = 0; l < w.k; ++l) w.host_s[b * w.k + l] = T(svd.s[l]);
                for (std::size_t e = 0; e < svd.u.values.size(); ++e)
                  w.host_u[b * svd.u.values.size() + e] = T(svd.u.values[e]);
                for (std::size_t e = 0; e < svd.v.values.size(); ++e)
                  w.host_v[b * svd.v.values.size() + e] = T(svd.v.values[e]);
              }
            },
            1);
      });
    }});

// cuSOLVER in the same run: gesvdjBatched where it exists (m, n <= 32), and gesvdj called once
// per matrix beyond, which is what PyTorch uses above 32 x 32.
ROOFLAB_VARIANT(Variant{"svd-batched", 10, "cusolver-gesvdj-batched",
                        "cuSOLVER gesvdjBatched (m, n <= 32 only)", Where::gpu, true,
                        [](const Problem& problem) -> std::string {
                          if (problem.m <= 32 && problem.n <= 32) return {};
                          return "cuSOLVER's gesvdjBatched stops at 32 x 32";
                        },
                        [](Workspace& workspace, cudaStream_t stream) {
                          visit_svd_workspace(workspace, [stream](auto& w) {
                            cusolver_gesvdj_batched(w.a.data(), w.m, w.n, w.batch, w.s.data(),
                                                    w.u.data(), w.v.data(), stream);
                          });
                        }});

ROOFLAB_VARIANT(Variant{"svd-batched", 11, "cusolver-gesvdj-loop",
                        "cuSOLVER gesvdj once per matrix (PyTorch's path)", Where::gpu, true,
                        [](const Problem& problem) -> std::string {
                          if (problem.batch <= 1000) return {};
                          return "one cuSOLVER call per matrix: limit batch <= 1000";
                        },
                        [](Workspace& workspace, cudaStream_t stream) {
                          visit_svd_workspace(workspace, [stream](auto& w) {
                            cusolver_gesvdj_loop(w.a.data(), w.m, w.n, w.batch, w.s.data(),
                                                 w.u.data(), w.v.data(), stream);
                          });
                        }});

}  // namespace
}  // namespace rooflab::bench
