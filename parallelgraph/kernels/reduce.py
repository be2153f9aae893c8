"""Sum reduction over the middle axis of a 3-D view: acc[o, :] += sum_l x[o, l, :].

`reduce_sum(x, axis)` sees its input as (outer, length, inner) around the reduced axis. When
there are several outer rows, shards take ranges of them and write disjoint rows of the result;
when there is one (axis=0, or axis=None where everything is one long row), shards take ranges of
`length` and each writes its own partial sum, which the op adds up in shard order. Accumulation is
in float64 whatever the input dtype, which makes float32 sums accurate and order effects tiny.
A reduction along the last axis (inner size 1: axis=None, or axis=-1) runs along one contiguous
run with `LANES` interleaved partial sums (`sum_last`, `_sum_run`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range

#: Partial sums of a run along the last axis: 32 float64 lanes are 8 AVX2 vectors (4 AVX-512
#: ones) of independent additions, enough to hide the latency of each (benchmarks/RESULTS.md,
#: "reduce_sum along the last axis": 8 lanes 150 us, 16 80, 32 55, 64 50 on 256x1024 float32).
LANES = 32


@njit(nogil=True, cache=True)
def sum_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    """acc[o, :] += sum of x[o, l, :] for o in [outer_start, outer_stop), l in [length_start,
    length_stop); either range may be empty (a zero-size dimension)."""
    check_range(outer_start, outer_stop, min(x.shape[0], acc.shape[0]))
    check_range(length_start, length_stop, x.shape[1])
    if x.shape[2] != acc.shape[1]:
        raise IndexError("sum_middle: acc's width differs from x's inner size")
    if x.shape[2] == 1:  # axis=None or the last axis (the op calls `sum_last`, faster)
        parts = np.empty(LANES)
        for o in range(outer_start, outer_stop):
            acc[o, 0] += _sum_run(x[o, :, 0], length_start, length_stop, parts)
        return
    width = x.shape[2]
    for o in range(outer_start, outer_stop):
        row = acc[o]
        position = length_start
        # Four rows a pass: each element's additions are the one-row loop's, in its order
        # (((row + a) + b) + c) + d, so the same bits for any range; the running sum is
        # loaded and stored once per four rows instead of once per row: 0.67-0.86x the time
        # of one row a pass, 0.67-0.90x NumPy's float32 sum (benchmarks/RESULTS.md,
        # "reduce_sum across rows").
        while position + 4 <= length_stop:
            a, b, c, d = x[o, position], x[o, position + 1], x[o, position + 2], x[o, position + 3]
            for i in range(width):
                row[i] = (((row[i] + a[i]) + b[i]) + c[i]) + d[i]
            position += 4
        while position < length_stop:
            src = x[o, position]
            for i in range(width):
                row[i] += src[i]
            position += 1


@njit(nogil=True, cache=True)
def sum_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts):
    """`sum_middle` of an inner size of 1, on its 2-D (outer, length) view: acc[o, 0] += sum of
    x[o, l], with `parts` (float64, `LANES` long) as the caller's scratch for the partial sums.

    Each x[o] is a contiguous row, where the lanes' loop is a vector loop (a 3-D view's
    x[o, :, 0] has a stride LLVM does not vectorize: 110 us against 55 on 256x1024). The
    scratch comes from the caller because LLVM would see the length of an array allocated here,
    unroll the lanes' loop into scalar code and lose the vectors (155 us against 45)."""
    check_range(outer_start, outer_stop, min(x.shape[0], acc.shape[0]))
    check_range(length_start, length_stop, x.shape[1])
    if acc.shape[1] != 1 or parts.shape[0] < 1:
        raise IndexError("sum_last: acc must be (outer, 1) and parts not empty")
    for o in range(outer_start, outer_stop):
        acc[o, 0] += _sum_run(x[o], length_start, length_stop, parts)


@njit(nogil=True, cache=True, inline="always")
def _sum_run(values, start, stop, parts):
    """The float64 sum of values[start:stop]: element start + k + LANES j goes to partial sum k
    (a fixed order, so the same bits for the same range on any thread), the rest after the last
    whole block to a tail, the partial sums added up pairwise at the end. The lane loop's trip
    count is read from `parts` at run time, so LLVM vectorizes it instead of unrolling it into
    scalar code (Numba turns off the SLP vectorizer that would pack unrolled additions)."""
    lanes = parts.shape[0]
    parts[:] = 0.0
    position = start
    while position + lanes <= stop:
        for k in range(lanes):
            parts[k] += values[position + k]
        position += lanes
    tail = 0.0
    while position < stop:
        tail += values[position]
        position += 1
    width = lanes
    while width > 1:
        width //= 2
        for k in range(width):
            parts[k] += parts[k + width]
    return parts[0] + tail
