"""Vectorized elementwise math: tanh, exp, sigmoid, log and pow in float32 and float64 as
straight-line code LLVM turns into SIMD loops, bit-identical however the rows are split.

`np.tanh(row, out)` inside `@njit` compiles to a loop calling libm's `tanhf`/`tanh` once per
element (~30 ns an element here). These kernels compute tanh from IEEE additions,
multiplications, one division, `fma`, `fabs` and `copysign` only, and express the branches as
selects, so the row loop is one vector loop (`inspect_asm`: `vfmadd...ps/pd` and one
`vdivps/pd` per vector, 8 float32 or 4 float64 lanes in `ymm` registers with AVX2; `zmm`, 16 or
8 lanes, when LLVM targets Zen 4/5; for Intel's AVX-512 cores it prefers `ymm`).

**The algorithm** (a = |x|; the result gets x's sign back, so tanh(-0.0) = -0.0):

- a < 0.625: tanh a = a + a z P(z), z = a**2 (float32: Cephes' `tanhf` polynomial, degree 4
  in z; float64: Cephes' `tanh` rational P(z)/Q(z), degree 2/3).
- otherwise: tanh a = 1 - 2 / (e**(2a) + 1), with a clamped to 10 (float32) or 20 (float64),
  where tanh rounds to 1 (so e**(2a) never overflows, and tanh(+-inf) = +-1 exactly);
  e**y = 2**n e**r, n = round(y / ln 2) (adding and subtracting 1.5 * 2**23, or 2**52, which
  leaves n in the low bits for 2**n), r = y - n ln 2 by Cody and Waite's two-constant split;
  e**r by Cephes' `expf` polynomial (float32) or its Pade form (qx + px) / (qx - px)
  (float64), which folds into the tanh quotient:
  2 / (e**y + 1) = 2 (qx - px) / (2**n (qx + px) + (qx - px)) -- one division in all.
- NaN in, NaN out (`x + x`: the input's NaN, quieted).

**exp** is the same reduction, e**x = 2**n e**r, on x clamped to where the result is 0 or inf
anyway; 2**n is applied as two exact powers of two (`_times_pow2_32`), so results in the
subnormal range are rounded once and never flushed. **sigmoid** is built on e = e**-|x| <= 1:
1 / (1 + e) for x >= 0 and e / (1 + e) below, one division, so neither tail overflows and the
negative tail keeps e**x's precision down to the subnormals (1 / (1 + e**-x) gives 0 there).

**log**: x = 2**e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), straight from the bits (adding
an offset leaves e + bias in the exponent field and 1 + f's mantissa below it: no frexp, no
branch; subnormals are scaled by 2**23 or 2**52 first). log(1 + f) by Cephes: float32
f + f**2 (f P(f) - 1/2), P of degree 8, and e ln 2 added in the same fma; float64
f - f**2 / 2 + f**3 P(f) / Q(f) (degree 5 over 5, one division) and e ln 2 in two parts. As
np.log: log(+-0) = -inf, x < 0 the default NaN, log(inf) = inf. **pow** (float32) is
e**(b log |a|) in float64, from polynomials fitted for it (log to 2**-38, e**r to 2**-34, so
the float64 result is within 2**-30 float32 ulp) and rounded once; the sign for a negative a
and an odd integer b, and C's special cases (pow(x, 0) = pow(1, y) = 1 even for NaN; a
negative a and a non-integer b give NaN; 0 and inf by b's sign), by selects. float64 pow
stays libm's `pow`, a call per element: a vector one as accurate needs a double-double log
and exp (as SLEEF's), some hundred operations an element.

Both branches are computed for every element and one is selected: no branch, no libm call.
Polynomials go by Estrin's scheme (two short chains instead of one long one): the loop is
bound by its dependency chains, not by arithmetic.

**Why the bits never depend on the split**: there is no `fastmath`, so LLVM may not reassociate,
contract or approximate anything; every operation is correctly rounded in the vector body and in
the scalar remainder alike (`fma` is one rounding by definition, in hardware or in libm's
`fma`), so element j's bits are a function of x[j] alone -- the same in a block of 4097 rows, a
row alone, a 1-wide column or an unaligned slice, and on every thread count. And on every x86
CPU: compiled for `NUMBA_CPU_NAME=generic` (SSE2, fma a libm call, the float64 loop scalar)
the results are the same bits as with AVX2 and FMA.

**Accuracy** (against the float64 reference for float32 inputs, against `np.tanh` of
`np.longdouble` for float64 ones; tests/test_elementwise_kernels.py): see `ULP_BOUNDS`.

The GPU's tanh (`kernels.gpu`) is CUDA's `tanh`, not this function: tests compare it with the
CPU and NumPy to a tolerance (1e-5 float32, 1e-12 float64), which both meet.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .bounds import check_rows2
from .vector_width import prefer_wide_vectors

#: The largest error of each row kernel, in units in the last place of the result's dtype,
#: against the exact function (float32: the float64 function, exact to ~2**-29 ulp; float64: the
#: x86 long double function, 11 bits more precise); subnormal results in units of the smallest
#: subnormal.
#:
#: tanh float32: proved by trying every one of the 2**32 inputs (PG_EXHAUSTIVE=1 pytest
#: tests/test_elementwise_kernels.py): the worst is 1.207 ulp, at 0.62559 just above the switch;
#: 99.83% of the results are correctly rounded, all but 12,818 of the others within 1 ulp.
#: tanh float64: the worst of 10**8 inputs (every exponent, uniform in [0, 1.5], dense around
#: the switch) is 1.586 ulp, at 0.62600; 90.9% correctly rounded. glibc's own `np.tanh` reaches
#: 1.18 ulp on the same kind of sweep.
#: exp and sigmoid: see benchmarks/RESULTS.md, "exp and sigmoid" (float32 every input).
#: log float32: every input, the worst 0.908 ulp (at 0.63525), 99.4% correctly rounded;
#: float64: the worst of 10**8 inputs (every exponent, dense around 1 and the switch at
#: sqrt(1/2)) 0.844 ulp, 97.5% correctly rounded. pow float32: the worst of 3 * 10**7 pairs
#: (every exponent of a, b up to the overflow, integers with negative a) 0.503 ulp; float64 is
#: libm's pow (glibc: under 1 ulp).
ULP_BOUNDS = {
    "tanh": {"float32": 1.25, "float64": 2.0},
    "exp": {"float32": 1.05, "float64": 2.0},
    "sigmoid": {"float32": 2.5, "float64": 2.5},
    "log": {"float32": 1.0, "float64": 1.0},
    "pow": {"float32": 0.6, "float64": 1.0},
}

# ---------------------------------------------------------------------------------------------
# LLVM building blocks


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: `vfmadd` on the CPUs Numba targets, libm's fma
    elsewhere; the same bits either way)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        kind = args[0].type
        function = builder.module.declare_intrinsic(
            "llvm.fma", [kind], ir.FunctionType(kind, [kind, kind, kind])
        )
        return builder.call(function, args)

    return a(a, b, c), codegen


@intrinsic
def _bits_to_float64(typingctx, bits):
    """The float64 whose IEEE bits are the integer `bits` (taken as an int64)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        wide = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.bitcast(wide, ir.DoubleType())

    return types.float64(bits), codegen


