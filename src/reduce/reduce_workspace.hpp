#pragma once
// The problem of both reduction ops: a rows x cols matrix (reduce is one row of n) of one of the
// API's element types, and one sum per row to check.
//
// Inputs make every summation order exact, so that a rung is held to the exact sum (tolerance 0)
// and a lost or doubled element shows at any size, for tree, atomic and CPU rungs alike:
//  - float, double: multiples of 1/8 in [-1, 1]. A partial sum of them is a multiple of 1/8; it is
//    exact in float while its magnitude stays below 2^21 (24 significant bits). That is certain for
//    up to 2^21 elements, and beyond it holds with overwhelming probability: partial sums of
//    random-signed values grow like 0.6 sqrt(k) (about 10^4 at 2^28 elements, 200 standard
//    deviations from 2^21), whatever order a rung adds them in.
//  - int32, uint32: their whole range; int64: [-2^31, 2^31). Integer sums wrap modulo 2^bits,
//    and wrapping addition gives the same bits in every order.
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/dtype.hpp"
#include "bench/random.hpp"
#include "bench/registry.hpp"
#include "rooflab/device_buffer.hpp"

namespace rooflab::bench {

// The element types of reduce and reduce-rows (the library's instantiations).
const std::vector<DType>& reduce_dtypes();

// [lo, hi] of the integers random_integer draws for element type T; floating types divide them
// by 8.
template <class T>
constexpr std::pair<std::int64_t, std::int64_t> reduce_input_range() {
  if constexpr (std::is_floating_point_v<T>)
    return {-8, 8};
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return {-(std::int64_t(1) << 31), (std::int64_t(1) << 31) - 1};
  else
    return {std::int64_t(std::numeric_limits<T>::min()),
            std::int64_t(std::numeric_limits<T>::max())};
}

// Element i of the input drawn with `seed`, on the host (references) and the device (fills).
template <class T>
ROOFLAB_HOST_DEVICE T reduce_input(std::uint64_t seed, std::int64_t i) {
  const auto [lo, hi] = reduce_input_range<T>();
  const std::int64_t k = random_integer(seed, std::uint64_t(i), lo, hi);
  if constexpr (std::is_floating_point_v<T>)
    return T(k) / T(8);
  else
    return T(k);
}

// Multiples of 1/8 on the device: random_integer(seed, i, -8, 8) / 8.
void fill_eighths(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);
void fill_eighths(double* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

class ReduceWorkspace : public Workspace {
 public:
  ReduceWorkspace(DType dtype, std::int64_t rows, std::int64_t cols)
      : dtype(dtype), rows(rows), cols(cols) {}
  const DType dtype;
  const std::int64_t rows, cols;
};

template <class T>
class TypedReduceWorkspace final : public ReduceWorkspace {
 public:
  TypedReduceWorkspace(std::int64_t rows, std::int64_t cols);
  void refill(std::uint64_t seed) override;
  Check check(Where where) override;

  // Host copies for CPU variants: the input downloaded once per refill, a poisoned output.
  void prepare_host();

  // A device copy of `in` for a rung that reduces in place (reduce rung 22), which must leave `in`
  // as it is. copy_input queues the copy on `stream` (the rung's prepare, outside the timed
  // region; the buffer is allocated on first use). take_input_copy hands the copy to one run; where
  // no fresh copy is waiting (a caller that skipped prepare, or a second run), it copies first, on
  // `stream`, inside whatever that caller times.
  void copy_input(cudaStream_t stream);
  T* take_input_copy(cudaStream_t stream);

  DeviceBuffer<T> in, out;  // out: one value per row
  std::vector<T> host_in, host_out;

 private:
  std::uint64_t seed_ = 0;
  std::vector<T> expected_;  // the exact row sums for seed_, computed on first check
  DeviceBuffer<T> input_copy_;
  bool input_copy_fresh_ = false;  // copied since the last refill and not yet taken by a run
};

std::unique_ptr<Workspace> make_reduce_workspace(DType dtype, std::int64_t rows, std::int64_t cols);

// fn(workspace as TypedReduceWorkspace<T>) with T the workspace's element type.
template <class Fn>
void with_element_type(Workspace& workspace, Fn&& fn) {
  auto& typed = static_cast<ReduceWorkspace&>(workspace);
  visit_dtype(typed.dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, std::uint8_t>)
      fn(static_cast<TypedReduceWorkspace<T>&>(workspace));
  });
}

}  // namespace rooflab::bench
