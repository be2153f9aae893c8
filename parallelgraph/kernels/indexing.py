"""Index-driven copies of the indexing ops (`ops.indexing`): take_along (np.take_along_axis,
ONNX's GatherElements) and gather_nd (tf.gather_nd, ONNX's GatherND).

As the shape kernels (`kernels.shape`), each takes C-contiguous arrays flattened to 1-D and a
range of *flat* output elements (a shard's rows of the output's row view times its width), and
fills that range and nothing else: shards write disjoint parts of the output, and an element's
value is the input element it copies, so every shard boundary gives the same bits.

Nothing here reads outside an array: the host's description of the shapes (dims and strides)
is checked against the arrays once per call, before the loops, and each index is checked
(after wrapping a negative one, as NumPy) before anything is read through it. A bad index
stops the kernel, which returns its flat position in `indices` (-1: all good) so that the op
can raise an IndexError naming its value (Numba's exceptions cannot format run-time values).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range
from .shape import _copy_run


@njit(nogil=True, cache=True)
def take_along_range(
    x, indices, out, dims, x_strides, i_strides, length, axis_stride, flat_start, flat_stop
):
    """out[e] = x[index(e) . x_strides + wrap(indices[index(e) . i_strides]) * axis_stride] for
    e in [flat_start, flat_stop), where index(e) is e's multi-index in the C-ordered shape
    `dims` (int64 arrays of one length >= 1; strides >= 0, 0 along a broadcast axis, and x's 0
    along the indexed axis, whose `length` and `axis_stride` are given apart). A negative
    index counts from the end.

    Returns -1, or the position in `indices` of the first index outside [-length, length),
    having read nothing through it (the elements before it are written)."""
    check_range(flat_start, flat_stop, out.shape[0])
    axes = dims.shape[0]
    if axes < 1 or x_strides.shape[0] != axes or i_strides.shape[0] != axes:
        raise IndexError("take_along_range: dims and strides must have one length >= 1")
    size = 1
    x_high = 0
    i_high = 0
    for a in range(axes):
        if dims[a] < 0 or x_strides[a] < 0 or i_strides[a] < 0:
            raise IndexError("take_along_range: negative dims or strides")
        size *= dims[a]
        if dims[a] > 0:
            x_high += (dims[a] - 1) * x_strides[a]
            i_high += (dims[a] - 1) * i_strides[a]
    if size != out.shape[0]:
        raise IndexError("take_along_range: dims do not describe out")
    if flat_start == flat_stop:
        return -1
    if length > 0:
        x_high += (length - 1) * axis_stride
    if axis_stride < 0 or x_high >= x.shape[0] or i_high >= indices.shape[0]:
        raise IndexError("take_along_range: the strides reach outside x or indices")
    last = dims[axes - 1]
    x_step = x_strides[axes - 1]
    i_step = i_strides[axes - 1]
    # The multi-index of flat_start's row (all axes but the last), and its offsets.
    index = np.zeros(axes, np.int64)
    x_row = 0
    i_row = 0
    rest = flat_start // last
    for a in range(axes - 2, -1, -1):
        index[a] = rest % dims[a]
        rest //= dims[a]
        x_row += index[a] * x_strides[a]
        i_row += index[a] * i_strides[a]
    column = flat_start - (flat_start // last) * last
    e = flat_start
    while e < flat_stop:
        run = min(last - column, flat_stop - e)
        for t in range(run):
            at = i_row + (column + t) * i_step
            position = indices[at]
            if position < 0:
                position += length
            if position < 0 or position >= length:
                return at
            out[e + t] = x[x_row + (column + t) * x_step + position * axis_stride]
        e += run
        column = 0
        for a in range(axes - 2, -1, -1):  # the next row, C order
            index[a] += 1
            x_row += x_strides[a]
            i_row += i_strides[a]
            if index[a] < dims[a]:
                break
            x_row -= index[a] * x_strides[a]
            i_row -= index[a] * i_strides[a]
            index[a] = 0
    return -1


@njit(nogil=True, cache=True)
def gather_nd_range(
    params, indices, out, sizes, strides, batch_stride, slices, inner, flat_start, flat_stop
):
    """tf.gather_nd for out[flat_start:flat_stop]: `indices` (tuples, q) 2-D, out seen as one
    slice of `inner` elements per tuple; tuple g reads the slice of params (flat) at
    (g // slices) * batch_stride + sum_j wrap(indices[g, j]) * strides[j], where `sizes[j]` is
    the size of the axis that column j indexes (a negative index counts from the end).

    Returns -1, or the flat position in `indices` of the first index outside its axis, having
    read nothing through it (the slices before it are written)."""
    check_range(flat_start, flat_stop, out.shape[0])
    count, q = indices.shape[0], indices.shape[1]
    if sizes.shape[0] != q or strides.shape[0] != q:
        raise IndexError("gather_nd_range: sizes and strides need one entry per index column")
    if out.shape[0] != count * inner:
        raise IndexError("gather_nd_range: out does not hold one slice per index tuple")
    if flat_start == flat_stop:
        return -1
    if inner < 1 or slices < 1 or count % slices != 0:
        raise IndexError("gather_nd_range: bad slice or batch sizes")
    reach = inner
    for j in range(q):
        if sizes[j] < 0 or strides[j] < 0:
            raise IndexError("gather_nd_range: negative axis sizes or strides")
        if sizes[j] > 0:  # an empty axis: every index into it is out of range
            reach += (sizes[j] - 1) * strides[j]
    if reach > batch_stride or params.shape[0] != (count // slices) * batch_stride:
        raise IndexError("gather_nd_range: params does not match the sizes and strides")
    g = flat_start // inner
    e = flat_start
    while e < flat_stop:
        source = (g // slices) * batch_stride
        for j in range(q):
            position = indices[g, j]
            if position < 0:
                position += sizes[j]
            if position < 0 or position >= sizes[j]:
                return g * q + j
            source += position * strides[j]
        high = min(flat_stop, (g + 1) * inner)
        source += e - g * inner
        _copy_run(params[source : source + high - e], out[e:high])
        e = high
        g += 1
    return -1
