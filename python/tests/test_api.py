"""What needs no GPU: the import, the signatures, rooflab.Error, and every argument error the
package finds before it asks CUDA anything. CI runs these on machines without a GPU."""

import inspect
import pathlib
import pickle
import re

import numpy as np
import pytest

import rooflab
from rooflab import _arrays, _rooflab

# A made-up device address: the package checks shapes, dtypes and layouts before it asks CUDA
# where an array lives, so these errors come without a GPU; anything that reaches CUDA fails there.
FAKE_ADDRESS = 0x7F00_0000_0000


class FakeCudaArray:
    """An object that speaks __cuda_array_interface__ v3 about memory that is not there."""

    def __init__(self, shape, typestr="<f4", strides=None, read_only=False, mask=None):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (FAKE_ADDRESS, read_only),
            "strides": strides,
            "mask": mask,
            "version": 3,
        }


def raises_argument_error(argument, match):
    """pytest.raises for rooflab.Error naming `argument`, its message matching `match`."""

    class Check:
        def __enter__(self):
            self.context = pytest.raises(rooflab.Error, match=match)
            self.info = self.context.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self.context.__exit__(*exc)
            assert self.info.value.argument == argument, str(self.info.value)
            assert f"argument '{argument}'" in str(self.info.value)
            return suppressed

    return Check()


def test_import_gives_version_matching_the_cmake_project():
    assert re.fullmatch(r"\d+\.\d+\.\d+", rooflab.__version__)
    cmake = pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    assert f"project(rooflab VERSION {rooflab.__version__} " in cmake.read_text()


@pytest.mark.parametrize(
    "function, parameters",
    [
        (rooflab.reduce, ["x", "op", "stream"]),
        (rooflab.reduce_rows, ["x", "op", "stream"]),
        (rooflab.inclusive_scan, ["x", "out", "stream"]),
        (rooflab.exclusive_scan, ["x", "out", "stream"]),
        (rooflab.histogram_even, ["x", "bins", "lo", "hi", "stream"]),
        (rooflab.transpose, ["x", "stream"]),
        (rooflab.svd, ["a", "compute_uv", "tol", "max_sweeps", "check_errors", "stream"]),
    ],
)
def test_signature_and_docstring(function, parameters):
    signature = inspect.signature(function)
    assert list(signature.parameters) == parameters
    assert signature.parameters["stream"].kind is inspect.Parameter.KEYWORD_ONLY
    assert signature.parameters["stream"].default is None
    assert function.__doc__ and len(function.__doc__.splitlines()) > 3


def test_svd_defaults_are_torch_and_lapack_like():
    parameters = inspect.signature(rooflab.svd).parameters
    assert parameters["compute_uv"].default is True
    assert parameters["tol"].default is None
    assert parameters["max_sweeps"].default == 30
    assert parameters["check_errors"].default is True


def test_error_is_a_runtime_error_with_its_parts_and_survives_pickle():
    error = rooflab.Error("rooflab::svd: argument 'a': bad (cudaErrorX)", "svd", "a", "cudaErrorX")
    assert isinstance(error, RuntimeError)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.op, copy.argument, copy.cuda_error) == (str(error), "svd", "a", "cudaErrorX")


def test_svd_info_unpacks_and_survives_pickle():
    info = rooflab.SvdInfo(np.array([3, 7], np.int32), np.array([True, False]), np.array([1e-17, 0.25]))
    sweeps, converged, off = pickle.loads(pickle.dumps(info))
    np.testing.assert_array_equal(sweeps, [3, 7])
    np.testing.assert_array_equal(converged, [True, False])
    np.testing.assert_array_equal(off, [1e-17, 0.25])
    assert "converged=array([ True, False])" in repr(info)


def test_type_stub_of_the_native_module_is_installed():
    stub = pathlib.Path(_rooflab.__file__).with_name("_rooflab.pyi")
    assert "def svd_batched(" in stub.read_text()
    assert pathlib.Path(rooflab.__file__).with_name("py.typed").exists()


def test_host_numpy_array_is_refused_with_a_way_out():
    with raises_argument_error("x", "NumPy array, in host memory.*move it to the GPU"):
        rooflab.reduce(np.ones(4, np.float32))


