"""Elementwise kernels on 2-D row views: out[r0:r1] = f(inputs[r0:r1]).

Broadcasting is handled by the caller through strides: a bias [n] or a scalar is passed as a
read-only `np.broadcast_to` view of the output's 2-D shape (row stride 0), so one kernel serves
same-shape, bias and scalar operands. NumPy ufuncs with an `out=` row avoid temporaries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range


@njit(nogil=True, cache=True, inline="always")
def _check_rows2(x, out, row_start, row_stop):
    """The rows exist in both 2-D views and have the same width (see kernels.bounds)."""
    check_range(row_start, row_stop, min(x.shape[0], out.shape[0]))
    if x.shape[1] != out.shape[1]:
        raise IndexError("row kernel: operand widths differ")


@njit(nogil=True, cache=True, inline="always")
def _check_rows3(a, b, out, row_start, row_stop):
    _check_rows2(a, out, row_start, row_stop)
    _check_rows2(b, out, row_start, row_stop)


@njit(nogil=True, cache=True)
def add_rows(a, b, out, row_start, row_stop):
    _check_rows3(a, b, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        np.add(a[i], b[i], out[i])


@njit(nogil=True, cache=True)
def multiply_rows(a, b, out, row_start, row_stop):
    _check_rows3(a, b, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        np.multiply(a[i], b[i], out[i])


@njit(nogil=True, cache=True)
def accumulate_rows(out, x, row_start, row_stop):
    """out[r0:r1] += x[r0:r1] (add_n folds its inputs left to right with this)."""
    _check_rows2(x, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        np.add(out[i], x[i], out[i])


@njit(nogil=True, cache=True)
def relu_rows(x, out, row_start, row_stop):
    _check_rows2(x, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        src = x[i]
        dst = out[i]
        for j in range(src.shape[0]):
            value = src[j]
            # `not value <= 0` keeps NaN as NaN, like np.maximum(x, 0).
            dst[j] = value if not value <= 0 else 0


@njit(nogil=True, cache=True)
def tanh_rows(x, out, row_start, row_stop):
    _check_rows2(x, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        np.tanh(x[i], out[i])
