"""rooflab.svd on every framework: torch.linalg.svd's shapes and conventions, checked by what
holds whatever the signs (reconstruction, orthogonality, singular values against LAPACK's in
float64), never by comparing vectors."""

import pickle

import numpy as np
import pytest

import rooflab
from rooflab import _arrays

# The library promises 35 on its own norms (include/rooflab/svd.hpp); Frobenius norms here can
# read a little higher. A wrong factor or layout reads about 1 / eps, far above.
LIMIT = 64


def check_factors(a, U, S, Vh):
    """a (..., m, n) = U diag(S) Vh, with U and Vh orthonormal and S LAPACK's, in float64."""
    eps = np.finfo(a.dtype).eps
    m, n = a.shape[-2:]
    k = min(m, n)
    wide = a.astype(np.float64)
    U, S, Vh = (factor.astype(np.float64) for factor in (U, S, Vh))
    assert U.shape == (*a.shape[:-2], m, k) and S.shape == (*a.shape[:-2], k) and Vh.shape == (*a.shape[:-2], k, n)
    assert np.all(S >= 0) and np.all(np.diff(S, axis=-1) <= 0), "S must be non-negative and descending"
    norm_a = np.linalg.norm(wide, axis=(-2, -1))
    residual = np.linalg.norm(wide - (U * S[..., None, :]) @ Vh, axis=(-2, -1))
    assert np.all(residual <= LIMIT * max(m, n) * eps * norm_a), np.max(residual / (max(m, n) * eps * norm_a))
    for factor, length in ((U, m), (np.swapaxes(Vh, -1, -2), n)):
        gram = np.swapaxes(factor, -1, -2) @ factor - np.eye(k)
        assert np.all(np.linalg.norm(gram, axis=(-2, -1)) <= LIMIT * length * eps)
    reference = np.linalg.svd(wide, compute_uv=False)
    assert np.all(np.abs(S - reference) <= LIMIT * max(m, n) * eps * reference[..., :1])


SHAPES = [(8, 5), (5, 8), (1, 1), (64, 64), (200, 100), (100, 200),
          (100, 3, 3), (4, 60, 3), (7, 10, 10), (3, 33, 17), (2, 3, 5, 4), (1, 16, 16), (300, 2, 3)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: "x".join(map(str, shape)))
def test_svd_factors_a_in_torch_conventions(xp, rng, dtype, shape):
    a = rng.standard_normal(shape).astype(dtype)
    U, S, Vh = result = rooflab.svd(xp.device_array(a))
    for factor in (U, S, Vh):
        assert xp.is_native(factor)
    check_factors(a, xp.host(U), xp.host(S), xp.host(Vh))
    batch_shape = shape[:-2]
    assert result.info.sweeps.shape == batch_shape and result.info.sweeps.dtype == np.int32
    assert result.info.converged.shape == batch_shape and result.info.converged.all()
    assert np.all(result.info.sweeps >= 1) and result.info.off.shape == batch_shape


def test_svd_matches_torch_shapes_and_layout(torch_gpu, rng):
    torch = torch_gpu.torch
    a = torch.as_tensor(rng.standard_normal((6, 40, 9)), device="cuda")
    U, S, Vh = rooflab.svd(a)
    expected = torch.linalg.svd(a.cpu(), full_matrices=False)
    assert (U.shape, S.shape, Vh.shape) == (expected.U.shape, expected.S.shape, expected.Vh.shape)
    assert (U.dtype, S.dtype, Vh.dtype) == (torch.float64,) * 3 and U.device == a.device
    # Vh is written row-major and U column-major, as torch.linalg.svd gives U.
    assert Vh.is_contiguous() and U.mT.is_contiguous() and S.is_contiguous()


