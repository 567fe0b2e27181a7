// rooflab._rooflab: the library's entry points on device addresses, for the Python package.
// The package (python/src/rooflab) reads the caller's arrays into addresses, shapes and a stream,
// allocates the results in the caller's framework and checks what it can without the GPU; this
// module runs the library on the arrays' device and turns rooflab::Error into rooflab.Error.
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
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "rooflab/rooflab.hpp"

namespace nb = nanobind;

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

// A stream of another device fails at launch with "invalid resource handle"; this names it.
void require_stream_on_device(Address stream, int device, const char* op) {
  int stream_device = 0;
  ROOFLAB_CUDA(op, "finding the stream's device",
               cudaStreamGetDevice(as_stream(stream), &stream_device));
  rooflab::require(stream_device == device, op, "stream",
                   "belongs to device " + std::to_string(stream_device) +
                       ", the arrays are on device " + std::to_string(device));
}

// Runs `work` with the calling thread on `device`, the stream checked, and the GIL released so
// that other Python threads run while the library waits (svd) or queues.
template <class Work>
void run_on(int device, Address stream, const char* op, Work&& work) {
  nb::gil_scoped_release release;
  OnDevice on_device(device, op);
  require_stream_on_device(stream, device, op);
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

// Calls f with a value of the one of Types that `dtype` names; the package has checked the dtype,
// so another name is a package bug, reported all the same.
template <class... Types, class F>
void with_element(const std::string& dtype, const char* op, const char* argument, F&& f) {
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

// The element types the library compiles reductions and scans for.
template <class F>
void with_reduce_element(const std::string& dtype, const char* op, F&& f) {
  with_element<float, double, std::int32_t, std::int64_t, std::uint32_t>(dtype, op, "x", f);
}

void reduce(const std::string& dtype, const std::string& op_name, Address in, std::int64_t n,
            Address out, int device, Address stream) {
  constexpr const char* op = "reduce";
  run_on(device, stream, op, [&] {
    with_reduce_element(dtype, op, [&](auto zero) {
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
  run_on(device, stream, op, [&] {
    with_reduce_element(dtype, op, [&](auto zero) {
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
  run_on(device, stream, op, [&] {
    with_reduce_element(dtype, op, [&](auto zero) {
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
  run_on(device, stream, op, [&] {
    with_element<std::uint8_t, std::int32_t, float, double>(dtype, op, "x", [&](auto zero) {
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

void transpose(int element_bytes, Address in, std::int64_t rows, std::int64_t cols, Address out,
               int device, Address stream) {
  constexpr const char* op = "transpose";
  run_on(device, stream, op, [&] {
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
  run_on(device, stream, "svd", [&] {
    with_element<float, double>(dtype, "svd", "a", [&](auto zero) {
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
  run_on(device, stream, "svd", [&] {
    with_element<float, double>(dtype, "svd", "a", [&](auto zero) {
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

// A PyTorch tensor as the package reads it: (address, shape, strides in elements or None where
// C-contiguous, dtype name, item size, device), or None where rooflab cannot read it in place as
// it is (not on a CUDA device; a lazily conjugated or negated view), for the package to say why.
// One call from the package instead of nine attribute calls and their Python frames. The
// overhead of the scan with out=, which reads two tensors and allocates nothing, went from
// 9.1-9.4 to 5.7-6.5 us with it on one H100 host (docs/python.md, "The wrapper's cost", says what
// that comparison leaves open).
class TorchReader {
 public:
  nb::object describe(nb::handle tensor) {
    if (!truth(attribute(tensor, is_cuda_)) || truth(call(tensor, is_neg_))) return nb::none();
    const DescribedDtype& dtype = described_dtype(tensor);
    // Only a complex tensor can be a lazily conjugated view: a real tensor's conj() is itself.
    if (dtype.complex && truth(call(tensor, is_conj_))) return nb::none();
    nb::object strides = nb::none();
    if (!truth(call(tensor, is_contiguous_))) strides = call(tensor, stride_);
    return nb::make_tuple(call(tensor, data_ptr_),
                          nb::steal(PySequence_Tuple(attribute(tensor, shape_).ptr())), strides,
                          dtype.name, dtype.itemsize, call(tensor, get_device_));
  }

 private:
  static nb::handle name(const char* text) { return PyUnicode_InternFromString(text); }
  static nb::object checked(PyObject* result) {
    if (result == nullptr) throw nb::python_error();
    return nb::steal(result);
  }
  static nb::object call(nb::handle tensor, nb::handle method) {
    return checked(PyObject_CallMethodNoArgs(tensor.ptr(), method.ptr()));
  }
  static nb::object attribute(nb::handle tensor, nb::handle attribute) {
    return checked(PyObject_GetAttr(tensor.ptr(), attribute.ptr()));
  }
  static bool truth(const nb::object& value) {
    const int result = PyObject_IsTrue(value.ptr());
    if (result < 0) throw nb::python_error();
    return result != 0;
  }
  // A tensor's dtype as the package names it (NumPy's names: "torch.float32" is "float32").
  struct DescribedDtype {
    nb::object dtype, name, itemsize;
    bool complex;
  };
  // Worked out once per dtype (torch's dtypes are singletons).
  const DescribedDtype& described_dtype(nb::handle tensor) {
    const nb::object dtype = attribute(tensor, dtype_);
    for (const DescribedDtype& known : dtypes_)
      if (known.dtype.is(dtype)) return known;
    std::string text = nb::cast<std::string>(nb::str(dtype));
    const std::string prefix = "torch.";
    if (text.compare(0, prefix.size(), prefix) == 0) text.erase(0, prefix.size());
    const bool complex = text.compare(0, 7, "complex") == 0;
    dtypes_.push_back({dtype, nb::str(text.c_str()), call(tensor, element_size_), complex});
    return dtypes_.back();
  }

  // Interned once and never released, as the reader itself is not.
  nb::handle is_cuda_ = name("is_cuda"), is_conj_ = name("is_conj"), is_neg_ = name("is_neg"),
             is_contiguous_ = name("is_contiguous"), stride_ = name("stride"),
             data_ptr_ = name("data_ptr"), shape_ = name("shape"), dtype_ = name("dtype"),
             element_size_ = name("element_size"), get_device_ = name("get_device");
  std::deque<DescribedDtype> dtypes_;  // a deque: references to its entries stay valid
};

nb::object describe_torch(nb::handle tensor) {
  // Never destroyed: its Python objects must not be released after the interpreter has gone.
  static TorchReader* reader = new TorchReader;
  return reader->describe(tensor);
}

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
  m.def("pointer_device", &pointer_device, "address"_a, "op"_a, "argument"_a);
  m.def("stream_wait", &stream_wait, "device"_a, "waiting"_a, "on"_a, "op"_a);
  m.def("synchronize", &synchronize, "device"_a, "stream"_a, "op"_a);
  m.def("cuda_versions", &cuda_versions);
}
