"""Session: runs a graph with a Config, keeps the variables, returns values and traces.

A session finalizes its graph, builds its executor (and with it the thread pools) once, caches
one Plan per (fetches, fed tensors), and checks fetches and feeds before any kernel runs. Runs
are serialized: `run` may be called from several threads, and the calls take turns.

The plan cache is bounded (`Session.plan_cache_size`, least recently used out): a plan holds
per-step tuples for every op it runs, so a program fetching each of thousands of ops once would
otherwise keep thousands of plans (gigabytes) for the session's lifetime. Values a run returns
are the caller's own arrays: fetching one tensor twice gives two arrays, and sources (constants,
variables, feeds) and views (a reshape's value is a view of its input) are returned as
copies.

>>> with pg.Session(g, pg.Config(inter_op_threads=2)) as sess:   # doctest: +SKIP
...     value, trace = sess.run(out, trace=True)
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from .config import Config, cpu_count
from .devices import Device
from .errors import GraphError, OpError, describe
from .executors import make_executor
from .executors.registry import executor_spec
from .graph import Graph, Op, Tensor, get_default_graph
from .kernels.jit_clock import CLOCK as JIT_CLOCK
from .kernels.jit_clock import start_numba
from .ops.registry import opdef
from .plan import Plan, build_plan
from .plan_notes import soft_placement_warning
from .trace.model import Trace
from .trace.run_info import JitInfo, RunConfig, RunInfo


class VariablesInitializer:
    """Fetch this (from `global_variables_initializer()`) to reset every variable."""

    def __repr__(self) -> str:
        return "<global_variables_initializer>"


def global_variables_initializer() -> VariablesInitializer:
    """TensorFlow 1.x spelling: `sess.run(pg.global_variables_initializer())` resets variables
    to their initial values. (A new session initializes them anyway.)"""
    return VariablesInitializer()


#: Graphs whose soft placement was already announced (weakly held: a graph may go away).
_WARNED_GRAPHS: weakref.WeakSet[Graph] = weakref.WeakSet()
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _callers_level() -> int:
    """The `stacklevel` that points a warning at the first frame outside parallelgraph: the
    user's line in a script or a notebook cell, not our internals or IPython's."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class Session:
    """Runs `graph` (default: the default graph) under `config` (default: `Config()`).

    Thread safety: `run` and `plan_for` may be called from any thread; concurrent runs are
    serialized. A run re-entered from its own thread (a signal handler or a callback that
    calls `run` during a run) raises RuntimeError instead of deadlocking. Close it (or use
    `with`) to join its threads.
    """

    #: How many plans (one per distinct fetches + fed tensors) a session keeps, least recently
    #: used out; a plan dropped is rebuilt (about a millisecond per thousand ops) if needed again.
    plan_cache_size: int = 64

    def __init__(self, graph: Graph | None = None, config: Config | None = None):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"Session(graph=...) takes a pg.Graph, not {type(graph).__name__}")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"Session(config=...) takes a pg.Config, not {type(config).__name__}")
        self.graph = graph if graph is not None else get_default_graph()
        self.config = (config or Config()).resolved()
        self.graph.finalize()
        self._plans: OrderedDict[tuple[Any, ...], Plan] = OrderedDict()
        self._variables: dict[int, np.ndarray] = {}
        # Re-entrant, so that a run re-entered from its own thread (a signal handler, a
        # callback) finds `_running` set and raises instead of deadlocking on the lock.
        self._run_lock = threading.RLock()
        self._running = False
        # The plan cache has its own lock: `plan_for` reads and fills it outside any run.
        self._plans_lock = threading.RLock()
        self._closed = False
        self._warned_soft_placement = False
        self.runs = 0
        #: Seconds this session's creation spent starting Numba (once per process; 0.0 when
        #: an earlier session did): see `parallelgraph.kernels.jit_clock`.
        self.numba_start_s = start_numba()
        self._executor = make_executor(self.config)
        try:
            self._initialize_variables()
        except BaseException:
            self.close()  # join the threads just started
            raise

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Join every thread of this session; idempotent. Later runs raise RuntimeError."""
        with self._run_lock:
            if self._running:
                raise RuntimeError(
                    "Session.close() was called from inside this session's own run (a signal "
                    "handler or a callback); close it after the run returns"
                )
            if not self._closed:
                self._closed = True
                self._executor.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        c = self.config
        return (
            f"<Session {self.graph.name!r} executor={c.executor} inter={c.inter_op_threads} "
            f"intra={c.intra_op_threads}{' closed' if self._closed else ''}>"
        )

    def _initialize_variables(self) -> None:
        for op in self.graph.ops:
            if op.type == "variable":
                self._variables[op.id] = opdef("variable").initial_value(op)

    # -- running --------------------------------------------------------------------------------
    def run(
        self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None, trace: bool = False
    ) -> Any:
        """Compute `fetches` (a tensor, or a list/tuple/dict of them, nested as you like).

        Returns values in the same structure, or `(values, trace)` when `trace=True`. Raises
        GraphError (before anything runs) for bad fetches or feeds, OpError if a kernel fails.
        """
        if type(fetches) is Tensor:  # one tensor, the common case: no structure to rebuild
            rebuild = None
            fetch_ops: list[Op] = [self._check_fetch(fetches)]
            leaf_ops: list[Op | None] = [*fetch_ops]
        else:
            flat: list[Any] = []
            rebuild = _flatten(fetches, flat)
            # One op (or None, for an initializer) per leaf: a leaf may be a Tensor, "name" or
            # "name:0".
            leaf_ops = [
                None if isinstance(f, VariablesInitializer) else self._check_fetch(f) for f in flat
            ]
            fetch_ops = [op for op in leaf_ops if op is not None]
        feeds = self._check_feeds(feed_dict) if feed_dict else {}
        with self._run_lock:
            if self._running:  # only this thread can be inside while we hold the lock
                raise RuntimeError(
                    "Session.run was called from inside a run of the same session (a signal "
                    "handler or a callback re-entered it); runs cannot nest: run it after the "
                    "current run returns, or in another session"
                )
            if self._closed:
                raise RuntimeError("this Session is closed; create a new one")
            self._running = True
            try:
                if len(fetch_ops) < len(leaf_ops):
                    self._initialize_variables()
                plan = self._plan(fetch_ops, feeds)
                results, run_trace = self._execute(plan, feeds, trace)
                self.runs += 1
            finally:
                self._running = False
        if rebuild is None:
            output = results[0]
        else:
            output = rebuild(iter(_distinct_values(leaf_ops, results)))
        return (output, run_trace) if trace else output

    def plan_for(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> Plan:
        """The Plan a run of these fetches would use (for inspection: shards, placement)."""
        flat: list[Any] = []
        _flatten(fetches, flat)
        fetch_ops = [self._check_fetch(t) for t in flat]
        return self._plan(fetch_ops, self._check_feeds(feed_dict or {}))

    def _plan(self, fetch_ops: list[Op], feeds: dict[int, np.ndarray]) -> Plan:
        """The cached plan for these fetches and feeds (built on a miss; LRU, bounded). Safe
        from any thread: the cache is read and changed under its own lock."""
        with self._plans_lock:
            return self._cached_plan(fetch_ops, feeds)

    def _cached_plan(self, fetch_ops: list[Op], feeds: dict[int, np.ndarray]) -> Plan:
        key = (tuple([op.id for op in fetch_ops]), frozenset(feeds) if feeds else _NO_FEEDS)
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
        else:
            fed = [self.graph.ops[i] for i in feeds]
            plan = build_plan(self.graph, fetch_ops, fed, self.config, self._gpu_usable())
            warning = soft_placement_warning(plan.notes)
            if warning and not self._warned_soft_placement and self.graph not in _WARNED_GRAPHS:
                self._warned_soft_placement = True
                _WARNED_GRAPHS.add(self.graph)  # once per graph: two sessions, one warning
                warnings.warn(warning, RuntimeWarning, stacklevel=_callers_level())
            for _, op in plan.sources:
                if op.type == "placeholder" and op.id not in feeds:
                    raise GraphError(
                        f"placeholder {describe(op)} with shape {list(op.shape)} needs a value: "
                        "pass it in feed_dict"
                    )
            self._plans[key] = plan
            while len(self._plans) > self.plan_cache_size:
                self._plans.popitem(last=False)
        return plan

    def _gpu_usable(self) -> bool:
        """Whether GPU-placed ops run on gpu:0: never for an executor that runs no GPU steps
        (the sequential CPU reference, dask); otherwise when numba.cuda works here. Only graphs
        that place ops on a GPU ever import numba.cuda."""
        if not executor_spec(self.config.executor).runs_gpu_steps:
            return False
        if not any(Device(op.device).is_gpu for op in self.graph.ops):
            return False
        from .executors.cuda import gpu_available

        return gpu_available()

    def _execute(
        self, plan: Plan, feeds: dict[int, np.ndarray], trace: bool
    ) -> tuple[list[np.ndarray], Trace | None]:
        values: list[Any] = [None] * plan.num_slots
        for slot, op in plan.sources:
            if op.id in feeds:
                values[slot] = feeds[op.id]
            elif op.type == "variable":
                values[slot] = self._variables[op.id]
            else:
                values[slot] = op.attrs["value"]
        records: list[tuple[Any, ...]] | None = [] if trace else None
        record = records.append if records is not None else None
        wall_start = time.perf_counter_ns()
        run = self._executor.run(plan, values, record)
        wall_end = time.perf_counter_ns()
        if run.failure is not None:
            step, error = run.failure
            if not isinstance(error, Exception) or step is None:
                raise error  # KeyboardInterrupt, SystemExit: not the op's fault
            raise OpError(
                f"op {describe(step.op)} failed: {type(error).__name__}: {error}", step.op
            ) from error
        source_slots = plan.source_slots
        results = [
            values[slot].copy() if slot in source_slots or _a_view(values[slot]) else values[slot]
            for slot in plan.fetch_slots
        ]
        run_trace = None
        if records is not None:
            info = RunInfo(
                config=RunConfig(self.config.as_dict()),
                graph=self.graph.name,
                executor=self._executor.name,
                cores=cpu_count(),
                wall_ns=wall_end - wall_start,
                run=self.runs,
                notes=tuple(plan.notes),  # PlanNotes: str in JSON, PlanNote.parse types it back
                # Numba's compiler within the run: kernels loaded from its cache or compiled
                jit=JitInfo(JIT_CLOCK.during(wall_start, wall_end).as_dict()),
            )
            run_trace = Trace.from_records(plan, records, info)
        return results, run_trace

    # -- checks ---------------------------------------------------------------------------------
    def _check_fetch(self, fetch: Any) -> Op:
        """The op of a fetch or feed key: a Tensor of this graph, or its name ("net1/MatMul",
        or TensorFlow's "net1/MatMul:0" for the op's only output)."""
        if isinstance(fetch, str):
            name, colon, index = fetch.partition(":")
            op = self.graph.op(name)
            if colon and index != "0":
                raise GraphError(
                    f"cannot fetch {fetch!r}: op {describe(op)} has one output, "
                    f"{name + ':0'!r} (or just {name!r})"
                )
            return op
        if not isinstance(fetch, Tensor):
            raise GraphError(
                f"cannot fetch {fetch!r} ({type(fetch).__name__}): fetches are Tensors (or op "
                "names), in a list, tuple or dict"
            )
        if fetch.graph is not self.graph:
            same_name = fetch.graph.name == self.graph.name
            raise GraphError(
                f"fetch {fetch.name!r} belongs to graph {fetch.graph.name!r}, but this session "
                f"runs graph {self.graph.name!r}"
                + (
                    " (another graph of the same name: a graph built twice is two graphs; "
                    "fetch a tensor of the session's own graph)"
                    if same_name
                    else ""
                )
            )
        return fetch.op

    def _check_feeds(self, feed_dict: Mapping[Any, Any]) -> dict[int, np.ndarray]:
        if not isinstance(feed_dict, Mapping):
            raise GraphError(f"feed_dict must be a dict, not {type(feed_dict).__name__}")
        feeds: dict[int, np.ndarray] = {}
        for key, value in feed_dict.items():
            op = self._check_fetch(key)
            feeds[op.id] = _check_feed_value(op, value)
        return feeds


_NO_FEEDS: frozenset[int] = frozenset()


def _check_feed_value(op: Op, value: Any) -> np.ndarray:
    """The fed value as a C-contiguous writeable array of the op's dtype (the caller's own
    where it is one already), or GraphError."""
    try:
        array = np.asarray(value)
    except Exception as problem:  # noqa: BLE001 - anything numpy cannot read
        raise GraphError(
            f"feed for {describe(op)}: cannot read it as an array ({problem})"
        ) from None
    castable = array.dtype.kind in "fiub" and np.can_cast(array.dtype, op.dtype, "same_kind")
    if not castable or (array.dtype.kind == "b") != (op.dtype.kind == "b"):
        raise GraphError(
            f"feed for {describe(op)}: dtype {array.dtype} cannot become {op.dtype.name}"
        )
    if op.dtype.kind == "i" and array.size and array.dtype.kind in "iu":
        limits = np.iinfo(op.dtype)
        if array.min() < limits.min or array.max() > limits.max:
            raise GraphError(
                f"feed for {describe(op)}: values {array.min()}..{array.max()} do not fit "
                f"{op.dtype.name}"
            )
    if array.shape != op.shape:
        raise GraphError(
            f"feed for {describe(op)}: shape {list(array.shape)} does not match the "
            f"tensor's shape {list(op.shape)}"
        )
    # Kernels never write their inputs and nothing keeps a fed value past the run (a fetched
    # one is copied), so the caller's array is used as it is where it already is C-contiguous,
    # writeable and of the op's dtype: copying an image batch on every run cost ~1 ms.
    fed = np.asarray(array, dtype=op.dtype, order="C")
    return fed if fed.flags.writeable and fed.flags.aligned else np.array(fed, copy=True)


def _a_view(value: Any) -> bool:
    """Whether a value is a view of memory it does not own: a reshape-like op's output (of a
    constant, a variable, another fetched value), which the caller must get as a copy."""
    return isinstance(value, np.ndarray) and value.base is not None


def _distinct_values(leaf_ops: list[Op | None], results: list[np.ndarray]) -> list[Any]:
    """The value of each leaf, in order (None for an initializer): the first leaf of an op gets
    its result, any later leaf of the same op a copy, so no two leaves share an array."""
    by_op = dict(zip((op.id for op in leaf_ops if op is not None), results))
    given: set[int] = set()
    values: list[Any] = []
    for op in leaf_ops:
        if op is None:
            values.append(None)
        elif op.id in given:
            values.append(by_op[op.id].copy())
        else:
            given.add(op.id)
            values.append(by_op[op.id])
    return values


def _flatten(fetches: Any, flat: list[Any]) -> Any:
    """Append the leaves of a fetch structure to `flat`; return a function rebuilding it."""
    if isinstance(fetches, (list, tuple)):
        rebuilders = [_flatten(item, flat) for item in fetches]
        kind = type(fetches)

        def rebuild_sequence(values: Any) -> Any:
            items = [rebuild(values) for rebuild in rebuilders]
            return kind(*items) if hasattr(kind, "_fields") else kind(items)

        return rebuild_sequence
    if isinstance(fetches, Mapping):
        keys = list(fetches)
        rebuilders = [_flatten(fetches[k], flat) for k in keys]
        return lambda values: {k: rebuild(values) for k, rebuild in zip(keys, rebuilders)}
    flat.append(fetches)
    return lambda values: next(values)
