"""Compute ops: add_n, matmul and reductions (the elementwise ones are `ops.elementwise`'s table).

Each op is one small block: an `OpDef` (shape rule, cost, row kernel, NumPy reference) and the
builder function users call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements, row_view_shape
from ..graph import Tensor
from .broadcast import NO_MAP
from .builder import as_tensor, binary_operands, build
from .registry import Arrays, Bounds, Cost, OpDef, ShapeError, register

__all__ = ["add_n", "matmul", "reduce_mean", "reduce_sum"]


def _rows_of(array: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """`array` as rows for the row kernels: itself (rows, columns) when it has that many
    elements, else ONE C-contiguous row (1, columns) that every row reads
    (`kernels.elementwise.operand_row`): a bias reshaped (copied only if it is strided), a
    scalar filled out to a row.
    """
    if array.shape == (rows, columns):  # the common 2-D case: no new view object needed
        return array
    if array.size == rows * columns:
        return array.reshape(rows, columns)
    if array.size == 1:  # empty and assign: the value's bits (a NaN's payload too), ~1 us
        row = np.empty((1, columns), array.dtype)  # less than np.full's Python wrapper
        row[...] = array.reshape(())
        return row
    return np.ascontiguousarray(array).reshape(1, columns)


def _same_dtype(inputs: Sequence[Tensor]) -> np.dtype:
    dtypes = {t.dtype for t in inputs}
    if len(dtypes) > 1:
        raise ShapeError(f"dtypes differ ({', '.join(sorted(d.name for d in dtypes))})")
    return inputs[0].dtype


@register
class AddN(OpDef):
    """Sum of several same-shaped tensors, folded left to right: ((x0 + x1) + x2) + ..."""

    type = "add_n"
    default_name = "AddN"
    blas_free = True  # the add and accumulate row kernels

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        dtype = _same_dtype(inputs)
        shapes = {t.shape for t in inputs}
        if len(shapes) > 1:
            raise ShapeError(f"add_n needs equal shapes, got {[list(s) for s in shapes]}")
        return inputs[0].shape, dtype

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, dtype=op.dtype)
        rows, columns = row_view_shape(op.shape)
        terms = [_rows_of(arg, rows, columns) for arg in args]
        return terms, _rows_of(out, rows, columns), out

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        terms, out, _ = work
        if len(terms) == 1:
            out[row_start:row_stop] = terms[0][row_start:row_stop]
            return
        elementwise = kernels.elementwise
        elementwise.add_rows(terms[0], NO_MAP, terms[1], NO_MAP, out, row_start, row_stop)
        for term in terms[2:]:
            elementwise.add_accumulate_rows(out, term, row_start, row_stop)

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        if len(inputs) == 1:
            return [kernels.gpu.DeviceCopy(inputs[0].reshape(out.size), out.reshape(out.size))]
        launches = kernels.gpu.elementwise_launches("add", inputs[:2], out)
        for term in inputs[2:]:  # out = out + term, in place: each thread its own element
            launches += kernels.gpu.elementwise_launches("add", [out, term], out)
        return launches

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        total = args[0].copy()
        for arg in args[1:]:
            total = total + arg
        return total.astype(op.dtype)


@register
class MatMul(OpDef):
    """[m, k] @ [k, n]. Shards are row blocks of the output; `Config.matmul_kernel` picks the
    kernel: "blas" (BLAS on the row block; cuBLAS through CuPy on a GPU, where CuPy can run it:
    `kernels.gpu.cublas`) or "numba" (the register-tiled pure Numba kernel, on a GPU
    `kernels.gpu.gemm`)."""

    type = "matmul"
    default_name = "MatMul"
    #: A multiple of every matmul kernel's register-tile height (kernels.matmul.ROW_ALIGN).
    row_align = 48
    #: Each shard's call packs all of B again. Threads that take several consecutive shards
    #: compute them in one call (`merges_rows`), so the shards of an op are as many calls as
    #: threads take part; 128 rows lets a 256-row matmul use two threads (the wide graph at
    #: medium, intra-op 2: 24.3 -> 20.6 ms; 64 rows: 22.0), where 256 kept it on one
    #: (benchmarks/RESULTS.md, "Matmul shards of 128 rows").
    min_shard_rows = 128
    flops_per_ns = 100.0

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        a, b = inputs
        dtype = _same_dtype(inputs)
        if a.ndim != 2 or b.ndim != 2:
            raise ShapeError(f"matmul needs 2-D operands, got {list(a.shape)} @ {list(b.shape)}")
        if a.shape[1] != b.shape[0]:
            raise ShapeError(
                f"inner dimensions differ: {list(a.shape)} @ {list(b.shape)} "
                f"({a.shape[1]} != {b.shape[0]})"
            )
        return (a.shape[0], b.shape[1]), dtype

    def cost(self, op: Any) -> Cost:
        (m, k), n = op.inputs[0].shape, op.shape[1]
        return Cost(2 * m * k * n, (m * k + k * n + m * n) * op.dtype.itemsize)

    @staticmethod
    def uses_numba(config: Any) -> bool:
        """Whether `Config.matmul_kernel` names the Numba kernel (else: BLAS)."""
        return getattr(config, "matmul_kernel", "blas") == "numba"

    def kernel(self, config: Any) -> Callable[..., None]:
        """The row-block kernel `Config.matmul_kernel` names."""
        if self.uses_numba(config):
            return kernels.matmul.matmul_rows_numba
        return kernels.matmul.matmul_rows_blas

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, dtype=op.dtype)
        return self.kernel(config), args[0], args[1], out

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: the same kernel call on all rows, without the work tuple."""
        kernel, shape, dtype, rows = self.kernel(config), op.shape, op.dtype, op.shape[0]

        def product(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            kernel(args[0], args[1], out, 0, rows)
            return out

        return product

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        kernel, a, b, out = work
        kernel(a, b, out, row_start, row_stop)

    def calls_blas(self, op: Any, config: Any) -> bool:
        return not self.uses_numba(config)

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """The numba kernel: always (an element's arithmetic does not depend on the row range:
        kernels.matmul). BLAS: where a probe showed it (kernels.blas_rows)."""
        kernel, a, b, _ = work
        if kernel is kernels.matmul.matmul_rows_numba:
            return True
        return kernels.blas_rows.merges_exactly(a, b, shards, groups)

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        requested = getattr(config, "matmul_kernel", "blas")
        if kernels.gpu.cublas.kernel_for(requested) == "blas":  # cuBLAS, as TF and PyTorch run
            return kernels.gpu.cublas.matmul_launches(inputs[0], inputs[1], out)
        return kernels.gpu.matmul_launches(inputs[0], inputs[1], out, scratch)

    def gpu_scratch_size(self, op: Any) -> int:
        (m, k), n = op.inputs[0].shape, op.shape[1]
        return kernels.gpu.matmul_scratch_size(m, k, n, op.dtype)  # split-K partials

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return (args[0].astype(np.float64) @ args[1].astype(np.float64)).astype(op.dtype)


def _reduced_view(x: np.ndarray, outer: int, length: int, inner: int) -> np.ndarray:
    """x as (outer, length, inner) around the reduced axis; (outer, length) when inner is 1,
    whose contiguous rows `kernels.reduce.sum_last` sums as vectors."""
    return x.reshape(outer, length) if inner == 1 else x.reshape(outer, length, inner)


def _sum_into(x: np.ndarray, partial: np.ndarray, rows: tuple, lanes: Any) -> None:
    """partial += the sums of x over `rows` (outer start, stop, length start, stop): along the
    last axis in `lanes` (a float64 scratch of `kernels.reduce.LANES`), else row by row."""
    if lanes is None:
        kernels.reduce.sum_middle(x, partial, *rows)
    else:
        kernels.reduce.sum_last(x, partial, *rows, lanes)


@register
class ReduceSum(OpDef):
    """Sum over one axis or all of them, accumulated in float64 (see kernels.reduce)."""

    type = "reduce_sum"
    default_name = "Sum"
    flops_per_ns = 20.0  # vectorized float64 lanes (measured: benchmarks/reduce_sum.py)
    blas_free = True  # kernels.reduce

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        shape, axis = inputs[0].shape, attrs["axis"]
        if axis is None:
            return (), inputs[0].dtype
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ShapeError(f"axis must be None or an int, got {axis!r}")
        if not -len(shape) <= axis < len(shape):
            raise ShapeError(f"axis {axis} is out of range for shape {list(shape)}")
        attrs["axis"] = int(axis) % len(shape)
        return shape[: attrs["axis"]] + shape[attrs["axis"] + 1 :], inputs[0].dtype

    def cost(self, op: Any) -> Cost:
        n = num_elements(op.inputs[0].shape)
        return Cost(n, (n + num_elements(op.shape)) * op.dtype.itemsize)

    @staticmethod
    def view(op: Any) -> tuple[int, int, int]:
        """(outer, length, inner) around the reduced axis (axis=None: one long row)."""
        shape, axis = op.inputs[0].shape, op.attrs["axis"]
        if axis is None:
            return 1, num_elements(shape), 1
        return num_elements(shape[:axis]), shape[axis], num_elements(shape[axis + 1 :])

    def rows(self, op: Any) -> int:
        """Outer rows, except for exactly one outer row: then ranges of the reduced axis.

        Zero outer rows (shape (0, n), axis 1) means zero rows of work: the output is empty.
        """
        outer, length, _ = self.view(op)
        return length if outer == 1 else outer

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        outer, length, inner = self.view(op)
        partials = np.zeros((num_shards if outer == 1 else 1, outer, inner), dtype=np.float64)
        # along the last axis: a scratch of lanes a shard (see _sum_into)
        lanes = np.empty((num_shards, kernels.reduce.LANES)) if inner == 1 else None
        return _reduced_view(args[0], outer, length, inner), partials, lanes

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        x, partials, lanes = work
        outer, length = x.shape[:2]
        # shards own ranges of the reduced axis, each with its partial sum (one outer row), or
        # disjoint output rows (none at all when outer is 0)
        rows = (0, 1, row_start, row_stop) if outer == 1 else (row_start, row_stop, 0, length)
        partial = partials[shard if outer == 1 else 0]
        _sum_into(x, partial, rows, None if lanes is None else lanes[shard])

    def finish(self, op: Any, work: Any) -> np.ndarray:
        x, partials, _ = work
        total = partials[0].copy()
        for partial in partials[1:]:  # fixed shard order: bit-identical on any threads
            total += partial
        return self.scale(total, x.shape[1]).astype(op.dtype).reshape(op.shape)

    def scale(self, total: np.ndarray, length: int) -> np.ndarray:
        return total

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: `prepare`, `compute` of all rows and `finish` in one function (the same
        kernel call on the same rows into a zeroed total, the same scale and cast: the same
        bits), without the work tuple and the partials' bookkeeping (~10 us of a small sum)."""
        outer, length, inner = self.view(op)
        shape, dtype, scale = op.shape, op.dtype, self.scale
        rows = (0, outer, 0, length)

        def summed(args: Arrays) -> np.ndarray:
            total = np.zeros((outer, inner))
            lanes = np.empty(kernels.reduce.LANES) if inner == 1 else None
            _sum_into(_reduced_view(args[0], outer, length, inner), total, rows, lanes)
            return scale(total, length).astype(dtype).reshape(shape)

        return summed

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        outer, length, inner = self.view(op)
        x = inputs[0].reshape(outer, length, inner)
        mean = self.type == "reduce_mean"
        return kernels.gpu.reduce_sum_launches(x, out.reshape(outer, inner), mean, scratch)

    def gpu_scratch_size(self, op: Any) -> int:
        return kernels.gpu.reduce_scratch_size(*self.view(op))

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.sum(args[0].astype(np.float64), axis=op.attrs["axis"]).astype(op.dtype)


@register
class ReduceMean(ReduceSum):
    type = "reduce_mean"
    default_name = "Mean"

    def scale(self, total: np.ndarray, length: int) -> np.ndarray:
        return total / length if length else np.full_like(total, np.nan)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.mean(args[0].astype(np.float64), axis=op.attrs["axis"]).astype(op.dtype)


def add_n(inputs: Sequence[object], name: str | None = None) -> Tensor:
    """Sum of a list of same-shaped tensors."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, Sequence) or not inputs:
        from ..errors import GraphError

        raise GraphError("add_n takes a non-empty list of tensors")
    return build("add_n", tuple(as_tensor(x) for x in inputs), name=name)


def matmul(a: object, b: object, name: str | None = None) -> Tensor:
    """Matrix product of two 2-D tensors, [m, k] @ [k, n] -> [m, n]."""
    return build("matmul", binary_operands(a, b), name=name)


def reduce_sum(x: object, axis: int | None = None, name: str | None = None) -> Tensor:
    """Sum over `axis` (an int) or over all elements (None), accumulated in float64."""
    return build("reduce_sum", (as_tensor(x),), {"axis": axis}, name)


def reduce_mean(x: object, axis: int | None = None, name: str | None = None) -> Tensor:
    """Mean over `axis` (an int) or over all elements (None)."""
    return build("reduce_mean", (as_tensor(x),), {"axis": axis}, name)
