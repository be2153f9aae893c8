"""The op definition and the builder of every elementwise entry (`ops.elementwise`).

One class serves them all: NumPy broadcasting of any shapes on every side (`ops.broadcast`),
the dtype rules (one dtype on every side, as TensorFlow; a Python number takes the dtype of the
tensor beside it), the cost, the row kernel the table generates, the CUDA kernel, the
reference. Shards are ranges of the output's rows, cut by shape only, and an element's value
depends on its operands alone, so every executor and thread setting gives the same bits.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import kernels
from ..dtypes import DTYPES, Shape, as_dtype, kind_name, num_elements
from ..graph import Tensor
from .broadcast import NO_MAP, Layout, broadcast_shapes, elementwise_layout
from .builder import as_tensor, binary_operands, build
from .elementwise import BOOL, CAST, TABLE, Entry
from .registry import REGISTRY, Arrays, Bounds, Cost, OpDef, ShapeError


class ElementwiseOp(OpDef):
    """The op of one table entry (module docstring)."""

    blas_free = True  # generated Numba row kernels only
    #: Vectorized row kernels: their arithmetic is not what takes the time (measured with
    #: BYTES_PER_NS: benchmarks/RESULTS.md, "Cost model").
    flops_per_ns = 20.0

    def __init__(self, entry: Entry):
        self.entry = entry
        self.type = entry.name  # type: ignore[misc]
        self.default_name = entry.label  # type: ignore[misc]
        self.flops_per_element = entry.flops  # type: ignore[misc]
        if entry.cpu is not None:
            self.flops_per_ns = 50.0  # kernels.vecmath: polynomials in fma vector code

    @functools.cached_property
    def kernel(self) -> Any:
        return getattr(kernels.elementwise, f"{self.type}_rows")

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        entry = self.entry
        if len(inputs) != entry.arity:
            raise ShapeError(f"{entry.name} takes {entry.arity} inputs, got {len(inputs)}")
        values = inputs
        if entry.name == "where":
            if inputs[0].dtype != np.bool_:
                raise ShapeError(f"the condition must be bool, not {inputs[0].dtype.name}")
            values = inputs[1:]
        dtypes = {t.dtype for t in values}
        if len(dtypes) > 1:
            listed = ", ".join(sorted(d.name for d in dtypes))
            raise ShapeError(f"dtypes differ ({listed}): cast one with pg.cast(x, dtype)")
        dtype = values[0].dtype
        if kind_name(dtype) not in entry.kinds:
            raise ShapeError(
                f"{entry.name} takes {' or '.join(entry.kinds)} values, not {dtype.name}"
            )
        shape = broadcast_shapes(*(t.shape for t in inputs))
        if entry.result == BOOL:
            return shape, np.dtype(np.bool_)
        if entry.result == CAST:
            return shape, attrs["dtype"]
        return shape, dtype

    def cost(self, op: Any) -> Cost:
        n = num_elements(op.shape)
        reads = sum(num_elements(t.shape) * t.dtype.itemsize for t in op.inputs)
        return Cost(self.flops_per_element * n, reads + n * op.dtype.itemsize)

    def layout(self, op: Any, standard: bool = False) -> Layout:
        """The rows the kernel sees (`broadcast.elementwise_layout`: the widest the shapes
        allow; `standard`: the output's own row view, for a fused matmul epilogue)."""
        shapes = tuple(tuple(t.shape) for t in op.inputs)
        return elementwise_layout(shapes, tuple(op.shape), standard)

    def rows(self, op: Any) -> int:
        return self.layout(op).rows

    def kernel_arguments(self, op: Any, standard: bool = False) -> Callable[[Arrays], list[Any]]:
        """A function of the input arrays giving the kernel's operand arguments (the views and
        maps settled once per op; a unary kernel's operand has the output's rows: no map)."""
        layout = self.layout(op, standard)
        unary = self.entry.arity == 1
        views = [(rows, None if unary else row_map) for rows, row_map in layout.operands]

        def arguments(args: Arrays) -> list[Any]:
            laid_out: list[Any] = []
            for x, (rows, row_map) in zip(args, views):
                laid_out.append(x.reshape(rows))
                if row_map is not None:
                    laid_out.append(row_map)
            return laid_out

        return arguments

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        return self.prepare_rows(op, args)

    def prepare_rows(self, op: Any, args: Arrays, standard: bool = False) -> Any:
        """The work of `prepare` in a chosen layout: `standard` is the output's own rows, which
        a fused matmul epilogue computes in the matmul's row ranges (`ops.fused`)."""
        layout = self.layout(op, standard)
        out = np.empty(op.shape, dtype=op.dtype)
        operands = self.kernel_arguments(op, standard)(args)
        return (*operands, out.reshape(layout.rows, layout.columns), out)

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        self.kernel(*work[:-1], row_start, row_stop)

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """Not yet: an element's value does not depend on the rows around it (which is why
        `whole` may compute every row in one call). But the interrupt hunt under
        NUMBA_BOUNDSCHECK=1 (tests/test_hunt.py) sometimes died with SIGSEGV inside a row
        kernel, more often with elementwise calls merged; until that crash is understood these
        ops keep one call per shard. (They gain least from merging: an elementwise call costs
        the same per row whatever rows it is given.)"""
        return False

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray]:
        """All rows in one kernel call. Where the inputs are 2-D of the output's shape and that
        is the layout, they are passed as they are (a tiny op's call is mostly this Python:
        three views fewer, ~1 us)."""
        kernel, shape, dtype = self.kernel, op.shape, op.dtype
        layout = self.layout(op)
        view = (layout.rows, layout.columns)
        if view == tuple(shape) and all(tuple(t.shape) == view for t in op.inputs):
            binary = self.entry.arity > 1
            rows = layout.rows

            def as_they_are(args: Arrays) -> np.ndarray:
                out = np.empty(shape, dtype)
                if binary:
                    kernel(*[a for x in args for a in (x, NO_MAP)], out, 0, rows)
                else:
                    kernel(args[0], out, 0, rows)
                return out

            return as_they_are
        arguments = self.kernel_arguments(op)

        def computed(args: Arrays) -> np.ndarray:
            out = np.empty(shape, dtype)
            kernel(*arguments(args), out.reshape(view), 0, view[0])
            return out

        return computed

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        return kernels.gpu.elementwise_launches(self.type, inputs, out)

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """NumPy's function of the entry, on float64 inputs for a transcendental one."""
        entry = self.entry
        if entry.result == CAST:
            return np.asarray(args[0]).astype(op.dtype)
        values = [np.asarray(x) for x in args]
        if entry.widen_reference:
            values = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in values]
        with np.errstate(all="ignore"):
            return np.asarray(entry.reference(*values)).astype(op.dtype)


