// rooflab._rooflab: the library's entry points on device addresses, for the Python package.
// The package (python/src/rooflab) reads the caller's arrays into addresses, shapes and a stream,
// allocates the results in the caller's framework and checks what it can without the GPU; this
// module runs the library on the arrays' device and turns rooflab::Error into rooflab.Error. For
// the common case of PyTorch tensors it also does all of that in one call (torch_<function>).
// Addresses rather than nanobind ndarrays on the hot path: importing a torch tensor through
// __dlpack__ costs microseconds per array, more than the whole budget of a small call.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "rooflab/rooflab.hpp"
#include "torch_tensors.hpp"

namespace nb = nanobind;
using rooflab_python::PlainTensor;
using rooflab_python::TorchTensors;

namespace {

using Address = std::uintptr_t;

cudaStream_t as_stream(Address handle) { return reinterpret_cast<cudaStream_t>(handle); }

template <class T>
T* at(Address address) {
  return reinterpret_cast<T*>(address);
}

// The calling thread works on `device` for the length of one call and gets its own device back
// afterwards, so that work on a second GPU's arrays leaves the caller's current device alone.
class OnDevice {
 public:
  OnDevice(int device, const char* op) : device_(device) {
    ROOFLAB_CUDA(op, "reading the current device", cudaGetDevice(&previous_));
    if (previous_ != device_)
      ROOFLAB_CUDA(op, "selecting device " + std::to_string(device), cudaSetDevice(device));
  }
  ~OnDevice() {
    if (previous_ != device_) cudaSetDevice(previous_);  // nothing to report from a destructor
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

// A stream of another device fails at launch with "invalid resource handle"; this names it. CUDA
// refuses to say a capturing stream's device, and the refusal spoils the capture: such a stream is
// taken as given, and CUDA judges it at the first launch.
void require_stream_on_device(Address stream, int device, const char* op) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ROOFLAB_CUDA(op, "asking whether the stream is capturing",
               cudaStreamIsCapturing(as_stream(stream), &capture));
  if (capture != cudaStreamCaptureStatusNone) return;
  int stream_device = 0;
  ROOFLAB_CUDA(op, "finding the stream's device",
               cudaStreamGetDevice(as_stream(stream), &stream_device));
  rooflab::require(stream_device == device, op, "stream",
                   "belongs to device " + std::to_string(stream_device) +
                       ", the arrays are on device " + std::to_string(device));
}

// Runs `work` with the calling thread on `device` and the GIL released, so that other Python
// threads run while the library waits (svd) or queues. The stream is the device's by then: the
// caller's framework's current stream of the device, or one check_stream has passed.
template <class Work>
void run_on(int device, const char* op, Work&& work) {
  nb::gil_scoped_release release;
  OnDevice on_device(device, op);
  work();
}

// The package's names of the element types (NumPy's).
template <class T>
constexpr std::string_view dtype_name = "";
template <>
constexpr std::string_view dtype_name<float> = "float32";
template <>
constexpr std::string_view dtype_name<double> = "float64";
template <>
constexpr std::string_view dtype_name<std::int32_t> = "int32";
template <>
constexpr std::string_view dtype_name<std::int64_t> = "int64";
template <>
constexpr std::string_view dtype_name<std::uint32_t> = "uint32";
template <>
constexpr std::string_view dtype_name<std::uint8_t> = "uint8";

// The element types the library compiles an operation for.
template <class... Types>
struct Elements {
  static bool include(std::string_view dtype) { return ((dtype == dtype_name<Types>) || ...); }
};
using ReduceElements = Elements<float, double, std::int32_t, std::int64_t, std::uint32_t>;
using HistogramElements = Elements<std::uint8_t, std::int32_t, float, double>;
using SvdElements = Elements<float, double>;

// Calls f with a value of the one of Types that `dtype` names; the package has checked the dtype,
// so another name is a package bug, reported all the same.
template <class... Types, class F>
void with_element(Elements<Types...>, const std::string& dtype, const char* op,
                  const char* argument, F&& f) {
  const bool known = ((dtype == dtype_name<Types> && (f(Types{}), true)) || ...);
  if (!known)
    throw rooflab::Error(op, argument, "has dtype " + dtype + ", which " + op + " does not take");
}

template <class F>
void with_reduction(std::string_view name, const char* op, F&& f) {
  if (name == "sum") return f(rooflab::Sum{});
  if (name == "min") return f(rooflab::Min{});
  if (name == "max") return f(rooflab::Max{});
  throw rooflab::Error(op, "op",
                       "is '" + std::string(name) + "'; it must be 'sum', 'min' or 'max'");
}

void reduce(const std::string& dtype, const std::string& op_name, Address in, std::int64_t n,
            Address out, int device, Address stream) {
  constexpr const char* op = "reduce";
  run_on(device, op, [&] {
    with_element(ReduceElements{}, dtype, op, "x", [&](auto zero) {
      using T = decltype(zero);
      with_reduction(op_name, op, [&](auto reduction) {
        rooflab::reduce(at<const T>(in), n, at<T>(out), reduction, as_stream(stream));
      });
    });
  });
}

void reduce_rows(const std::string& dtype, const std::string& op_name, Address in,
                 std::int64_t rows, std::int64_t cols, Address out, int device, Address stream) {
  constexpr const char* op = "reduce_rows";
  run_on(device, op, [&] {
    with_element(ReduceElements{}, dtype, op, "x", [&](auto zero) {
      using T = decltype(zero);
      with_reduction(op_name, op, [&](auto reduction) {
        rooflab::reduce_rows(at<const T>(in), rows, cols, at<T>(out), reduction, as_stream(stream));
      });
    });
  });
}

template <bool Inclusive>
void scan(const std::string& dtype, Address in, Address out, std::int64_t n, int device,
          Address stream) {
  constexpr const char* op = Inclusive ? "inclusive_scan" : "exclusive_scan";
  run_on(device, op, [&] {
    with_element(ReduceElements{}, dtype, op, "x", [&](auto zero) {
      using T = decltype(zero);
      if constexpr (Inclusive)
        rooflab::inclusive_scan(at<const T>(in), at<T>(out), n, as_stream(stream));
      else
        rooflab::exclusive_scan(at<const T>(in), at<T>(out), n, as_stream(stream));
    });
  });
}

void histogram_even(const std::string& dtype, Address in, std::int64_t n, int bins, double lo,
                    double hi, Address counts, int device, Address stream) {
  constexpr const char* op = "histogram_even";
  run_on(device, op, [&] {
    with_element(HistogramElements{}, dtype, op, "x", [&](auto zero) {
      using T = decltype(zero);
      rooflab::histogram_even(at<const T>(in), n, bins, lo, hi, at<std::uint64_t>(counts),
                              as_stream(stream));
    });
  });
}

// A transpose moves bytes: one element type per size serves every dtype of that size.
struct Bytes16 {
  std::uint64_t words[2];
};

constexpr bool transposable(std::size_t element_bytes) {
  return element_bytes == 1 || element_bytes == 2 || element_bytes == 4 || element_bytes == 8 ||
         element_bytes == 16;
}

void transpose(int element_bytes, Address in, std::int64_t rows, std::int64_t cols, Address out,
               int device, Address stream) {
  constexpr const char* op = "transpose";
  run_on(device, op, [&] {
    const cudaStream_t s = as_stream(stream);
    switch (element_bytes) {
      case 1:
        return rooflab::transpose(at<const std::uint8_t>(in), rows, cols, at<std::uint8_t>(out), s);
      case 2:
        return rooflab::transpose(at<const std::uint16_t>(in), rows, cols, at<std::uint16_t>(out),
                                  s);
      case 4:
        return rooflab::transpose(at<const std::uint32_t>(in), rows, cols, at<std::uint32_t>(out),
                                  s);
      case 8:
        return rooflab::transpose(at<const std::uint64_t>(in), rows, cols, at<std::uint64_t>(out),
                                  s);
      case 16: return rooflab::transpose(at<const Bytes16>(in), rows, cols, at<Bytes16>(out), s);
      default:
        throw rooflab::Error(op, "x",
                             "has elements of " + std::to_string(element_bytes) +
                                 " bytes; transpose takes 1, 2, 4, 8 or 16");
    }
  });
}

rooflab::SvdOptions svd_options(bool compute_uv, double tol, int max_sweeps) {
  rooflab::SvdOptions options;
  options.compute_uv = compute_uv;
  options.tol = tol;
  options.max_sweeps = max_sweeps;
  return options;
}

// One column-major m x n matrix (the library's convention; the package passes a row-major array
// as its transpose). Returns (sweeps, converged, off).
std::tuple<int, bool, double> svd(const std::string& dtype, Address a, int m, int n, int lda,
                                  Address s, Address u, int ldu, Address v, int ldv,
                                  bool compute_uv, double tol, int max_sweeps, int device,
                                  Address stream) {
  rooflab::SvdInfo info;
  run_on(device, "svd", [&] {
    with_element(SvdElements{}, dtype, "svd", "a", [&](auto zero) {
      using T = decltype(zero);
      info = rooflab::svd(at<const T>(a), m, n, lda, at<T>(s), at<T>(u), ldu, at<T>(v), ldv,
                          svd_options(compute_uv, tol, max_sweeps), as_stream(stream));
    });
  });
  return {info.sweeps, info.converged, info.off};
}

// A batch's info in device memory, as the package allocates it (svd_info_bytes a matrix): each
// field's array after the one before, the widest first so that each is aligned.
struct DeviceInfoLayout {
  static constexpr std::size_t bytes_per_matrix = sizeof(double) + sizeof(int) + sizeof(bool);
  explicit DeviceInfoLayout(std::size_t batch) : batch(batch) {}
  std::size_t off() const { return 0; }
  std::size_t sweeps() const { return batch * sizeof(double); }
  std::size_t converged() const { return sweeps() + batch * sizeof(int); }
  std::size_t batch;
};

// `batch` packed column-major m x n matrices; their info goes to device memory at `info`
// (DeviceInfoLayout), where it stays until the package's SvdInfo is first read: copying every
// record back took longer than the solve on batches of small matrices. Returns how many matrices
// did not converge and the first of them (-1: none).
std::tuple<int, int> svd_batched(const std::string& dtype, Address a, int m, int n, int batch,
                                 Address s, Address u, Address v, Address info, bool compute_uv,
                                 double tol, int max_sweeps, int device, Address stream) {
  const DeviceInfoLayout layout(std::size_t(batch > 0 ? batch : 0));
  const rooflab::SvdDeviceInfo fields{at<int>(info + layout.sweeps()),
                                      at<bool>(info + layout.converged()),
                                      at<double>(info + layout.off())};
  rooflab::SvdBatchOutcome outcome;
  run_on(device, "svd", [&] {
    with_element(SvdElements{}, dtype, "svd", "a", [&](auto zero) {
      using T = decltype(zero);
      outcome =
          rooflab::svd_batched(at<const T>(a), m, n, batch, at<T>(s), at<T>(u), at<T>(v), fields,
                               svd_options(compute_uv, tol, max_sweeps), as_stream(stream));
    });
  });
  return {outcome.unconverged, outcome.first_unconverged};
}

// One field of the records copied to `host`, as a NumPy array that keeps `owner` alive.
template <class Field>
nb::ndarray<nb::numpy, Field, nb::ndim<1>> info_field(const std::uint8_t* host, std::size_t offset,
                                                      std::size_t batch, nb::handle owner) {
  const std::size_t shape[1] = {batch};
  return nb::ndarray<nb::numpy, Field, nb::ndim<1>>(
      const_cast<Field*>(reinterpret_cast<const Field*>(host + offset)), 1, shape, owner);
}

// The info svd_batched left at `info` on `device`, in NumPy arrays (sweeps, converged, off). The
// call that wrote it has waited for its stream, so a plain copy reads it whole.
nb::tuple svd_info_to_host(Address info, int batch, int device) {
  constexpr const char* op = "svd";
  const DeviceInfoLayout layout(std::size_t(batch > 0 ? batch : 0));
  const std::size_t bytes = layout.batch * DeviceInfoLayout::bytes_per_matrix;
  std::unique_ptr<std::uint8_t[]> host(new std::uint8_t[bytes > 0 ? bytes : 1]);
  {
    nb::gil_scoped_release release;
    OnDevice on_device(device, op);
    ROOFLAB_CUDA(op, "copying the matrices' info to the host",
                 cudaMemcpy(host.get(), at<const void>(info), bytes, cudaMemcpyDeviceToHost));
  }
  const std::uint8_t* records = host.get();
  nb::capsule owner(host.release(),
                    [](void* p) noexcept { delete[] static_cast<std::uint8_t*>(p); });
  return nb::make_tuple(info_field<int>(records, layout.sweeps(), layout.batch, owner),
                        info_field<bool>(records, layout.converged(), layout.batch, owner),
                        info_field<double>(records, layout.off(), layout.batch, owner));
}

// Device memory for results the caller's framework cannot allocate itself (JAX, Numba, any other
// producer of __cuda_array_interface__ or DLPack). Allocated on the work stream, so the memory is
// ready for it; freed on the legacy default stream, which follows the work of every blocking
// stream on the device, when the last holder of the result lets it go.
class DeviceMemory {
 public:
  DeviceMemory(std::size_t bytes, int device, Address stream, const std::string& op)
      : device_(device) {
    OnDevice on_device(device, op.c_str());
    // An empty result still gets an address: some consumers take a null one for no array at all.
    ROOFLAB_CUDA(op.c_str(),
                 "allocating " + rooflab::detail::describe_bytes(bytes) + " of device memory",
                 cudaMallocAsync(&data_, bytes > 0 ? bytes : 1, as_stream(stream)));
  }
  ~DeviceMemory() {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;  // CUDA is gone: nothing left to free
    cudaSetDevice(device_);
    cudaFreeAsync(data_, cudaStreamLegacy);
    cudaSetDevice(previous);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  Address address() const { return reinterpret_cast<Address>(data_); }

 private:
  void* data_ = nullptr;
  int device_;
};

constexpr int dlpack_cuda = 2;  // DLPack's kDLCUDA

// A DLPack capsule of rooflab-owned memory (nanobind exports an ndarray without a framework as
// one), holding `memory` (the DeviceMemory's Python object) until the last consumer is done.
nb::ndarray<> export_dlpack(nb::handle memory, Address address,
                            const std::vector<std::size_t>& shape,
                            const std::vector<std::int64_t>& strides, std::uint8_t code,
                            std::uint8_t bits, int device) {
  nb::dlpack::dtype dtype;
  dtype.code = code;
  dtype.bits = bits;
  dtype.lanes = 1;
  return nb::ndarray<>(at<void>(address), shape.size(), shape.data(), memory, strides.data(), dtype,
                       dlpack_cuda, device);
}

// What a DLPack producer exports: (address, shape, strides in elements, (code, bits, lanes),
// device type, device id), or None where `array` exports nothing (or nothing writable). The
// package reads arrays that speak only DLPack through this.
template <class View>
nb::tuple describe_view(const View& view) {
  std::vector<std::int64_t> shape, strides;
  for (std::size_t i = 0; i < view.ndim(); ++i) {
    shape.push_back(std::int64_t(view.shape(i)));
    strides.push_back(view.stride(i));
  }
  const nb::dlpack::dtype dtype = view.dtype();
  return nb::make_tuple(reinterpret_cast<Address>(view.data()), shape, strides,
                        nb::make_tuple(dtype.code, dtype.bits, dtype.lanes), view.device_type(),
                        view.device_id());
}

nb::object describe_dlpack(nb::handle array, bool writable) {
  if (writable) {
    nb::ndarray<> view;
    if (nb::try_cast(array, view)) return describe_view(view);
  } else {
    nb::ndarray<nb::ro> view;
    if (nb::try_cast(array, view)) return describe_view(view);
  }
  return nb::none();
}

// PyTorch tensors read and made in one native call each (the package's functions try these first):
// a plain tensor (torch_tensors.hpp) on PyTorch's current stream, with the other arguments checked
// by the package but histogram_even's bins, lo and hi and the scans' out, checked here. Each reads the tensors, has PyTorch allocate the result and
// queues the work, where the package's general path took a Python frame or more per step (their
// cost: docs/python.md). Each returns None for anything else, which the package then takes through
// its general path: it reads every kind of array, and says what is wrong.

nb::object torch_reduce(nb::handle x, const std::string& op_name) {
  TorchTensors& torch = TorchTensors::instance();
  PlainTensor source;
  if (!torch.read_plain(x, source) || source.size == 0 ||
      !ReduceElements::include(source.dtype->name))
    return nb::none();
  nb::object result = torch.new_empty(x, nb::tuple());
  reduce(source.dtype->name, op_name, source.address, source.size, torch.data_ptr(result),
         source.device, torch.current_stream(source.device));
  return result;
}

nb::object torch_reduce_rows(nb::handle x, const std::string& op_name) {
  TorchTensors& torch = TorchTensors::instance();
  PlainTensor source;
  if (!torch.read_plain(x, source) || source.ndim() < 2 ||
      !ReduceElements::include(source.dtype->name))
    return nb::none();
  const std::size_t last = source.ndim() - 1;
  const std::int64_t cols = source.extent(last);
  if (cols == 0) return nb::none();  // rows without columns (an error), or no rows either
  const nb::object leading = nb::steal(PyTuple_GetSlice(source.shape.ptr(), 0, Py_ssize_t(last)));
  if (!leading.is_valid()) throw nb::python_error();
  nb::object result = torch.new_empty(x, leading);
  const std::int64_t rows = source.size / cols;
  if (rows > 0)
    reduce_rows(source.dtype->name, op_name, source.address, rows, cols, torch.data_ptr(result),
                source.device, torch.current_stream(source.device));
  return result;
}

// `out` None: a new result; else the tensor to write, x itself for in place.
template <bool Inclusive>
nb::object torch_scan(nb::handle x, nb::handle out) {
  TorchTensors& torch = TorchTensors::instance();
  PlainTensor source;
  if (!torch.read_plain(x, source) || source.ndim() != 1 ||
      !ReduceElements::include(source.dtype->name))
    return nb::none();
  nb::object result;
  Address address = 0;
  if (out.is_none()) {
    result = torch.new_empty(x, source.shape);
    address = torch.data_ptr(result);
  } else {
    PlainTensor target;
    if (!torch.read_plain(out, target) || target.dtype != source.dtype || target.ndim() != 1 ||
        target.size != source.size || target.device != source.device)
      return nb::none();
    result = nb::borrow(out);
    address = target.address;
  }
  scan<Inclusive>(source.dtype->name, source.address, address, source.size, source.device,
                  torch.current_stream(source.device));
  return result;
}

// A bin count the library takes (the package's rule): an int, not a bool, from 1 to 2^24.
bool plain_bins(nb::handle bins, int& count) {
  if (!PyLong_CheckExact(bins.ptr())) return false;
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(bins.ptr(), &overflow);
  if (value == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0 || value < 1 || value > (1 << 24)) return false;
  count = int(value);
  return true;
}

// A bound given as a float or an int that a double holds (the package's float(bound)).
bool plain_bound(nb::handle bound, double& value) {
  if (PyFloat_Check(bound.ptr())) {
    value = PyFloat_AS_DOUBLE(bound.ptr());
    return true;
  }
  if (!PyLong_CheckExact(bound.ptr())) return false;
  value = PyLong_AsDouble(bound.ptr());
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();  // too large for a double: the package says so
    return false;
  }
  return true;
}

// `bins`, `lo` and `hi` as the caller gave them: anything but plain values (above) goes to the
// package, which says what is wrong; the library checks the range.
nb::object torch_histogram_even(nb::handle x, nb::handle bins, nb::handle lo, nb::handle hi) {
  TorchTensors& torch = TorchTensors::instance();
  PlainTensor source;
  int count = 0;
  double low = 0, high = 0;
  if (!torch.read_plain(x, source) || !HistogramElements::include(source.dtype->name) ||
      !plain_bins(bins, count) || !plain_bound(lo, low) || !plain_bound(hi, high))
    return nb::none();
  nb::object counts = torch.new_empty(x, nb::make_tuple(count), torch.int64());
  histogram_even(source.dtype->name, source.address, source.size, count, low, high,
                 torch.data_ptr(counts), source.device, torch.current_stream(source.device));
  return counts;
}

nb::object torch_transpose(nb::handle x) {
  TorchTensors& torch = TorchTensors::instance();
  PlainTensor source;
  if (!torch.read_plain(x, source) || source.ndim() != 2 || !transposable(source.dtype->itemsize))
    return nb::none();
  const std::int64_t rows = source.extent(0), cols = source.extent(1);
  nb::object result = torch.new_empty(x, nb::make_tuple(cols, rows));
  if (rows > 0 && cols > 0)
    transpose(int(source.dtype->itemsize), source.address, rows, cols, torch.data_ptr(result),
              source.device, torch.current_stream(source.device));
  return result;
}

// The general path's reading of a tensor (TorchTensors::describe): one call from the package
// instead of nine attribute calls and their Python frames.
nb::object describe_torch(nb::handle tensor) { return TorchTensors::instance().describe(tensor); }

// The device that owns `address`: arrays read through __cuda_array_interface__ do not say.
int pointer_device(Address address, const std::string& op, const std::string& argument) {
  cudaPointerAttributes attributes{};
  ROOFLAB_CUDA(op.c_str(), "finding the memory behind argument '" + argument + "'",
               cudaPointerGetAttributes(&attributes, at<const void>(address)));
  rooflab::require(
      attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged,
      op.c_str(), argument.c_str(), "is not CUDA device memory (a host array?)");
  return attributes.device;
}

// The package's check of a stream= argument, made before it allocates anything for the stream.
void check_stream(int device, Address stream, const std::string& op) {
  nb::gil_scoped_release release;
  OnDevice on_device(device, op.c_str());  // the legacy default stream is the current device's
  require_stream_on_device(stream, device, op.c_str());
}

// `waiting` runs nothing more until what is queued on `on` now has finished; no host wait.
void stream_wait(int device, Address waiting, Address on, const std::string& op) {
  nb::gil_scoped_release release;
  OnDevice on_device(device, op.c_str());
  cudaEvent_t event = nullptr;
  ROOFLAB_CUDA(op.c_str(), "creating an event",
               cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaError_t status = cudaEventRecord(event, as_stream(on));
  if (status == cudaSuccess) status = cudaStreamWaitEvent(as_stream(waiting), event, 0);
  cudaEventDestroy(event);  // its resources go once the wait no longer needs them
  ROOFLAB_CUDA(op.c_str(), "ordering one stream behind another", status);
}

void synchronize(int device, Address stream, const std::string& op) {
  nb::gil_scoped_release release;
  OnDevice on_device(device, op.c_str());
  ROOFLAB_CUDA(op.c_str(), "waiting for the stream", cudaStreamSynchronize(as_stream(stream)));
}

std::tuple<int, int> cuda_versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);  // 0 where no driver is installed
  return {runtime, driver};
}

// rooflab::Error becomes rooflab.Error (python/src/rooflab/_errors.py) with the same parts.
void translate_error(const std::exception_ptr& exception, void*) {
  try {
    std::rethrow_exception(exception);
  } catch (const rooflab::Error& error) {
    nb::object type = nb::module_::import_("rooflab._errors").attr("Error");
    nb::object instance = type(error.what(), error.op(), error.argument(), error.cuda_error());
    PyErr_SetObject(type.ptr(), instance.ptr());
  }
}

}  // namespace

