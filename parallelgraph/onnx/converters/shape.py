"""ONNX's shape ops: Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze, Flatten,
Gather*, Expand, and Shape, Size, ConstantOfShape, Range (known when read: static shapes)."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...graph import Tensor
from ..registry import Node, Unsupported, Value, converter, ints, known


def _tensor(value: Value) -> Tensor:
    return value if isinstance(value, Tensor) else ops.constant(np.asarray(value))


@converter("Reshape")
def reshape(node: Node, inputs: list[Value]) -> list[Value]:
    """A 0 in the shape keeps the input's size there (unless allowzero), one -1 is inferred."""
    x, shape = inputs
    sizes = ints(node, shape, "shape")
    if not node.attr("allowzero", 0):
        sizes = [x.shape[axis] if size == 0 else size for axis, size in enumerate(sizes)]
    return [ops.reshape(x, tuple(sizes))]


@converter("Flatten")
def flatten(node: Node, inputs: list[Value]) -> list[Value]:
    (x,) = inputs
    axis = node.attr("axis", 1) % (len(x.shape) + 1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [ops.reshape(x, (outer, int(np.prod(x.shape[axis:], dtype=np.int64))))]


@converter("Transpose")
def transpose(node: Node, inputs: list[Value]) -> list[Value]:
    perm = node.attr("perm")
    return [ops.transpose(inputs[0], None if perm is None else tuple(perm))]


@converter("Concat")
def concat(node: Node, inputs: list[Value]) -> list[Value]:
    values = [_tensor(x) for x in inputs if x is not None and np.prod(x.shape) != 0] or [
        _tensor(inputs[0])
    ]
    if len(values) == 1:
        return [values[0]]
    return [ops.concat(values, axis=node.attr("axis"))]


@converter("Split")
def split(node: Node, inputs: list[Value]) -> list[Value]:
    """Sizes from the `split` input (opset 13+) or attribute, else `num_outputs` (opset 18) or
    as many equal parts as outputs."""
    x = inputs[0]
    axis = node.attr("axis", 0)
    if len(inputs) > 1 and inputs[1] is not None:
        sizes: object = ints(node, inputs[1], "split")
    elif node.attr("split") is not None:
        sizes = list(node.attr("split"))
    else:
        count = node.attr("num_outputs", len(node.outputs))
        length = x.shape[axis]
        part = -(-length // count)  # opset 18: the last part may be smaller
        sizes = [min(part, length - part * k) for k in range(count)]
    return list(ops.split(x, sizes, axis=axis))


@converter("Slice")
def slice_(node: Node, inputs: list[Value]) -> list[Value]:
    """starts, ends, axes, steps as inputs (opset 10+): `t[...]` with those slices."""
    x, starts, ends = inputs[:3]
    axes = inputs[3] if len(inputs) > 3 else None
    steps = inputs[4] if len(inputs) > 4 else None
    starts, ends = ints(node, starts, "starts"), ints(node, ends, "ends")
    axes = ints(node, axes, "axes") if axes is not None else list(range(len(starts)))
    steps = ints(node, steps, "steps") if steps is not None else [1] * len(starts)
    key = [slice(None)] * len(x.shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        key[axis % len(x.shape)] = slice(*_bounds(start, end, step, x.shape[axis]))
    return [x[tuple(key)]]


def _bounds(start: int, end: int, step: int, size: int) -> tuple[int | None, int | None, int]:
    """ONNX's clamped bounds as a Python slice's (INT64's max and min mean 'to the end')."""
    if step < 0 and end < -size:
        end_bound: int | None = None  # through the first element
    else:
        end_bound = max(-size - 1, min(end, size))
    return max(-size, min(start, size)), end_bound, step


def _axes(node: Node, inputs: list[Value]) -> list[int] | None:
    if len(inputs) > 1 and inputs[1] is not None:
        return ints(node, inputs[1], "axes")
    axes = node.attr("axes")
    return None if axes is None else list(axes)


@converter("Squeeze")
def squeeze(node: Node, inputs: list[Value]) -> list[Value]:
    axes = _axes(node, inputs)
    return [ops.squeeze(inputs[0], None if axes is None else tuple(axes))]


@converter("Unsqueeze")
def unsqueeze(node: Node, inputs: list[Value]) -> list[Value]:
    x, axes = inputs[0], _axes(node, inputs) or []
    rank = len(x.shape) + len(axes)
    shape, given = list(x.shape), sorted(a % rank for a in axes)
    for axis in given:
        shape.insert(axis, 1)
    return [ops.reshape(x, tuple(shape))]


@converter("Gather")
def gather(node: Node, inputs: list[Value]) -> list[Value]:
    return [ops.gather(inputs[0], inputs[1], axis=node.attr("axis", 0))]


@converter("GatherElements")
def gather_elements(node: Node, inputs: list[Value]) -> list[Value]:
    """x's elements at `indices` along `axis`; ONNX's indices may be smaller than x on the other
    axes (never broadcast), so x is cut to their sizes there first (NumPy's rule then agrees)."""
    x, indices = inputs
    axis = node.attr("axis", 0) % len(x.shape)
    key = tuple(
        slice(None) if a == axis or size == x.shape[a] else slice(0, size)
        for a, size in enumerate(indices.shape)
    )
    if any(part != slice(None) for part in key):
        x = x[key] if isinstance(x, Tensor) else np.asarray(x)[key]
    return [ops.take_along_axis(x, indices, axis)]


@converter("GatherND")
def gather_nd(node: Node, inputs: list[Value]) -> list[Value]:
    builder = getattr(ops, "gather_nd", None)
    if builder is None:
        raise Unsupported("GatherND")
    return [builder(inputs[0], inputs[1], batch_dims=node.attr("batch_dims", 0))]


@converter("Expand")
def expand(node: Node, inputs: list[Value]) -> list[Value]:
    """x broadcast with `shape` both ways (ONNX's Expand), as a copy."""
    x, shape = inputs
    target = np.broadcast_shapes(tuple(x.shape), tuple(ints(node, shape, "shape")))
    if target == tuple(x.shape):
        return [x]
    builder = getattr(ops, "broadcast_to", None)
    if builder is None:
        raise Unsupported("Expand")
    return [builder(x, target)]


@converter("Shape")
def shape(node: Node, inputs: list[Value]) -> list[Value]:
    """The static shape, known when read (start / end: opset 15)."""
    sizes = np.asarray(inputs[0].shape, dtype=np.int64)
    start, end = node.attr("start", 0), node.attr("end")
    return [sizes[start:end]]


@converter("Size")
def size(node: Node, inputs: list[Value]) -> list[Value]:
    return [np.asarray(int(np.prod(inputs[0].shape, dtype=np.int64)), dtype=np.int64)]


@converter("ConstantOfShape", "Range")
def needs_known(node: Node, inputs: list[Value]) -> list[Value]:
    """Known only when their inputs are (then they were folded before reaching here)."""
    known(node, next(x for x in inputs if isinstance(x, Tensor)), "input")
    raise AssertionError("unreachable")
