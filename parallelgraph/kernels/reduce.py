"""Sum reduction over the middle axis of a 3-D view: acc[o, :] += sum_l x[o, l, :].

`reduce_sum(x, axis)` sees its input as (outer, length, inner) around the reduced axis. When
there are several outer rows, shards take ranges of them and write disjoint rows of the result;
when there is one (axis=0, or axis=None where everything is one long row), shards take ranges of
`length` and each writes its own partial sum, which the op adds up in shard order. Accumulation is
in float64 whatever the input dtype, which makes float32 sums accurate and order effects tiny.
A reduction along the last axis (inner size 1: axis=None, or axis=-1) runs along one contiguous
run with eight interleaved partial sums (`_sum_run`).
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
    if x.shape[2] == 1:  # axis=None or the last axis: a reduction along one contiguous run
        for o in range(outer_start, outer_stop):
            acc[o, 0] += _sum_run(x[o, :, 0], length_start, length_stop)
        return
    for o in range(outer_start, outer_stop):
        row = acc[o]
        for position in range(length_start, length_stop):
            src = x[o, position]
            for i in range(src.shape[0]):
                row[i] += src[i]


@njit(nogil=True, cache=True, inline="always")
def _sum_run(values, start, stop):
    """The float64 sum of values[start:stop] in eight interleaved partial sums (a fixed order,
    so the same bits for the same range on any thread), added up pairwise at the end: eight
    independent additions in flight instead of one chain, where the inner loop of the 3-D
    walk took a view per element (~3.5 ns an element against ~0.2 for NumPy)."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    position = start
    while position + 8 <= stop:
        s0 += values[position]
        s1 += values[position + 1]
        s2 += values[position + 2]
        s3 += values[position + 3]
        s4 += values[position + 4]
        s5 += values[position + 5]
        s6 += values[position + 6]
        s7 += values[position + 7]
        position += 8
    tail = 0.0
    while position < stop:
        tail += values[position]
        position += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) + tail
