"""Indexing ops that ONNX models need: take_along_axis (GatherElements), gather_nd (GatherND)
and broadcast_to (Expand).

All three are movement ops (`ops.gather.MovementOp`): the value is a new C-contiguous array of
copies of input elements, shards are ranges of the output's rows cut by shape only, and each
shard writes its own rows, so every executor and thread setting gives NumPy's bits.

- `take_along_axis` is its own op type, "take_along": np.take_along_axis along any axis, with
  NumPy's broadcasting of x and indices on the other axes and negative indices counting from
  the end. (The op type "take_along_axis" is top_k's internal second op: the last axis, same
  shapes, indices in [0, n); it is left as it is.) The host describes the copy as the output's
  dims and, for x and for indices, a stride per axis (0 where it is broadcast; x's is 0 along
  the indexed axis, whose stride goes apart), over the fewest axes; one kernel reads through
  that (`kernels.indexing.take_along_range`).
- `gather_nd` (tf.gather_nd with `batch_dims`): each tuple of the last axis of indices picks a
  slice of params; the kernel copies a slice a tuple (`kernels.indexing.gather_nd_range`).
- `broadcast_to` is a strided copy (`ops.shape_ops.StridedCopy`) whose strides are 0 along
  the broadcast axes.

Indices are checked where they are known, as gather's (`ops.gather`): constant ones when the
graph is built (a `pg.GraphError` naming the op), computed or fed ones by the CPU kernel before
it reads through them (an IndexError naming the index and the axis, which the session reports
as a `pg.OpError` naming the op); on the GPU an out-of-range index is clamped into its axis
(`kernels.gpu.indexing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements, row_view_shape
from ..graph import Tensor
from .builder import as_tensor, build
from .gather import (
    Fill,
    IndexedMovementOp,
    as_indices,
    check_in_range,
    check_index_dtype,
    constant_value,
    flat,
    normalize_axis,
    out_of_range,
)
from .registry import Arrays, ShapeError, register
from .shape_ops import StridedCopy, _ints, c_strides, fewest_axes, reshape

__all__ = ["broadcast_to", "gather_nd", "take_along_axis"]


# --- take_along_axis ---------------------------------------------------------------------------


@register
class TakeAlong(IndexedMovementOp):
    """np.take_along_axis(x, indices, axis) (module docstring)."""

    type = "take_along"
    default_name = "TakeAlong"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, indices = inputs
        check_index_dtype(indices)
        if x.ndim == 0:
            raise ShapeError("x must have at least one axis")
        if indices.ndim != x.ndim:
            raise ShapeError(
                f"indices must have x's rank ({x.ndim}), not {indices.ndim} (np.take_along_axis)"
            )
        axis = attrs["axis"] = normalize_axis(attrs["axis"], x.ndim)
        shape = []
        for a, (n, m) in enumerate(zip(x.shape, indices.shape)):
            if a != axis and n != m and 1 not in (n, m):
                raise ShapeError(
                    f"axis {a} of x ({n}) and of indices ({m}) do not broadcast (equal, or 1)"
                )
            shape.append(m if a == axis or n == 1 else n)
        length = x.shape[axis]
        if length == 0 and num_elements(tuple(shape)):
            raise ShapeError(f"axis {axis} of x is empty: no index can be in range")
        value = constant_value(indices)
        if value is not None:
            check_in_range(value, axis, length)
        return tuple(shape), x.dtype

    @staticmethod
    def layout(op: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]:
        """(dims, x_strides, i_strides, length, axis_stride): the kernel's walk (module
        docstring), over the fewest axes."""
        (x, indices), axis = op.inputs, op.attrs["axis"]
        x_steps, i_steps = c_strides(x.shape), c_strides(indices.shape)
        x_strides = [0 if a == axis or n == 1 else x_steps[a] for a, n in enumerate(x.shape)]
        i_strides = [0 if n == 1 else i_steps[a] for a, n in enumerate(indices.shape)]
        dims, x_strides, i_strides = fewest_axes(op.shape, x_strides, i_strides)
        return dims, x_strides, i_strides, x.shape[axis], x_steps[axis]

    def filler(self, op: Any) -> Fill:
        dims, x_strides, i_strides, length, axis_stride = self.layout(op)
        walk = [np.array(v, np.int64) for v in (dims, x_strides, i_strides)]
        columns, axis = row_view_shape(op.shape)[1], op.attrs["axis"]
        kernel = kernels.indexing.take_along_range

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            indices = flat(args[1])
            start, stop = row_start * columns, row_stop * columns
            bad = kernel(flat(args[0]), indices, flat(out), *walk, length, axis_stride, start, stop)
            if bad >= 0:
                raise IndexError(
                    f"take_along_axis: {out_of_range(int(indices[bad]), axis, length)}"
                )

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        from ..kernels.gpu import indexing

        x, indices = (flat(array) for array in inputs)
        return indexing.take_along_launches(x, indices, flat(out), *self.layout(op))

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.take_along_axis(args[0], args[1].astype(np.int64), axis=op.attrs["axis"])


def take_along_axis(
    x: object, indices: object, axis: int | None = -1, name: str | None = None
) -> Tensor:
    """Elements of x picked along `axis` by `indices`, as np.take_along_axis (ONNX's
    GatherElements): out[i, j, k] = x[indices[i, j, k], j, k] for axis 0, and so on.

    `indices`: int32 or int64 of x's rank (a list or array of ints is a constant, int64); on
    the other axes x and indices broadcast as NumPy's (equal sizes, or 1), the output taking
    the broadcast sizes and indices' size along `axis` (the last by default, as NumPy 2's).
    `axis=None` reads x flattened (indices then 1-D). Negative indices count from the end; one
    outside [-n, n) is refused: when the graph is built for constant indices, by the run's
    OpError otherwise (clamped on the GPU).

    >>> x = pg.constant([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    >>> pg.take_along_axis(x, [[1], [0]], axis=1).shape
    (2, 1)
    """
    x = as_tensor(x, what="take_along_axis x")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return build("take_along", (x, as_indices(indices)), {"axis": axis}, name)


# --- gather_nd ---------------------------------------------------------------------------------


@register
class GatherNd(IndexedMovementOp):
    """tf.gather_nd(params, indices, batch_dims): the last axis of indices holds tuples of q
    indices into params' axes [batch_dims, batch_dims + q); each picks the slice of the rest."""

    type = "gather_nd"
    default_name = "GatherNd"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        params, indices = inputs
        check_index_dtype(indices)
        b = attrs["batch_dims"]
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 0:
            raise ShapeError(f"batch_dims must be a non-negative int, got {b!r}")
        b = attrs["batch_dims"] = int(b)
        if indices.ndim < 1:
            raise ShapeError("indices must have at least one axis (its last holds the tuples)")
        if b >= indices.ndim:
            raise ShapeError(
                f"batch_dims {b} must be less than the rank of indices ({indices.ndim})"
            )
        if params.shape[:b] != indices.shape[:b]:
            raise ShapeError(f"the first batch_dims={b} axes of params and indices differ")
        q = indices.shape[-1]
        if q > params.ndim - b:
            raise ShapeError(
                f"index tuples of {q} entries are longer than the {params.ndim - b} axes of "
                f"params after batch_dims={b}"
            )
        shape = indices.shape[:-1] + params.shape[b + q :]
        empty = [b + j for j in range(q) if params.shape[b + j] == 0]
        if empty and num_elements(shape):
            raise ShapeError(f"axis {empty[0]} of params is empty: no index can be in range")
        value = constant_value(indices)
        if value is not None:
            for j in range(q):
                check_in_range(value[..., j], b + j, params.shape[b + j])
        return shape, params.dtype

    @staticmethod
    def view(op: Any) -> tuple[tuple[int, ...], tuple[int, ...], int, int, int]:
        """(sizes, strides, batch_stride, slices, inner): the kernel's arguments (its docstring)."""
        (params, indices), b = op.inputs, op.attrs["batch_dims"]
        q = indices.shape[-1]
        steps = c_strides(params.shape)
        return (
            tuple(params.shape[b : b + q]),
            tuple(steps[b : b + q]),
            num_elements(params.shape[b:]),
            num_elements(indices.shape[b:-1]),
            num_elements(params.shape[b + q :]),
        )

    def filler(self, op: Any) -> Fill:
        sizes, strides, batch_stride, slices, inner = self.view(op)
        sizes_array, strides_array = np.array(sizes, np.int64), np.array(strides, np.int64)
        indices_view = (num_elements(op.inputs[1].shape[:-1]), len(sizes))
        columns, b = row_view_shape(op.shape)[1], op.attrs["batch_dims"]
        kernel = kernels.indexing.gather_nd_range

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            indices = np.ascontiguousarray(args[1]).reshape(indices_view)
            start, stop = row_start * columns, row_stop * columns
            bad = kernel(
                flat(args[0]),
                indices,
                flat(out),
                sizes_array,
                strides_array,
                batch_stride,
                slices,
                inner,
                start,
                stop,
            )
            if bad >= 0:
                tuple_, j = divmod(bad, len(sizes))
                problem = out_of_range(int(indices[tuple_, j]), b + j, sizes[j])
                raise IndexError(f"gather_nd: {problem}")

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        from ..kernels.gpu import indexing

        params, indices = (flat(array) for array in inputs)
        return indexing.gather_nd_launches(params, indices, flat(out), *self.view(op))

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """NumPy's advanced indexing: params as (batch, ...), each batch's tuples as q index
        arrays (negative ones wrap; an out-of-range one raises)."""
        params, indices, b = args[0], np.asarray(args[1], np.int64), op.attrs["batch_dims"]
        q = indices.shape[-1]
        batches = num_elements(params.shape[:b])
        p = params.reshape((batches, *params.shape[b:]))
        tuples = indices.reshape(batches, num_elements(indices.shape[b:-1]), q)
        batch = np.broadcast_to(np.arange(batches)[:, None], tuples.shape[:2])
        picked = p[(batch, *(tuples[..., j] for j in range(q)))]
        return np.ascontiguousarray(picked).reshape(op.shape)


def gather_nd(
    params: object, indices: object, batch_dims: int = 0, name: str | None = None
) -> Tensor:
    """Slices of params picked by the index tuples on the last axis of indices, as
    tf.gather_nd (ONNX's GatherND): with q = indices.shape[-1], the output's shape is
    indices.shape[:-1] + params.shape[batch_dims + q:].

    `batch_dims`: the first axes of params and indices that match one to one (their sizes
    must be equal); the tuples index the axes after them. Negative indices count from the end
    (as NumPy and ONNX; TensorFlow refuses them); one outside [-n, n) is refused: when the
    graph is built for constant indices, by the run's OpError otherwise (clamped on the GPU).

    >>> pg.gather_nd(pg.constant([[1.0, 2.0], [3.0, 4.0]]), [[1, 0], [0, -1]]).shape
    (2,)
    """
    params = as_tensor(params, what="gather_nd params")
    return build("gather_nd", (params, as_indices(indices)), {"batch_dims": batch_dims}, name)


# --- broadcast_to ------------------------------------------------------------------------------


@register
class BroadcastTo(StridedCopy):
    """np.broadcast_to(x, shape), copied: a strided copy with stride 0 along broadcast axes."""

    type = "broadcast_to"
    default_name = "BroadcastTo"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x = inputs[0]
        shape = attrs["shape"] = _ints(attrs["shape"], "shape")
        if any(n < 0 for n in shape):
            raise ShapeError(f"shape must hold non-negative ints, got {list(shape)!r}")
        if len(shape) < x.ndim:
            raise ShapeError(
                f"cannot broadcast {list(x.shape)} to {list(shape)}: the target has fewer axes"
            )
        for a, n in enumerate(x.shape):
            target = shape[len(shape) - x.ndim + a]
            if n not in (1, target):
                raise ShapeError(
                    f"cannot broadcast {list(x.shape)} to {list(shape)}: axis {a} of x has "
                    f"size {n}, not 1 or {target} (NumPy's rule)"
                )
        return shape, x.dtype

    def walk(self, op: Any) -> tuple[int, Sequence[int], Sequence[int]]:
        x = op.inputs[0]
        lead = len(op.shape) - x.ndim
        steps = c_strides(x.shape)
        strides = [0] * lead + [0 if n == 1 else steps[a] for a, n in enumerate(x.shape)]
        return 0, op.shape, strides

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.broadcast_to(args[0], op.shape).copy()


def broadcast_to(x: object, shape: Sequence[int], name: str | None = None) -> Tensor:
    """x repeated along axes of size 1 (and new leading axes) to `shape`, as np.broadcast_to
    (tf.broadcast_to), but a new C-contiguous array: each axis of x must be 1 or the target's.

    ONNX's Expand broadcasts both ways (its shape may hold 1s where x is larger): pass it
    `pg.ops.broadcast.broadcast_shapes(x.shape, shape)`.

    >>> pg.broadcast_to(pg.constant([1.0, 2.0, 3.0]), (2, 3)).shape
    (2, 3)
    """
    return build("broadcast_to", (as_tensor(x, what="broadcast_to x"),), {"shape": shape}, name)
