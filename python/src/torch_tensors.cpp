#include "torch_tensors.hpp"

#include <nanobind/stl/string.h>

namespace rooflab_python {

namespace {

nb::handle interned(const char* text) { return PyUnicode_InternFromString(text); }

// The names the module asks a tensor for, interned once and never released (as the instance that
// uses them is not).
struct Names {
  nb::handle is_cuda = interned("is_cuda"), is_conj = interned("is_conj"),
             is_neg = interned("is_neg"), is_contiguous = interned("is_contiguous"),
             stride = interned("stride"), data_ptr = interned("data_ptr"),
             shape = interned("shape"), dtype = interned("dtype"),
             element_size = interned("element_size"), get_device = interned("get_device"),
             numel = interned("numel"), new_empty = interned("new_empty"),
             layout = interned("layout"), torch = interned("torch");
  nb::handle dtype_keyword = PyTuple_Pack(1, dtype.ptr());  // kwnames of new_empty(..., dtype=)
};

const Names& names() {
  static const Names* names = new Names;
  return *names;
}

nb::object checked(PyObject* result) {
  if (result == nullptr) throw nb::python_error();
  return nb::steal(result);
}

nb::object call(nb::handle tensor, nb::handle method) {
  return checked(PyObject_CallMethodNoArgs(tensor.ptr(), method.ptr()));
}

nb::object attribute(nb::handle object, nb::handle name) {
  return checked(PyObject_GetAttr(object.ptr(), name.ptr()));
}

bool truth(const nb::object& value) {
  const int result = PyObject_IsTrue(value.ptr());
  if (result < 0) throw nb::python_error();
  return result != 0;
}

std::int64_t as_int64(nb::handle value) {
  const long long result = PyLong_AsLongLong(value.ptr());
  if (result == -1 && PyErr_Occurred()) throw nb::python_error();
  return result;
}

std::uintptr_t as_address(nb::handle value) {
  const unsigned long long result = PyLong_AsUnsignedLongLong(value.ptr());
  if (result == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return static_cast<std::uintptr_t>(result);
}

}  // namespace

std::int64_t PlainTensor::extent(std::size_t axis) const {
  return as_int64(PyTuple_GET_ITEM(shape.ptr(), Py_ssize_t(axis)));
}

TorchTensors& TorchTensors::instance() {
  static TorchTensors* tensors = new TorchTensors;
  return *tensors;
}

nb::object TorchTensors::describe(nb::handle tensor) {
  const TorchDtype* dtype = find_torch() ? readable_dtype(tensor) : nullptr;
  if (dtype == nullptr) return nb::none();
  const Names& name = names();
  nb::object strides = nb::none();
  if (!truth(call(tensor, name.is_contiguous))) strides = call(tensor, name.stride);
  return nb::make_tuple(call(tensor, name.data_ptr),
                        nb::steal(PySequence_Tuple(attribute(tensor, name.shape).ptr())), strides,
                        dtype->name_object, dtype->itemsize_object, call(tensor, name.get_device));
}

bool TorchTensors::read_plain(nb::handle x, PlainTensor& tensor) {
  // A torch built without CUDA has no CUDA tensors, and no current stream to ask for.
  if (!find_torch() || current_raw_stream_ == nullptr ||
      Py_TYPE(x.ptr()) != reinterpret_cast<PyTypeObject*>(tensor_type_))
    return false;
  const TorchDtype* dtype = readable_dtype(x);
  const Names& name = names();
  if (dtype == nullptr || !truth(call(x, name.is_contiguous))) return false;
  tensor.dtype = dtype;
  tensor.shape = attribute(x, name.shape);
  if (!PyTuple_Check(tensor.shape.ptr())) return false;  // a torch.Size is a tuple
  tensor.size = as_int64(call(x, name.numel));
  tensor.address = as_address(call(x, name.data_ptr));
  tensor.device = int(as_int64(call(x, name.get_device)));
  return true;
}

std::uintptr_t TorchTensors::current_stream(int device) {
  const nb::object index = checked(PyLong_FromLong(device));
  return as_address(checked(PyObject_CallOneArg(current_raw_stream_, index.ptr())));
}

nb::object TorchTensors::new_empty(nb::handle like, nb::handle shape, nb::handle dtype) {
  const Names& name = names();
  if (!dtype.is_valid()) {
    PyObject* arguments[] = {like.ptr(), shape.ptr()};
    return checked(PyObject_VectorcallMethod(name.new_empty.ptr(), arguments, 2, nullptr));
  }
  PyObject* arguments[] = {like.ptr(), shape.ptr(), dtype.ptr()};
  return checked(
      PyObject_VectorcallMethod(name.new_empty.ptr(), arguments, 2, name.dtype_keyword.ptr()));
}

std::uintptr_t TorchTensors::data_ptr(nb::handle tensor) {
  return as_address(call(tensor, names().data_ptr));
}

bool TorchTensors::find_torch() {
  if (torch_ != nullptr) return true;
  // A tensor implies that its caller has imported torch: it is looked up, not imported.
  PyObject* torch = PyImport_GetModule(names().torch.ptr());
  if (torch == nullptr) {
    if (PyErr_Occurred()) throw nb::python_error();
    return false;
  }
  const nb::object module = nb::steal(torch);
  const nb::object extension = module.attr("_C");
  if (nb::hasattr(extension, "_cuda_getCurrentRawStream"))
    current_raw_stream_ = extension.attr("_cuda_getCurrentRawStream").inc_ref().ptr();
  tensor_type_ = module.attr("Tensor").inc_ref().ptr();
  strided_ = module.attr("strided").inc_ref().ptr();
  int64_ = module.attr("int64").inc_ref().ptr();
  torch_ = module.inc_ref().ptr();
  return true;
}

// Sparse and other layouts have no strides, and their is_contiguous() raises.
bool TorchTensors::is_strided(nb::handle tensor) {
  return attribute(tensor, names().layout).ptr() == strided_;
}

const TorchDtype* TorchTensors::readable_dtype(nb::handle tensor) {
  const Names& name = names();
  if (!is_strided(tensor) || !truth(attribute(tensor, name.is_cuda)) ||
      truth(call(tensor, name.is_neg)))
    return nullptr;
  const TorchDtype& dtype = dtype_of(tensor);
  // Only a complex tensor can be a lazily conjugated view: a real tensor's conj() is itself.
  if (dtype.complex && truth(call(tensor, name.is_conj))) return nullptr;
  return &dtype;
}

const TorchDtype& TorchTensors::dtype_of(nb::handle tensor) {
  const nb::object dtype = attribute(tensor, names().dtype);
  for (const TorchDtype& known : dtypes_)
    if (known.dtype.is(dtype)) return known;
  std::string text = nb::cast<std::string>(nb::str(dtype));
  const std::string prefix = "torch.";
  if (text.compare(0, prefix.size(), prefix) == 0) text.erase(0, prefix.size());
  const nb::object itemsize = call(tensor, names().element_size);
  dtypes_.push_back({dtype, text, nb::str(text.c_str()), itemsize, std::size_t(as_int64(itemsize)),
                     text.compare(0, 7, "complex") == 0});
  return dtypes_.back();
}

}  // namespace rooflab_python
