"""Counter-based normal random numbers: Philox4x32-10 and the Box-Muller transform.

Element `j` (in C order) of `random_normal(shape, seed)` is a pure function of (seed, j):
Philox4x32-10 (Salmon et al., SC'11; the generator of cuRAND, JAX and TensorFlow's stateless
ops) maps the counter `j // 4` and the 64-bit key `seed` to four 32-bit words, and Box-Muller
turns each pair into two normals (computed in the output's precision). So the numbers never
depend on how the op is sharded or which thread computes which rows, and a GPU kernel with the
same integer arithmetic reproduces them. All integer arithmetic is done in uint64 with explicit
masks: mixing uint64 with Python ints would make Numba fall back to float64.

`normal_rows` here is the plain kernel (one group at a time, libm's log, sin and cos): the
definition of the numbers, like the GPU kernel. The op runs the vectorized `kernels.normal32`
(float32) and `kernels.normal64` (float64), which compute the same numbers to float rounding
(float64: a few ulp) at ~6x the speed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .bounds import check_range

PHILOX_MASK32 = np.uint64(0xFFFFFFFF)
PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint64(0x9E3779B9)
PHILOX_W1 = np.uint64(0xBB67AE85)
PHILOX_SHIFT = np.uint64(32)


@njit(nogil=True, cache=True, inline="always")
def philox4x32(counter, key):
    """Ten Philox rounds on the 64-bit `counter` with the 64-bit `key`; four uint32 words."""
    c0 = counter & PHILOX_MASK32
    c1 = counter >> PHILOX_SHIFT
    c2 = np.uint64(0)
    c3 = np.uint64(0)
    k0 = key & PHILOX_MASK32
    k1 = key >> PHILOX_SHIFT
    for _ in range(10):
        product0 = PHILOX_M0 * c0
        product1 = PHILOX_M1 * c2
        hi0, lo0 = product0 >> PHILOX_SHIFT, product0 & PHILOX_MASK32
        hi1, lo1 = product1 >> PHILOX_SHIFT, product1 & PHILOX_MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + PHILOX_W0) & PHILOX_MASK32
        k1 = (k1 + PHILOX_W1) & PHILOX_MASK32
    return c0, c1, c2, c3


def normal_constants(dtype: np.dtype, mean: float, stddev: float) -> tuple[np.ndarray, np.uint64]:
    """Per-dtype constants for `normal_rows`, as an array of the output dtype, and the shift.

    float32 outputs use 24-bit uniforms and float32 libm (about 2x faster than float64 here);
    float64 outputs use the full 32-bit words and float64 libm. Passing the constants as an
    array of the output dtype keeps every operation in that precision: a Python float literal
    would silently promote float32 arithmetic to float64 in Numba.
    """
    bits = 24 if np.dtype(dtype) == np.float32 else 32
    values = [0.5, 2.0**-bits, -2.0, 2.0 * math.pi, mean, stddev]
    return np.array(values, dtype=dtype), np.uint64(32 - bits)


@njit(nogil=True, cache=True)
def normal_rows(out, seed, constants, shift, row_start, row_stop):
    """Fill rows [row_start, row_stop) of the C-contiguous 2-D `out` with normal numbers.

    `constants` and `shift` come from `normal_constants(out.dtype, mean, stddev)`.
    """
    check_range(row_start, row_stop, out.shape[0])
    flat = out.reshape(-1)
    flat_start = row_start * out.shape[1]
    flat_stop = row_stop * out.shape[1]
    if flat_start >= flat_stop:
        return
    half, scale, minus_two, two_pi, mean, stddev = constants
    words = np.empty(4, dtype=out.dtype)  # storing into it converts uint32 -> out.dtype
    normals = np.empty(4, dtype=out.dtype)
    key = np.uint64(seed)
    for group in range(flat_start // 4, (flat_stop - 1) // 4 + 1):
        w0, w1, w2, w3 = philox4x32(np.uint64(group), key)
        words[0], words[1], words[2], words[3] = w0 >> shift, w1 >> shift, w2 >> shift, w3 >> shift
        for pair in range(2):
            u1 = (words[2 * pair] + half) * scale
            u2 = (words[2 * pair + 1] + half) * scale
            radius = math.sqrt(minus_two * math.log(u1))
            angle = two_pi * u2
            normals[2 * pair] = mean + stddev * (radius * math.cos(angle))
            normals[2 * pair + 1] = mean + stddev * (radius * math.sin(angle))
        base = group * 4
        for lane in range(4):
            if flat_start <= base + lane < flat_stop:
                flat[base + lane] = normals[lane]
