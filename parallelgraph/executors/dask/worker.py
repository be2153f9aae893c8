"""What runs on a Dask worker process: the picklable stand-ins of a plan's steps and the tasks.

Dask pickles the functions of this module (`run_chain`, `collect_timings`, `worker_check`,
`probe_clock`) and the classes of the stand-ins by reference, as "module path + name", so this
module's name must not change between the session and its workers, and it imports nothing from
the client side (`dask.py`): a worker loads only what a task needs.

**Stand-ins.** A plan's `Op` references its Graph, which does not pickle; a step travels as a
`StepSpec` instead (the op's type, name, attrs, shape and dtype, its inputs' shapes, the OpDef,
the shards, and the session's Config without the client), and a chain of steps that one task
runs as a `ChainSpec` (`chains.py` builds them, once per plan).

**Running.** A worker runs a step exactly as the threads executor does (`step.execute_step`: the
same shards, the same kernels, partial sums in shard order), so outputs are bit-identical to the
sequential reference. Each worker process owns one intra-op pool of `intra_op_threads` (made on
its first task, shared by all tasks on that worker) and holds BLAS to one thread while any of our
tasks runs (`_blas.BLAS_LIMIT`, process-wide and reference-counted, so concurrent tasks and
sessions cannot undo it). A kernel error comes back wrapped in `StepError`, which carries the
step's index, so the session can name the op that failed.

**Timing.** Workers time each op and shard with their own `perf_counter_ns` and keep the records
under the run's token until `collect_timings` takes them, together with the worker's
incoming-transfer log; `clocks.py` puts them on the session's clock.
"""

from __future__ import annotations

import pickle
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...config import Config
from ..blas_threads import single_threaded_blas
from ..pools import IntraOpPool
from ..step import execute_step

#: The clock of op and shard records, on workers and in the session alike.
clock = time.perf_counter_ns


# -- what a worker receives -------------------------------------------------------------------
@dataclass(frozen=True)
class TensorSpec:
    """An op's input as kernels see it: a name, a shape and a dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class OpSpec:
    """A picklable stand-in for an `Op` (which references its unpicklable Graph): every field
    an OpDef's prepare/compute/finish reads."""

    id: int
    type: str
    name: str
    scope: str
    device: str
    inputs: tuple[TensorSpec, ...]
    attrs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: np.dtype

    @classmethod
    def of(cls, op: Any) -> OpSpec:
        inputs = tuple(TensorSpec(t.name, t.shape, t.dtype) for t in op.inputs)
        return cls(
            op.id, op.type, op.name, op.scope, op.device, inputs, dict(op.attrs), op.shape, op.dtype
        )


@dataclass(frozen=True)
class StepSpec:
    """What a worker needs to run one step with `step.execute_step`."""

    index: int
    op: OpSpec
    definition: Any  # the OpDef (pickled by reference to its class)
    shards: tuple[tuple[int, int], ...]
    config: Config  # the session's Config without the Dask client
    #: Always None: a plan step's one-call function (`Step.whole`) is a closure, which does
    #: not pickle; workers prepare, compute and finish (a task costs milliseconds anyway).
    whole: None = None


@dataclass(frozen=True)
class ChainSpec:
    """Steps that one Dask task runs back to back. `inputs[k]` wires step k's inputs, in order:
    an index into the task's arguments, or -1 for the value of step k - 1."""

    steps: tuple[StepSpec, ...]
    inputs: tuple[tuple[int, ...], ...]


class StepError(Exception):
    """A step's kernel raised on a worker: the step index, the original error, and the
    worker's traceback as text (tracebacks do not survive pickling)."""

    def __init__(self, index: int, op_name: str, error: BaseException, worker_traceback: str = ""):
        super().__init__(index, op_name, error, worker_traceback)
        self.index, self.op_name, self.error = index, op_name, error
        self.worker_traceback = worker_traceback

    def __str__(self) -> str:
        return f"op {self.op_name!r} failed: {type(self.error).__name__}: {self.error}"


