"""Traces: what ran where and when, as frozen event records, with the first analyses.

Executors record raw tuples (kind, step, lane, start_ns, end_ns, shard) through a callback (a
list's `append`): the only cost of tracing in the hot path is two clock reads and an append per
event. `Trace.from_records` keeps them and turns them into frozen `TraceEvent` dataclasses the
first time someone reads `trace.events`.

Lanes are named "<pool>/<worker>": "inter-op/0" is the thread that called `Session.run`,
"inter-op/1".. are inter-op pool workers, "intra-op/0".. the intra-op helpers. An op's event sits
on the lane of the inter-op worker that ran it; its shard events sit on the lanes of whichever
threads computed them (so shards on the op's own lane nest inside the op's bar).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import intervals as intervals_module

if TYPE_CHECKING:
    from .plan import Plan


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One bar on the timeline: an op, a shard of an op, or (later) a copy. Times in ns."""

    name: str
    op_type: str
    scope: str
    device: str
    kind: str  # "op" | "shard" | "copy"
    lane: str
    start: int
    end: int
    flops: int = 0
    bytes: int = 0
    shard: int | None = None
    inputs: tuple[str, ...] = ()

    @property
    def duration(self) -> int:
        return self.end - self.start

    def in_scope(self, scope: str) -> bool:
        """True if the event belongs to `scope` or to a scope nested in it."""
        return self.scope == scope or self.scope.startswith(scope + "/")


def _events_from_records(plan: Plan, records: list[tuple[Any, ...]]) -> tuple[TraceEvent, ...]:
    events = []
    for kind, step_index, lane, start, end, shard in records:
        if kind == "copy":  # ("copy", value's op name, lane, start, end, bytes)
            name, nbytes = step_index, shard
            device = "gpu:0" if lane.startswith("copy/") else lane.split("/", 1)[0]
            events.append(
                TraceEvent(
                    name,
                    "copy",
                    name.rpartition("/")[0],
                    device,
                    "copy",
                    lane,
                    start,
                    end,
                    0,
                    nbytes,
                )
            )
            continue
        step = plan.steps[step_index]
        op = step.op
        sharded = kind == "shard"
        share = len(step.shards) if sharded else 1
        events.append(
            TraceEvent(
                name=op.name,
                op_type=op.type,
                scope=op.scope,
                device=step.device,
                kind=kind,
                lane=lane,
                start=start,
                end=end,
                flops=step.cost.flops // share,
                bytes=step.cost.bytes // share,
                shard=shard if sharded else None,
                inputs=() if sharded else tuple(t.name for t in op.inputs),
            )
        )
    events.sort(key=lambda e: (e.start, e.kind != "op"))
    return tuple(events)


#: Display order of pools: CPU workers, their helpers, GPU streams, copies, then the rest.
POOL_ORDER = {"inter-op": 0, "intra-op": 1, "stream": 2, "copy": 3}


def lane_sort_key(lane: str) -> tuple[int, str, int, str]:
    pool, _, worker = lane.rpartition("/")
    order = POOL_ORDER.get(pool, 4 if pool.startswith("worker") else 5)
    return (order, pool, int(worker) if worker.isdigit() else 0, worker)


merge_intervals = intervals_module.merge  # the union of [start, end) intervals


