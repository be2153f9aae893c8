"""The op registry: for each op type one `OpDef` with its shape rule, cost, kernels and reference.

Adding an op means writing one small `OpDef` subclass (decorated with `@register`) and a builder
function, nothing else: the plan, the executors and the trace read everything from here.

Kernels are *row-range* kernels. Every op exposes a 2-D view of its work — `rows(op)` rows — and
`compute(op, args, out, shard, row_start, row_stop)` fills rows [row_start, row_stop). The plan
cuts those rows into shards whose boundaries depend only on the op's shapes (never on thread
counts), and executors may run the shards on any threads in any order; ops whose shards produce
partial results (reductions) combine them in `finish` in shard order. That is why every executor
and thread setting gives bit-identical outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..dtypes import Shape, num_elements, row_view_shape

Arrays = Sequence[np.ndarray]
#: Row ranges [(row_start, row_stop), ...], in order.
Bounds = Sequence[tuple[int, int]]


class ShapeError(Exception):
    """Raised by `OpDef.infer`; the builder turns it into a GraphError naming op and scope."""


@dataclass(frozen=True)
class Cost:
    """What an op costs: floating-point operations and bytes moved (read + written)."""

    flops: int
    bytes: int


class OpDef:
    """One op type. Subclasses override what differs; defaults suit an elementwise row op."""

    type: ClassVar[str]
    default_name: ClassVar[str]
    #: Source ops (constants, variables, placeholders) get their value from the session and
    #: are never scheduled as work.
    is_source: ClassVar[bool] = False
    #: Shard row boundaries are multiples of this (a kernel's register-tile height, say).
    row_align: ClassVar[int] = 1
    #: No shard gets fewer rows than this (matmul: each shard re-packs all of B).
    min_shard_rows: ClassVar[int] = 1
    #: Rough arithmetic per output element, for the cost model of elementwise ops.
    flops_per_element: ClassVar[int] = 1
    #: Single-core arithmetic throughput the shard planner assumes for this op's kernel.
    flops_per_ns: ClassVar[float] = 1.0
    #: True where the op's CPU kernels never call BLAS (see `calls_blas`).
    blas_free: ClassVar[bool] = False

    def cost(self, op: Any) -> Cost:
        n = num_elements(op.shape)
        reads = sum(num_elements(t.shape) * t.dtype.itemsize for t in op.inputs)
        return Cost(self.flops_per_element * n, reads + n * op.dtype.itemsize)

    def rows(self, op: Any) -> int:
        """How many rows the op's work splits into (the range shards are cut from)."""
        return row_view_shape(op.shape)[0]

    def infer(self, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Shape, np.dtype]:
        """Output shape and dtype from the input tensors; raise `ShapeError` when they misfit."""
        raise NotImplementedError

    def prepare(self, op: Any, args: Arrays, num_shards: int, config: Any) -> Any:
        """Allocate the output (and partial buffers) and the 2-D views that shards work on.

        `config` is the session's Config, for ops with kernel variants (matmul_kernel).
        """
        raise NotImplementedError

    def compute(self, op: Any, work: Any, shard: int, row_start: int, row_stop: int) -> None:
        """Fill rows [row_start, row_stop) of the prepared `work` (this is shard `shard`)."""
        raise NotImplementedError

    def merges_rows(self, op: Any, work: Any, shards: Bounds, groups: Bounds) -> bool:
        """Whether one `compute` call over each of `groups` (runs of consecutive `shards`, with
        the first shard's number) gives the same bits as one call per shard.

        An executor asks when fewer threads take part in the op than it has shards, so that a
        kernel that pays per call (matmul: each call packs all of B) runs once per thread; the
        shards themselves, and so the bits, stay the plan's. False (the default) keeps one call
        per shard: partial results (reductions) are per shard by definition.
        """
        return False

    def calls_blas(self, op: Any, config: Any) -> bool:
        """Whether the op's CPU kernels may call BLAS, which a run then holds to one thread
        (`executors.blas_threads`: holding and restoring it costs a few us a run, more in a
        run whose kernels have pushed the Python code out of the caches). True unless the op
        type knows better: an op nobody declared (a user's) may call NumPy's matmul, whose
        bits depend on BLAS's thread count."""
        return not self.blas_free

    def sharding(self, op: Any) -> tuple[OpDef, Any]:
        """Whose shapes decide this op's shard boundaries: its own (a fused op: its matmul's,
        so that its rows are cut exactly as the matmul alone would cut them)."""
        return self, op

    def finish(self, op: Any, work: Any) -> np.ndarray:
        """Turn the filled work into the output value (combine partials in shard order)."""
        return work[-1]

    def whole(self, op: Any, config: Any = None) -> Callable[[Arrays], np.ndarray] | None:
        """The whole op as one function of its input arrays, for a step with a single shard:
        the same bits as `prepare` (with `config`), `compute` of shard 0 and `finish`, without
        their Python work; None when the op type has no such path (the default).

        Made once per plan step (the plan stores it as `Step.whole`), so everything that
        depends only on the op (kernel, shapes, the views it needs) is settled here and the
        call does only the computing. That Python work (an output, its 2-D views, the work
        tuple, three calls) is ~2 us: most of the cost of a tiny op, and graphs of thousands
        of small ops are where it counts. Beside a real kernel it costs ~3 times as much: the
        kernel has pushed that Python code out of the caches (a 64x256x256 matmul's step:
        benchmarks/RESULTS.md, "One call for matmul and random_normal").
        """
        return None

    def gpu_launches(
        self, op: Any, inputs: list[Any], out: Any, scratch: Any = None, config: Any = None
    ) -> list[Any]:
        """The op's CUDA work as `kernels.gpu.Launch` objects: device arrays in, `out` filled.

        Built once per plan (a plan's device buffers never change) and enqueued on every run by
        calling each with the step's stream. Building checks shapes only: it must not launch,
        synchronize or allocate device memory. `scratch`: a float64 device buffer of
        `gpu_scratch_size` elements when that is not 0.
        """
        raise NotImplementedError(f"op type {self.type!r} has no GPU kernel")

    def gpu_scratch_size(self, op: Any) -> int:
        """Float64 elements of device scratch the GPU kernel wants (allocated once per plan)."""
        return 0

    def reference(self, op: Any, args: Arrays) -> np.ndarray:
        """The plain NumPy computation tests compare against."""
        raise NotImplementedError


REGISTRY: dict[str, OpDef] = {}


def register(cls: type[OpDef]) -> type[OpDef]:
    """Class decorator: add one instance of `cls` to the registry under `cls.type`."""
    if cls.type in REGISTRY:
        raise ValueError(f"op type {cls.type!r} registered twice")
    REGISTRY[cls.type] = cls()
    return cls


def opdef(op_type: str) -> OpDef:
    return REGISTRY[op_type]