def test_list_is_not_an_array():
    with raises_argument_error("x", "builtins.list, not an array"):
        rooflab.inclusive_scan([1.0, 2.0])


def test_unknown_reduction_is_named():
    with raises_argument_error("op", "'mean'; it must be 'sum', 'min' or 'max'"):
        rooflab.reduce(FakeCudaArray((4,)), op="mean")
    with raises_argument_error("op", "'prod'"):
        rooflab.reduce_rows(FakeCudaArray((4, 4)), op="prod")


@pytest.mark.parametrize("stream", ["default", -1, 1.5, True])
def test_bad_stream_is_refused(stream):
    with raises_argument_error("stream", "stream|negative"):
        rooflab.reduce(FakeCudaArray((4,)), stream=stream)


def test_stream_handles_from_int_protocol_and_framework_objects():
    class CudaStreamProtocol:
        def __cuda_stream__(self):
            return (0, 1234)

    class TorchLike:
        cuda_stream = 5678

    class CupyLike:
        ptr = 91011

    assert _arrays.stream_handle(0, "op") == 0
    assert _arrays.stream_handle(2, "op") == 2
    assert _arrays.stream_handle(CudaStreamProtocol(), "op") == 1234
    assert _arrays.stream_handle(TorchLike(), "op") == 5678
    assert _arrays.stream_handle(CupyLike(), "op") == 91011
    assert _arrays.stream_handle(None, "op") is None


def test_unsupported_dtype_lists_the_supported_ones():
    with raises_argument_error("x", "float16; reduce takes float32, float64, int32, int64, uint32"):
        rooflab.reduce(FakeCudaArray((4,), "<f2"))
    with raises_argument_error("x", "int16; histogram_even takes uint8, int32, float32, float64"):
        rooflab.histogram_even(FakeCudaArray((4,), "<i2"), 4, 0.0, 1.0)
    with raises_argument_error("a", "int32; svd takes float32, float64"):
        rooflab.svd(FakeCudaArray((4, 4), "<i4"))


def test_strided_view_is_refused_not_copied():
    with raises_argument_error("x", "not contiguous.*never copies"):
        rooflab.reduce(FakeCudaArray((4,), strides=(8,)))
    with raises_argument_error("x", "not contiguous"):
        rooflab.transpose(FakeCudaArray((4, 3), strides=(4, 16)))


def test_empty_reduction_is_an_error():
    with raises_argument_error("x", "empty"):
        rooflab.reduce(FakeCudaArray((0,)))
    with raises_argument_error("x", "rows without columns"):
        rooflab.reduce_rows(FakeCudaArray((3, 0)))


def test_shapes_each_function_refuses():
    with raises_argument_error("x", r"shape \(5,\); reduce_rows takes a matrix"):
        rooflab.reduce_rows(FakeCudaArray((5,)))
    with raises_argument_error("x", r"shape \(2, 3\); the scans take a vector"):
        rooflab.inclusive_scan(FakeCudaArray((2, 3)))
    with raises_argument_error("x", r"shape \(2, 3, 4\); transpose takes a matrix"):
        rooflab.transpose(FakeCudaArray((2, 3, 4)))
    with raises_argument_error("a", r"shape \(5,\); svd takes a matrix"):
        rooflab.svd(FakeCudaArray((5,)))


def test_transpose_refuses_element_sizes_the_library_cannot_move():
    with raises_argument_error("x", "3 bytes"):
        rooflab.transpose(FakeCudaArray((2, 2), "|V3"))


def test_scan_out_must_match_and_be_writable():
    with raises_argument_error("out", r"shape \(5,\) and dtype float32; it must match x: shape \(4,\)"):
        rooflab.inclusive_scan(FakeCudaArray((4,)), out=FakeCudaArray((5,)))
    with raises_argument_error("out", "dtype float64"):
        rooflab.exclusive_scan(FakeCudaArray((4,)), out=FakeCudaArray((4,), "<f8"))
    with raises_argument_error("out", "read-only"):
        rooflab.inclusive_scan(FakeCudaArray((4,)), out=FakeCudaArray((4,), read_only=True))


def test_masked_array_is_refused():
    with raises_argument_error("x", "mask"):
        rooflab.reduce(FakeCudaArray((4,), mask=FakeCudaArray((4,), "|b1")))


