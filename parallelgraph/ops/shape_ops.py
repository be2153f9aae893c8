"""Shape ops: reshape, expand_dims, squeeze, transpose, concat, split, slice and `t[...]`
(`getitem`); gather and top_k live in `ops.gather` and are re-exported here.

Three kinds of op:

- *Views* (reshape, expand_dims, squeeze): one `Reshape` OpDef whose subclasses differ only in
  their shape rule. On the CPU the value is `x.reshape(shape)`, a view of the input: no kernel,
  cost 0 (the session copies a fetched view). On the GPU the executor preallocates every output,
  so there it is one device-to-device copy.
- *Strided copies* (transpose, slice, split's pieces and every `t[...]`): one kernel
  (`kernels.shape.strided_copy`) reads output element e at x[base + index(e) . strides], where
  index(e) is e's multi-index in the output; a transpose permutes the input's strides, a slice
  multiplies them by its steps and starts at its begin. The host merges axes that are
  contiguous in both (a slice of whole rows is one run) and drops axes of size 1, so the kernel
  sees the fewest axes. `slice` and `getitem` are one op type, "strided_slice".
- *concat*: each input copied into its columns of the output's rows.

Every copy shards by output rows (`ops.gather.MovementOp`) and is exact: the same bits as NumPy
on every executor and thread setting. Bad arguments are refused when the op is built, with a
`pg.GraphError` naming the op, its scope and the shapes.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements, row_view_shape
from ..graph import Tensor, scope
from .builder import as_tensor, build
from .gather import Fill, MovementOp, flat, gather, normalize_axis, refuse, top_k
from .registry import Arrays, Cost, OpDef, ShapeError, register

__all__ = [
    "concat",
    "expand_dims",
    "gather",
    "getitem",
    "reshape",
    "slice",
    "split",
    "squeeze",
    "top_k",
    "transpose",
]


def _ints(values: object, what: str) -> tuple[int, ...]:
    """A sequence of ints (NumPy ints too, not bools) as a tuple, or ShapeError."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    if isinstance(values, (Tensor, str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ShapeError(f"{what} must be a list of ints, got {values!r}")
    items = tuple(values)
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in items):
        raise ShapeError(f"{what} must hold ints, got {list(items)!r}")
    return tuple(int(v) for v in items)


# --- views -----------------------------------------------------------------------------------


