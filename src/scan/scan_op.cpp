// The scan op: problem, model, workspace and the CPU rungs. GPU rungs are in ladder.cu.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "bench/random.hpp"
#include "cpu/parallel.hpp"
#include "cpu/scan.hpp"
#include "scan/scan_workspace.hpp"

namespace rooflab::bench {
namespace {

const std::vector<DType> scan_dtypes = {DType::f32, DType::f64, DType::i32, DType::i64, DType::u32};

DType scan_dtype(const Problem& problem) {
  return parse_dtype(problem.dtype, scan_dtypes, DType::f32, "bench scan");
}

double element_bytes(DType dtype) { return dtype == DType::f64 || dtype == DType::i64 ? 8 : 4; }

// Every GPU rung's float results are held to the production path's bound, the unit tests' own
// (cpu::production_scan_rounding). Rungs whose sums chain along the array (a classic look-back
// through each predecessor's prefix, reduce-then-scan's running sum) have no proof of it for every
// input, but on the lab's random inputs their errors stay below 2 unit roundoffs of sum |x_j|, far
// inside it (docs/scan.md), while a bound that grew with the index would accept an output that
// stops being written after the first few million elements.
// The CPU rungs add left to right: element j passes through up to i roundings on its way to out_i,
// plus one per thread range for the offsets of cpu-threads.
cpu::RoundingBound cpu_rounding() { return {cpu::cpu_threads(), 1}; }

// [0, hi] with hi * n < the type's maximum: no prefix sum wraps or equals the all-ones poison.
template <class T>
std::int64_t integer_inputs_hi(std::int64_t n) {
  const auto max = static_cast<unsigned long long>(std::numeric_limits<T>::max());
  return std::int64_t(std::clamp<unsigned long long>((max - 1) / std::uint64_t(n), 1, 1000));
}

}  // namespace

template <class T>
TypedScanWorkspace<T>::TypedScanWorkspace(std::int64_t n)
    : ScanWorkspace(dtype_of<T>(), n), in(n), out(n) {}

template <class T>
void TypedScanWorkspace<T>::refill(std::uint64_t seed) {
  if constexpr (std::is_floating_point_v<T>)
    fill_random(in.data(), n, seed, nullptr);
  else
    fill_random_integers(in.data(), n, seed, 0, integer_inputs_hi<T>(n), nullptr);
  out.fill_bytes(0xFF);  // NaN for floating point; -1 or the unsigned maximum for integers
  host_in.clear();
  host_out.clear();
}

template <class T>
const std::vector<T>& TypedScanWorkspace<T>::input() {
  if (host_in.empty()) host_in = in.download();
  return host_in;
}

template <class T>
void TypedScanWorkspace<T>::prepare_host() {
  input();
  if (host_out.empty()) {
    std::vector<T> poisoned(n);
    if constexpr (std::is_floating_point_v<T>)
      std::fill(poisoned.begin(), poisoned.end(), std::numeric_limits<T>::quiet_NaN());
    else
      std::fill(poisoned.begin(), poisoned.end(), T(~std::make_unsigned_t<T>(0)));
    host_out = std::move(poisoned);
  }
}

template <class T>
Check TypedScanWorkspace<T>::check(Where where) {
  std::vector<T> downloaded;
  const T* result = host_out.data();
  if (where == Where::gpu) {
    downloaded = out.download();
    result = downloaded.data();
  } else if (std::int64_t(host_out.size()) != n) {
    return Check{false, 0, 0, "no output"};
  }
  const cpu::ScanCheck check =
      cpu::check_scan(input().data(), result, n, cpu::ScanKind::inclusive,
                      where == Where::gpu ? cpu::production_scan_rounding : cpu_rounding());
  return Check{check.passed, check.error, check.tolerance, check.describe()};
}

template class TypedScanWorkspace<float>;
template class TypedScanWorkspace<double>;
template class TypedScanWorkspace<std::int32_t>;
template class TypedScanWorkspace<std::int64_t>;
template class TypedScanWorkspace<std::uint32_t>;

std::unique_ptr<Workspace> make_scan_workspace(DType dtype, std::int64_t n) {
  switch (dtype) {
    case DType::f32: return std::make_unique<TypedScanWorkspace<float>>(n);
    case DType::f64: return std::make_unique<TypedScanWorkspace<double>>(n);
    case DType::i32: return std::make_unique<TypedScanWorkspace<std::int32_t>>(n);
    case DType::i64: return std::make_unique<TypedScanWorkspace<std::int64_t>>(n);
    case DType::u32: return std::make_unique<TypedScanWorkspace<std::uint32_t>>(n);
    case DType::u8: break;
  }
  throw Error("bench scan", "--dtype", std::string(dtype_name(dtype)) + " is not a type of scan");
}

namespace {

ROOFLAB_OP(Op{
    "scan",
    "inclusive prefix sum, out[i] = in[0] + ... + in[i] (announced by the limiting-factors "
    "lecture; reads and writes n)",
    [](Problem problem) {
      if (problem.n == 0) problem.n = std::int64_t(1) << 28;
      require(problem.n >= 1, "bench scan", "--n", "must be at least 1");
      problem.dtype = dtype_name(scan_dtype(problem));
      return problem;
    },
    [](const Problem& problem) {
      return "n = " + std::to_string(problem.n) + ", " + problem.dtype;
    },
    [](const Problem& problem) {
      return Model{2 * element_bytes(scan_dtype(problem)) * double(problem.n), double(problem.n),
                   Ceiling::copy_bandwidth};
    },
    [](const Problem& problem) { return make_scan_workspace(scan_dtype(problem), problem.n); },
    [](bool quick) {
      std::vector<Problem> problems;
      for (const char* dtype : {"float", "int32"})
        for (const int log2_n : quick ? std::vector<int>{20} : std::vector<int>{20, 28}) {
          Problem problem;
          problem.n = std::int64_t(1) << log2_n;
          problem.dtype = dtype;
          problems.push_back(problem);
        }
      return problems;
    },
    {"--n"},
});

// Rung 0 — the CPU loop: one core, one running sum (rooflab's baseline; the lecture only
// announces the parallel prefix sum).
ROOFLAB_VARIANT(Variant{"scan", 0, "cpu-serial", "one CPU core, one running sum (the baseline)",
                        Where::cpu, false, no_limit, on_every_scan_type([](auto& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::inclusive_scan_serial(w.host_in.data(), w.host_out.data(), w.n);
                        })});

// Rung 1 — every CPU core: range sums, their scan, then each range again from its offset. Reads
// the input twice, the price of parallelism that every GPU rung below pays in some form.
ROOFLAB_VARIANT(Variant{"scan", 1, "cpu-threads",
                        "every core: range sums, scan of the sums, each range from its offset",
                        Where::cpu, false, no_limit, on_every_scan_type([](auto& w, cudaStream_t) {
                          w.prepare_host();
                          cpu::inclusive_scan_threads(w.host_in.data(), w.host_out.data(), w.n);
                        })});

}  // namespace
}  // namespace rooflab::bench