for _entry in TABLE.values():
    REGISTRY[_entry.name] = ElementwiseOp(_entry)


# --- builders --------------------------------------------------------------------------------


def _builder(entry: Entry) -> Callable[..., Tensor]:
    """`pg.<name>`: the entry's builder, with its arguments' names (Shift-Tab and `help()` show
    them) and its docstring."""
    parameters = list(inspect.signature(entry.scalar).parameters)
    signature = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters]
        + [inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None)],
        return_annotation=Tensor,
    )

    def builder(*args: object, **kwargs: Any) -> Tensor:
        if len(args) != entry.arity or set(kwargs) - {"name"}:
            bound = signature.bind(*args, **kwargs).arguments
            args, kwargs = tuple(bound[p] for p in parameters), {"name": bound.get("name")}
        if entry.arity == 2:
            tensors = binary_operands(*args)
        elif entry.arity == 3:  # where(condition, x, y)
            tensors = (as_tensor(args[0], np.dtype(np.bool_)), *binary_operands(*args[1:]))
        else:
            tensors = (as_tensor(args[0]),)
        return build(entry.name, tensors, name=kwargs.get("name"))

    builder.__name__ = builder.__qualname__ = entry.name
    builder.__doc__ = (
        f"{entry.summary}\n\nOp type {entry.name!r}, named {entry.label!r} by default."
    )
    builder.__signature__ = signature  # type: ignore[attr-defined]
    builder.__module__ = "parallelgraph"
    return builder


def cast(x: object, dtype: object, name: str | None = None) -> Tensor:
    """x converted to `dtype` (float32, float64, int32, int64 or bool), elementwise: floats to
    ints truncate toward zero, anything but 0 becomes True (as NumPy's astype).

    >>> pg.cast(pg.constant([1.7, -0.0]), "int32").dtype
    dtype('int32')
    """
    target = as_dtype(dtype, "cast", DTYPES)
    return build("cast", (as_tensor(x),), {"dtype": target}, name)


BUILDERS: dict[str, Callable[..., Tensor]] = {
    entry.name: cast if entry.result == CAST else _builder(entry) for entry in TABLE.values()
}
globals().update({name: b for name, b in BUILDERS.items() if name != "cast"})
__all__ = sorted(BUILDERS)
