"""Elementwise kernels: add, multiply (same shape, bias over the last axis, scalar), relu, tanh,
exp, sigmoid and accumulate (add_n's fold), one thread per output element."""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from .checks import check_1d, check_device, check_dtype, check_shape
from .launch import DeviceArray, Launch, launch_config


@cuda.jit(cache=True)
def _binary_same_kernel(a, b, out, multiply):
    j = cuda.grid(1)
    if j < out.size:
        row = j // out.shape[1]
        col = j - row * out.shape[1]
        if multiply:
            out[row, col] = a[row, col] * b[row, col]
        else:
            out[row, col] = a[row, col] + b[row, col]


@cuda.jit(cache=True)
def _binary_vector_kernel(a, b, out, multiply, b_step):
    """b is 1-D: a bias over the columns (b_step 1) or a single scalar (b_step 0)."""
    j = cuda.grid(1)
    if j < out.size:
        row = j // out.shape[1]
        col = j - row * out.shape[1]
        value = b[col * b_step]
        if multiply:
            out[row, col] = a[row, col] * value
        else:
            out[row, col] = a[row, col] + value


def _binary_launches(
    a: DeviceArray, b: DeviceArray, out: DeviceArray, multiply: bool
) -> list[Launch]:
    check_device(a, b, out)
    check_dtype(a, b, out)
    if len(a.shape) != 2:
        raise ValueError(f"add/multiply need a 2-D (rows, cols) operand a, got {a.shape}")
    check_shape("out", out, a.shape)
    rows, cols = a.shape
    blocks, threads = launch_config(rows * cols)
    if tuple(b.shape) == tuple(a.shape):
        arguments: tuple[Any, ...] = (a, b, out, multiply)
        return [Launch(_binary_same_kernel, blocks, threads, arguments)] if blocks else []
    if len(b.shape) != 1 or b.shape[0] not in (1, cols):
        raise ValueError(f"b must be {a.shape}, ({cols},) or (1,), got {b.shape}")
    step = 1 if b.shape[0] == cols else 0
    arguments = (a, b, out, multiply, step)
    return [Launch(_binary_vector_kernel, blocks, threads, arguments)] if blocks else []


def add_launches(a: DeviceArray, b: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = a + b; a, out 2-D (rows, cols); b the same shape, a bias (cols,) or a scalar (1,)."""
    return _binary_launches(a, b, out, False)


def multiply_launches(a: DeviceArray, b: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = a * b, broadcasting `b` like `add_launches`."""
    return _binary_launches(a, b, out, True)


# ---------------------------------------------------------------------------------------------
# relu, tanh, exp, sigmoid, accumulate


@cuda.jit(cache=True)
def _relu_kernel(x, out):
    j = cuda.grid(1)
    if j < out.size:
        value = x[j]
        if value <= 0:  # NaN compares false and stays NaN, like np.maximum(x, 0)
            out[j] = 0
        else:
            out[j] = value


@cuda.jit(cache=True)
def _tanh_kernel(x, out):
    j = cuda.grid(1)
    if j < out.size:
        out[j] = math.tanh(x[j])


@cuda.jit(cache=True)
def _exp_kernel(x, out):
    j = cuda.grid(1)
    if j < out.size:
        out[j] = math.exp(x[j])


@cuda.jit(cache=True)
def _sigmoid_kernel(x, out):
    """From e = e**-|x| (never overflows), as the CPU's `kernels.vecmath.sigmoid32`; the
    quotient in float64 (a Python 1 promotes it), rounded once when stored."""
    j = cuda.grid(1)
    if j < out.size:
        value = x[j]
        e = math.exp(-abs(value))
        out[j] = (1 if value >= 0 else e) / (1 + e)


@cuda.jit(cache=True)
def _accumulate_kernel(out, x):
    j = cuda.grid(1)
    if j < out.size:
        out[j] += x[j]


def _unary_launches(kernel: Any, first: DeviceArray, second: DeviceArray) -> list[Launch]:
    check_device(first, second)
    check_dtype(first, second)
    check_1d(first, second)
    blocks, threads = launch_config(first.shape[0])
    return [Launch(kernel, blocks, threads, (first, second))] if blocks else []


def relu_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = max(x, 0) on 1-D arrays; NaN stays NaN."""
    return _unary_launches(_relu_kernel, x, out)


def tanh_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = tanh(x) on 1-D arrays."""
    return _unary_launches(_tanh_kernel, x, out)


def exp_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = e**x on 1-D arrays."""
    return _unary_launches(_exp_kernel, x, out)


def sigmoid_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """out = 1 / (1 + e**-x) on 1-D arrays."""
    return _unary_launches(_sigmoid_kernel, x, out)


def accumulate_launches(out: DeviceArray, x: DeviceArray) -> list[Launch]:
    """out += x on 1-D arrays (add_n's fold step)."""
    return _unary_launches(_accumulate_kernel, out, x)
