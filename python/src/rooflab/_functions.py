"""rooflab's functions on the caller's CUDA arrays (docs/python.md).

Each function but svd first offers its arguments to the native module's torch_<function>, which
takes the common case of PyTorch in one call: plain CUDA tensors (not a subclass; C-contiguous, not
a lazily conjugated or negated view) on PyTorch's current stream, no stream= given, the other
arguments checked here but those the native call checks itself (histogram_even's bins, lo and hi,
the scans' out). It returns None for anything else, which the general path (Call,
in _arrays.py) then takes: it reads every kind of array, and says what is wrong.
"""

import math
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _rooflab
from ._arrays import Call, swap_last_axes
from ._errors import argument_error

#: Any CUDA array rooflab reads in place: a torch.Tensor, cupy.ndarray, jax.Array, Numba device
#: array, or any object with ``__cuda_array_interface__`` or ``__dlpack__``.
Array = Any
#: A stream: an int cudaStream_t, an object with ``__cuda_stream__``, a torch.cuda.Stream or a
#: cupy Stream; None for the caller's current stream.
Stream = Any

_REDUCE_DTYPES = ("float32", "float64", "int32", "int64", "uint32")
_HISTOGRAM_DTYPES = ("uint8", "int32", "float32", "float64")
_SVD_DTYPES = ("float32", "float64")
_TRANSPOSE_ITEMSIZES = (1, 2, 4, 8, 16)
_INT_MAX = 2**31 - 1
#: The library's default max_sweeps (LAPACK dgesvj's 30), from which it tries an unconverged
#: matrix again on the transposed triangle.
_DEFAULT_MAX_SWEEPS = 30


