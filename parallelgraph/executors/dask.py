"""The dask executor: the same plan, run as Dask tasks on a `distributed` cluster.

`Config(executor="dask")` runs a graph on a Dask cluster without changing the graph, the trace,
the plots or `explain()`. The cluster is an existing `distributed.Client` (`dask_client=`), a
scheduler address (`dask_address="tcp://..."`, the executor opens and closes its own Client), or,
with neither, a `LocalCluster` the executor starts and shuts down with the session: one worker
process per inter-op thread, one thread each, so `inter_op_threads` still bounds how many ops run
at once and `intra_op_threads` still bounds the threads working on one op (inside its worker).
Needs `distributed` and a dask with the public `dask.task_spec` module (tested with 2026.8), and
parallelgraph installed where the workers run (checked when the session starts).

Design
------
**Tasks.** One run of a plan is one Dask graph, sent to the scheduler in one message. Each
*chain* of steps is a task `run_chain(chain, trace_token, *inputs)`: a chain is a maximal run of
steps in which each step's value goes only to the next, which reads no other step (its other
inputs are sources); every other step is a chain of one. Fusing such a chain loses no
parallelism (the next step could not start earlier anyway) and saves a round trip through the
scheduler per link, the dominant cost of a Dask task (milliseconds). A fetched value ends a
chain, and so does a change of worker pin. `chain` (`ChainSpec`) holds a picklable stand-in of
each step (`StepSpec`: the op's type, name, attrs, shape and dtype, its inputs' shapes, the
OpDef, the shards, and the session's Config without the client), made once per plan; each input
is a reference to the producing task or to a source's future, so Dask moves values between
workers and starts a task when its inputs exist. `FUSE_CHAINS = False` makes every step its own
task (benchmarks/dask_overhead.py compares the two). A worker runs a step exactly as the threads
executor does (`step.execute_step`: the same shards, the same kernels, partial sums in shard
order), so outputs are bit-identical to the sequential reference. Each worker process owns one
intra-op pool of `intra_op_threads` (made on its first task, shared by all tasks on that worker)
and holds BLAS to one thread while any of our tasks runs (`_blas.BLAS_LIMIT`, process-wide and
reference-counted, so concurrent tasks and sessions cannot undo it).

**Values.** Only the fetched keys are requested, so intermediate values stay on the workers and
Dask frees each one after its last consumer has run; the fetched values are gathered once at the
end of the run: nothing else comes back to the session.

**Sources.** Variables, constants and fed values are scattered to the workers and cached by
identity. A session hands the executor the same variable array on every run, so each variable is
sent to the cluster once per session (again only after `global_variables_initializer()`, or when
the worker holding it died); fed values are new arrays, so they travel every run. A source whose
consumers are all pinned to one worker is scattered to that worker.

**Placement.** Dask's scheduler places unpinned steps (usually where their inputs are). A step
on `pg.device("worker:N")`, or in a scope that `placement` maps to N ({"net1": 0, "net2": 1}),
carries a restriction to the N-th worker (addresses sorted) with `allow_other_workers=True`:
Dask keeps it there while that worker lives, and runs it on another worker when it is gone
instead of waiting forever.

**Timing.** Workers time each op and shard with their own `perf_counter_ns` and keep the records
under the run's token; after a traced run one `client.run` collects them, together with the
workers' incoming-transfer log (Dask's `transfer_incoming_log`, wall-clock times converted on
the worker). Worker clocks are put on the session's base with an offset estimated once per
worker from the fastest of a few round trips (zero when zero lies within the round trip, e.g.
processes of one machine, which share CLOCK_MONOTONIC). Lanes are "worker-N/T" (worker N's T-th
task thread; N numbers the workers by sorted address, as "worker:N" does), "worker-N/intra-op-I"
(its intra-op helpers) and "worker-N/transfer" (data arriving at worker N, as "copy" events),
so `plot`, `overlap` and `explain` work unchanged.

**Failures.** A kernel error comes back wrapped in `StepError`, which carries the step's index,
so the session raises `OpError` naming the op and stays usable. A worker that dies mid-run is
survived where Dask can: its running tasks are rescheduled and lost intermediates recomputed. If
a scattered source was lost with it (it cannot be recomputed), the run is submitted once more
with the sources sent again; a second loss, `KilledWorker` (a task whose workers kept dying), a
lost scheduler, no worker for `no_worker_timeout_s` or a run longer than `run_timeout_s` (off by
default) end the run with an error naming an op. The wait polls every `POLL_S`, so it never hangs.

Measured cost (benchmarks/dask_overhead.py, the 2-core VM, a LocalCluster of 2 worker
processes x 1 thread sharing the 2 cores with the client and the scheduler): per task the same
as plain `dask.delayed` calling the same kernels (0.86-1.09x over four runs): 2.2-3.2 ms per
task in a wide fan-in and 7-9 ms per task along a chain of unfused tasks (each dependency is a
round trip through the scheduler), against 0.02-0.05 ms for the threads executor; fused, a
198-op chain is one task (0.26 ms per op). Tracing adds one `client.run` per run (0-30 ms here,
within the noise). The medium two-network graph takes 102-105 ms on the two workers (137-144
unfused) against 48-53 ms for the threads executor with two inter-op threads on the same cores:
scaling out pays only when ops are much longer than those round trips, or when one machine is
really not enough.
"""

