"""conv2d and 2-D pooling on the GPU: one thread per output element.

Arrays are the op's own, NHWC or (``nchw``) NCHW; filters HWIO. Threads are numbered in the
output's memory order, so a warp writes contiguous memory: in NHWC adjacent threads are
adjacent output channels (they read one input value, a broadcast, and adjacent filter
values), in NCHW adjacent columns (adjacent input values, one filter value). Each thread sums
its window over (i, j, c) in order in the array dtype (NVVM contracts the products into fused
multiply-adds), skipping positions outside the input; so results depend on the shapes only,
and differ from the CPU's im2col + matmul in the last bits. Pools follow the CPU kernels
(`parallelgraph.kernels.conv`): max is NaN when the window holds a NaN; the mean is a float64
sum over the positions inside the input divided by their count.
"""

from __future__ import annotations

import math

from numba import cuda

from .checks import check_device, check_dtype, check_shape
from .launch import DeviceArray, Launch, launch_config

__all__ = ["conv2d_launches", "pool2d_launches"]


@cuda.jit(device=True, inline=True)
def _position(j, out, nchw):
    """(n, oh, ow, c) of flat output element j in out's memory order."""
    if nchw:
        ow = j % out.shape[3]
        rest = j // out.shape[3]
        oh = rest % out.shape[2]
        rest = rest // out.shape[2]
        c = rest % out.shape[1]
        return rest // out.shape[1], oh, ow, c
    c = j % out.shape[3]
    rest = j // out.shape[3]
    ow = rest % out.shape[2]
    rest = rest // out.shape[2]
    return rest // out.shape[1], rest % out.shape[1], ow, c


@cuda.jit(device=True, inline=True)
def _at(x, n, h, w, c, nchw):
    if nchw:
        return x[n, c, h, w]
    return x[n, h, w, c]


@cuda.jit(device=True, inline=True)
def _store(out, n, h, w, c, nchw, value):
    if nchw:
        out[n, c, h, w] = value
    else:
        out[n, h, w, c] = value


@cuda.jit(cache=True)
def _conv2d_kernel(x, filters, out, sh, sw, dh, dw, pt, pl, groups, nchw):
    j = cuda.grid(1)
    if j < out.size:
        n, oh, ow, co = _position(j, out, nchw)
        height = x.shape[2] if nchw else x.shape[1]
        width = x.shape[3] if nchw else x.shape[2]
        kh, kw, cig = filters.shape[0], filters.shape[1], filters.shape[2]
        c_out = filters.shape[3]
        c0 = (co // (c_out // groups)) * cig
        acc = out.dtype.type(0)
        for i in range(kh):
            h = oh * sh - pt + i * dh
            if h >= 0 and h < height:
                for k in range(kw):
                    w = ow * sw - pl + k * dw
                    if w >= 0 and w < width:
                        for c in range(cig):
                            acc += _at(x, n, h, w, c0 + c, nchw) * filters[i, k, c, co]
        _store(out, n, oh, ow, co, nchw, acc)


@cuda.jit(cache=True)
def _pool2d_kernel(x, out, kh, kw, sh, sw, pt, pl, nchw, average):
    j = cuda.grid(1)
    if j < out.size:
        n, oh, ow, c = _position(j, out, nchw)
        height = x.shape[2] if nchw else x.shape[1]
        width = x.shape[3] if nchw else x.shape[2]
        h0, w0 = max(oh * sh - pt, 0), max(ow * sw - pl, 0)
        h1, w1 = min(oh * sh - pt + kh, height), min(ow * sw - pl + kw, width)
        if average:
            total = 0.0
            for h in range(h0, h1):
                for w in range(w0, w1):
                    total += _at(x, n, h, w, c, nchw)
            _store(out, n, oh, ow, c, nchw, total / ((h1 - h0) * (w1 - w0)))
        else:
            best = out.dtype.type(-math.inf)
            for h in range(h0, h1):
                for w in range(w0, w1):
                    value = _at(x, n, h, w, c, nchw)
                    if value > best or value != value:
                        best = value
            _store(out, n, oh, ow, c, nchw, best)


def _check(x: DeviceArray, out: DeviceArray, *more: DeviceArray) -> None:
    check_device(x, out, *more)
    check_dtype(x, out, *more)
    if len(x.shape) != 4 or len(out.shape) != 4:
        raise ValueError(f"conv2d/pool2d need 4-D x and out, got {x.shape} and {out.shape}")


def _dims(shape: tuple[int, ...], nchw: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C)."""
    return (shape[0], shape[2], shape[3], shape[1]) if nchw else tuple(shape)  # type: ignore


def conv2d_launches(
    x: DeviceArray,
    filters: DeviceArray,
    out: DeviceArray,
    geometry: tuple[int, ...],
    groups: int,
    nchw: bool,
) -> list[Launch]:
    """out = conv2d(x, filters): geometry (kh, kw, sh, sw, dh, dw, pt, pl) as the CPU kernels'
    (`parallelgraph.kernels.conv`); out's spatial size says where the windows stop."""
    _check(x, out, filters)
    kh, kw, sh, sw, dh, dw, pt, pl = geometry
    n, _, _, c = _dims(tuple(x.shape), nchw)
    o_n, _, _, c_out = _dims(tuple(out.shape), nchw)
    if o_n != n or groups < 1 or c % groups or c_out % groups:
        raise ValueError(f"conv2d: x {x.shape} and out {out.shape} do not match ({groups=})")
    check_shape("conv2d filters", filters, (kh, kw, c // groups, c_out))
    if out.size == 0:
        return []
    arguments = (x, filters, out, sh, sw, dh, dw, pt, pl, groups, nchw)
    return [Launch(_conv2d_kernel, *launch_config(out.size), arguments)]


def pool2d_launches(
    x: DeviceArray, out: DeviceArray, geometry: tuple[int, ...], nchw: bool, average: bool
) -> list[Launch]:
    """out = max (or, `average`, mean) pool of x: geometry (kh, kw, sh, sw, pt, pl); padding
    must be smaller than the window (every window holds an input position)."""
    _check(x, out)
    kh, kw, sh, sw, pt, pl = geometry
    n, _, _, c = _dims(tuple(x.shape), nchw)
    o_n, _, _, o_c = _dims(tuple(out.shape), nchw)
    if (o_n, o_c) != (n, c) or pt >= kh or pl >= kw:
        raise ValueError(f"pool2d: x {x.shape} and out {out.shape} do not match {geometry}")
    if out.size == 0:
        return []
    arguments = (x, out, kh, kw, sh, sw, pt, pl, nchw, average)
    return [Launch(_pool2d_kernel, *launch_config(out.size), arguments)]
