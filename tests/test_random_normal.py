"""The vectorized random-normal kernels (float32: `kernels.normal32`, float64:
`kernels.normal64`): the same numbers as the libm kernel (to float rounding), however the rows
are split, and normal numbers by the statistics of 10**7 of them."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from parallelgraph.kernels import normal64
from parallelgraph.kernels.normal32 import normal_rows32
from parallelgraph.kernels.normal64 import normal_rows64
from parallelgraph.kernels.random import normal_constants, normal_rows
from parallelgraph.ops.sources import philox_normal_reference

BIG_SEED = np.uint64(0xFEDC_BA98_7654_3210)  # both key words used, top bit set
DTYPES = [np.float32, np.float64]
KERNELS = {np.float32: normal_rows32, np.float64: normal_rows64}
# float64: the kernel's polynomial log/sin/cos are a few ulp from libm's (at most ~3e-15 here)
LIBM_TOLERANCE = {
    np.float32: {"rtol": 1e-6, "atol": 2e-6},
    np.float64: {"rtol": 1e-13, "atol": 1e-13},
}


def fast(shape, seed, mean=0.0, stddev=1.0, splits=None, dtype=np.float32) -> np.ndarray:
    out = np.full(shape, np.nan, dtype=dtype)
    bounds = splits or [0, shape[0]]
    for start, stop in itertools.pairwise(bounds):
        KERNELS[dtype](out, np.uint64(seed), mean, stddev, start, stop)
    return out


def libm(shape, seed, mean=0.0, stddev=1.0, dtype=np.float32) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
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


@pytest.mark.parametrize("seed", [0, 1, 12345, int(BIG_SEED)])
def test_float64_same_numbers_as_the_libm_kernel_and_the_reference(seed):
    out = fast((500, 1000), seed, dtype=np.float64)
    # the uniforms are exact in float64 (the same in all three): only log/sin/cos differ, by a
    # few ulp (the reference also rounds 2 pi u before its sin and cos)
    np.testing.assert_allclose(out, libm((500, 1000), seed, dtype=np.float64), rtol=0, atol=1e-14)
    reference = philox_normal_reference(out.size, seed, 32).reshape(out.shape)
    np.testing.assert_allclose(out, reference, rtol=0, atol=1e-14)


def test_float64_steps_at_the_extremes_of_the_uniforms():
    """Every step against NumPy on words that reach u's ends (2**-33 and 1 - 2**-33), where
    the radius is largest and smallest: the uniforms exact, the radius to a few ulp of its own
    size even as it goes to 0 (log by f = m - 1, exact), sin and cos to ~1e-16."""
    edges = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 3, 2**32 - 2, 2**32 - 1]
    inner = np.linspace(0, 2**32 - 1, 20_001).astype(np.uint64).tolist()
    words = np.array(edges + inner, dtype=np.uint32)
    count = words.size
    u = np.empty(count)
    normal64._uniforms(words, u, count)
    exact = (words.astype(np.float64) + 0.5) * 2.0**-32
    np.testing.assert_array_equal(u, exact)
    bits, mantissa, radius = u.copy().view(np.int64), np.empty(count, np.int64), np.empty(count)
    normal64._split(bits, mantissa, count)
    normal64._log_to_radius(mantissa.view(np.float64), bits, radius, count)
    # log1p(u - 1) for u near 1 (u - 1 is exact there): NumPy's accurate small logs
    want = np.sqrt(-2.0 * np.where(u > 0.5, np.log1p(u - 1.0), np.log(u)))
    np.testing.assert_allclose(radius, want, rtol=5e-16, atol=0)
    sines, cosines = np.empty(count), np.empty(count)
    normal64._sincos(u, sines, cosines, count)
    np.testing.assert_allclose(sines, np.sin(2 * np.pi * u), rtol=0, atol=2e-15)
    np.testing.assert_allclose(cosines, np.cos(2 * np.pi * u), rtol=0, atol=2e-15)
    np.testing.assert_allclose(sines**2 + cosines**2, 1.0, rtol=0, atol=4e-16)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mean_and_stddev_applied_like_the_libm_kernel(dtype):
    np.testing.assert_allclose(
        fast((50, 77), 3, 1.5, 0.25, dtype=dtype),
        libm((50, 77), 3, 1.5, 0.25, dtype=dtype),
        **LIBM_TOLERANCE[dtype],
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("columns", [1, 3, 4, 5, 131, 4099])
def test_bit_identical_however_the_rows_are_split(columns, dtype):
    rng = np.random.default_rng(columns)
    rows = 97
    whole = fast((rows, columns), BIG_SEED, dtype=dtype)
    for _ in range(5):
        cuts = sorted(set(rng.integers(0, rows + 1, size=6).tolist()) | {0, rows})
        np.testing.assert_array_equal(
            fast((rows, columns), BIG_SEED, splits=cuts, dtype=dtype), whole
        )
    # element j depends on (seed, j) only: a shorter array is a prefix of a longer one
    flat = fast((1, rows * columns), BIG_SEED, dtype=dtype).reshape(-1)
    np.testing.assert_array_equal(whole.reshape(-1), flat)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("length", [1, 2, 3, 5, 7, 13, 4 * normal64.BLOCK + 3])
def test_one_row_at_a_time_gives_the_same_bits(length, dtype):
    """Each row its own call (a partial block, the loops' scalar tails) against one call over
    all rows (whole blocks, the vector bodies), odd lengths and ones shorter than a block."""
    whole = fast((length, 1), BIG_SEED, dtype=dtype)
    singles = fast((length, 1), BIG_SEED, splits=list(range(length + 1)), dtype=dtype)
    np.testing.assert_array_equal(singles, whole)
    assert not np.isnan(whole).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_ranges_and_out_of_range_rows(dtype):
    kernel = KERNELS[dtype]
    out = np.full((4, 8), 7.0, dtype=dtype)
    kernel(out, np.uint64(1), 0.0, 1.0, 2, 2)
    assert (out == 7.0).all()
    kernel(np.empty((0, 8), dtype), np.uint64(1), 0.0, 1.0, 0, 0)
    kernel(np.empty((3, 0), dtype), np.uint64(1), 0.0, 1.0, 0, 3)
    with pytest.raises(IndexError):
        kernel(out, np.uint64(1), 0.0, 1.0, 3, 5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ten_million_numbers_are_standard_normal(dtype):
    """Mean, variance, both tails and the shape (Kolmogorov-Smirnov); neighbours, including
    the rows on either side of a shard boundary, uncorrelated."""
    n_rows, n_cols = 2_500, 4_000
    x = fast((n_rows, n_cols), 2026, splits=[0, 1_250, n_rows], dtype=dtype).astype(np.float64)
    n = x.size
    bound = 5 / math.sqrt(n)  # five standard errors
    assert abs(x.mean()) < bound
    assert abs(x.var() - 1.0) < 5 * math.sqrt(2 / n)
    for k in (2.0, 3.0, 4.0):
        expected = 2 * stats.norm.sf(k)
        observed = np.mean(np.abs(x) > k)
        assert abs(observed - expected) < 5 * math.sqrt(expected * (1 - expected) / n), k
    assert abs(x.max()) < 7 and abs(x.min()) < 7  # 24-bit uniforms: |x| <= 5.9, 32-bit: 6.8
    assert stats.kstest(x.reshape(-1)[:1_000_000], "norm").pvalue > 1e-4
    flat = x.reshape(-1)
    for lag in (1, 2, 4, n_cols):  # within a group of four, the next group, the next row
        r = np.corrcoef(flat[:-lag], flat[lag:])[0, 1]
        assert abs(r) < bound * 1.01, lag
    across = np.corrcoef(x[1_249], x[1_250])[0, 1]  # the rows either side of the shard cut
    assert abs(across) < 5 / math.sqrt(n_cols)