# -- worker side --------------------------------------------------------------------------------
class _WorkerState:
    """Per worker process: intra-op pools, thread lanes, timing records."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pools: dict[int, IntraOpPool] = {}
        self.lanes: dict[int, str] = {}
        self.timings: OrderedDict[str, list[tuple[Any, ...]]] = OrderedDict()

    def pool(self, threads: int) -> IntraOpPool:
        """The process's intra-op pool of `threads` threads (made on first use, kept)."""
        with self.lock:
            if threads not in self.pools:
                self.pools[threads] = IntraOpPool(threads)
            return self.pools[threads]

    def lane(self) -> str:
        """The calling task thread's lane ("0", "1", ...), numbered in order of first use."""
        ident = threading.get_ident()
        lane = self.lanes.get(ident)
        if lane is None:
            with self.lock:
                lane = self.lanes.setdefault(ident, str(len(self.lanes)))
        return lane

    def keep(self, token: str, records: list[tuple[Any, ...]]) -> None:
        with self.lock:
            self.timings.setdefault(token, []).extend(records)
            while len(self.timings) > 256:  # a client that never collected: drop the oldest
                self.timings.popitem(last=False)


_WORKER = _WorkerState()


def run_chain(chain: ChainSpec, trace_token: str | None, *args: np.ndarray) -> np.ndarray:
    """The Dask task of a chain of steps: run them in order on this worker thread and its
    intra-op pool, each exactly as the threads executor would; return the last one's value.

    A kernel error is raised as `StepError` (picklable, naming the step that failed); with a
    trace token the op and shard times are kept on the worker until `collect_timings` takes them.
    """
    records: list[tuple[Any, ...]] | None = [] if trace_token else None
    config = chain.steps[0].config
    pool = _WORKER.pool(config.intra_op_threads)
    record = records.append if records is not None else None
    lane, value = _WORKER.lane(), None
    try:
        with single_threaded_blas():  # the process-wide, reference-counted BLAS limit
            for spec, wiring in zip(chain.steps, chain.inputs):
                inputs = [value if position < 0 else args[position] for position in wiring]
                try:
                    value = execute_step(spec, inputs, lane, record, config, pool)
                except Exception as error:  # noqa: BLE001 - sent back to the session
                    text = "".join(
                        traceback.format_exception(type(error), error, error.__traceback__)
                    )
                    raise StepError(spec.index, spec.op.name, _picklable(error), text) from None
    finally:
        if records:
            _WORKER.keep(trace_token, records)  # type: ignore[arg-type]
    return value  # type: ignore[return-value]


def _picklable(error: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - any pickling problem
        return RuntimeError(f"{type(error).__name__}: {error}")


def collect_timings(
    tokens: Sequence[str], keys: Sequence[str], dask_worker: Any = None
) -> dict[str, Any]:
    """Run on each worker after a traced run: take the op/shard records of each of `tokens`
    and the logged incoming transfers of `keys`, with this worker's perf and wall clocks read
    together (transfer times are wall-clock times)."""
    with _WORKER.lock:
        records = {token: _WORKER.timings.pop(token, []) for token in tokens}
    wanted, transfers = set(keys), []
    if dask_worker is not None:
        delay = getattr(dask_worker, "scheduler_delay", 0.0)
        for entry in list(dask_worker.transfer_incoming_log):
            moved = {k: n for k, n in entry.get("keys", {}).items() if k in wanted}
            if moved:
                transfers.append((entry["start"] - delay, entry["stop"] - delay, moved))
    return {"records": records, "transfers": transfers, "perf": clock(), "wall": time.time()}


def worker_check() -> str:
    """Run on each worker when the executor starts: proves that parallelgraph and its kernels
    import there, and says which version."""
    from ... import __version__, kernels  # noqa: F401 - importing the kernels is the point

    return __version__


def probe_clock() -> int:
    """Run on each worker to estimate its clock offset (`clocks.py`): its clock, now."""
    return clock()
