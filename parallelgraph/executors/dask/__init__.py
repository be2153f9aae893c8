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
This module is the client side: `DaskExecutor` submits each run, waits for it, scatters the
sources and gathers the fetches. Its parts, one job each:

- `worker.py`: everything that runs on a worker process (the picklable stand-ins of steps,
  the `run_chain` task, timing records), picklable by reference;
- `chains.py`: the plan fused into tasks (chains of steps, their wiring, worker pins);
- `clocks.py`: worker clock offsets and a traced run's records on the session's clock;
- `failures.py`: what ends a run early (errors, lost data, stalls) and which op is blamed.

**Tasks.** One run of a plan is one Dask graph, sent to the scheduler in one message. Each chain
of steps (`chains.py`) is a task `run_chain(chain, trace_token, *inputs)`; `FUSE_CHAINS =
False` makes every step its own task (benchmarks/dask_overhead.py compares the two). Workers run
each step as the threads executor does, so outputs are bit-identical (`worker.py`).

**Values.** Only the fetched keys are requested, so intermediate values stay on the workers and
Dask frees each one after its last consumer has run; the fetched values are gathered once at the
end of the run: nothing else comes back to the session.

**Sources.** Variables, constants and fed values are scattered to the workers and cached by
identity. A session hands the executor the same variable array on every run, so each variable is
sent to the cluster once per session (again only after `global_variables_initializer()`, or when
the worker holding it died); fed values are new arrays, so they travel every run. A source whose
consumers are all pinned to one worker is scattered to that worker.

**Placement.** Dask's scheduler places unpinned steps (usually where their inputs are). A step
pinned to worker N (`pg.device("worker:N")` or `placement`: `chains.py`) carries a
restriction to the N-th worker (addresses sorted) with `allow_other_workers=True`: Dask keeps it
there while that worker lives, and runs it on another worker when it is gone instead of waiting
forever.

**Timing.** After a traced run one `client.run` collects the workers' records, put on the
session's clock (`clocks.py`), so `plot`, `overlap` and `explain` work unchanged.

**Failures.** A kernel error names its op; a run whose scattered sources were lost with a worker
is submitted once more with the sources sent again; what else ends a run is in
`failures.py`. The wait polls every `POLL_S`, so it never hangs.

