"""Index-driven data movement: gather and top_k, and `MovementOp`, the base of every shape op
that copies (here and in `ops.shape_ops`).

A movement op's value is a new C-contiguous array whose elements are copies of input elements.
Shards are ranges of the output's rows (its row view, `dtypes.row_view_shape`), cut by shape
only; each writes its own rows, and an element's value does not depend on which shard copied it,
so every executor and thread setting gives the same bits as NumPy.

Indices are checked where they are known: constant indices when the graph is built (a
`pg.GraphError` naming the op), computed or fed ones by the CPU kernel before it reads through
them (an IndexError naming the index and the axis size, which the session reports as an
`pg.OpError` naming the op). On the GPU an out-of-range index is clamped into the axis instead
(`kernels.gpu.shape` says why).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import kernels
from ..dtypes import INDEX_DTYPES, Shape, kind_name, num_elements, row_view_shape
from ..graph import Tensor, scope
from .builder import _describe_failure, as_tensor, build
from .registry import Arrays, Cost, OpDef, ShapeError, register

__all__ = ["gather", "top_k"]

#: fill(args, out, row_start, row_stop): copy rows [row_start, row_stop) of out's row view.
Fill = Callable[[Arrays, np.ndarray, int, int], None]


def flat(array: Any) -> Any:
    """A C-contiguous array (host or device) as 1-D (a 0-d one as one element): a view."""
    if isinstance(array, np.ndarray):
        array = np.ascontiguousarray(array)
    return array.reshape(array.size)


def normalize_axis(axis: object, ndim: int, what: str = "axis") -> int:
    """`axis` (an int in [-ndim, ndim)) as a non-negative int, or ShapeError."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ShapeError(f"{what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what} {axis} is out of range for rank {ndim}")
    return int(axis) % ndim


def check_index_dtype(indices: Any) -> None:
    """ShapeError unless `indices` (a tensor) is int32 or int64."""
    if indices.dtype.name not in INDEX_DTYPES:
        raise ShapeError(f"indices must be int32 or int64, not {indices.dtype.name}")


def out_of_range(index: int, axis: int, length: int) -> str:
    """What is wrong with `index` on an axis of `length` (the build's and the kernels' text)."""
    return (
        f"index {index} is out of range for axis {axis} of size {length} (indices must lie in "
        f"[{-length}, {length}))"
    )


def constant_value(tensor: Any) -> np.ndarray | None:
    """The value of a constant tensor (known when the graph is built), else None."""
    return tensor.op.attrs["value"] if tensor.op.type == "constant" else None


def check_in_range(value: np.ndarray, axis: int, length: int) -> None:
    """ShapeError naming the first of the known indices `value` outside [-length, length)."""
    bad = (value < -length) | (value >= length)
    if bad.any():
        raise ShapeError(out_of_range(int(value[bad].flat[0]), axis, length))


def as_indices(indices: object) -> Tensor:
    """A tensor as is; a list or array of ints a constant, int64."""
    if isinstance(indices, Tensor):
        return indices
    array = np.asarray(indices)
    if array.dtype.kind in "iu" or array.size == 0:
        array = array.astype(np.int64)
    from .sources import constant

    return constant(array)


def refuse(op_type: str, name: str, inputs: tuple[Tensor, ...], problem: str) -> Exception:
    """The GraphError a builder raises for bad arguments, naming the op, scope and shapes."""
    from ..errors import GraphError

    return GraphError(_describe_failure(op_type, name, inputs, ShapeError(problem)))


