// Uses the installed rooflab from plain C++: round-trips data through device memory and takes an
// SVD when a GPU is there, and otherwise proves that the headers compile and the library links
// (rooflab::svd reaches every kernel of its dispatch, so a missing one fails the link).
#include <rooflab/rooflab.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  // A 3 x 2 matrix (column-major) with orthogonal columns of norms 4 and 3: S = {4, 3}.
  const std::vector<double> a{0, 4, 0, 3, 0, 0};
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
    rooflab::DeviceBuffer<double> A(a), S(2), U(6), V(4);
    rooflab::svd<double>(A.data(), 3, 2, 3, S.data(), U.data(), 3, V.data(), 2, {});
    const std::vector<double> s = S.download();
    if (std::abs(s[0] - 4) > 1e-14 || std::abs(s[1] - 3) > 1e-14) {
      std::printf("consumer: svd gave S = {%g, %g}, not {4, 3}\n", s[0], s[1]);
      return 1;
    }
    std::puts("consumer: round trip through rooflab::DeviceBuffer and rooflab::svd ok");
    return 0;
  } catch (const rooflab::Error& error) {
    std::printf("consumer: %s\n", error.what());
    return 1;
  }
}