from __future__ import annotations

import itertools
import logging
import pickle
import queue
import threading
import time
import traceback
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._blas import single_threaded_blas
from ..config import Config
from ..errors import GraphError, describe
from ..plan import Plan, Step
from .pools import IntraOpPool
from .step import execute_step

clock = time.perf_counter_ns

#: Seconds between health checks while a run waits for its results.
POLL_S = 0.5
#: How many clock round trips estimate a worker's clock offset (the fastest one is used).
CLOCK_PROBES = 5
#: Plans whose task specs are kept (a session caches one plan per fetch/feed combination).
PREPARED_PLANS = 64
#: Run each chain of steps (module docstring, Tasks) as one Dask task; read by each new executor.
FUSE_CHAINS = True


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
    from .. import __version__, kernels  # noqa: F401 - importing the kernels is the point

    return __version__


def _probe_clock() -> int:
    return clock()


# -- client side --------------------------------------------------------------------------------
Record = Callable[[tuple[Any, ...]], None]
Failure = tuple[Step, BaseException]


@dataclass
class DaskRun:
    """What `DaskExecutor.run` returns: `failure` is None or (step, exception)."""

    failure: Failure | None = None
    attempts: int = 1


@dataclass(frozen=True)
class _Task:
    """One Dask task of a plan: a chain of steps, the slots it reads from outside the chain
    (its arguments, in order), and its worker pin."""

    spec: ChainSpec
    steps: tuple[Step, ...]
    reads: tuple[int, ...]
    pin: int | None  # worker index; None: Dask decides


@dataclass(frozen=True)
class _Prepared:
    """Made once per plan: the tasks, and where each source should go."""

    tasks: tuple[_Task, ...]
    source_pins: dict[int, int | None]  # source slot -> worker index
    source_names: dict[int, str]  # source slot -> op name


@dataclass
class _Source:
    """A source value sent to the cluster: the array it was sent for, and its future."""

    array: Any
    future: Any


@dataclass
class _Keys:
    """The Dask keys of one run: the task key of each step's slot; per key the name of the op
    whose value it holds, the task's first step, and the names of all the steps it runs."""

    task: dict[int, str]
    names: dict[str, str]
    steps: dict[str, Step]
    chains: dict[str, tuple[str, ...]]


class _LostData(Exception):
    """A value the run needs was lost with a worker and cannot be recomputed."""

    def __init__(self, slot: int | None, error: Exception):
        super().__init__(slot, error)
        self.slot, self.error = slot, error


class _Stalled(Exception):
    """The run cannot finish (no scheduler, no worker, too long): `step` is a pending op."""

    def __init__(self, step: Step, error: Exception):
        super().__init__(step, error)
        self.step, self.error = step, error


