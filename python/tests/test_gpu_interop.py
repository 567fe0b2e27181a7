"""How rooflab meets the frameworks: it queues on the caller's stream (behind the framework's own
kernels on a non-default stream, and before those that follow) or on the one given as stream=, in
each of its forms; it works on the arrays' device; and it refuses, saying why, what it cannot read
in place. The stream tests hold the stream busy first (a spinning kernel), so that work on any
other stream would read the input before the framework has written it, but for Numba's, which
relies on its asynchronous copy to the device on the stream."""

import concurrent.futures
import warnings

import numpy as np
import pytest

import rooflab
from rooflab import _rooflab

N = 1 << 22
BUSY_CYCLES = 200_000_000  # about 0.1 s on a 2 GHz GPU: far longer than launching what follows

SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {}
}
"""


def torch_busy_then_ones(torch, stream):
    """On `stream`: a long wait, then x = 1 everywhere (x is zero before)."""
    x = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(BUSY_CYCLES)
        x.fill_(1.0)
    return x


def test_torch_current_stream_orders_rooflab_between_torch_kernels(torch_gpu):
    torch = torch_gpu.torch
    side = torch.cuda.Stream()
    x = torch_busy_then_ones(torch, side)
    with torch.cuda.stream(side):
        # Each call must wait for fill_ on side.
        total = rooflab.reduce(x)
        prefix = rooflab.inclusive_scan(x)
        row_sums = rooflab.reduce_rows(x.view(1024, -1))
        counts = rooflab.histogram_even(x, 2, 0.0, 2.0)
        transposed = rooflab.transpose(x.view(1024, -1))
        doubled = total * 2  # torch, after rooflab on side
        last = prefix[-1:].clone()
        rows_right = (row_sums == N // 1024).all()
        ones = (transposed == 1).all()
    side.synchronize()
    assert doubled.item() == 2 * N and last.item() == N and rows_right.item() and ones.item()
    assert counts.tolist() == [0, N]


@pytest.mark.parametrize("form", ["int", "torch.cuda.Stream", "__cuda_stream__"])
def test_torch_stream_argument_in_each_form(torch_gpu, form):
    torch = torch_gpu.torch
    side = torch.cuda.Stream()
    x = torch_busy_then_ones(torch, side)

    class CudaStreamProtocol:
        def __cuda_stream__(self):
            return (0, side.cuda_stream)

    stream = {"int": side.cuda_stream, "torch.cuda.Stream": side, "__cuda_stream__": CudaStreamProtocol()}[form]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecated PyTorch call on the way
        counts = rooflab.histogram_even(x, 2, 0.0, 2.0, stream=stream)  # the current stream is the default one
    side.synchronize()
    assert counts.tolist() == [0, N]


def test_torch_result_memory_is_kept_for_the_given_stream(torch_gpu):
    # The result is allocated on torch's current stream and written on another: torch must not hand
    # its memory out again before that stream is done (record_stream).
    torch = torch_gpu.torch
    side = torch.cuda.Stream()
    x = torch_busy_then_ones(torch, side)
    result = rooflab.inclusive_scan(x, stream=side)
    address = result.data_ptr()
    del result
    reused = torch.empty(N, device="cuda")
    assert reused.data_ptr() != address
    side.synchronize()


def cupy_spin(cupy):
    return cupy.RawKernel(SPIN_SOURCE, "spin")


def test_plain_tensors_take_one_native_call_and_get_the_general_paths_results(torch_gpu, rng):
    # Without stream=, each function first offers plain tensors to the native module's
    # torch_<function>; with the current stream given, it takes the general path. Same bits, in
    # fresh tensors alike.
    torch = torch_gpu.torch
    matrix = torch.as_tensor(rng.standard_normal((37, 53)), dtype=torch.float32, device="cuda")
    vector = matrix[5].clone()
    out = torch.empty_like(vector)
    calls = {
        "reduce": (lambda **s: rooflab.reduce(matrix, "max", **s), lambda: _rooflab.torch_reduce(matrix, "max")),
        "reduce_rows": (lambda **s: rooflab.reduce_rows(matrix, **s),
                        lambda: _rooflab.torch_reduce_rows(matrix, "sum")),
        "inclusive_scan": (lambda **s: rooflab.inclusive_scan(vector, **s),
                           lambda: _rooflab.torch_inclusive_scan(vector, None)),
        "exclusive_scan into out": (lambda **s: rooflab.exclusive_scan(vector, out=out, **s).clone(),
                                    lambda: _rooflab.torch_exclusive_scan(vector, out)),
        "histogram_even": (lambda **s: rooflab.histogram_even(matrix, 7, -1.5, 2.0, **s),
                           lambda: _rooflab.torch_histogram_even(matrix, 7, -1.5, 2.0)),
        "transpose": (lambda **s: rooflab.transpose(matrix, **s), lambda: _rooflab.torch_transpose(matrix)),
    }
    for name, (package, native) in calls.items():
        one_call = native()
        assert isinstance(one_call, torch.Tensor), name
        plain, general = package(), package(stream=torch.cuda.current_stream())
        for result in (one_call, plain):
            assert (result.shape, result.dtype, result.device) == (general.shape, general.dtype, general.device), name
            assert torch.equal(result, general), name
        if name != "exclusive_scan into out":
            assert plain.data_ptr() not in (matrix.data_ptr(), vector.data_ptr(), general.data_ptr()), name
    assert _rooflab.torch_inclusive_scan(vector, vector) is vector  # in place


def test_the_one_call_path_leaves_to_the_general_path_what_it_must_judge(torch_gpu):
    torch = torch_gpu.torch
    x = torch.ones(64, device="cuda")
    matrix = torch.ones(8, 8, device="cuda")
    complex_matrix = torch.ones(4, 4, dtype=torch.complex64, device="cuda")
    parameter = torch.nn.Parameter(x.clone())
    declined = {
        "a CPU tensor": _rooflab.torch_reduce(torch.ones(4), "sum"),
        "a NumPy array": _rooflab.torch_reduce(np.ones(4, np.float32), "sum"),
        "a subclass of torch.Tensor": _rooflab.torch_reduce(parameter, "sum"),
        "a non-contiguous view": _rooflab.torch_reduce(x[::2], "sum"),
        "a lazily negated view": _rooflab.torch_reduce(complex_matrix.conj().imag, "sum"),
        "a lazily conjugated view": _rooflab.torch_transpose(complex_matrix.conj()),
        "an empty tensor to reduce": _rooflab.torch_reduce(x[:0], "sum"),
        "a dtype reduce does not take": _rooflab.torch_reduce(x.half(), "sum"),
        "a vector for reduce_rows": _rooflab.torch_reduce_rows(x, "sum"),
        "rows without columns": _rooflab.torch_reduce_rows(matrix[:, :0], "sum"),
        "a matrix to scan": _rooflab.torch_inclusive_scan(matrix, None),
        "an out of another dtype": _rooflab.torch_inclusive_scan(x, x.double()),
        "an out of another length": _rooflab.torch_exclusive_scan(x, x[:32]),
        "a dtype histogram_even does not take": _rooflab.torch_histogram_even(x.long(), 4, 0.0, 1.0),
        "bins as a bool": _rooflab.torch_histogram_even(x, True, 0.0, 1.0),
        "bins as a NumPy integer": _rooflab.torch_histogram_even(x, np.int64(4), 0.0, 1.0),
        "no bins": _rooflab.torch_histogram_even(x, 0, 0.0, 1.0),
        "more bins than 2**24": _rooflab.torch_histogram_even(x, 2**24 + 1, 0.0, 1.0),
        "bins beyond 64 bits": _rooflab.torch_histogram_even(x, 2**70, 0.0, 1.0),
        "a bound that is not a number": _rooflab.torch_histogram_even(x, 4, "0", 1.0),
        "a bound beyond a double": _rooflab.torch_histogram_even(x, 4, 0.0, 10**400),
        "a stack to transpose": _rooflab.torch_transpose(matrix.view(2, 4, 8)),
    }
    assert [what for what, result in declined.items() if result is not None] == []
    # The general path takes a subclass, and says why it refuses the others (the tests above).
    assert rooflab.reduce(parameter).item() == 64
    assert rooflab.histogram_even(x, np.int64(4), 0.0, 1.0).tolist() == [0, 0, 0, 0]
    with pytest.raises(rooflab.Error, match="argument 'bins'"):
        rooflab.histogram_even(x, 2**70, 0.0, 1.0)
    # int bounds and a float subclass, taken in the one call as the general path takes them
    assert torch.equal(_rooflab.torch_histogram_even(x, 2, 0, np.float64(2)),
                       rooflab.histogram_even(x, 2, 0, np.float64(2), stream=torch.cuda.current_stream()))


def test_calls_from_many_threads_at_once(torch_gpu):
    # The native module lets go of the GIL while the library queues or waits, so the calls of
    # several Python threads run in the library at once, each thread on a stream of its own.
    torch = torch_gpu.torch

    def work(seed):
        rng = np.random.default_rng(seed)
        values = rng.integers(-1000, 1000, (64, 48)).astype(np.int32)
        matrix = rng.standard_normal((24, 16))
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x = torch.as_tensor(values, device="cuda")
            a = torch.as_tensor(matrix, device="cuda")
            rounds = [(rooflab.reduce(x), rooflab.reduce_rows(x), rooflab.inclusive_scan(x.view(-1)),
                       rooflab.histogram_even(x, 16, -1000, 1000), rooflab.transpose(x),
                       rooflab.svd(a, compute_uv=False).S) for _ in range(10)]
        stream.synchronize()
        expected_s = np.linalg.svd(matrix, compute_uv=False)
        for total, row_sums, prefix, counts, transposed, s in rounds:
            assert total.item() == values.sum()
            np.testing.assert_array_equal(row_sums.cpu().numpy(), values.sum(1))
            np.testing.assert_array_equal(prefix.cpu().numpy(), np.cumsum(values))
            np.testing.assert_array_equal(counts.cpu().numpy(), np.histogram(values, 16, (-1000, 1000))[0])
            np.testing.assert_array_equal(transposed.cpu().numpy(), values.T)
            np.testing.assert_allclose(s.cpu().numpy(), expected_s, rtol=1e-12)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))  # re-raises the first failure


def test_calls_captured_in_a_torch_cuda_graph_replay_on_new_inputs(torch_gpu, rng):
    # torch.cuda.graph captures in CUDA's global mode, which refuses any call that could wait.
    torch = torch_gpu.torch
    static = torch.zeros((50, 40), dtype=torch.int32, device="cuda")

    def every_function():
        return (rooflab.reduce(static), rooflab.reduce_rows(static, "max"), rooflab.inclusive_scan(static.view(-1)),
                rooflab.exclusive_scan(static.view(-1)), rooflab.histogram_even(static, 16, -1000, 1000),
                rooflab.transpose(static))

    side = torch.cuda.Stream()  # the warm-up on a side stream that torch.cuda.graph's docs ask for
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        every_function()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total, row_max, inclusive, exclusive, counts, transposed = every_function()
        # A stream= argument's check, on the capturing stream: CUDA refuses to say its device then.
        _rooflab.check_stream(0, torch.cuda.current_stream().cuda_stream, "reduce")
    for _ in range(2):
        values = rng.integers(-1000, 1000, (50, 40)).astype(np.int32)
        static.copy_(torch.as_tensor(values))
        graph.replay()
        torch.cuda.synchronize()
        flat = values.reshape(-1)
        assert total.item() == values.sum()
        np.testing.assert_array_equal(row_max.cpu().numpy(), values.max(1))
        np.testing.assert_array_equal(inclusive.cpu().numpy(), np.cumsum(flat))
        np.testing.assert_array_equal(exclusive.cpu().numpy(), np.cumsum(flat) - flat)
        np.testing.assert_array_equal(counts.cpu().numpy(), np.histogram(values, 16, (-1000, 1000))[0])
        np.testing.assert_array_equal(transposed.cpu().numpy(), values.T)


def test_cupy_current_stream_orders_rooflab_between_cupy_kernels(cupy_gpu):
    cupy = cupy_gpu.cupy
    x = cupy.zeros(N, dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        cupy_spin(cupy)((1,), (1,), (np.int64(BUSY_CYCLES),))
        x.fill(1.0)
        total = rooflab.reduce(x)
        doubled = total * 2
    side.synchronize()
    assert int(doubled.get()) == 2 * N


def test_cupy_stream_argument(cupy_gpu):
    cupy = cupy_gpu.cupy
    x = cupy.zeros(N, dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        cupy_spin(cupy)((1,), (1,), (np.int64(BUSY_CYCLES),))
        x.fill(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecated CuPy call on the way (ExternalStream in 14)
        total = rooflab.reduce(x, stream=side)  # a cupy Stream, outside its `with`
    side.synchronize()
    assert float(total.get()) == N


def test_numba_array_interface_stream_comes_first(numba_gpu):
    cuda = numba_gpu.cuda
    stream = cuda.stream()
    x = cuda.to_device(np.ones(N, np.float32), stream=stream)
    total = rooflab.reduce(x)  # on the stream x's __cuda_array_interface__ names
    stream.synchronize()
    assert numba_gpu.is_native(total) and float(total.copy_to_host()) == N


def test_cpu_tensor_is_refused(torch_gpu):
    with pytest.raises(rooflab.Error, match="PyTorch tensor on cpu.*move it to the GPU"):
        rooflab.reduce(torch_gpu.torch.ones(4))


def test_arrays_on_two_devices_are_refused(torch_gpu):
    torch = torch_gpu.torch
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.ones(8, device="cuda:0")
    with pytest.raises(rooflab.Error, match="argument 'out': is on device 1, x on device 0"):
        rooflab.inclusive_scan(x, out=torch.empty(8, device="cuda:1"))


@pytest.mark.parametrize("named_by", ["stream=", "__cuda_array_interface__"])
def test_stream_of_another_device_is_refused(torch_gpu, named_by):
    torch = torch_gpu.torch
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    with torch.cuda.device(1):
        other = torch.cuda.Stream()
    x = torch.ones(8, device="cuda:0")

    class Producer:  # an array that speaks only __cuda_array_interface__, naming device 1's stream
        __cuda_array_interface__ = dict(x.__cuda_array_interface__, stream=other.cuda_stream)

    with pytest.raises(rooflab.Error, match="argument 'stream': belongs to device 1, the arrays are on device 0"):
        if named_by == "stream=":
            rooflab.reduce(x, stream=other)
        else:
            rooflab.reduce(Producer())


def test_second_device_works_and_leaves_the_current_device(torch_gpu, rng):
    torch = torch_gpu.torch
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    values = rng.standard_normal(1000)
    total = rooflab.reduce(torch.as_tensor(values, device="cuda:1"))
    assert total.device.index == 1 and torch.cuda.current_device() == 0
    assert abs(total.item() - values.sum()) <= 1e-12 * np.abs(values).sum()
    # Every function, through the one-call path and the general path (stream= given), on device 1.
    integers = torch.as_tensor(rng.integers(-1000, 1000, (40, 25)), dtype=torch.int32, device="cuda:1")
    expected = integers.cpu().numpy()
    for given in ({}, {"stream": torch.cuda.current_stream(1)}):
        results = {
            "reduce_rows": (rooflab.reduce_rows(integers, **given), expected.sum(1)),
            "inclusive_scan": (rooflab.inclusive_scan(integers.view(-1), **given), np.cumsum(expected)),
            "histogram_even": (rooflab.histogram_even(integers, 8, -1000, 1000, **given),
                               np.histogram(expected, 8, (-1000, 1000))[0]),
            "transpose": (rooflab.transpose(integers, **given), expected.T),
        }
        for name, (result, reference) in results.items():
            assert result.device.index == 1 and torch.cuda.current_device() == 0, (name, given)
            np.testing.assert_array_equal(result.cpu().numpy(), reference, err_msg=f"{name} {given}")


def test_unsupported_dtype_on_gpu_is_refused_not_converted(torch_gpu):
    torch = torch_gpu.torch
    with pytest.raises(rooflab.Error, match="float16; reduce takes"):
        rooflab.reduce(torch.ones(4, device="cuda", dtype=torch.float16))


def test_lazily_conjugated_tensor_is_refused(torch_gpu):
    torch = torch_gpu.torch
    x = torch.ones(4, 4, dtype=torch.complex64, device="cuda")
    with pytest.raises(rooflab.Error, match="resolve_conj"):
        rooflab.transpose(x.conj())


def test_lazily_negated_real_view_is_refused(torch_gpu):
    # A real tensor can carry the negation bit: the imaginary part of a conjugated view.
    torch = torch_gpu.torch
    z = torch.ones(4, dtype=torch.complex64, device="cuda")
    negated = z.conj().imag
    assert negated.dtype == torch.float32 and negated.is_neg()
    with pytest.raises(rooflab.Error, match="resolve_neg"):
        rooflab.reduce(negated)


def test_sparse_tensor_is_refused_saying_its_layout(torch_gpu):
    torch = torch_gpu.torch
    x = torch.eye(4, device="cuda").to_sparse()
    assert _rooflab.torch_reduce(x, "sum") is None
    with pytest.raises(rooflab.Error, match="layout torch.sparse_coo; rooflab takes dense .* x.to_dense"):
        rooflab.reduce(x)


def test_non_contiguous_view_is_refused_not_copied(xp):
    if xp.name in ("jax", "numba"):
        pytest.skip(f"{xp.name} has no strided views to pass")
    x = xp.device_array(np.ones(100, np.float32))
    with pytest.raises(rooflab.Error, match="not contiguous"):
        rooflab.reduce(x[::2])


def test_jax_result_is_ready_and_jax_input_may_go(jax_gpu, rng):
    values = rng.standard_normal(N)
    total = rooflab.reduce(jax_gpu.device_array(values))  # the input is freed right away
    assert jax_gpu.is_native(total)
    assert abs(float(total) - values.sum()) <= 1e-12 * np.abs(values).sum()


def test_jax_out_is_refused(jax_gpu):
    x = jax_gpu.device_array(np.ones(8, np.float32))
    with pytest.raises(rooflab.Error, match="argument .out.: is a JAX array, and JAX arrays are immutable"):
        rooflab.inclusive_scan(x, out=x)