def intersection_length(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Total length of the intersection of two sorted disjoint interval lists."""
    return intervals_module.length(intervals_module.intersect(list(a), list(b)))


class Trace:
    """The events of one run, and what the run was (config, graph, notes) in `metadata`.

    A trace made by a run keeps the executor's raw records and turns them into `TraceEvent`s
    the first time `events` is read, so tracing a run the user never looks at costs only the
    records. Treat a Trace as immutable.
    """

    def __init__(self, events: Iterable[TraceEvent] = (), metadata: dict[str, Any] | None = None):
        self._events: tuple[TraceEvent, ...] | None = tuple(events)
        self._records: tuple[Plan, list[tuple[Any, ...]]] | None = None
        self.metadata: dict[str, Any] = dict(metadata or {})

    @classmethod
    def from_records(
        cls, plan: Plan, records: list[tuple[Any, ...]], metadata: dict[str, Any]
    ) -> Trace:
        """A trace over an executor's (kind, step, lane, start, end, shard) records."""
        trace = cls((), metadata)
        trace._events, trace._records = None, (plan, records)
        return trace

    @property
    def events(self) -> tuple[TraceEvent, ...]:
        """All events, ordered by start time (an op before its shards)."""
        if self._events is None:
            assert self._records is not None
            self._events = _events_from_records(*self._records)
            self._records = None
        return self._events

    # -- shape of the run -------------------------------------------------------------------
    @property
    def start(self) -> int:
        return min((e.start for e in self.events), default=0)

    @property
    def end(self) -> int:
        return max((e.end for e in self.events), default=0)

    @property
    def makespan(self) -> float:
        """Seconds from the first event's start to the last event's end."""
        return (self.end - self.start) / 1e9

    @property
    def makespan_ms(self) -> float:
        return (self.end - self.start) / 1e6

    @property
    def lanes(self) -> list[str]:
        """Lane names in display order: inter-op workers, then intra-op helpers, then others."""
        return sorted({e.lane for e in self.events}, key=lane_sort_key)

    def ops(self) -> list[TraceEvent]:
        """Op events only (no shards or copies)."""
        return [e for e in self.events if e.kind == "op"]

    def scopes(self) -> list[str]:
        """Top-level scopes in order of first appearance ("" for ops outside any scope)."""
        seen: dict[str, None] = {}
        for event in self.ops():
            seen.setdefault(event.scope.split("/", 1)[0], None)
        return list(seen)

    # -- analysis -----------------------------------------------------------------------------
    def busy_intervals(self, scope: str) -> list[tuple[int, int]]:
        """When ops of `scope` (or its sub-scopes) were running, as disjoint intervals."""
        return merge_intervals((e.start, e.end) for e in self.ops() if e.in_scope(scope))

    def overlap(self, scope_a: str, scope_b: str) -> float:
        """The fraction of the shorter scope's busy time during which the other was also busy.

        1.0: the shorter one ran entirely alongside the other; 0.0: they never ran at once.
        """
        a, b = self.busy_intervals(scope_a), self.busy_intervals(scope_b)
        if not a or not b:
            raise ValueError(
                f"no op events for scope {scope_a if not a else scope_b!r}; scopes in this "
                f"trace: {self.scopes()}"
            )
        shorter = min(sum(e - s for s, e in a), sum(e - s for s, e in b))
        return intersection_length(a, b) / shorter if shorter else 0.0

    def lane_busy(self) -> dict[str, float]:
        """Busy seconds per lane (union of the lane's event intervals)."""
        busy = {}
        for lane in self.lanes:
            intervals = merge_intervals((e.start, e.end) for e in self.events if e.lane == lane)
            busy[lane] = sum(end - start for start, end in intervals) / 1e9
        return busy

    def work(self) -> float:
        """Compute seconds: shard time for sharded ops, op time for the rest (see analysis)."""
        from .analysis import total_work

        return total_work(self) / 1e9

    def critical_path(self) -> Any:
        """The longest chain of dependent ops: `.ops`, `.names`, `.length` (ns)."""
        from .analysis import critical_path

        return critical_path(self)

    def lower_bound(self, workers: int | None = None) -> float:
        """max(work / P, critical path) in seconds; P = lanes in the trace unless given."""
        from .analysis import lower_bound

        return lower_bound(self, workers) / 1e9

    def utilization(self) -> dict[str, float]:
        """Busy fraction of the makespan per lane."""
        from .analysis import utilization

        return utilization(self)

    def idle_gaps(self, lane: str, minimum_ms: float = 0.0) -> list[tuple[float, float]]:
        """(start_ms, end_ms) from the trace start of each idle stretch of `lane`."""
        from .analysis import idle_gaps

        origin = self.start
        return [
            ((start - origin) / 1e6, (end - origin) / 1e6)
            for start, end in idle_gaps(self, lane, int(minimum_ms * 1e6))
        ]

    def explain(self) -> Any:
        """A plain-language report: did the scopes overlap, if not why, and what would help.

        `print(trace.explain())`; in a notebook the report renders as HTML.
        """
        from .explain import explain

        return explain(self)

    # -- files and pictures -------------------------------------------------------------------
    def to_chrome(self) -> dict[str, Any]:
        """This trace as a Chrome trace-event JSON object (chrome://tracing, Perfetto)."""
        from .chrome import to_chrome

        return to_chrome(self)

    def save(self, path: str | Path) -> Path:
        """Write Chrome trace-event JSON to `path` and return the path."""
        from .chrome import dump

        return dump(self, path)

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """Read a Chrome trace-event JSON file written by `save`."""
        from .chrome import load

        return load(path)

    def plot(self, ax: Any = None, **options: Any) -> Any:
        """A Gantt chart of this trace (a matplotlib Figure); see `parallelgraph.plot.gantt`."""
        from .plot import gantt

        return gantt(self, ax=ax, **options)

    def summary(self) -> str:
        """Makespan, lanes and per-scope busy time in a few lines."""
        lines = [f"makespan {self.makespan_ms:.2f} ms on {len(self.lanes)} lanes"]
        for scope in self.scopes():
            busy = sum(e - s for s, e in self.busy_intervals(scope)) / 1e6
            lines.append(f"  scope {scope or '<root>'!r}: busy {busy:.2f} ms")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Trace {len(self.events)} events, makespan {self.makespan_ms:.3f} ms>"