class DaskExecutor:
    """Runs plans as Dask tasks on a distributed cluster; see the module docstring.

    Owns what it started (a LocalCluster and its Client, or a Client to `dask_address`) and
    closes it in `close()`; a Client passed as `dask_client` is only borrowed. One run at a time
    (the Session makes sure of that).
    """

    name = "dask"
    #: Fail a run that has not finished after this many seconds (None: no limit).
    run_timeout_s: float | None = None
    #: Fail a run (or the start) when the cluster has had no worker for this many seconds.
    no_worker_timeout_s: float = 60.0

    def __init__(self, config: Config):
        self.config = config
        self._worker_config = config.replace(dask_client=None, dask_address=None)
        self._cluster: Any = None
        self._owns_client = False
        self._client: Any = None
        self._closed = False
        self._token = uuid.uuid4().hex[:8]
        self._runs = itertools.count()
        self._sources: dict[int, _Source] = {}
        self._prepared: OrderedDict[int, tuple[Plan, _Prepared]] = OrderedDict()
        self._offsets: dict[str, int] = {}
        self._warned: set[str] = set()
        #: Scope -> worker index: pins every op of the scope (and its sub-scopes) that has no
        #: "worker:N" device of its own; from `Config.dask_placement` when the Config has one.
        #: Set it before the first run (pins are decided once per plan).
        self.placement: dict[str, int] = dict(getattr(config, "dask_placement", None) or {})
        #: Counters: runs, tasks submitted, sources sent, values gathered, resubmitted runs.
        self.stats = {"runs": 0, "tasks": 0, "sources_sent": 0, "gathered": 0, "retries": 0}
        #: Fuse chains of steps into one task each (set before the first run of a plan).
        self.fuse_chains = FUSE_CHAINS
        try:
            self._client = self._connect(config)
            self._check_workers()
        except BaseException:
            self.close()
            raise

    # -- connection ------------------------------------------------------------------------
    def _connect(self, config: Config) -> Any:
        """The borrowed Client, or a new one (to `dask_address`, or to a new LocalCluster)."""
        from distributed import Client, LocalCluster

        if config.dask_client is not None:
            client = config.dask_client
            if not isinstance(client, Client):
                raise TypeError(f"Config.dask_client must be a distributed.Client, not {client!r}")
            if client.asynchronous:
                raise ValueError("Config.dask_client must be a synchronous distributed.Client")
            return client
        self._owns_client = True
        if config.dask_address:
            return Client(config.dask_address, set_as_default=False)
        self._cluster = LocalCluster(
            n_workers=config.inter_op_threads,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # a free port: never clashes with another cluster's 8787
            silence_logs=logging.ERROR,
        )
        return Client(self._cluster, set_as_default=False)

    def _check_workers(self) -> None:
        """Wait for a worker, check that the workers can run parallelgraph, estimate clocks."""
        self._client.wait_for_workers(1, timeout=self.no_worker_timeout_s)
        from .. import __version__

        try:
            versions = self._client.run(worker_check)
        except ImportError as problem:
            raise RuntimeError(
                f"the Dask workers cannot import parallelgraph ({problem}); install it (the "
                "same version) where the workers run"
            ) from problem
        others = {a: v for a, v in versions.items() if v != __version__}
        if others:
            warnings.warn(
                f"Dask workers run another parallelgraph version than this session "
                f"({__version__}): {others}",
                RuntimeWarning,
                stacklevel=5,
            )
        self._clock_offsets(self.workers())

    def workers(self) -> list[str]:
        """The cluster's worker addresses, sorted: "worker:N" means the N-th of these."""
        return sorted(self._client.scheduler_info()["workers"])

    @property
    def client(self) -> Any:
        """The `distributed.Client` this executor submits to."""
        return self._client

    # -- running -----------------------------------------------------------------------------
    def run(self, plan: Plan, values: list[Any], record: Record | None) -> DaskRun:
        """Run every step of `plan` on the cluster; on success `values[slot]` holds a host
        array for each fetch slot. A run whose sources were lost is submitted once more."""
        if self._closed:
            raise RuntimeError("this executor is closed")
        self.stats["runs"] += 1
        if not plan.steps:
            return DaskRun()
        prepared = self._prepare(plan)
        pinned = any(task.pin is not None for task in prepared.tasks)
        workers = self.workers() if pinned else []  # a round trip: only when pins need it
        started, tokens, names = clock(), [], {}
        result = DaskRun()
        for attempt in (1, 2):
            tokens.append(f"{self._token}-{next(self._runs)}")
            result.attempts = attempt
            try:
                result.failure = self._attempt(
                    plan, prepared, values, workers, tokens, names, record is not None
                )
                break
            except _LostData as lost:
                if attempt == 2:
                    result.failure = (self._first_reader(plan, lost.slot), lost.error)
                    break
                self.stats["retries"] += 1
                workers = self.workers() if pinned else []
            except _Stalled as stalled:
                result.failure = (stalled.step, stalled.error)
                break
        if record is not None:
            try:
                self._collect(tokens, names, workers, started, record)
            except Exception:
                if result.failure is None:  # a failed run's trace is never shown: keep its error
                    raise
        return result

    def _attempt(
        self,
        plan: Plan,
        prepared: _Prepared,
        values: list[Any],
        workers: list[str],
        tokens: list[str],
        names: dict[str, str],
        traced: bool,
    ) -> Failure | None:
        """Submit the run's graph, wait, gather the fetches into `values`. Raises `_LostData`
        when a source was lost with a worker, `_Stalled` when the run cannot finish."""
        refs = self._source_futures(plan, prepared, values, workers)
        keys = _Keys({}, {}, {}, {})
        for task in prepared.tasks:
            last = task.steps[-1]
            key = f"pg-{last.op.name}-{tokens[-1]}"
            keys.task.update((step.slot, key) for step in task.steps)
            keys.names[key], keys.steps[key] = last.op.name, task.steps[0]
            keys.chains[key] = tuple(step.op.name for step in task.steps)
        keys.names.update((refs[slot].key, prepared.source_names[slot]) for slot in refs)
        names.update(keys.names)
        trace_token = tokens[-1] if traced else None
        graph = self._graph(prepared, refs, keys, workers, trace_token)
        fetched = [slot for slot in dict.fromkeys(plan.fetch_slots) if slot in keys.task]
        futures = self._client.get(graph, [keys.task[slot] for slot in fetched], sync=False)
        self.stats["tasks"] += len(prepared.tasks)
        succeeded = False
        try:
            failure = self._wait(plan, futures, refs, keys)
            if failure is None:
                for slot, array in zip(fetched, self._gather(futures)):
                    values[slot] = array if array.flags.writeable else array.copy()
                succeeded = True
            return failure
        finally:
            if not succeeded:  # a failure, a loss or an interrupt: stop what still runs
                self._client.cancel(futures)

    def _graph(
        self,
        prepared: _Prepared,
        refs: dict[int, Any],
        keys: _Keys,
        workers: list[str],
        trace_token: str | None,
    ) -> Any:
        """The run as one HighLevelGraph: a layer per pinned worker (annotated with the worker
        restriction) and a layer for the tasks Dask places."""
        from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
        from dask.task_spec import Task, TaskRef

        layers: dict[str | None, dict[str, Any]] = {}
        for task in prepared.tasks:
            inputs = [refs[s] if s in refs else TaskRef(keys.task[s]) for s in task.reads]
            key = keys.task[task.steps[-1].slot]
            address = self._pin_address(task.steps[0], task.pin, workers)
            layers.setdefault(address, {})[key] = Task(
                key, run_chain, task.spec, trace_token, *inputs
            )
        named = {}
        for index, (address, tasks) in enumerate(layers.items()):
            annotations = None
            if address is not None:
                annotations = {"workers": [address], "allow_other_workers": True}
            named[f"pg-layer-{index}-{next(iter(tasks))}"] = MaterializedLayer(
                tasks, annotations=annotations
            )
        return HighLevelGraph(named, {name: set() for name in named})

    def _pin_address(self, step: Step, pin: int | None, workers: list[str]) -> str | None:
        """The address of a pinned step's worker (None: Dask decides)."""
        if pin is None:
            return None
        if pin < len(workers):
            return workers[pin]
        if not self.config.soft_placement:
            raise GraphError(
                f"op {describe(step.op)} is placed on worker:{pin}, but the Dask cluster has "
                f"{len(workers)} worker(s); set Config(soft_placement=True) to let Dask choose"
            )
        device = f"worker:{pin}"
        if device not in self._warned:
            self._warned.add(device)
            warnings.warn(
                f"soft placement: {device} does not exist ({len(workers)} Dask worker(s)); "
                f"Dask chooses where ops placed there run (first: {step.op.name})",
                RuntimeWarning,
                stacklevel=5,
            )
        return None

    def _wait(
        self, plan: Plan, futures: list[Any], refs: dict[int, Any], keys: _Keys
    ) -> Failure | None:
        """Wait until every fetch is done or one failed. Checks the cluster every POLL_S (and at
        the run's deadline), so a lost scheduler, an empty cluster or a timeout ends the run
        instead of hanging it."""
        done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for future in futures:
            future.add_done_callback(done.put)
        remaining, started, no_worker_since = len(futures), time.monotonic(), None
        limit = self.run_timeout_s
        while remaining:
            poll = POLL_S if limit is None else min(POLL_S, started + limit - time.monotonic())
            try:
                future = done.get(timeout=max(poll, 0.001))
            except queue.Empty:
                no_worker_since = self._check_health(futures, keys, started, no_worker_since)
                continue
            remaining -= 1
            if future.status == "error":
                return self._failure(plan, future.exception(), keys)
            if future.status != "finished":  # cancelled: something it needs was lost
                raise self._lost(refs, future, plan)
        return None

    def _check_health(
        self, futures: list[Any], keys: _Keys, started: float, no_worker_since: float | None
    ) -> float | None:
        """Raise `_Stalled` (naming a pending op) when the run cannot finish; returns since
        when the cluster has had no worker (None: it has workers)."""
        pending = next((f for f in futures if f.status == "pending"), futures[0])
        step = keys.steps[pending.key]
        if self._client.status not in ("running", "connecting"):
            raise _Stalled(
                step,
                RuntimeError(
                    f"lost the connection to the Dask scheduler (client {self._client.status})"
                ),
            )
        now = time.monotonic()
        if self.run_timeout_s is not None and now - started > self.run_timeout_s:
            raise _Stalled(
                step, TimeoutError(f"not finished within run_timeout_s={self.run_timeout_s} s")
            )
        try:
            if self._client.nthreads():
                return None
        except OSError as problem:  # the scheduler went away while we asked
            error = RuntimeError(f"the Dask scheduler did not answer: {problem}")
            raise _Stalled(step, error) from None
        if no_worker_since is not None and now - no_worker_since > self.no_worker_timeout_s:
            raise _Stalled(
                step,
                RuntimeError(
                    f"the Dask cluster has had no worker for {now - no_worker_since:.0f} s"
                ),
            )
        return no_worker_since if no_worker_since is not None else now

    @staticmethod
    def _failure(plan: Plan, error: BaseException | None, keys: _Keys) -> Failure:
        """(step, original error) from a failed fetch: a StepError names its step, a
        KilledWorker its task; anything else is blamed on the first step."""
        if isinstance(error, StepError):
            if error.worker_traceback and hasattr(error.error, "add_note"):
                error.error.add_note(f"on the Dask worker:\n{error.worker_traceback}")
            return plan.steps[error.index], error.error
        key = getattr(error, "task", None)
        step = keys.steps.get(key)  # type: ignore[arg-type]
        chain = keys.chains.get(key, ())  # type: ignore[arg-type]
        if error is not None and len(chain) > 1:  # which of them was running is unknowable
            ran = " -> ".join(repr(name) for name in chain)
            error = RuntimeError(
                f"{type(error).__name__}: {error} (this Dask task ran the chain {ran}; any of "
                "them may be the cause)"
            ).with_traceback(error.__traceback__)
        return step or plan.steps[0], error or RuntimeError("the Dask task failed")

    @staticmethod
    def _lost(refs: dict[int, Any], future: Any, plan: Plan) -> _LostData:
        lost = [slot for slot, f in refs.items() if f.status != "finished"]
        slot = lost[0] if lost else None
        what = "an input" if slot is None else "its input"
        return _LostData(
            slot,
            RuntimeError(
                f"{what} was lost with a Dask worker that died during the run "
                f"({future.key!r} {future.status})"
            ),
        )

    @staticmethod
    def _first_reader(plan: Plan, slot: int | None) -> Step:
        return next((s for s in plan.steps if slot in s.input_slots), plan.steps[0])

    def _gather(self, futures: list[Any]) -> list[np.ndarray]:
        from distributed.utils import CancelledError

        try:
            arrays = self._client.gather(futures)
        except CancelledError as problem:
            raise _LostData(None, RuntimeError(f"a fetched value was lost: {problem}")) from None
        self.stats["gathered"] += len(futures)
        return arrays

    # -- sources -------------------------------------------------------------------------------
    def _source_futures(
        self, plan: Plan, prepared: _Prepared, values: list[Any], workers: list[str]
    ) -> dict[int, Any]:
        """A future per source slot that a step reads: the cached one when the array is the
        object sent before and its data still exists; the others are scattered now, in one
        call per target worker."""
        read = {slot for step in plan.steps for slot in step.input_slots}
        refs, missing = {}, {}
        for slot, op in plan.sources:
            if slot not in read:
                continue
            cached = self._sources.get(op.id)
            if cached is not None and cached.array is values[slot]:
                if cached.future.status == "finished":
                    refs[slot] = cached.future
                    continue
            pin = prepared.source_pins[slot]
            address = workers[pin] if pin is not None and pin < len(workers) else None
            missing.setdefault(address, []).append((slot, op))
        for address, items in missing.items():
            arrays = [values[slot] for slot, _ in items]
            futures = self._client.scatter(
                arrays, workers=[address] if address else None, hash=False
            )
            self.stats["sources_sent"] += len(items)
            for (slot, op), future in zip(items, futures):
                if op.type != "placeholder":  # fed values are new arrays every run
                    self._sources[op.id] = _Source(values[slot], future)
                refs[slot] = future
        return refs

    # -- plans ---------------------------------------------------------------------------------
    def _prepare(self, plan: Plan) -> _Prepared:
        """The plan's task specs and placement (cached per plan)."""
        entry = self._prepared.get(id(plan))
        if entry is not None and entry[0] is plan:
            self._prepared.move_to_end(id(plan))
            return entry[1]
        config = self._worker_config
        specs = tuple(
            StepSpec(s.index, OpSpec.of(s.op), s.definition, s.shards, config) for s in plan.steps
        )
        pins = tuple(self._pin(step.op) for step in plan.steps)
        tasks = tuple(
            _task(plan, chain, specs, pins[chain[0]])
            for chain in _chains(plan, pins, self.fuse_chains)
        )
        readers: dict[int, set[int | None]] = {}
        for step, pin in zip(plan.steps, pins):
            for slot in step.input_slots:
                readers.setdefault(slot, set()).add(pin)
        source_pins: dict[int, int | None] = {}
        for slot, op in plan.sources:
            pinned = readers.get(slot, set())
            own = self._pin(op)
            source_pins[slot] = (
                own if own is not None else (next(iter(pinned)) if len(pinned) == 1 else None)
            )
        names = {slot: op.name for slot, op in plan.sources}
        prepared = _Prepared(tasks, source_pins, names)
        self._prepared[id(plan)] = (plan, prepared)
        if len(self._prepared) > PREPARED_PLANS:
            self._prepared.popitem(last=False)
        return prepared

    def _pin(self, op: Any) -> int | None:
        """The worker index an op is pinned to: its "worker:N" device, else the placement of
        its innermost listed scope, else None (Dask decides)."""
        index = _worker_index(op.device)
        if index is not None or not self.placement:
            return index
        scopes = [s for s in self.placement if op.scope == s or op.scope.startswith(s + "/")]
        return self.placement[max(scopes, key=len)] if scopes else None

    # -- timing --------------------------------------------------------------------------------
    def _clock_offsets(self, addresses: Sequence[str]) -> dict[str, int]:
        """ns to add to each worker's perf_counter_ns to get this process's, estimated once per
        worker from the fastest of CLOCK_PROBES round trips; 0 when 0 is within that trip."""
        unknown = [a for a in addresses if a not in self._offsets]
        best: dict[str, tuple[int, int]] = {}
        for _ in range(CLOCK_PROBES if unknown else 0):
            sent = clock()
            stamps = self._client.run(_probe_clock, workers=unknown, on_error="ignore")
            back = clock()
            for address, stamp in stamps.items():
                if isinstance(stamp, int) and back - sent < best.get(address, (1 << 62, 0))[0]:
                    best[address] = (back - sent, (sent + back) // 2 - stamp)
        for address, (round_trip, offset) in best.items():
            self._offsets[address] = 0 if abs(offset) <= round_trip // 2 else offset
        return self._offsets

    def _collect(
        self,
        tokens: list[str],
        names: dict[str, str],
        workers: list[str],
        started: int,
        record: Record,
    ) -> None:
        """Take the run's records from every worker and pass them to `record` on this
        process's clock: the last attempt's ops and shards, and transfers since `started`."""
        reports = self._client.run(collect_timings, tokens, list(names), on_error="ignore")
        reports = {a: r for a, r in reports.items() if isinstance(r, dict)}
        order = list(workers) + sorted(set(reports) - set(workers))
        offsets = self._clock_offsets(list(reports))
        for address, report in reports.items():
            prefix, offset = f"worker-{order.index(address)}", offsets.get(address, 0)
            for kind, index, lane, start, end, extra in report["records"][tokens[-1]]:
                lane = lane.replace("/", "-") if lane.startswith("intra-op") else lane
                record((kind, index, f"{prefix}/{lane}", start + offset, end + offset, extra))
            wall_to_perf = report["perf"] + offset - int(report["wall"] * 1e9)
            for start, stop, moved in report["transfers"]:
                begin = wall_to_perf + int(start * 1e9)
                if begin < started:
                    continue  # an earlier run's transfer of a cached source
                moved_names = [names[key] for key in moved]
                name = moved_names[0] + (f" +{len(moved) - 1}" if len(moved) > 1 else "")
                end = max(begin, wall_to_perf + int(stop * 1e9))
                record(("copy", name, f"{prefix}/transfer", begin, end, sum(moved.values())))

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the cached sources; close the Client and the LocalCluster if this executor
        made them (a borrowed Client stays open). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._sources.clear()
        self._prepared.clear()
        if self._owns_client and self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _chains(plan: Plan, pins: tuple[int | None, ...], fuse: bool) -> list[list[int]]:
    """The plan's steps grouped into chains (module docstring, Tasks), each in step order."""
    producer = {step.slot: step.index for step in plan.steps}
    fetched = set(plan.fetch_slots)
    chains: list[list[int]] = []
    chain_of: dict[int, list[int]] = {}
    for step in plan.steps:  # topological order: a producer's chain exists already
        producers = {producer[slot] for slot in step.input_slots if slot in producer}
        if fuse and len(producers) == 1:
            (previous,) = producers
            chain, before = chain_of[previous], plan.steps[previous]
            if (
                chain[-1] == previous
                and len(before.consumers) == 1
                and before.slot not in fetched
                and pins[previous] == pins[step.index]
            ):
                chain.append(step.index)
                chain_of[step.index] = chain
                continue
        chain_of[step.index] = [step.index]
        chains.append(chain_of[step.index])
    return chains


def _task(plan: Plan, chain: list[int], specs: tuple[StepSpec, ...], pin: int | None) -> _Task:
    """A chain as a task: the slots it reads from outside, and how each step is wired."""
    reads: dict[int, int] = {}  # slot -> argument position
    wiring = []
    for position, index in enumerate(chain):
        step = plan.steps[index]
        inside = plan.steps[chain[position - 1]].slot if position else None
        wiring.append(
            tuple(
                -1 if slot == inside else reads.setdefault(slot, len(reads))
                for slot in step.input_slots
            )
        )
    steps = tuple(plan.steps[index] for index in chain)
    spec = ChainSpec(tuple(specs[index] for index in chain), tuple(wiring))
    return _Task(spec, steps, tuple(reads), pin)


def _worker_index(device: str) -> int | None:
    """N for "worker:N", else None."""
    return int(device.split(":")[1]) if device.startswith("worker:") else None
