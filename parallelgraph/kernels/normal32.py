"""float32 normal random numbers at SIMD speed: the same Philox4x32-10 words and Box-Muller
transform as `kernels.random`, written so that LLVM vectorizes every step.

`kernels.random.normal_rows` computes one group of four numbers at a time and calls libm's
`log`, `sin` and `cos` for each pair: ~15 ns a number, scalar code. Here a row range is done
in blocks of `BLOCK` groups, each step one loop over the block that LLVM turns into AVX2 code:

1. **Philox**: ten rounds per counter, the 32 x 32 -> 64-bit products as uint64 multiplies of
   masked operands (`vpmuludq`); the keys' round updates are the same for every lane.
2. **uniforms**: the top 24 bits of a word, (n + 0.5) * 2**-24 in float32, exactly as before.
3. **log** by its bits: u = 2**e * m with m in [sqrt(1/2), sqrt(2)), then
   log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, as an odd polynomial to s**9;
   the float's bits are read through an int32 view of the block (no libm, no branches).
4. **sin and cos** of 2 pi u: the quarter turn q = floor(4u) and a = (4u - q - 1/2) pi / 2 in
   [-pi/4, pi/4) exact to rounding; Cephes' minimax polynomials of sin a and cos a there;
   then the rotation by (q + 1/2) pi / 2 is a sign pattern on cos a + sin a and cos a - sin a.

No `fastmath`: every float operation rounds as IEEE says, so the vector body and the scalar
tail of a loop give the same bits, and the numbers are the same however a row range is split
(element j depends only on (seed, j), as before). Against the float64 reference
(`ops.sources.philox_normal_reference`) and the libm kernel they agree to about 2e-7; the float32
tolerance of the tests is 1e-5. float64 outputs have their own vectorized kernel,
`kernels.normal64`, built from the same steps (it imports `_philox_block`, `_scale` and
`_store_block` from here).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .random import PHILOX_M0, PHILOX_M1, PHILOX_MASK32, PHILOX_SHIFT, PHILOX_W0, PHILOX_W1

#: Groups of four numbers per block: the scratch arrays (a few KB) stay in L1.
BLOCK = 1024

_F = np.float32
_UNIFORM_SCALE = _F(2.0**-24)
_HALF = _F(0.5)
_SQRT_HALF = _F(math.sqrt(0.5))
_LN2_HI = _F(0.693145751953125)  # ln 2 split so that e * _LN2_HI is exact for |e| < 2**9
_LN2_LO = _F(math.log(2.0) - 0.693145751953125)
_HALF_PI = _F(math.pi / 2)
_ONE, _TWO, _MINUS_TWO = _F(1.0), _F(2.0), _F(-2.0)
# 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + s^7/7 + s^9/9)
_L3, _L5, _L7, _L9 = _F(2 / 3), _F(2 / 5), _F(2 / 7), _F(2 / 9)
# sin a and cos a on [-pi/4, pi/4]: the minimax polynomials of Cephes' sinf and cosf (degree 7
# and 8, within an ulp of float32 there)
_S3, _S5, _S7 = _F(-1.6666654611e-1), _F(8.3321608736e-3), _F(-1.9515295891e-4)
_C2, _C4, _C6, _C8 = (
    _F(-0.5),
    _F(4.166664568298827e-2),
    _F(-1.388731625493765e-3),
    _F(2.443315711809948e-5),
)


@njit(nogil=True, cache=True, error_model="numpy")
def _philox_block(first, count, key, words):
    """Philox4x32-10 of counters first .. first + count - 1: words[k, i] is word k of counter
    first + i (as uint32)."""
    k0_start = key & PHILOX_MASK32
    k1_start = key >> PHILOX_SHIFT
    for i in range(count):
        counter = np.uint64(first + i)
        c0 = counter & PHILOX_MASK32
        c1 = counter >> PHILOX_SHIFT
        c2 = np.uint64(0)
        c3 = np.uint64(0)
        k0 = k0_start
        k1 = k1_start
        for _ in range(10):
            product0 = PHILOX_M0 * c0
            product1 = PHILOX_M1 * c2
            c0, c1, c2, c3 = (
                (product1 >> PHILOX_SHIFT) ^ c1 ^ k0,
                product1 & PHILOX_MASK32,
                (product0 >> PHILOX_SHIFT) ^ c3 ^ k1,
                product0 & PHILOX_MASK32,
            )
            k0 = (k0 + PHILOX_W0) & PHILOX_MASK32
            k1 = (k1 + PHILOX_W1) & PHILOX_MASK32
        words[0, i] = np.uint32(c0)
        words[1, i] = np.uint32(c1)
        words[2, i] = np.uint32(c2)
        words[3, i] = np.uint32(c3)


@njit(nogil=True, cache=True, error_model="numpy")
def _uniforms(word, out, count):
    """(top 24 bits + 1/2) * 2**-24 in float32: in (0, 1), as `kernels.random` makes them."""
    for i in range(count):
        top = np.int32(word[i] >> np.uint32(8))  # < 2**24: a signed int converts in SIMD
        out[i] = (_F(top) + _HALF) * _UNIFORM_SCALE


@njit(nogil=True, cache=True, error_model="numpy")
def _split(bits, mantissa_bits, count):
    """u = 2**e * m with m in [sqrt(1/2), sqrt(2)), from u's bits (`bits`, an int32 view of the
    uniforms): writes m's bits to `mantissa_bits` (read back through a float32 view) and e over
    `bits` (the uniforms are not needed after)."""
    for i in range(count):
        b = bits[i]
        exponent = (b >> 23) - 127
        mantissa = (b & 0x007FFFFF) | 0x3F800000
        high = mantissa > 0x3FB504F3  # m > sqrt(2): use m / 2 and exponent + 1
        mantissa_bits[i] = mantissa - 0x00800000 if high else mantissa
        bits[i] = exponent + 1 if high else exponent


@njit(nogil=True, cache=True, error_model="numpy")
def _log_to_radius(mantissa, exponent, out, count):
    """out = sqrt(-2 log u) = sqrt(-2 (e ln 2 + log m)) from the split of `_split`."""
    for i in range(count):
        m = mantissa[i]
        s = (m - _ONE) / (m + _ONE)
        s2 = s * s
        log_m = s * (_TWO + s2 * (_L3 + s2 * (_L5 + s2 * (_L7 + s2 * _L9))))
        e = _F(exponent[i])
        log_u = e * _LN2_HI + (e * _LN2_LO + log_m)
        out[i] = math.sqrt(_MINUS_TWO * log_u)


@njit(nogil=True, cache=True, error_model="numpy")
def _sincos(u, sin_out, cos_out, count):
    """sin and cos of 2 pi u for u in (0, 1) (see the module docstring)."""
    for i in range(count):
        t = u[i] * _F(4.0)
        quarter = np.int32(t)  # t >= 0: truncation is floor
        a = (t - _F(quarter) - _HALF) * _HALF_PI
        a2 = a * a
        sin_a = a + a * a2 * (_S3 + a2 * (_S5 + a2 * _S7))
        cos_a = _ONE + a2 * (_C2 + a2 * (_C4 + a2 * (_C6 + a2 * _C8)))
        plus = _SQRT_HALF * (cos_a + sin_a)
        minus = _SQRT_HALF * (cos_a - sin_a)
        # (q + 1/2) pi/2 turns (cos a, sin a) into: q0 (A, B), q1 (B, -A), q2 (-A, -B), q3 (-B, A)
        # as (sin, cos) with A = plus, B = minus
        odd = (quarter & 1) == 1
        sign_s = _F(-1.0) if quarter >= 2 else _ONE
        sign_c = _F(-1.0) if (quarter == 1 or quarter == 2) else _ONE
        sin_out[i] = sign_s * (minus if odd else plus)
        cos_out[i] = sign_c * (plus if odd else minus)


@njit(nogil=True, cache=True, error_model="numpy")
def _scale(radius, cosines, sines, mean, stddev, first, second, count):
    """The pair's two numbers: mean + stddev * r cos, mean + stddev * r sin."""
    for i in range(count):
        first[i] = mean + stddev * (radius[i] * cosines[i])
        second[i] = mean + stddev * (radius[i] * sines[i])


