#pragma once
// The limiting-factors lecture's vector add (it adds in place, x += y; here out = a + b, the same
// 12 bytes per element) over n floats: the first op of the lab, and the smallest complete example
// of an op (workspace, model, rungs).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/error.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

class AddWorkspace : public Workspace {
 public:
  explicit AddWorkspace(std::int64_t n);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copies of the inputs for CPU variants, downloaded on first use after each refill.
  void prepare_host();

  std::int64_t n;
  DeviceBuffer<float> a, b, out;
  std::vector<float> host_a, host_b, host_out;

 private:
  std::uint64_t seed_a_ = 0, seed_b_ = 0;
};

// The op of an experiment on this add (add itself, the coalescing and timing labs): n floats,
// 12 bytes and one flop per element, against the copy bandwidth; 2^default_log2 elements by
// default and in the report, 2^quick_log2 in a quick report. W is the experiment's workspace.
template <class W>
Op vector_add_op(std::string name, std::string summary, int default_log2, int quick_log2) {
  const std::string op = "bench " + name;
  return Op{
      name,
      std::move(summary),
      [op, default_log2](Problem problem) {
        if (problem.n == 0) problem.n = std::int64_t(1) << default_log2;
        require(problem.n >= 1, op.c_str(), "--n", "must be at least 1");
        problem.dtype = "float";
        return problem;
      },
      [](const Problem& problem) { return "n = " + std::to_string(problem.n) + ", float"; },
      [](const Problem& problem) {
        return Model{12.0 * double(problem.n), double(problem.n), Ceiling::copy_bandwidth};
      },
      [](const Problem& problem) -> std::unique_ptr<Workspace> {
        return std::make_unique<W>(problem.n);
      },
      [default_log2, quick_log2](bool quick) {
        Problem problem;
        problem.n = std::int64_t(1) << (quick ? quick_log2 : default_log2);
        return std::vector<Problem>{problem};
      },
      {"--n"},
  };
}

}  // namespace rooflab::bench
