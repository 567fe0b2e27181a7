"""Every function on every framework's GPU arrays against a NumPy reference in float64 (or exact,
for integers and bins), with results in the caller's framework and inputs read in place."""

import numpy as np
import pytest

import rooflab
from rooflab import _arrays

REDUCE_DTYPES = ["float32", "float64", "int32", "int64", "uint32"]
UNIT_ROUNDOFF = {"float32": 2.0**-24, "float64": 2.0**-53}


def random_values(rng, shape, dtype):
    """Fresh values, never zeros: floats in [-1, 1), integers large enough for sums to wrap."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def assert_sums_close(got, reference_sum, abs_sum, dtype, additions):
    """Floating-point sums within the library's bound: `additions` unit roundoffs times sum |x|
    (docs/reduce.md, docs/scan.md); integer sums exact, wrapped."""
    if np.dtype(dtype).kind == "f":
        bound = additions * UNIT_ROUNDOFF[dtype] * abs_sum
        assert np.all(np.abs(got.astype(np.float64) - reference_sum) <= bound), (got, reference_sum, bound)
    else:
        np.testing.assert_array_equal(got, reference_sum)


def assert_native(xp, result):
    assert xp.is_native(result), f"{type(result)} is not a {xp.name} GPU array"


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("n", [1, 31, 1_000_003])
def test_reduce_matches_numpy(xp, rng, dtype, op, n):
    values = random_values(rng, n, dtype)
    x = xp.device_array(values)
    result = rooflab.reduce(x, op)
    assert_native(xp, result)
    assert tuple(result.shape) == ()
    got = xp.host(result)
    assert got.dtype == np.dtype(dtype)
    if op == "min":
        assert got == values.min()
    elif op == "max":
        assert got == values.max()
    elif np.dtype(dtype).kind == "f":
        wide = values.astype(np.float64)
        assert_sums_close(got, wide.sum(), np.abs(wide).sum(), dtype, 300)
    else:
        assert got == values.sum(dtype=dtype)  # wraps modulo 2**bits, as rooflab's integer sums do


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint32"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (1000, 3), (3, 70_001), (2, 3, 33)])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_rows_matches_numpy(xp, rng, dtype, shape, op):
    values = random_values(rng, shape, dtype)
    result = rooflab.reduce_rows(xp.device_array(values), op=op)
    assert_native(xp, result)
    got = xp.host(result)
    assert got.shape == shape[:-1] and got.dtype == np.dtype(dtype)
    if op == "max":
        np.testing.assert_array_equal(got, values.max(axis=-1))
    elif np.dtype(dtype).kind == "f":
        wide = values.astype(np.float64)
        assert_sums_close(got, wide.sum(-1), np.abs(wide).sum(-1), dtype, 300)
    else:
        np.testing.assert_array_equal(got, values.sum(axis=-1, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("at", [0, 500_001, 1_000_002])
def test_a_nan_is_the_result_as_in_numpy(xp, rng, dtype, op, at):
    values = random_values(rng, 1_000_003, dtype)
    values[at] = np.nan
    assert np.isnan(xp.host(rooflab.reduce(xp.device_array(values), op)))
    rows = random_values(rng, (7, 70_001), dtype)
    rows[1::3, at % 70_001] = np.nan
    got = xp.host(rooflab.reduce_rows(xp.device_array(rows), op=op))
    want = getattr(np, op)(rows, axis=-1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if op != "sum":
        np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


def test_reduce_rows_of_no_rows_is_empty(xp):
    result = rooflab.reduce_rows(xp.device_array(np.ones((0, 4), np.float32)))
    assert tuple(result.shape) == (0,)


def scan_reference(values, inclusive):
    dtype = values.dtype
    if dtype.kind == "f":
        sums = np.cumsum(values.astype(np.float64))
        abs_sums = np.cumsum(np.abs(values.astype(np.float64)))
    else:
        sums = np.cumsum(values, dtype=dtype)  # wraps modulo 2**bits
        abs_sums = None
    if inclusive:
        return sums, abs_sums
    shift = lambda a: None if a is None else np.concatenate([np.zeros(1, a.dtype), a[:-1]])  # noqa: E731
    return shift(sums), shift(abs_sums)


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 4097, 1_000_003])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
def test_scan_matches_numpy(xp, rng, dtype, n, inclusive):
    values = random_values(rng, n, dtype)
    scan = rooflab.inclusive_scan if inclusive else rooflab.exclusive_scan
    result = scan(xp.device_array(values))
    assert_native(xp, result)
    got = xp.host(result)
    assert got.shape == (n,) and got.dtype == np.dtype(dtype)
    reference, abs_reference = scan_reference(values, inclusive)
    if n:
        # At most 64 roundings on each prefix (docs/scan.md's bound, gamma(64)).
        assert_sums_close(got, reference, abs_reference, dtype, 65)


@pytest.mark.parametrize("inclusive", [True, False], ids=["inclusive", "exclusive"])
def test_scan_in_place_writes_over_x_and_returns_it(xp, rng, inclusive):
    if xp.name == "jax":
        pytest.skip("JAX arrays are immutable: no in-place scan")
    values = random_values(rng, 100_003, "int64")
    x = xp.device_array(values)
    address = xp.address(x)
    scan = rooflab.inclusive_scan if inclusive else rooflab.exclusive_scan
    result = scan(x, out=x)
    assert result is x and xp.address(result) == address
    np.testing.assert_array_equal(xp.host(x), scan_reference(values, inclusive)[0])


def test_scan_into_given_out(xp, rng):
    if xp.name == "jax":
        pytest.skip("JAX arrays are immutable: no out=")
    values = random_values(rng, 5000, "float64")
    out = xp.device_array(np.zeros(5000))
    result = rooflab.inclusive_scan(xp.device_array(values), out=out)
    assert result is out
    np.testing.assert_allclose(xp.host(out), np.cumsum(values), rtol=0, atol=1e-12 * np.abs(values).sum())


def histogram_reference(values, bins, lo, hi):
    """The library's rule, in float64: bin min(bins - 1, floor((v - lo) * bins / (hi - lo)))
    for lo <= v < hi."""
    wide = values.astype(np.float64).ravel()
    inside = wide[(wide >= lo) & (wide < hi)]
    index = np.minimum(bins - 1, np.floor((inside - lo) * bins / (hi - lo))).astype(np.int64)
    return np.bincount(index, minlength=bins)


@pytest.mark.parametrize("dtype, bins, lo, hi", [
    ("uint8", 256, 0.0, 256.0),
    ("uint8", 7, 10.0, 200.0),
    ("int32", 37, 0.0, 1000.0),
    ("int32", 65536, -50_000.0, 50_000.0),
    ("float32", 256, 0.0, 1.0),
    ("float32", 1, -0.5, 0.5),
    ("float64", 1000, -2.0, 3.0),
])
def test_histogram_matches_the_rule(xp, rng, dtype, bins, lo, hi):
    shape = (1001, 999)  # any shape: every element counts
    if dtype == "uint8":
        values = rng.integers(0, 256, shape, dtype=np.uint8)
    elif dtype == "int32":
        values = rng.integers(int(lo) - 100, int(hi) + 100, shape, dtype=np.int32)
    else:
        values = rng.uniform(lo - 0.5, hi + 0.5, shape).astype(dtype)
        # The edges, NaN and infinities: lo counts, hi and beyond do not, NaN never.
        values.flat[:6] = [lo, hi, np.nextafter(np.array(hi, dtype), np.array(lo, dtype)), np.nan, np.inf, -np.inf]
    result = rooflab.histogram_even(xp.device_array(values), bins, lo, hi)
    assert_native(xp, result)
    got = xp.host(result)
    assert got.dtype == np.int64 and got.shape == (bins,)
    np.testing.assert_array_equal(got, histogram_reference(values, bins, lo, hi))


def test_histogram_bad_range_is_the_library_error(xp):
    with pytest.raises(rooflab.Error, match="argument 'hi'") as failure:
        rooflab.histogram_even(xp.device_array(np.ones(10, np.float32)), 4, 1.0, 1.0)
    assert failure.value.op == "histogram_even"


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float16", "float32", "int32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 1000), (1000, 1), (33, 65), (517, 1031)])
def test_transpose_is_exact(xp, rng, dtype, shape):
    values = rng.uniform(-100, 100, shape).astype(dtype)
    if dtype == "complex128":
        values = values + 1j * rng.uniform(-1, 1, shape)
    result = rooflab.transpose(xp.device_array(values))
    assert_native(xp, result)
    np.testing.assert_array_equal(xp.host(result), values.T)


def test_results_are_on_the_input_framework_and_input_is_read_in_place(xp, rng):
    values = random_values(rng, (64, 48), "float32")
    x = xp.device_array(values)
    assert _arrays.read(x, "test", "x").address == xp.address(x)
    vector = xp.device_array(values[0])
    for result in (rooflab.reduce(x), rooflab.reduce_rows(x), rooflab.transpose(x),
                   rooflab.histogram_even(x, 8, -1.0, 1.0), rooflab.inclusive_scan(vector)):
        assert_native(xp, result)
    np.testing.assert_array_equal(xp.host(x), values)  # the input is left as it was
