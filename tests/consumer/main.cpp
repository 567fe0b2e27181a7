// Uses the installed rooflab from plain C++: round-trips data through device memory when a GPU is
// there, and otherwise proves that the headers compile and the library links.
#include <rooflab/rooflab.hpp>

#include <cstdio>
#include <vector>

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("consumer: built and linked against the installed rooflab; no CUDA device to run on");
    return 0;
  }
  try {
    const std::vector<float> values{1.5f, -2.0f, 3.25f};
    rooflab::DeviceBuffer<float> buffer(values);
    if (buffer.download() != values) {
      std::puts("consumer: round trip through device memory changed the data");
      return 1;
    }
    std::puts("consumer: round trip through rooflab::DeviceBuffer ok");
    return 0;
  } catch (const rooflab::Error& error) {
    std::printf("consumer: %s\n", error.what());
    return 1;
  }
}
