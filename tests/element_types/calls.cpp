// Calls of rooflab's typed entry points from plain C++, compiled (not run) by
// tests/element_types_test.sh. As it stands, every spelling of a type the library is compiled for
// must be accepted; with REJECTED_CALL set to one of the cases at the end, that one call must stop
// the compilation at a static_assert that names the entry point (not fail later, at the link).
#include <rooflab/rooflab.hpp>

#include <cstdint>

namespace {

struct Product {  // an operator the library is not compiled for
  template <class T>
  static constexpr T identity() {
    return T(1);
  }
  template <class T>
  constexpr T operator()(T a, T b) const {
    return a * b;
  }
};

void every_spelling_of_a_supported_type(std::int64_t n) {
  long long* long_longs = nullptr;
  long* longs = nullptr;
  std::int64_t* int64s = nullptr;
  int* ints = nullptr;
  unsigned* unsigneds = nullptr;
  std::uint32_t* uint32s = nullptr;
  float* floats = nullptr;
  double* doubles = nullptr;
  unsigned char* bytes = nullptr;
  std::uint64_t* counts = nullptr;

  rooflab::reduce(long_longs, n, long_longs);
  rooflab::reduce(static_cast<const long long*>(long_longs), n, long_longs, rooflab::Min{});
  rooflab::reduce(longs, n, longs, rooflab::Max{});
  rooflab::reduce(int64s, n, int64s);
  rooflab::reduce(ints, n, ints);
  rooflab::reduce(unsigneds, n, unsigneds);
  rooflab::reduce(uint32s, n, uint32s);
  rooflab::reduce(floats, n, floats);
  rooflab::reduce(doubles, n, doubles);
  rooflab::reduce_rows(long_longs, n, n, long_longs, rooflab::Max{});
  rooflab::reduce_rows(unsigneds, n, n, unsigneds);

  rooflab::inclusive_scan(long_longs, long_longs, n);
  rooflab::exclusive_scan(long_longs, long_longs, n);
  rooflab::inclusive_scan(longs, longs, n);
  rooflab::inclusive_scan(ints, ints, n);
  rooflab::exclusive_scan(unsigneds, unsigneds, n);
  rooflab::inclusive_scan(floats, floats, n);
  rooflab::exclusive_scan(doubles, doubles, n);

  rooflab::histogram_even(bytes, n, 256, 0, 256, counts);
  rooflab::histogram_even(ints, n, 10, 0, 10, counts);
  rooflab::histogram_even(floats, n, 10, 0, 1, counts);
  rooflab::histogram_even(doubles, n, 10, 0, 1, counts);
}

[[maybe_unused]] void rejected_call(std::int64_t n) {
  [[maybe_unused]] unsigned long long* unsigned_long_longs = nullptr;
  [[maybe_unused]] unsigned long* unsigned_longs = nullptr;
  [[maybe_unused]] short* shorts = nullptr;
  [[maybe_unused]] long long* long_longs = nullptr;
  [[maybe_unused]] float* floats = nullptr;
  [[maybe_unused]] std::uint64_t* counts = nullptr;
#if REJECTED_CALL == 1
  rooflab::reduce(unsigned_long_longs, n, unsigned_long_longs);
#elif REJECTED_CALL == 2
  rooflab::reduce_rows(unsigned_longs, n, n, unsigned_longs);
#elif REJECTED_CALL == 3
  rooflab::reduce(floats, n, floats, Product{});
#elif REJECTED_CALL == 4
  rooflab::inclusive_scan(unsigned_long_longs, unsigned_long_longs, n);
#elif REJECTED_CALL == 5
  rooflab::exclusive_scan(shorts, shorts, n);
#elif REJECTED_CALL == 6
  rooflab::histogram_even(long_longs, n, 10, 0, 10, counts);
#endif
}

}  // namespace

int main() { every_spelling_of_a_supported_type(0); }
