#pragma once
// The transpose op of the lab (the memory-basics lab): out = in^T, rows x cols row-major in, cols x
// rows out. A transpose only moves bytes, so the workspace holds raw bytes and knows the element's
// size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

// The element types the transpose op benchmarks: float (default), double, uint8, uint16 and a
// 16-byte float4. Floats and doubles are drawn by fill_random; the others as bytes in [0, 254],
// so that no element equals the 0xFF poison of the output.
struct TransposeElement {
  std::string name;
  std::size_t bytes = 4;
  bool floating = true;
};

// Throws rooflab::Error naming --dtype for an unknown name; an empty name gives float.
TransposeElement transpose_element(const std::string& name);

class TransposeWorkspace : public Workspace {
 public:
  TransposeWorkspace(std::int64_t rows, std::int64_t cols, TransposeElement element);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copy of the input for the CPU rungs, downloaded on first use after each refill.
  void prepare_host();

  template <class T>
  const T* input() const {
    return reinterpret_cast<const T*>(in.data());
  }
  template <class T>
  T* output() {
    return reinterpret_cast<T*>(out.data());
  }

  std::int64_t rows, cols;
  TransposeElement element;
  DeviceBuffer<unsigned char> in, out;
  std::vector<unsigned char> host_in, host_out;

 private:
  std::uint64_t seed_ = 0;
};

}  // namespace rooflab::bench
