"""rooflab: fast GPU primitives on PyTorch, CuPy, JAX and Numba arrays, zero copy.

Reductions, prefix sums, histograms, transposes and Jacobi SVDs from the rooflab CUDA library,
on the caller's CUDA arrays in place and on the caller's current stream; results come back in the
caller's framework (torch in, torch out). Only :func:`svd` waits for the GPU, except with JAX
arrays and DLPack-only ones, whose streams rooflab cannot order against: there every call waits for
its stream. docs/python.md has the conventions and the measured speed.

Importing needs no GPU; a call without one raises :class:`Error`.
"""

from ._arrays import DeviceArray
from ._errors import Error
from ._functions import (
    Array,
    Stream,
    SvdInfo,
    SvdResult,
    exclusive_scan,
    histogram_even,
    inclusive_scan,
    reduce,
    reduce_rows,
    svd,
    transpose,
)
from ._rooflab import __version__

__all__ = [
    "Array",
    "DeviceArray",
    "Error",
    "Stream",
    "SvdInfo",
    "SvdResult",
    "__version__",
    "exclusive_scan",
    "histogram_even",
    "inclusive_scan",
    "reduce",
    "reduce_rows",
    "svd",
    "transpose",
]
