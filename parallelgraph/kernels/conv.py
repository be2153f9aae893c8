"""conv2d and 2-D pooling kernels over a range of *image rows* (row r = n * OH + oh).

The ops (`parallelgraph.ops.nn`) index both data formats through the same kernels: `x` and
`out` are the C-contiguous arrays as given, NHWC (N, H, W, C) or, with `nchw` True, NCHW
(N, C, H, W); filters are always HWIO (kh, kw, C // groups, C_out). A kernel writes only the
output rows of its range, so shards never touch the same memory.

conv2d is computed as im2col + matmul, one *block* of image rows at a time: `im2col_rows`
writes the block's patch matrix (one row per output pixel, kh * kw * C_in/groups columns in
(i, j, c) order, zeros where the window hangs over the padding), which a matmul row kernel
(`kernels.matmul`) multiplies by the filter matrix (the HWIO filters reshaped to
(kh * kw * C_in/groups, C_out/groups)). With NCHW output or several groups the product goes
to a block buffer that `scatter_rows` copies into place. The op fixes the blocks by shape
only (see `ops.nn.Conv2D`), so an output element's arithmetic never depends on the shards.

`conv_direct_rows` is a direct loop for grouped convolutions with few input channels per
group (depthwise ones: one), where im2col would make one tiny matmul per group and block.
Every output element is the sum over (i, j, c) in that order, accumulated in the array dtype.
It skips window positions outside the input where im2col multiplies zeros: the two differ only
where a filter holds an inf or a NaN (0 * inf is NaN), beside the padding.

Pooling (`max_pool_rows`, `avg_pool_rows`) reads each window directly. Windows only count
positions inside the input (the padding is never a value): max pool is the largest of them
and NaN when any is NaN (NumPy's np.max rule); avg pool is their float64 sum divided by how
many there are (TensorFlow's SAME rule), cast to the dtype.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bounds import check_range

__all__ = [
    "avg_pool_rows",
    "conv_direct_rows",
    "im2col_rows",
    "max_pool_rows",
    "scatter_rows",
]


@njit(nogil=True, cache=True, inline="always")
def _dims(x, nchw):
    """(N, H, W, C) of a 4-D array in either format."""
    if nchw:
        return x.shape[0], x.shape[2], x.shape[3], x.shape[1]
    return x.shape[0], x.shape[1], x.shape[2], x.shape[3]


@njit(nogil=True, cache=True)
def im2col_rows(x, nchw, geometry, out_h, out_w, c0, cig, patches, row_start, row_stop):
    """Patch matrix of image rows [row_start, row_stop): for r = n * out_h + oh,
    patches[(r - row_start) * out_w + ow, (i * kw + j) * cig + c] =
    x[n, oh * sh - pt + i * dh, ow * sw - pl + j * dw, c0 + c], 0 outside the input.

    geometry: (kh, kw, sh, sw, dh, dw, pt, pl).
    """
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    n_size, height, width, channels = _dims(x, nchw)
    check_range(row_start, row_stop, n_size * out_h)
    if c0 < 0 or cig < 0 or c0 + cig > channels:
        raise IndexError("im2col_rows: channel range out of bounds")
    if patches.shape[0] < (row_stop - row_start) * out_w or patches.shape[1] != kh * kw * cig:
        raise IndexError("im2col_rows: patch buffer too small")
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            prow = patches[(r - row_start) * out_w + ow]
            for i in range(kh):
                h = oh * sh - pt + i * dh
                for j in range(kw):
                    w = ow * sw - pl + j * dw
                    base = (i * kw + j) * cig
                    if h < 0 or h >= height or w < 0 or w >= width:
                        for c in range(cig):
                            prow[base + c] = 0
                    elif nchw:
                        for c in range(cig):
                            prow[base + c] = x[n, c0 + c, h, w]
                    else:
                        src = x[n, h, w]
                        for c in range(cig):
                            prow[base + c] = src[c0 + c]


@njit(nogil=True, cache=True)
def scatter_rows(block, out, nchw, c0, out_h, out_w, row_start, row_stop):
    """out[n, oh, ow, c0 + q] (NCHW: out[n, c0 + q, oh, ow]) = block[(r - row_start) * out_w +
    ow, q] for image rows r = n * out_h + oh in [row_start, row_stop)."""
    n_size, height, width, channels = _dims(out, nchw)
    check_range(row_start, row_stop, n_size * out_h)
    cols = block.shape[1]
    if height != out_h or width != out_w or c0 < 0 or c0 + cols > channels:
        raise IndexError("scatter_rows: block does not fit the output")
    if block.shape[0] < (row_stop - row_start) * out_w:
        raise IndexError("scatter_rows: block too small")
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            src = block[(r - row_start) * out_w + ow]
            if nchw:
                for q in range(cols):
                    out[n, c0 + q, oh, ow] = src[q]
            else:
                dst = out[n, oh, ow]
                for q in range(cols):
                    dst[c0 + q] = src[q]


@njit(nogil=True, cache=True)
def conv_direct_rows(x, filters, out, nchw, geometry, groups, row_start, row_stop):
    """Grouped conv2d of image rows [row_start, row_stop) by a direct loop: out[.., co] =
    sum over (i, j, c) in order of x[.., g * cig + c] * filters[i, j, c, co], g = co // cog;
    window positions outside the input are skipped."""
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    n_size, height, width, channels = _dims(x, nchw)
    o_n, out_h, out_w, c_out = _dims(out, nchw)
    check_range(row_start, row_stop, o_n * out_h)
    cig = filters.shape[2]
    if groups < 1 or o_n != n_size or cig * groups != channels or c_out % groups != 0:
        raise IndexError("conv_direct_rows: shapes do not match")
    if filters.shape[0] != kh or filters.shape[1] != kw or filters.shape[3] != c_out:
        raise IndexError("conv_direct_rows: filters do not match the geometry")
    cog = c_out // groups
    acc = np.empty(c_out, out.dtype)
    depthwise = cig == 1 and cog == 1
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        for ow in range(out_w):
            acc[:] = 0
            for i in range(kh):
                h = oh * sh - pt + i * dh
                if h < 0 or h >= height:
                    continue
                for j in range(kw):
                    w = ow * sw - pl + j * dw
                    if w < 0 or w >= width:
                        continue
                    if depthwise and not nchw:  # one vector loop over the channels
                        src = x[n, h, w]
                        taps = filters[i, j, 0]
                        for co in range(c_out):
                            acc[co] += src[co] * taps[co]
                        continue
                    for g in range(groups):
                        for c in range(cig):
                            value = x[n, g * cig + c, h, w] if nchw else x[n, h, w, g * cig + c]
                            taps = filters[i, j, c]
                            for q in range(g * cog, (g + 1) * cog):
                                acc[q] += value * taps[q]
            if nchw:
                for co in range(c_out):
                    out[n, co, oh, ow] = acc[co]
            else:
                dst = out[n, oh, ow]
                for co in range(c_out):
                    dst[co] = acc[co]


@njit(nogil=True, cache=True, inline="always")
def _window(o, stride, pad, k, size):
    """[start, stop) of the input positions of output position `o`'s window."""
    start = o * stride - pad
    return max(start, 0), min(start + k, size)


