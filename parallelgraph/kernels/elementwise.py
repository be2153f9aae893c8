"""Elementwise row kernels: out[r0:r1] = f(operands' rows), and the helpers they share.

The kernels themselves, `<name>_rows` for every entry of the op table (`ops.elementwise`), are
generated (`kernels.codegen`) and reached here by name: `kernels.elementwise.subtract_rows`.
Their operands are 2-D C-contiguous row views (`ops.broadcast.operand_view`): each has the
output's rows, ONE row every row reads (a bias, a scalar), or a row map (int64, the operand row
of each output row: a broadcast over leading axes); and the output's width, or width 1 read for
every column (a splat). Every case runs a SIMD loop over the row (AVX2: `ymm`; AVX-512: `zmm`;
benchmarks/elementwise.py). (A bias used to come as a `np.broadcast_to` view with row stride 0:
an 'A'-layout array whose rows LLVM does not vectorize, 3x the same-shape time at 64x256.)

Binary float arithmetic ends in a NaN select (`NAN_RULE`: which NaN comes out where IEEE 754
leaves it open). tanh, exp, sigmoid, log and pow call `kernels.vecmath`'s polynomial scalars
(an entry's `cpu=`), which LLVM vectorizes: `np.tanh` inside `@njit` would be a scalar call to
libm per element.
"""

from __future__ import annotations

from typing import Any

from numba import njit

from .bounds import check_range


@njit(nogil=True, cache=True, inline="always")
def pick_row(x, row_map, i):
    """The row of operand `x` that output row i reads: row_map[i] where there is a map, else
    x[i], or x[0] when x is one row read by every row."""
    if row_map.shape[0] != 0:
        return x[row_map[i]]
    return x[i if x.shape[0] != 1 else 0]


@njit(nogil=True, cache=True, inline="always")
def check_operand(x, row_map, out, row_start, row_stop):
    """The output rows exist, `x` can serve them (its rows, one row, or a map covering them
    whose entries are in range), and its width is the output's or 1."""
    check_range(row_start, row_stop, out.shape[0])
    if row_map.shape[0] != 0:
        check_range(row_start, row_stop, row_map.shape[0])
        for i in range(row_start, row_stop):
            check_range(row_map[i], row_map[i] + 1, x.shape[0])
    elif x.shape[0] != 1:
        check_range(row_start, row_stop, x.shape[0])
    elif row_stop > row_start and x.shape[0] == 0:
        raise IndexError("row kernel: an operand has no rows")
    if x.shape[1] != out.shape[1] and x.shape[1] != 1:
        raise IndexError("row kernel: operand widths differ")


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


def __getattr__(name: str) -> Any:
    """A generated row kernel (`<name>_rows`, `<name>_accumulate_rows`), by name."""
    if name.endswith("_rows"):
        from . import codegen

        module = codegen.cpu_module()
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