@njit(nogil=True, cache=True, error_model="numpy")
def _interleave(pairs, target, offset, count):
    """target[offset + 4 i + k] = pairs[k, i]: the numbers in counter order. The indices are
    unsigned: Numba adds no negative-index wraparound to them, and only then does LLVM turn
    the four strided stores into shuffles and whole-vector stores (2-3x faster)."""
    first, second, third, fourth = pairs[0], pairs[1], pairs[2], pairs[3]
    start = np.uint64(offset)
    for i in range(np.uint64(count)):
        j = start + np.uint64(4) * i
        target[j] = first[i]
        target[j + np.uint64(1)] = second[i]
        target[j + np.uint64(2)] = third[i]
        target[j + np.uint64(3)] = fourth[i]


@njit(nogil=True, cache=True, error_model="numpy")
def _store_block(pairs, normals, flat, block_start, count, flat_start, flat_stop):
    """Write the block's numbers (`pairs`, groups block_start ..) into flat[flat_start:flat_stop]
    in counter order, through the scratch `normals` where the block sticks out of the range.
    Shared with `kernels.normal64` (any float dtype)."""
    base = block_start * 4
    if flat_start <= base and base + 4 * count <= flat_stop:
        _interleave(pairs, flat, base, count)  # a whole block: straight into the output
    else:  # the first or last block of the range: only part of it is ours
        _interleave(pairs, normals, 0, count)
        low = max(flat_start, base)
        high = min(flat_stop, base + 4 * count)
        flat[low:high] = normals[low - base : high - base]