@register
class Reshape(OpDef):
    """The value of x in another shape of as many elements: a view on the CPU."""

    type = "reshape"
    default_name = "Reshape"
    blas_free = True

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x = inputs[0]
        shape = _ints(attrs["shape"], "shape")
        unknown = [axis for axis, size in enumerate(shape) if size == -1]
        if len(unknown) > 1 or any(size < -1 for size in shape):
            raise ShapeError(f"shape {list(shape)} may hold one -1 and sizes >= 0 otherwise")
        known = num_elements(tuple(size for size in shape if size != -1))
        count = num_elements(x.shape)
        if unknown:
            if known == 0 or count % known:
                raise ShapeError(
                    f"cannot reshape {list(x.shape)} ({count} elements) into {list(shape)}"
                )
            shape = tuple(count // known if size == -1 else size for size in shape)
        elif known != count:
            raise ShapeError(
                f"cannot reshape {list(x.shape)} ({count} elements) into {list(shape)} "
                f"({known} elements)"
            )
        attrs["shape"] = shape
        return shape, x.dtype

    def cost(self, op: Any) -> Cost:
        return Cost(0, 0)

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        return args[0]

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        pass  # nothing moves

    def finish(self, op: Any, work: Any) -> np.ndarray:
        return work.reshape(op.shape)

    def whole(self, op: Any, config: Any = None) -> Any:
        shape = op.shape
        return lambda args: args[0].reshape(shape)

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        if out.size == 0:
            return []
        return [kernels.gpu.DeviceCopy(flat(inputs[0]), flat(out))]

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.reshape(args[0], op.shape)


@register
class ExpandDims(Reshape):
    """x with a new axis of size 1 at `axis` (in [-rank - 1, rank], as np.expand_dims)."""

    type = "expand_dims"
    default_name = "ExpandDims"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, axis = inputs[0], attrs["axis"]
        if isinstance(axis, (int, np.integer)) and not -x.ndim - 1 <= axis <= x.ndim:
            raise ShapeError(
                f"axis {axis} is out of range for a new axis of a rank-{x.ndim} tensor "
                f"(use {-x.ndim - 1} to {x.ndim})"
            )
        axis = attrs["axis"] = normalize_axis(axis, x.ndim + 1)
        return (*x.shape[:axis], 1, *x.shape[axis:]), x.dtype


@register
class Squeeze(Reshape):
    """x without its axes of size 1 (all of them, or those of `axis`)."""

    type = "squeeze"
    default_name = "Squeeze"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, axis = inputs[0], attrs["axis"]
        if axis is None:
            axes = {a for a, size in enumerate(x.shape) if size == 1}
        else:
            listed = (axis,) if isinstance(axis, (int, np.integer)) else _ints(axis, "axis")
            axes = {normalize_axis(a, x.ndim) for a in listed}
            if len(axes) != len(listed):
                raise ShapeError(f"axis {axis!r} names an axis twice")
            wide = sorted(a for a in axes if x.shape[a] != 1)
            if wide:
                raise ShapeError(f"cannot squeeze axis {wide[0]} of size {x.shape[wide[0]]}")
        attrs["axis"] = tuple(sorted(axes))
        return tuple(size for a, size in enumerate(x.shape) if a not in axes), x.dtype


def reshape(x: object, shape: object, name: str | None = None) -> Tensor:
    """x's elements in C order in `shape` (one size may be -1: whatever the others leave).

    >>> pg.reshape(pg.constant(np.zeros((2, 3))), (3, -1)).shape
    (3, 2)
    """
    return build("reshape", (as_tensor(x),), {"shape": shape}, name)


def expand_dims(x: object, axis: int, name: str | None = None) -> Tensor:
    """x with a new axis of size 1 inserted at `axis` (negative counts from the end)."""
    return build("expand_dims", (as_tensor(x),), {"axis": axis}, name)


def squeeze(x: object, axis: int | Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """x without axes of size 1: all of them (None), or those listed (each must have size 1)."""
    return build("squeeze", (as_tensor(x),), {"axis": axis}, name)


# --- strided copies ---------------------------------------------------------------------------


def c_strides(shape: Shape) -> list[int]:
    """Element strides of a C-contiguous array of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def fewest_axes(dims: Sequence[int], *strides: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """(dims, *strides) of the same walk over the fewest axes: axes of size 1 dropped, an axis
    merged into the one before it where, for every array, that one steps over it exactly (a
    run of whole rows is one axis)."""
    none = tuple((0,) for _ in strides)
    if 0 in dims:
        return ((0,), *none)
    merged: list[list[int]] = []
    for a, size in enumerate(dims):
        if size == 1:
            continue
        column = [s[a] for s in strides]
        if merged and all(prev == size * cur for prev, cur in zip(merged[-1][1:], column)):
            merged[-1] = [merged[-1][0] * size, *column]
        else:
            merged.append([size, *column])
    if not merged:
        return ((1,), *none)
    return tuple(tuple(m[k] for m in merged) for k in range(len(strides) + 1))


class StridedCopy(MovementOp):
    """Output element e = x[base + index(e) . strides] (module docstring); subclasses give
    `walk(op)`: (base, dims, strides) over the output's axes, in elements of x."""

    def walk(self, op: Any) -> tuple[int, Sequence[int], Sequence[int]]:
        raise NotImplementedError

    def layout(self, op: Any) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        base, dims, strides = self.walk(op)
        dims, strides = fewest_axes(dims, strides)
        return (0 if dims == (0,) else base), dims, strides  # an empty copy reads nothing

    def filler(self, op: Any) -> Fill:
        base, dims, strides = self.layout(op)
        dims_array, strides_array = np.array(dims, np.int64), np.array(strides, np.int64)
        columns = row_view_shape(op.shape)[1]
        kernel = kernels.shape.strided_copy

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            start, stop = row_start * columns, row_stop * columns
            kernel(flat(args[0]), base, dims_array, strides_array, flat(out), start, stop)

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        base, dims, strides = self.layout(op)
        return kernels.gpu.strided_copy_launches(flat(inputs[0]), flat(out), base, dims, strides)


@register
class Transpose(StridedCopy):
    """np.transpose(x, perm): output axis a is input axis perm[a]."""

    type = "transpose"
    default_name = "transpose"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x, perm = inputs[0], attrs["perm"]
        if perm is None:
            perm = tuple(reversed(range(x.ndim)))
        given = _ints(perm, "perm")
        if len(given) != x.ndim:
            raise ShapeError(f"perm {list(given)} must list each of the {x.ndim} axes once")
        perm = tuple(normalize_axis(a, x.ndim, "perm entry") for a in given)
        if sorted(perm) != list(range(x.ndim)):
            raise ShapeError(f"perm {list(given)} must list each of the {x.ndim} axes once")
        attrs["perm"] = perm
        return tuple(x.shape[a] for a in perm), x.dtype

    def walk(self, op: Any) -> tuple[int, Sequence[int], Sequence[int]]:
        strides = c_strides(op.inputs[0].shape)
        return 0, op.shape, [strides[a] for a in op.attrs["perm"]]

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.transpose(args[0], op.attrs["perm"])


@register
class StridedSlice(StridedCopy):
    """x[b0:...:s0, b1:...:s1, ...] given per input axis as begin, step and count, the result
    then in `shape` (an int index is a count of 1 dropped from it, a new axis a 1 added).

    Built from `attrs` {"begin", "size"} (`slice`, TensorFlow's) or {"key"} (`t[...]`, NumPy's);
    infer turns either into {"begin", "step", "count", "shape"}.
    """

    type = "strided_slice"
    default_name = "StridedSlice"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        x = inputs[0]
        if "key" in attrs:
            begin, step, count, shape = _index_key(attrs.pop("key"), x.shape)
        else:
            begin, count = _slice_bounds(attrs.pop("begin"), attrs.pop("size"), x.shape)
            step, shape = (1,) * len(begin), count
        attrs.update(begin=begin, step=step, count=count, shape=shape)
        return shape, x.dtype

    def walk(self, op: Any) -> tuple[int, Sequence[int], Sequence[int]]:
        attrs = op.attrs
        strides = c_strides(op.inputs[0].shape)
        base = sum(b * s for b, s in zip(attrs["begin"], strides))
        return base, attrs["count"], [step * s for step, s in zip(attrs["step"], strides)]

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        attrs = op.attrs
        axes = [
            b + s * np.arange(c) for b, s, c in zip(attrs["begin"], attrs["step"], attrs["count"])
        ]
        return args[0][np.ix_(*axes)].reshape(op.shape)


def _slice_bounds(begin: object, size: object, shape: Shape) -> tuple[Shape, Shape]:
    """TensorFlow's slice arguments (size -1: to the end) as (begin, count), checked."""
    begin, size = _ints(begin, "begin"), _ints(size, "size")
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ShapeError(
            f"begin {list(begin)} and size {list(size)} need one entry per axis of {list(shape)}"
        )
    count = []
    for axis, (start, length, dim) in enumerate(zip(begin, size, shape)):
        length = dim - start if length == -1 else length
        if not 0 <= start <= dim or length < 0 or start + length > dim:
            raise ShapeError(
                f"slice [{start}, {start}+{size[axis]}) of axis {axis} is out of bounds for "
                f"{list(shape)} (begin {list(begin)}, size {list(size)})"
            )
        count.append(length)
    return begin, tuple(count)


def _index_key(key: object, shape: Shape) -> tuple[Shape, Shape, Shape, Shape]:
    """NumPy basic indexing (ints, slices, Ellipsis, None) of `shape` as (begin, step, count)
    per input axis and the result's shape; anything else refused (advanced indexing)."""
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        plain_int = isinstance(item, (int, np.integer)) and not isinstance(item, bool)
        if not (plain_int or item is None or item is Ellipsis or isinstance(item, builtins.slice)):
            raise ShapeError(
                f"index {item!r} is advanced indexing (a list, an array, a tensor or a bool), "
                "which t[...] does not do: use pg.gather(t, indices, axis)"
            )
    if sum(item is Ellipsis for item in items) > 1:
        raise ShapeError("an index may hold one Ellipsis (...)")
    used = sum(item is not None and item is not Ellipsis for item in items)
    if used > len(shape):
        raise ShapeError(f"too many indices ({used}) for {list(shape)}, of rank {len(shape)}")
    if Ellipsis not in items:
        items = (*items, Ellipsis)
    at = items.index(Ellipsis)
    full = builtins.slice(None)
    items = (*items[:at], *(full,) * (len(shape) - used), *items[at + 1 :])
    begin, step, count, out, axis = [], [], [], [], 0
    for item in items:
        if item is None:
            out.append(1)
            continue
        dim = shape[axis]
        if isinstance(item, builtins.slice):
            try:
                start, stop, stride = item.indices(dim)
            except (TypeError, ValueError) as problem:
                raise ShapeError(f"bad slice {item!r} for axis {axis}: {problem}") from None
            length = len(range(start, stop, stride))
            begin.append(start if length else 0)
            step.append(stride)
            count.append(length)
            out.append(length)
        else:
            if not -dim <= item < dim:
                raise ShapeError(f"index {item} is out of range for axis {axis} of size {dim}")
            begin.append(int(item) % dim)
            step.append(1)
            count.append(1)
        axis += 1
    return tuple(begin), tuple(step), tuple(count), tuple(out)


def transpose(x: object, perm: Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """x with its axes permuted: output axis a is input axis perm[a]; None reverses them (as
    np.transpose). A copy.

    >>> pg.transpose(pg.constant(np.zeros((2, 3, 4))), (1, 2, 0)).shape
    (3, 4, 2)
    """
    return build("transpose", (as_tensor(x),), {"perm": perm}, name)


def slice(x: object, begin: Sequence[int], size: Sequence[int], name: str | None = None) -> Tensor:
    """x[begin[0]:begin[0] + size[0], ...], as tf.slice: one begin and size per axis, a size
    of -1 meaning to the end of the axis; out of bounds is refused. A C-contiguous copy.

    >>> pg.slice(pg.constant(np.zeros((4, 5))), [1, 0], [2, -1]).shape
    (2, 5)
    """
    attrs = {"begin": begin, "size": size}
    return build("strided_slice", (as_tensor(x),), attrs, name or "Slice")


def getitem(x: Tensor, key: object) -> Tensor:
    """`x[key]` with NumPy's basic indexing: ints (negative count from the end; out of range
    refused), slices with any step, Ellipsis and None (a new axis), or a tuple of them. One
    strided copy; for indexing with a list or a tensor of indices use pg.gather.

    >>> t = pg.constant(np.zeros((4, 5, 6)))
    >>> t[1, ::-2, None].shape
    (3, 1, 6)
    """
    return build("strided_slice", (x,), {"key": key}, None)


# --- concat and split -------------------------------------------------------------------------


@register
class Concat(MovementOp):
    """Tensors of one dtype and rank joined along `axis`: each input is rows of
    shape[axis:] elements, copied into its columns of the output's rows."""

    type = "concat"
    default_name = "concat"

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        first = inputs[0]
        dtypes = sorted({t.dtype.name for t in inputs})
        if len(dtypes) > 1:
            raise ShapeError(f"dtypes differ ({', '.join(dtypes)}): cast them (pg.cast)")
        if first.ndim == 0:
            raise ShapeError("cannot concatenate scalars (0-d): expand_dims them first")
        axis = attrs["axis"] = normalize_axis(attrs["axis"], first.ndim)
        for t in inputs[1:]:
            if t.ndim != first.ndim or t.shape[:axis] + t.shape[axis + 1 :] != (
                first.shape[:axis] + first.shape[axis + 1 :]
            ):
                raise ShapeError(f"shapes {[list(t.shape) for t in inputs]} differ off axis {axis}")
        total = sum(t.shape[axis] for t in inputs)
        return (*first.shape[:axis], total, *first.shape[axis + 1 :]), first.dtype

    def widths(self, op: Any) -> tuple[list[int], int]:
        """Each input's row width (its shape[axis:] elements) and the output's."""
        axis = op.attrs["axis"]
        widths = [num_elements(t.shape[axis:]) for t in op.inputs]
        return widths, num_elements(op.shape[axis:])

    def filler(self, op: Any) -> Fill:
        (widths, width_out), columns = self.widths(op), row_view_shape(op.shape)[1]
        offsets = np.cumsum([0, *widths[:-1]]).tolist()
        kernel = kernels.shape.concat_piece

        def fill(args: Arrays, out: np.ndarray, row_start: int, row_stop: int) -> None:
            start, stop, target = row_start * columns, row_stop * columns, flat(out)
            for x, width, offset in zip(args, widths, offsets):
                kernel(flat(x), target, width, width_out, offset, start, stop)

        return fill

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        widths, width_out = self.widths(op)
        return kernels.gpu.concat_launches([flat(x) for x in inputs], flat(out), widths, width_out)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.concatenate(args, axis=op.attrs["axis"])


def concat(values: Sequence[object], axis: int, name: str | None = None) -> Tensor:
    """Tensors of one dtype and rank joined along `axis` (negative counts from the end); their
    sizes must match on every other axis.

    >>> pg.concat([pg.constant(np.zeros((2, 3))), pg.constant(np.ones((2, 1)))], -1).shape
    (2, 4)
    """
    if isinstance(values, Tensor) or not isinstance(values, Sequence) or not values:
        raise refuse("concat", name or "concat", (), "values must be a non-empty list of tensors")
    return build("concat", tuple(as_tensor(v) for v in values), {"axis": axis}, name)


def split(
    x: object, num_or_size_splits: int | Sequence[int], axis: int = 0, name: str | None = None
) -> list[Tensor]:
    """x cut along `axis` into a list of tensors, as tf.split: an int n cuts it into n equal
    pieces (n must divide the axis), a list gives each piece's size (they must add up to the
    axis; one may be -1: the rest). Each piece is a slice op, all in `pg.scope(name or
    "split")`, so they run side by side on the inter-op pool.

    >>> [p.shape for p in pg.split(pg.constant(np.zeros((5, 2))), [2, -1])]
    [(2, 2), (3, 2)]
    """
    x = as_tensor(x)
    label = name or "split"
    try:
        axis = normalize_axis(axis, x.ndim)
        sizes = _split_sizes(num_or_size_splits, x.shape[axis])
    except ShapeError as problem:
        raise refuse("split", label, (x,), str(problem)) from None
    pieces, start = [], 0
    with scope(label):
        for size in sizes:
            begin = [0] * x.ndim
            begin[axis] = start
            extent = list(x.shape)
            extent[axis] = size
            pieces.append(slice(x, begin, extent))
            start += size
    return pieces


def _split_sizes(splits: object, dim: int) -> list[int]:
    """The pieces' sizes along an axis of `dim` elements, checked as tf.split does."""
    if isinstance(splits, (int, np.integer)) and not isinstance(splits, bool):
        if splits < 1 or dim % splits:
            raise ShapeError(f"cannot split an axis of {dim} into {splits} equal pieces")
        return [dim // int(splits)] * int(splits)
    sizes = list(_ints(splits, "num_or_size_splits"))
    unknown = [i for i, size in enumerate(sizes) if size == -1]
    if not sizes or len(unknown) > 1 or any(size < -1 for size in sizes):
        raise ShapeError(f"sizes {sizes} must be non-empty, >= 0, with at most one -1")
    known = sum(size for size in sizes if size != -1)
    if unknown and known <= dim:
        sizes[unknown[0]] = dim - known
    elif unknown or known != dim:
        raise ShapeError(f"sizes {sizes} do not add up to the axis's {dim}")
    return sizes
