"""ONNX's convolution, pooling and normalization ops (NCHW, OIHW weights)."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...graph import Tensor
from ..registry import Node, Unsupported, Value, converter, padded


def _padding(node: Node, spatial: int) -> object:
    """parallelgraph's padding argument for the node's auto_pad / pads: "VALID", "SAME"
    (SAME_UPPER: the extra one at the end, as TensorFlow), or explicit ((top, bottom),
    (left, right))."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad == "VALID":
        return "VALID"
    if auto_pad == "SAME_UPPER":
        return "SAME"
    if auto_pad == "SAME_LOWER":
        raise Unsupported("auto_pad SAME_LOWER")
    pads = list(node.attr("pads", [0] * (2 * spatial)))
    return tuple((pads[i], pads[i + spatial]) for i in range(spatial))


def _spatial(node: Node, x: Value) -> int:
    if len(x.shape) != 4:
        raise Unsupported(f"{len(x.shape) - 2}-D {node.op_type} (parallelgraph's are 2-D)")
    return 2


@converter("Conv")
def conv(node: Node, inputs: list[Value]) -> list[Value]:
    """Conv on NCHW with OIHW weights: TensorFlow's HWIO filters (a constant's transpose is
    folded), data_format NCHW, a bias added per channel."""
    x, weights, bias = padded(inputs, 3)
    spatial = _spatial(node, x)
    if isinstance(weights, Tensor):
        filters = ops.transpose(weights, (2, 3, 1, 0))
    else:
        filters = np.ascontiguousarray(np.transpose(weights, (2, 3, 1, 0)))
    y = ops.conv2d(
        x,
        filters,
        strides=tuple(node.attr("strides", [1] * spatial)),
        padding=_padding(node, spatial),
        dilations=tuple(node.attr("dilations", [1] * spatial)),
        groups=node.attr("group", 1),
        data_format="NCHW",
    )
    if bias is not None:
        y = ops.add(y, _per_channel(bias))
    return [y]


def _per_channel(vector: Value) -> Value:
    """A per-channel vector shaped to broadcast over NCHW: (C, 1, 1)."""
    if isinstance(vector, Tensor):
        return ops.reshape(vector, (vector.shape[0], 1, 1))
    return np.asarray(vector).reshape(-1, 1, 1)


@converter("MaxPool", "AveragePool")
def pool(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs[:1]
    spatial = _spatial(node, x)
    if node.attr("ceil_mode", 0):
        raise Unsupported("ceil_mode=1")
    if len(node.outputs) > 1 and node.outputs[1]:
        raise Unsupported("MaxPool's Indices output")
    if any(d != 1 for d in node.attr("dilations", [1] * spatial)):
        raise Unsupported("pooling with dilations")
    padding = _padding(node, spatial)
    counts_pad = node.op_type == "AveragePool" and node.attr("count_include_pad", 0)
    if counts_pad and padding not in ("VALID",) and any(sum(p) for p in padding):
        raise Unsupported("AveragePool with count_include_pad=1 and padding")
    builder = ops.max_pool2d if node.op_type == "MaxPool" else ops.avg_pool2d
    kernel = tuple(node.attr("kernel_shape"))
    strides = tuple(node.attr("strides", [1] * spatial))
    return [builder(x, kernel, strides, padding=padding, data_format="NCHW")]


@converter("GlobalAveragePool", "GlobalMaxPool")
def global_pool(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs
    axes = tuple(range(2, len(x.shape)))
    reduce = ops.reduce_mean if node.op_type == "GlobalAveragePool" else ops.reduce_max
    return [reduce(x, axis=axes, keepdims=True)]


@converter("BatchNormalization")
def batch_norm(node: Node, inputs: list[Value]) -> list[Value]:
    """Inference batch norm over the channel axis (1)."""
    if node.attr("training_mode", 0) or (len(node.outputs) > 1 and any(node.outputs[1:])):
        raise Unsupported("BatchNormalization in training mode")
    x, scale, bias, mean, variance = inputs[:5]
    epsilon = node.attr("epsilon", 1e-5)
    axis = 1 if len(x.shape) > 1 else 0
    return [ops.batch_norm(x, mean, variance, bias, scale, epsilon=epsilon, axis=axis)]


@converter("LayerNormalization")
def layer_norm(node: Node, inputs: list[Value]) -> list[Value]:
    """Normalized over the axes from `axis` to the last (opset 17)."""
    if len(node.outputs) > 1 and any(node.outputs[1:]):
        raise Unsupported("LayerNormalization's Mean and InvStdDev outputs")
    x, scale, bias = padded(inputs, 3)
    axis = node.attr("axis", -1) % len(x.shape)
    axes = tuple(range(axis, len(x.shape)))
    beta = bias if bias is not None else np.zeros(np.shape(scale), dtype=x.dtype)
    epsilon = node.attr("epsilon", 1e-5)
    return [ops.layer_norm(x, scale, beta, axis=axes, epsilon=epsilon)]