@njit(nogil=True, cache=True, error_model="numpy")
def normal_rows32(out, seed, mean, stddev, row_start, row_stop):
    """Fill rows [row_start, row_stop) of the C-contiguous 2-D float32 `out` with normal
    numbers: element j of the flattened array is the same as `kernels.random.normal_rows`
    computes for it, to float32 rounding (see the module docstring)."""
    if row_start < 0 or row_stop > out.shape[0] or row_start > row_stop:
        raise IndexError("normal_rows32: row range outside the array")
    columns = out.shape[1]
    flat_start = row_start * columns
    flat_stop = row_stop * columns
    if flat_start >= flat_stop:
        return
    flat = out.reshape(-1)
    key = np.uint64(seed)
    mean32, stddev32 = _F(mean), _F(stddev)
    words = np.empty((4, BLOCK), dtype=np.uint32)
    u1 = np.empty(BLOCK, dtype=np.float32)
    u2 = np.empty(BLOCK, dtype=np.float32)
    split = np.empty(BLOCK, dtype=np.int32)
    radius = np.empty(BLOCK, dtype=np.float32)
    sines = np.empty(BLOCK, dtype=np.float32)
    cosines = np.empty(BLOCK, dtype=np.float32)
    pairs = np.empty((4, BLOCK), dtype=np.float32)
    normals = np.empty(4 * BLOCK, dtype=np.float32)
    u1_bits = u1.view(np.int32)
    split_f = split.view(np.float32)
    first_group = flat_start // 4
    last_group = (flat_stop - 1) // 4
    for block_start in range(first_group, last_group + 1, BLOCK):
        count = min(BLOCK, last_group + 1 - block_start)
        _philox_block(block_start, count, key, words)
        for pair in range(2):  # words (0, 1) -> numbers 0, 1; words (2, 3) -> numbers 2, 3
            _uniforms(words[2 * pair], u1, count)
            _uniforms(words[2 * pair + 1], u2, count)
            _split(u1_bits, split, count)  # split: m's bits; u1_bits: now the exponents
            _log_to_radius(split_f, u1_bits, radius, count)
            _sincos(u2, sines, cosines, count)
            first, second = pairs[2 * pair], pairs[2 * pair + 1]
            _scale(radius, cosines, sines, mean32, stddev32, first, second, count)
        _store_block(pairs, normals, flat, block_start, count, flat_start, flat_stop)
