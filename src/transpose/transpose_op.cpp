// The transpose op: problem, model, workspace and the CPU rungs. GPU rungs are in ladder.cu.
#include <algorithm>
#include <cstring>
#include <string>

#include "bench/random.hpp"
#include "cpu/transpose.hpp"
#include "rooflab/error.hpp"
#include "transpose/transpose_workspace.hpp"

namespace rooflab::bench {

TransposeElement transpose_element(const std::string& name) {
  static const TransposeElement known[] = {{"float", 4, true},
                                           {"double", 8, true},
                                           {"uint8", 1, false},
                                           {"uint16", 2, false},
                                           {"float4", 16, false}};
  static const char* const aliases[] = {"f32", "f64", "u8", "u16", "f32x4"};
  if (name.empty()) return known[0];
  for (int k = 0; k < 5; ++k)
    if (name == known[k].name || name == aliases[k]) return known[k];
  throw Error("bench transpose", "--dtype",
              "'" + name + "' is not a type of this op (float, double, uint8, uint16, float4)");
}

TransposeWorkspace::TransposeWorkspace(std::int64_t rows, std::int64_t cols,
                                       TransposeElement element)
    : rows(rows),
      cols(cols),
      element(std::move(element)),
      in(std::size_t(rows * cols) * this->element.bytes),
      out(std::size_t(rows * cols) * this->element.bytes) {}

void TransposeWorkspace::refill(std::uint64_t seed) {
  seed_ = seed;
  const std::int64_t count = rows * cols;
  if (element.floating && element.bytes == 4)
    fill_random(reinterpret_cast<float*>(in.data()), count, seed, nullptr);
  else if (element.floating)
    fill_random(reinterpret_cast<double*>(in.data()), count, seed, nullptr);
  else
    fill_random_integers<std::uint8_t>(in.data(), std::int64_t(in.size()), seed, 0, 254, nullptr);
  out.fill_bytes(0xFF);  // NaN, or a byte pattern no input element has: unwritten elements fail
  host_in.clear();
  host_out.clear();
}

void TransposeWorkspace::prepare_host() {
  if (!host_in.empty()) return;
  host_in = in.download();
  host_out.assign(in.size(), 0xFF);
}

Check TransposeWorkspace::check(Where where) {
  const std::vector<unsigned char> result = where == Where::gpu ? out.download() : host_out;
  if (result.size() != in.size()) return Check{false, 0, 0, "no output"};
  const std::uint64_t seed = seed_;
  const auto input_byte = [&](std::int64_t b) -> unsigned char {
    if (!element.floating)
      return static_cast<unsigned char>(random_integer(seed, std::uint64_t(b), 0, 254));
    unsigned char bytes[8];
    const std::uint64_t index = std::uint64_t(b) / element.bytes;
    if (element.bytes == 4) {
      const float value = random_float(seed, index);
      std::memcpy(bytes, &value, 4);
    } else {
      const double value = random_double(seed, index);
      std::memcpy(bytes, &value, 8);
    }
    return bytes[std::uint64_t(b) % element.bytes];
  };
  const auto mismatches =
      cpu::compare_transposed(result.data(), rows, cols, element.bytes, input_byte);
  if (mismatches.count == 0)
    return Check{true, 0, 0, "all " + std::to_string(rows * cols) + " elements in place"};
  const std::int64_t i = mismatches.first % rows, j = mismatches.first / rows;
  return Check{false, double(mismatches.count), 0,
               std::to_string(mismatches.count) + " elements wrong, the first out[" +
                   std::to_string(j) + "][" + std::to_string(i) + "] != in[" + std::to_string(i) +
                   "][" + std::to_string(j) + "]"};
}

namespace {

Problem transpose_problem(std::int64_t rows, std::int64_t cols, const char* dtype) {
  Problem problem;
  problem.rows = rows;
  problem.cols = cols;
  problem.dtype = dtype;
  return problem;
}

ROOFLAB_OP(Op{
    "transpose",
    "The memory-basics lab's matrix transpose, rows x cols -> cols x rows (reads and writes every "
    "element once)",
    [](Problem problem) {
      if (problem.rows == 0) problem.rows = 4096;
      if (problem.cols == 0) problem.cols = 4096;
      require(problem.rows >= 1, "bench transpose", "--rows", "must be at least 1");
      require(problem.cols >= 1, "bench transpose", "--cols", "must be at least 1");
      problem.dtype = transpose_element(problem.dtype).name;
      return problem;
    },
    [](const Problem& problem) {
      return std::to_string(problem.rows) + " x " + std::to_string(problem.cols) + ", " +
             problem.dtype;
    },
    [](const Problem& problem) {
      const double bytes = double(transpose_element(problem.dtype).bytes);
      return Model{2.0 * double(problem.rows) * double(problem.cols) * bytes, 0,
                   Ceiling::copy_bandwidth};
    },
    [](const Problem& problem) -> std::unique_ptr<Workspace> {
      return std::make_unique<TransposeWorkspace>(problem.rows, problem.cols,
                                                  transpose_element(problem.dtype));
    },
    [](bool quick) {
      if (quick)
        return std::vector<Problem>{
            transpose_problem(4096, 4096, "float"), transpose_problem(1000, 3001, "float"),
            transpose_problem(33, 1 << 16, "double"), transpose_problem(1, 1 << 20, "float"),
            transpose_problem(1024, 1000, "uint8")};
      // The memory-basics lab's 4096^2 first, then the targets: large squares, odd shapes, every
      // size class.
      return std::vector<Problem>{
          transpose_problem(4096, 4096, "float"),   transpose_problem(16384, 16384, "float"),
          transpose_problem(8192, 16384, "double"), transpose_problem(4097, 4099, "float"),
          transpose_problem(33, 1 << 20, "float"),  transpose_problem(1 << 20, 33, "float"),
          transpose_problem(1, 1 << 24, "float"),   transpose_problem(8192, 8192, "uint8"),
          transpose_problem(8192, 8192, "uint16"),  transpose_problem(4096, 4096, "float4")};
    },
    {"--rows", "--cols"},
});

// Rung 0 — the CPU loop, rooflab's stand-in for the memory-basics lab's CPU baseline (timed there,
// not shown): one core walking the input by rows and the output by columns, so every write lands on
// a different cache line.
ROOFLAB_VARIANT(Variant{
    "transpose", 0, "cpu-loop",
    "one CPU core, the double loop (in place of the memory-basics lab's CPU loop)", Where::cpu,
    false,
    [](const Problem& problem) -> std::string {
      if (problem.rows * problem.cols <= (std::int64_t(1) << 26)) return {};
      return "one core would take seconds per run (limit rows x cols <= 2^26)";
    },
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t) {
      w.prepare_host();
      cpu::transpose_serial(w.host_in.data(), w.rows, w.cols, w.element.bytes, w.host_out.data());
    })});

