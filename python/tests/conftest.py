"""The frameworks the GPU tests run on, each behind one small adapter, and the skips when a
framework or a GPU is missing (each skip says which and why)."""

import collections
import os

import numpy as np
import pytest

# JAX takes 75% of GPU memory at its first use unless told otherwise; the other frameworks of the
# same test process need theirs.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


class Torch:
    name = "torch"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA GPU (torch.cuda.is_available() is False)")
        self.torch = torch

    def device_array(self, values: np.ndarray):
        try:
            return self.torch.as_tensor(values, device="cuda")
        except TypeError as error:  # a dtype this torch has no CUDA tensors of
            pytest.skip(f"torch {self.torch.__version__}: {error}")

    def host(self, array) -> np.ndarray:
        return array.cpu().numpy()

    def address(self, array) -> int:
        return array.data_ptr()

    def is_native(self, array) -> bool:
        return isinstance(array, self.torch.Tensor) and array.is_cuda

    def swap_last_axes(self, array):
        return array.mT


class Cupy:
    name = "cupy"

    def __init__(self):
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("CuPy sees no CUDA GPU")
        self.cupy = cupy

    def device_array(self, values: np.ndarray):
        return self.cupy.asarray(values)

    def host(self, array) -> np.ndarray:
        return self.cupy.asnumpy(array)

    def address(self, array) -> int:
        return array.data.ptr

    def is_native(self, array) -> bool:
        return isinstance(array, self.cupy.ndarray)

    def swap_last_axes(self, array):
        return array.swapaxes(-1, -2)


class Jax:
    name = "jax"

    def __init__(self):
        import jax

        jax.config.update("jax_enable_x64", True)  # float64, int64 and uint32 stay what they are
        self.gpu = jax.devices("gpu")[0]  # RuntimeError without a GPU backend
        self.jax = jax

    def device_array(self, values: np.ndarray):
        return self.jax.device_put(values, self.gpu)

    def host(self, array) -> np.ndarray:
        return np.asarray(array)

    def address(self, array) -> int:
        return array.unsafe_buffer_pointer()

    def is_native(self, array) -> bool:
        return isinstance(array, self.jax.Array) and array.devices() == {self.gpu}


class Numba:
    name = "numba"

    def __init__(self):
        from numba import cuda

        if not cuda.is_available():
            raise RuntimeError("Numba sees no CUDA GPU (numba.cuda.is_available() is False)")
        self.cuda = cuda

    def device_array(self, values: np.ndarray):
        return self.cuda.to_device(values)

    def host(self, array) -> np.ndarray:
        return array.copy_to_host()

    def address(self, array) -> int:
        return array.__cuda_array_interface__["data"][0]

    def is_native(self, array) -> bool:
        return self.cuda.is_cuda_array(array) and type(array).__module__.startswith("numba")


_ADAPTERS = {adapter.name: adapter for adapter in (Torch, Cupy, Jax, Numba)}
_loaded = {}


def framework(name: str):
    """The adapter of `name`, or a pytest skip saying why it cannot run here."""
    if name not in _loaded:
        try:
            _loaded[name] = _ADAPTERS[name]()
        except ImportError as error:
            _loaded[name] = f"{name} is not installed ({error})"
        except RuntimeError as error:
            _loaded[name] = f"{name}: {error}"
    adapter = _loaded[name]
    if isinstance(adapter, str):
        pytest.skip(adapter)
    return adapter


@pytest.fixture(params=list(_ADAPTERS))
def xp(request):
    """Each framework in turn: rooflab's functions must behave the same on all of them."""
    return framework(request.param)


@pytest.fixture(params=["torch", "cupy"])
def strided_xp(request):
    """The frameworks whose arrays can be strided views (a.mT): PyTorch and CuPy."""
    return framework(request.param)


@pytest.fixture
def torch_gpu():
    return framework("torch")


@pytest.fixture
def cupy_gpu():
    return framework("cupy")


@pytest.fixture
def jax_gpu():
    return framework("jax")


@pytest.fixture
def numba_gpu():
    return framework("numba")


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name, so that a failure reproduces; the seed is in the
    test's id."""
    seed = sum(map(ord, request.node.name)) % 2**32
    return np.random.default_rng(seed)


def pytest_terminal_summary(terminalreporter):
    """One line per reason tests skipped, with how many: a machine without a GPU or a framework
    says so once, not once a test."""
    reasons = collections.Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count} test{'' if count == 1 else 's'} skipped: {reason}")
