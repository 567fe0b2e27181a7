#pragma once
// The histogram op of the lab (after the memory-basics lab's histogram): n values of one type
// counted into evenly spaced bins, by the API's rule, with rooflab's bounds, bin mappings and
// distributions (histogram_data.hpp; the article gives none of them).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/dtype.hpp"
#include "bench/registry.hpp"
#include "histogram/histogram_data.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

// --dist NAME[:MAPPING]: uniform, equal, sorted, zipf, hot or normal, then scaled (the default)
// or identity; "" gives uniform. The name of a parsed pair omits ":scaled" ("zipf",
// "zipf:identity"), so that results of before the mappings keep their names.
struct DistributionChoice {
  Distribution dist = Distribution::uniform;
  Mapping mapping = Mapping::scaled;
};
DistributionChoice parse_distribution(const std::string& text);
std::string distribution_name(DistributionChoice choice);

// fn(T{}) for the histogram's element types: int32, uint8, float, double.
template <class Fn>
decltype(auto) visit_histogram_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::u8: return fn(std::uint8_t{});
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: return fn(std::int32_t{});
  }
}

// Draws n values of `dtype` for seed and shape (shape.n is n) into device memory
// (histogram_fill.cu).
void fill_histogram_input(DType dtype, void* device, std::int64_t n, std::uint64_t seed,
                          const InputShape& shape);

class HistogramWorkspace : public Workspace {
 public:
  explicit HistogramWorkspace(const Problem& problem);  // a resolved problem
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copy of the input for the CPU rungs and the check, downloaded on first use after each
  // refill.
  void prepare_host();

  template <class T>
  const T* input() const {
    return reinterpret_cast<const T*>(in.data());
  }
  unsigned long long* device_counts() {
    return reinterpret_cast<unsigned long long*>(counts.data());
  }

  std::int64_t n;
  int bins;
  DType dtype;
  InputShape shape;
  double lo, hi;  // the type's and mapping's bounds in histogram_data.hpp
  DeviceBuffer<unsigned char> in;
  DeviceBuffer<std::uint64_t> counts;
  std::vector<unsigned char> host_in;
  std::vector<std::uint64_t> host_counts;
  // Set by the CUB comparator, cleared by refill: CUB bins with its own arithmetic, which the
  // check names when its counts differ from the rule's.
  bool binned_by_cub = false;
};

}  // namespace rooflab::bench