@pytest.mark.parametrize("shape", [(30, 7), (7, 30), (5, 12, 4)])
def test_svd_reads_column_major_stacks_in_place(strided_xp, rng, shape):
    a = rng.standard_normal(shape)
    column_major = strided_xp.device_array(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
    view = strided_xp.swap_last_axes(column_major)
    assert _arrays.read(view, "svd", "a").address == strided_xp.address(column_major)
    U, S, Vh = rooflab.svd(view)
    check_factors(a, strided_xp.host(U), strided_xp.host(S), strided_xp.host(Vh))


def test_svd_of_rank_deficient_matrix_still_gives_orthonormal_factors(xp, rng):
    a = np.outer(rng.standard_normal(30), rng.standard_normal(20))
    U, S, Vh = rooflab.svd(xp.device_array(a))
    check_factors(a, xp.host(U), xp.host(S), xp.host(Vh))
    assert xp.host(S)[1] <= 1e-12 * xp.host(S)[0]


@pytest.mark.parametrize("shape", [(40, 30), (9, 6, 5)])
def test_svd_without_vectors_gives_the_same_values(xp, rng, shape):
    x = xp.device_array(rng.standard_normal(shape))
    U, S, Vh = rooflab.svd(x, compute_uv=False)
    assert U is None and Vh is None
    np.testing.assert_allclose(xp.host(S), xp.host(rooflab.svd(x).S), rtol=0, atol=1e-12 * xp.host(S).max())


@pytest.mark.parametrize("shape", [(0, 3, 3), (4, 0), (2, 0, 5)])
def test_svd_of_nothing_has_torch_shapes(xp, shape):
    U, S, Vh = result = rooflab.svd(xp.device_array(np.zeros(shape, np.float32)))
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(U.shape) == (*shape[:-2], m, k) and tuple(S.shape) == (*shape[:-2], k)
    assert tuple(Vh.shape) == (*shape[:-2], k, n) and result.info.converged.all()


@pytest.mark.parametrize("shape, where", [((64, 64), "the matrix"), ((3, 64, 64), r"matrix \(0,\)")])
def test_svd_out_of_sweeps_raises_or_reports(xp, rng, shape, where):
    x = xp.device_array(rng.standard_normal(shape))
    with pytest.raises(rooflab.Error, match=f"{where}.* did not converge in 1 sweeps") as failure:
        rooflab.svd(x, max_sweeps=1)
    assert failure.value.argument == "max_sweeps"
    result = rooflab.svd(x, max_sweeps=1, check_errors=False)
    assert not result.info.converged.any() and np.all(result.info.sweeps <= 1)


def test_svd_names_the_first_unconverged_matrix_of_a_stack_and_its_info_reads_back(xp, rng):
    a = np.zeros((2, 3, 24, 24))
    a[1, 1:] = rng.standard_normal((2, 24, 24))  # zero matrices converge in one sweep, these do not
    x = xp.device_array(a)
    with pytest.raises(rooflab.Error, match=r"matrix \(1, 1\) \(2 of 6\) did not converge in 1 sweeps"):
        rooflab.svd(x, max_sweeps=1)
    info = rooflab.svd(x, max_sweeps=1, check_errors=False).info
    expected = np.ones((2, 3), bool)
    expected[1, 1:] = False
    np.testing.assert_array_equal(info.converged, expected)
    assert info.sweeps.dtype == np.int32 and np.all(info.sweeps == 1) and info.off.dtype == np.float64
    assert np.all(info.off[~expected] > 0)
    sweeps, converged, off = pickle.loads(pickle.dumps(info))
    for copy, field in ((sweeps, info.sweeps), (converged, info.converged), (off, info.off)):
        np.testing.assert_array_equal(copy, field)


@pytest.mark.parametrize("shape", [(5, 5), (4, 5, 5)])
def test_svd_of_nan_names_the_input(xp, rng, shape):
    a = rng.standard_normal(shape)
    a.reshape(-1, 5, 5)[-1, 1, 1] = np.nan  # the last matrix only
    with pytest.raises(rooflab.Error, match="NaN or Inf") as failure:
        rooflab.svd(xp.device_array(a))
    assert failure.value.argument == "A"


def test_svd_tolerance_is_passed_to_the_library(xp, rng):
    x = xp.device_array(rng.standard_normal((6, 48, 48)))
    loose = rooflab.svd(x, tol=1e-3).info.sweeps
    tight = rooflab.svd(x).info.sweeps
    assert np.all(loose <= tight) and np.any(loose < tight)
