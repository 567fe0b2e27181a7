"""How a rooflab call reads the caller's arrays and stream, and hands results back.

An array is read in place, never copied: PyTorch and CuPy arrays through their own attributes
(the fastest way; a tensor's are read by the native module in one call, describe_torch), JAX,
Numba and any other CUDA array through ``__cuda_array_interface__``, and what speaks only DLPack
through nanobind. Results are allocated by the caller's framework where it
can allocate (PyTorch, CuPy: their caching allocators, on the work stream), else in memory that
rooflab owns (:class:`DeviceArray`), imported into JAX or Numba without a copy.

The work stream is the ``stream=`` argument, else the caller's current stream: PyTorch's or CuPy's
for their arrays, the stream a ``__cuda_array_interface__`` names, else the legacy default stream.
JAX has no current stream that rooflab could queue behind, and a DLPack-only producer gives no way
to learn when it may reuse the memory: for those two, a call waits for its stream before returning.
"""

import math
import sys

import numpy as np

from . import _rooflab
from ._errors import argument_error

# DLPack's device types.
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13
# DLPack's type codes, by the prefix of the dtype's name.
_DLPACK_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "complex": 5, "bool": 6}

_MOVE_TO_GPU = ("rooflab works on CUDA device arrays; move it to the GPU first "
                "(torch.as_tensor(x, device='cuda'), cupy.asarray(x), jax.device_put(x, jax.devices('gpu')[0]))")


class Operand:
    """One array argument of a call, read in place: its address, shape, strides (in elements;
    None when C-contiguous), dtype name ("float32", ... as NumPy names it), item size and device."""

    __slots__ = ("array", "framework", "address", "shape", "size", "strides", "dtype", "itemsize",
                 "producer_stream", "_device", "_op", "_name")

    def __init__(self, array, framework, address, shape, strides, dtype, itemsize, device, op, name,
                 producer_stream=None):
        self.array = array
        self.framework = framework
        self.address = address
        self.shape = shape = tuple(shape)
        self.size = math.prod(shape)
        self.strides = strides
        self.dtype = dtype
        self.itemsize = itemsize
        self.producer_stream = producer_stream
        self._device = device
        self._op = op
        self._name = name

    @property
    def device(self) -> int:
        # __cuda_array_interface__ does not say where its memory is: CUDA is asked when the device
        # is first needed, after every check that needs no GPU.
        if self._device is None:
            # An empty array may have no address, and then no device: it takes the first GPU.
            self._device = _rooflab.pointer_device(self.address, self._op, self._name) if self.address else 0
        return self._device

    def is_c_contiguous(self) -> bool:
        return self.strides is None or _dense(self.shape, self.strides, range(len(self.shape) - 1, -1, -1))

    def has_column_major_matrices(self) -> bool:
        """Whether each matrix of a (..., m, n) stack is column-major and the matrices are packed,
        one after the other (a.mT of a C-contiguous stack)."""
        last = len(self.shape) - 1
        strides = _c_strides(self.shape) if self.strides is None else self.strides
        return _dense(self.shape, strides, [last - 1, last, *range(last - 2, -1, -1)])

    def require_c_contiguous(self) -> None:
        if self.strides is not None and not self.is_c_contiguous():
            raise argument_error(
                self._op, self._name,
                f"is not contiguous (shape {self.shape}, strides {self.strides} in elements); rooflab reads "
                "arrays in place and never copies them: pass x.contiguous() (PyTorch) or "
                "cupy.ascontiguousarray(x)")

    def dtype_error(self, dtypes):
        """The rooflab.Error for a dtype that is not one of `dtypes`."""
        return argument_error(self._op, self._name, f"has dtype {self.dtype}; {self._op} takes {', '.join(dtypes)}")


def _c_strides(shape) -> tuple:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _dense(shape, strides, fastest_first) -> bool:
    """Whether the elements fill memory without gaps, axis fastest_first[0] varying fastest (axes
    of extent 1 may have any stride)."""
    if 0 in shape:
        return True
    expected = 1
    for axis in fastest_first:
        if shape[axis] != 1 and strides[axis] != expected:
            return False
        expected *= shape[axis]
    return True


