"""Compute ops: add_n and matmul (reductions: `ops.reductions`; elementwise: `ops.elementwise`).

Each op is one small block: an `OpDef` (shape rule, cost, row kernel, NumPy reference) and the
builder function users call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import Shape, num_elements, row_view_shape
from ..errors import GraphError
from ..graph import Tensor, scope
from .broadcast import NO_MAP, broadcast_shapes
from .builder import as_tensor, binary_operands, build
from .registry import Arrays, Bounds, Cost, OpDef, ShapeError, register

__all__ = ["add_n", "matmul"]


def _rows_of(array: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """`array` as rows for the row kernels and the fused program: itself (rows, columns) when it
    has that many elements; a column (rows, 1) read for every column of its row (a splat: a
    softmax's row max); else ONE C-contiguous row (1, columns) that every row reads
    (`kernels.elementwise`): a bias reshaped (copied only if it is strided), a scalar filled out
    to a row.
    """
    if array.shape == (rows, columns):  # the common 2-D case: no new view object needed
        return array
    if array.size == rows * columns:
        return array.reshape(rows, columns)
    if array.size == 1:  # empty and assign: the value's bits (a NaN's payload too), ~1 us
        row = np.empty((1, columns), array.dtype)  # less than np.full's Python wrapper
        row[...] = array.reshape(())
        return row
    if array.size == rows and array.shape[-1:] == (1,):
        return np.ascontiguousarray(array).reshape(rows, 1)
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


@dataclass(frozen=True)
class MatmulLayout:
    """How a matmul's operands are seen by its row kernels, from the shapes alone.

    `flat`: `b` has no batch (its batch axes, if any, are 1s), so a (..., m, k) @ (k, n) is one
    2-D product of a's rows: (rows, k) @ (k, n), the same kernel calls as a 2-D matmul (a dense
    layer on a sequence is this). Otherwise batched: a (batches_a, m, k), b (batches_b, k, n),
    out (batches, m, n), with output batch i reading `a_of[i]` and `b_of[i]` (NumPy's batch
    broadcasting). Either way the shards are ranges of the output's rows (batches * m).
    """

    flat: bool
    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]
    a_of: np.ndarray
    b_of: np.ndarray


@functools.lru_cache(maxsize=1024)
def matmul_layout(a_shape: Shape, b_shape: Shape, out_shape: Shape) -> MatmulLayout:
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    batch = out_shape[:-2]
    if num_elements(b_shape[:-2]) == 1:
        rows = num_elements(a_shape[:-1])
        return MatmulLayout(True, (rows, k), (k, n), (rows, n), NO_MAP, NO_MAP)
    maps = []
    for shape in (a_shape[:-2], b_shape[:-2]):
        index = np.arange(num_elements(shape), dtype=np.int64).reshape(shape)
        maps.append(np.ascontiguousarray(np.broadcast_to(index, batch).reshape(-1)))
    return MatmulLayout(
        False,
        (num_elements(a_shape[:-2]), m, k),
        (num_elements(b_shape[:-2]), k, n),
        (num_elements(batch), m, n),
        *maps,
    )


@register
class MatMul(OpDef):
    """a @ b with np.matmul's rules for operands of two or more axes: the last two multiply,
    the ones before are batch axes that broadcast ((b, t, d) @ (d, k), (b, h, t, d) @
    (b, h, d, t)). Shards are blocks of the output's rows (`MatmulLayout`); `Config.matmul_kernel`
    picks the kernel: "blas" (BLAS on the row block; cuBLAS through CuPy on a GPU, where CuPy
    can run it: `kernels.gpu.cublas`) or "numba" (the register-tiled pure Numba kernel, on a GPU
    `kernels.gpu.gemm`). Operands are made C-contiguous first: BLAS's bits may depend on the
    layout it is given (a Fortran-ordered operand changed the last bit of some elements)."""

    type = "matmul"
    default_name = "MatMul"
    #: A multiple of every matmul kernel's register-tile height (kernels.matmul.ROW_ALIGN).
    row_align = 48
    #: Each shard's call packs all of B again. Threads that take several consecutive shards
    #: compute them in one call (`merges_rows`), so the shards of an op are as many calls as
    #: threads take part; 128 rows lets a 256-row matmul use two threads (benchmarks/RESULTS.md,
    #: "Matmul shards of 128 rows").
    min_shard_rows = 128
    flops_per_ns = 100.0

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        a, b = inputs
        dtype = _same_dtype(inputs)
        if dtype.kind != "f":
            raise ShapeError(f"matmul computes in floats, not {dtype.name}: cast first")
        if a.ndim < 2 or b.ndim < 2:
            raise ShapeError(
                f"matmul needs operands of 2 or more axes, got {list(a.shape)} @ "
                f"{list(b.shape)} (reshape a vector to [1, n] or [n, 1])"
            )
        if a.shape[-1] != b.shape[-2]:
            raise ShapeError(
                f"inner dimensions differ: {list(a.shape)} @ {list(b.shape)} "
                f"({a.shape[-1]} != {b.shape[-2]})"
            )
        try:
            batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ShapeError as problem:
            raise ShapeError(f"batch axes: {problem}") from None
        return (*batch, a.shape[-2], b.shape[-1]), dtype

    def layout(self, op: Any) -> MatmulLayout:
        return matmul_layout(op.inputs[0].shape, op.inputs[1].shape, op.shape)

    def rows(self, op: Any) -> int:
        """The output's rows: (rows, n) flat, batches * m batched."""
        return num_elements(self.layout(op).out[:-1])

    def cost(self, op: Any) -> Cost:
        a, b = (t.shape for t in op.inputs)
        m, k, n = a[-2], a[-1], b[-1]
        batches = num_elements(op.shape[:-2])
        moved = num_elements(a) + num_elements(b) + num_elements(op.shape)
        return Cost(2 * batches * m * k * n, moved * op.dtype.itemsize)

    @staticmethod
    def uses_numba(config: Any) -> bool:
        """Whether `Config.matmul_kernel` names the Numba kernel (else: BLAS)."""
        return getattr(config, "matmul_kernel", "blas") == "numba"

    def kernel(self, op: Any, config: Any) -> Callable[..., None]:
        """The row-block kernel `Config.matmul_kernel` names, for the op's layout."""
        flat, numba = self.layout(op).flat, self.uses_numba(config)
        if flat:
            return kernels.matmul.matmul_rows_numba if numba else kernels.matmul.matmul_rows_blas
        return kernels.matmul.matmul_batches_numba if numba else kernels.matmul.matmul_batches_blas

    def operands(self, op: Any, args: Arrays, out: np.ndarray) -> tuple[np.ndarray, ...]:
        """The kernel's array arguments (C-contiguous views), out's last."""
        layout = self.layout(op)
        a = np.ascontiguousarray(args[0]).reshape(layout.a)
        b = np.ascontiguousarray(args[1]).reshape(layout.b)
        if layout.flat:
            return a, b, out.reshape(layout.out)
        return a, layout.a_of, b, layout.b_of, out.reshape(layout.out)

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        out = np.empty(op.shape, dtype=op.dtype)
        return (self.kernel(op, config), *self.operands(op, args, out), out)

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """One shard: the same kernel call on all rows, without the work tuple."""
        kernel, shape, dtype, rows = self.kernel(op, config), op.shape, op.dtype, self.rows(op)
        operands = self.operands

        def product(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            kernel(*operands(op, args, out), 0, rows)
            return out

        return product

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        work[0](*work[1:-1], row_start, row_stop)

    def calls_blas(self, op: Any, config: Any) -> bool:
        return not self.uses_numba(config)

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """The numba kernels: always (an element's arithmetic does not depend on the row range:
        kernels.matmul). BLAS: a flat product where a probe showed it (kernels.blas_rows);
        batched, never (a merged call would give BLAS other row counts)."""
        kernel = work[0]
        if kernel in (kernels.matmul.matmul_rows_numba, kernels.matmul.matmul_batches_numba):
            return True
        if kernel is kernels.matmul.matmul_rows_blas:
            return kernels.blas_rows.merges_exactly(work[1], work[2], shards, groups)
        return False

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        layout = self.layout(op)
        requested = getattr(config, "matmul_kernel", "blas")
        a, b, c = inputs[0].reshape(layout.a), inputs[1].reshape(layout.b), out.reshape(layout.out)
        if kernels.gpu.cublas.kernel_for(requested) == "blas":  # cuBLAS, as TF and PyTorch run
            if not layout.flat:  # CuPy broadcasts the batch axes itself
                a, b, c = inputs[0], inputs[1], out
            return kernels.gpu.cublas.matmul_launches(a, b, c)
        if layout.flat:
            return kernels.gpu.matmul_launches(a, b, c, scratch)
        launches = []  # one product a batch, in order on the step's stream (scratch reused)
        for batch in range(layout.out[0]):
            pair = a[int(layout.a_of[batch])], b[int(layout.b_of[batch])]
            launches += kernels.gpu.matmul_launches(*pair, c[batch], scratch)
        return launches

    def gpu_scratch_size(self, op: Any) -> int:
        layout = self.layout(op)
        m, k, n = layout.a[-2], layout.a[-1], layout.b[-1]
        return kernels.gpu.matmul_scratch_size(m, k, n, op.dtype)  # split-K partials

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        return np.matmul(args[0].astype(np.float64), args[1].astype(np.float64)).astype(op.dtype)


def add_n(inputs: Sequence[object], name: str | None = None) -> Tensor:
    """Sum of a list of same-shaped tensors."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, Sequence) or not inputs:
        from ..errors import GraphError

        raise GraphError("add_n takes a non-empty list of tensors")
    return build("add_n", tuple(as_tensor(x) for x in inputs), name=name)


def matmul(
    a: object,
    b: object,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str | None = None,
) -> Tensor:
    """Matrix product with np.matmul's rules: [m, k] @ [k, n] -> [m, n], and batch axes before
    the last two broadcast ((b, t, d) @ (d, k) -> (b, t, k)). `transpose_a` / `transpose_b`
    swap the last two axes of an operand first (TensorFlow's arguments): a constant is
    transposed once, when the graph is built; a computed value by a `transpose` op in the
    matmul's scope, which the timeline shows.

    >>> pg.matmul(pg.constant(np.ones((2, 3, 4))), pg.constant(np.ones((5, 4))),
    ...           transpose_b=True).shape
    (2, 3, 5)
    """
    a, b = binary_operands(a, b)
    if transpose_a or transpose_b:
        with scope(name or "MatMul"):
            a = _swap_last_axes(a, "transpose_a") if transpose_a else a
            b = _swap_last_axes(b, "transpose_b") if transpose_b else b
    return build("matmul", (a, b), name=name)


def _swap_last_axes(x: Tensor, what: str) -> Tensor:
    """x with its last two axes swapped: folded into a new constant when x is one."""
    if x.ndim < 2:
        raise GraphError(f"matmul {what}: {x.name!r} {list(x.shape)} has fewer than 2 axes")
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    if x.op.type == "constant":
        from .sources import constant

        return constant(np.transpose(x.op.attrs["value"], perm), name=what)
    from .shape_ops import transpose

    return transpose(x, perm, name=what)
