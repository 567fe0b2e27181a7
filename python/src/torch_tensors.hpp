// PyTorch tensors as the native module reads and makes them, through torch's Python API alone
// (rooflab does not link against libtorch): C calls on the tensor objects instead of the
// package's Python frames, where a small call's few microseconds go.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace rooflab_python {

namespace nb = nanobind;

// A torch dtype as the package names it (NumPy's names: torch.float32 is "float32").
struct TorchDtype {
  nb::object dtype;  // the torch.dtype object; torch's dtypes are singletons
  std::string name;
  nb::object name_object;      // `name` as a Python str
  nb::object itemsize_object;  // the item size as a Python int
  std::size_t itemsize;
  bool complex;
};

// A tensor a call takes as it is, with nothing to check or say: a torch.Tensor (not a subclass)
// on a CUDA device, strided and C-contiguous, neither a lazily negated nor a lazily conjugated
// view.
struct PlainTensor {
  std::uintptr_t address = 0;
  std::int64_t size = 0;  // elements
  nb::object shape;       // its torch.Size, a tuple
  const TorchDtype* dtype = nullptr;
  int device = 0;

  std::size_t ndim() const { return nb::len(shape); }
  std::int64_t extent(std::size_t axis) const;
};

class TorchTensors {
 public:
  // The one instance. Never destroyed: its Python objects must not be released after the
  // interpreter has gone.
  static TorchTensors& instance();

  // (address, shape, strides in elements or None where C-contiguous, dtype name, item size,
  // device) of any tensor, or None where rooflab cannot read it in place as it is (not strided,
  // not on a CUDA device, a lazily conjugated or negated view), for the package to say why.
  nb::object describe(nb::handle tensor);

  // Whether `x` is a plain tensor (above); if so, `tensor` describes it.
  bool read_plain(nb::handle x, PlainTensor& tensor);

  // PyTorch's current stream on `device`, as a raw cudaStream_t.
  std::uintptr_t current_stream(int device);

  // like.new_empty(shape) (shape a tuple): a new tensor on like's device, from PyTorch's caching
  // allocator on its current stream, of like's dtype, or of `dtype` (a torch.dtype) where given.
  nb::object new_empty(nb::handle like, nb::handle shape, nb::handle dtype = nb::handle());

  // torch.int64, once a tensor has been read.
  nb::handle int64() const { return int64_; }

  std::uintptr_t data_ptr(nb::handle tensor);

 private:
  TorchTensors() = default;
  // Whether the caller has imported torch; the objects below are found the first time it has.
  bool find_torch();
  bool is_strided(nb::handle tensor);
  // The dtype of a tensor rooflab can read in place as it is (strided, on a CUDA device, neither
  // a lazily negated nor a lazily conjugated view), else null; torch must have been found.
  const TorchDtype* readable_dtype(nb::handle tensor);
  const TorchDtype& dtype_of(nb::handle tensor);

  // Found once torch has been imported by the caller; held for good.
  PyObject* torch_ = nullptr;
  PyObject* tensor_type_ = nullptr;
  PyObject* strided_ = nullptr;             // torch.strided, the dense layout
  PyObject* int64_ = nullptr;               // torch.int64
  PyObject* current_raw_stream_ = nullptr;  // torch._C._cuda_getCurrentRawStream; null without CUDA
  std::deque<TorchDtype> dtypes_;           // a deque: references to its entries stay valid
};

}  // namespace rooflab_python