def test_histogram_range_must_be_numbers():
    with raises_argument_error("lo", "'zero', not a number"):
        rooflab.histogram_even(FakeCudaArray((4,)), 4, "zero", 1.0)


@pytest.mark.parametrize("bins", [0, -1, 2**24 + 1, 2.5, True])
def test_histogram_bins_out_of_range(bins):
    with raises_argument_error("bins", "int from 1 to 2\\*\\*24"):
        rooflab.histogram_even(FakeCudaArray((4,)), bins, 0.0, 1.0)


@pytest.mark.parametrize("options, argument", [
    ({"max_sweeps": 0}, "max_sweeps"),
    ({"max_sweeps": 2.0}, "max_sweeps"),
    ({"tol": 1e-9}, "tol"),  # below float32's unit roundoff
    ({"tol": float("nan")}, "tol"),
    ({"tol": -1.0}, "tol"),
])
def test_svd_options_out_of_range(options, argument):
    with raises_argument_error(argument, "must be"):
        rooflab.svd(FakeCudaArray((4, 4)), **options)


def test_svd_refuses_layouts_it_cannot_read_in_place():
    # Every other column of a 4 x 8 row-major matrix: neither row- nor column-major.
    with raises_argument_error("a", "neither C-contiguous nor a stack of packed column-major"):
        rooflab.svd(FakeCudaArray((4, 4), strides=(32, 8)))


def test_svd_accepts_column_major_matrices_as_they_lie():
    column_major = _arrays.read(FakeCudaArray((2, 5, 3), strides=(60, 4, 20)), "svd", "a")
    assert not column_major.is_c_contiguous()
    assert column_major.has_column_major_matrices()
    row_major = _arrays.read(FakeCudaArray((2, 5, 3)), "svd", "a")
    assert row_major.is_c_contiguous() and not row_major.has_column_major_matrices()


def test_call_that_reaches_cuda_fails_as_rooflab_error():
    # Without a GPU (or a driver), CUDA's own error; with one, the address is no device memory.
    with pytest.raises(rooflab.Error, match="argument 'x'") as failure:
        rooflab.reduce(FakeCudaArray((4,)))
    assert failure.value.op == "reduce"
    if failure.value.cuda_error:
        assert "failed" in str(failure.value)
    else:
        assert "not CUDA device memory" in str(failure.value)


def test_device_array_speaks_cuda_array_interface_and_dlpack():
    # Stream 1 (the legacy default) for both sides: no ordering, so no CUDA call, is needed.
    array = rooflab.DeviceArray(object(), FAKE_ADDRESS, (2, 3), (3, 1), "float32", 4, 0, 1)
    interface = array.__cuda_array_interface__
    assert interface["shape"] == (2, 3) and interface["typestr"] == "<f4"
    assert interface["data"] == (FAKE_ADDRESS, False) and interface["strides"] == (12, 4)
    assert interface["stream"] == 1
    transposed = array.swap_last_axes()
    assert transposed.shape == (3, 2) and transposed.strides == (1, 3)
    assert array.__dlpack_device__() == (2, 0)
    address, shape, strides, dtype, device_type, device_id = _rooflab.describe_dlpack(
        _Consumer(transposed, stream=1), False)
    assert (address, shape, strides, dtype, device_type, device_id) == (FAKE_ADDRESS, [3, 2], [1, 3], (2, 32, 1), 2, 0)


class _Consumer:
    """Hands a producer's __dlpack__ a fixed stream, as a consumer framework would."""

    def __init__(self, producer, stream):
        self.producer, self.stream = producer, stream

    def __dlpack__(self, **kwargs):
        return self.producer.__dlpack__(stream=self.stream)

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()


def test_device_array_without_numpy_dtype_leaves_cuda_array_interface_to_dlpack():
    array = rooflab.DeviceArray(object(), FAKE_ADDRESS, (4,), (1,), "bfloat16", 2, 0, 1)
    assert not hasattr(array, "__cuda_array_interface__")
    *_, dtype, _, _ = _rooflab.describe_dlpack(_Consumer(array, stream=1), False)
    assert dtype == (4, 16, 1)
