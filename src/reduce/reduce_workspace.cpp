// The reduction ops' workspace: device inputs, poisoned outputs, exact references.
#include "reduce/reduce_workspace.hpp"

#include <cstring>

#include "cpu/compare.hpp"
#include "cpu/reduce.hpp"
#include "rooflab/cuda_check.hpp"
#include "rooflab/error.hpp"

namespace rooflab::bench {
namespace {

// All bits set: NaN for floating types, -1 or the maximum for integers (what 0xFF bytes give).
template <class T>
T poison() {
  T value;
  std::memset(&value, 0xFF, sizeof(T));
  return value;
}

}  // namespace

const std::vector<DType>& reduce_dtypes() {
  static const std::vector<DType> types{DType::f32, DType::f64, DType::i32, DType::i64, DType::u32};
  return types;
}

template <class T>
TypedReduceWorkspace<T>::TypedReduceWorkspace(std::int64_t rows, std::int64_t cols)
    : ReduceWorkspace(dtype_of<T>(), rows, cols),
      in(std::size_t(rows * cols)),
      out(std::size_t(rows)) {}

template <class T>
void TypedReduceWorkspace<T>::refill(std::uint64_t seed) {
  seed_ = seed;
  const std::int64_t n = rows * cols;
  if constexpr (std::is_floating_point_v<T>) {
    fill_eighths(in.data(), n, seed, nullptr);
  } else {
    const auto [lo, hi] = reduce_input_range<T>();
    fill_random_integers(in.data(), n, seed, lo, hi, nullptr);
  }
  out.fill_bytes(0xFF);  // a row no variant writes fails the check
  host_in.clear();
  host_out.clear();
  expected_.clear();
  input_copy_fresh_ = false;
}

template <class T>
void TypedReduceWorkspace<T>::copy_input(cudaStream_t stream) {
  if (input_copy_.size() != in.size()) input_copy_ = DeviceBuffer<T>(in.size());
  ROOFLAB_CUDA(
      "bench reduce", "copying the input for a rung that reduces in place",
      cudaMemcpyAsync(input_copy_.data(), in.data(), in.bytes(), cudaMemcpyDeviceToDevice, stream));
  input_copy_fresh_ = true;
}

template <class T>
T* TypedReduceWorkspace<T>::take_input_copy(cudaStream_t stream) {
  if (!input_copy_fresh_) copy_input(stream);
  input_copy_fresh_ = false;
  return input_copy_.data();
}

template <class T>
void TypedReduceWorkspace<T>::prepare_host() {
  if (!host_in.empty()) return;
  host_in = in.download();
  host_out.assign(std::size_t(rows), poison<T>());
}

template <class T>
Check TypedReduceWorkspace<T>::check(Where where) {
  const std::vector<T> result = where == Where::gpu ? out.download() : host_out;
  if (std::int64_t(result.size()) != rows) return Check{false, 0, 0, "no output"};
  if (expected_.empty()) {
    const std::uint64_t seed = seed_;
    const std::int64_t width = cols;
    expected_ = cpu::row_sums_of<T>(rows, cols, [seed, width](std::int64_t r, std::int64_t c) {
      return reduce_input<T>(seed, r * width + c);
    });
  }
  // Exact: the inputs make every order of addition exact (see reduce_workspace.hpp). The error
  // is the number of wrong rows.
  const cpu::Comparison comparison = cpu::compare_exact(
      result.data(), rows, [&](std::int64_t r) { return expected_[std::size_t(r)]; });
  return Check{comparison.max_error == 0, comparison.max_error, 0, comparison.describe()};
}

std::unique_ptr<Workspace> make_reduce_workspace(DType dtype, std::int64_t rows,
                                                 std::int64_t cols) {
  std::unique_ptr<Workspace> workspace;
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, std::uint8_t>)
      workspace = std::make_unique<TypedReduceWorkspace<T>>(rows, cols);
  });
  require(workspace != nullptr, "bench reduce", "--dtype",
          std::string(dtype_name(dtype)) + " is not a type of the reductions");
  return workspace;
}

template class TypedReduceWorkspace<float>;
template class TypedReduceWorkspace<double>;
template class TypedReduceWorkspace<std::int32_t>;
template class TypedReduceWorkspace<std::int64_t>;
template class TypedReduceWorkspace<std::uint32_t>;

}  // namespace rooflab::bench
