"""The elementwise ops, one entry each: the scalar arithmetic, the NumPy reference, the properties.

Everything else about an elementwise op is made from its entry:

- the CPU row kernel (`<name>_rows`), the fused program's opcode and its loop, and the CUDA
  kernel are generated from `scalar` (`kernels.codegen`: Numba inlines it into each);
- the op definition (`ops.elementwise_op.ElementwiseOp`: NumPy broadcasting, dtypes, cost,
  shards, references) and the builder `pg.<name>` with its docstring;
- the op's rows in the README's table and in the tests (`tests/test_elementwise_table.py` runs
  every entry on generated shapes and values against `reference`).

**Adding an op** is one entry here and one row in that test's list of value ranges. A scalar is
plain Python of its arguments, in the dtype of its inputs, using `math` and the arithmetic
operators (both compile for the CPU and for CUDA); `cpu=` names a vectorizable version from
`kernels.vecmath` where `math`'s would be a libm call per element. `reference` is NumPy's
function; `exact=True` says the kernel gives NumPy's bits (IEEE's correctly rounded operations),
else the tests compare with the float64 reference to `ulp`.

The NaN rule (`FIRST_NAN`): where IEEE 754 leaves the NaN that comes out open, a binary op gives
its first NaN operand, quieted (`kernels.elementwise.NAN_RULE`), so every executor and fusion
path gives the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: NaN rules: the first NaN operand, quieted (a select after the arithmetic, the CPU's only); or
#: whatever the arithmetic gives (its own IEEE rule: pow(1, NaN) = 1, comparisons are False).
FIRST_NAN, OWN = "first NaN operand, quieted", "the arithmetic's own"
#: Result dtypes: the inputs' (the last input's for `where`), bool, or the `dtype` attribute.
SAME, BOOL, CAST = "same", "bool", "cast"
#: Input kinds.
FLOAT, NUMBER, ANY = ("float",), ("float", "integer"), ("float", "integer", "bool")
BOOLEAN = ("bool",)


@dataclass(frozen=True)
class Entry:
    """One elementwise op (module docstring). `scalar` is the arithmetic; the rest describes it."""

    name: str
    label: str
    scalar: Callable[..., object]
    reference: Callable[..., np.ndarray]
    summary: str
    #: What the inputs may be (the first, a condition, must be bool for `where`).
    kinds: tuple[str, ...] = FLOAT
    result: str = SAME
    nan: str = OWN
    commutes: bool = False
    #: x (op) identity == x, where there is one.
    identity: float | None = None
    #: The kernel gives NumPy's bits; else within `ulp` of the float64 reference.
    exact: bool = True
    ulp: float = 0.0
    #: A vectorizable CPU version in `kernels.vecmath` (by name), in place of `scalar`.
    cpu: str | None = None
    #: Arithmetic per element, for the cost model.
    flops: int = 1
    #: The reference's inputs are made float64 first (a transcendental function).
    widen_reference: bool = False

    @property
    def arity(self) -> int:
        return self.scalar.__code__.co_argcount

    @property
    def fuses(self) -> bool:
        """Whether fused groups may hold it: one or two float inputs, a value of their dtype."""
        return self.result == SAME and self.arity <= 2 and "float" in self.kinds


TABLE: dict[str, Entry] = {}


def entry(label: str, reference: Callable[..., np.ndarray], **properties: object) -> Callable:
    """Decorator: the function is an op's scalar arithmetic; its name is the op's name (less a
    trailing underscore, which keeps `abs_` and `pow_` from hiding Python's own) and its
    docstring the builder's summary."""

    def add(scalar: Callable[..., object]) -> Callable[..., object]:
        name = scalar.__name__.rstrip("_")
        if name in TABLE:
            raise ValueError(f"elementwise op {name!r} defined twice")
        summary = (scalar.__doc__ or name).strip()
        TABLE[name] = Entry(name, label, scalar, reference, summary, **properties)  # type: ignore[arg-type]
        return scalar

    return add


# --- arithmetic ----------------------------------------------------------------------------------


@entry("Add", np.add, kinds=NUMBER, nan=FIRST_NAN, commutes=True, identity=0.0)
def add(a, b):
    """a + b elementwise, with NumPy broadcasting."""
    return a + b


@entry("Sub", np.subtract, kinds=NUMBER, nan=FIRST_NAN, identity=0.0)
def subtract(a, b):
    """a - b elementwise, with NumPy broadcasting."""
    return a - b


@entry("Mul", np.multiply, kinds=NUMBER, nan=FIRST_NAN, commutes=True, identity=1.0)
def multiply(a, b):
    """a * b elementwise, with NumPy broadcasting."""
    return a * b


@entry("RealDiv", np.divide, nan=FIRST_NAN, identity=1.0)
def divide(a, b):
    """a / b elementwise (floats; x / 0 is inf or NaN, as in NumPy), with NumPy broadcasting."""
    return a / b


@entry("Maximum", np.maximum, kinds=NUMBER, nan=FIRST_NAN, commutes=True)
def maximum(a, b):
    """The larger of a and b elementwise (NaN if either is NaN, as np.maximum)."""
    if b != b:  # a NaN b comes out quieted, as arithmetic would give it
        return b + b
    return a if a >= b else b


@entry("Minimum", np.minimum, kinds=NUMBER, nan=FIRST_NAN, commutes=True)
def minimum(a, b):
    """The smaller of a and b elementwise (NaN if either is NaN, as np.minimum)."""
    if b != b:
        return b + b
    return a if a <= b else b


@entry("Pow", np.power, exact=False, ulp=1.0, cpu="pow_scalar", flops=20, widen_reference=True)
def pow_(a, b):
    """a ** b elementwise (floats; C's pow: pow(x, 0) = 1 even for NaN x)."""
    return a**b


@entry("Neg", np.negative, kinds=NUMBER)
def negative(x):
    """-x elementwise."""
    return -x


@entry("Abs", np.abs, kinds=NUMBER)
def abs_(x):
    """|x| elementwise."""
    return abs(x)


@entry("Square", np.square, kinds=NUMBER)
def square(x):
    """x * x elementwise."""
    return x * x


@entry("Sqrt", np.sqrt, flops=4)
def sqrt(x):
    """The square root elementwise (NaN below 0)."""
    return math.sqrt(x)


@entry("Rsqrt", lambda x: 1 / np.sqrt(x), exact=False, ulp=1.0, flops=5, widen_reference=True)
def rsqrt(x):
    """1 / sqrt(x) elementwise (as TensorFlow's rsqrt)."""
    return 1.0 / math.sqrt(x)


# --- activations and transcendental functions ----------------------------------------------------


@entry("Relu", lambda x: np.maximum(x, 0))
def relu(x):
    """max(x, 0) elementwise; NaN stays NaN."""
    return x if not x <= 0 else 0  # `not x <= 0`: NaN is kept, as np.maximum(x, 0) keeps it


@entry("Tanh", np.tanh, exact=False, ulp=2.0, cpu="tanh_scalar", flops=20, widen_reference=True)
def tanh(x):
    """The hyperbolic tangent elementwise."""
    return math.tanh(x)


@entry("Exp", np.exp, exact=False, ulp=2.0, cpu="exp_scalar", flops=12, widen_reference=True)
def exp(x):
    """e**x elementwise (0 and inf where it underflows and overflows, NaN stays NaN)."""
    return math.exp(x)


def _sigmoid_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@entry(
    "Sigmoid",
    _sigmoid_reference,
    exact=False,
    ulp=2.5,
    cpu="sigmoid_scalar",
    flops=20,
    widen_reference=True,
)
def sigmoid(x):
    """The logistic function 1 / (1 + e**-x) elementwise, accurate in both tails."""
    e = math.exp(-abs(x))
    return (1.0 if x >= 0 else e) / (1.0 + e)


@entry("Log", np.log, exact=False, ulp=1.0, cpu="log_scalar", flops=20, widen_reference=True)
def log(x):
    """The natural logarithm elementwise (-inf at 0, NaN below)."""
    return math.log(x)


def _erf_reference(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.size(x) else x


@entry(
    "Erf", _erf_reference, exact=False, ulp=2.0, cpu="erf_scalar", flops=30, widen_reference=True
)
def erf(x):
    """The error function elementwise."""
    return math.erf(x)


def _gelu_reference(x: np.ndarray) -> np.ndarray:
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    return 0.5 * x * erfc(-x / math.sqrt(2.0)) if np.size(x) else x


@entry(
    "Gelu", _gelu_reference, exact=False, ulp=4.0, cpu="gelu_scalar", flops=35, widen_reference=True
)
def gelu(x):
    """The exact GELU, x * (1 + erf(x / sqrt(2))) / 2, elementwise (not tanh's approximation);
    computed as x * erfc(-x / sqrt(2)) / 2, which keeps its precision in the negative tail."""
    return 0.5 * x * math.erfc(x * -0.7071067811865476)


# --- comparisons, selection, conversion ----------------------------------------------------------


@entry("Greater", np.greater, kinds=NUMBER, result=BOOL)
def greater(a, b):
    """a > b elementwise, a bool mask (False where either is NaN)."""
    return a > b


@entry("GreaterEqual", np.greater_equal, kinds=NUMBER, result=BOOL)
def greater_equal(a, b):
    """a >= b elementwise, a bool mask."""
    return a >= b


@entry("Less", np.less, kinds=NUMBER, result=BOOL)
def less(a, b):
    """a < b elementwise, a bool mask."""
    return a < b


@entry("LessEqual", np.less_equal, kinds=NUMBER, result=BOOL)
def less_equal(a, b):
    """a <= b elementwise, a bool mask."""
    return a <= b


@entry("Equal", np.equal, kinds=ANY, result=BOOL, commutes=True)
def equal(a, b):
    """a == b elementwise, a bool mask (NaN equals nothing)."""
    return a == b


@entry("NotEqual", np.not_equal, kinds=ANY, result=BOOL, commutes=True)
def not_equal(a, b):
    """a != b elementwise, a bool mask."""
    return a != b


@entry("Select", np.where, kinds=ANY)
def where(condition, x, y):
    """x where `condition` (a bool mask) is True, else y; all three broadcast (np.where)."""
    return x if condition else y


@entry("Cast", lambda x: x, kinds=ANY, result=CAST)
def cast(x):
    """x converted to `dtype` (floats to ints truncate toward zero; anything but 0 is True)."""
    return x


# --- logical ops, float tests, reciprocal and sign -----------------------------------------------


@entry("LogicalAnd", np.logical_and, kinds=BOOLEAN, commutes=True)
def logical_and(a, b):
    """a AND b elementwise, for bool masks (with NumPy broadcasting)."""
    return a & b  # `&`, not `and`: no branch in the row loop


@entry("LogicalOr", np.logical_or, kinds=BOOLEAN, commutes=True)
def logical_or(a, b):
    """a OR b elementwise, for bool masks (with NumPy broadcasting)."""
    return a | b


@entry("LogicalXor", np.logical_xor, kinds=BOOLEAN, commutes=True)
def logical_xor(a, b):
    """a XOR b elementwise (True where exactly one is True), for bool masks."""
    return a != b


@entry("LogicalNot", np.logical_not, kinds=BOOLEAN)
def logical_not(x):
    """NOT x elementwise, for a bool mask."""
    return not x


@entry("IsNan", np.isnan, result=BOOL)
def is_nan(x):
    """Where x is NaN, a bool mask (as tf.math.is_nan)."""
    return x != x


@entry("IsInf", np.isinf, result=BOOL)
def is_inf(x):
    """Where x is +inf or -inf, a bool mask (as tf.math.is_inf)."""
    return math.isinf(x)


@entry("Reciprocal", np.reciprocal, flops=4)
def reciprocal(x):
    """1 / x elementwise (floats; inf at 0, with 0's sign)."""
    # float32 divides in float64 and rounds once more: the same bits as a float32 division
    # (a double rounding of a quotient through 53 bits is exact for 24-bit operands)
    return 1.0 / x


@entry("Sign", np.sign, kinds=NUMBER)
def sign(x):
    """-1, 0 or 1 by the sign of x elementwise (0 for -0.0, NaN stays NaN), as np.sign."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x - x  # 0 for both zeros (-0.0 - -0.0 is +0.0), NaN for NaN
