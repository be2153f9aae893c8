"""random_normal on the GPU: Philox4x32-10 and Box-Muller, as `parallelgraph.kernels.random`
computes them on the CPU (uint64 arithmetic throughout)."""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..random import PHILOX_M0, PHILOX_M1, PHILOX_MASK32, PHILOX_SHIFT, PHILOX_W0, PHILOX_W1
from .checks import check_device, check_dtype
from .launch import DeviceArray, Launch, launch_config

_MASK64 = 0xFFFFFFFFFFFFFFFF
# Philox4x32-10 constants, shared with the CPU kernel (uint64, so every operation stays uint64).
_ZERO64 = np.uint64(0)


@cuda.jit(device=True)
def _philox4x32(counter, key):
    """Ten Philox rounds on the uint64 `counter` with the uint64 `key`: four words (as uint64).

    The same uint64 arithmetic as `parallelgraph.kernels.random.philox4x32`: 32 x 32-bit
    products in 64 bits, explicit masks, the Weyl key schedule.
    """
    c0 = counter & PHILOX_MASK32
    c1 = counter >> PHILOX_SHIFT
    c2 = _ZERO64
    c3 = _ZERO64
    k0 = key & PHILOX_MASK32
    k1 = key >> PHILOX_SHIFT
    for _ in range(10):
        product0 = PHILOX_M0 * c0
        product1 = PHILOX_M1 * c2
        hi0 = product0 >> PHILOX_SHIFT
        lo0 = product0 & PHILOX_MASK32
        hi1 = product1 >> PHILOX_SHIFT
        lo1 = product1 & PHILOX_MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + PHILOX_W0) & PHILOX_MASK32
        k1 = (k1 + PHILOX_W1) & PHILOX_MASK32
    return c0, c1, c2, c3


@cuda.jit(device=True)
def _box_muller(u1, u2, minus_two, two_pi):
    """Two standard normals from two uniforms in (0, 1), in the uniforms' precision."""
    radius = math.sqrt(minus_two * math.log(u1))
    angle = two_pi * u2
    return radius * math.cos(angle), radius * math.sin(angle)


@cuda.jit(cache=True)
def _normal_kernel(out, key, shift, scale, mean, stddev):
    """Thread g fills out[4g : 4g + 4] from Philox(counter g, key)."""
    group = cuda.grid(1)
    size = out.size
    base = group * 4
    if base >= size:
        return
    w0, w1, w2, w3 = _philox4x32(np.uint64(group), key)
    # Words -> the output dtype first (exact: they have at most 24 / 32 bits), then all the
    # arithmetic in that dtype, as the CPU kernel does.
    half = out.dtype.type(0.5)
    minus_two = out.dtype.type(-2.0)
    two_pi = out.dtype.type(2.0 * math.pi)
    u0 = (out.dtype.type(w0 >> shift) + half) * scale
    u1 = (out.dtype.type(w1 >> shift) + half) * scale
    u2 = (out.dtype.type(w2 >> shift) + half) * scale
    u3 = (out.dtype.type(w3 >> shift) + half) * scale
    z0, z1 = _box_muller(u0, u1, minus_two, two_pi)
    z2, z3 = _box_muller(u2, u3, minus_two, two_pi)
    out[base] = mean + stddev * z0
    if base + 1 < size:
        out[base + 1] = mean + stddev * z1
    if base + 2 < size:
        out[base + 2] = mean + stddev * z2
    if base + 3 < size:
        out[base + 3] = mean + stddev * z3


def random_normal_launches(out: DeviceArray, seed: int, mean: float, stddev: float) -> list[Launch]:
    """Fill the 1-D `out` with mean + stddev * N(0, 1) from Philox4x32-10 keyed by `seed`.

    Element j is the number `parallelgraph.kernels.random.normal_rows` computes for flat index
    j (up to libm and FMA rounding): counter j // 4, 64-bit key `seed` (taken modulo 2**64),
    uniforms from the top 24 (float32) or 32 (float64) bits of each word.
    """
    check_device(out)
    dtype = check_dtype(out)
    if len(out.shape) != 1:
        raise ValueError(f"random_normal needs a 1-D (flattened) out, got {out.shape}")
    count = out.shape[0]
    if count == 0:
        return []
    bits = 24 if dtype == np.float32 else 32
    cast = dtype.type
    arguments = (
        out,
        np.uint64(int(seed) & _MASK64),
        np.uint64(32 - bits),
        cast(2.0**-bits),
        cast(mean),
        cast(stddev),
    )
    return [Launch(_normal_kernel, *launch_config((count + 3) // 4), arguments)]
