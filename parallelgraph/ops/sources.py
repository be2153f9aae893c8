"""Ops whose values come from outside the dataflow: constants, placeholders, variables, and the
random source `random_normal` (a real op: it computes, in row shards, on every run).

Constants, placeholders and variables are *sources*: a session supplies their values (the
constant itself, the feed, the session's variable store) before scheduling starts, so they never
take a worker's time and do not appear in traces.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import DTYPES, Shape, as_dtype, as_shape, num_elements, row_view_shape
from ..errors import GraphError
from ..graph import Tensor
from .builder import _describe_failure, build
from .registry import REGISTRY, Arrays, Cost, OpDef, ShapeError, register

VARIABLE_INITIALIZERS = ("glorot_uniform", "zeros", "ones")


def default_seed(op: Any) -> int:
    """The seed of an op built without one: a stable hash of its full name."""
    seed = op.attrs.get("seed")
    return zlib.crc32(op.name.encode()) if seed is None else int(seed)


class SourceDef(OpDef):
    """Sources declare their shape and dtype in attrs and cost nothing to schedule."""

    is_source = True

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        return attrs["shape"], attrs["dtype"]

    def cost(self, op: Any) -> Cost:
        return Cost(0, 0)


@register
class Constant(SourceDef):
    type = "constant"
    default_name = "Const"

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return op.attrs["value"]


@register
class Placeholder(SourceDef):
    type = "placeholder"
    default_name = "Placeholder"


@register
class Variable(SourceDef):
    type = "variable"
    default_name = "Variable"

    def initial_value(self, op: Any) -> np.ndarray:
        """The value a new session gives the variable (deterministic for a given seed/name)."""
        init = op.attrs["init"]
        if isinstance(init, np.ndarray):
            return init.copy()
        if init == "zeros":
            return np.zeros(op.shape, dtype=op.dtype)
        if init == "ones":
            return np.ones(op.shape, dtype=op.dtype)
        fan_in = op.shape[0] if op.shape else 1
        fan_out = op.shape[-1] if op.shape else 1
        if len(op.shape) >= 3:  # conv filters (..., in, out): TensorFlow's receptive field
            field = num_elements(op.shape[:-2])
            fan_in, fan_out = op.shape[-2] * field, op.shape[-1] * field
        limit = np.sqrt(6.0 / max(1, fan_in + fan_out))
        rng = np.random.default_rng(default_seed(op))
        return rng.uniform(-limit, limit, size=op.shape).astype(op.dtype)


@register
class RandomNormal(OpDef):
    type = "random_normal"
    default_name = "RandomNormal"
    flops_per_element = 40
    flops_per_ns = 20.0  # the vectorized Philox and Box-Muller kernels (measured)
    blas_free = True

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        return attrs["shape"], attrs["dtype"]

    @staticmethod
    def kernel_call(op: Any) -> tuple[Callable[..., None], np.uint64, tuple[float, float]]:
        """(row kernel, seed, (mean, stddev)): the vectorized kernels give the numbers of the
        libm kernel `kernels.random.normal_rows` to float rounding (float64: a few ulp, no
        longer bit-equal to the GPU's), ~6x faster."""
        seed = np.uint64(default_seed(op) & 0xFFFFFFFFFFFFFFFF)
        if op.dtype == np.float32:
            kernel = kernels.normal32.normal_rows32
        else:
            kernel = kernels.normal64.normal_rows64
        return kernel, seed, (op.attrs["mean"], op.attrs["stddev"])

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, dtype=op.dtype)
        kernel, seed, parameters = self.kernel_call(op)
        return kernel, out.reshape(row_view_shape(op.shape)), seed, parameters, out

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        kernel, out2d, seed, parameters, _ = work
        kernel(out2d, seed, *parameters, row_start, row_stop)

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: the same kernel call on all rows, without the work tuple."""
        kernel, seed, (mean, stddev) = self.kernel_call(op)
        shape, dtype, view = op.shape, op.dtype, row_view_shape(op.shape)

        def numbers(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            kernel(out.reshape(view), seed, mean, stddev, 0, view[0])
            return out

        return numbers

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        seed = default_seed(op) & 0xFFFFFFFFFFFFFFFF
        attrs = op.attrs
        return kernels.gpu.random_normal_launches(
            out.reshape(out.size), seed, attrs["mean"], attrs["stddev"]
        )

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        count = num_elements(op.shape)
        bits = 24 if op.dtype == np.float32 else 32
        normals = philox_normal_reference(count, default_seed(op), bits)
        return (op.attrs["mean"] + op.attrs["stddev"] * normals).astype(op.dtype).reshape(op.shape)


def philox_normal_reference(count: int, seed: int, bits: int = 32) -> np.ndarray:
    """`count` standard normals by vectorised NumPy Philox4x32-10 (float64): the test oracle.

    `bits`: how many top bits of each word make a uniform (24 for float32, 32 for float64).
    """
    from ..kernels.random import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1

    mask = np.uint64(0xFFFFFFFF)
    groups = np.arange((count + 3) // 4, dtype=np.uint64)
    c0, c1 = groups & mask, groups >> np.uint64(32)
    c2 = np.zeros_like(groups)
    c3 = np.zeros_like(groups)
    key = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    k0, k1 = key & mask, key >> np.uint64(32)
    for _ in range(10):
        product0 = PHILOX_M0 * c0
        product1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = (
            (product1 >> np.uint64(32)) ^ c1 ^ k0,
            product1 & mask,
            (product0 >> np.uint64(32)) ^ c3 ^ k1,
            product0 & mask,
        )
        k0 = (k0 + PHILOX_W0) & mask
        k1 = (k1 + PHILOX_W1) & mask
    words = np.stack([c0, c1, c2, c3], axis=1) >> np.uint64(32 - bits)
    uniform = (words.astype(np.float64) + 0.5) * 2.0**-bits
    radius = np.sqrt(-2.0 * np.log(uniform[:, 0::2]))
    angle = 2.0 * np.pi * uniform[:, 1::2]
    pairs = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=2)
    # Per group: words (w0, w1) give normals 0 and 1, (w2, w3) give normals 2 and 3.
    return pairs.reshape(-1)[:count]


def constant(value: object, dtype: object = None, name: str | None = None) -> Tensor:
    """A constant tensor holding a copy of `value`.

    NumPy arrays keep their dtype (float32, float64, int32, int64 or bool; other ints become
    int64) unless `dtype` is given; Python bools become bool and other Python numbers and lists
    float32, the dtype most tensors they meet have (TensorFlow makes ints int32). The copy is in
    the machine's byte order: a big-endian array (`np.load` of a ">f4" file) is converted.

    >>> pg.constant([[1.0, 2.0]]).shape
    (1, 2)
    """
    array = _as_array(value, "constant", name)
    if dtype is not None:
        target = as_dtype(dtype, "constant", DTYPES)
    elif isinstance(value, (np.ndarray, np.generic)) and array.dtype.name in DTYPES:
        target = as_dtype(array.dtype, "constant", DTYPES)  # native byte order
    elif isinstance(value, (np.ndarray, np.generic)) and array.dtype.kind in "iu":
        target = np.dtype(np.int64)
    elif array.dtype.kind == "b":
        target = np.dtype(np.bool_)
    else:
        target = np.dtype(np.float32)
    if array.dtype.kind not in "fiub":
        raise GraphError(f"constant: cannot make a {target.name} tensor from {array.dtype} data")
    # Kept writeable (read-only arrays would make Numba compile extra specializations);
    # nothing writes it, and fetching a constant returns a copy.
    stored = np.array(array, dtype=target, order="C", copy=True)
    attrs = {"value": stored, "shape": stored.shape, "dtype": target}
    return build("constant", (), attrs, name)


def _refuse(op_type: str, name: str | None, problem: str) -> GraphError:
    """The GraphError for a bad argument of a source op, naming the op and its scope."""
    default = REGISTRY[op_type].default_name
    return GraphError(_describe_failure(op_type, name or default, (), ShapeError(problem)))


def _as_array(value: object, op_type: str, name: str | None, dtype: object = None) -> np.ndarray:
    """`np.asarray(value)`, or a GraphError naming the op (a ragged list, a Tensor inside)."""
    try:
        return np.asarray(value, dtype=dtype)
    except (ValueError, TypeError) as problem:
        raise _refuse(op_type, name, f"bad value: {problem}") from None


def _check_seed(seed: object, op_type: str, name: str | None) -> int | None:
    """None or an int (NumPy ints too; bools, floats, strings refused) as a Python int."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise _refuse(op_type, name, f"seed must be an int or None, got {seed!r}")
    return None if seed is None else int(seed)


