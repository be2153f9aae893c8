"""Reductions over the middle axis of a 3-D view: acc[o, :] += sum_l x[o, l, :] (and max, min).

A reduction sees its input as (outer, length, inner) around the reduced extent
(`ops.reductions.reduced_view`: adjacent reduced axes merged, separated ones moved last). When
there are several outer rows, shards take ranges of them and write disjoint rows of the result;
when there is one (axis=0, or axis=None where everything is one long row), shards take ranges of
`length` and each writes its own partial sum, which the op adds up in shard order. Accumulation is
in float64 whatever the input dtype, which makes float32 sums accurate and order effects tiny.
A reduction along the last axis (inner size 1: axis=None, or axis=-1) runs along one contiguous
run with `LANES` interleaved partial sums (`sum_last`, `_sum_run`).

Integer sums (`sum_int`) accumulate in int64 and wrap: modular addition is associative, so the
result (cast to the input's dtype by the op) is NumPy's `np.sum(x, dtype=x.dtype)` whatever the
order or the shards.

Max and min (`max_middle`, `max_last`, ...) are exact; along the last axis they keep `LANES`
running extremes in a vector loop too (`_extreme_run`), 1.0-1.3x NumPy's time. So that a result
never depends on the order the values are visited in (the lanes, the shard boundaries), ties
and NaNs follow one rule (`_pick`): the first NaN in index order wins (NaN propagates, as
`np.max`), and of +0.0 and -0.0 max gives +0.0, min -0.0 (NumPy keeps whichever it met first).
Shards' partial results are folded in shard order with the same rule (`fold_max`, `fold_min`),
so the first NaN of the first shard holding one is the first in index order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range

#: Partial sums of a run along the last axis: 32 float64 lanes are 8 AVX2 vectors (4 AVX-512
#: ones) of independent additions, enough to hide the latency of each (benchmarks/RESULTS.md,
#: "reduce_sum along the last axis": 8 lanes 150 us, 16 80, 32 55, 64 50 on 256x1024 float32).
LANES = 32


#: What `_middle` folds the rows in with: addition, or `_pick`'s maximum or minimum.
SUM, MAX, MIN = 0, 1, 2


@njit(nogil=True, cache=True, inline="always")
def _check_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    check_range(outer_start, outer_stop, min(x.shape[0], acc.shape[0]))
    check_range(length_start, length_stop, x.shape[1])
    if x.shape[2] != acc.shape[1]:
        raise IndexError("reduce: acc's width differs from x's inner size")


@njit(nogil=True, cache=True, inline="always")
def _fold_in(current, value, kind):
    """current + value (SUM), or the extreme of the two under `_pick`'s rule (MAX, MIN)."""
    if kind == SUM:
        return current + value
    return _pick(current, value, kind == MAX)


@njit(nogil=True, cache=True, inline="always")
def _middle(x, acc, outer_start, outer_stop, length_start, length_stop, kind):
    """acc[o, :] = acc[o, :] folded with x[o, l, :] for l in [length_start, length_stop), in
    order, by `kind` (a constant where the callers inline this: one loop per kind)."""
    width = x.shape[2]
    for o in range(outer_start, outer_stop):
        row = acc[o]
        position = length_start
        # Four rows a pass: each element's steps are the one-row loop's, in its order
        # (((row + a) + b) + c) + d, so the same bits for any range; the running value is
        # loaded and stored once per four rows instead of once per row: sums 0.67-0.86x the
        # time of one row a pass, 0.67-0.90x NumPy's float32 sum (benchmarks/RESULTS.md,
        # "reduce_sum across rows"); max and min ~10% faster (100 us against 110, 512x1024).
        while position + 4 <= length_stop:
            a, b, c, d = x[o, position], x[o, position + 1], x[o, position + 2], x[o, position + 3]
            for i in range(width):
                first = _fold_in(_fold_in(row[i], a[i], kind), b[i], kind)
                row[i] = _fold_in(_fold_in(first, c[i], kind), d[i], kind)
            position += 4
        while position < length_stop:
            src = x[o, position]
            for i in range(width):
                row[i] = _fold_in(row[i], src[i], kind)
            position += 1


@njit(nogil=True, cache=True)
def sum_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    """acc[o, :] += sum of x[o, l, :] for o in [outer_start, outer_stop), l in [length_start,
    length_stop); either range may be empty (a zero-size dimension)."""
    _check_middle(x, acc, outer_start, outer_stop, length_start, length_stop)
    if x.shape[2] == 1:  # axis=None or the last axis (the op calls `sum_last`, faster)
        parts = np.empty(LANES)
        for o in range(outer_start, outer_stop):
            acc[o, 0] += _sum_run(x[o, :, 0], length_start, length_stop, parts)
        return
    _middle(x, acc, outer_start, outer_stop, length_start, length_stop, SUM)


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


