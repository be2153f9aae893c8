"""ONNX model -> parallelgraph graph: every node folded (all inputs known), converted (its
converter), run by the reference evaluator (`fallback="reference"`) or refused.

Before anything is built, a dry pass follows which values are known when the model is read
(initializers, Constants, and what folding makes of them and of static shapes) and collects the
op types that would have to run with no converter: without the fallback they are refused in one
error listing each type with its count. Then nodes are built in order, each in the scope its
name or metadata gives (`naming`), on the device asked for (reference-evaluator nodes on the
CPU: they have no GPU kernel).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ops
from ..errors import GraphError
from ..graph import Graph, Tensor, device, scope
from . import converters  # noqa: F401 - registers every converter
from .fallback import REFERENCE
from .folding import fold, foldable
from .naming import op_name, scope_of
from .reader import Input
from .registry import CONVERTERS, Node, Unsupported

FALLBACKS = (None, "reference")


@dataclass(frozen=True)
class Built:
    """What `build_graph` made."""

    graph: Graph
    inputs: dict[str, Tensor]
    outputs: dict[str, Tensor]
    #: Op types run by onnx's reference evaluator, with their node counts.
    fallbacks: dict[str, int]
    folded: int


def _node(proto: Any, opsets: dict[str, int]) -> Node:
    from onnx import helper

    return Node(
        op_type=proto.op_type,
        name=proto.name or proto.op_type,
        inputs=tuple(proto.input),
        outputs=tuple(proto.output),
        attrs={a.name: _attribute(helper.get_attribute_value(a)) for a in proto.attribute},
        opset=opsets.get(proto.domain or "", 1),
        domain=proto.domain,
    )


def _attribute(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


def _converts(proto: Any) -> bool:
    return proto.domain in ("", "ai.onnx") and proto.op_type in CONVERTERS


def unsupported(model: Any, known: set[str]) -> Counter:
    """The op types of nodes that would run (not all inputs known) with no converter."""
    known = set(known)
    missing: Counter = Counter()
    for proto in model.graph.node:
        all_known = all(not name or name in known for name in proto.input)
        if all_known and proto.op_type not in ("RandomNormal", "RandomUniform"):
            known.update(proto.output)
        elif not _converts(proto):
            missing[proto.op_type if not proto.domain else f"{proto.domain}.{proto.op_type}"] += 1
    return missing


def build_graph(
    model: Any,
    arrays: dict[str, np.ndarray],
    inputs: list[Input],
    what: str,
    name: str,
    fallback: str | None = None,
    device_name: str | None = None,
    constants: dict[str, np.ndarray] | None = None,
) -> Built:
    """The parallelgraph graph of `model` (module docstring); `constants` gives inputs values
    that become constants instead of placeholders (for measuring without feeds)."""
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be None or 'reference', not {fallback!r}")
    missing = unsupported(model, set(arrays))
    if missing and fallback is None:
        listed = ", ".join(
            f"{t} ({n} node{'s' if n > 1 else ''})" for t, n in missing.most_common()
        )
        raise GraphError(
            f"{what}: parallelgraph has no converter for {listed}; "
            "from_onnx(..., fallback='reference') runs them in onnx's reference evaluator"
        )
    opsets = {entry.domain or "": int(entry.version) for entry in model.opset_import}
    graph = Graph(name)
    values: dict[str, Any] = dict(arrays)
    fallbacks: Counter = Counter()
    folded = 0
    with graph.as_default(), device(device_name):
        constants = constants or {}
        placeholders = {
            i.name: ops.constant(np.asarray(constants[i.name], i.dtype), name=_safe(i.name))
            if i.name in constants
            else ops.placeholder(i.shape, i.dtype, name=_safe(i.name))
            for i in inputs
        }
        values.update(placeholders)
        for proto in model.graph.node:
            if proto.op_type == "Constant" and proto.output[0] in values:
                continue
            node_inputs = [values[n] if n else None for n in proto.input]
            if foldable(proto, node_inputs):
                outputs = fold(proto, node_inputs, opsets, what)
                folded += 1
            else:
                outputs = _convert(proto, node_inputs, opsets, what, fallback, fallbacks)
            for output_name, value in zip(proto.output, outputs):
                if output_name:
                    values[output_name] = value
        outputs = {}
        for info in model.graph.output:
            value = values[info.name]
            outputs[info.name] = (
                value if isinstance(value, Tensor) else ops.constant(value, name=_safe(info.name))
            )
    return Built(graph, placeholders, outputs, dict(fallbacks), folded)


def _convert(
    proto: Any,
    inputs: list[Any],
    opsets: dict[str, int],
    what: str,
    fallback: str | None,
    fallbacks: Counter,
) -> list[Any]:
    node = _node(proto, opsets)
    where = scope_of(proto)
    with scope(where) if where else contextlib.nullcontext():
        if _converts(proto):
            try:
                return list(CONVERTERS[proto.op_type](node, inputs))
            except Unsupported as reason:
                if fallback is None:
                    raise GraphError(
                        f"{what}: {node.describe()}: parallelgraph does not run it ({reason}); "
                        "from_onnx(..., fallback='reference') runs it in onnx's reference evaluator"
                    ) from None
            except GraphError as problem:
                raise GraphError(f"{what}: {node.describe()}: {problem}") from None
        fallbacks[proto.op_type] += 1
        return _reference(proto, inputs, opsets, what)


def _reference(proto: Any, inputs: list[Any], opsets: dict[str, int], what: str) -> list[Tensor]:
    """One op per output running the node in onnx's reference evaluator, on the CPU; shapes and
    dtypes from evaluating it once on zeros of its inputs' shapes."""
    zeros = [None if v is None else np.zeros(v.shape, v.dtype) for v in inputs]
    probe = fold(proto, zeros, opsets, what)
    tensors = [
        v if isinstance(v, Tensor) or v is None else ops.constant(np.asarray(v)) for v in inputs
    ]
    present = tuple(t for t in tensors if t is not None)
    outputs = []
    with device("cpu:0"):
        for index, value in enumerate(probe):
            attrs = {
                "node": proto.SerializeToString(),
                "opsets": tuple(sorted(opsets.items())),
                "output": index,
                "shape": tuple(value.shape),
                "dtype": np.dtype(value.dtype),
            }
            outputs.append(ops.builder.build(REFERENCE, present, attrs, name=op_name(proto)))
    return outputs


def _safe(name: str) -> str:
    from .naming import _safe as safe

    return safe(name.strip("/").replace("/", "_"))
