"""The vectorized erf and GELU (kernels.vecerf) against libm's, on a dense sweep of every
exponent and around each switch of region, with the special values.

float32 is computed in float64 and rounded once, so it must be within half an ulp (and a hair)
of the float64 function; float64 must be within one ulp of glibc's erf (itself under one ulp
of the exact value), which is also the op table's reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from parallelgraph.kernels import vecerf

MANTISSA = {np.float32: 23, np.float64: 52}
SMALLEST = {np.float32: -149, np.float64: -1074}
#: Where the algorithm switches regions (and where erf rounds to 1 in float64 and float32).
EDGES = [0.84375, 1.25, 1 / 0.35, 6.0, 28.0, 3.9, 0.25]


def ulp_error(value: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    _, exponent = np.frexp(exact)
    ulp = np.ldexp(np.ones_like(exact), np.maximum(exponent - 1 - MANTISSA[dtype], SMALLEST[dtype]))
    return np.abs(value.astype(np.float64) - exact) / ulp


def sweep(dtype) -> np.ndarray:
    """Finite inputs of every exponent, both signs, and a window of neighbours at each edge."""
    bits = np.int32 if dtype == np.float32 else np.int64
    infinity = np.array(np.inf, dtype).view(bits)
    strided = np.arange(0, infinity, infinity // 300_000, dtype=bits)
    window = np.arange(-2000, 2000, dtype=bits)
    near = [edge + window for edge in np.array(EDGES, dtype).view(bits)]
    x = np.concatenate([strided, *near]).view(dtype)
    return np.concatenate([x, -x])


def rows(kernel, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    kernel(x.reshape(1, -1), out.reshape(1, -1), 0, 1)
    return out


LIBM = {
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "gelu": np.vectorize(lambda v: 0.5 * v * math.erfc(v * -0.7071067811865476), otypes=[float]),
}
KERNELS = {"erf": vecerf.erf_rows, "gelu": vecerf.gelu_rows}


@pytest.mark.parametrize("name", ["erf", "gelu"])
def test_float32_is_the_float64_function_rounded_once(name):
    x = sweep(np.float32)
    with np.errstate(all="ignore"):
        expected = LIBM[name](x.astype(np.float64))
    finite = np.isfinite(expected) & (np.abs(expected) <= np.finfo(np.float32).max)
    error = ulp_error(rows(KERNELS[name], x)[finite], expected[finite], np.float32)
    assert error.max() <= 0.501, x[finite][np.argmax(error)]


#: gelu: erfc near 1.2 is (1 - erx) - P/Q, a cancellation that doubles the rational's
#: rounding (evaluated by Estrin here, Horner in glibc): within the op table's 4 ulp.
@pytest.mark.parametrize("name, bound", [("erf", 1.0), ("gelu", 4.0)])
def test_float64_within_an_ulp_of_libm(name, bound):
    x = sweep(np.float64)
    with np.errstate(all="ignore"):
        expected = LIBM[name](x)
    finite = np.isfinite(expected)
    error = ulp_error(rows(KERNELS[name], x)[finite], expected[finite], np.float64)
    assert error.max() <= bound, x[finite][np.argmax(error)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, 30.0, -30.0, np.nan], dtype)
    erf = rows(vecerf.erf_rows, x)
    assert erf[:6].tobytes() == np.array([0.0, -0.0, 1, -1, 1, -1], dtype).tobytes()
    assert np.isnan(erf[6])
    gelu = rows(vecerf.gelu_rows, x)
    assert gelu[[0, 2, 4]].tolist() == [0.0, np.inf, 30.0]
    assert gelu[1] == 0.0
    assert gelu[5] == LIBM["gelu"](np.array([-30.0]))[0].astype(dtype)  # -1.47e-196, or -0.0
    assert np.isnan(gelu[3]) == np.isnan(LIBM["gelu"](np.array([-np.inf])))[0]
    assert np.isnan(gelu[6])
    tiny = np.array([np.finfo(dtype).smallest_subnormal, np.finfo(dtype).smallest_normal], dtype)
    expected = LIBM["erf"](tiny.astype(np.float64)).astype(dtype)
    assert ulp_error(rows(vecerf.erf_rows, tiny), expected.astype(np.float64), dtype).max() <= 1


def test_the_gelu_tail_keeps_its_relative_precision():
    """gelu(x) for x from -5 to -37 (float64): x erfc(-x/sqrt 2) / 2 down to ~1e-300, as a
    ratio to libm's, never flushed to zero early."""
    x = -np.linspace(5, 37, 2001)
    got, expected = rows(vecerf.gelu_rows, x), LIBM["gelu"](x)
    assert np.all(got != 0) and np.all(expected != 0)
    np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_kernels_ask_llvm_for_the_widest_vectors():
    """`vector_width.prefer_wide_vectors` puts its attribute on the kernel's LLVM function
    (where llvmlite's way of writing attributes changed, this fails rather than go unseen),
    and the bits do not change with the width."""
    from numba import njit

    from parallelgraph.kernels.vector_width import ATTRIBUTE, prefer_wide_vectors

    @njit
    def wide(x, out):
        prefer_wide_vectors()
        for j in range(x.shape[0]):
            out[j] = x[j] * 3.0 + 1.0

    x, out = np.arange(100.0), np.empty(100)
    wide(x, out)
    assert ATTRIBUTE in "".join(wide.inspect_llvm().values())
    np.testing.assert_array_equal(out, x * 3.0 + 1.0)
