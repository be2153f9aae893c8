"""Data-movement kernels of the shape ops: strided copies, concatenation, gathers and top-k.

Every kernel fills a range of its output and nothing else, so the shards of one op write
disjoint parts of it; an element's value is the input element it copies, so every shard
boundary gives the same bits. The copy kernels take C-contiguous arrays flattened to 1-D and a
range of *flat* output elements (a shard's rows of the output's row view times its width): the
op's shape is described by a few integers instead of one compiled kernel per rank and layout.

Nothing here reads outside an array. The range is checked against the output (`check_range`),
a strided copy checks the lowest and highest offset it can read before its loops, and the
gathers check each index before they read through it and return the position of the first bad
one (-1: all good), so that the op can raise an IndexError naming the index value (Numba's
exceptions cannot format run-time values).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range

#: Rows copied side by side by a strided copy whose last axis is not contiguous in its input
#: (a transpose): reading TILE_ROWS rows' elements column by column touches TILE_ROWS
#: neighbouring input elements in a row instead of one element per cache line.
TILE_ROWS = 16


@njit(nogil=True, cache=True)
def strided_copy(x, base, dims, strides, out, flat_start, flat_stop):
    """out[e] = x[base + sum_a index_a(e) * strides[a]] for e in [flat_start, flat_stop), where
    index(e) is e's multi-index in the C-ordered shape `dims` (int64 arrays of one length >= 1:
    a transpose's permuted strides, a slice's steps times the input's strides)."""
    check_range(flat_start, flat_stop, out.shape[0])
    axes = dims.shape[0]
    if axes < 1 or strides.shape[0] != axes:
        raise IndexError("strided_copy: dims and strides must have one length >= 1")
    size = 1
    low = base
    high = base
    for a in range(axes):
        size *= dims[a]
        if dims[a] > 0:
            reach = (dims[a] - 1) * strides[a]
            if reach < 0:
                low += reach
            else:
                high += reach
    if size != out.shape[0]:
        raise IndexError("strided_copy: dims do not describe out")
    if flat_start == flat_stop:
        return
    if low < 0 or high >= x.shape[0]:
        raise IndexError("strided_copy: the strides reach outside x")
    length = dims[axes - 1]
    step = strides[axes - 1]
    # The multi-index of flat_start's row (all axes but the last), and its offset in x.
    index = np.zeros(axes, np.int64)
    offset = base
    rest = flat_start // length
    for a in range(axes - 2, -1, -1):
        index[a] = rest % dims[a]
        rest //= dims[a]
        offset += index[a] * strides[a]
    column = flat_start - (flat_start // length) * length
    offsets = np.empty(TILE_ROWS, np.int64)
    e = flat_start
    while e < flat_stop:
        rows = (flat_stop - e) // length
        if column == 0 and step != 1 and rows >= 2:
            # Whole rows, side by side (see TILE_ROWS).
            rows = min(rows, TILE_ROWS)
            for t in range(rows):
                offsets[t] = offset
                offset = _next_row(index, dims, strides, offset, axes)
            for j in range(length):
                source = j * step
                for t in range(rows):
                    out[e + t * length + j] = x[offsets[t] + source]
            e += rows * length
            continue
        run = min(length - column, flat_stop - e)
        source = offset + column * step
        if step == 1:
            _copy_run(x[source : source + run], out[e : e + run])
        else:
            target = out[e : e + run]
            for t in range(run):
                target[t] = x[source + t * step]
        e += run
        column = 0
        offset = _next_row(index, dims, strides, offset, axes)


@njit(nogil=True, cache=True, inline="always")
def _copy_run(source, target):
    """target[:] = source[:] for two views of one length. Copying between views indexed from
    0 is what LLVM turns into a vector loop: the same loop over offsets into the whole arrays
    stays scalar (2x the time of NumPy's copy of the same rows)."""
    for t in range(target.shape[0]):
        target[t] = source[t]


@njit(nogil=True, cache=True, inline="always")
def _next_row(index, dims, strides, offset, axes):
    """Advance the row multi-index `index` (all axes but the last) by one, C order; return the
    new row's offset."""
    for a in range(axes - 2, -1, -1):
        index[a] += 1
        offset += strides[a]
        if index[a] < dims[a]:
            return offset
        offset -= index[a] * strides[a]
        index[a] = 0
    return offset


@njit(nogil=True, cache=True)
def concat_piece(x, out, width_in, width_out, column, flat_start, flat_stop):
    """The part of out[flat_start:flat_stop] that comes from one input: out seen as rows of
    `width_out` elements, x as rows of `width_in`, x's row o at columns [column, column +
    width_in) of out's row o."""
    check_range(flat_start, flat_stop, out.shape[0])
    if width_in == 0 or flat_start == flat_stop:
        return
    if column < 0 or column + width_in > width_out:
        raise IndexError("concat_piece: the piece does not fit in out's rows")
    if x.shape[0] * width_out != out.shape[0] * width_in:
        raise IndexError("concat_piece: x and out have different numbers of rows")
    for o in range(flat_start // width_out, (flat_stop - 1) // width_out + 1):
        row = o * width_out + column
        low = max(flat_start, row)
        high = min(flat_stop, row + width_in)
        shift = o * width_in - row
        _copy_run(x[low + shift : high + shift], out[low:high])


@njit(nogil=True, cache=True)
def gather_range(params, indices, out, length, inner, flat_start, flat_stop):
    """np.take along one axis, for out[flat_start:flat_stop]: params seen as (outer, length,
    inner), out as (outer, indices.size, inner). Negative indices count from the end.

    Returns -1, or the position in `indices` of the first index outside [-length, length),
    having read nothing through it (the elements before it are written)."""
    check_range(flat_start, flat_stop, out.shape[0])
    count = indices.shape[0]
    if flat_start == flat_stop:
        return -1
    if inner < 1 or out.shape[0] % (count * inner) != 0:
        raise IndexError("gather_range: out does not have indices.size * inner columns")
    if params.shape[0] != (out.shape[0] // (count * inner)) * length * inner:
        raise IndexError("gather_range: params does not match out's rows")
    if inner == 1:  # single elements (a gather along the last axis): a row at a time
        return _gather_elements(params, indices, out, length, flat_start, flat_stop)
    block = flat_start // inner  # the output run of `inner` elements that e is in: (o, k)
    o = block // count
    k = block - o * count
    e = flat_start
    while e < flat_stop:
        position = indices[k]
        if position < 0:
            position += length
        if position < 0 or position >= length:
            return k
        high = min(flat_stop, (block + 1) * inner)
        source = (o * length + position) * inner + e - block * inner
        _copy_run(params[source : source + high - e], out[e:high])
        e = high
        block += 1
        k += 1
        if k == count:
            k = 0
            o += 1
    return -1


@njit(nogil=True, cache=True)
def _gather_elements(params, indices, out, length, flat_start, flat_stop):
    """`gather_range` of an inner size of 1, row by row of out: the loop over one row of
    params and one of out takes a quarter of the time of the general loop's running (o, k)."""
    count = indices.shape[0]
    e = flat_start
    while e < flat_stop:
        o = e // count
        first = e - o * count
        last = min(count, first + flat_stop - e)
        row = params[o * length : (o + 1) * length]
        target = out[e : e + last - first]
        for k in range(first, last):
            position = indices[k]
            if position < 0:
                position += length
            if position < 0 or position >= length:
                return k
            target[k - first] = row[position]
        e += last - first
    return -1


@njit(nogil=True, cache=True, inline="always")
def _greater(a, b):
    """a ranks before b in top_k: larger, NaN above every number (NaNs tie with each other)."""
    return a > b or (a != a and b == b)


@njit(nogil=True, cache=True)
def top_k_rows(x, out, row_start, row_stop):
    """out[r] = the positions of the out.shape[1] largest elements of x[r], largest first,
    ties (and NaNs among themselves) by the lower position first: an insertion into the sorted
    out row, O(n k) a row (k is small: mixtures of experts pick 1 to 8)."""
    check_range(row_start, row_stop, min(x.shape[0], out.shape[0]))
    k = out.shape[1]
    if k > x.shape[1]:
        raise IndexError("top_k_rows: k is larger than the row")
    if k == 0:
        return
    for r in range(row_start, row_stop):
        row = x[r]
        kept = 0
        for j in range(row.shape[0]):
            value = row[j]
            if kept == k:
                if not _greater(value, row[out[r, k - 1]]):
                    continue
                place = k - 1
            else:
                place = kept
                kept += 1
            # Shift the kept positions that `value` beats one place down; equal values stay
            # above it (they came first).
            while place > 0 and _greater(value, row[out[r, place - 1]]):
                out[r, place] = out[r, place - 1]
                place -= 1
            out[r, place] = j


@njit(nogil=True, cache=True)
def take_along_last(x, indices, out, row_start, row_stop):
    """out[r, c] = x[r, indices[r, c]] for the rows in [row_start, row_stop), indices in
    [0, x.shape[1]). Returns -1, or the flat position in `indices` of the first bad index
    (nothing read through it)."""
    check_range(row_start, row_stop, min(x.shape[0], indices.shape[0], out.shape[0]))
    if indices.shape[1] != out.shape[1]:
        raise IndexError("take_along_last: indices and out have different widths")
    length = x.shape[1]
    for r in range(row_start, row_stop):
        for c in range(out.shape[1]):
            position = indices[r, c]
            if position < 0 or position >= length:
                return r * out.shape[1] + c
            out[r, c] = x[r, position]
    return -1
