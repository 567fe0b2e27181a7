#include "bench/registry.hpp"

#include <algorithm>

#include "rooflab/error.hpp"

namespace rooflab::bench {

const char* ceiling_name(Ceiling ceiling) {
  switch (ceiling) {
    case Ceiling::copy_bandwidth: return "copy bandwidth";
    case Ceiling::read_bandwidth: return "read bandwidth";
    case Ceiling::fp32_peak: return "fp32 peak";
    case Ceiling::fp64_peak: return "fp64 peak";
    case Ceiling::host_transfer_bandwidth: return "host-transfer bandwidth";
  }
  return "?";
}

bool is_compute_ceiling(Ceiling ceiling) {
  return ceiling == Ceiling::fp32_peak || ceiling == Ceiling::fp64_peak;
}

bool Registry::add_op(Op op) {
  const std::string name = op.name;
  ops_[name] = std::move(op);
  return true;
}

bool Registry::add_variant(Variant variant) {
  variants_[variant.op].push_back(std::move(variant));
  return true;
}

const Op& Registry::op(const std::string& name) const {
  const auto found = ops_.find(name);
  if (found != ops_.end()) return found->second;
  std::string known;
  for (const auto& entry : ops_) known += (known.empty() ? "" : ", ") + entry.first;
  throw Error("bench", "OP", "'" + name + "' is not an op (known: " + known + ")");
}

std::vector<std::string> Registry::op_names() const {
  std::vector<std::string> names;
  for (const auto& entry : ops_) names.push_back(entry.first);
  return names;
}

std::vector<const Variant*> Registry::variants(const std::string& op) const {
  std::vector<const Variant*> ladder;
  const auto found = variants_.find(op);
  if (found == variants_.end()) return ladder;
  for (const Variant& variant : found->second) ladder.push_back(&variant);
  std::stable_sort(ladder.begin(), ladder.end(),
                   [](const Variant* a, const Variant* b) { return a->rung < b->rung; });
  return ladder;
}

Registry& registry() {
  static Registry instance;
  return instance;
}

std::function<std::string(const Problem&)> at_most_n(std::int64_t max_n, std::string why) {
  return [max_n, why](const Problem& problem) -> std::string {
    if (problem.n <= max_n) return {};
    return why + " (limit n <= " + std::to_string(max_n) + ")";
  };
}

}  // namespace rooflab::bench
