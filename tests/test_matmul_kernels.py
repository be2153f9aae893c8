"""The two matmul row-block kernels: values, untouched rows, determinism, shard invariance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from parallelgraph.kernels.matmul import ROW_ALIGN, matmul_rows_blas, matmul_rows_numba

KERNELS = {"numba": matmul_rows_numba, "blas": matmul_rows_blas}
DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 2e-5, np.float64: 1e-12}
SENTINEL = -7.25  # exactly representable: rows outside the range must keep it

# (M, K, N): degenerate, remainders of the 6-row tile and of the 16/8-column panels, and K
# beyond one 256-deep block (plus its remainder).
SHAPES = [
    (1, 1, 1),
    (3, 5, 7),
    (7, 1, 9),
    (2, 3, 1),
    (6, 16, 16),
    (13, 17, 33),
    (31, 300, 45),
    (64, 513, 40),
]


def make(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    out = np.full((m, n), SENTINEL, dtype=dtype)
    return a, b, out


def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def assert_close(got, want, a, b, dtype):
    # Scale the tolerance by sum_k |a_ik b_kj|, the size of the terms that can cancel.
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= RTOL[dtype] * (scale + 1e-30)), float(np.max(err / (scale + 1e-30)))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_full_range_matches_reference(kernel, dtype, shape):
    m, k, n = shape
    a, b, out = make(m, k, n, dtype)
    KERNELS[kernel](a, b, out, 0, m)
    assert out.dtype == dtype
    assert_close(out, reference(a, b), a, b, dtype)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("rows", [(0, 1), (2, 9), (5, 6), (7, 31), (12, 24), (4, 4), (31, 31)])
def test_row_range_leaves_other_rows_untouched(kernel, dtype, rows):
    r0, r1 = rows
    a, b, out = make(31, 40, 23, dtype, seed=1)
    KERNELS[kernel](a, b, out, r0, r1)
    assert_close(out[r0:r1], reference(a, b)[r0:r1], a[r0:r1], b, dtype)
    assert np.all(out[:r0] == SENTINEL)
    assert np.all(out[r1:] == SENTINEL)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_zero_depth_writes_zeros(kernel, dtype):
    a = np.empty((5, 0), dtype=dtype)
    b = np.empty((0, 4), dtype=dtype)
    out = np.full((5, 4), SENTINEL, dtype=dtype)
    KERNELS[kernel](a, b, out, 1, 4)
    assert np.all(out[1:4] == 0)
    assert np.all(out[0] == SENTINEL) and np.all(out[4] == SENTINEL)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_deterministic(kernel, dtype):
    a, b, out1 = make(29, 300, 37, dtype, seed=2)
    out2 = np.full_like(out1, SENTINEL)
    KERNELS[kernel](a, b, out1, 3, 27)
    KERNELS[kernel](a, b, out2, 3, 27)
    assert out1.tobytes() == out2.tobytes()


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_two_shards_same_bits_in_either_order(kernel, dtype):
    m = 5 * ROW_ALIGN + 1
    a, b, forward = make(m, 270, 35, dtype, seed=3)
    backward = np.full_like(forward, SENTINEL)
    split = 2 * ROW_ALIGN
    KERNELS[kernel](a, b, forward, 0, split)
    KERNELS[kernel](a, b, forward, split, m)
    KERNELS[kernel](a, b, backward, split, m)
    KERNELS[kernel](a, b, backward, 0, split)
    assert forward.tobytes() == backward.tobytes()
    assert_close(forward, reference(a, b), a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_numba_bits_do_not_depend_on_the_partition(dtype):
    # Stronger than BLAS (whose edge kernels depend on how many rows it gets): any split, aligned
    # or not, gives the bits of the whole range.
    m = 40
    a, b, whole = make(m, 300, 50, dtype, seed=4)
    matmul_rows_numba(a, b, whole, 0, m)
    for cuts in ([ROW_ALIGN], [1, 2, 17], [7, 13, 31, 39]):
        parts = np.full_like(whole, SENTINEL)
        bounds = [0, *cuts, m]
        for r0, r1 in reversed(list(itertools.pairwise(bounds))):
            matmul_rows_numba(a, b, parts, r0, r1)
        assert parts.tobytes() == whole.tobytes(), cuts


def test_numba_accepts_views_of_inputs():
    # a and b may be non-contiguous views (they are read row by row); out must be C-contiguous.
    a, b, out = make(12, 20, 18, np.float32, seed=5)
    a_view = np.asfortranarray(a)
    b_view = np.repeat(b, 2, axis=1)[:, ::2]
    matmul_rows_numba(a_view, b_view, out, 0, 12)
    assert_close(out, reference(a, b), a, b, np.float32)


def test_numba_rejects_bad_arguments():
    a, b, out = make(4, 3, 5, np.float64)
    with pytest.raises(ValueError):
        matmul_rows_numba(a, b[:2], out, 0, 4)
    with pytest.raises(ValueError):
        matmul_rows_numba(a, b, out, 0, 5)
    with pytest.raises(ValueError):
        matmul_rows_numba(a, b, np.asfortranarray(out), 0, 4)


def test_row_align_is_a_positive_int():
    assert isinstance(ROW_ALIGN, int) and ROW_ALIGN >= 1
