"""Elementwise kernels on 2-D row views: out[r0:r1] = f(inputs[r0:r1]).

A binary operand is either 2-D of the output's shape or ONE row (1, columns) that every row
reads (`operand_row`): a bias [n] reshaped, a scalar filled out to a row (`ops.math._rows_of`).
Both are C-contiguous, so one compiled kernel serves same-shape, bias and scalar operands and
its inner loop is a SIMD loop for all three. (A bias used to come as a `np.broadcast_to` view
with row stride 0: an 'A'-layout array whose rows LLVM does not vectorize, 3x the same-shape
time at 64x256 and 1.3x at 512x1024: benchmarks/elementwise.py, "bias".)

Every loop here is a SIMD loop (AVX2: `ymm`; AVX-512 on Zen 4/5: `zmm`; see
benchmarks/elementwise.py): add, multiply and accumulate the operation and a NaN select
(`NAN_RULE`: which NaN comes out where IEEE 754 leaves it open), relu a compare and a blend.
tanh is `kernels.vecmath.tanh_rows` (a polynomial and rational kernel, re-exported here):
`np.tanh` inside `@njit` would be a scalar call to libm per element.
"""

from __future__ import annotations

from numba import njit

from .bounds import check_operand_rows, check_rows2
from .vecmath import exp_rows, sigmoid_rows, tanh_rows

__all__ = [
    "accumulate_rows",
    "add_rows",
    "exp_rows",
    "multiply_rows",
    "relu_rows",
    "sigmoid_rows",
    "tanh_rows",
]


@njit(nogil=True, cache=True, inline="always")
def _check_rows3(a, b, out, row_start, row_stop):
    check_operand_rows(a, out, row_start, row_stop)
    check_operand_rows(b, out, row_start, row_stop)


@njit(nogil=True, cache=True, inline="always")
def operand_row(x, i):
    """Row i of an operand: x[i], or x[0] when x is one row read by every row."""
    return x[i if x.shape[0] != 1 else 0]


@njit(nogil=True, cache=True, inline="always")
def _first_nan(a, b, result):
    """`result` (of a + b or a * b) under the NaN rule of every kernel (see NAN_RULE).

    Only two NaN operands leave the choice open: with one, x86 (and ARM outside its
    default-NaN mode) returns that NaN, quieted, whatever the operand order, and numbers give a
    number or the default NaN. So `a + a` where a is NaN, else `result` (`b` is not needed):
    the same bits as testing result, a and b in turn, in 4 vector instructions (add, compare,
    add, blend) instead of 14 (benchmarks/elementwise.py: add_n's accumulate went from 1.4x
    NumPy's time to NumPy's; tests/test_elementwise_kernels.py checks the rule in every lane).
    """
    return a + a if a != a else result  # a's payload and sign, quieted


#: Where IEEE 754 leaves the bits open, every CPU kernel (and so every executor and fusion path,
#: which all run these kernels) gives these: a binary op with NaN operands returns the FIRST NaN
#: operand, quieted (its sign and payload kept; `a + a` quiets it); an invalid operation on
#: numbers (inf - inf, 0 * inf) gives the machine's default NaN (x86: the negative quiet NaN).
#: The hardware leaves the choice to the instruction's operand order, which the compiler may
#: swap (addition commutes), so NumPy's and Numba's loops differ between code paths (a strided
#: bias, a vector tail): the rule is enforced with a select after the operation.
NAN_RULE = "first NaN operand, quieted; the machine's default NaN for invalid operations"


@njit(nogil=True, cache=True)
def add_rows(a, b, out, row_start, row_stop):
    _check_rows3(a, b, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        first, second, dst = operand_row(a, i), operand_row(b, i), out[i]
        for j in range(dst.shape[0]):
            dst[j] = _first_nan(first[j], second[j], first[j] + second[j])


@njit(nogil=True, cache=True)
def multiply_rows(a, b, out, row_start, row_stop):
    _check_rows3(a, b, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        first, second, dst = operand_row(a, i), operand_row(b, i), out[i]
        for j in range(dst.shape[0]):
            dst[j] = _first_nan(first[j], second[j], first[j] * second[j])


@njit(nogil=True, cache=True)
def accumulate_rows(out, x, row_start, row_stop):
    """out[r0:r1] += x[r0:r1] (add_n folds its inputs left to right with this)."""
    check_operand_rows(x, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        src, dst = operand_row(x, i), out[i]
        for j in range(dst.shape[0]):
            dst[j] = _first_nan(dst[j], src[j], dst[j] + src[j])


@njit(nogil=True, cache=True)
def relu_rows(x, out, row_start, row_stop):
    check_rows2(x, out, row_start, row_stop)
    for i in range(row_start, row_stop):
        src = x[i]
        dst = out[i]
        for j in range(src.shape[0]):
            value = src[j]
            # `not value <= 0` keeps NaN as NaN, like np.maximum(x, 0).
            dst[j] = value if not value <= 0 else 0
