"""The shape ops on the GPU: strided copies (transpose, slices), concat, gather and top-k.

The same flat views as the CPU kernels (`parallelgraph.kernels.shape`): C-contiguous device
arrays flattened to 1-D, shapes given as a few integers (a strided copy's dims and strides as
tuples, which numba passes by value: no device allocation, nothing copied at launch). One
thread per output element, except top_k: one thread per row, inserting into its output row.
Every dtype (float32, float64, int32, int64, bool): the kernels only move values.

Out-of-range indices: the GPU cannot raise, and reporting a bad index would need a flag the host
reads after a synchronization, which the executor avoids between ops. So gather and
take_along_last *clamp* an index into the axis (after wrapping a negative one, as NumPy): they
never read outside the array, but an out-of-range index gives the value at the nearest end
where the CPU op raises an IndexError. The ops check constant indices when the graph is built,
so only computed or fed indices can meet the clamp.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .checks import check_device
from .launch import DeviceArray, Launch, launch_config


def _check_flat(*arrays: DeviceArray) -> None:
    check_device(*arrays)
    for array in arrays:
        if len(array.shape) != 1:
            raise ValueError(f"expected flat (1-D) device arrays, got shape {array.shape}")


def _check_same_dtype(*arrays: DeviceArray) -> None:
    dtypes = {np.dtype(a.dtype) for a in arrays}
    if len(dtypes) > 1:
        raise ValueError(f"expected one dtype, got {sorted(d.name for d in dtypes)}")


def _check_indices(indices: DeviceArray, what: str = "indices") -> None:
    if np.dtype(indices.dtype) not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"{what} must be int32 or int64, not {indices.dtype}")


@cuda.jit(cache=True)
def _strided_copy_kernel(x, out, base, dims, strides):
    j = cuda.grid(1)
    if j < out.shape[0]:
        rest = j
        offset = base
        for a in range(len(dims) - 1, -1, -1):
            quotient = rest // dims[a]
            offset += (rest - quotient * dims[a]) * strides[a]
            rest = quotient
        out[j] = x[offset]


def strided_copy_launches(
    x: DeviceArray,
    out: DeviceArray,
    base: int,
    dims: tuple[int, ...],
    strides: tuple[int, ...],
) -> list[Launch]:
    """out[e] = x[base + sum_a index_a(e) * strides[a]], index(e) being e's multi-index in the
    C-ordered shape `dims` (the CPU kernel's arguments: `kernels.shape.strided_copy`); both
    arrays flat. The offsets reachable are checked here, once."""
    _check_flat(x, out)
    _check_same_dtype(x, out)
    dims, strides = tuple(int(d) for d in dims), tuple(int(s) for s in strides)
    if not dims or len(dims) != len(strides) or int(np.prod(dims)) != out.shape[0]:
        raise ValueError(f"dims {dims} and strides {strides} do not describe {out.shape[0]} items")
    if out.shape[0] == 0:
        return []
    low = base + sum(min(0, (d - 1) * s) for d, s in zip(dims, strides))
    high = base + sum(max(0, (d - 1) * s) for d, s in zip(dims, strides))
    if low < 0 or high >= x.shape[0]:
        raise ValueError(f"strides reach [{low}, {high}], outside x's {x.shape[0]} items")
    arguments = (x, out, np.int64(base), dims, strides)
    return [Launch(_strided_copy_kernel, *launch_config(out.shape[0]), arguments)]


@cuda.jit(cache=True)
def _concat_piece_kernel(x, out, width_in, width_out, column):
    j = cuda.grid(1)
    if j < x.shape[0]:
        o = j // width_in
        out[o * width_out + column + (j - o * width_in)] = x[j]


def concat_launches(
    inputs: list[DeviceArray], out: DeviceArray, widths: list[int], width_out: int
) -> list[Launch]:
    """Each input (flat, rows of widths[i] elements) into its columns of out (flat, rows of
    `width_out`): one launch per non-empty input, the columns in input order."""
    _check_flat(*inputs, out)
    _check_same_dtype(*inputs, out)
    if sum(widths) != width_out or len(widths) != len(inputs):
        raise ValueError(f"widths {widths} do not add up to {width_out}")
    launches, column = [], 0
    for x, width in zip(inputs, widths):
        if x.shape[0] and x.shape[0] * width_out != out.shape[0] * width:
            raise ValueError(f"an input of {x.shape[0]} items is not {width}-wide rows of out")
        if x.shape[0]:
            arguments = (x, out, np.int64(width), np.int64(width_out), np.int64(column))
            launches.append(Launch(_concat_piece_kernel, *launch_config(x.shape[0]), arguments))
        column += width
    return launches


@cuda.jit(device=True, inline=True)
def _clamped(position, length):
    """A NumPy index (negative counts from the end) clamped into [0, length)."""
    if position < 0:
        position += length
    if position < 0:
        return 0
    if position >= length:
        return length - 1
    return position


@cuda.jit(cache=True)
def _gather_kernel(params, indices, out, length, inner):
    j = cuda.grid(1)
    if j < out.shape[0]:
        block = j // inner
        o = block // indices.shape[0]
        k = block - o * indices.shape[0]
        position = _clamped(indices[k], length)
        out[j] = params[(o * length + position) * inner + (j - block * inner)]


def gather_launches(
    params: DeviceArray, indices: DeviceArray, out: DeviceArray, length: int, inner: int
) -> list[Launch]:
    """np.take along one axis (the CPU kernel's view: `kernels.shape.gather_range`), indices
    clamped into the axis (the module docstring says why). All three arrays flat."""
    _check_flat(params, indices, out)
    _check_same_dtype(params, out)
    _check_indices(indices, "gather indices")
    if out.shape[0] == 0:
        return []
    rows = out.shape[0] // (indices.shape[0] * inner)
    if length < 1 or params.shape[0] != rows * length * inner:
        raise ValueError(f"params of {params.shape[0]} items do not match out's {rows} rows")
    arguments = (params, indices, out, np.int64(length), np.int64(inner))
    return [Launch(_gather_kernel, *launch_config(out.shape[0]), arguments)]


@cuda.jit(device=True, inline=True)
def _greater(a, b):
    return a > b or (a != a and b == b)


@cuda.jit(cache=True)
def _top_k_kernel(x, out):
    """One thread per row: the CPU kernel's insertion (`kernels.shape.top_k_rows`)."""
    r = cuda.grid(1)
    if r < x.shape[0]:
        k = out.shape[1]
        kept = 0
        for j in range(x.shape[1]):
            value = x[r, j]
            if kept == k:
                if not _greater(value, x[r, out[r, k - 1]]):
                    continue
                place = k - 1
            else:
                place = kept
                kept += 1
            while place > 0 and _greater(value, x[r, out[r, place - 1]]):
                out[r, place] = out[r, place - 1]
                place -= 1
            out[r, place] = j


def top_k_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out[r] (int32, k wide) = positions of the k largest elements of x[r] (x: rows, n), in
    the CPU kernel's order: larger first, NaN above all, ties by the lower position."""
    check_device(x, out)
    if len(x.shape) != 2 or len(out.shape) != 2 or x.shape[0] != out.shape[0]:
        raise ValueError(f"top_k needs 2-D x and out with one row count: {x.shape}, {out.shape}")
    if out.shape[1] > x.shape[1] or np.dtype(out.dtype) != np.int32:
        raise ValueError(f"top_k out must be int32 and at most {x.shape[1]} wide")
    if out.shape[0] == 0 or out.shape[1] == 0:
        return []
    return [Launch(_top_k_kernel, *launch_config(x.shape[0]), (x, out))]


@cuda.jit(cache=True)
def _take_along_last_kernel(x, indices, out):
    j = cuda.grid(1)
    width = out.shape[1]
    if j < out.shape[0] * width:
        r = j // width
        c = j - r * width
        out[r, c] = x[r, _clamped(indices[r, c], x.shape[1])]


def take_along_last_launches(
    x: DeviceArray, indices: DeviceArray, out: DeviceArray
) -> list[Launch]:
    """out[r, c] = x[r, indices[r, c]] (all 2-D, one row count), indices clamped into the row."""
    check_device(x, indices, out)
    _check_same_dtype(x, out)
    if indices.shape != out.shape or len(x.shape) != 2 or x.shape[0] != out.shape[0]:
        raise ValueError(f"take_along_last: shapes {x.shape}, {indices.shape}, {out.shape}")
    if out.shape[0] * out.shape[1] == 0:
        return []
    if x.shape[1] == 0:
        raise ValueError("take_along_last: x's rows are empty")
    arguments = (x, indices, out)
    return [Launch(_take_along_last_kernel, *launch_config(out.shape[0] * out.shape[1]), arguments)]