// Rungs 30 and 31 — the careful CPU baselines (cpu::transpose_tiled): the copy in 32 x 32 tiles,
// so that every cache line read or written is used whole while it is in L1; one core, then every
// core taking a band of tile rows. "vs CPU" is against the faster CPU rung of the run.
void run_tiled_cpu(TransposeWorkspace& w, bool every_core) {
  w.prepare_host();
  // Poisoned: the output another CPU rung left must not pass this one's check.
  std::fill(w.host_out.begin(), w.host_out.end(), 0xFF);
  cpu::transpose_tiled(w.host_in.data(), w.rows, w.cols, w.element.bytes, w.host_out.data(),
                       every_core);
}

ROOFLAB_VARIANT(Variant{
    "transpose", 30, "cpu-tiled", "one CPU core, 32 x 32 tiles: each cache line used whole",
    Where::cpu, false,
    [](const Problem& problem) -> std::string {
      if (problem.rows * problem.cols <= (std::int64_t(1) << 28)) return {};
      return "one core would take seconds per run (limit rows x cols <= 2^28)";
    },
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t) { run_tiled_cpu(w, false); })});
ROOFLAB_VARIANT(Variant{
    "transpose", 31, "cpu-threads", "every CPU core, cpu-tiled on a band of tile rows each",
    Where::cpu, false, no_limit,
    on<TransposeWorkspace>([](TransposeWorkspace& w, cudaStream_t) { run_tiled_cpu(w, true); })});

}  // namespace
}  // namespace rooflab::bench