def _number(value, function: str, argument: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise argument_error(function, argument, f"is {value!r}, not a number") from None


_REDUCTIONS = ("sum", "min", "max")


def _reduction_error(op, function: str):
    return argument_error(function, "op", f"is {op!r}; it must be 'sum', 'min' or 'max'")


def reduce(x: Array, op: str = "sum", *, stream: Stream = None) -> Array:
    """The sum, minimum or maximum of all elements of `x`, as a 0-d array of x's dtype.

    Args:
        x: a C-contiguous CUDA array of float32, float64, int32, int64 or uint32, any shape, at
            least one element.
        op: "sum", "min" or "max".
        stream: the stream to queue on; None for the caller's current stream.

    Integer sums wrap modulo 2**bits in x's dtype (torch.sum and numpy.sum widen to int64 instead).
    The result is bitwise the same on every run on the same GPU. A NaN in x makes the result NaN,
    for "min" and "max" too, as torch.min and numpy.min do.
    """
    if op not in _REDUCTIONS:
        raise _reduction_error(op, "reduce")
    if stream is None:
        result = _rooflab.torch_reduce(x, op)
        if result is not None:
            return result
    call = Call("reduce", stream)
    source = call.read(x, "x", _REDUCE_DTYPES)
    source.require_c_contiguous()
    if source.size == 0:
        raise argument_error("reduce", "x", "is empty; a reduction needs at least one element")
    call.start()
    result, address = call.empty((), source.dtype, source.itemsize)
    _rooflab.reduce(source.dtype, op, source.address, source.size, address, call.device, call.stream)
    return call.finish(result)


def reduce_rows(x: Array, op: str = "sum", *, stream: Stream = None) -> Array:
    """The sum, minimum or maximum of each row of `x`: x.sum(-1) for x of shape (..., cols).

    Args:
        x: a C-contiguous CUDA array of float32, float64, int32, int64 or uint32 with at least two
            dimensions; the leading ones are the rows, the last the columns (at least one).
        op: "sum", "min" or "max".
        stream: the stream to queue on; None for the caller's current stream.

    Returns an array of shape x.shape[:-1] and x's dtype (integer sums wrap; a row holding a NaN
    reduces to NaN, as in :func:`reduce`).
    """
    if op not in _REDUCTIONS:
        raise _reduction_error(op, "reduce_rows")
    if stream is None:
        result = _rooflab.torch_reduce_rows(x, op)
        if result is not None:
            return result
    call = Call("reduce_rows", stream)
    source = call.read(x, "x", _REDUCE_DTYPES)
    source.require_c_contiguous()
    if len(source.shape) < 2:
        raise argument_error("reduce_rows", "x", f"has shape {source.shape}; reduce_rows takes a matrix "
                             "(rows, cols) or a stack (..., cols) (reduce sums a vector)")
    *leading, cols = source.shape
    rows = math.prod(leading)
    if rows > 0 and cols == 0:
        raise argument_error("reduce_rows", "x", f"has shape {source.shape}, rows without columns; a reduction "
                             "needs at least one element a row")
    call.start()
    result, address = call.empty(source.shape[:-1], source.dtype, source.itemsize)
    if rows > 0:
        _rooflab.reduce_rows(source.dtype, op, source.address, rows, cols, address, call.device, call.stream)
    return call.finish(result)


def _scan(function: str, x: Array, out: Optional[Array], stream: Stream) -> Array:
    if stream is None:
        torch_scan = _rooflab.torch_inclusive_scan if function == "inclusive_scan" else _rooflab.torch_exclusive_scan
        result = torch_scan(x, out)
        if result is not None:
            return result
    call = Call(function, stream)
    source = call.read(x, "x", _REDUCE_DTYPES)
    source.require_c_contiguous()
    if len(source.shape) != 1:
        raise argument_error(function, "x", f"has shape {source.shape}; the scans take a vector (for the "
                             "flattened array, pass x.reshape(-1))")
    if out is not None:
        target = call.read(out, "out", writable=True)
        target.require_c_contiguous()
        if target.shape != source.shape or target.dtype != source.dtype:
            raise argument_error(function, "out", f"has shape {target.shape} and dtype {target.dtype}; it must "
                                 f"match x: shape {source.shape}, dtype {source.dtype}")
    call.start()
    if out is None:
        out, address = call.empty(source.shape, source.dtype, source.itemsize)
    else:
        address = target.address
    scan = _rooflab.inclusive_scan if function == "inclusive_scan" else _rooflab.exclusive_scan
    scan(source.dtype, source.address, address, source.size, call.device, call.stream)
    return call.finish(out)


def inclusive_scan(x: Array, out: Optional[Array] = None, *, stream: Stream = None) -> Array:
    """Prefix sums: out[i] = x[0] + ... + x[i].

    Args:
        x: a C-contiguous 1-D CUDA array of float32, float64, int32, int64 or uint32 (any length).
        out: where to write the result (x itself for in place), of x's shape and dtype; None for a
            new array.
        stream: the stream to queue on; None for the caller's current stream.

    Returns `out`. Integer sums wrap modulo 2**bits in x's dtype (torch.cumsum widens to int64).
    Deterministic: the same input gives the same bits on every run.
    """
    return _scan("inclusive_scan", x, out, stream)


def exclusive_scan(x: Array, out: Optional[Array] = None, *, stream: Stream = None) -> Array:
    """Prefix sums without the element itself: out[0] = 0, out[i] = x[0] + ... + x[i - 1].

    Arguments and result as for :func:`inclusive_scan`.
    """
    return _scan("exclusive_scan", x, out, stream)


def histogram_even(x: Array, bins: int, lo: float, hi: float, *, stream: Stream = None) -> Array:
    """Counts of the values of `x` in `bins` evenly spaced bins over [lo, hi).

    A value v with lo <= v < hi falls into bin min(bins - 1, floor((v - lo) * bins / (hi - lo))),
    evaluated in float64; values outside [lo, hi), and NaN, are not counted. Unlike numpy.histogram
    and torch.histc, a value equal to hi is outside.

    Args:
        x: a C-contiguous CUDA array of uint8, int32, float32 or float64, any shape (all elements
            are counted).
        bins: the number of bins, 1 to 2**24.
        lo, hi: finite, lo < hi (uint8 data: lo=0, hi=256 gives a bin per value).
        stream: the stream to queue on; None for the caller's current stream.

    Returns an int64 array of `bins` counts (the dtype of numpy.histogram and torch.bincount).
    """
    if stream is None:  # bins, lo and hi as plain int and floats are checked there
        counts = _rooflab.torch_histogram_even(x, bins, lo, hi)
        if counts is not None:
            return counts
    function = "histogram_even"
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or not 1 <= bins <= 2**24:
        # Checked before the counts are allocated: the library checks it too, but only afterwards.
        raise argument_error(function, "bins", f"is {bins!r}; it must be an int from 1 to 2**24")
    lo, hi = _number(lo, function, "lo"), _number(hi, function, "hi")
    call = Call(function, stream)
    source = call.read(x, "x", _HISTOGRAM_DTYPES)
    source.require_c_contiguous()
    call.start()
    counts, address = call.empty((int(bins),), "int64", 8)
    # The library counts in uint64; counts never reach 2**63, so the bits are the same int64.
    _rooflab.histogram_even(source.dtype, source.address, source.size, int(bins), lo, hi, address, call.device,
                            call.stream)
    return call.finish(counts)


def transpose(x: Array, *, stream: Stream = None) -> Array:
    """The transpose of the matrix `x` (rows, cols), as a new C-contiguous (cols, rows) array:
    x.T.copy(), x.t().contiguous().

    Args:
        x: a C-contiguous 2-D CUDA array of any dtype of 1, 2, 4, 8 or 16 bytes (bool, uint8, float16,
            bfloat16, float32, int64, complex128, ...).
        stream: the stream to queue on; None for the caller's current stream.
    """
    if stream is None:
        result = _rooflab.torch_transpose(x)
        if result is not None:
            return result
    call = Call("transpose", stream)
    source = call.read(x, "x")
    source.require_c_contiguous()
    if len(source.shape) != 2:
        raise argument_error("transpose", "x", f"has shape {source.shape}; transpose takes a matrix (rows, cols)")
    if source.itemsize not in _TRANSPOSE_ITEMSIZES:
        raise argument_error("transpose", "x", f"has dtype {source.dtype} of {source.itemsize} bytes; transpose "
                             "takes elements of 1, 2, 4, 8 or 16 bytes")
    rows, cols = source.shape
    call.start()
    result, address = call.empty((cols, rows), source.dtype, source.itemsize)
    if rows > 0 and cols > 0:
        _rooflab.transpose(source.itemsize, source.address, rows, cols, address, call.device, call.stream)
    return call.finish(result)


class SvdInfo:
    """How the Jacobi sweeps went, per matrix: NumPy arrays of a's batch shape (0-d for a matrix).

    Unpacks as (sweeps, converged, off). A stack's records stay in device memory until a field is
    first read, which copies them to the host: copying them every call took longer than the
    whole solve on batches of small matrices (docs/python.md).
    """

    __slots__ = ("_fields", "_records")

    def __init__(self, sweeps: np.ndarray, converged: np.ndarray, off: np.ndarray) -> None:
        self._fields = (sweeps, converged, off)
        self._records = None

    @classmethod
    def _on_device(cls, memory, address: int, device: int, batch_shape) -> "SvdInfo":
        """The info svd_batched left at `address` (in `memory`, which the info keeps alive)."""
        info = cls.__new__(cls)
        info._fields = None
        info._records = (memory, address, device, tuple(batch_shape))
        return info

    def _read(self) -> tuple:
        if self._fields is None:
            _memory, address, device, batch_shape = self._records
            fields = _rooflab.svd_info_to_host(address, math.prod(batch_shape), device)
            self._fields = tuple(field.reshape(batch_shape) for field in fields)
            self._records = None
        return self._fields

    @property
    def sweeps(self) -> np.ndarray:
        """int32: sweeps run, the last one included (it finds every column pair orthogonal)."""
        return self._read()[0]

    @property
    def converged(self) -> np.ndarray:
        """bool: whether the matrix converged within max_sweeps: every pair within tol, or, on the
        library's Gram schedule, two sweeps in a row at its products' rounding floor (rooflab's
        docs/svd.md)."""
        return self._read()[1]

    @property
    def off(self) -> np.ndarray:
        """float64: the final largest scaled off-diagonal measure."""
        return self._read()[2]

    def __iter__(self):
        return iter(self._read())

    def __reduce__(self):
        return SvdInfo, self._read()

    def __repr__(self) -> str:
        sweeps, converged, off = self._read()
        return f"SvdInfo(sweeps={sweeps!r}, converged={converged!r}, off={off!r})"


class _SvdFactors(NamedTuple):
    U: Optional[Array]
    S: Array
    Vh: Optional[Array]


class SvdResult(_SvdFactors):
    """(U, S, Vh), as torch.linalg.svd(a, full_matrices=False) returns them, and ``info``
    (:class:`SvdInfo`)."""

    def __new__(cls, U: Optional[Array], S: Array, Vh: Optional[Array], info: Optional[SvdInfo] = None
                ) -> "SvdResult":
        # info=None only while pickle rebuilds the tuple; it restores info right after.
        result = super().__new__(cls, U, S, Vh)
        result.info = info
        return result


def _require_svd_options(tol, max_sweeps, dtype: str) -> float:
    """The library's tol (0: its default) for a's dtype, after checking both options."""
    if not isinstance(max_sweeps, (int, np.integer)) or isinstance(max_sweeps, bool) or not 1 <= max_sweeps <= _INT_MAX:
        raise argument_error("svd", "max_sweeps", f"is {max_sweeps!r}; it must be an int of at least 1")
    if tol is None:
        return 0.0
    unit_roundoff = float(np.finfo(dtype).eps) / 2
    if not isinstance(tol, (int, float, np.floating, np.integer)) or isinstance(tol, bool) \
            or not np.isfinite(tol) or tol < unit_roundoff:
        raise argument_error("svd", "tol", f"is {tol!r}; it must be None (the default: sqrt(max(m, n)) u "
                             f"with vectors, max(m, n) u without) or a number of at least {dtype}'s "
                             f"unit roundoff u, {unit_roundoff:.3g}")
    return float(tol)


def svd(a: Array, compute_uv: bool = True, tol: Optional[float] = None, max_sweeps: int = _DEFAULT_MAX_SWEEPS, *,
        check_errors: bool = True, stream: Stream = None) -> SvdResult:
    """Singular value decomposition by one-sided Jacobi: a = U @ diag(S) @ Vh.

    Shapes and conventions of torch.linalg.svd(a, full_matrices=False): for a of shape
    (..., m, n) and k = min(m, n), U is (..., m, k), S (..., k) in descending order, Vh (..., k, n).
    A matrix goes to the library's svd, a stack to its svd_batched, each matrix in one batch.

    Args:
        a: a CUDA array of float32 or float64, a matrix (m, n) or a stack (..., m, n); C-contiguous,
            or column-major matrices packed one after another (a.mT of a C-contiguous stack): both
            are read in place.
        compute_uv: False for S alone (U and Vh are then None).
        tol: the convergence threshold on the scaled off-diagonal; None for the library's default,
            LAPACK dgesvj's: sqrt(max(m, n)) u with vectors and max(m, n) u without, u the dtype's
            unit roundoff (half its machine epsilon). A given tol must be at least u.
        max_sweeps: at most this many sweeps per matrix and try: from 30 (the default) a matrix
            left unconverged, or whose sweeps stall (the library's hand-over), is solved again from
            A on the transposed triangle (the library's second try), and ``info.sweeps`` counts
            both tries.
        check_errors: True raises rooflab.Error when a matrix did not converge within max_sweeps;
            False returns the factors regardless, and ``info.converged`` says which did.
        stream: the stream to work on; None for the caller's current stream.

    Returns an :class:`SvdResult`: unpacks as (U, S, Vh), with ``info`` (sweeps, converged, off per
    matrix). Vh is C-contiguous; U is the transposed view of a C-contiguous (..., k, m) array, as
    torch.linalg.svd's U is column-major. Waits for the stream, as the library does, to read how
    the sweeps went. NaN or Inf in a matrix raises rooflab.Error naming it.
    """
    call = Call("svd", stream)
    source = call.read(a, "a", _SVD_DTYPES)
    tol = _require_svd_options(tol, max_sweeps, source.dtype)
    if len(source.shape) < 2:
        raise argument_error("svd", "a", f"has shape {source.shape}; svd takes a matrix (m, n) or a stack "
                             "(..., m, n)")
    *batch_shape, m, n = source.shape
    batch = math.prod(batch_shape)
    row_major = source.is_c_contiguous()
    if not row_major and not source.has_column_major_matrices():
        raise argument_error("svd", "a", f"is neither C-contiguous nor a stack of packed column-major matrices "
                             f"(shape {source.shape}, strides {source.strides} in elements); rooflab never copies "
                             "it: pass a.contiguous() (PyTorch) or cupy.ascontiguousarray(a)")
    if max(m, n, batch) > _INT_MAX:
        raise argument_error("svd", "a", f"has shape {source.shape}; m, n and the number of matrices must each "
                             "be below 2**31")
    k = min(m, n)
    call.start()
    S, s_address = call.empty((*batch_shape, k), source.dtype, source.itemsize)
    U_rows = Vh = None
    u_address = vh_address = 0
    if compute_uv:
        U_rows, u_address = call.empty((*batch_shape, k, m), source.dtype, source.itemsize)
        Vh, vh_address = call.empty((*batch_shape, k, n), source.dtype, source.itemsize)

    unconverged, first_unconverged = 0, -1
    if batch == 0 or k == 0:
        info = SvdInfo(np.zeros(batch_shape, np.int32), np.ones(batch_shape, bool), np.zeros(batch_shape))
    else:
        # The library is column-major. A row-major m x n matrix is the column-major n x m matrix
        # a^T = Vh^T diag(S) U^T: its left factor (n x k, column-major) is Vh row-major and its right
        # factor (m x k) is U^T row-major. A column-major a is itself, with U in the left slot.
        if row_major:
            rows, cols, left, right = n, m, vh_address, u_address
        else:
            rows, cols, left, right = m, n, u_address, vh_address
        options = (bool(compute_uv), tol, int(max_sweeps), call.device, call.stream)
        if not batch_shape:
            sweeps, converged, off = _rooflab.svd(source.dtype, source.address, rows, cols, rows, s_address, left,
                                                  rows, right, cols, *options)
            info = SvdInfo(np.array(sweeps, np.int32), np.array(converged), np.array(off))
            unconverged = int(not converged)
        else:
            records, info_address = call.empty((batch * _rooflab.svd_info_bytes,), "uint8", 1)
            unconverged, first_unconverged = _rooflab.svd_batched(
                source.dtype, source.address, rows, cols, batch, s_address, left, right, info_address, *options)
            info = SvdInfo._on_device(records, info_address, call.device, batch_shape)
    if check_errors and unconverged:
        where = (f"matrix {tuple(int(i) for i in np.unravel_index(first_unconverged, batch_shape))} "
                 f"({unconverged} of {batch})" if batch_shape else "the matrix")
        again = ", nor in as many more on the transposed triangle" if max_sweeps >= _DEFAULT_MAX_SWEEPS else ""
        raise argument_error("svd", "max_sweeps", f"{where} did not converge in {max_sweeps} sweeps{again}; "
                             "raise max_sweeps, or pass check_errors=False for the factors and info.converged")
    U = None if U_rows is None else swap_last_axes(U_rows)
    U, S, Vh = call.finish(U, S, Vh)
    return SvdResult(U, S, Vh, info)


