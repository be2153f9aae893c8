"""reduce_sum on the GPU: one thread per output, or two passes through a scratch buffer for
few outputs over a long axis (see the package docstring)."""

from __future__ import annotations

import math

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