def framework_of(array):
    """'torch', 'cupy', 'jax', 'numba', or None for any other object."""
    kind = type(array)
    framework = _FRAMEWORK_OF_TYPE.get(kind, _UNSEEN)
    if framework is _UNSEEN:
        framework = _FRAMEWORK_OF_TYPE[kind] = _framework_of_type(kind)
    return framework


# Found once per type: isinstance against four frameworks costs a good part of a small call.
_FRAMEWORK_OF_TYPE = {}
_UNSEEN = object()


def _framework_of_type(kind):
    # Only frameworks the caller has imported are asked: an array of a framework implies its module
    # is loaded.
    for framework, module, attribute in (("torch", "torch", "Tensor"), ("cupy", "cupy", "ndarray"),
                                         ("jax", "jax", "Array"),
                                         ("numba", "numba.cuda.cudadrv.devicearray", "DeviceNDArray")):
        loaded = sys.modules.get(module)
        if loaded is not None and issubclass(kind, getattr(loaded, attribute)):
            return framework
    return None


def read(array, op: str, name: str, writable: bool = False) -> Operand:
    """The Operand of `array`, or rooflab.Error saying why rooflab cannot read it in place."""
    framework = framework_of(array)
    if framework == "torch":
        description = _rooflab.describe_torch(array)
        if description is None:
            raise _torch_refusal(array, op, name)
        # (address, shape, strides, dtype, itemsize, device), in Operand's order.
        return Operand(array, "torch", *description, op, name)
    if framework == "cupy":
        return _read_cupy(array, op, name)
    if framework == "jax":
        if writable:
            raise argument_error(op, name, "is a JAX array, and JAX arrays are immutable: leave it to rooflab "
                                           "to allocate the result")
        _require_eager_single_gpu_jax_array(array, op, name)
        # JAX dispatches asynchronously and exports no stream to order against: its values may still
        # be on their way (a copy from the host, the kernel that makes them). Wait for them.
        array.block_until_ready()
    if isinstance(array, np.ndarray):
        raise argument_error(op, name, f"is a NumPy array, in host memory; {_MOVE_TO_GPU}")
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is not None:
        return _read_cuda_array_interface(array, interface, framework or "cuda_array_interface", op, name,
                                          writable)
    if hasattr(array, "__dlpack__"):
        return _read_dlpack(array, op, name, writable)
    raise argument_error(op, name, f"is a {type(array).__module__}.{type(array).__qualname__}, not an array; "
                                   "rooflab takes CUDA arrays that speak __cuda_array_interface__ or DLPack "
                                   "(PyTorch, CuPy, JAX, Numba, ...)")


def _torch_refusal(array, op, name):
    """Why describe_torch could not read the tensor in place."""
    if array.layout is not sys.modules["torch"].strided:
        return argument_error(op, name, f"is a PyTorch tensor of layout {array.layout}; rooflab takes dense "
                                        "(strided) tensors: pass x.to_dense()")
    if not array.is_cuda:
        return argument_error(op, name, f"is a PyTorch tensor on {array.device}; {_MOVE_TO_GPU}")
    # Its memory holds the values before the lazy conjugation or negation.
    return argument_error(op, name, "is a lazily conjugated or negated view; pass x.resolve_conj() or "
                                    "x.resolve_neg()")


