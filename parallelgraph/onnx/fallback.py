"""Nodes parallelgraph has no converter for, run through onnx's reference evaluator
(`from_onnx(..., fallback="reference")`), so that every model loads.

Each such node becomes one op per output of type "onnx_reference", named after the node's op
type, whose kernel is the reference evaluator running the node (ONNX's own Python statement of
it, in NumPy): correct, one shard, holding the GIL much of the time, and on the CPU even when
the model is placed on a GPU. Its events and explain() say so ("ran in onnx's reference
evaluator, not parallelgraph's kernels"). A node of several outputs is evaluated once per output
op (the price of one value an op).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtypes import Shape, num_elements
from ..ops.registry import Arrays, Cost, OpDef, register

REFERENCE = "onnx_reference"
NOTE = "ran in onnx's reference evaluator, not parallelgraph's kernels"


@register
class OnnxReference(OpDef):
    """One output of an ONNX node, by onnx's reference evaluator (module docstring).

    attrs: `node` (the NodeProto's bytes), `opsets`, `output` (which output), `shape`, `dtype`
    (found by evaluating the node once on zeros when the model was read)."""

    type = REFERENCE
    default_name = "OnnxReference"
    #: Python and NumPy: the cost model's rate of an unvectorized op.
    flops_per_ns = 1.0

    _lock = threading.Lock()
    _evaluators: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        return attrs["shape"], attrs["dtype"]

    def cost(self, op: Any) -> Cost:
        n = num_elements(op.shape)
        reads = sum(num_elements(t.shape) * t.dtype.itemsize for t in op.inputs)
        return Cost(n, reads + n * op.dtype.itemsize)

    def evaluator(self, op: Any) -> Any:
        """The node's evaluator, made once per op (it parses the node and picks its kernel)."""
        with self._lock:
            found = self._evaluators.get(op)
            if found is None:
                import onnx
                from onnx.reference import ReferenceEvaluator

                node = onnx.NodeProto()
                node.ParseFromString(op.attrs["node"])
                found = self._evaluators[op] = (
                    ReferenceEvaluator(node, opsets=dict(op.attrs["opsets"])),
                    [name for name in node.input],
                )
            return found

    def evaluate(self, op: Any, args: Arrays) -> np.ndarray:
        evaluator, names = self.evaluator(op)
        feeds = dict(zip([n for n in names if n], args))
        value = evaluator.run(None, feeds)[op.attrs["output"]]
        return np.ascontiguousarray(np.asarray(value, dtype=op.dtype).reshape(op.shape))

    def rows(self, op: Any) -> int:
        return 1

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        return [args, None]

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        work[1] = self.evaluate(op, work[0])

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work[1]

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        return lambda args: self.evaluate(op, args)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return self.evaluate(op, args)
