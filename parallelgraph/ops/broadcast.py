"""NumPy broadcasting for the row kernels: the output's shape, and how each output row finds the
row of an operand it reads.

Elementwise kernels see every array as 2-D rows: the output as `row_view_shape(shape)` (all
leading axes become rows), an operand as its own rows (`operand_view`). An operand broadcast
over the last axis has one column, which the kernel reads for every column of the row (a
*splat*); one broadcast over leading axes has fewer rows than the output, and output row r reads
operand row `row_map[r]`. Two common cases need no map: an operand with the output's rows (the
same shape, or only a splatted last axis) reads row r, and an operand of one row (a bias, a
scalar) reads row 0: the map is then empty (`NO_MAP`). Maps depend on shapes only and are made
once per shape pair (a few microseconds, cached), never per run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..dtypes import Shape, num_elements, row_view_shape
from .registry import ShapeError

#: The empty row map: the operand has the output's rows, or one row that every row reads.
NO_MAP = np.zeros(0, dtype=np.int64)
NO_MAP.setflags(write=False)


def broadcast_shapes(*shapes: Shape) -> Shape:
    """The shape NumPy broadcasts `shapes` to, or ShapeError naming them.

    >>> broadcast_shapes((8, 1, 64), (5, 64))
    (8, 5, 64)
    """
    rank = max((len(shape) for shape in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {shape[axis - rank + len(shape)] for shape in shapes if axis >= rank - len(shape)}
        sizes.discard(1)
        if len(sizes) > 1:
            listed = " and ".join(str(list(shape)) for shape in shapes)
            raise ShapeError(
                f"shapes {listed} do not broadcast: axis {axis - rank} has sizes "
                f"{sorted(sizes)} (NumPy's rule: equal, or 1)"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def padded(shape: Shape, rank: int) -> Shape:
    """`shape` with leading 1s up to `rank` axes (how NumPy lines shapes up on the right)."""
    return (1,) * (rank - len(shape)) + tuple(shape)


@functools.lru_cache(maxsize=4096)
def operand_view(shape: Shape, out_shape: Shape) -> tuple[tuple[int, int], np.ndarray]:
    """(the operand's 2-D row shape, its row map) for an operand of `shape` read by an output of
    `out_shape` (which it broadcasts to). The row shape has the output's width, or width 1 (a
    splat along the row); the map is `NO_MAP` or the operand row of each output row."""
    rank = len(out_shape)
    if rank == 0:
        return (1, 1), NO_MAP
    full = padded(shape, rank)
    rows = num_elements(full[:-1])
    if full[:-1] == tuple(out_shape[:-1]) or rows == 1:
        return (rows, full[-1]), NO_MAP
    index = np.arange(rows, dtype=np.int64).reshape(full[:-1])
    row_map = np.ascontiguousarray(np.broadcast_to(index, out_shape[:-1]).reshape(-1))
    row_map.setflags(write=False)
    return (rows, full[-1]), row_map


def reads_as_program_operand(shape: Shape, out_shape: Shape) -> bool:
    """Whether the fused program (`kernels.program`) can read an operand of `shape` for an
    output of `out_shape`: one element (filled out to a row); or the output's rows or one row,
    of the output's width; or the output's rows of width 1 (a splat along each row)."""
    if num_elements(shape) == 1:
        return True
    (rows, columns), row_map = operand_view(shape, out_shape)
    out_rows, out_columns = row_view_shape(out_shape)
    if row_map is not NO_MAP:
        return False
    return (columns == out_columns and rows in (1, out_rows)) or (columns, rows) == (1, out_rows)


def strides_for(shape: Shape, out_shape: Shape) -> tuple[int, ...]:
    """Element strides of a C-contiguous operand of `shape` along each axis of `out_shape`, 0
    where it is broadcast (the GPU kernels index with these)."""
    full = padded(shape, len(out_shape))
    strides, step = [], 1
    for size in reversed(full):
        strides.append(0 if size == 1 else step)
        step *= size
    return tuple(reversed(strides)) or (0,)


#: The widest row a flat same-shape layout makes, and the narrowest it accepts: wide rows keep
#: a row kernel's per-row cost (picking operand rows, its vector loop's set-up) small beside its
#: elements, and leave rows enough to shard.
WIDEST_ROW, NARROWEST_ROW = 4096, 256


@dataclass(frozen=True)
class Layout:
    """How an elementwise op's kernel sees its output and operands: `rows` x `columns`, and for
    each operand its own 2-D row shape and row map (`operand_view`)."""

    rows: int
    columns: int
    operands: tuple[tuple[tuple[int, int], np.ndarray], ...]


@functools.lru_cache(maxsize=4096)
def elementwise_layout(
    shapes: tuple[Shape, ...], out_shape: Shape, standard: bool = False
) -> Layout:
    """The row layout of an elementwise op with inputs of `shapes` and output `out_shape`.

    `standard`: the output's own row view (`row_view_shape`: its last axis the row), what a
    fused matmul epilogue needs (its rows are the matmul's). Otherwise the widest rows the
    shapes allow, as NumPy's iterator coalesces axes: operands of the output's shape see it as
    flat rows of up to `WIDEST_ROW` elements (an NCHW tensor's 32-wide rows cost ~7x per element
    what 1024-wide ones do); with broadcasting, adjacent axes merge wherever every operand is
    full on both or broadcast on both (an NCHW bias (C, 1, 1) then reads rows of H * W). The
    elements and their arithmetic are the same either way: only the per-row cost changes.
    """
    if not standard:
        if all(tuple(shape) == tuple(out_shape) for shape in shapes):
            flat = _flat_rows(num_elements(out_shape))
            if flat is not None:
                return Layout(*flat, tuple((flat, NO_MAP) for _ in shapes))
        else:
            merged_out, merged = _coalesced(out_shape, shapes)
            if len(merged_out) >= 2:
                views = tuple(operand_view(shape, merged_out) for shape in merged)
                return Layout(*row_view_shape(merged_out), views)
    views = tuple(operand_view(tuple(shape), tuple(out_shape)) for shape in shapes)
    return Layout(*row_view_shape(tuple(out_shape)), views)


def _flat_rows(count: int) -> tuple[int, int] | None:
    """(rows, width) for `count` elements: the widest width up to `WIDEST_ROW` dividing it, or
    None where none is at least `NARROWEST_ROW` (and the count is larger than that)."""
    if count <= WIDEST_ROW:
        return (1, count) if count >= NARROWEST_ROW else None
    for width in range(WIDEST_ROW, NARROWEST_ROW - 1, -1):
        if count % width == 0:
            return count // width, width
    return None


def _coalesced(out_shape: Shape, shapes: tuple[Shape, ...]) -> tuple[Shape, tuple[Shape, ...]]:
    """`out_shape` and the operands' shapes (padded to its rank) with adjacent axes merged
    wherever every operand is full on both or broadcast on both (axes of size 1 in the output
    merge with anything)."""
    rank = len(out_shape)
    full = [padded(tuple(shape), rank) for shape in shapes]
    groups: list[list[int]] = []
    kind: list[int | None] = []  # each group's last axis of output size > 1 (its pattern)
    for axis in range(rank):
        last = kind[-1] if kind else None
        if groups and (last is None or _mergeable(last, axis, out_shape, full)):
            groups[-1].append(axis)
        else:
            groups.append([axis])
            kind.append(None)
        if out_shape[axis] != 1:
            kind[-1] = axis
    merged_out = tuple(num_elements(tuple(out_shape[a] for a in g)) for g in groups)
    merged = tuple(tuple(num_elements(tuple(s[a] for a in g)) for g in groups) for s in full)
    return merged_out, merged


def _mergeable(previous: int, axis: int, out_shape: Shape, shapes: list[Shape]) -> bool:
    """Whether `axis` joins the group whose pattern axis is `previous` (of output size > 1)."""
    if out_shape[axis] == 1:
        return True
    return all(
        (s[previous] == out_shape[previous] and s[axis] == out_shape[axis])
        or (s[previous] == 1 and s[axis] == 1)
        for s in shapes
    )
