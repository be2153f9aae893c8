"""Constant folding: a node whose inputs are all known when the model is read is computed then,
by onnx's own reference evaluator, at the model's opset.

Exporters emit shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
ConstantOfShape, Range, Expand of a constant): with static input shapes every value of it is
known before the graph runs, so folding it leaves a static graph of real work. Folding any
all-known node, not a list of shape ops, means weights' transposes and casts fold too, and an op
type parallelgraph has no converter for is no obstacle when its inputs are known. The reference
evaluator is ONNX's own statement of each op's semantics, so a folded value is what the
specification says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GraphError

#: Nodes never folded: their value differs run to run.
RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"}


def foldable(node: Any, inputs: list[Any]) -> bool:
    """All present inputs known (arrays), and the node deterministic."""
    return node.op_type not in RANDOM and all(
        value is None or isinstance(value, np.ndarray) for value in inputs
    )


def _gather_elements(node: Any, inputs: list[Any]) -> list[np.ndarray]:
    """GatherElements as np.take_along_axis (onnx 1.23's reference gets it wrong past 64
    positions along the axis: its np.choose path refuses them and its fallback reshapes
    wrongly — a BERT's position ids of 128 failed to fold)."""
    data, indices = inputs
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % data.ndim
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return [np.take_along_axis(data, indices, axis)]


#: Ops folded with NumPy instead of the reference evaluator, where that one is wrong.
NUMPY_FOLDS = {"GatherElements": _gather_elements}


def fold(node: Any, inputs: list[Any], opsets: dict[str, int], what: str) -> list[np.ndarray]:
    """The node's outputs, computed by onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    if node.op_type in NUMPY_FOLDS and node.domain in ("", "ai.onnx"):
        return NUMPY_FOLDS[node.op_type](node, inputs)
    feeds = {name: value for name, value in zip(node.input, inputs) if name}
    try:
        outputs = ReferenceEvaluator(node, opsets=opsets).run(None, feeds)
    except Exception as problem:  # noqa: BLE001 - any failure of the evaluator is the model's
        raise GraphError(
            f"{what}: node {node.name or node.op_type!r} ({node.op_type}), whose inputs are all "
            f"known, could not be computed when read: {type(problem).__name__}: {problem}"
        ) from None
    return [np.asarray(output) for output in outputs]
