#include "bench/environment.hpp"

#include <chrono>
#include <ctime>

#include "build_info.hpp"

namespace rooflab::bench {

double Environment::ceiling_value(Ceiling ceiling) const {
  switch (ceiling) {
    case Ceiling::copy_bandwidth: return ceilings.copy_bandwidth;
    case Ceiling::read_bandwidth: return ceilings.read_bandwidth;
    case Ceiling::fp32_peak: return device.fp32_peak();
    case Ceiling::fp64_peak: return device.fp64_peak();
    case Ceiling::host_transfer_bandwidth: return ceilings.host_to_device_bandwidth;
  }
  return 0;
}

double Environment::least_seconds(const Model& model) const {
  const double ceiling = ceiling_value(model.ceiling);
  if (ceilings.launch_seconds <= 0 || ceiling <= 0) return 0;
  return ceilings.launch_seconds +
         (is_compute_ceiling(model.ceiling) ? model.flops : model.bytes) / ceiling;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string build_commit() { return ROOFLAB_GIT_COMMIT; }
std::string build_version() { return ROOFLAB_VERSION; }

Environment make_environment() {
  Environment environment;
  environment.device = query_device(0);
  environment.features = current_device_features();
  environment.ceilings = measure_ceilings(environment.device);
  environment.commit = build_commit();
  environment.date = utc_now_iso8601();
  environment.version = build_version();
  return environment;
}

}  // namespace rooflab::bench
