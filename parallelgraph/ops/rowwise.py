"""Row ops: softmax, log_softmax and layer_norm along the last axis, each one kernel call a row.

Built as primitives (`ops.composites`), softmax is five ops (reduce_max, subtract, exp,
reduce_sum, divide), each a pass over the whole tensor through memory, and layer_norm nine. Along
the last axis a row is contiguous and small enough to stay in the L1 cache while one kernel
reads it, reduces it and writes it (`kernels.rowwise`): the tensor is read once and written
once. The builders `pg.softmax`, `pg.log_softmax` and `pg.layer_norm` build these ops for the
last axis (and, for layer_norm, gamma and beta of the last axis's size, or None) and the
composite otherwise; the ops have no builder of their own.

The work is x seen as (rows, n), rows the product of the leading axes; shards are ranges of
rows, and each row is computed alone, in a fixed order, so every shard split and thread setting
gives the same bits. softmax and log_softmax give the bits of the composite built of primitives
(its arithmetic, step for step); layer_norm computes the mean and the variance in float64
(`kernels.rowwise`). On the GPU each row is one thread block (`kernels.gpu.rowwise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements
from .registry import Arrays, Bounds, Cost, OpDef, ShapeError, register

__all__: list[str] = []

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class RowOp(OpDef):
    """What the three row ops share: a float x whose last axis is the row, the rows as the
    shards' range, scratch lanes a shard, one call for all rows (`whole`)."""

    blas_free = True  # kernels.rowwise
    #: With BYTES_PER_NS for the traffic, the planner's estimate of softmax on 512x1024 float32
    #: is ~630 us and of layer_norm ~420 us; one thread measured ~500 and ~300-380.
    flops_per_ns = 20.0

    @staticmethod
    def view(op: Any) -> tuple[int, int]:
        """(rows, n): the leading axes as rows, the last axis as the row."""
        shape = op.inputs[0].shape
        return num_elements(shape[:-1]), shape[-1]

    def rows(self, op: Any) -> int:
        return self.view(op)[0]

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x = inputs[0]
        if x.dtype not in _FLOATS:
            raise ShapeError(f"{self.type} computes in float32 or float64, not {x.dtype.name}")
        if x.ndim == 0:
            raise ShapeError(f"{self.type} needs at least one axis, got a scalar")
        return x.shape, x.dtype

    def cost(self, op: Any) -> Cost:
        rows, n = self.view(op)
        reads = sum(num_elements(t.shape) * t.dtype.itemsize for t in op.inputs)
        return Cost(self.flops_per_element * rows * n, reads + rows * n * op.dtype.itemsize)

    def operands(self, op: Any, args: Arrays, out: np.ndarray) -> tuple[np.ndarray, ...]:
        """The kernel's arrays before the row range: (x, out) as (rows, n) views."""
        rows, n = self.view(op)
        return np.ascontiguousarray(args[0]).reshape(rows, n), out.reshape(rows, n)

    def scratch(self, op: Any, count: int) -> tuple[np.ndarray, ...]:
        """The kernel's scratch after the row range, `count` of each (one a shard)."""
        lanes = kernels.rowwise.LANES
        return np.empty((count, lanes)), np.empty((count, lanes), op.dtype)

    @property
    def kernel(self) -> Callable[..., None]:
        return getattr(kernels.rowwise, f"{self.type}_rows")

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, op.dtype)
        return self.kernel, self.operands(op, args, out), self.scratch(op, num_shards), out

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        kernel, operands, scratch, _ = work
        kernel(*operands, row_start, row_stop, *(s[shard] for s in scratch))

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work[-1]

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """Always: a row's bits depend on the row alone, whatever range the call covers."""
        return True

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """All rows in one call (the same kernel on the same rows: the same bits). The scratch
        is the call's own, as the output is: two runs of one plan may overlap."""
        kernel, operands, shape, dtype = self.kernel, self.operands, op.shape, op.dtype
        rows, scratch = self.rows(op), self.scratch

        def computed(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            kernel(*operands(op, args, out), 0, rows, *(s[0] for s in scratch(op, 1)))
            return out

        return computed

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        from ..kernels.gpu import rowwise as gpu_rowwise

        rows, n = self.view(op)
        x, y = inputs[0].reshape(rows, n), out.reshape(rows, n)
        if self.type == "layer_norm":
            gamma, beta = _parameters(op, inputs[1:])
            return gpu_rowwise.layer_norm_launches(x, gamma, beta, y, op.attrs["epsilon"])
        return gpu_rowwise.softmax_launches(x, y, log=self.type == "log_softmax")


@register
class Softmax(RowOp):
    """exp(x - max) / sum(exp(x - max)) along the last axis."""

    type = "softmax"
    default_name = "Softmax"
    flops_per_element = 16  # max, subtract, exp (~12), sum, divide

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        x = np.asarray(args[0], np.float64)
        if x.shape[-1] == 0:  # no row has values (NumPy's max would refuse)
            return x.astype(op.dtype)
        with np.errstate(invalid="ignore"):
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            return (e / e.sum(axis=-1, keepdims=True)).astype(op.dtype)


@register
class LogSoftmax(RowOp):
    """(x - max) - log(sum(exp(x - max))) along the last axis."""

    type = "log_softmax"
    default_name = "LogSoftmax"
    flops_per_element = 16

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        x = np.asarray(args[0], np.float64)
        if x.shape[-1] == 0:
            return x.astype(op.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            shifted = x - x.max(axis=-1, keepdims=True)
            total = np.exp(shifted).sum(axis=-1, keepdims=True)
            return (shifted - np.log(total)).astype(op.dtype)


@register
class LayerNorm(RowOp):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta along the last axis, the mean and the
    biased variance in float64. Inputs: x, then gamma and beta where `attrs` says they are
    given (vectors of the last axis's size, of x's dtype)."""

    type = "layer_norm"
    default_name = "LayerNorm"
    flops_per_element = 8  # the two sums, then subtract, multiply, multiply, add

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        shape, dtype = super().infer(inputs, attrs)
        given = int(attrs["gamma"]) + int(attrs["beta"])
        if len(inputs) != 1 + given:
            raise ShapeError(f"layer_norm takes x and {given} parameters, got {len(inputs)}")
        for parameter in inputs[1:]:
            if parameter.shape != shape[-1:] or parameter.dtype != dtype:
                raise ShapeError(
                    f"gamma and beta must be {dtype.name} vectors of the last axis's size "
                    f"{shape[-1]}, got {list(parameter.shape)} {parameter.dtype.name}"
                )
        attrs["epsilon"] = float(attrs["epsilon"])
        return shape, dtype

    def operands(self, op: Any, args: Arrays, out: np.ndarray) -> tuple[Any, ...]:
        """(x, gamma, beta, out, epsilon): a missing gamma as ones, beta as -0.0s, which leave
        every value as it is (x * 1 and x + -0.0 are x, -0.0 included)."""
        x, y = super().operands(op, args, out)
        gamma, beta = _parameters(op, list(args[1:]))
        n = x.shape[1]
        gamma = np.ones(n, op.dtype) if gamma is None else np.ascontiguousarray(gamma)
        beta = np.full(n, -0.0, op.dtype) if beta is None else np.ascontiguousarray(beta)
        return x, gamma, beta, y, op.attrs["epsilon"]

    def scratch(self, op: Any, count: int) -> tuple[np.ndarray, ...]:
        return (np.empty((count, kernels.rowwise.LANES)),)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        x = np.asarray(args[0], np.float64)
        if x.shape[-1] == 0:  # no row has values (NumPy's mean would warn)
            return x.astype(op.dtype)
        gamma, beta = _parameters(op, [np.asarray(a, np.float64) for a in args[1:]])
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = x.mean(axis=-1, keepdims=True)
            variance = np.square(x - mean).mean(axis=-1, keepdims=True)
            out = (x - mean) / np.sqrt(variance + op.attrs["epsilon"])
        out = out if gamma is None else out * gamma
        return (out if beta is None else out + beta).astype(op.dtype)


def _parameters(op: Any, given: list[Any]) -> tuple[Any, Any]:
    """(gamma, beta) of a layer_norm op from its inputs after x; None where not given."""
    gamma = given.pop(0) if op.attrs["gamma"] else None
    beta = given.pop(0) if op.attrs["beta"] else None
    return gamma, beta