**Cost.** Each dependency between tasks is a round trip through the scheduler, and a chain of
ops fused into one task saves all of its round trips; per task the executor costs what plain
`dask.delayed` costs on the same kernels (benchmarks/dask_overhead.py, whose numbers are in
benchmarks/RESULTS.md, "Dask executor"). Scaling out pays only when ops are much longer than
those round trips, or when one machine is really not enough.
"""

from __future__ import annotations

import itertools
import logging
import queue
import time
import uuid
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...config import Config
from ...errors import GraphError, describe
from ...plan import Plan, Step
from .chains import PreparedPlan, RunKeys, prepare_plan, run_keys
from .clocks import Record, clock_offsets, collect_records
from .connect import CONNECT_TIMEOUT_S, check_scheduler
from .failures import (
    Failure,
    LostData,
    Stalled,
    check_health,
    failure_of,
    first_reader,
    lost_data,
)
from .worker import (
    ChainSpec,
    OpSpec,
    StepError,
    StepSpec,
    TensorSpec,
    clock,
    collect_timings,
    run_chain,
    worker_check,
)

#: Seconds between health checks while a run waits for its results.
POLL_S = 0.5
#: How many clock round trips estimate a worker's clock offset (the fastest one is used).
CLOCK_PROBES = 5
#: Plans whose task specs are kept (a session caches one plan per fetch/feed combination).
PREPARED_PLANS = 64
#: Run each chain of steps (`chains.py`) as one Dask task; read by each new executor.
FUSE_CHAINS = True


@dataclass
class DaskRun:
    """What `DaskExecutor.run` returns: `failure` is None or (step, exception)."""

    failure: Failure | None = None
    attempts: int = 1


@dataclass
class _Source:
    """A source value sent to the cluster: the array it was sent for, and its future."""

    array: Any
    future: Any


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
    #: Fail the start when no Dask scheduler answers at `dask_address` within this many seconds.
    connect_timeout_s: float = CONNECT_TIMEOUT_S

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
        self._prepared: OrderedDict[int, tuple[Plan, PreparedPlan]] = OrderedDict()
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
            check_scheduler(config.dask_address, self.connect_timeout_s)  # never hangs
            return Client(config.dask_address, set_as_default=False, timeout=self.connect_timeout_s)
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
        from ... import __version__

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
        clock_offsets(self._client, self.workers(), self._offsets, CLOCK_PROBES)

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
            except LostData as lost:
                if attempt == 2:
                    result.failure = (first_reader(plan, lost.slot), lost.error)
                    break
                self.stats["retries"] += 1
                workers = self.workers() if pinned else []
            except Stalled as stalled:
                result.failure = (stalled.step, stalled.error)
                break
        if record is not None:
            try:
                collect_records(
                    self._client,
                    tokens,
                    names,
                    workers,
                    started,
                    record,
                    self._offsets,
                    CLOCK_PROBES,
                )
            except Exception:
                if result.failure is None:  # a failed run's trace is never shown: keep its error
                    raise
        return result

    def _attempt(
        self,
        plan: Plan,
        prepared: PreparedPlan,
        values: list[Any],
        workers: list[str],
        tokens: list[str],
        names: dict[str, str],
        traced: bool,
    ) -> Failure | None:
        """Submit the run's graph, wait, gather the fetches into `values`. Raises `LostData`
        when a source was lost with a worker, `Stalled` when the run cannot finish."""
        refs = self._source_futures(plan, prepared, values, workers)
        keys = run_keys(prepared, tokens[-1])
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
        prepared: PreparedPlan,
        refs: dict[int, Any],
        keys: RunKeys,
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
        self, plan: Plan, futures: list[Any], refs: dict[int, Any], keys: RunKeys
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
                no_worker_since = check_health(
                    self._client,
                    futures,
                    keys,
                    started,
                    no_worker_since,
                    self.run_timeout_s,
                    self.no_worker_timeout_s,
                )
                continue
            remaining -= 1
            if future.status == "error":
                return failure_of(plan, future.exception(), keys)
            if future.status != "finished":  # cancelled: something it needs was lost
                raise lost_data(refs, future)
        return None

    def _gather(self, futures: list[Any]) -> list[np.ndarray]:
        from distributed.utils import CancelledError

        try:
            arrays = self._client.gather(futures)
        except CancelledError as problem:
            raise LostData(None, RuntimeError(f"a fetched value was lost: {problem}")) from None
        self.stats["gathered"] += len(futures)
        return arrays

    # -- sources -------------------------------------------------------------------------------
    def _source_futures(
        self, plan: Plan, prepared: PreparedPlan, values: list[Any], workers: list[str]
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
    def _prepare(self, plan: Plan) -> PreparedPlan:
        """The plan's task specs and placement (`chains.prepare_plan`, cached per plan)."""
        entry = self._prepared.get(id(plan))
        if entry is not None and entry[0] is plan:
            self._prepared.move_to_end(id(plan))
            return entry[1]
        prepared = prepare_plan(plan, self._worker_config, self.placement, self.fuse_chains)
        self._prepared[id(plan)] = (plan, prepared)
        if len(self._prepared) > PREPARED_PLANS:
            self._prepared.popitem(last=False)
        return prepared

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


# The worker-side names stay importable from here (benchmarks/dask_overhead.py imports OpSpec).
__all__ = [
    "CLOCK_PROBES",
    "FUSE_CHAINS",
    "POLL_S",
    "PREPARED_PLANS",
    "ChainSpec",
    "DaskExecutor",
    "DaskRun",
    "OpSpec",
    "StepError",
    "StepSpec",
    "TensorSpec",
    "collect_timings",
    "run_chain",
    "worker_check",
]