NB_MODULE(_rooflab, m) {
  m.doc() = "rooflab's library on device addresses; use the rooflab package, not this module.";
  m.attr("__version__") = ROOFLAB_VERSION;
  nb::register_exception_translator(translate_error);

  using namespace nb::literals;
  m.def("reduce", &reduce, "dtype"_a, "op"_a, "x"_a, "n"_a, "out"_a, "device"_a, "stream"_a);
  m.def("reduce_rows", &reduce_rows, "dtype"_a, "op"_a, "x"_a, "rows"_a, "cols"_a, "out"_a,
        "device"_a, "stream"_a);
  m.def("inclusive_scan", &scan<true>, "dtype"_a, "x"_a, "out"_a, "n"_a, "device"_a, "stream"_a);
  m.def("exclusive_scan", &scan<false>, "dtype"_a, "x"_a, "out"_a, "n"_a, "device"_a, "stream"_a);
  m.def("histogram_even", &histogram_even, "dtype"_a, "x"_a, "n"_a, "bins"_a, "lo"_a, "hi"_a,
        "counts"_a, "device"_a, "stream"_a);
  m.def("transpose", &transpose, "element_bytes"_a, "x"_a, "rows"_a, "cols"_a, "out"_a, "device"_a,
        "stream"_a);
  m.def("svd", &svd, "dtype"_a, "a"_a, "m"_a, "n"_a, "lda"_a, "s"_a, "u"_a, "ldu"_a, "v"_a, "ldv"_a,
        "compute_uv"_a, "tol"_a, "max_sweeps"_a, "device"_a, "stream"_a);
  m.def("svd_batched", &svd_batched, "dtype"_a, "a"_a, "m"_a, "n"_a, "batch"_a, "s"_a, "u"_a, "v"_a,
        "info"_a, "compute_uv"_a, "tol"_a, "max_sweeps"_a, "device"_a, "stream"_a);
  m.attr("svd_info_bytes") = DeviceInfoLayout::bytes_per_matrix;
  m.def("svd_info_to_host", &svd_info_to_host, "info"_a, "batch"_a, "device"_a);

  nb::class_<DeviceMemory>(m, "DeviceMemory")
      .def(nb::init<std::size_t, int, Address, const std::string&>(), "bytes"_a, "device"_a,
           "stream"_a, "op"_a)
      .def_prop_ro("address", &DeviceMemory::address);
  m.def("export_dlpack", &export_dlpack, "memory"_a, "address"_a, "shape"_a, "strides"_a, "code"_a,
        "bits"_a, "device"_a);
  m.def("describe_dlpack", &describe_dlpack, "array"_a, "writable"_a);
  m.def("describe_torch", &describe_torch, "tensor"_a);
  m.def("torch_reduce", &torch_reduce, "x"_a, "op"_a);
  m.def("torch_reduce_rows", &torch_reduce_rows, "x"_a, "op"_a);
  m.def("torch_inclusive_scan", &torch_scan<true>, "x"_a, "out"_a.none());
  m.def("torch_exclusive_scan", &torch_scan<false>, "x"_a, "out"_a.none());
  m.def("torch_histogram_even", &torch_histogram_even, "x"_a, "bins"_a, "lo"_a, "hi"_a);
  m.def("torch_transpose", &torch_transpose, "x"_a);
  m.def("pointer_device", &pointer_device, "address"_a, "op"_a, "argument"_a);
  m.def("check_stream", &check_stream, "device"_a, "stream"_a, "op"_a);
  m.def("stream_wait", &stream_wait, "device"_a, "waiting"_a, "on"_a, "op"_a);
  m.def("synchronize", &synchronize, "device"_a, "stream"_a, "op"_a);
  m.def("cuda_versions", &cuda_versions);
}
