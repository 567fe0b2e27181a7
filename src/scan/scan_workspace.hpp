#pragma once
// The scan op's problem instance: n random elements of the requested type on the device and an
// output to scan them into; the check recomputes the prefix sums on the host (cpu/scan.hpp).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/dtype.hpp"
#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {

class ScanWorkspace : public Workspace {
 public:
  ScanWorkspace(DType dtype, std::int64_t n) : dtype(dtype), n(n) {}
  const DType dtype;
  const std::int64_t n;
};

template <class T>
class TypedScanWorkspace final : public ScanWorkspace {
 public:
  using value_type = T;
  explicit TypedScanWorkspace(std::int64_t n);
  // Floating point: random_float / random_double values in [-1, 1). Integers: values in [0, hi]
  // with hi * n below the type's maximum (hi <= 1000), so that no prefix sum wraps or equals the
  // all-ones poison of the output (-1, or the unsigned maximum): an unwritten element cannot pass.
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;
  // For CPU rungs: host_in holds the input and host_out is poisoned.
  void prepare_host();

  DeviceBuffer<T> in, out;
  std::vector<T> host_in, host_out;

 private:
  const std::vector<T>& input();  // host_in, downloaded once per refill
};

extern template class TypedScanWorkspace<float>;
extern template class TypedScanWorkspace<double>;
extern template class TypedScanWorkspace<std::int32_t>;
extern template class TypedScanWorkspace<std::int64_t>;
extern template class TypedScanWorkspace<std::uint32_t>;

std::unique_ptr<Workspace> make_scan_workspace(DType dtype, std::int64_t n);

namespace scan_detail {
template <class T, class Fn>
bool run_if(ScanWorkspace& workspace, const Fn& fn, cudaStream_t stream) {
  if (workspace.dtype != dtype_of<T>()) return false;
  fn(static_cast<TypedScanWorkspace<T>&>(workspace), stream);
  return true;
}
}  // namespace scan_detail

// Variant::run for a rung built for the element types Types...: fn(TypedScanWorkspace<T>&,
// stream) with the workspace's own T.
template <class... Types, class Fn>
std::function<void(Workspace&, cudaStream_t)> on_scan(Fn fn) {
  return [fn](Workspace& workspace, cudaStream_t stream) {
    auto& scan = static_cast<ScanWorkspace&>(workspace);
    if (!(scan_detail::run_if<Types>(scan, fn, stream) || ...))
      throw Error("bench scan", "--dtype",
                  std::string("this rung is not built for ") + dtype_name(scan.dtype));
  };
}

// The same for a rung built for every type of the op.
template <class Fn>
std::function<void(Workspace&, cudaStream_t)> on_every_scan_type(Fn fn) {
  return on_scan<float, double, std::int32_t, std::int64_t, std::uint32_t>(fn);
}

// Variant::limit of a rung built for some types only: the others are skipped, saying so.
template <class... Types>
std::function<std::string(const Problem&)> built_for() {
  return [](const Problem& problem) -> std::string {
    if (((problem.dtype == dtype_name(dtype_of<Types>())) || ...)) return {};
    std::string names;
    ((names += (names.empty() ? "" : ", ") + std::string(dtype_name(dtype_of<Types>()))), ...);
    return "built for " + names + " only";
  };
}

}  // namespace rooflab::bench
