"""Reductions on the GPU.

`reduce_sum_launches`: the float sum and mean of x seen as (outer, length, inner), one thread
per output, or two passes through a scratch buffer for few outputs over a long axis (see the
package docstring). `reduce_axes_launches`: sum, mean, max and min over any set of axes of a
C-contiguous x of any dtype the ops take (float32/64, int32/64), one thread per output: the
thread finds its first element from its output index and the kept axes' strides, and walks the
reduced axes in row-major order through theirs (the order the CPU op's transposed copy has), so
non-adjacent axes need no copy. Float sums accumulate in float64, integer sums in int64 (then
wrap to the dtype, as the CPU); max and min follow the CPU kernels' rule for NaN (the first in
index order) and zeros (+0.0 for max, -0.0 for min), `kernels.reduce`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .checks import check_device, check_dtype, check_scratch, check_shape
from .launch import DeviceArray, Launch, launch_config

#: `reduce_sum` splits the reduced axis only while the outputs alone give fewer threads than
#: this, only into slices of at least REDUCE_MIN_SLICE elements, and into at most
#: REDUCE_MAX_CHUNKS slices (pass 2 adds that many partials per output, one thread each).
REDUCE_TARGET_THREADS = 32768
REDUCE_MIN_SLICE = 64
REDUCE_MAX_CHUNKS = 1024


@cuda.jit(device=True)
def _finish_sum(total, length, mean):
    """The float64 sum, or the mean (NaN for an empty axis, like the CPU op)."""
    if mean:
        if length == 0:
            return math.nan
        return total / length
    return total


@cuda.jit(cache=True)
def _reduce_direct_kernel(x, out, mean):
    """One thread per out[o, i]: sum of x[o, :, i] in order, in float64."""
    j = cuda.grid(1)
    inner = x.shape[2]
    if j < out.size:
        o = j // inner
        i = j - o * inner
        length = x.shape[1]
        total = 0.0
        for position in range(length):
            total += x[o, position, i]
        out[o, i] = _finish_sum(total, length, mean)


@cuda.jit(cache=True)
def _reduce_partials_kernel(x, partials, chunks):
    """Thread (o, c, i) sums x[o, c::chunks, i] in order into partials[(o*chunks + c)*inner + i]."""
    j = cuda.grid(1)
    inner = x.shape[2]
    if j < x.shape[0] * chunks * inner:
        rest = j // inner
        i = j - rest * inner
        o = rest // chunks
        c = rest - o * chunks
        total = 0.0
        for position in range(c, x.shape[1], chunks):
            total += x[o, position, i]
        partials[j] = total


@cuda.jit(cache=True)
def _reduce_combine_kernel(partials, out, chunks, length, mean):
    """One thread per out[o, i]: the `chunks` partials added in chunk order."""
    j = cuda.grid(1)
    inner = out.shape[1]
    if j < out.size:
        o = j // inner
        i = j - o * inner
        base = o * chunks * inner + i
        total = 0.0
        for c in range(chunks):
            total += partials[base + c * inner]
        out[o, i] = _finish_sum(total, length, mean)


def reduce_chunks(outer: int, length: int, inner: int) -> int:
    """How many interleaved slices `reduce_sum_launches` cuts the reduced axis into (with scratch).

    1 (a single pass, no scratch used) when the outputs alone give enough threads or the axis is
    short; otherwise enough slices to reach about REDUCE_TARGET_THREADS threads, each of at
    least REDUCE_MIN_SLICE elements, at most REDUCE_MAX_CHUNKS. A function of the shape only.
    """
    outputs = outer * inner
    if outputs == 0 or outputs >= REDUCE_TARGET_THREADS or length < 2 * REDUCE_MIN_SLICE:
        return 1
    wanted = -(-REDUCE_TARGET_THREADS // outputs)
    return max(1, min(wanted, length // REDUCE_MIN_SLICE, REDUCE_MAX_CHUNKS))


def reduce_scratch_size(outer: int, length: int, inner: int) -> int:
    """Float64 elements of scratch `reduce_sum_launches` needs for this shape; 0: none."""
    chunks = reduce_chunks(outer, length, inner)
    return 0 if chunks == 1 else outer * chunks * inner


def reduce_sum_launches(
    x: DeviceArray, out: DeviceArray, mean: bool = False, scratch: DeviceArray | None = None
) -> list[Launch]:
    """out[o, i] = sum over l of x[o, l, i], accumulated in float64, then cast to out's dtype.

    x: 3-D (outer, length, inner); out: 2-D (outer, inner), the same dtype. `mean` divides by
    length (length 0: NaN; the sum of an empty axis is 0). `scratch`, optional: a 1-D float64
    device array of at least `reduce_scratch_size(outer, length, inner)` elements; with it, few
    outputs over a long axis are computed in two passes with many more threads (two launches:
    partials, then combine). Deterministic: the result depends only on the shapes and on
    whether scratch is given.
    """
    check_device(x, out)
    check_dtype(x, out)
    if len(x.shape) != 3:
        raise ValueError(f"reduce_sum needs x as (outer, length, inner), got {x.shape}")
    outer, length, inner = x.shape
    check_shape("reduce_sum out", out, (outer, inner))
    outputs = outer * inner
    if outputs == 0:
        return []
    chunks = reduce_chunks(outer, length, inner) if scratch is not None else 1
    if chunks == 1:
        blocks, threads = launch_config(outputs)
        return [Launch(_reduce_direct_kernel, blocks, threads, (x, out, mean))]
    needed = outer * chunks * inner
    check_scratch("reduce_sum", scratch, needed)
    partials = Launch(_reduce_partials_kernel, *launch_config(needed), (x, scratch, chunks))
    arguments = (scratch, out, chunks, length, mean)
    combine = Launch(_reduce_combine_kernel, *launch_config(outputs), arguments)
    return [partials, combine]


#: What `reduce_axes_launches` computes, and the dtypes each takes.
_REDUCE_KINDS = {"sum": "fi", "mean": "f", "max": "fi", "min": "fi"}
_REDUCE_DTYPES = tuple(np.dtype(d) for d in ("float32", "float64", "int32", "int64"))


@cuda.jit(device=True)
def _offset(index, shape, strides):
    """The element offset of row-major `index` over `shape`, through `strides`."""
    offset = 0
    for d in range(len(shape) - 1, -1, -1):
        k = index % shape[d]
        index //= shape[d]
        offset += k * strides[d]
    return offset


@cuda.jit(device=True)
def _pick(current, candidate, is_max, zero):
    """`kernels.reduce._pick`: the first NaN stays, else the larger (smaller); +0.0 (-0.0) of
    two zeros. `zero` is 0 in the dtype (a float32 kernel compares in float32)."""
    if current != current:
        return current
    if candidate != candidate:
        return candidate
    if is_max:
        if candidate > current:
            return candidate
        if candidate == current and current == zero:
            return current + candidate
        return current
    if candidate < current:
        return candidate
    if candidate == current and current == zero:
        return -(-current - candidate)
    return current


@cuda.jit(device=True, inline="always")
def _extent(j, kept_shape, kept_strides, reduced_shape):
    """(offset of the first element, number of elements) that output j reduces."""
    base = _offset(j, kept_shape, kept_strides)
    length = 1
    for size in reduced_shape:
        length *= size
    return base, length


@cuda.jit(device=True, inline="always")
def _extent_sum(x, base, length, reduced_shape, reduced_strides, total):
    """`total` plus the extent's elements in row-major order (its type: the accumulator's)."""
    for r in range(length):
        total += x[base + _offset(r, reduced_shape, reduced_strides)]
    return total


@cuda.jit(cache=True)
def _axes_sum_kernel(x, out, kept_shape, kept_strides, reduced_shape, reduced_strides, mean):
    """One thread per out[j]: the float64 sum (mean) of its elements, in row-major order."""
    j = cuda.grid(1)
    if j < out.size:
        base, length = _extent(j, kept_shape, kept_strides, reduced_shape)
        total = _extent_sum(x, base, length, reduced_shape, reduced_strides, 0.0)
        out[j] = _finish_sum(total, length, mean)


@cuda.jit(cache=True)
def _axes_int_sum_kernel(x, out, kept_shape, kept_strides, reduced_shape, reduced_strides):
    """One thread per out[j]: the int64 sum of its elements (wrapping), cast to out's dtype."""
    j = cuda.grid(1)
    if j < out.size:
        base, length = _extent(j, kept_shape, kept_strides, reduced_shape)
        out[j] = _extent_sum(x, base, length, reduced_shape, reduced_strides, 0)


