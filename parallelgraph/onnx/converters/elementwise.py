"""ONNX's elementwise ops: arithmetic, activations, comparisons, logic, Where, Cast, Clip."""

from __future__ import annotations

import functools

import numpy as np

from ... import ops
from ..reader import DTYPES
from ..registry import Node, Unsupported, Value, converter, is_known, padded

#: ONNX op type -> parallelgraph builder name, for ops whose inputs map one to one.
SAME = {
    "Add": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    "Pow": "pow",
    "Sqrt": "sqrt",
    "Exp": "exp",
    "Log": "log",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "Relu": "relu",
    "Erf": "erf",
    "Abs": "abs",
    "Neg": "negative",
    "Equal": "equal",
    "Greater": "greater",
    "GreaterOrEqual": "greater_equal",
    "Less": "less",
    "LessOrEqual": "less_equal",
    "Where": "where",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
    "Not": "logical_not",
    "IsNaN": "is_nan",
    "IsInf": "is_inf",
    "Reciprocal": "reciprocal",
    "Sign": "sign",
}


def _builder(name: str) -> object:
    builder = getattr(ops, name, None)
    if builder is None:
        raise Unsupported(f"parallelgraph has no {name}")
    return builder


@converter(*SAME)
def same(node: Node, inputs: list[Value]) -> list[Value]:
    """The one builder of the same meaning (NumPy's broadcasting is ONNX's multidirectional)."""
    if node.op_type == "Pow" and any(_integer(x) for x in inputs):
        raise Unsupported("Pow of integers")
    if node.op_type == "IsInf" and (
        node.attr("detect_negative", 1),
        node.attr("detect_positive", 1),
    ) != (1, 1):
        raise Unsupported("IsInf of one sign")
    return [_builder(SAME[node.op_type])(*inputs)]


def _integer(value: Value) -> bool:
    return np.dtype(value.dtype).kind in "iub"


@converter("Div")
def div(node: Node, inputs: list[Value]) -> list[Value]:
    if any(_integer(x) for x in inputs):
        raise Unsupported("Div of integers (C's truncating division)")
    return [ops.divide(*inputs)]


@converter("Max", "Min", "Sum", "Mean")
def variadic(node: Node, inputs: list[Value]) -> list[Value]:
    """Max, Min, Sum, Mean of any number of inputs, broadcasting: folded left to right."""
    combine = {"Max": ops.maximum, "Min": ops.minimum, "Sum": ops.add, "Mean": ops.add}
    value = functools.reduce(combine[node.op_type], inputs)
    if node.op_type == "Mean" and len(inputs) > 1:
        value = ops.divide(value, np.asarray(len(inputs), dtype=value.dtype))
    return [value]


@converter("Gelu")
def gelu(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs
    if node.attr("approximate", "none") != "none":
        c = np.asarray(np.sqrt(2 / np.pi), x.dtype)
        inner = ops.multiply(ops.add(x, ops.multiply(ops.multiply(ops.square(x), x), 0.044715)), c)
        return [ops.multiply(ops.multiply(x, 0.5), ops.add(ops.tanh(inner), 1.0))]
    return [ops.gelu(x)]


@converter("LeakyRelu")
def leaky_relu(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs
    alpha = node.attr("alpha", 0.01)
    return [ops.where(ops.greater(x, 0.0), x, ops.multiply(x, alpha))]


@converter("Softplus")
def softplus(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs  # log(1 + e**x), as max(x, 0) + log(1 + e**-|x|) so that it never overflows
    return [ops.add(ops.relu(x), ops.log(ops.add(ops.exp(ops.negative(ops.abs(x))), 1.0)))]


@converter("Cast")
def cast(node: Node, inputs: list[Value]) -> list[Value]:
    target = node.attr("to")
    if target not in DTYPES:
        raise Unsupported(f"Cast to ONNX type {target}")
    return [ops.cast(inputs[0], DTYPES[target])]


@converter("CastLike")
def cast_like(node: Node, inputs: list[Value]) -> list[Value]:
    """x converted to the dtype of the second input (opset 15)."""
    return [ops.cast(inputs[0], inputs[1].dtype)]


@converter("Clip")
def clip(node: Node, inputs: list[Value]) -> list[Value]:
    """Clip(x, min, max): bounds as inputs (opset 11+), either omitted."""
    x, low, high = padded(inputs, 3)
    if node.opset < 11:
        low, high = node.attr("min"), node.attr("max")
    if low is not None:
        x = ops.maximum(x, np.asarray(low, x.dtype) if is_known(low) or np.isscalar(low) else low)
    if high is not None:
        x = ops.minimum(
            x, np.asarray(high, x.dtype) if is_known(high) or np.isscalar(high) else high
        )
    return [x]


@converter("Identity", "Dropout")
def identity(node: Node, inputs: list[Value]) -> list[Value]:
    """Identity, and Dropout at inference (its mask output, where asked for, is all True)."""
    if node.op_type == "Dropout" and len(node.outputs) > 1 and node.outputs[1]:
        shape = inputs[0].shape
        return [inputs[0], np.ones(shape, dtype=bool)]
    return [inputs[0]]
