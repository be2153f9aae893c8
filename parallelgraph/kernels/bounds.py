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
