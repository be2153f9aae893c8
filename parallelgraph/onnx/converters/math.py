"""ONNX's products, reductions, softmax and TopK."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...graph import Tensor
from ..registry import Node, Unsupported, Value, converter, ints, is_known, padded


def _tensor(value: Value, dtype: object = None) -> Tensor:
    return value if isinstance(value, Tensor) else ops.constant(np.asarray(value), dtype=dtype)


@converter("MatMul")
def matmul(node: Node, inputs: list[Value]) -> list[Value]:
    """np.matmul's rules, 1-D operands included (a vector is made a matrix and back)."""
    a, b = (_tensor(x) for x in inputs)
    squeeze = []
    if a.ndim == 1:
        a, squeeze = ops.reshape(a, (1, a.shape[0])), [*squeeze, -2]
    if b.ndim == 1:
        b, squeeze = ops.reshape(b, (b.shape[0], 1)), [*squeeze, -1]
    product = ops.matmul(a, b)
    if squeeze:
        shape = list(product.shape)
        for axis in sorted(squeeze):
            shape[axis] = None  # type: ignore[call-overload]
        product = ops.reshape(product, tuple(d for d in shape if d is not None))
    return [product]


@converter("Gemm")
def gemm(node: Node, inputs: list[Value]) -> list[Value]:
    """alpha * A' @ B' + beta * C, A' and B' transposed where transA / transB say."""
    a, b, c = padded(inputs, 3)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    product = ops.matmul(
        _tensor(a),
        _tensor(b),
        transpose_a=bool(node.attr("transA", 0)),
        transpose_b=bool(node.attr("transB", 0)),
    )
    if alpha != 1.0:
        product = ops.multiply(product, alpha)
    if c is not None:
        if is_known(c) and beta != 1.0:
            c, beta = np.asarray(c) * np.asarray(beta, np.asarray(c).dtype), 1.0
        product = ops.add(product, c if beta == 1.0 else ops.multiply(c, beta))
    return [product]


def _reduction_axes(node: Node, inputs: list[Value]) -> tuple[int, ...] | None:
    """The axes to reduce (None: all): an attribute before opset 13 (ReduceSum) / 18 (the
    others), an input after; empty axes with `noop_with_empty_axes` reduce nothing."""
    axes_input = inputs[1] if len(inputs) > 1 else None
    axes = node.attr("axes")
    if axes_input is not None:
        axes = ints(node, axes_input, "axes")
    if not axes:
        return () if node.attr("noop_with_empty_axes", 0) else None
    return tuple(axes)


@converter("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")
def reduce(node: Node, inputs: list[Value]) -> list[Value]:
    builders = {
        "ReduceSum": ops.reduce_sum,
        "ReduceMean": ops.reduce_mean,
        "ReduceMax": ops.reduce_max,
        "ReduceMin": ops.reduce_min,
    }
    axes = _reduction_axes(node, inputs)
    if axes == ():
        return [inputs[0]]
    return [builders[node.op_type](inputs[0], axis=axes, keepdims=bool(node.attr("keepdims", 1)))]


def _on_axis(node: Node, x: Tensor, axis: int, function: object) -> Tensor:
    """`function` of x along `axis`: opset 13+ on that axis alone; before, over x flattened to 2-D
    at `axis` (the old Softmax's rule)."""
    axis = axis % max(x.ndim, 1)
    if node.opset >= 13 or axis == x.ndim - 1:
        return function(x, axis=axis)  # type: ignore[operator]
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    flat = ops.reshape(x, (outer, -1))
    return ops.reshape(function(flat, axis=-1), x.shape)  # type: ignore[operator]


@converter("Softmax", "LogSoftmax")
def softmax(node: Node, inputs: list[Value]) -> list[Value]:
    x = _tensor(inputs[0])
    axis = node.attr("axis", -1 if node.opset >= 13 else 1)
    function = ops.softmax if node.op_type == "Softmax" else ops.log_softmax
    return [_on_axis(node, x, axis, function)]


@converter("TopK")
def top_k(node: Node, inputs: list[Value]) -> list[Value]:
    """The k largest (or smallest) along an axis, sorted; indices int64 as ONNX's."""
    x, k = inputs
    (k,) = ints(node, k, "k")
    axis = node.attr("axis", -1) % x.ndim
    largest = bool(node.attr("largest", 1))
    if not largest and np.dtype(x.dtype).kind != "f":
        raise Unsupported("TopK of the smallest integers")
    moved = x if axis == x.ndim - 1 else ops.transpose(x, _last(x.ndim, axis))
    values, indices = ops.top_k(moved if largest else ops.negative(moved), k)
    if not largest:
        values = ops.negative(values)
    if axis != x.ndim - 1:
        back = tuple(int(i) for i in np.argsort(_last(x.ndim, axis)))
        values, indices = ops.transpose(values, back), ops.transpose(indices, back)
    return [values, ops.cast(indices, np.int64)]


def _last(rank: int, axis: int) -> tuple[int, ...]:
    """The permutation that moves `axis` last."""
    return (*(a for a in range(rank) if a != axis), axis)
