"""softmax, log_softmax and layer_norm along the last axis on the GPU: one thread block a row.

x and out are (rows, n) device arrays. Block r computes row r: its `row_threads(n)` threads
(a power of two, at most `THREADS`) take the elements j = t, t + threads, ... in turn, each
keeping its own max or float64 partial sum, and the partials are folded pairwise in shared
memory (a fixed tree). So a result depends on the shapes and the values alone: the same bits on
every run. Arithmetic as the CPU kernels (`kernels.rowwise`): the max, e**(x - max) in x's
dtype, the sums in float64, the sum rounded to x's dtype before the division (or the log);
layer_norm's mean and variance in float64 and its output computed in float64. The results are
not the CPU's bits (CUDA's exp and log differ in the last ulp, NVVM contracts into fused
multiply-adds, the sums add in another order): tests compare with tolerances.
"""

from __future__ import annotations

import math

from numba import cuda, float64

from .checks import check_device, check_dtype, check_shape
from .launch import DeviceArray, Launch

#: The most threads a row's block has (and the length of its shared partials).
THREADS = 128


def row_threads(n: int) -> int:
    """Threads a row of n elements gets: the power of two at or above n, at most THREADS."""
    threads = 1
    while threads < min(n, THREADS):
        threads *= 2
    return threads


@cuda.jit(device=True, inline="always")
def _fold(shared, t, threads, is_max):
    """shared[0] = the max (or the sum) of shared[:threads], pairwise; every thread calls it."""
    width = threads // 2
    while width > 0:
        if t < width:
            a, b = shared[t], shared[t + width]
            if is_max:
                shared[t] = b if b > a else a
            else:
                shared[t] = a + b
        cuda.syncthreads()
        width //= 2


@cuda.jit(cache=True)
def _softmax_kernel(x, out, log):
    """Row blockIdx.x: softmax (log: log_softmax) of x[row] into out[row]."""
    row, t, threads = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    n = x.shape[1]
    shared = cuda.shared.array(THREADS, float64)
    best = -math.inf  # NaNs are skipped: a NaN makes the sum, and so the row, NaN
    for j in range(t, n, threads):
        value = x[row, j]
        if value > best:
            best = value
    shared[t] = best
    cuda.syncthreads()
    _fold(shared, t, threads, True)
    top = x.dtype.type(shared[0])
    cuda.syncthreads()  # every thread has read the max before the sums overwrite it
    total = 0.0
    for j in range(t, n, threads):
        e = math.exp(x[row, j] - top)
        total += e
        if not log:
            out[row, j] = e
    shared[t] = total
    cuda.syncthreads()
    _fold(shared, t, threads, False)
    scale = x.dtype.type(shared[0])
    if log:
        shift = math.log(scale)
        for j in range(t, n, threads):
            out[row, j] = (x[row, j] - top) - shift
    else:
        for j in range(t, n, threads):
            out[row, j] = out[row, j] / scale


@cuda.jit(cache=True)
def _layer_norm_kernel(x, gamma, beta, out, epsilon, has_gamma, has_beta):
    """Row blockIdx.x: (x - mean) / sqrt(var + epsilon) * gamma + beta, in float64."""
    row, t, threads = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    n = x.shape[1]
    shared = cuda.shared.array(THREADS, float64)
    total = 0.0
    for j in range(t, n, threads):
        total += x[row, j]
    shared[t] = total
    cuda.syncthreads()
    _fold(shared, t, threads, False)
    mean = shared[0] / n
    cuda.syncthreads()
    total = 0.0
    for j in range(t, n, threads):
        centered = x[row, j] - mean
        total += centered * centered
    shared[t] = total
    cuda.syncthreads()
    _fold(shared, t, threads, False)
    inverse = 1.0 / math.sqrt(shared[0] / n + epsilon)
    for j in range(t, n, threads):
        value = (x[row, j] - mean) * inverse
        if has_gamma:
            value *= gamma[j]
        if has_beta:
            value += beta[j]
        out[row, j] = value


def _check_rows(x: DeviceArray, out: DeviceArray) -> tuple[int, int]:
    check_device(x, out)
    check_dtype(x, out)
    if len(x.shape) != 2:
        raise ValueError(f"row kernels need x as (rows, n), got {tuple(x.shape)}")
    check_shape("out", out, tuple(x.shape))
    return x.shape[0], x.shape[1]


def softmax_launches(x: DeviceArray, out: DeviceArray, log: bool = False) -> list[Launch]:
    """out = softmax of each row of x (log: log_softmax); x and out (rows, n), one dtype."""
    rows, n = _check_rows(x, out)
    if rows == 0 or n == 0:
        return []
    return [Launch(_softmax_kernel, rows, row_threads(n), (x, out, log))]


def layer_norm_launches(
    x: DeviceArray,
    gamma: DeviceArray | None,
    beta: DeviceArray | None,
    out: DeviceArray,
    epsilon: float,
) -> list[Launch]:
    """out = layer_norm of each row of x; gamma and beta: (n,) device arrays of x's dtype, or
    None (1 and 0)."""
    rows, n = _check_rows(x, out)
    for parameter in (gamma, beta):
        if parameter is not None:
            check_device(parameter)
            check_dtype(x, parameter)
            check_shape("gamma / beta", parameter, (n,))
    if rows == 0 or n == 0:
        return []
    stand_in = x[0]  # read by neither branch where a parameter is missing: any row of x's dtype
    arguments = (
        x,
        stand_in if gamma is None else gamma,
        stand_in if beta is None else beta,
        out,
        float(epsilon),
        gamma is not None,
        beta is not None,
    )
    return [Launch(_layer_norm_kernel, rows, row_threads(n), arguments)]
