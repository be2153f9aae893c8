"""Traces: what ran where and when, as frozen event records, with the first analyses.

Executors record raw tuples through a callback (a list's `append`): the only cost of tracing in
the hot path is two clock reads and an append per event. What the tuples hold is named by
`StepRecord` (kind, step, lane, start_ns, end_ns, shard) and `CopyRecord`.
`Trace.from_records` keeps them and turns them into frozen `TraceEvent` dataclasses the first
time someone reads `trace.events`.

This module holds `Trace`; the records it is made of live in `trace.events` (`TraceEvent`,
`EventKind`, `EventRole`, the executors' records), turning a run's records into events in
`trace.records`, and nesting and work intervals in `trace.nesting`; all are re-exported here.

Lanes are named "<pool>/<worker>": "inter-op/0" is the thread that called `Session.run`,
"inter-op/1".. are inter-op pool workers, "intra-op/0".. the intra-op helpers. An op's event sits
on the lane of the inter-op worker that ran it; its shard events sit on the lanes of whichever
threads computed them (so shards on the op's own lane nest inside the op's bar). What a lane is
(worker, helper, GPU stream, copies) is parsed once, by `trace.lanes`: ask `trace.lane`.

Nesting is part of the model. Profilers of other frameworks record events inside events on one
thread (PyTorch's `aten::linear` holds its `aten::addmm`; a Python tracer records every call
inside its caller). The first time the events are read, each one gets its `depth` on its lane
(0 for an outermost event) and its `parent` (the name of the event it nests in). Everything that
adds time up — `ops()`, work, bounds, busy time, overlap — counts the *outermost* events, so
nested time is counted once; the Gantt draws deeper events as sub-rows of their lane.

Roles are part of the model too. Every event is *work* (`EventRole.WORK`), *waiting* (a caller
holding a span while work it launched runs on other lanes: a `torch.jit.fork` caller, ONNX
Runtime's `model_run`, a thread join, `ray.get`) or *setup* (model loading, session start),
decided once when a trace is read (`parallelgraph.chrome`); the profiler's own events are left
out there. On a lane, at each instant the *innermost* open event decides what the thread did, so
ops that run inside a waiting span on its own thread (ONNX Runtime's sequential executor) are
still work. Work events nest among work events only (`depth`, `parent`), waiting and setup
events among their own kind; the Trace computes once, per lane, the intervals spent in work
(`work_intervals`), and everything that adds time up counts only those: the makespan, busy
time, work, bounds, overlap and the replay. A work event's `idle_ns` is the part of it that its
lane spent in waiting or setup events nested inside it, so `event.work_ns` is its working time.

`after` is a program-order dependency: on a lane of a producer that runs ops in program order
(eager PyTorch's calling thread, a Python thread), each outermost op comes after the one before
it even when the file records no data flow between them. The critical path and the replay
follow it; it is never reported as a data dependency between branches.

`source` says which tool wrote the events ("parallelgraph", or for an imported file
"tensorflow" (TF1 timelines), "tf_profiler" (TensorFlow 2's profiler), "pytorch", "jax",
"onnxruntime", "ray", "py-spy", "python" (viztracer and other Python tracers), "trace-event");
`parallelgraph.chrome.producers` has the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import intervals as intervals_module
from .events import (
    COPY_DEVICE,
    COPY_OP_TYPE,
    WORK,
    CopyRecord,
    EventKind,
    EventRole,
    StepRecord,
    TraceEvent,
)
from .lanes import Lane, lane_of
from .nesting import (
    Intervals,
    Roled,
    Spanned,
    covered,
    intersection_length,
    merge_intervals,
    nest,
    nesting,
    role_nesting,
    with_idle,
    work_layout,
)
from .run_info import Metadata, RunInfo

if TYPE_CHECKING:
    from ..plan import Plan

#: What `from parallelgraph.trace.model import ...` has always offered (events, records,
#: nesting), beside `Trace`.
__all__ = [
    "COPY_DEVICE",
    "COPY_OP_TYPE",
    "WORK",
    "CopyRecord",
    "EventKind",
    "EventRole",
    "Intervals",
    "Roled",
    "Spanned",
    "StepRecord",
    "Trace",
    "TraceEvent",
    "covered",
    "intersection_length",
    "merge_intervals",
    "nest",
    "nesting",
    "role_nesting",
    "work_layout",
]


class Trace:
    """The events of one run, and what the run was (config, graph, notes) in `info`.

    A trace made by a run keeps the executor's raw records and turns them into `TraceEvent`s
    the first time `events` is read, so tracing a run the user never looks at costs only the
    records. Treat a Trace as immutable.
    """

    def __init__(
        self,
        events: Iterable[TraceEvent] = (),
        metadata: Mapping[str, Any] | RunInfo | None = None,
        *,
        nested: bool = False,
    ):
        """`metadata`: what the run was, a `RunInfo` or its JSON object (a dict, checked as a
        file's is). `nested=True` promises that the events' `depth` and `parent` are already what
        `nest` would make them (a trace reader that nested them itself); else they are set the
        first time `events` is read."""
        self._given: tuple[TraceEvent, ...] = tuple(events)
        self._events: tuple[TraceEvent, ...] | None = self._given if nested else None
        self._lanes: tuple[str, ...] | None = None
        self._work: dict[str, Intervals] | None = None
        self._bounds: tuple[int, int] | None = None  # (start, end), once: O(lanes) each
        self._records: tuple[Plan, list[tuple[Any, ...]]] | None = None
        self.metadata = metadata  # type: ignore[assignment]  # the setter makes the info

    @property
    def info(self) -> RunInfo:
        """What the run was (config, graph, cores, notes, source...), typed: `RunInfo`."""
        return self._metadata.info

    @property
    def metadata(self) -> Metadata:
        """`info` as its JSON object (what `otherData.metadata` holds in a saved file): a dict
        kept in sync with `info`, so a top-level key set here is checked and changes `info`
        (see `trace.run_info.Metadata`)."""
        return self._metadata

    @metadata.setter
    def metadata(self, value: Mapping[str, Any] | RunInfo | None) -> None:
        self._metadata = Metadata.of(value, "Trace(metadata=...)")

    @classmethod
    def from_records(
        cls, plan: Plan, records: list[tuple[Any, ...]], info: RunInfo | Mapping[str, Any]
    ) -> Trace:
        """A trace over an executor's (kind, step, lane, start, end, shard) records; its info
        gains `fetches`, the names of the ops whose values the run returns (what
        `parallelgraph.trace.memory` keeps live until the run ends)."""
        if not isinstance(info, RunInfo):
            info = RunInfo.from_json(dict(info), "Trace.from_records", file=False)
        if info.fetches is None:
            from .records import fetched_ops

            info = replace(info, fetches=tuple(fetched_ops(plan)))
        trace = cls((), info)
        trace._records = (plan, records)
        return trace

    @property
    def events(self) -> tuple[TraceEvent, ...]:
        """All events with their nesting, ordered by start time (an op before its shards);
        waiting and setup events too (see `role`), each work event with its `idle_ns`."""
        if self._events is None:
            if self._records is not None:
                from .records import events_from_records

                self._given, self._records = events_from_records(*self._records), None
            self._events, self._given = nest(self._given), ()
        if self._work is None:
            self._work, idle = work_layout(self._events)
            if any(idle[p] != event.idle_ns for p, event in enumerate(self._events)):
                self._events = tuple(
                    with_idle(event, idle[p]) for p, event in enumerate(self._events)
                )
        return self._events

    @property
    def work_intervals(self) -> dict[str, Intervals]:
        """Per lane, when its thread (or stream) did work: sorted disjoint ns intervals, the
        time in waiting and setup left out (see the module docstring)."""
        self.events  # noqa: B018 -- computes the layout once
        assert self._work is not None
        return self._work

    def work_spans(self, events: Iterable[TraceEvent]) -> Intervals:
        """When `events` were working: the union of their spans, less the time their lanes
        spent waiting or in setup (the busy time of a branch)."""
        lanes = self.work_intervals
        pieces: list[tuple[int, int]] = []
        for event in events:
            if event.role is not WORK:
                continue
            if not event.idle_ns:
                pieces.append((event.start, event.end))
                continue
            pieces.extend(
                intervals_module.intersect(lanes.get(event.lane, []), [(event.start, event.end)])
            )
        return merge_intervals(pieces)

    def left_out(self) -> dict[EventRole, list[TraceEvent]]:
        """The outermost waiting and setup events, by role: what the analysis did not count."""
        out: dict[EventRole, list[TraceEvent]] = {}
        for event in self.events:
            if event.role is not WORK and event.parent is None:
                out.setdefault(event.role, []).append(event)
        return out

    @property
    def source(self) -> str:
        """The tool that wrote the events: "parallelgraph", or the producer of an imported file
        ("tensorflow", "pytorch", "onnxruntime", "trace-event"...: see the module docstring)."""
        source = self.info.source
        return "parallelgraph" if source is None else source

    def lane(self, name: str) -> Lane:
        """What the lane `name` is (kind, pool, index): parsed once, see `trace.lanes`."""
        return lane_of(name, self.info.lane_kinds)

    # -- shape of the run -------------------------------------------------------------------
    @property
    def start(self) -> int:
        """ns: when the first work began (of any event, in a trace without work)."""
        return self._start_end()[0]

    @property
    def end(self) -> int:
        """ns: when the last work ended (of any event, in a trace without work)."""
        return self._start_end()[1]

    def _start_end(self) -> tuple[int, int]:
        if self._bounds is None:  # the events never change, so neither do these
            spans = [spans for spans in self.work_intervals.values() if spans]
            events = self.events
            self._bounds = (
                min((s[0][0] for s in spans), default=min((e.start for e in events), default=0)),
                max((s[-1][1] for s in spans), default=max((e.end for e in events), default=0)),
            )
        return self._bounds

    @property
    def makespan_s(self) -> float:
        """Seconds from the first work's start to the last work's end (waiting and setup
        around the work are not part of the run's time)."""
        return (self.end - self.start) / 1e9

    @property
    def makespan(self) -> float:
        """`makespan_s` (seconds), under the name the README and older code use."""
        return self.makespan_s

    @property
    def makespan_ms(self) -> float:
        """`makespan_s` in milliseconds."""
        return (self.end - self.start) / 1e6

    @property
    def lanes(self) -> list[str]:
        """Lane names in display order: workers, intra-op helpers, GPU streams, copies (the
        lanes that did work; `all_lanes` adds those that only waited or set up)."""
        if self._lanes is None:  # sorted once: the analyses ask for it many times
            names = {e.lane for e in self.events if e.role is WORK}
            self._lanes = tuple(sorted(names, key=lambda name: self.lane(name).sort_key))
        return list(self._lanes)

    @property
    def all_lanes(self) -> list[str]:
        """Every lane with an event, work or not, in display order."""
        names = {e.lane for e in self.events}
        return sorted(names, key=lambda name: self.lane(name).sort_key)

    def ops(self, nested: bool = False) -> list[TraceEvent]:
        """Work op events (no shards, copies, waiting or setup): the outermost ones on their
        lanes, which hold all the time of those nested in them; `nested=True` adds the nested
        ones."""
        return [
            e
            for e in self.events
            if e.kind == EventKind.OP and e.role is WORK and (nested or e.parent is None)
        ]

    def scopes(self) -> list[str]:
        """Top-level scopes in order of first appearance ("" for ops outside any scope)."""
        seen: dict[str, None] = {}
        for event in self.ops(nested=True):
            seen.setdefault(event.scope.split("/", 1)[0], None)
        return list(seen)

    # -- analysis -----------------------------------------------------------------------------
    def busy_intervals(self, branch: str) -> list[tuple[int, int]]:
        """When `branch` was running, as disjoint intervals: a scope (with its sub-scopes), a
        lane or an op-name pattern (see `parallelgraph.trace.branches`)."""
        from .branches import select

        return select(self, branch).busy

    def overlap(self, branch_a: str, branch_b: str) -> float:
        """The fraction of the shorter branch's busy time during which the other was also busy.

        A branch is a scope ("net1"), a lane ("lane:cpu/PTThreadPool-1") or an op-name pattern
        ("op:aten::*"); see `parallelgraph.trace.branches`. 1.0: the shorter one ran entirely
        alongside the other; 0.0: they never ran at once.
        """
        from .branches import overlap

        return overlap(self, branch_a, branch_b)

    def lane_busy_s(self) -> dict[str, float]:
        """Busy seconds per lane: its time in work (nested time counts once; waiting and setup
        do not count)."""
        work = self.work_intervals
        return {lane: intervals_module.length(work.get(lane, [])) / 1e9 for lane in self.lanes}

    def work_s(self) -> float:
        """Compute seconds: shard time for sharded ops, op time for the rest (see analysis)."""
        from .analysis import total_work_ns

        return total_work_ns(self) / 1e9

    def critical_path(self) -> Any:
        """The longest chain of dependent ops: `.ops`, `.names`, `.length_ns`."""
        from .analysis import critical_path

        return critical_path(self)

    def lower_bound_s(self, workers: int | None = None) -> float:
        """max(work / P, critical path) in seconds; P = lanes in the trace unless given."""
        from .analysis import lower_bound_ns

        return lower_bound_ns(self, workers) / 1e9

    def utilization(self) -> dict[str, float]:
        """Busy fraction of the makespan per lane."""
        from .analysis import utilization

        return utilization(self)

    def idle_gaps_ms(self, lane: str, minimum_ms: float = 0.0) -> list[tuple[float, float]]:
        """(start_ms, end_ms) from the trace start of each idle stretch of `lane`."""
        from .analysis import idle_gaps_ns

        if lane not in self.all_lanes and lane not in self.work_intervals:
            raise ValueError(f"no lane {lane!r} in this trace; its lanes: {self.all_lanes}")
        origin = self.start
        return [
            ((start - origin) / 1e6, (end - origin) / 1e6)
            for start, end in idle_gaps_ns(self, lane, int(minimum_ms * 1e6))
        ]

    # The names before units were spelled out (README, notebooks and users call them): each
    # is its suffixed twin, so one rule holds -- a public time says its unit.
    def lane_busy(self) -> dict[str, float]:
        """`lane_busy_s()`: busy seconds per lane."""
        return self.lane_busy_s()

    def work(self) -> float:
        """`work_s()`: compute seconds."""
        return self.work_s()

    def lower_bound(self, workers: int | None = None) -> float:
        """`lower_bound_s()`: the lower bound in seconds."""
        return self.lower_bound_s(workers)

    def idle_gaps(self, lane: str, minimum_ms: float = 0.0) -> list[tuple[float, float]]:
        """`idle_gaps_ms()`: idle stretches of `lane` in ms from the trace start."""
        return self.idle_gaps_ms(lane, minimum_ms)

    def explain(self, *branches: str) -> Any:
        """A plain-language report: did the branches overlap, if not why, and what would help.

        Branches default to the top-level scopes (or, without scopes, the threads that ran
        ops); name others as scopes, "lane:NAME" or "op:PATTERN". `print(trace.explain())`;
        in a notebook the report renders as HTML.
        """
        from ..explain import explain

        return explain(self, *branches)

    def top_ops(self, by: str = "total", limit: int | None = 20, group: str = "name") -> Any:
        """The op names that took the time: count, total, self time and share of the work per
        name, largest first (`by`: "total", "self", "count", "mean", "share", "name"); work
        events only. A table that prints and renders in notebooks; see `trace.top_ops`.
        """
        from .top_ops import top_ops

        return top_ops(self, by=by, limit=limit, group=group)

    def memory(self) -> Any:
        """Each op's output bytes and the bytes live over time, a model computed from the
        events' shapes and dependencies (`parallelgraph.trace.memory` says what it counts)."""
        from .memory import memory_profile

        return memory_profile(self)

    # -- files and pictures -------------------------------------------------------------------
    def to_chrome(self, memory: bool = False) -> dict[str, Any]:
        """This trace as a Chrome trace-event JSON object (chrome://tracing, Perfetto);
        `memory=True` adds the live bytes of `memory()` as counter events."""
        from ..chrome import to_chrome

        return to_chrome(self, memory=memory)

    def save(self, path: str | Path, memory: bool = False) -> Path:
        """Write Chrome trace-event JSON to `path` and return the path; `memory=True` adds a
        memory track (counter events of `memory()`'s live bytes) for Perfetto."""
        from ..chrome import dump

        return dump(self, path, memory=memory)

    @classmethod
    def load(cls, path: str | Path, max_bytes: int | None = None) -> Trace:
        """Read a trace-event JSON file (`.json` or gzip): ours, or one written by TensorFlow,
        PyTorch, JAX, ONNX Runtime, Ray, py-spy, viztracer or another tool (see
        `parallelgraph.chrome`); `max_bytes`: a larger budget for the decompressed text."""
        from ..chrome import load

        return load(path, max_bytes=max_bytes)

    def plot(self, ax: Any = None, **options: Any) -> Any:
        """A Gantt chart of this trace (a matplotlib Figure); see `parallelgraph.plot.gantt`."""
        from ..plot import gantt

        return gantt(self, ax=ax, **options)

    def summary(self) -> str:
        """Makespan, lanes and per-scope busy time in a few lines."""
        lines = [f"makespan {self.makespan_ms:.2f} ms on {len(self.lanes)} lanes"]
        for scope in self.scopes():  # named as a scope: "[" or "*" in a name is no pattern
            busy = sum(e - s for s, e in self.busy_intervals(f"scope:{scope}")) / 1e6
            lines.append(f"  scope {scope or '<root>'!r}: busy {busy:.2f} ms")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Trace {len(self.events)} events, makespan {self.makespan_ms:.3f} ms>"
