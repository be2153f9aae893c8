"""Sum reduction over the middle axis of a 3-D view: acc[o, :] += sum_l x[o, l, :].

`reduce_sum(x, axis)` sees its input as (outer, length, inner) around the reduced axis. When
there are several outer rows, shards take ranges of them and write disjoint rows of the result;
when there is one (axis=0, or axis=None where everything is one long row), shards take ranges of
`length` and each writes its own partial sum, which the op adds up in shard order. Accumulation is
in float64 whatever the input dtype, which makes float32 sums accurate and order effects tiny.
"""

from __future__ import annotations

from numba import njit

from .bounds import check_range


@njit(nogil=True, cache=True)
def sum_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    """acc[o, :] += sum of x[o, l, :] for o in [outer_start, outer_stop), l in [length_start,
    length_stop); either range may be empty (a zero-size dimension)."""
    check_range(outer_start, outer_stop, min(x.shape[0], acc.shape[0]))
    check_range(length_start, length_stop, x.shape[1])
    if x.shape[2] != acc.shape[1]:
        raise IndexError("sum_middle: acc's width differs from x's inner size")
    for o in range(outer_start, outer_stop):
        row = acc[o]
        for position in range(length_start, length_stop):
            src = x[o, position]
            for i in range(src.shape[0]):
                row[i] += src[i]
