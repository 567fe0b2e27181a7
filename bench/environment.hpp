#pragma once
// Where and when a measurement was taken: every results file carries this.
#include <string>

#include "bench/registry.hpp"
#include "core/device_features.hpp"
#include "core/device_info.hpp"

namespace rooflab::bench {

struct Environment {
  DeviceInfo device;
  DeviceFeatures features;  // what the loaded kernels were built for and the dispatch plans for
  MeasuredCeilings ceilings;
  std::string commit;   // git commit of the build, "+dirty" when the tree had changes
  std::string date;     // UTC, ISO 8601
  std::string version;  // rooflab's version

  // The ceiling's value in bytes/s (bandwidths) or flop/s (peaks).
  double ceiling_value(Ceiling ceiling) const;
  // The least time a one-kernel implementation of the model can take: the launch floor plus the
  // model's bytes (or flops) at its ceiling. 0 when the launch floor was not measured.
  double least_seconds(const Model& model) const;
};

// Queries the device and measures its bandwidth ceilings (needs a GPU; about a second).
Environment make_environment();

std::string utc_now_iso8601();
std::string build_commit();
std::string build_version();

}  // namespace rooflab::bench
