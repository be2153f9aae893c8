"""Reductions: reduce_sum, reduce_mean, reduce_max, reduce_min (TensorFlow 1.x names, NumPy's
axis semantics).

`axis` is None (every axis), an int or a tuple/list of ints (negative ones count from the end;
a repeated or out-of-range axis is refused at build time), and `keepdims` keeps each reduced
axis as a 1. Sums and means accumulate in float64 (`kernels.reduce`), max and min are exact;
integer sums wrap in their dtype (NumPy's `np.sum(x, dtype=x.dtype)`: NumPy's own default
would widen int32 to int64), and a mean of integers is refused (cast first, as TensorFlow
would compute it in the integer dtype and NumPy in float64: neither is what one expects).

Every reduction sees its input as a 3-D (outer, length, inner) array around the reduced extent
(`reduced_view`): the reduced axes that are adjacent, once axes of size 1 are left out, merge
into one `length`, the kept axes before them into `outer`, those after them into `inner`, a
free reshape. Reduced axes that are not adjacent (axes 0 and 2 of a 3-D array) cannot be one
extent of the same memory; `prepare` then makes a transposed copy with the kept axes first and
the reduced ones last, (outer, length, 1): one pass of copying, after which the reduction runs
along contiguous rows, its fastest kernel. (Reducing in several passes instead, an extent at a
time, would need a float64 intermediate as large as the copy, and add its rounding.) On the GPU
no copy is made: one thread an output walks the reduced axes through their strides
(`kernels.gpu.reduce_axes_launches`), in the order of the copy.

Shards are outer rows, each writing its own outputs; with exactly one outer row they are ranges
of the reduced extent, each with a partial result that `finish` folds in shard order. Shard
boundaries depend on shapes only, so every executor and thread setting gives the same bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements
from ..graph import Tensor
from .builder import as_tensor, build
from .registry import Arrays, Cost, OpDef, ShapeError, register

__all__ = ["reduce_max", "reduce_mean", "reduce_min", "reduce_sum"]

Axis = int | Sequence[int] | None


def normalize_axes(axis: object, shape: Shape) -> tuple[int, ...]:
    """The reduced axes as sorted non-negative ints (every axis for None), or ShapeError."""
    rank = len(shape)
    if axis is None:
        return tuple(range(rank))
    many = isinstance(axis, (tuple, list))
    given = list(axis) if many else [axis]  # type: ignore[arg-type]
    for a in given:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ShapeError(f"axis must be None or an int, or a tuple of ints; got {axis!r}")
    axes = []
    for a in given:
        if not -rank <= a < rank:
            raise ShapeError(f"axis {a} is out of range for shape {list(shape)}")
        if int(a) % rank in axes:
            raise ShapeError(f"axis {list(given)} names axis {int(a) % rank} twice")
        axes.append(int(a) % rank)
    return tuple(sorted(axes))


@dataclass(frozen=True)
class Layout:
    """How a reduction sees its input: a transposed copy first (`perm`, None: none), then the
    3-D view (outer, length, inner) with the reduced extent in the middle."""

    perm: tuple[int, ...] | None
    outer: int
    length: int
    inner: int


@functools.lru_cache(maxsize=4096)
def reduced_view(shape: Shape, axes: tuple[int, ...]) -> Layout:
    """The `Layout` of a reduction of `shape` over `axes` (module docstring).

    >>> reduced_view((4, 5, 6), (1,))
    Layout(perm=None, outer=4, length=5, inner=6)
    >>> reduced_view((4, 5, 6), (0, 2))
    Layout(perm=(1, 0, 2), outer=5, length=24, inner=1)
    """
    kept = num_elements(tuple(d for a, d in enumerate(shape) if a not in axes))
    length = num_elements(tuple(shape[a] for a in axes))
    if kept * length == 0:  # no values at all: any view of them will do
        return Layout(None, kept, length, 1)
    runs: list[list[Any]] = []  # [reduced?, size] of the runs of axes of size > 1
    for a, size in enumerate(shape):
        if size == 1:
            continue
        if runs and runs[-1][0] == (a in axes):
            runs[-1][1] *= size
        else:
            runs.append([a in axes, size])
    reduced = [i for i, (is_reduced, _) in enumerate(runs) if is_reduced]
    if not reduced:  # nothing of size > 1 is reduced: a copy, row by row
        return Layout(None, kept, 1, 1)
    if len(reduced) == 1:
        i = reduced[0]
        outer = num_elements(tuple(size for _, size in runs[:i]))
        return Layout(None, outer, length, num_elements(tuple(size for _, size in runs[i + 1 :])))
    perm = tuple(a for a in range(len(shape)) if a not in axes) + axes
    return Layout(perm, kept, length, 1)


def _reduced_view(x: np.ndarray, outer: int, length: int, inner: int) -> np.ndarray:
    """x as (outer, length, inner) around the reduced axis; (outer, length) when inner is 1,
    whose contiguous rows `kernels.reduce.sum_last` sums as vectors."""
    return x.reshape(outer, length) if inner == 1 else x.reshape(outer, length, inner)


def _laid_out(x: np.ndarray, layout: Layout, rows: bool) -> np.ndarray:
    """x as its layout's view: the transposed copy first where there is one; 2-D (`rows`, inner
    1: the last-axis kernels) or 3-D."""
    if layout.perm is not None:
        x = np.ascontiguousarray(x.transpose(layout.perm))
    if rows:
        return _reduced_view(x, layout.outer, layout.length, layout.inner)
    return x.reshape(layout.outer, layout.length, layout.inner)


def _sum_into(x: np.ndarray, partial: np.ndarray, rows: tuple, lanes: Any) -> None:
    """partial += the sums of x over `rows` (outer start, stop, length start, stop): along the
    last axis in `lanes` (a float64 scratch of `kernels.reduce.LANES`), else row by row (an
    integer x: in int64, `kernels.reduce.sum_int`)."""
    if x.dtype.kind == "i":
        kernels.reduce.sum_int(x, partial, *rows)
    elif lanes is None:
        kernels.reduce.sum_middle(x, partial, *rows)
    else:
        kernels.reduce.sum_last(x, partial, *rows, lanes)


class Reduction(OpDef):
    """What the four reductions share: the axis rule, the shapes, the layout, the shards."""

    kind: str
    #: Vectorized float64 lanes (measured: benchmarks/reduce_sum.py).
    flops_per_ns = 20.0
    blas_free = True  # kernels.reduce
    #: Input kinds taken ("f": floats, "i": ints).
    kinds = "fi"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        (x,) = inputs
        axes = normalize_axes(attrs.get("axis"), x.shape)
        keepdims = attrs.get("keepdims", False)
        if not isinstance(keepdims, (bool, np.bool_)):
            raise ShapeError(f"keepdims must be True or False, got {keepdims!r}")
        if x.dtype.kind not in self.kinds:
            if x.dtype.kind == "i":
                raise ShapeError(
                    f"{self.type} of {x.dtype.name} values is refused: cast them to a float "
                    "first (pg.cast(x, 'float64'))"
                )
            raise ShapeError(f"{self.type} takes float or int values, not {x.dtype.name}")
        self.check_extent(x.shape, axes)
        attrs["axis"], attrs["keepdims"] = axes, bool(keepdims)
        if keepdims:
            shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape))
        else:
            shape = tuple(d for a, d in enumerate(x.shape) if a not in axes)
        return shape, x.dtype

    def check_extent(self, shape: Shape, axes: tuple[int, ...]) -> None:
        """Refuse what has no value (max and min of nothing)."""

    def cost(self, op: Any) -> Cost:
        n = num_elements(op.inputs[0].shape)
        copy = 2 * n if self.layout(op).perm is not None else 0
        return Cost(n, (n + copy + num_elements(op.shape)) * op.dtype.itemsize)

    @staticmethod
    def layout(op: Any) -> Layout:
        return reduced_view(op.inputs[0].shape, op.attrs["axis"])

    @classmethod
    def view(cls, op: Any) -> tuple[int, int, int]:
        """(outer, length, inner) around the reduced extent (axis=None: one long row)."""
        layout = cls.layout(op)
        return layout.outer, layout.length, layout.inner

    def rows(self, op: Any) -> int:
        """Outer rows, except for exactly one outer row: then ranges of the reduced extent.

        Zero outer rows (shape (0, n), axis 1) means zero rows of work: the output is empty.
        """
        outer, length, _ = self.view(op)
        return length if outer == 1 else outer

    @staticmethod
    def shard_rows(outer: int, length: int, row_start: int, row_stop: int) -> tuple:
        """The (outer start, stop, length start, stop) a shard's rows stand for."""
        return (0, 1, row_start, row_stop) if outer == 1 else (row_start, row_stop, 0, length)

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        return kernels.gpu.reduce.reduce_axes_launches(self.kind, inputs[0], out, op.attrs["axis"])