@intrinsic
def _bits_to_float32(typingctx, bits):
    """The float32 whose IEEE bits are the low 32 bits of the integer `bits`."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        narrow = builder.trunc(args[0], ir.IntType(32)) if bits.bitwidth > 32 else args[0]
        return builder.bitcast(narrow, ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE bits of a float32 (as an int32) or a float64 (as an int64)."""
    if x not in (types.float32, types.float64):
        return None
    kind = types.int32 if x == types.float32 else types.int64

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(kind.bitwidth))

    return kind(x), codegen


@intrinsic
def _select(typingctx, condition, a, b):
    """`a if condition else b` as one LLVM select: no branch in Numba's IR either (a conditional
    expression inlined at several call sites of one kernel, as pow's in the binary row kernel's
    three loops, trips Numba's SSA checks: NumbaIRAssumptionWarning)."""
    if not (isinstance(condition, types.Boolean) and a == b):
        return None

    def codegen(context, builder, signature, args):
        flag = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(flag, args[1], args[2])

    return a(condition, a, b), codegen


@intrinsic
def _shift_right(typingctx, bits, count):
    """bits >> count, logical (zeros shifted in), in bits' own width: Numba would widen an int32
    to int64 first, and a vector of int64 shifts is twice the work."""
    if not (isinstance(bits, types.Integer) and isinstance(count, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        count = context.cast(builder, args[1], signature.args[1], signature.args[0])
        return builder.lshr(args[0], count)

    return bits(bits, count), codegen


# ---------------------------------------------------------------------------------------------
# tanh, float32

_F = np.float32
_F_ONE, _F_TWO = _F(1.0), _F(2.0)
_F_SMALL = _F(0.625)  # below: the polynomial; above: the exponential
_F_CLAMP = _F(10.0)  # tanh(x) rounds to 1 in float32 above 9.011
_F_LOG2E = _F(1.4426950408889634)
_F_ROUND = _F(1.5 * 2**23)  # t + ROUND - ROUND rounds t to an integer for |t| < 2**22
_F_LN2_HI = _F(0.693359375)  # ln 2 = HI + LO; n * HI is exact for n < 2**14
_F_LN2_LO = _F(-2.12194440e-4)
# Cephes tanhf: tanh a = a + a z P(z) for a < 0.625
_F_T4, _F_T3, _F_T2, _F_T1, _F_T0 = (
    _F(-5.70498872745e-3),
    _F(2.06390887954e-2),
    _F(-5.37397155531e-2),
    _F(1.33314422036e-1),
    _F(-3.33332819422e-1),
)
# Cephes expf: e**r = 1 + r + r**2 E(r) for |r| <= ln(2) / 2
_F_E5, _F_E4, _F_E3, _F_E2, _F_E1, _F_E0 = (
    _F(1.9875691500e-4),
    _F(1.3981999507e-3),
    _F(8.3334519073e-3),
    _F(4.1665795894e-2),
    _F(1.6666665459e-1),
    _F(5.0000001201e-1),
)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _exp_reduced32(y):
    """(t, e**r - 1) for y = n ln 2 + r, |r| <= ln(2) / 2: n = round(y / ln 2) by the
    1.5 * 2**23 trick, which leaves n in the low mantissa bits of t (|y| < 2**21); r by Cody
    and Waite's two-constant split; e**r - 1 = r + r**2 E(r) (Cephes' `expf`), E by Estrin."""
    t = fma(y, _F_LOG2E, _F_ROUND)
    fn = t - _F_ROUND
    r = fma(fn, -_F_LN2_LO, fma(fn, -_F_LN2_HI, y))
    rr = r * r
    q = fma(fma(fma(_F_E5, r, _F_E4), rr, fma(_F_E3, r, _F_E2)), rr, fma(_F_E1, r, _F_E0))
    return t, fma(q, rr, r)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def tanh32(x):
    """tanh of one float32 (see the module docstring)."""
    a = abs(x)
    # small: a + a z P(z), P by Estrin's scheme (short dependency chains)
    z = a * a
    p = fma(fma(_F_T4, z, _F_T3), z * (z * z), fma(fma(_F_T2, z, _F_T1), z, _F_T0))
    small = fma(a * z, p, a)
    # large: 1 - 2 / (2**n e**r + 1)
    c = a if a < _F_CLAMP else _F_CLAMP  # NaN: clamped too, replaced below
    t, em1 = _exp_reduced32(c + c)
    scale = _bits_to_float32((_float_bits(t) + np.int32(127)) << np.int32(23))  # 2**n
    large = _F_ONE - _F_TWO / fma(scale, em1, scale + _F_ONE)
    value = math.copysign(small if a < _F_SMALL else large, x)
    return x + x if x != x else value


# ---------------------------------------------------------------------------------------------
# tanh, float64

_D_ONE, _D_TWO = 1.0, 2.0
_D_SMALL = 0.625
_D_CLAMP = 20.0  # tanh(x) rounds to 1 in float64 above 19.06
_D_LOG2E = 1.4426950408889634
_D_ROUND = 1.5 * 2**52  # t + ROUND - ROUND rounds t to an integer for |t| < 2**51
_D_LN2_HI = 6.93145751953125e-1  # ln 2 = HI + LO; HI has 15 bits: n * HI is exact
_D_LN2_LO = 1.42860682030941723212e-6
# Cephes tanh: tanh a = a + a z P(z) / Q(z) for a < 0.625, Q monic
_D_P2, _D_P1, _D_P0 = (
    -9.64399179425052238628e-1,
    -9.92877231001918586564e1,
    -1.61468768441708447952e3,
)
_D_Q2, _D_Q1, _D_Q0 = (
    1.12811678491632931402e2,
    2.23548839060100448583e3,
    4.84406305325125486048e3,
)
# Cephes exp: e**r = (qx + px) / (qx - px), px = r P(r**2), qx = Q(r**2), |r| <= ln(2) / 2
_D_EP2, _D_EP1, _D_EP0 = (
    1.26177193074810590878e-4,
    3.02994407707441961300e-2,
    9.99999999999999999910e-1,
)
_D_EQ3, _D_EQ2, _D_EQ1, _D_EQ0 = (
    3.00198505138664455042e-6,
    2.52448340349684104192e-3,
    2.27265548208155028766e-1,
    2.00000000000000000009e0,
)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _exp_pade64(y):
    """(t, px, qx) for y = n ln 2 + r, e**r = (qx + px) / (qx - px) (Cephes' `exp`): n in the
    low mantissa bits of t by the 1.5 * 2**52 trick, r by the two-constant split."""
    t = fma(y, _D_LOG2E, _D_ROUND)
    fn = t - _D_ROUND
    r = fma(fn, -_D_LN2_LO, fma(fn, -_D_LN2_HI, y))
    rr = r * r
    px = r * fma(fma(_D_EP2, rr, _D_EP1), rr, _D_EP0)
    qx = fma(fma(_D_EQ3, rr, _D_EQ2), rr * rr, fma(_D_EQ1, rr, _D_EQ0))
    return t, px, qx


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def tanh64(x):
    """tanh of one float64 (see the module docstring)."""
    a = abs(x)
    # small: a + (a z P(z)) / Q(z)
    z = a * a
    small_num = a * z * fma(fma(_D_P2, z, _D_P1), z, _D_P0)
    small_den = fma(z + _D_Q2, z * z, fma(z, _D_Q1, _D_Q0))
    # large: 1 - 2 (qx - px) / (2**n (qx + px) + (qx - px))
    c = a if a < _D_CLAMP else _D_CLAMP  # NaN: clamped too, replaced below
    t, px, qx = _exp_pade64(c + c)
    below = qx - px
    scale = _bits_to_float64((_float_bits(t) + np.int64(1023)) << np.int64(52))  # 2**n
    is_small = a < _D_SMALL
    num = small_num if is_small else _D_TWO * below
    den = small_den if is_small else fma(scale, qx + px, below)
    d = num / den
    value = math.copysign(a + d if is_small else _D_ONE - d, x)
    return x + x if x != x else value


# ---------------------------------------------------------------------------------------------
# exp and sigmoid

_F_EXP_LOW, _F_EXP_HIGH = _F(-110.0), _F(89.0)  # e**x rounds to 0 below -103.98, to inf above 88.73
_D_EXP_LOW, _D_EXP_HIGH = -750.0, 710.0  # e**x rounds to 0 below -745.14, to inf above 709.79
_F_ROUND_BITS = np.int32(np.array(_F_ROUND).view(np.int32))  # t's bits = these + n
_D_ROUND_BITS = np.int64(np.array(_D_ROUND).view(np.int64))


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _times_pow2_32(m, n):
    """m * 2**n, m in [0.5, 2], n in [-160, 128], rounded once: by 2**(n // 2) (exact: the
    result is normal) and then by 2**(n - n // 2), each a normal number, so a subnormal or an
    infinite result comes out right, which 2**n as one float cannot."""
    half = n >> np.int32(1)
    first = _bits_to_float32((half + np.int32(127)) << np.int32(23))
    return (m * first) * _bits_to_float32((n - half + np.int32(127)) << np.int32(23))


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _times_pow2_64(m, n):
    """`_times_pow2_32` for float64: n in [-1085, 1025]."""
    half = n >> np.int64(1)
    first = _bits_to_float64((half + np.int64(1023)) << np.int64(52))
    return (m * first) * _bits_to_float64((n - half + np.int64(1023)) << np.int64(52))


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def exp32(x):
    """e**x of one float32: 2**n e**r (`_exp_reduced32`) with x clamped where the result is
    0 or inf anyway; e**(-inf) = 0, e**inf = inf, NaN stays NaN."""
    c = x if x > _F_EXP_LOW else _F_EXP_LOW  # NaN: clamped too, replaced below
    c = c if c < _F_EXP_HIGH else _F_EXP_HIGH
    t, em1 = _exp_reduced32(c)
    value = _times_pow2_32(em1 + _F_ONE, _float_bits(t) - _F_ROUND_BITS)
    return x + x if x != x else value


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def exp64(x):
    """e**x of one float64: 2**n (qx + px) / (qx - px) (`_exp_pade64`), as Cephes'
    1 + 2 px / (qx - px); clamped and special values as `exp32`."""
    c = x if x > _D_EXP_LOW else _D_EXP_LOW  # NaN: clamped too, replaced below
    c = c if c < _D_EXP_HIGH else _D_EXP_HIGH
    t, px, qx = _exp_pade64(c)
    value = _times_pow2_64(fma(_D_TWO, px / (qx - px), _D_ONE), _float_bits(t) - _D_ROUND_BITS)
    return x + x if x != x else value


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def sigmoid32(x):
    """1 / (1 + e**-x) of one float32, from e = e**-|x| <= 1, which never overflows:
    1 / (1 + e) for x >= 0, e / (1 + e) below (so sigmoid(-100) is e**-100, not 0)."""
    e = exp32(-abs(x))
    value = (_F_ONE if x >= _F(0.0) else e) / (_F_ONE + e)
    return x + x if x != x else value


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def sigmoid64(x):
    """`sigmoid32` for float64."""
    e = exp64(-abs(x))
    value = (_D_ONE if x >= 0.0 else e) / (_D_ONE + e)
    return x + x if x != x else value


# ---------------------------------------------------------------------------------------------
# log

_F_MIN_NORMAL, _F_TWO23 = _F(2.0**-126), _F(2.0**23)
_F_INF = _F(np.inf)
_F_NAN_BITS = np.int32(-0x400000)  # 0xffc00000: x86's default NaN, what np.log(-1) gives
_F_SQRT_HALF_BITS = np.int32(0x3F3504F3)  # sqrt(1/2) rounded down
_F_LOG_OFFSET = np.int32((128 << 23) - 0x3F3504F3)  # bits + this: exponent + 128 on top
_F_MANTISSA = np.int32((1 << 23) - 1)
_F_LN2 = _F(0.6931471805599453)  # ln 2 to 2**-28 relative: e * LN2 in the fma, 0.04 ulp at most
_F_MINUS_HALF = _F(-0.5)
# Cephes logf: log(1 + f) = f - f**2 / 2 + f**3 P(f), sqrt(1/2) <= 1 + f < sqrt(2)
_F_L8, _F_L7, _F_L6, _F_L5, _F_L4, _F_L3, _F_L2, _F_L1, _F_L0 = (
    _F(7.0376836292e-2),
    _F(-1.1514610310e-1),
    _F(1.1676998740e-1),
    _F(-1.2420140846e-1),
    _F(1.4249322787e-1),
    _F(-1.6668057665e-1),
    _F(2.0000714765e-1),
    _F(-2.4999993993e-1),
    _F(3.3333331174e-1),
)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def log32(x):
    """The natural logarithm of one float32 (see the module docstring)."""
    tiny = x < _F_MIN_NORMAL  # subnormals scaled up exactly (0 and below: replaced at the end)
    s = x * _F_TWO23 if tiny else x
    u = np.int32(_float_bits(s) + _F_LOG_OFFSET)
    e = _F(_shift_right(u, np.int32(23))) - (_F(151.0) if tiny else _F(128.0))
    f = _bits_to_float32((u & _F_MANTISSA) + _F_SQRT_HALF_BITS) - _F_ONE  # exact
    z = f * f
    p = fma(
        fma(fma(_F_L8, f, _F_L7), z, fma(_F_L6, f, _F_L5)),
        z * z,
        fma(fma(_F_L4, f, _F_L3), z, fma(_F_L2, f, _F_L1)),
    )
    q = fma(fma(p, f, _F_L0), f, _F_MINUS_HALF)  # log(1 + f) = f + f**2 q
    value = fma(e, _F_LN2, fma(z, q, f))
    value = value if x > _F(0.0) else (-_F_INF if x == _F(0.0) else _bits_to_float32(_F_NAN_BITS))
    return value if x < _F_INF else x + x  # inf stays inf; NaN stays NaN, quieted


_D_MIN_NORMAL, _D_TWO52 = 2.0**-1022, 2.0**52
_D_INF = np.inf
_D_NAN_BITS = np.int64(-0x8000000000000)  # 0xfff8000000000000, x86's default NaN
_D_SQRT_HALF_BITS = np.int64(0x3FE6A09E667F3BCD)
_D_LOG_OFFSET = np.int64((1024 << 52) - 0x3FE6A09E667F3BCD)
_D_MANTISSA = np.int64((1 << 52) - 1)
_D_TWO52_BITS = np.int64(0x4330000000000000)  # 2**52: its bits + k are 2**52 + k
_D_LOG_HI, _D_LOG_LO = 0.693359375, -2.121944400546905827679e-4  # ln 2 = HI + LO, e * HI exact
# Cephes log: log(1 + f) = f - f**2 / 2 + f**3 P(f) / Q(f), Q monic
_D_LP5, _D_LP4, _D_LP3, _D_LP2, _D_LP1, _D_LP0 = (
    1.01875663804580931796e-4,
    4.97494994976747001425e-1,
    4.70579119878881725854e0,
    1.44989225341610930846e1,
    1.79368678507819816313e1,
    7.70838733755885391666e0,
)
_D_LQ4, _D_LQ3, _D_LQ2, _D_LQ1, _D_LQ0 = (
    1.12873587189167450590e1,
    4.52279145837532221105e1,
    8.29875266912776603211e1,
    7.11544750618563894466e1,
    2.31251620126765340583e1,
)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _log64_of_normal(s, bias):
    """log(s) for a positive normal float64 s; `bias` is 1024 (s is x) or 1076 (s is x * 2**52):
    s = 2**k (1 + f), k + 1024 from the top bits of bits + OFFSET, turned into a float64 as the
    low bits of 2**52 + k + 1024 (no int64-to-float conversion, which AVX2 lacks)."""
    u = _float_bits(s) + _D_LOG_OFFSET
    e = _bits_to_float64(_shift_right(u, np.int64(52)) + _D_TWO52_BITS) - (_D_TWO52 + bias)
    f = _bits_to_float64((u & _D_MANTISSA) + _D_SQRT_HALF_BITS) - _D_ONE  # exact
    z = f * f
    p = fma(fma(fma(_D_LP5, f, _D_LP4), z, fma(_D_LP3, f, _D_LP2)), z, fma(_D_LP1, f, _D_LP0))
    q = fma(fma(f + _D_LQ4, z, fma(_D_LQ3, f, _D_LQ2)), z, fma(_D_LQ1, f, _D_LQ0))
    y = fma(e, _D_LOG_LO, (f * z) * p / q)
    y = fma(-0.5 * f, f, y)
    return fma(e, _D_LOG_HI, f + y)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def log64(x):
    """`log32` for float64: Cephes' rational form, e * ln 2 in two parts."""
    tiny = x < _D_MIN_NORMAL
    value = _log64_of_normal(x * _D_TWO52 if tiny else x, 1076.0 if tiny else 1024.0)
    value = value if x > 0.0 else (-_D_INF if x == 0.0 else _bits_to_float64(_D_NAN_BITS))
    return value if x < _D_INF else x + x


# ---------------------------------------------------------------------------------------------
# pow

_F_TWO24 = _F(2.0**24)
# pow32's own polynomials, fitted for it (minimax relative error, Lawson's algorithm on 40,000
# Chebyshev points in long double): float32 results need far less than float64's precision.
# log(1 + f) = f + f**2 Q(f) on [sqrt(1/2) - 1, sqrt(2) - 1]: within 2**-38.4 of log(1 + f)
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5, _Q6, _Q7, _Q8, _Q9, _Q10, _Q11, _Q12 = (
    -0.49999999993770233,
    0.333333334252084,
    -0.2500000200594674,
    0.19999987383586623,
    -0.16666490527377412,
    0.14286208899708475,
    -0.1250661013900921,
    0.11105780118637408,
    -0.09880587482056266,
    0.09030014606615075,
    -0.0931761365363298,
    0.09174431895576371,
    -0.0484104097112887,
)
# e**r = 1 + r + r**2 E(r) on [-ln(2) / 2, ln(2) / 2]: within 2**-34.2 of e**r
_E0, _E1, _E2, _E3, _E4, _E5 = (
    0.5000000067682273,
    0.1666666586893393,
    0.04166629494676963,
    0.008333497074927807,
    0.0013944659660447372,
    0.0001979034157505551,
)
_D_LN2 = 0.6931471805599453
_POW32_LOW, _POW32_HIGH = -110.0, 90.0  # e**t rounds to 0 / inf in float32 beyond


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _log_for_pow32(a):
    """log(a) of a positive float32 (subnormals too) as a float64 within 2**-38 of it: `log32`'s
    reduction on float32 lanes, then f (exact) and e in float64 and a polynomial there."""
    tiny = a < _F_MIN_NORMAL
    s = _select(tiny, a * _F_TWO23, a)
    u = np.int32(_float_bits(s) + _F_LOG_OFFSET)
    e = _F(_shift_right(u, np.int32(23))) - _select(tiny, _F(151.0), _F(128.0))
    f = np.float64(_bits_to_float32((u & _F_MANTISSA) + _F_SQRT_HALF_BITS) - _F_ONE)
    z = f * f
    z2 = z * z
    q = fma(
        fma(_Q12, z2, fma(fma(_Q11, f, _Q10), z, fma(_Q9, f, _Q8))),
        z2 * z2,
        fma(
            fma(fma(_Q7, f, _Q6), z, fma(_Q5, f, _Q4)),
            z2,
            fma(fma(_Q3, f, _Q2), z, fma(_Q1, f, _Q0)),
        ),
    )
    return fma(np.float64(e), _D_LN2, fma(z, q, f))


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def pow32(a, b):
    """a ** b of two float32 as C's powf: e**(b log |a|) in float64, rounded once to float32
    (`_log_for_pow32`; e**t = 2**n e**r as `exp64` reduces it, by a polynomial: the result
    within 2**-30 of a float32 ulp of the rounded one), with the sign for a negative a and an
    odd integer b, then C's special cases."""
    t = np.float64(b) * _log_for_pow32(abs(a))  # a = 0 or inf, NaN: replaced below
    t = _select(t < _POW32_HIGH, _select(t > _POW32_LOW, t, _POW32_LOW), _POW32_HIGH)
    rounded = fma(t, _D_LOG2E, _D_ROUND)
    n = rounded - _D_ROUND
    r = fma(n, -_D_LN2, t)  # n ln 2 exact in the fma; LN2's error 2**-47 in all
    rr = r * r
    er = fma(fma(fma(_E5, r, _E4), rr, fma(_E3, r, _E2)), rr, fma(_E1, r, _E0))
    scale = _bits_to_float64(
        (_float_bits(rounded) - _D_ROUND_BITS + np.int64(1023)) << np.int64(52)
    )
    value = np.float32((fma(rr, er, r) + _D_ONE) * scale)  # 2**n, n in [-159, 130]: normal
    # 0 and inf (in float32 lanes, half the work of float64 ones): b log 0 = -+inf, b log inf
    # = +-inf, whose exponentials are inf and 0
    ab = abs(b)
    aa = abs(a)
    big_result = (b < _F(0.0)) == (aa == _F(0.0))
    value = _select((aa != _F(0.0)) & (aa != _F_INF), value, _select(big_result, _F_INF, _F(0.0)))
    # b an integer? odd? (|b| < 2**23: b + 2**23 rounds to the integer, its parity in bit 0)
    big = ab >= _F_TWO23  # an integer, odd only below 2**24
    v = _select(big, ab, ab + _F_TWO23)
    integral = big | (v - _F_TWO23 == ab)
    odd = integral & (ab < _F_TWO24) & ((_float_bits(v) & np.int32(1)) == np.int32(1))
    value = _select(odd & (_float_bits(a) < np.int32(0)), -value, value)  # -0.0, -inf too
    negative = (a < _F(0.0)) & (a > -_F_INF)
    value = _select(negative & (not integral), _bits_to_float32(_F_NAN_BITS), value)
    value = _select(b != b, b + b, value)
    value = _select(a != a, a + a, value)  # the first NaN operand, quieted
    one = (b == _F(0.0)) | (a == _F_ONE) | ((a == -_F_ONE) & (ab == _F_INF))
    return _select(one, _F_ONE, value)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def pow64(a, b):
    """a ** b of two float64: libm's pow (a call per element)."""
    return a**b


# ---------------------------------------------------------------------------------------------
# dispatch by dtype, row kernels


def _by_dtype(name: str, for_float32, for_float64):
    """A function of one float32 or float64 for `@njit` code: `for_float32` or `for_float64`
    by the argument's type, inlined."""

    def scalar(x):
        raise NotImplementedError(f"{name} is for @njit code")

    scalar.__name__ = scalar.__qualname__ = name

    @overload(scalar, inline="always")
    def _choose(x):
        if x == types.float32:
            return lambda x: for_float32(x)
        if x == types.float64:
            return lambda x: for_float64(x)
        return None

    return scalar


def _by_dtypes(name: str, for_float32, for_float64):
    """`_by_dtype` for a function of two arguments of one dtype."""

    def scalar(a, b):
        raise NotImplementedError(f"{name} is for @njit code")

    scalar.__name__ = scalar.__qualname__ = name

    @overload(scalar, inline="always")
    def _choose(a, b):
        if a == b == types.float32:
            return lambda a, b: for_float32(a, b)
        if a == b == types.float64:
            return lambda a, b: for_float64(a, b)
        return None

    return scalar


tanh_scalar = _by_dtype("tanh_scalar", tanh32, tanh64)
exp_scalar = _by_dtype("exp_scalar", exp32, exp64)
sigmoid_scalar = _by_dtype("sigmoid_scalar", sigmoid32, sigmoid64)
log_scalar = _by_dtype("log_scalar", log32, log64)
pow_scalar = _by_dtypes("pow_scalar", pow32, pow64)


@njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _map_rows(scalar, x, out, row_start, row_stop):
    """out[r0:r1] = scalar(x[r0:r1]) elementwise. Inlined into each row kernel before typing,
    so `scalar` is a direct call there (a function passed as a value would keep the caller out
    of Numba's cache) and the loop is vectorized with the scalar function's body, at the CPU's
    widest vectors (`vector_width`)."""
    check_rows2(x, out, row_start, row_stop)
    prefer_wide_vectors()
    for i in range(row_start, row_stop):
        src, dst = x[i], out[i]
        for j in range(src.shape[0]):
            dst[j] = scalar(src[j])


@njit(nogil=True, cache=True, error_model="numpy")
def tanh_rows(x, out, row_start, row_stop):
    """out[r0:r1] = tanh(x[r0:r1]) on 2-D views, float32 or float64."""
    _map_rows(tanh_scalar, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def exp_rows(x, out, row_start, row_stop):
    """out[r0:r1] = e**x[r0:r1]."""
    _map_rows(exp_scalar, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def sigmoid_rows(x, out, row_start, row_stop):
    """out[r0:r1] = 1 / (1 + e**-x[r0:r1])."""
    _map_rows(sigmoid_scalar, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def log_rows(x, out, row_start, row_stop):
    """out[r0:r1] = log(x[r0:r1])."""
    _map_rows(log_scalar, x, out, row_start, row_stop)


@njit(nogil=True, cache=True, error_model="numpy")
def pow_rows(a, b, out, row_start, row_stop):
    """out[r0:r1] = a[r0:r1] ** b[r0:r1] (operands of out's shape)."""
    check_rows2(a, out, row_start, row_stop)
    check_rows2(b, out, row_start, row_stop)
    prefer_wide_vectors()
    for i in range(row_start, row_stop):
        x, y, dst = a[i], b[i], out[i]
        for j in range(dst.shape[0]):
            dst[j] = pow_scalar(x[j], y[j])
