"""Row kernels of softmax, log_softmax and layer_norm along the last axis: each row is read,
reduced and written in one call, while it sits in the L1 cache, instead of five to nine ops
that each stream the whole tensor through memory.

x and out are 2-D C-contiguous (rows, n) views; a call fills rows [row_start, row_stop). A
row's bits depend on that row alone (no state crosses rows, the loops' order is fixed), so any
split of the rows into shards, on any threads, gives the same bits.

- **softmax**: m = the row's max; out = e**(x - m) (`vecmath.exp_scalar`, in x's dtype); s =
  the float64 sum of out in `reduce.LANES` interleaved lanes (`reduce._sum_run`, the order
  `reduce_sum` has along the last axis); out = out / s, s rounded to x's dtype. That is the
  arithmetic of the composite `pg.softmax` built of reduce_max, subtract, exp, reduce_sum and
  divide, step for step, so the bits are the same (tests/test_rowwise.py checks).
- **log_softmax**: e**(x - m) and its sum s as softmax's, then out = (x - m) - log(s), s rounded
  to x's dtype first (the composite's arithmetic again). The e**v are stored in out and summed
  there rather than summed as they are made: a second inlined `exp_scalar` in one kernel trips
  Numba's IR checks (NumbaIRAssumptionWarning, as `kernels.codegen` notes).
- **layer_norm**: the mean and the biased variance in float64 (the sum in the same lanes, then
  the sum of the centered squares, (x - mean)**2 in float64: two passes), then
  (x - mean) * (1 / sqrt(var + epsilon)) * gamma + beta in float64, rounded once to out's dtype.

The max skips NaNs (a comparison with NaN is false): a NaN in a row makes its sum NaN, and so
the whole row, as NumPy's softmax gives. A +inf makes x - m NaN (inf - inf), so the row is NaN
too; -inf logits give e**-inf = 0 (a masked position); a row of -infs is NaN (-inf - -inf).

The scratch arrays (`parts`, float64; `tops`, x's dtype; each `reduce.LANES` long) come from the
caller, as `reduce.sum_last`'s do: LLVM would unroll a lane loop over an array allocated here
into scalar code.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .bounds import check_rows2
from .reduce import LANES, _sum_run
from .vecmath import exp_scalar, log_scalar
from .vector_width import prefer_wide_vectors

__all__ = ["LANES", "layer_norm_rows", "log_softmax_rows", "softmax_rows"]


@njit(nogil=True, cache=True, inline="always")
def _check_parts(parts):
    """`parts` is a power of 2 long, which the pairwise fold of `reduce._sum_run` needs."""
    lanes = parts.shape[0]
    if lanes < 1 or lanes & (lanes - 1) != 0:
        raise IndexError("row kernel: the partial sums must be a power of 2 long")


@njit(nogil=True, cache=True, inline="always")
def _check_scratch(parts, tops):
    _check_parts(parts)
    if tops.shape[0] < 1:
        raise IndexError("row kernel: empty scratch")


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _row_max(values, tops):
    """The largest of `values` that is not NaN (-inf when there is none): running maxima in a
    vector loop, as many as fit the row (a power of 2, at most `tops.shape[0]`, at least 8),
    folded pairwise, then the tail in order. The max is exact, so neither the lane count nor
    the order changes it (32, 64 or 128 lanes: the same softmax time to within the noise)."""
    stop = values.shape[0]
    lanes = 1  # the largest power of 2 in tops that fits the row (at least 8, where tops has it)
    while lanes * 2 <= tops.shape[0] and (lanes * 2 <= stop or lanes < 8):
        lanes *= 2
    for k in range(lanes):
        tops[k] = -np.inf
    position = 0
    while position + lanes <= stop:
        for k in range(lanes):
            value = values[position + k]
            best = tops[k]
            tops[k] = value if value > best else best
        position += lanes
    width = lanes
    while width > 1:
        width //= 2
        for k in range(width):
            other = tops[k + width]
            best = tops[k]
            tops[k] = other if other > best else best
    result = tops[0]
    while position < stop:
        value = values[position]
        result = value if value > result else result
        position += 1
    return result


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _centered_squares_run(values, mean, parts):
    """The float64 sum of (v - mean)**2, in `reduce._sum_run`'s lanes and order."""
    lanes = parts.shape[0]
    stop = values.shape[0]
    parts[:] = 0.0
    position = 0
    while position + lanes <= stop:
        for k in range(lanes):
            centered = values[position + k] - mean
            parts[k] += centered * centered
        position += lanes
    tail = 0.0
    while position < stop:
        centered = values[position] - mean
        tail += centered * centered
        position += 1
    width = lanes
    while width > 1:
        width //= 2
        for k in range(width):
            parts[k] += parts[k + width]
    return parts[0] + tail