@register
class ReduceSum(Reduction):
    """Sum over axes, accumulated in float64 (integers: in int64, wrapping to the dtype)."""

    type = "reduce_sum"
    default_name = "Sum"
    kind = "sum"

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        layout = self.layout(op)
        outer, inner = layout.outer, layout.inner
        integer = op.dtype.kind == "i"
        accumulator = np.int64 if integer else np.float64
        partials = np.zeros((num_shards if outer == 1 else 1, outer, inner), accumulator)
        # along the last axis: a scratch of lanes a shard (see _sum_into)
        last = inner == 1 and not integer
        lanes = np.empty((num_shards, kernels.reduce.LANES)) if last else None
        return _laid_out(args[0], layout, last), partials, lanes

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        x, partials, lanes = work
        outer, length = x.shape[:2]
        # shards own ranges of the reduced extent, each with its partial sum (one outer row),
        # or disjoint output rows (none at all when outer is 0)
        rows = self.shard_rows(outer, length, row_start, row_stop)
        partial = partials[shard if outer == 1 else 0]
        _sum_into(x, partial, rows, None if lanes is None else lanes[shard])

    def finish(self, op: Any, work: Any) -> np.ndarray:
        x, partials, _ = work
        total = partials[0].copy()
        for partial in partials[1:]:  # fixed shard order: bit-identical on any threads
            total += partial  # int64 wraps, as the sum would in the dtype
        return self.scale(total, x.shape[1]).astype(op.dtype).reshape(op.shape)

    def scale(self, total: np.ndarray, length: int) -> np.ndarray:
        return total

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: `prepare`, `compute` of all rows and `finish` in one function (the same
        kernel call on the same rows into a zeroed total, the same scale and cast: the same
        bits), without the work tuple and the partials' bookkeeping (~10 us of a small sum)."""
        layout = self.layout(op)
        outer, length, inner = layout.outer, layout.length, layout.inner
        shape, dtype, scale = op.shape, op.dtype, self.scale
        integer = dtype.kind == "i"
        accumulator, last = (np.int64 if integer else np.float64), inner == 1 and not integer
        rows = (0, outer, 0, length)

        def summed(args: Arrays) -> np.ndarray:
            total = np.zeros((outer, inner), accumulator)
            lanes = np.empty(kernels.reduce.LANES) if last else None
            _sum_into(_laid_out(args[0], layout, last), total, rows, lanes)
            return scale(total, length).astype(dtype).reshape(shape)

        return summed

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        """Float sums without a transposed copy: `reduce_sum_launches` (its two-pass form for
        few outputs over a long extent); others: `reduce_axes_launches`."""
        layout = self.layout(op)
        if op.dtype.kind != "f" or layout.perm is not None:
            return super().gpu_launches(op, inputs, out, scratch, config)
        outer, length, inner = layout.outer, layout.length, layout.inner
        x = inputs[0].reshape(outer, length, inner)
        mean = self.kind == "mean"
        return kernels.gpu.reduce_sum_launches(x, out.reshape(outer, inner), mean, scratch)

    def gpu_scratch_size(self, op: Any) -> int:
        if op.dtype.kind != "f" or self.layout(op).perm is not None:
            return 0
        return kernels.gpu.reduce_scratch_size(*self.view(op))

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
        if op.dtype.kind == "i":
            return np.sum(args[0], axis=axis, dtype=op.dtype, keepdims=keepdims)
        x64 = np.asarray(args[0], np.float64)
        return np.sum(x64, axis=axis, keepdims=keepdims).astype(op.dtype)


