"""Vectorized erf, erfc and the exact GELU, float32 and float64, as straight-line code (see
`vecmath` for the building blocks and why such code is bit-identical however rows are split).

`math.erf` inside `@njit` is a libm call per element (~13-15 ns an element here, and the GELU
of a BERT layer is mostly that). These compute fdlibm's `s_erf.c` algorithm — its regions and
its rational approximations (Sun Microsystems' coefficients, errors below 2**-57) — with every
region evaluated for every element and the answer chosen by selects, so the row loop is one
vector loop:

- |x| < 0.84375: erf x = x + x P(x**2) / Q(x**2);
- 0.84375 <= |x| < 1.25: erf |x| = erx + P(s) / Q(s), s = |x| - 1 (erx = 0.845062911510467529297);
- |x| >= 1.25: erfc |x| = exp(-z**2 - 0.5625) exp((z - |x|)(z + |x|) + R(s) / S(s)) / |x|,
  s = 1 / x**2, with R/S's coefficients chosen by |x| < 1/0.35, z = |x| with the low 32 bits of
  its mantissa cleared (so z**2 is exact); |x| is clamped to 28, where erfc is 0 and erf 1.

Three divisions in all (they bound the loop): the rationals share one (each region's numerator
and denominator are selected first), 1 / |x| gives s as its square and divides the tail as a
product, and the exponential's Pade form has one. The two exponentials are one
(`_exp_of_sum64`): -z**2 - 0.5625 is exact, so the range reduction takes it exactly and adds
the small part after, which keeps fdlibm's accuracy.
erfc, and so the GELU's negative tail, keeps its relative precision down to the subnormals.

float32 is computed in float64 and rounded once (within 0.5 ulp and a hair): that is what the
scalar `math.erf` path did too, at 8 lanes instead of one call. GELU is x * erfc(-x / sqrt 2) / 2.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .vecmath import (
    _D_EP0,
    _D_EP1,
    _D_EP2,
    _D_EQ0,
    _D_EQ1,
    _D_EQ2,
    _D_EQ3,
    _D_LN2_HI,
    _D_LN2_LO,
    _D_LOG2E,
    _D_ROUND,
    _D_ROUND_BITS,
    _bits_to_float64,
    _by_dtype,
    _float_bits,
    _map_rows,
    _select,
    _times_pow2_64,
    fma,
)

_ERX = 8.45062911510467529297e-01
_SMALL, _MIDDLE, _FAR, _CLAMP = 0.84375, 1.25, 1 / 0.35, 28.0
_HIGH_WORD = np.int64(-(1 << 32))  # clears the low 32 bits of a float64's bits
_PP = (
    1.28379167095512558561e-01,
    -3.25042107247001499370e-01,
    -2.84817495755985104766e-02,
    -5.77027029648944159157e-03,
    -2.37630166566501626084e-05,
)
_QQ = (
    1.0,
    3.97917223959155352819e-01,
    6.50222499887672944485e-02,
    5.08130628187576562776e-03,
    1.32494738004321644526e-04,
    -3.96022827877536812320e-06,
)
_PA = (
    -2.36211856075265944077e-03,
    4.14856118683748331666e-01,
    -3.72207876035701323847e-01,
    3.18346619901161753674e-01,
    -1.10894694282396677476e-01,
    3.54783043256182359371e-02,
    -2.16637559486879084300e-03,
)
_QA = (
    1.0,
    1.06420880400844228286e-01,
    5.40397917702171048937e-01,
    7.18286544141962662868e-02,
    1.26171219808761642112e-01,
    1.36370839120290507362e-02,
    1.19844998467991074170e-02,
)
_RA = (
    -9.86494403484714822705e-03,
    -6.93858572707181764372e-01,
    -1.05586262253232909814e01,
    -6.23753324503260060396e01,
    -1.62396669462573470355e02,
    -1.84605092906711035994e02,
    -8.12874355063065934246e01,
    -9.81432934416914548592e00,
)
_SA = (
    1.0,
    1.96512716674392571292e01,
    1.37657754143519042600e02,
    4.34565877475229228821e02,
    6.45387271733267880336e02,
    4.29008140027567833386e02,
    1.08635005541779435134e02,
    6.57024977031928170135e00,
    -6.04244152148580987438e-02,
)
# [1/0.35, 28): R has degree 6 and S degree 7; a zero pads them to the degrees of RA and SA
_RB = (
    -9.86494292470009928597e-03,
    -7.99283237680523006574e-01,
    -1.77579549177547519889e01,
    -1.60636384855821916062e02,
    -6.37566443368389627722e02,
    -1.02509513161107724954e03,
    -4.83519191608651397019e02,
    0.0,
)
_SB = (
    1.0,
    3.03380607434824582924e01,
    3.25792512996573918826e02,
    1.53672958608443695994e03,
    3.19985821950859553908e03,
    2.55305040643316442583e03,
    4.74528541206955367215e02,
    -2.24409524465858183362e01,
    0.0,
)
(_PP0, _PP1, _PP2, _PP3, _PP4) = _PP
(_QQ0, _QQ1, _QQ2, _QQ3, _QQ4, _QQ5) = _QQ
(_PA0, _PA1, _PA2, _PA3, _PA4, _PA5, _PA6) = _PA
(_QA0, _QA1, _QA2, _QA3, _QA4, _QA5, _QA6) = _QA
(_RA0, _RA1, _RA2, _RA3, _RA4, _RA5, _RA6, _RA7) = _RA
(_SA0, _SA1, _SA2, _SA3, _SA4, _SA5, _SA6, _SA7, _SA8) = _SA
(_RB0, _RB1, _RB2, _RB3, _RB4, _RB5, _RB6, _RB7) = _RB
(_SB0, _SB1, _SB2, _SB3, _SB4, _SB5, _SB6, _SB7, _SB8) = _SB


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _exp_of_sum64(u, v):
    """e**(u + v) for u exact (a multiple of 2**-40 here, |u| < 800) and |v| < 1: n from the
    rounded sum, r = (u - n ln 2) + v with u - n HI exact, then `vecmath`'s Pade form."""
    t = fma(u + v, _D_LOG2E, _D_ROUND)
    fn = t - _D_ROUND
    r = fma(fn, -_D_LN2_LO, fma(fn, -_D_LN2_HI, u)) + v
    rr = r * r
    px = r * fma(fma(_D_EP2, rr, _D_EP1), rr, _D_EP0)
    qx = fma(fma(_D_EQ3, rr, _D_EQ2), rr * rr, fma(_D_EQ1, rr, _D_EQ0))
    return _times_pow2_64(fma(2.0, px / (qx - px), 1.0), _float_bits(t) - _D_ROUND_BITS)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _pick(far, a, b):
    return _select(far, b, a)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _erf_parts64(x):
    """(erf x, erfc x) of one float64, NaN for NaN (see the module docstring)."""
    a = abs(x)
    a = _select(a < _CLAMP, a, _CLAMP)  # NaN: clamped too, replaced by the callers
    small, middle = a < _SMALL, a < _MIDDLE
    # |x| < 0.84375: P(z) / Q(z), z = x**2
    z = x * x
    zz = z * z
    num_a = fma(fma(_PP4, z, _PP3), zz, fma(_PP2, z, _PP1)) * z + _PP0
    den_a = fma(fma(_QQ5, z, _QQ4), zz, fma(_QQ3, z, _QQ2)) * zz + fma(_QQ1, z, _QQ0)
    # 0.84375 <= |x| < 1.25: P(s) / Q(s), s = |x| - 1
    s = a - 1.0
    ss = s * s
    s3 = ss * s
    num_b = fma(
        fma(fma(_PA6, s, _PA5), ss, fma(_PA4, s, _PA3)), s3, fma(fma(_PA2, s, _PA1), s, _PA0)
    )
    den_b = fma(
        fma(fma(_QA6, s, _QA5), ss, fma(_QA4, s, _QA3)), s3, fma(fma(_QA2, s, _QA1), s, _QA0)
    )
    # |x| >= 1.25: R(w) / S(w), w = 1 / x**2, coefficients by |x| < 1/0.35
    far = a >= _FAR
    inverse = 1.0 / a
    w = inverse * inverse
    ww = w * w
    w4 = ww * ww
    num_c = fma(
        fma(
            fma(_pick(far, _RA7, _RB7), w, _pick(far, _RA6, _RB6)),
            ww,
            fma(_pick(far, _RA5, _RB5), w, _pick(far, _RA4, _RB4)),
        ),
        w4,
        fma(
            fma(_pick(far, _RA3, _RB3), w, _pick(far, _RA2, _RB2)),
            ww,
            fma(_pick(far, _RA1, _RB1), w, _pick(far, _RA0, _RB0)),
        ),
    )
    den_c = fma(
        _pick(far, _SA8, _SB8) * w4,
        w4,
        fma(
            fma(
                fma(_pick(far, _SA7, _SB7), w, _pick(far, _SA6, _SB6)),
                ww,
                fma(_pick(far, _SA5, _SB5), w, _pick(far, _SA4, _SB4)),
            ),
            w4,
            fma(
                fma(_pick(far, _SA3, _SB3), w, _pick(far, _SA2, _SB2)),
                ww,
                fma(_pick(far, _SA1, _SB1), w, 1.0),
            ),
        ),
    )
    ratio = _select(small, num_a, _select(middle, num_b, num_c)) / _select(
        small, den_a, _select(middle, den_b, den_c)
    )
    # the regions' answers
    negative = x < 0.0
    erf_a = fma(x, ratio, x)
    erfc_a = _select(x < 0.25, 1.0 - erf_a, 0.5 - (x * ratio + (x - 0.5)))
    erf_b = _select(negative, -_ERX - ratio, _ERX + ratio)
    erfc_b = _select(negative, 1.0 + (_ERX + ratio), (1.0 - _ERX) - ratio)
    zc = _bits_to_float64(_float_bits(a) & _HIGH_WORD)
    tail = _exp_of_sum64(-zc * zc - 0.5625, fma(zc - a, zc + a, ratio)) * inverse  # erfc |x|
    erf_c = _select(negative, tail - 1.0, 1.0 - tail)
    erfc_c = _select(negative, 2.0 - tail, tail)
    erf = _select(small, erf_a, _select(middle, erf_b, erf_c))
    erfc = _select(small, erfc_a, _select(middle, erfc_b, erfc_c))
    return erf, erfc


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def erf64(x):
    """erf of one float64."""
    value, _ = _erf_parts64(x)
    return _select(x != x, x + x, value)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def erf32(x):
    """erf of one float32: the float64 value rounded once."""
    return np.float32(erf64(np.float64(x)))


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def erfc64(x):
    """erfc of one float64 (relative precision in the tail, down to the subnormals)."""
    _, value = _erf_parts64(x)
    return _select(x != x, x + x, value)


_MINUS_SQRT_HALF = -0.7071067811865476


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def gelu64(x):
    """The exact GELU of one float64: x erfc(-x / sqrt 2) / 2."""
    return 0.5 * x * erfc64(x * _MINUS_SQRT_HALF)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def gelu32(x):
    """The exact GELU of one float32: in float64, rounded once."""
    return np.float32(gelu64(np.float64(x)))


erf_scalar = _by_dtype("erf_scalar", erf32, erf64)
gelu_scalar = _by_dtype("gelu_scalar", gelu32, gelu64)


@njit(nogil=True, cache=True, error_model="numpy")
def erf_rows(x, out, row_start, row_stop):
    """out[r0:r1] = erf(x[r0:r1]) on 2-D views, float32 or float64."""
    _map_rows(erf_scalar, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def gelu_rows(x, out, row_start, row_stop):
    """out[r0:r1] = gelu(x[r0:r1])."""
    _map_rows(gelu_scalar, x, out, row_start, row_stop)
