"""The indexing ops on the GPU: take_along (np.take_along_axis) and gather_nd (tf.gather_nd).

The CPU kernels' flat views and arguments (`parallelgraph.kernels.indexing`), with shapes and
strides passed as tuples (by value: nothing allocated or copied at launch); one thread per
output element. Every dtype: the kernels only move values.

As gather on the GPU (`kernels.gpu.shape`), an out-of-range index is *clamped* into its axis
after a negative one is wrapped: the kernel cannot raise, so it never reads outside the array
but gives the value at the nearest end where the CPU op raises an IndexError. Constant indices
are checked when the graph is built, so only computed or fed ones can meet the clamp.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .launch import DeviceArray, Launch, launch_config
from .shape import _check_flat, _check_indices, _check_same_dtype, _clamped


def _ints(values: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


@cuda.jit(cache=True)
def _take_along_kernel(x, indices, out, dims, x_strides, i_strides, length, axis_stride):
    j = cuda.grid(1)
    if j < out.shape[0]:
        rest = j
        x_at = 0
        i_at = 0
        for a in range(len(dims) - 1, -1, -1):
            quotient = rest // dims[a]
            k = rest - quotient * dims[a]
            x_at += k * x_strides[a]
            i_at += k * i_strides[a]
            rest = quotient
        out[j] = x[x_at + _clamped(indices[i_at], length) * axis_stride]


def take_along_launches(
    x: DeviceArray,
    indices: DeviceArray,
    out: DeviceArray,
    dims: tuple[int, ...],
    x_strides: tuple[int, ...],
    i_strides: tuple[int, ...],
    length: int,
    axis_stride: int,
) -> list[Launch]:
    """The CPU kernel's take-along (`kernels.indexing.take_along_range`, same arguments, all
    arrays flat), indices clamped into the axis (the module docstring says why)."""
    _check_flat(x, indices, out)
    _check_same_dtype(x, out)
    _check_indices(indices)
    dims, x_strides, i_strides = _ints(dims), _ints(x_strides), _ints(i_strides)
    if not dims or not len(dims) == len(x_strides) == len(i_strides):
        raise ValueError(f"dims {dims} and strides {x_strides}, {i_strides} differ in length")
    if int(np.prod(dims)) != out.shape[0]:
        raise ValueError(f"dims {dims} do not describe {out.shape[0]} items")
    if out.shape[0] == 0:
        return []
    if length < 1:
        raise ValueError("take_along: the indexed axis is empty")
    x_high = sum((d - 1) * s for d, s in zip(dims, x_strides)) + (length - 1) * axis_stride
    i_high = sum((d - 1) * s for d, s in zip(dims, i_strides))
    if min(*x_strides, *i_strides, axis_stride) < 0 or x_high >= x.shape[0]:
        raise ValueError(f"the strides reach {x_high}, outside x's {x.shape[0]} items")
    if i_high >= indices.shape[0]:
        raise ValueError(f"the strides reach {i_high}, outside {indices.shape[0]} indices")
    arguments = (x, indices, out, dims, x_strides, i_strides, np.int64(length))
    arguments += (np.int64(axis_stride),)
    return [Launch(_take_along_kernel, *launch_config(out.shape[0]), arguments)]


@cuda.jit(cache=True)
def _gather_nd_kernel(params, indices, out, sizes, strides, q, batch_stride, slices, inner):
    e = cuda.grid(1)
    if e < out.shape[0]:
        g = e // inner
        source = (g // slices) * batch_stride + (e - g * inner)
        for t in range(q):
            source += _clamped(indices[g * q + t], sizes[t]) * strides[t]
        out[e] = params[source]


def gather_nd_launches(
    params: DeviceArray,
    indices: DeviceArray,
    out: DeviceArray,
    sizes: tuple[int, ...],
    strides: tuple[int, ...],
    batch_stride: int,
    slices: int,
    inner: int,
) -> list[Launch]:
    """The CPU kernel's gather_nd (`kernels.indexing.gather_nd_range`: indices as q columns,
    here flat, q = len(sizes)), indices clamped into their axes."""
    _check_flat(params, indices, out)
    _check_same_dtype(params, out)
    _check_indices(indices)
    sizes, strides = _ints(sizes), _ints(strides)
    q = len(sizes)
    if len(strides) != q:
        raise ValueError(f"sizes {sizes} and strides {strides} differ in length")
    if out.shape[0] == 0:
        return []
    count = indices.shape[0] // q if q else out.shape[0] // max(inner, 1)
    if inner < 1 or slices < 1 or count * inner != out.shape[0] or count % slices:
        raise ValueError(f"out of {out.shape[0]} items is not {count} slices of {inner}")
    if q and (min(sizes) < 1 or min(strides) < 0):
        raise ValueError(f"gather_nd: an indexed axis is empty (sizes {sizes})")
    reach = inner + sum((n - 1) * s for n, s in zip(sizes, strides))
    if reach > batch_stride or params.shape[0] != (count // slices) * batch_stride:
        raise ValueError(f"params of {params.shape[0]} items do not match sizes {sizes}")
    # tuples of at least one entry (q = 0: the loop reads none of them)
    arguments = (params, indices, out, sizes or (1,), strides or (0,), np.int64(q))
    arguments += (np.int64(batch_stride), np.int64(slices), np.int64(inner))
    return [Launch(_gather_nd_kernel, *launch_config(out.shape[0]), arguments)]
