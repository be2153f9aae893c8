"""Range checks shared by the row kernels: a bad row range raises instead of corrupting memory.

Numba does not check array bounds (unless `NUMBA_BOUNDSCHECK=1`), so a kernel handed a row range
outside its arrays reads and writes past them: wrong numbers at best, a segfault at worst. Every
row kernel checks its range against the arrays it touches once per call, before its loops; that
costs a few comparisons per shard and turns such a bug into an `IndexError` that the executor
reports as an OpError naming the op.
"""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True, inline="always")
def check_range(start, stop, size):
    """Raise IndexError unless 0 <= start <= stop <= size (an empty range is fine)."""
    if start < 0 or stop < start or stop > size:
        raise IndexError("row kernel: range out of bounds")


@njit(nogil=True, cache=True, inline="always")
def check_rows2(x, out, row_start, row_stop):
    """The rows exist in both 2-D views and have the same width."""
    _check_rows(min(x.shape[0], out.shape[0]), x, out, row_start, row_stop)


@njit(nogil=True, cache=True, inline="always")
def check_operand_rows(x, out, row_start, row_stop):
    """`check_rows2` for an operand that may be one row every row reads (a bias or a scalar:
    see `kernels.elementwise.operand_row`): then only `out` needs the rows."""
    rows = out.shape[0] if x.shape[0] == 1 else min(x.shape[0], out.shape[0])
    _check_rows(rows, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, inline="always")
def _check_rows(rows, x, out, row_start, row_stop):
    check_range(row_start, row_stop, rows)
    if x.shape[1] != out.shape[1]:
        raise IndexError("row kernel: operand widths differ")


@njit(nogil=True, cache=True, inline="always")
def check_program_operand(x, out, row_start, row_stop):
    """`check_operand_rows`, or, for an operand of width 1 where `out` is wider (a splat along
    each row: `kernels.program`), that it has the rows."""
    if x.shape[1] == 1 and out.shape[1] != 1:
        check_range(row_start, row_stop, min(x.shape[0], out.shape[0]))
    else:
        check_operand_rows(x, out, row_start, row_stop)