@register
class ReduceMean(ReduceSum):
    """Mean over axes (floats), the float64 sum divided by the count; NaN over nothing."""

    type = "reduce_mean"
    default_name = "Mean"
    kind = "mean"
    kinds = "f"

    def scale(self, total: np.ndarray, length: int) -> np.ndarray:
        return total / length if length else np.full_like(total, np.nan)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        x64 = np.asarray(args[0], np.float64)
        with np.errstate(all="ignore"):
            if x64.size == 0 or 0 in (x64.shape[a] for a in op.attrs["axis"]):
                total = np.sum(x64, axis=op.attrs["axis"], keepdims=op.attrs["keepdims"])
                return np.full_like(total, np.nan, dtype=op.dtype)
            mean = np.mean(x64, axis=op.attrs["axis"], keepdims=op.attrs["keepdims"])
        return np.asarray(mean).astype(op.dtype)


@register
class ReduceMax(Reduction):
    """Maximum over axes, exact; NaN propagates (the first in index order), +0.0 beats -0.0."""

    type = "reduce_max"
    default_name = "Max"
    kind = "max"

    def check_extent(self, shape: Shape, axes: tuple[int, ...]) -> None:
        if 0 in (shape[a] for a in axes):
            raise ShapeError(
                f"the {self.kind} over axes {list(axes)} of shape {list(shape)} has no values "
                f"to take (NumPy: zero-size array to reduction operation which has no identity)"
            )

    def identity(self, dtype: np.dtype) -> Any:
        """What every value replaces: the lowest value of the dtype (highest for min)."""
        if dtype.kind == "f":
            return -np.inf if self.kind == "max" else np.inf
        info = np.iinfo(dtype)
        return info.min if self.kind == "max" else info.max

    def kernel(self, last: bool) -> Callable[..., None]:
        return getattr(kernels.reduce, f"{self.kind}_{'last' if last else 'middle'}")

    @staticmethod
    def scratch(count: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """The last-axis kernel's lanes (the dtype) and NaN flags (ints of its width)."""
        flags = np.int32 if dtype.itemsize == 4 else np.int64
        lanes = kernels.reduce.LANES
        return np.empty((count, lanes), dtype), np.empty((count, lanes), flags)

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        layout = self.layout(op)
        outer, inner, last = layout.outer, layout.inner, layout.inner == 1
        shape = (num_shards if outer == 1 else 1, outer, inner)
        partials = np.full(shape, self.identity(op.dtype), op.dtype)
        scratch = self.scratch(num_shards, op.dtype) if last else None
        return _laid_out(args[0], layout, last), partials, scratch, self.kernel(last)

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        x, partials, scratch, kernel = work
        outer, length = x.shape[:2]
        rows = self.shard_rows(outer, length, row_start, row_stop)
        partial = partials[shard if outer == 1 else 0]
        if scratch is None:
            kernel(x, partial, *rows)
        else:
            kernel(x, partial, *rows, scratch[0][shard], scratch[1][shard])

    def finish(self, op: Any, work: Any) -> np.ndarray:
        partials = work[1]
        if len(partials) == 1:
            return partials[0].reshape(op.shape)
        result = np.empty(partials.shape[1:], partials.dtype)
        getattr(kernels.reduce, f"fold_{self.kind}")(partials, result)  # in shard order
        return result.reshape(op.shape)

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: the same kernel call on all rows into a fresh result (the same bits as
        prepare, compute and finish)."""
        layout = self.layout(op)
        outer, length, inner, last = layout.outer, layout.length, layout.inner, layout.inner == 1
        shape, dtype, kernel, identity = (
            op.shape,
            op.dtype,
            self.kernel(last),
            self.identity(op.dtype),
        )
        rows = (0, outer, 0, length)

        def extreme(args: Arrays) -> np.ndarray:
            result = np.full((outer, inner), identity, dtype)
            x = _laid_out(args[0], layout, last)
            if last:
                parts, flags = self.scratch(1, dtype)
                kernel(x, result, *rows, parts[0], flags[0])
            else:
                kernel(x, result, *rows)
            return result.reshape(shape)

        return extreme

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
        function = np.max if self.kind == "max" else np.min
        return np.asarray(function(args[0], axis=axis, keepdims=keepdims)).astype(op.dtype)


@register
class ReduceMin(ReduceMax):
    """Minimum over axes, exact; NaN propagates (the first in index order), -0.0 beats +0.0."""

    type = "reduce_min"
    default_name = "Min"
    kind = "min"


def _reduce(op_type: str, x: object, axis: Axis, keepdims: bool, name: str | None) -> Tensor:
    return build(op_type, (as_tensor(x),), {"axis": axis, "keepdims": keepdims}, name)


def reduce_sum(
    x: object, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Sum over `axis` (None: every axis; an int; a tuple of ints), accumulated in float64;
    `keepdims` keeps the reduced axes as 1s. Integer sums wrap in their dtype (as
    `np.sum(x, dtype=x.dtype)`).

    >>> pg.reduce_sum(pg.constant(np.ones((2, 3, 4))), axis=(0, 2), keepdims=True).shape
    (1, 3, 1)
    """
    return _reduce("reduce_sum", x, axis, keepdims, name)


def reduce_mean(
    x: object, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Mean over `axis` (None, an int or a tuple of ints) of float values (NaN over an empty
    extent); `keepdims` keeps the reduced axes as 1s. Cast integers first."""
    return _reduce("reduce_mean", x, axis, keepdims, name)


def reduce_max(
    x: object, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Maximum over `axis` (None, an int or a tuple of ints), exact; NaN if any value is NaN
    (as `np.max`); an empty extent is refused. Of +0.0 and -0.0 the result is +0.0.

    >>> pg.reduce_max(pg.constant([[1.0, 5.0], [7.0, 2.0]]), axis=-1).shape
    (2,)
    """
    return _reduce("reduce_max", x, axis, keepdims, name)


def reduce_min(
    x: object, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Minimum over `axis` (None, an int or a tuple of ints), exact; NaN if any value is NaN
    (as `np.min`); an empty extent is refused. Of +0.0 and -0.0 the result is -0.0."""
    return _reduce("reduce_min", x, axis, keepdims, name)