@njit(nogil=True, cache=True)
def _pool_check(x, out, nchw, row_start, row_stop):
    n_size, height, width, channels = _dims(x, nchw)
    o_n, out_h, out_w, o_c = _dims(out, nchw)
    check_range(row_start, row_stop, o_n * out_h)
    if o_n != n_size or o_c != channels:
        raise IndexError("pool: x and out do not match")
    return height, width, channels, out_h, out_w


@njit(nogil=True, cache=True)
def max_pool_rows(x, out, nchw, geometry, row_start, row_stop):
    """Max over each window's positions inside the input (NaN if any is NaN), for image rows
    [row_start, row_stop) of out. geometry: (kh, kw, sh, sw, pt, pl)."""
    kh, kw, sh, sw, pt, pl = geometry
    height, width, channels, out_h, out_w = _pool_check(x, out, nchw, row_start, row_stop)
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        h0, h1 = _window(oh, sh, pt, kh, height)
        for ow in range(out_w):
            w0, w1 = _window(ow, sw, pl, kw, width)
            if nchw:
                for c in range(channels):
                    best = -np.inf
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            value = x[n, c, h, w]
                            if value > best or value != value:
                                best = value
                    out[n, c, oh, ow] = best
                continue
            dst = out[n, oh, ow]
            dst[:] = -np.inf
            for h in range(h0, h1):
                for w in range(w0, w1):
                    src = x[n, h, w]
                    for c in range(channels):
                        value = src[c]
                        # once NaN, nothing is greater: NaN stays
                        if value > dst[c] or value != value:
                            dst[c] = value


@njit(nogil=True, cache=True)
def avg_pool_rows(x, out, nchw, geometry, row_start, row_stop):
    """Mean over each window's positions inside the input (float64 sum / their count), for
    image rows [row_start, row_stop) of out. geometry: (kh, kw, sh, sw, pt, pl)."""
    kh, kw, sh, sw, pt, pl = geometry
    height, width, channels, out_h, out_w = _pool_check(x, out, nchw, row_start, row_stop)
    acc = np.empty(channels)
    for r in range(row_start, row_stop):
        n = r // out_h
        oh = r - n * out_h
        h0, h1 = _window(oh, sh, pt, kh, height)
        for ow in range(out_w):
            w0, w1 = _window(ow, sw, pl, kw, width)
            count = (h1 - h0) * (w1 - w0)
            if nchw:
                for c in range(channels):
                    total = 0.0
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            total += x[n, c, h, w]
                    out[n, c, oh, ow] = total / count
                continue
            acc[:] = 0.0
            for h in range(h0, h1):
                for w in range(w0, w1):
                    src = x[n, h, w]
                    for c in range(channels):
                        acc[c] += src[c]
            dst = out[n, oh, ow]
            for c in range(channels):
                dst[c] = acc[c] / count
