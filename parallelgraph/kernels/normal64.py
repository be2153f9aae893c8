"""float64 normal random numbers at SIMD speed: the float64 counterpart of `kernels.normal32`.

The same Philox4x32-10 words (`normal32._philox_block`) and Box-Muller transform as
`kernels.random.normal_rows`, with the uniforms it makes for float64, done in blocks of `BLOCK`
groups of four numbers, each step one loop over the block that LLVM turns into AVX2 code
(four doubles a vector):

1. **uniforms**: the whole 32-bit word w, u = (w + 1/2) * 2**-32 in float64 — exact, so the
   same uniforms as the libm kernel and the float64 reference. w is converted as the signed
   int32 w - 2**31 (`vcvtdq2pd`; AVX2 has no unsigned or 64-bit integer to double conversion)
   plus 2**31, exactly.
2. **log** by its bits, fdlibm's `__ieee754_log`: u = 2**e * m with m in [sqrt(1/2), sqrt(2)),
   f = m - 1 (exact), s = f / (2 + f), log(m) = 2 atanh(s) = f - (f**2/2 - s (f**2/2 + R(s**2)))
   with R fdlibm's minimax polynomial of degree 7 in s**2 (the atanh series, refitted; within
   an ulp of log), and e ln 2 in two parts (ln2_hi has 20 trailing zero bits, so e * ln2_hi is
   exact). The double's bits are read through an int64 view of the block; e is converted
   through int32 (`vcvtdq2pd` again).
3. **sin and cos** of 2 pi u: the nearest quarter turn q = floor(4u + 1/2) and
   a = (4u - q) pi / 2 in [-pi/4, pi/4] (4u - q is exact); Cephes' double minimax polynomials
   of sin a and cos a there (degree 13 and 14, about an ulp); then the rotation by q pi / 2 is
   a swap and a sign pattern — no cancellation, and q is kept as a double so that every lane of
   the loop stays 64 bits wide.

No `fastmath`: every operation rounds as IEEE says, so the vector body and the scalar tail of a
loop give the same bits, and the numbers are the same however a row range is split (element j
depends only on (seed, j)). Against the float64 reference (`ops.sources.philox_normal_reference`,
NumPy's log/sin/cos) and the libm kernel they agree to a few ulp (the reference also rounds
2 pi u before its sin and cos, which this kernel never forms); the tests' tolerance is 1e-13.
They are no longer bit-equal to the GPU kernel (`kernels.gpu`, CUDA's libm), only as close.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .bounds import check_range
from .normal32 import _philox_block, _scale, _store_block

#: Groups of four numbers per block: the float64 scratch arrays (~70 KB) stay in L2.
BLOCK = 512

_UNIFORM_SCALE = 2.0**-32
_UNIFORM_OFFSET = 2.0**31 + 0.5  # undoes the int32 shift of the word and adds the half
_SIGN_BIT = np.uint32(0x80000000)
_EXPONENT_BIAS = 1023
_MANTISSA_MASK = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_SQRT2_BITS = 0x3FF6A09E667F3BCD  # sqrt(2) rounded: above it, m / 2 and e + 1
_HALF_MANTISSA = 0x0010000000000000  # subtracting it from m's bits halves m
# fdlibm e_log.c
_LN2_HI = 6.93147180369123816490e-01  # 0x3FE62E42FEE00000
_LN2_LO = 1.90821492927058770002e-10  # 0x3DEA39EF35793C76
_LG1, _LG2, _LG3, _LG4 = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
)
_LG5, _LG6, _LG7 = 1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01
_HALF_PI = math.pi / 2
# Cephes sin.c: sin a = a + a z P(z), cos a = 1 - z / 2 + z**2 Q(z), z = a**2, |a| <= pi/4
_S0, _S1, _S2, _S3, _S4, _S5 = (
    1.58962301576546568060e-10,
    -2.50507477628578072866e-8,
    2.75573136213857245213e-6,
    -1.98412698295895385996e-4,
    8.33333333332211858878e-3,
    -1.66666666666666307295e-1,
)
_C0, _C1, _C2, _C3, _C4, _C5 = (
    -1.13585365213876817300e-11,
    2.08757008419747316778e-9,
    -2.75573141792967388112e-7,
    2.48015872888517045348e-5,
    -1.38888888888730564116e-3,
    4.16666666666665929218e-2,
)


@njit(nogil=True, cache=True, error_model="numpy")
def _uniforms(word, out, count):
    """(w + 1/2) * 2**-32 in float64 for the uint32 words w: in (0, 1), exact."""
    for i in range(count):
        shifted = np.int32(word[i] ^ _SIGN_BIT)  # w - 2**31 as a signed int: converts in SIMD
        out[i] = (np.float64(shifted) + _UNIFORM_OFFSET) * _UNIFORM_SCALE


@njit(nogil=True, cache=True, error_model="numpy")
def _split(bits, mantissa_bits, count):
    """u = 2**e * m with m in [sqrt(1/2), sqrt(2)), from u's bits (`bits`, an int64 view of the
    uniforms): writes m's bits to `mantissa_bits` (read back through a float64 view) and e over
    `bits` (the uniforms are not needed after)."""
    for i in range(count):
        b = bits[i]
        exponent = (b >> 52) - _EXPONENT_BIAS
        mantissa = (b & _MANTISSA_MASK) | _ONE_BITS
        high = mantissa > _SQRT2_BITS
        mantissa_bits[i] = mantissa - _HALF_MANTISSA if high else mantissa
        bits[i] = exponent + 1 if high else exponent


@njit(nogil=True, cache=True, error_model="numpy")
def _log_to_radius(mantissa, exponent, out, count):
    """out = sqrt(-2 log u) = sqrt(-2 (e ln 2 + log m)) from the split of `_split`."""
    for i in range(count):
        f = mantissa[i] - 1.0
        s = f / (2.0 + f)
        z = s * s
        w = z * z
        r = w * (_LG2 + w * (_LG4 + w * _LG6)) + z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
        half_f2 = 0.5 * f * f
        e = np.float64(np.int32(exponent[i]))  # |e| <= 33: int32 converts in SIMD, int64 not
        log_u = e * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + e * _LN2_LO)) - f)
        out[i] = math.sqrt(-2.0 * log_u)


@njit(nogil=True, cache=True, error_model="numpy")
def _sincos(u, sin_out, cos_out, count):
    """sin and cos of 2 pi u for u in (0, 1) (see the module docstring)."""
    for i in range(count):
        t = u[i] * 4.0
        quarter = np.floor(t + 0.5)  # 0 .. 4 as a double (math.floor: an int64, scalar code)
        a = (t - quarter) * _HALF_PI
        z = a * a
        sin_a = a + a * z * (_S5 + z * (_S4 + z * (_S3 + z * (_S2 + z * (_S1 + z * _S0)))))
        cos_a = (
            1.0 - 0.5 * z + z * z * (_C5 + z * (_C4 + z * (_C3 + z * (_C2 + z * (_C1 + z * _C0)))))
        )
        # q pi/2 turns (cos a, sin a) into (sin, cos): q0 and q4 (s, c), q1 (c, -s), q2 (-s, -c),
        # q3 (-c, s)
        odd = quarter == 1.0 or quarter == 3.0
        sign_s = -1.0 if (quarter == 2.0 or quarter == 3.0) else 1.0
        sign_c = -1.0 if (quarter == 1.0 or quarter == 2.0) else 1.0
        sin_out[i] = sign_s * (cos_a if odd else sin_a)
        cos_out[i] = sign_c * (sin_a if odd else cos_a)


@njit(nogil=True, cache=True, error_model="numpy")
def normal_rows64(out, seed, mean, stddev, row_start, row_stop):
    """Fill rows [row_start, row_stop) of the C-contiguous 2-D float64 `out` with normal
    numbers: element j of the flattened array is what `kernels.random.normal_rows` computes for
    it, to a few float64 ulp (see the module docstring).

    The driver loop is normal32's, step for step, with the float64 steps: not one function
    taking the steps as arguments, because Numba does not cache a function whose arguments
    are other jitted functions, and a fresh process would compile these kernels again.
    """
    check_range(row_start, row_stop, out.shape[0])
    columns = out.shape[1]
    flat_start = row_start * columns
    flat_stop = row_stop * columns
    if flat_start >= flat_stop:
        return
    flat = out.reshape(-1)
    key = np.uint64(seed)
    mean64, stddev64 = np.float64(mean), np.float64(stddev)
    words = np.empty((4, BLOCK), dtype=np.uint32)
    u1 = np.empty(BLOCK, dtype=np.float64)
    u2 = np.empty(BLOCK, dtype=np.float64)
    split = np.empty(BLOCK, dtype=np.int64)
    radius = np.empty(BLOCK, dtype=np.float64)
    sines = np.empty(BLOCK, dtype=np.float64)
    cosines = np.empty(BLOCK, dtype=np.float64)
    pairs = np.empty((4, BLOCK), dtype=np.float64)
    normals = np.empty(4 * BLOCK, dtype=np.float64)
    u1_bits = u1.view(np.int64)
    split_f = split.view(np.float64)
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
            _scale(radius, cosines, sines, mean64, stddev64, first, second, count)
        _store_block(pairs, normals, flat, block_start, count, flat_start, flat_stop)