def _check_real(value: object, what: str, name: str | None) -> float:
    """A finite real number as a float (random_normal's mean and stddev)."""
    real = (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, real) or not np.isfinite(value):
        raise _refuse("random_normal", name, f"{what} must be a finite number, got {value!r}")
    return float(value)


def placeholder(shape: object, dtype: object = "float32", name: str | None = None) -> Tensor:
    """A value fed at run time: `sess.run(y, feed_dict={x: array})`. Shapes are fully defined."""
    attrs = {
        "shape": as_shape(shape, "placeholder"),
        "dtype": as_dtype(dtype, "placeholder", DTYPES),
    }
    return build("placeholder", (), attrs, name)


def variable(
    shape: object,
    name: str | None = None,
    dtype: object = "float32",
    init: object = "glorot_uniform",
    seed: int | None = None,
) -> Tensor:
    """A tensor whose value lives in the session: initialized once, kept across runs.

    `init` is "glorot_uniform" (the default, as TensorFlow's get_variable), "zeros", "ones" or
    an array of the variable's shape. Without `seed` the seed is a hash of the full name, so
    every session starts from the same values.
    """
    shape = as_shape(shape, f"variable {name!r}")
    dtype = as_dtype(dtype, f"variable {name!r}")
    seed = _check_seed(seed, "variable", name)
    if isinstance(init, (list, tuple, np.ndarray)):
        # A private copy, as constant() makes: changing the caller's array after the build
        # must not change what new sessions start from.
        init = np.array(_as_array(init, "variable", name, dtype), order="C", copy=True)
        if init.shape != shape:
            raise GraphError(
                f"variable {name!r}: initial value has shape {list(init.shape)}, "
                f"but the variable's shape is {list(shape)}"
            )
    elif init not in VARIABLE_INITIALIZERS:
        raise GraphError(
            f"variable {name!r}: unknown init {init!r}; use one of {VARIABLE_INITIALIZERS} "
            "or an array"
        )
    attrs = {"shape": shape, "dtype": dtype, "init": init, "seed": seed}
    return build("variable", (), attrs, name)


def random_normal(
    shape: object,
    mean: float = 0.0,
    stddev: float = 1.0,
    dtype: object = "float32",
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Normal random numbers from a counter-based generator (Philox4x32-10).

    Stateless: one seed gives the same numbers on every run, however the op is sharded, on any
    number of threads. Without `seed` the seed is a hash of the op's full name.
    """
    shape = as_shape(shape, "random_normal")
    mean, stddev = _check_real(mean, "mean", name), _check_real(stddev, "stddev", name)
    if not stddev >= 0:
        raise GraphError(f"random_normal: stddev must be >= 0, got {stddev!r}")
    attrs = {
        "shape": shape,
        "dtype": as_dtype(dtype, "random_normal"),
        "seed": _check_seed(seed, "random_normal", name),
        "mean": mean,
        "stddev": stddev,
    }
    return build("random_normal", (), attrs, name)


#: The builders (`pg.<name>`).
__all__ = ["constant", "placeholder", "random_normal", "variable"]