class MovementOp(OpDef):
    """An op that copies input elements into a new array, row range by row range.

    Subclasses give `filler(op)`: a function filling rows [row_start, row_stop) of the output's
    row view from the inputs, its op-only work (views, strides) settled once.
    """

    blas_free = True
    flops_per_element = 0

    def cost(self, op: Any) -> Cost:
        moved = num_elements(op.shape) * op.dtype.itemsize
        return Cost(0, 2 * moved + self.extra_bytes(op))

    def extra_bytes(self, op: Any) -> int:
        """Bytes read besides the elements copied (gather's indices)."""
        return 0

    def filler(self, op: Any) -> Fill:
        raise NotImplementedError

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        return self.filler(op), args, np.empty(op.shape, op.dtype)

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        fill, args, out = work
        fill(args, out, row_start, row_stop)

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work[2]

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        fill, shape, dtype, rows = self.filler(op), op.shape, op.dtype, self.rows(op)

        def moved(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            fill(args, out, 0, rows)
            return out

        return moved


class IndexedMovementOp(MovementOp):
    """A movement op whose second input holds indices, read besides the elements copied."""

    def extra_bytes(self, op: Any) -> int:
        indices = op.inputs[1]
        return num_elements(indices.shape) * indices.dtype.itemsize


def _columns(op: Any) -> int:
    """Elements per row of the op's output row view: shard rows times this are flat ranges."""
    return row_view_shape(op.shape)[1]


@register
class Gather(IndexedMovementOp):
    """np.take(params, indices, axis): params seen as (outer, length, inner), the output as
    (outer, indices.size, inner); shards are flat ranges of output rows."""

    type = "gather"
    default_name = "GatherV2"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        params, indices = inputs
        if params.ndim == 0:
            raise ShapeError("params must have at least one axis")
        check_index_dtype(indices)
        axis = attrs["axis"] = normalize_axis(attrs["axis"], params.ndim)
        shape = params.shape[:axis] + indices.shape + params.shape[axis + 1 :]
        length = params.shape[axis]
        if length == 0 and num_elements(shape):
            raise ShapeError(f"axis {axis} of params is empty: no index can be in range")
        value = constant_value(indices)
        if value is not None:  # known now: refuse a bad one before anything runs
            check_in_range(value, axis, length)
        return shape, params.dtype

    @staticmethod
    def view(op: Any) -> tuple[int, int]:
        """(length, inner) of params around the gathered axis."""
        params, axis = op.inputs[0], op.attrs["axis"]
        return params.shape[axis], num_elements(params.shape[axis + 1 :])

    def filler(self, op: Any) -> Fill:
        (length, inner), columns, axis = self.view(op), _columns(op), op.attrs["axis"]
        kernel = kernels.shape.gather_range

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            indices = flat(args[1])
            start, stop = row_start * columns, row_stop * columns
            bad = kernel(flat(args[0]), indices, flat(out), length, inner, start, stop)
            if bad >= 0:
                raise IndexError(f"gather: {out_of_range(int(indices[bad]), axis, length)}")

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        length, inner = self.view(op)
        params, indices = (flat(x) for x in inputs)
        return kernels.gpu.gather_launches(params, indices, flat(out), length, inner)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.take(args[0], args[1], axis=op.attrs["axis"])


@register
class TopKIndices(MovementOp):
    """The positions of the k largest elements along the last axis (top_k's first op): the
    insertion kernel `kernels.shape.top_k_rows`, shards of rows."""

    type = "top_k_indices"
    default_name = "TopKIndices"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        (x,), k = inputs, attrs["k"]
        if x.ndim == 0:
            raise ShapeError("top_k needs at least one axis")
        if kind_name(x.dtype) == "bool":
            raise ShapeError("top_k takes numbers, not bool: cast it (pg.cast)")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ShapeError(f"k must be a non-negative int, got {k!r}")
        if k > x.shape[-1]:
            raise ShapeError(f"k={k} is larger than the last axis ({x.shape[-1]})")
        attrs["k"] = int(k)
        return (*x.shape[:-1], int(k)), np.dtype(np.int32)

    def cost(self, op: Any) -> Cost:
        x = op.inputs[0]
        elements = num_elements(x.shape)
        return Cost(elements * max(1, op.attrs["k"]), elements * x.dtype.itemsize + 4 * elements)

    def filler(self, op: Any) -> Fill:
        rows, length = row_view_shape(op.inputs[0].shape)
        width = op.attrs["k"]
        kernel = kernels.shape.top_k_rows

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            x = np.ascontiguousarray(args[0]).reshape(rows, length)
            kernel(x, out.reshape(rows, width), row_start, row_stop)

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        rows, length = row_view_shape(op.inputs[0].shape)
        x, out = inputs[0].reshape(rows, length), out.reshape(rows, op.attrs["k"])
        return kernels.gpu.top_k_launches(x, out)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """A stable sort on descending ranks: np.unique ranks NaN above every number and -0.0
        with 0.0, as the kernel compares."""
        x = args[0]
        ranks = np.unique(x, return_inverse=True)[1].reshape(x.shape)
        positions = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
        order = np.lexsort((positions, -ranks), axis=-1)
        return order[..., : op.attrs["k"]].astype(np.int32)


@register
class TakeAlongAxis(MovementOp):
    """np.take_along_axis(x, indices, -1) with indices in [0, n) (top_k's second op)."""

    type = "take_along_axis"
    default_name = "TakeAlongAxis"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, indices = inputs
        check_index_dtype(indices)
        if x.ndim == 0 or indices.ndim != x.ndim or indices.shape[:-1] != x.shape[:-1]:
            raise ShapeError("indices must have x's shape but for the last axis")
        return indices.shape, x.dtype

    def filler(self, op: Any) -> Fill:
        rows, length = row_view_shape(op.inputs[0].shape)
        width = op.shape[-1]
        kernel = kernels.shape.take_along_last

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            x = np.ascontiguousarray(args[0]).reshape(rows, length)
            indices = np.ascontiguousarray(args[1]).reshape(rows, width)
            bad = kernel(x, indices, out.reshape(rows, width), row_start, row_stop)
            if bad >= 0:
                raise IndexError(
                    f"take_along_axis: index {int(indices.flat[bad])} is out of range for the "
                    f"last axis of size {length}"
                )

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        rows, length = row_view_shape(op.inputs[0].shape)
        width = op.shape[-1]
        x, indices = inputs[0].reshape(rows, length), inputs[1].reshape(rows, width)
        return kernels.gpu.take_along_last_launches(x, indices, out.reshape(rows, width))

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.take_along_axis(args[0], args[1].astype(np.int64), axis=-1)


def gather(params: object, indices: object, axis: int = 0, name: str | None = None) -> Tensor:
    """Slices of `params` along `axis` at `indices`, as np.take: the output's shape is
    params.shape[:axis] + indices.shape + params.shape[axis + 1:].

    `indices`: an int32 or int64 tensor of any shape (0-d too), or a list or array of ints
    (a constant, int64). Negative indices count from the end, as in NumPy; an index outside
    [-n, n) is refused: when the graph is built for constant indices, by the run's OpError
    otherwise (on the GPU it is clamped: `kernels.gpu.shape`).

    >>> pg.gather(pg.constant([[1.0, 2.0], [3.0, 4.0]]), [1, 0, -1]).shape
    (3, 2)
    """
    params = as_tensor(params, what="gather params")
    return build("gather", (params, as_indices(indices)), {"axis": axis}, name)


class TopK(NamedTuple):
    """What `top_k` returns (TensorFlow's TopKV2 outputs)."""

    values: Tensor
    indices: Tensor


def top_k(x: object, k: int = 1, sorted: bool = True, name: str | None = None) -> TopK:
    """The k largest entries along the last axis and their positions, as tf.nn.top_k:
    `values` in descending order (x's dtype), `indices` int32.

    Ties go to the lower position first. NaN counts as larger than every number (as TensorFlow
    on the CPU), NaNs among themselves by position; -0.0 and 0.0 tie. The result is always
    sorted (`sorted=False` allows any order, as in TensorFlow, and gets this one). Two ops in
    `pg.scope(name or "TopKV2")`: "indices" (the positions) and "values" (taken from x at them).

    >>> values, indices = pg.top_k(pg.constant([[1.0, 3.0, 2.0]]), k=2)
    >>> values.shape, indices.dtype
    ((1, 2), dtype('int32'))
    """
    x = as_tensor(x, what="top_k input")
    with scope(name or "TopKV2"):
        attrs = {"k": k, "sorted": bool(sorted)}
        indices = build("top_k_indices", (x,), attrs, "indices")
        values = build("take_along_axis", (x, indices), {}, "values")
    return TopK(values, indices)
