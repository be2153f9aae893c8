"""The converter registry: one small function per ONNX op type, registered by name (as
onnx2torch's `@add_converter`), that builds the node with parallelgraph's builders.

A converter is `convert(node, inputs) -> outputs`: `node` a `Node` (its type, attributes, names,
the model's opset), `inputs` the node's input values in order (None for an omitted optional
input), each a `pg.Tensor` or, for a value known when the model is read (an initializer, a
Constant, the shape arithmetic exporters emit), a NumPy array; it returns one value per output
(a Tensor or an array). Converters run inside the node's scope (`naming`), so the ops they build
are named where the user's module put them. A converter that needs an input to be known when the
model is read (Reshape's shape, Slice's bounds) says so with `known(...)`, which refuses a
computed one by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import GraphError
from ..graph import Tensor

Value = Any  # a pg.Tensor, or a NumPy array known when the model is read
Converter = Callable[["Node", list[Value]], Sequence[Value]]

CONVERTERS: dict[str, Converter] = {}


@dataclass(frozen=True)
class Node:
    """One ONNX node as the converters see it."""

    op_type: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    #: The model's opset for the node's domain (ai.onnx).
    opset: int = 17
    domain: str = ""

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def describe(self) -> str:
        return f"{self.op_type} node {self.name!r}"


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register a converter for `op_types` (decorator)."""

    def register(function: Converter) -> Converter:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise ValueError(f"ONNX op type {op_type!r} has two converters")
            CONVERTERS[op_type] = function
        return function

    return register


class Unsupported(Exception):
    """Raised by a converter for a case of its op type parallelgraph does not run (an integer
    Div, MaxPool's ceil_mode): the node is then treated as an unknown op type (refused, or run
    by the reference evaluator with `fallback="reference"`)."""


def is_known(value: Value) -> bool:
    """Whether a value is known when the model is read (an array, not a computed tensor)."""
    return isinstance(value, np.ndarray)


def known(node: Node, value: Value, what: str) -> np.ndarray:
    """`value` as an array, or GraphError: the node needs it when the model is read."""
    if isinstance(value, Tensor):
        raise GraphError(
            f"{node.describe()}: its {what} is computed at run time ({value.name!r}); "
            "parallelgraph runs static graphs: it must be a constant or shape arithmetic of "
            "static shapes (bind symbolic dimensions with from_onnx(..., shapes=...))"
        )
    return np.asarray(value)


def ints(node: Node, value: Value, what: str) -> list[int]:
    """A known integer input (a shape, axes, bounds) as a list of Python ints."""
    return [int(v) for v in np.asarray(known(node, value, what)).reshape(-1)]


def padded(inputs: Sequence[Value], count: int) -> list[Value]:
    """The node's inputs with the omitted optional ones at the end as None, `count` in all."""
    return [*inputs, *[None] * (count - len(inputs))][:count]