@njit(nogil=True, cache=True, error_model="numpy")
def _exp_shifted_sum(src, dst, parts, tops):
    """dst = e**(src - m), m the row's max (returned); tops[0] = the sum of dst, rounded to the
    dtype as reduce_sum's output: the first steps of softmax and log_softmax."""
    prefer_wide_vectors()
    width = src.shape[0]
    top = _row_max(src, tops)
    for j in range(width):
        dst[j] = exp_scalar(src[j] - top)
    tops[0] = _sum_run(dst, 0, width, parts)
    return top


@njit(nogil=True, cache=True, error_model="numpy")
def softmax_rows(x, out, row_start, row_stop, parts, tops):
    """out[r] = e**(x[r] - max) / sum(e**(x[r] - max)) for r in [row_start, row_stop)."""
    prefer_wide_vectors()
    check_rows2(x, out, row_start, row_stop)
    _check_scratch(parts, tops)
    width = x.shape[1]
    for i in range(row_start, row_stop):
        src, dst = x[i], out[i]
        _exp_shifted_sum(src, dst, parts, tops)
        total = tops[0]
        for j in range(width):
            dst[j] = dst[j] / total


@njit(nogil=True, cache=True, error_model="numpy")
def log_softmax_rows(x, out, row_start, row_stop, parts, tops):
    """out[r] = (x[r] - max) - log(sum(e**(x[r] - max))) for r in [row_start, row_stop)."""
    prefer_wide_vectors()
    check_rows2(x, out, row_start, row_stop)
    _check_scratch(parts, tops)
    width = x.shape[1]
    for i in range(row_start, row_stop):
        src, dst = x[i], out[i]
        top = _exp_shifted_sum(src, dst, parts, tops)
        shift = log_scalar(tops[0])
        for j in range(width):  # x - max again (exact, the same bits), less log(sum)
            dst[j] = (src[j] - top) - shift


@njit(nogil=True, cache=True, error_model="numpy")
def layer_norm_rows(x, gamma, beta, out, epsilon, row_start, row_stop, parts):
    """out[r] = (x[r] - mean) / sqrt(var + epsilon) * gamma + beta for r in [row_start,
    row_stop), mean and (biased) var of the row in float64; gamma and beta 1-D of the row's
    width (the op passes ones and -0.0s for a missing one: x * 1 and x + -0.0 are x exactly)."""
    prefer_wide_vectors()
    check_rows2(x, out, row_start, row_stop)
    width = x.shape[1]
    _check_parts(parts)
    if gamma.shape[0] != width or beta.shape[0] != width:
        raise IndexError("layer_norm: gamma and beta must have the row's width")
    if width == 0:
        return
    for i in range(row_start, row_stop):
        src, dst = x[i], out[i]
        mean = _sum_run(src, 0, width, parts) / width
        variance = _centered_squares_run(src, mean, parts) / width
        inverse = 1.0 / math.sqrt(variance + epsilon)
        for j in range(width):
            dst[j] = (src[j] - mean) * inverse * gamma[j] + beta[j]