@njit(nogil=True, cache=True)
def sum_int(x, acc, outer_start, outer_stop, length_start, length_stop):
    """`sum_middle` for integers: acc[o, :] += sum of x[o, l, :] in int64 (acc int64), wrapping
    on overflow; any order gives the same bits."""
    _check_middle(x, acc, outer_start, outer_stop, length_start, length_stop)
    _middle(x, acc, outer_start, outer_stop, length_start, length_stop, SUM)


@njit(nogil=True, cache=True, inline="always")
def _pick(current, candidate, is_max):
    """The extreme of `current` and `candidate` (the later value in index order) under the
    module's rule: a NaN `current` stays (the first NaN), a NaN `candidate` wins, else the
    larger (max) or the smaller (min), and of two zeros +0.0 (max) or -0.0 (min)."""
    if current != current:
        return current
    if candidate != candidate:
        return candidate
    if is_max:
        if candidate > current:
            return candidate
        if candidate == current and current == 0:
            return current + candidate  # +0.0 unless both are -0.0
        return current
    if candidate < current:
        return candidate
    if candidate == current and current == 0:
        return -(-current - candidate)  # -0.0 unless both are +0.0
    return current


@njit(nogil=True, cache=True)
def max_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    """acc[o, :] = max(acc[o, :], max of x[o, l, :] over the range) (module docstring's rule);
    acc has x's dtype, filled with the lowest value (or earlier partial results) beforehand."""
    _check_middle(x, acc, outer_start, outer_stop, length_start, length_stop)
    _middle(x, acc, outer_start, outer_stop, length_start, length_stop, MAX)


@njit(nogil=True, cache=True)
def min_middle(x, acc, outer_start, outer_stop, length_start, length_stop):
    """`max_middle` for the minimum."""
    _check_middle(x, acc, outer_start, outer_stop, length_start, length_stop)
    _middle(x, acc, outer_start, outer_stop, length_start, length_stop, MIN)


@njit(nogil=True, cache=True, inline="always")
def _extreme_run(values, start, stop, parts, flags, is_max):
    """The extreme of values[start:stop] (start < stop): `LANES` running extremes that skip
    NaNs (a comparison with NaN is false) and flag them, a vector loop; where a NaN was seen or
    the extreme is a zero (the rule then depends on which values are there: `_pick`), the
    range again in order with `_pick`, the rare slow path."""
    lanes = parts.shape[0]
    first = values[start]
    parts[:] = first
    flags[:] = 0
    position = start
    while position + lanes <= stop:
        for k in range(lanes):
            value = values[position + k]
            best = parts[k]
            if is_max:
                parts[k] = value if value > best else best
            else:
                parts[k] = value if value < best else best
            flags[k] |= value != value
        position += lanes
    result = first
    seen = 0
    for k in range(lanes):
        if is_max:
            result = parts[k] if parts[k] > result else result
        else:
            result = parts[k] if parts[k] < result else result
        seen |= flags[k]
    while position < stop:
        result = _pick(result, values[position], is_max)
        position += 1
    if seen or result != result or result == 0:
        result = first
        for position in range(start + 1, stop):
            result = _pick(result, values[position], is_max)
    return result


@njit(nogil=True, cache=True, inline="always")
def _extreme_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts, flags, is_max):
    check_range(outer_start, outer_stop, min(x.shape[0], acc.shape[0]))
    check_range(length_start, length_stop, x.shape[1])
    if acc.shape[1] != 1 or parts.shape[0] < 1 or flags.shape[0] != parts.shape[0]:
        raise IndexError("max/min: acc must be (outer, 1), parts and flags of one length")
    if length_start == length_stop:
        return
    for o in range(outer_start, outer_stop):
        found = _extreme_run(x[o], length_start, length_stop, parts, flags, is_max)
        acc[o, 0] = _pick(acc[o, 0], found, is_max)


@njit(nogil=True, cache=True)
def max_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts, flags):
    """`max_middle` of an inner size of 1 on the 2-D (outer, length) view: acc[o, 0] = max of
    acc[o, 0] and x[o, l] over the range, with `parts` (x's dtype) and `flags` (int64), both
    `LANES` long, as the caller's scratch (as `sum_last`'s: a vector loop)."""
    _extreme_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts, flags, True)


@njit(nogil=True, cache=True)
def min_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts, flags):
    """`max_last` for the minimum."""
    _extreme_last(x, acc, outer_start, outer_stop, length_start, length_stop, parts, flags, False)


@njit(nogil=True, cache=True, inline="always")
def _fold(partials, out, is_max):
    if partials.shape[1] != out.shape[0] or partials.shape[2] != out.shape[1]:
        raise IndexError("fold: partials and out differ in shape")
    out[...] = partials[0]
    for shard in range(1, partials.shape[0]):
        for o in range(out.shape[0]):
            for i in range(out.shape[1]):
                out[o, i] = _pick(out[o, i], partials[shard, o, i], is_max)


@njit(nogil=True, cache=True)
def fold_max(partials, out):
    """out = the shards' partial maxima (shard, outer, inner) folded in shard order."""
    _fold(partials, out, True)


@njit(nogil=True, cache=True)
def fold_min(partials, out):
    """`fold_max` for the minimum."""
    _fold(partials, out, False)
