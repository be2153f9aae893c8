"""Dtypes and shapes: the types parallelgraph computes in, and shape normalisation.

Floats (float32, float64) are what kernels compute; int32 and int64 are indices (gather, top_k,
token ids) and bool masks (comparisons, `where`). Binary ops take one dtype on both sides, as
TensorFlow does: NumPy would promote int32 + float32 to float64 silently, doubling memory and
changing which kernel runs, so a mix is refused and `pg.cast` says what is meant.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np

from .errors import GraphError

Shape = tuple[int, ...]

FLOAT_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
}
INDEX_DTYPES: dict[str, np.dtype] = {"int32": np.dtype(np.int32), "int64": np.dtype(np.int64)}
#: Every dtype a tensor may have.
DTYPES: dict[str, np.dtype] = {**FLOAT_DTYPES, **INDEX_DTYPES, "bool": np.dtype(np.bool_)}


def as_dtype(
    dtype: object, what: str = "dtype", allowed: dict[str, np.dtype] = FLOAT_DTYPES
) -> np.dtype:
    """Normalise "float32", np.float32, np.dtype("int64"), bool ... to one of the NumPy dtypes
    `allowed` (floats unless said otherwise), or raise GraphError naming `what`. The dtype
    returned is always `allowed`'s own, in the machine's byte order: a big-endian ">f4" (what
    `np.load` gives for a file written on such a machine) is float32 here, as kernels compute
    only in native order."""
    try:
        normalized = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        normalized = None
    if normalized is None or normalized.name not in allowed:
        raise GraphError(f"{what}: unsupported dtype {dtype!r}; use {', '.join(allowed)}")
    return allowed[normalized.name]


def kind_name(dtype: np.dtype) -> str:
    """ "float", "integer" or "bool": the kinds the op table's entries accept."""
    return {"f": "float", "i": "integer", "b": "bool"}[np.dtype(dtype).kind]


def as_shape(shape: object, what: str = "shape") -> Shape:
    """Normalise an int or an iterable of non-negative ints to a tuple, or raise GraphError."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, Iterable) or isinstance(shape, (str, bytes)):
        raise GraphError(f"{what}: expected a tuple of ints, got {shape!r}")
    dims = tuple(shape)
    for dim in dims:
        if dim is None:
            raise GraphError(f"{what}: {dims} has an unknown (None) dimension; give every size")
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 0:
            raise GraphError(f"{what}: {dims} must hold non-negative ints")
    return tuple(int(dim) for dim in dims)


def num_elements(shape: Shape) -> int:
    """Product of the dimensions (1 for a scalar)."""
    count = 1
    for dim in shape:
        count *= dim
    return count


@functools.lru_cache(maxsize=4096)
def row_view_shape(shape: Shape) -> tuple[int, int]:
    """The 2-D (rows, columns) view that row-sharded kernels see: all leading axes become rows.

    A matrix [m, n] is itself; [a, b, n] becomes [a*b, n]; a vector [n] is one row [1, n]; a
    scalar is [1, 1]. Shards are ranges of these rows.
    """
    if len(shape) == 0:
        return (1, 1)
    return (num_elements(shape[:-1]), shape[-1])
