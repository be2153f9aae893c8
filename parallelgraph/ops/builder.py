"""How builder functions turn arguments into a checked op in the default graph."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..dtypes import num_elements
from ..errors import GraphError
from ..graph import Tensor, _context, get_default_graph
from .registry import REGISTRY, ShapeError


def build(
    op_type: str,
    inputs: tuple[Tensor, ...] = (),
    attrs: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> Tensor:
    """Infer and check the op's shape and dtype, then add it to the default graph."""
    definition = REGISTRY[op_type]
    attrs = dict(attrs or {})
    try:
        shape, dtype = definition.infer(inputs, attrs)
    except ShapeError as problem:
        raise GraphError(
            _describe_failure(op_type, name or definition.default_name, inputs, problem)
        ) from None
    nbytes = num_elements(shape) * dtype.itemsize
    if nbytes > physical_memory():
        problem = ShapeError(
            f"its output {list(shape)} {dtype.name} needs {nbytes / 2**30:.1f} GiB, more than "
            f"this machine's {physical_memory() / 2**30:.1f} GiB of memory"
        )
        raise GraphError(
            _describe_failure(op_type, name or definition.default_name, inputs, problem)
        )
    return get_default_graph().add_op(
        op_type, inputs, attrs, shape, dtype, name, definition.default_name
    )


@functools.lru_cache(maxsize=1)
def physical_memory() -> int:
    """Bytes of RAM (a tensor larger than this can never be computed here)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**62


def _describe_failure(
    op_type: str, name: str, inputs: tuple[Tensor, ...], problem: Exception
) -> str:
    scope = "/".join(_context().scopes) or "<root>"
    listed = ", ".join(f"{t.name!r} {list(t.shape)} {t.dtype.name}" for t in inputs)
    return f"cannot build {op_type} op {name!r} in scope {scope!r}: {problem}" + (
        f" (inputs: {listed})" if inputs else ""
    )


def as_tensor(value: object, dtype: np.dtype | None = None, what: str = "input") -> Tensor:
    """A Tensor as is; a number or array becomes a constant (of `dtype` when given)."""
    if isinstance(value, Tensor):
        return value
    from .sources import constant

    if isinstance(value, (int, float, np.number, list, tuple, np.ndarray)):
        return constant(np.asarray(value, dtype=dtype if dtype is not None else None))
    raise GraphError(f"{what} must be a Tensor, a number or an array, not {type(value).__name__}")


def binary_operands(a: object, b: object) -> tuple[Tensor, Tensor]:
    """Both operands as tensors; a plain number (or array) takes the dtype of the tensor beside
    it, when that dtype holds its value exactly (`x_int > 0.5` is refused, not truncated)."""
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        return a, as_tensor(_exactly(b, a.dtype), a.dtype)
    if isinstance(b, Tensor) and not isinstance(a, Tensor):
        return as_tensor(_exactly(a, b.dtype), b.dtype), b
    return as_tensor(a), as_tensor(b)


def _exactly(value: object, dtype: np.dtype) -> object:
    """`value` unchanged, or GraphError when `dtype` would change it (a fraction given to an
    integer tensor, a number to a bool one)."""
    if dtype.kind == "f" or not isinstance(value, (int, float, np.number, list, tuple, np.ndarray)):
        return value
    try:
        array = np.asarray(value)
        same = array.dtype.kind in "biu" and np.array_equal(array.astype(dtype), array)
    except (TypeError, ValueError, OverflowError):
        same = False
    if dtype.kind == "b" and np.asarray(value).dtype.kind != "b":
        same = False
    if not same:
        raise GraphError(
            f"{value!r} is not a {dtype.name} value, and the tensor beside it is {dtype.name}: "
            "cast the tensor (pg.cast) or give a value of its dtype"
        )
    return value