def _read_cupy(array, op, name):
    itemsize = array.itemsize
    strides = None
    if not array.flags.c_contiguous:
        if any(stride % itemsize for stride in array.strides):
            raise argument_error(op, name, f"has strides {array.strides} in bytes, not whole elements")
        strides = tuple(stride // itemsize for stride in array.strides)
    return Operand(array, "cupy", array.data.ptr, array.shape, strides, array.dtype.name, itemsize, array.device.id,
                   op, name)


def _require_eager_single_gpu_jax_array(array, op, name):
    jax = sys.modules["jax"]
    if isinstance(array, jax.core.Tracer):
        raise argument_error(op, name, "is a JAX tracer: rooflab runs eagerly, on concrete arrays, "
                                       "not inside jax.jit, vmap or grad")
    devices = array.devices()
    if len(devices) != 1:
        raise argument_error(op, name, f"is spread over {len(devices)} devices; rooflab takes an array "
                                       "on one GPU")
    (device,) = devices
    if device.platform != "gpu":
        raise argument_error(op, name, f"is a JAX array on {device}; {_MOVE_TO_GPU}")


def _read_cuda_array_interface(array, interface, framework, op, name, writable):
    if interface.get("mask") is not None:
        raise argument_error(op, name, "is a masked array; rooflab takes arrays without a mask")
    address, read_only = interface["data"]
    if writable and read_only:
        raise argument_error(op, name, "is read-only")
    dtype, itemsize = _typestr_dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is not None:
        if any(stride % itemsize for stride in strides):
            raise argument_error(op, name, f"has strides {strides} in bytes, not whole elements")
        strides = tuple(stride // itemsize for stride in strides)
    return Operand(array, framework, address, interface["shape"], strides, dtype, itemsize, None, op, name,
                   producer_stream=interface.get("stream"))


# NumPy takes microseconds to name a dtype: each name is worked out once.
_DTYPE_NAMES = {}


def _typestr_dtype(typestr):
    """(name, item size) of a __cuda_array_interface__ typestr ("<f4": ("float32", 4))."""
    known = _DTYPE_NAMES.get(typestr)
    if known is None:
        dtype = np.dtype(typestr)
        known = _DTYPE_NAMES[typestr] = (dtype.name, dtype.itemsize)
    return known


def _read_dlpack(array, op, name, writable):
    description = _rooflab.describe_dlpack(array, writable)
    if description is None:
        raise argument_error(op, name, f"is a {type(array).__qualname__} whose __dlpack__ gives no "
                                       f"{'writable ' if writable else ''}array rooflab can read")
    address, shape, strides, (code, bits, lanes), device_type, device_id = description
    if device_type in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
        raise argument_error(op, name, f"is in host memory (a {type(array).__qualname__}); {_MOVE_TO_GPU}")
    if device_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        raise argument_error(op, name, f"is on a device rooflab cannot use (DLPack device type {device_type})")
    prefix = {code_: prefix for prefix, code_ in _DLPACK_CODES.items()}.get(code)
    if prefix is None or lanes != 1:
        raise argument_error(op, name, f"has a DLPack dtype rooflab does not know (code {code}, {bits} bits)")
    dtype = "bool" if prefix == "bool" else f"{prefix}{bits}"
    return Operand(array, "dlpack", address, shape, tuple(strides), dtype, bits // 8, device_id, op, name)


def stream_handle(stream, op: str):
    """The raw cudaStream_t of a ``stream=`` argument, or None where the caller gave none.

    Takes an int (a cudaStream_t: 0 is the legacy default stream, 1 and 2 CUDA's named legacy and
    per-thread default streams), an object with ``__cuda_stream__`` (CUDA Python's protocol,
    returning (version, handle)), a torch.cuda.Stream (its ``cuda_stream``) or a cupy Stream (its
    ``ptr``).
    """
    if stream is None:
        return None
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise argument_error(op, "stream", f"is {stream}; a stream handle is not negative")
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        _version, handle = protocol() if callable(protocol) else protocol
        return int(handle)
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise argument_error(op, "stream", f"is a {type(stream).__qualname__}; pass an int cudaStream_t, an object "
                                       "with __cuda_stream__, a torch.cuda.Stream or a cupy Stream")


# CUDA's handles of the legacy default stream (0 and 1) and the per-thread default stream (2): each
# names that stream of the device current when it is used, which a call makes the arrays' device.
_DEVICE_RELATIVE_STREAMS = (0, 1, 2)


def _current_stream(operand: Operand, device: int) -> int:
    if operand.framework == "torch":
        # The raw handle without building a torch.cuda.Stream object: about a microsecond less a call,
        # which is most of the budget of a small one (torch.cuda.current_stream().cuda_stream).
        return sys.modules["torch"]._C._cuda_getCurrentRawStream(device)
    if operand.framework == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream(device).ptr
    return 0 if operand.producer_stream is None else operand.producer_stream


class Call:
    """One call of a rooflab function: its operands, device and stream, and its results."""

    __slots__ = ("op", "operands", "device", "stream", "_framework", "_on_current_stream")

    def __init__(self, op: str, stream) -> None:
        self.op = op
        self.operands = []
        self.stream = None if stream is None else stream_handle(stream, op)
        self.device = None
        self._framework = None
        self._on_current_stream = True

    def read(self, array, name: str, dtypes=None, writable: bool = False) -> Operand:
        operand = read(array, self.op, name, writable)
        if dtypes is not None and operand.dtype not in dtypes:
            raise operand.dtype_error(dtypes)
        self.operands.append(operand)
        return operand

    def start(self) -> None:
        """Settles the device and the stream, after the checks that need no GPU."""
        first = self.operands[0]
        self._framework = first.framework
        device = self.device = first.device
        current = _current_stream(first, device)
        if self.stream is None:
            self.stream = current
        self._on_current_stream = self.stream == current
        if self.stream not in _DEVICE_RELATIVE_STREAMS and not (
                self._on_current_stream and self._framework in ("torch", "cupy")):
            # A framework's current stream of the device is the device's; any other stream (given,
            # or named by an array's __cuda_array_interface__) is checked before any result is
            # allocated for it: PyTorch records a tensor's use on the stream (record_stream) and,
            # were the stream another device's, aborted the process when the tensor was freed (an
            # event of one device recorded on another's stream).
            _rooflab.check_stream(device, self.stream, self.op)
        for operand in self.operands:
            if operand is not first and operand.device != device:
                raise argument_error(self.op, operand._name, f"is on device {operand.device}, "
                                     f"{first._name} on device {device}")
            # __cuda_array_interface__ v3: the producer's pending work on its stream comes first.
            if operand.producer_stream is not None and operand.producer_stream != self.stream:
                _rooflab.stream_wait(device, self.stream, operand.producer_stream, self.op)

    def empty(self, shape, dtype: str, itemsize: int):
        """A new array of the caller's framework on the call's device, for the work stream, and its
        address."""
        if self._framework == "torch":
            source = self.operands[0]
            # new_empty takes the device, and the dtype unless given, from the tensor: 2.7-4.9 us a
            # call where torch.empty(shape, dtype=..., device=...) took 3.3-6.3 in the same
            # processes (H100 hosts, docs/results/h100-python-wrapper-pieces.txt).
            if dtype == source.dtype:
                result = source.array.new_empty(shape)
            else:
                result = source.array.new_empty(shape, dtype=getattr(sys.modules["torch"], dtype))
            if not self._on_current_stream:
                # The caching allocator must not hand the memory out again before the work stream is
                # done with it (torch.Tensor.record_stream's purpose).
                torch = sys.modules["torch"]
                result.record_stream(torch.cuda.ExternalStream(self.stream, device=result.device))
            return result, result.data_ptr()
        if self._framework == "cupy":
            return self._cupy_empty(shape, dtype)
        result = DeviceArray.empty(tuple(shape), dtype, itemsize, self.device, self.stream, self.op)
        return result, result.address

    def _cupy_empty(self, shape, dtype):
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(self.device):
            if self._on_current_stream:
                result = cupy.empty(shape, dtype)
            else:
                # CuPy's pool reuses memory in the order of the stream it was allocated on.
                with _cupy_stream(cupy, self.stream, self.device):
                    result = cupy.empty(shape, dtype)
        return result, result.data.ptr

    def finish(self, *results):
        """The results (from empty, views of them, or None) in the caller's framework, once the work
        is queued: one as it is, several as a tuple."""
        framework = self._framework
        if framework == "torch" or framework == "cupy":  # their own arrays already
            return results[0] if len(results) == 1 else results
        if framework in ("jax", "dlpack"):
            _rooflab.synchronize(self.device, self.stream, self.op)
        if len(results) == 1:
            return self._in_framework(results[0])
        return tuple(map(self._in_framework, results))

    def _in_framework(self, result):
        if not isinstance(result, DeviceArray):
            return result
        if self._framework == "jax":
            return sys.modules["jax"].dlpack.from_dlpack(result)
        if self._framework == "numba":
            return sys.modules["numba.cuda"].as_cuda_array(result)
        return result


class _StreamHandle:
    """A raw cudaStream_t behind CUDA Python's stream protocol (version 0: the handle)."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _cupy_stream(cupy, handle: int, device: int):
    """A cupy Stream over the raw `handle`, a stream of `device` (the current device here)."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:  # CuPy 14 on, where ExternalStream is deprecated
        return from_external(_StreamHandle(handle))
    return cupy.cuda.ExternalStream(handle, device)


def swap_last_axes(array):
    """The view of `array` with its last two axes swapped, in its own framework."""
    if isinstance(array, DeviceArray):
        return array.swap_last_axes()
    # Read once: a tensor's mT makes a new view each time it is read.
    swapped = getattr(array, "mT", None)
    return array.swapaxes(-1, -2) if swapped is None else swapped


class DeviceArray:
    """A result in device memory that rooflab owns, where the caller's framework cannot allocate
    one: the package imports it into JAX and Numba without a copy, and returns it as it is for any
    other producer of ``__cuda_array_interface__`` or DLPack. It speaks both protocols, so
    ``torch.from_dlpack``, ``cupy.asarray``, ``jax.dlpack.from_dlpack`` and ``numba.cuda.as_cuda_array``
    take it without a copy, ordered behind rooflab's work on its stream.
    """

    __slots__ = ("_memory", "_address", "_shape", "_strides", "_dtype", "_itemsize", "_device", "_stream")

    def __init__(self, memory, address, shape, strides, dtype, itemsize, device, stream):
        self._memory = memory
        self._address = address
        self._shape = shape
        self._strides = strides
        self._dtype = dtype
        self._itemsize = itemsize
        self._device = device
        self._stream = stream

    @classmethod
    def empty(cls, shape, dtype, itemsize, device, stream, op):
        memory = _rooflab.DeviceMemory(math.prod(shape) * itemsize, device, stream, op)
        return cls(memory, memory.address, shape, _c_strides(shape), dtype, itemsize, device, stream)

    def swap_last_axes(self) -> "DeviceArray":
        shape = (*self._shape[:-2], self._shape[-1], self._shape[-2])
        strides = (*self._strides[:-2], self._strides[-1], self._strides[-2])
        return DeviceArray(self._memory, self._address, shape, strides, self._dtype, self._itemsize,
                           self._device, self._stream)

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def strides(self) -> tuple:
        """In elements (DLPack's convention), not bytes."""
        return self._strides

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def device(self) -> int:
        return self._device

    @property
    def address(self) -> int:
        return self._address

    @property
    def __cuda_array_interface__(self) -> dict:
        try:
            typestr = np.dtype(self._dtype).str
        except TypeError:
            # Without a NumPy name (bfloat16) there is no typestr: consumers fall back to DLPack.
            raise AttributeError(f"__cuda_array_interface__ cannot describe dtype {self._dtype}") from None
        return {
            "shape": self._shape,
            "typestr": typestr,
            "data": (self._address, False),
            "strides": tuple(stride * self._itemsize for stride in self._strides),
            "version": 3,
            # 0 is not allowed here: the legacy default stream is spelled 1.
            "stream": self._stream or 1,
        }

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("rooflab.DeviceArray cannot export a copy")
        if dl_device is not None and tuple(dl_device) != (_DLPACK_CUDA, self._device):
            raise BufferError(f"rooflab.DeviceArray is on CUDA device {self._device}, not {dl_device}")
        if stream != -1:  # -1: the consumer asks for no ordering
            consumer = 1 if stream is None else stream  # None: the legacy default stream
            if consumer != self._stream:
                _rooflab.stream_wait(self._device, consumer, self._stream, "DeviceArray.__dlpack__")
        prefix = self._dtype.rstrip("0123456789")
        bits = 8 if self._dtype == "bool" else int(self._dtype[len(prefix):])
        return _rooflab.export_dlpack(self._memory, self._address, list(self._shape), list(self._strides),
                                      _DLPACK_CODES[prefix], bits, self._device)

    def __dlpack_device__(self) -> tuple:
        return (_DLPACK_CUDA, self._device)

    def __repr__(self) -> str:
        return f"rooflab.DeviceArray(shape={self._shape}, dtype={self._dtype}, device={self._device})"
