"""The vectorized float32 random-normal kernel: the same numbers as the libm kernel (to float32
rounding), however the rows are split, and normal numbers by the statistics of 10**7 of them."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from parallelgraph.kernels.normal32 import normal_rows32
from parallelgraph.kernels.random import normal_constants, normal_rows
from parallelgraph.ops.sources import philox_normal_reference

BIG_SEED = np.uint64(0xFEDC_BA98_7654_3210)  # both key words used, top bit set


def fast(shape, seed, mean=0.0, stddev=1.0, splits=None) -> np.ndarray:
    out = np.full(shape, np.nan, dtype=np.float32)
    bounds = splits or [0, shape[0]]
    for start, stop in itertools.pairwise(bounds):
        normal_rows32(out, np.uint64(seed), mean, stddev, start, stop)
    return out


def libm(shape, seed, mean=0.0, stddev=1.0) -> np.ndarray:
    out = np.empty(shape, dtype=np.float32)
    constants, shift = normal_constants(out.dtype, mean, stddev)
    normal_rows(out, np.uint64(seed), constants, shift, 0, shape[0])
    return out


@pytest.mark.parametrize("seed", [0, 1, 12345, int(BIG_SEED)])
def test_same_numbers_as_the_libm_kernel_and_the_float64_reference(seed):
    out = fast((1000, 1000), seed)
    np.testing.assert_allclose(out, libm((1000, 1000), seed), rtol=1e-6, atol=2e-6)
    # the uniforms round in float32 here (as in the libm kernel and on the GPU), not in the
    # float64 reference: for u1 a few ulp below 1 the radius differs by up to ~2e-5
    reference = philox_normal_reference(out.size, seed, 24).reshape(out.shape)
    np.testing.assert_allclose(out, reference, rtol=1e-5, atol=3e-5)


def test_mean_and_stddev_applied_like_the_libm_kernel():
    np.testing.assert_allclose(
        fast((50, 77), 3, 1.5, 0.25), libm((50, 77), 3, 1.5, 0.25), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("columns", [1, 3, 4, 5, 131, 4099])
def test_bit_identical_however_the_rows_are_split(columns):
    rng = np.random.default_rng(columns)
    rows = 97
    whole = fast((rows, columns), BIG_SEED)
    for _ in range(5):
        cuts = sorted(set(rng.integers(0, rows + 1, size=6).tolist()) | {0, rows})
        np.testing.assert_array_equal(fast((rows, columns), BIG_SEED, splits=cuts), whole)
    # element j depends on (seed, j) only: a shorter array is a prefix of a longer one
    flat = fast((1, rows * columns), BIG_SEED).reshape(-1)
    np.testing.assert_array_equal(whole.reshape(-1), flat)


def test_empty_ranges_and_out_of_range_rows():
    out = np.full((4, 8), 7.0, dtype=np.float32)
    normal_rows32(out, np.uint64(1), 0.0, 1.0, 2, 2)
    assert (out == 7.0).all()
    normal_rows32(np.empty((0, 8), np.float32), np.uint64(1), 0.0, 1.0, 0, 0)
    normal_rows32(np.empty((3, 0), np.float32), np.uint64(1), 0.0, 1.0, 0, 3)
    with pytest.raises(IndexError):
        normal_rows32(out, np.uint64(1), 0.0, 1.0, 3, 5)


def test_ten_million_numbers_are_standard_normal():
    """Mean, variance, both tails and the shape (Kolmogorov-Smirnov); neighbours, including
    the rows on either side of a shard boundary, uncorrelated."""
    n_rows, n_cols = 2_500, 4_000
    x = fast((n_rows, n_cols), 2026, splits=[0, 1_250, n_rows]).astype(np.float64)
    n = x.size
    bound = 5 / math.sqrt(n)  # five standard errors
    assert abs(x.mean()) < bound
    assert abs(x.var() - 1.0) < 5 * math.sqrt(2 / n)
    for k in (2.0, 3.0, 4.0):
        expected = 2 * stats.norm.sf(k)
        observed = np.mean(np.abs(x) > k)
        assert abs(observed - expected) < 5 * math.sqrt(expected * (1 - expected) / n), k
    assert abs(x.max()) < 7 and abs(x.min()) < 7  # 24-bit uniforms: |x| <= 5.9
    assert stats.kstest(x.reshape(-1)[:1_000_000], "norm").pvalue > 1e-4
    flat = x.reshape(-1)
    for lag in (1, 2, 4, n_cols):  # within a group of four, the next group, the next row
        r = np.corrcoef(flat[:-lag], flat[lag:])[0, 1]
        assert abs(r) < bound * 1.01, lag
    across = np.corrcoef(x[1_249], x[1_250])[0, 1]  # the rows either side of the shard cut
    assert abs(across) < 5 / math.sqrt(n_cols)