@cuda.jit(cache=True)
def _axes_extreme_kernel(x, out, kept_shape, kept_strides, reduced_shape, reduced_strides, is_max):
    """One thread per out[j]: the max (min) of its elements (at least one), in row-major order."""
    j = cuda.grid(1)
    if j < out.size:
        base, length = _extent(j, kept_shape, kept_strides, reduced_shape)
        best, zero = x[base], x.dtype.type(0)
        for r in range(1, length):
            best = _pick(best, x[base + _offset(r, reduced_shape, reduced_strides)], is_max, zero)
        out[j] = best


@cuda.jit(cache=True)
def _fill_kernel(out, nan):
    """out[j] = 0 (or NaN: the mean of an empty extent)."""
    j = cuda.grid(1)
    if j < out.size:
        out[j] = math.nan if nan else 0


def _axes_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """(kept shape, kept strides, reduced shape, reduced strides) of a C-contiguous `shape`,
    size-1 axes left out (each tuple at least one long: a (1,) shape and a 0 stride)."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d], step = step, step * shape[d]
    kept = [(shape[d], strides[d]) for d in range(len(shape)) if d not in axes and shape[d] != 1]
    reduced = [(shape[d], strides[d]) for d in axes if shape[d] != 1]
    kept, reduced = kept or [(1, 0)], reduced or [(1, 0)]
    kept_shape, kept_strides = zip(*kept)
    reduced_shape, reduced_strides = zip(*reduced)
    return kept_shape, kept_strides, reduced_shape, reduced_strides


def reduce_axes_launches(
    kind: str, x: DeviceArray, out: DeviceArray, axes: tuple[int, ...]
) -> list[Launch]:
    """out = the `kind` ("sum", "mean", "max" or "min") of x over `axes` (ints in [0, x.ndim)).

    x: a C-contiguous device array; out: a device array of x's dtype with as many elements as x
    has outside `axes` (any shape: keepdims or not). Sum and max/min take float32/64 and
    int32/64, mean floats only; max and min need a non-empty reduced extent (the op refuses an
    empty one at build time). One thread per output (module docstring).
    """
    check_device(x, out)
    if kind not in _REDUCE_KINDS:
        raise ValueError(f"reduce kind must be one of {sorted(_REDUCE_KINDS)}, got {kind!r}")
    dtype = np.dtype(x.dtype)
    if dtype not in _REDUCE_DTYPES or dtype.kind not in _REDUCE_KINDS[kind] or out.dtype != dtype:
        raise ValueError(f"reduce {kind} of {dtype} into {out.dtype} is not supported")
    shape = tuple(x.shape)
    if len(set(axes)) != len(axes) or not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"axes {axes} do not fit shape {shape}")
    kept = 1
    for d in range(len(shape)):
        kept *= 1 if d in axes else shape[d]
    if out.size != kept:
        raise ValueError(f"reduce out has {out.size} elements, expected {kept}")
    if kept == 0:
        return []
    length = x.size // kept if x.size else 0
    if kind in ("max", "min") and length == 0:
        raise ValueError(f"reduce {kind} of an empty extent has no identity")
    flat_out = out.reshape(out.size)
    blocks, threads = launch_config(out.size)
    if length == 0:  # nothing to read: the sum of nothing, or the mean's NaN
        return [Launch(_fill_kernel, blocks, threads, (flat_out, kind == "mean"))]
    layout = _axes_layout(shape, tuple(axes))
    flat_x = x.reshape(x.size)
    if kind in ("max", "min"):
        kernel, extra = _axes_extreme_kernel, (kind == "max",)
    elif dtype.kind == "i":
        kernel, extra = _axes_int_sum_kernel, ()
    else:
        kernel, extra = _axes_sum_kernel, (kind == "mean",)
    return [Launch(kernel, blocks, threads, (flat_x, flat_out, *layout, *extra))]
