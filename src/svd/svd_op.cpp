// The svd op: one m x n matrix, U, S and V. The problem, the model, the CPU rung and cuSOLVER's
// three SVDs as comparators; the GPU rungs are in ladder.cpp.
#include <algorithm>
#include <climits>
#include <limits>
#include <string>

#include "bench/dtype.hpp"
#include "bench/registry.hpp"
#include "cpu/svd_reference.hpp"
#include "rooflab/error.hpp"
#include "svd/cusolver_svd.hpp"
#include "svd/svd_workspace.hpp"

namespace rooflab::bench {
namespace {

constexpr const char* op_name = "bench svd";

Problem resolve_svd(Problem problem) {
  if (problem.m == 0 && problem.n == 0) problem.n = 256;
  if (problem.n == 0) problem.n = problem.m;
  if (problem.m == 0) problem.m = problem.n;
  require(problem.m >= 1 && problem.m <= INT_MAX, op_name, "--m", "must be in [1, 2^31)");
  require(problem.n >= 1 && problem.n <= INT_MAX, op_name, "--n", "must be in [1, 2^31)");
  require(problem.m * problem.n <= (std::int64_t(1) << 28), op_name, "--m, --n",
          "at most 2^28 elements (the CPU check is cubic)");
  problem.batch = 1;
  problem.dtype =
      dtype_name(parse_dtype(problem.dtype, {DType::f32, DType::f64}, DType::f64, op_name));
  problem.matrix = resolve_matrix_class(problem.matrix, op_name);
  return problem;
}

std::string describe_svd(const Problem& problem) {
  return std::to_string(problem.m) + " x " + std::to_string(problem.n) + ", " + problem.dtype +
         ", " + problem.matrix + " matrix";
}

Model svd_model(const Problem& problem) {
  const double element = problem.dtype == "float" ? 4 : 8;
  const double m = double(problem.m), n = double(problem.n), k = std::min(m, n);
  return Model{element * (m * n + m * k + n * k + k), nominal_svd_flops(problem.m, problem.n),
               problem.dtype == "float" ? Ceiling::fp32_peak : Ceiling::fp64_peak};
}

std::vector<Problem> svd_report_problems(bool quick) {
  std::vector<Problem> problems;
  const auto add = [&problems](std::int64_t n, const char* dtype) {
    Problem problem;
    problem.m = problem.n = n;
    problem.dtype = dtype;
    problems.push_back(problem);
  };
  if (quick) {
    for (const int n : {25, 50, 100, 256}) add(n, "double");
    add(100, "float");
    return problems;
  }
  for (const int n : {25, 50, 100, 125, 256, 512, 1024, 2048}) add(n, "double");
  for (const int n : {25, 100, 256, 1024}) add(n, "float");
  return problems;
}

ROOFLAB_OP(Op{
    "svd",
    "one-sided Jacobi SVD of one m x n matrix, U S V (--m --n --dtype float|double --matrix), "
    "nominal "
    "4 M N^2 + 8 N^3 flops",
    resolve_svd,
    describe_svd,
    svd_model,
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return make_svd_workspace(
          int(problem.m), int(problem.n), 1,
          parse_dtype(problem.dtype, {DType::f32, DType::f64}, DType::f64, op_name),
          problem.matrix);
    },
    svd_report_problems,
    {"--m", "--n"},
    /*takes_matrix_class=*/true,
});

std::string cpu_limit(const Problem& problem) {
  if (std::max(problem.m, problem.n) <= 1024) return {};
  return "LAPACK on the host takes tens of seconds a run beyond 1024 (limit max(m, n) <= 1024)";
}

std::string gesvd_shape_limit(const Problem& problem) {
  if (problem.m >= problem.n) return {};
  return "cuSOLVER's gesvd and gesvdp take m >= n only";
}

// Rung 0 — LAPACK dgesvd on the host (the CPU baseline), in double whatever the type.
ROOFLAB_VARIANT(Variant{"svd", 0, "cpu-lapack-gesvd",
                        "LAPACK dgesvd on the host, in double (the baseline)", Where::cpu, false,
                        cpu_limit, [](Workspace& workspace, cudaStream_t) {
                          visit_svd_workspace(workspace, [](auto& w) {
                            w.prepare_host();
                            cpu::Matrix a = cpu::zeros(w.m, w.n);
                            for (std::size_t e = 0; e < a.values.size(); ++e)
                              a.values[e] = double(w.host_a[e]);
                            const cpu::Svd svd = cpu::lapack_svd(a);
                            using T = typename std::decay_t<decltype(w.host_a)>::value_type;
                            for (int l = 0; l < w.k; ++l) w.host_s[l] = T(svd.s[l]);
                            for (std::size_t e = 0; e < svd.u.values.size(); ++e)
                              w.host_u[e] = T(svd.u.values[e]);
                            for (std::size_t e = 0; e < svd.v.values.size(); ++e)
                              w.host_v[e] = T(svd.v.values[e]);
                          });
                        }});

// cuSOLVER, in the same run: the Jacobi SVD (gesvdj), QR iteration (gesvd) and the polar
// decomposition (Xgesvdp), each with its workspace query and allocation inside the call.
ROOFLAB_VARIANT(Variant{
    "svd", 10, "cusolver-gesvdj", "cuSOLVER's Jacobi SVD (economy, default tolerance)", Where::gpu,
    true, no_limit, [](Workspace& workspace, cudaStream_t stream) {
      visit_svd_workspace(workspace, [stream](auto& w) {
        cusolver_gesvdj_loop(w.a.data(), w.m, w.n, 1, w.s.data(), w.u.data(), w.v.data(), stream);
      });
    }});

ROOFLAB_VARIANT(Variant{
    "svd", 11, "cusolver-gesvdp", "cuSOLVER's polar-decomposition SVD (Xgesvdp, economy)",
    Where::gpu, true, gesvd_shape_limit, [](Workspace& workspace, cudaStream_t stream) {
      visit_svd_workspace(workspace, [stream](auto& w) {
        cusolver_gesvdp(w.a.data(), w.m, w.n, w.s.data(), w.u.data(), w.v.data(), stream);
      });
    }});

ROOFLAB_VARIANT(Variant{
    "svd", 12, "cusolver-gesvd", "cuSOLVER's QR-iteration SVD (gesvd, thin U and V^T)", Where::gpu,
    true, gesvd_shape_limit, [](Workspace& workspace, cudaStream_t stream) {
      visit_svd_workspace(workspace, [stream](auto& w) {
        cusolver_gesvd(w.a.data(), w.m, w.n, w.s.data(), w.u.data(), w.v.data(), stream);
      });
    }});

}  // namespace
}  // namespace rooflab::bench
