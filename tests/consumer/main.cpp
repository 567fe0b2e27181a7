// Uses the installed rooflab from plain C++: round-trips data through device memory, takes an
// SVD, and reduces and scans `long long` data (what std::accumulate users write; std::int64_t is
// `long` on Linux) when a GPU is there, and otherwise proves that the headers compile and the
// library links (rooflab::svd reaches every kernel of its dispatch, so a missing one fails the
// link, as does a missing instantiation for long long).
#include <rooflab/rooflab.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

// Every 64-bit entry point with `long long` elements; false (saying why) on a wrong result.
bool long_long_elements_work() {
  const std::vector<long long> values{3, -1, 4, 1, -5, 9};
  rooflab::DeviceBuffer<long long> in(values), total(1), row_max(2), inclusive(6), exclusive(6);
  rooflab::reduce(in.data(), 6, total.data());
  rooflab::reduce_rows(in.data(), 2, 3, row_max.data(), rooflab::Max{});
  rooflab::inclusive_scan(in.data(), inclusive.data(), 6);
  rooflab::exclusive_scan(in.data(), exclusive.data(), 6);
  const bool right = total.download() == std::vector<long long>{11} &&
                     row_max.download() == std::vector<long long>{4, 9} &&
                     inclusive.download() == std::vector<long long>{3, 2, 6, 7, 2, 11} &&
                     exclusive.download() == std::vector<long long>{0, 3, 2, 6, 7, 2};
  if (!right) std::puts("consumer: reduce or scan of long long gave a wrong result");
  return right;
}

}  // namespace

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
    if (!long_long_elements_work()) return 1;
    std::puts("consumer: DeviceBuffer, svd, and reduce and scan of long long ok");
    return 0;
  } catch (const rooflab::Error& error) {
    std::printf("consumer: %s\n", error.what());
    return 1;
  }
}
