"""What a trace says about parallelism: work, span, bounds, utilization, gaps, dependencies.

All functions are pure: they read a Trace's events and return numbers or frozen records.

- **work**: the compute time of the run — for a sharded op the sum of its shards (they may have
  run on several threads), otherwise the op's own working time (`TraceEvent.work_ns`: its duration
  less the waiting or setup nested in it). Only the outermost work events of a lane count: an
  event nested in another (a profiler's `aten::addmm` inside `aten::linear`) is part of its
  parent's time, not more of it; waiting and setup events count nowhere (`parallelgraph.trace`).
- **critical path** (span): the longest chain of dependent ops, following each op event's
  `inputs` and its program-order predecessor (`after`); its length is the sum of the ops' work
  on it. Events are visited in start order, which is a topological order because an op starts
  only after its inputs ended.
- **lower bound** for P workers: max(work / P, critical path). No schedule on P workers can
  finish sooner (Brent / Graham); how close the measured makespan gets says how much a better
  schedule could still win.
- **utilization** of a lane: busy time / makespan; **idle gaps**: where a lane sat idle.
- **concurrency**: how much of the run had two or more ops (or shards) computing at once — what
  tells a run that could use one thread only from one that had more.
- **scope dependencies**: whether some op of one scope (transitively) consumed an op of another,
  and how much of the producer's time the consumer waited for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from ..devices import DeviceKind, device_kind
from .intervals import Intervals, intersect, length, merge, subtract
from .model import WORK, EventKind, TraceEvent

if TYPE_CHECKING:
    from .model import Trace

_P = ParamSpec("_P")
_R = TypeVar("_R")


def collector_paused(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """`function` run with Python's cyclic garbage collector paused (`chrome.files.paused_gc`,
    counted, so nested and concurrent calls are safe), as loading runs: an analysis of a big
    trace makes hundreds of thousands of objects and no cycles, and the collector's full
    passes over them and the trace took a share of the time that grew with the trace
    (benchmarks/RESULTS.md, "Every analysis as the events double")."""

    @functools.wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from ..chrome.files import paused_gc  # when called: the readers import this module

        with paused_gc():
            return function(*args, **kwargs)

    return paused


@dataclass(frozen=True)
class CriticalPath:
    """The longest dependent chain of ops; `length_ns` is the sum of their work."""

    ops: tuple[TraceEvent, ...]
    length_ns: int

    @property
    def length(self) -> int:
        """`length_ns`, under its name before units were spelled out."""
        return self.length_ns

    @property
    def length_s(self) -> float:
        return self.length_ns / 1e9

    @property
    def names(self) -> list[str]:
        return [event.name for event in self.ops]


def op_events_by_name(trace: Trace) -> dict[str, TraceEvent]:
    """Op events, nested ones too, keyed by name (an op that ran twice in one trace keeps its
    first event)."""
    events: dict[str, TraceEvent] = {}
    for event in trace.ops(nested=True):
        events.setdefault(event.name, event)
    return events


def outermost_inputs(trace: Trace, program_order: bool = False) -> dict[str, set[str]]:
    """For each outermost op, what it and the ops nested in it consumed, as outermost ops:
    the dependencies between the events that hold the time (a flow into `aten::addmm` is a
    dependency of the `aten::linear` around it); with `program_order`, also the op before it
    on its lane when the producer ran that lane in program order (`TraceEvent.after`)."""
    parent = {e.name: e.parent for e in trace.ops(nested=True)}
    roots: dict[str, str] = {}  # each name's root, once: deep nesting made this quadratic

    def root(name: str) -> str:
        path, seen = [name], {name}
        while name not in roots and (up := parent.get(name)) in parent and up not in seen:
            name = up
            path.append(name)
            seen.add(name)
        found = roots.get(name, name)
        roots.update(dict.fromkeys(path, found))
        return found

    inputs: dict[str, set[str]] = {e.name: set() for e in trace.ops()}
    for event in trace.ops(nested=True):
        owner = root(event.name)
        if owner in inputs:
            inputs[owner].update(root(n) for n in event.inputs if n in parent)
            if program_order and event.after is not None and event.after in parent:
                inputs[owner].add(root(event.after))
    for owner, names in inputs.items():
        names.discard(owner)
    return inputs


def total_work_ns(trace: Trace) -> int:
    """Compute time in ns: shards summed for sharded ops, op work for the other outermost
    ops, plus copies (nested events are part of their parent's time; waiting and setup are not
    work)."""
    shard_time: dict[str, int] = {}
    for event in trace.events:
        if event.kind == EventKind.SHARD and event.role is WORK:
            shard_time[event.name] = shard_time.get(event.name, 0) + event.work_ns
    return sum(shard_time.get(event.name, event.work_ns) for event in trace.ops()) + sum(
        event.work_ns
        for event in trace.events
        if event.kind == EventKind.COPY and event.parent is None
    )


def runs_named(by_name: Mapping[str, Sequence[TraceEvent]], name: str) -> Sequence[TraceEvent]:
    """The events named like the input `name`: those of that name, else of the op whose output
    "op:1" is (a framework's input names count outputs)."""
    return by_name.get(name) or by_name.get(name.rpartition(":")[0]) or ()


def producer_run(
    candidates: Sequence[TraceEvent], consumer: TraceEvent, until: int | None = None
) -> TraceEvent | None:
    """The run of a producer that fed `consumer`: of the events named like one of its inputs
    (an op that ran more than once, an op and the copies of its output), the last to end by
    `until` (the consumer's start unless given), else the first; never the consumer itself,
    and None when nothing else is named so. The Chrome export's flows, the Gantt's arrows and
    the memory model's readers all ask this."""
    others = [event for event in candidates if event is not consumer]
    limit = consumer.start if until is None else until
    before = [event for event in others if event.end <= limit]
    if before:
        return max(before, key=lambda event: event.end)
    return others[0] if others else None


def critical_path(trace: Trace) -> CriticalPath:
    """The longest chain of outermost ops linked by `inputs` (those of nested ops included)
    and program order (`after`); without dependency data: the longest op."""
    longest: dict[str, tuple[int, str | None]] = {}
    by_name: dict[str, TraceEvent] = {}
    for event in trace.ops():
        by_name.setdefault(event.name, event)
    inputs = outermost_inputs(trace, program_order=True)
    for event in sorted(by_name.values(), key=lambda e: e.start):
        best_length, best_input = 0, None
        for name in sorted(inputs.get(event.name, ())):
            if name in longest and longest[name][0] > best_length:
                best_length, best_input = longest[name][0], name
        longest[event.name] = (best_length + event.work_ns, best_input)
    if not longest:
        return CriticalPath((), 0)
    end = max(longest, key=lambda name: longest[name][0])
    chain: list[TraceEvent] = []
    name: str | None = end
    while name is not None:
        chain.append(by_name[name])
        name = longest[name][1]
    return CriticalPath(tuple(reversed(chain)), longest[end][0])


def worker_lanes(trace: Trace) -> list[str]:
    """Lanes that ran ops (inter-op workers, streams, Dask workers), not shard helpers."""
    ran_ops = {event.lane for event in trace.ops()}
    return [lane for lane in trace.lanes if lane in ran_ops and trace.lane(lane).kind.computes]


def compute_lanes(trace: Trace) -> list[str]:
    """Lanes that computed (ran ops or shards): copy and transfer lanes are not workers."""
    computed = {e.lane for e in trace.events if e.kind != EventKind.COPY and e.role is WORK}
    return [lane for lane in trace.lanes if lane in computed and trace.lane(lane).kind.computes]


def computing_pieces(trace: Trace) -> list[TraceEvent]:
    """What occupied a thread or stream: the shards of sharded ops, the other outermost ops."""
    sharded = {e.name for e in trace.events if e.kind == EventKind.SHARD}
    return [
        e
        for e in trace.events
        if e.role is WORK
        and (
            e.kind == EventKind.SHARD
            or (e.kind == EventKind.OP and e.parent is None and e.name not in sharded)
        )
        and trace.lane(e.lane).kind.computes
    ]


def concurrency(trace: Trace, ops_only: bool = False) -> float:
    """The share of the time something computed during which two or more pieces of work
    (ops or shards, on different lanes) computed at once: 0.0 for a run that did one thing at
    a time, whatever number of threads it had. `ops_only`: whole ops, their shards not counted
    apart — 0.0 for a run that ran one op at a time, however many threads each op used."""
    if ops_only:
        pieces = [e for e in trace.ops() if trace.lane(e.lane).kind.computes]
    else:
        pieces = computing_pieces(trace)
    points = []
    for piece in pieces:
        points.extend(((piece.start, 1), (piece.end, -1)))
    points.sort()
    busy_any = busy_many = 0
    running, previous = 0, None
    for time, delta in points:
        if previous is not None and running:
            busy_any += time - previous
            if running >= 2:
                busy_many += time - previous
        running += delta
        previous = time
    return busy_many / busy_any if busy_any else 0.0


def bound_ns(work_ns: int, workers: int, path_ns: int) -> int:
    """The one lower bound, max(work / P, critical path), in ns: no schedule of `work_ns` on
    `workers` lanes along a chain of `path_ns` finishes sooner (pure: explain() asks it for
    other worker counts).

    >>> bound_ns(10_000, 4, 3_000), bound_ns(10_000, 2, 3_000)
    (3000, 5000)
    """
    return max(work_ns // max(1, workers), path_ns)


def lower_bound_ns(trace: Trace, workers: int | None = None) -> int:
    """max(work / P, critical path) in ns; P defaults to the number of lanes that computed."""
    workers = workers or max(1, len(compute_lanes(trace)))
    return bound_ns(total_work_ns(trace), workers, critical_path(trace).length_ns)


def input_wait(
    trace: Trace,
    events: Iterable[TraceEvent],
    across_lanes: bool = False,
    by_name: Mapping[str, TraceEvent] | None = None,
) -> list[int]:
    """For each op with traced inputs: ns between its last input's end and its own start.
    `across_lanes`: only ops whose last input ended on another lane (a hand-off: what
    `parallelgraph.calibration` measures); `by_name`: `op_events_by_name(trace)`, when the
    caller asks for many sets of events."""
    by_name = op_events_by_name(trace) if by_name is None else by_name
    waits = []
    for event in events:
        producers = [by_name[name] for name in event.inputs if name in by_name]
        if producers:
            last = max(producers, key=lambda producer: producer.end)
            if not across_lanes or last.lane != event.lane:
                waits.append(max(0, event.start - last.end))
    return waits


def gpu_busy(trace: Trace) -> float | None:
    """The part of the makespan during which some kernel ran (the union of the op intervals),
    for a trace whose ops all ran on a GPU; None for any other trace."""
    ops = trace.ops()
    if not ops or not all(device_kind(e.device) is DeviceKind.GPU for e in ops):
        return None
    span = trace.end - trace.start
    return length(trace.work_spans(ops)) / span if span else 0.0


def utilization(trace: Trace) -> dict[str, float]:
    """Busy fraction of the makespan, per lane."""
    span = trace.end - trace.start
    busy = trace.lane_busy_s()
    return {lane: (seconds * 1e9 / span if span else 0.0) for lane, seconds in busy.items()}


def idle_gaps_ns(trace: Trace, lane: str, minimum_ns: int = 0) -> list[tuple[int, int]]:
    """Intervals (ns) inside the run where `lane` was idle, longest first is not implied."""
    busy = trace.work_intervals.get(lane, [])
    gaps, cursor = [], trace.start
    for start, end in busy:
        if start - cursor > minimum_ns:
            gaps.append((cursor, start))
        cursor = max(cursor, end)
    if trace.end - cursor > minimum_ns:
        gaps.append((cursor, trace.end))
    return gaps


def data_inputs(trace: Trace) -> dict[str, set[str]]:
    """Each op's data inputs (nested ops too), its nested ops' inputs included: a flow into
    `aten::addmm` is an input of the `aten::linear` around it as well. Program order is not a
    data input."""
    parent = {e.name: e.parent for e in trace.ops(nested=True)}
    graph: dict[str, set[str]] = {name: set() for name in parent}
    for event in trace.ops(nested=True):
        if not event.inputs:  # nothing to add up its chain (deep nesting made this quadratic)
            continue
        node: str | None = event.name
        seen: set[str] = set()
        while node is not None and node in graph and node not in seen:
            graph[node].update(n for n in event.inputs if n in graph and n != node)
            seen.add(node)
            node = parent.get(node)
    return graph


def ancestors(graph: dict[str, set[str]], names: Iterable[str]) -> set[str]:
    """Every op name that the named ops (transitively) consumed, by `data_inputs`."""
    seen: set[str] = set()
    stack = [name for start in names for name in graph.get(start, ())]
    while stack:
        name = stack.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        stack.extend(graph[name])
    return seen


def input_chain(
    trace: Trace, producer: str, consumer: str, flow: DataFlow | None = None
) -> tuple[str, ...]:
    """The shortest path of data inputs from `producer` to `consumer` (both included), each
    name an input of the next or of an op nested in it (`data_inputs`); () when the consumer
    does not (transitively) consume the producer. `flow`: the trace's `DataFlow`, when the
    caller asks many questions of it."""
    graph = (flow or DataFlow(trace)).inputs
    came_from: dict[str, str | None] = {consumer: None}
    frontier = [consumer]
    while frontier and producer not in came_from:
        following = []
        for name in frontier:
            for source in sorted(graph.get(name, ())):
                if source not in came_from:
                    came_from[source] = name
                    following.append(source)
        frontier = following
    if producer not in came_from:
        return ()
    chain, name = [producer], came_from[producer]
    while name is not None:
        chain.append(name)
        name = came_from[name]
    return tuple(chain)


@dataclass(frozen=True)
class Side:
    """One side of a dependency question, by op name: the ops, every op they (transitively)
    consumed (`ancestors`), and every op that is one of them or nested in one (`inside`)."""

    ops: dict[str, TraceEvent]
    consumed: set[str]
    inside: set[str]


class DataFlow:
    """Who consumed whom in a trace, built once for the many questions asked of it (explain()
    asks one per pair of branches, and each answer took a pass over the whole trace):
    `inputs` (`data_inputs`), `parent` (each op's enclosing op); `readers` (`inputs`
    reversed: for each op, the ops that read it) and `children` made when first asked, and
    the `side` of each tuple of ops kept (a branch is in many pairs). Not thread-safe."""

    def __init__(self, trace: Trace):
        self.inputs = data_inputs(trace)
        self.parent = {e.name: e.parent for e in trace.ops(nested=True)}
        self._sides: dict[int, tuple[tuple[TraceEvent, ...], Side]] = {}

    @cached_property
    def readers(self) -> dict[str, set[str]]:
        """For each op, the ops that read it (`inputs` reversed)."""
        readers: dict[str, set[str]] = {name: set() for name in self.inputs}
        for name, inputs in self.inputs.items():
            for source in inputs:
                readers[source].add(name)
        return readers

    @cached_property
    def children(self) -> dict[str, list[str]]:
        """The ops nested directly in each op (`parent` reversed)."""
        children: dict[str, list[str]] = {}
        for name, up in self.parent.items():
            if up is not None:
                children.setdefault(up, []).append(name)
        return children

    def side(self, ops: Iterable[TraceEvent]) -> Side:
        """The `Side` of `ops`; kept for a tuple (immutable), so that asking about one branch
        against many others costs the walks once."""
        if isinstance(ops, tuple) and (kept := self._sides.get(id(ops))) and kept[0] is ops:
            return kept[1]
        by_name = {e.name: e for e in ops}
        inside: set[str] = set()
        below = list(by_name)
        while below:
            name = below.pop()
            if name not in inside:
                inside.add(name)
                below.extend(self.children.get(name, ()))
        side = Side(by_name, ancestors(self.inputs, by_name), inside)
        if isinstance(ops, tuple):
            self._sides[id(ops)] = (ops, side)
        return side


def enclosing_finder(
    parent: Mapping[str, str | None], wanted: Callable[[str], bool]
) -> Callable[[str], str | None]:
    """A function from an op name to the first of it and the ops around it (its parent, the
    parent's parent...) that is `wanted`; None when none is, or the parents loop. Answers are
    kept, and every name on a walk up gets the walk's answer, so asking for every op costs one
    visit of each: a walk per op was quadratic in the depth of nesting (explain() of a
    30,000-op chain, simulate() of ops nested 4,000 deep)."""
    found: dict[str, str | None] = {}

    def find(name: str) -> str | None:
        path: list[str] = []
        seen: set[str] = set()
        node: str | None = name
        while node is not None and node not in found and not wanted(node) and node not in seen:
            path.append(node)
            seen.add(node)
            node = parent.get(node)
        if node is None or node in seen:  # the top, or a loop of parents: nothing wanted
            answer = None
        else:
            answer = found[node] if node in found else node
        found.update(dict.fromkeys(path, answer))
        return answer

    return find


def dependency_between(trace: Trace, scope_a: str, scope_b: str) -> tuple[str, str] | None:
    """An edge (producer, consumer) showing that one scope depends on the other, or None: the
    heaviest such dependency (`heaviest_dependency`) between the scopes' ops."""
    ops = trace.ops(nested=True)
    found = heaviest_dependency(
        trace, [e for e in ops if e.in_scope(scope_a)], [e for e in ops if e.in_scope(scope_b)]
    )
    return (found.producer, found.consumer) if found else None


@dataclass(frozen=True)
class Dependency:
    """What one branch needed of another: its longest needed op, a consumer of it, how many
    of the other's ops were needed and the share of the other's busy time they hold."""

    producer: str
    consumer: str
    count: int
    share: float


def heaviest_dependency(
    trace: Trace,
    ops_a: Iterable[TraceEvent],
    ops_b: Iterable[TraceEvent],
    flow: DataFlow | None = None,
) -> Dependency | None:
    """Of the two directions (b needs a, a needs b), the one whose needed ops hold the larger
    share of their branch's busy time; None when neither branch needs the other. `flow`: the
    trace's `DataFlow`, when the caller asks about many pairs."""
    flow = flow or DataFlow(trace)
    a, b = flow.side(ops_a), flow.side(ops_b)
    best: Dependency | None = None
    for consumers, producers in ((b, a), (a, b)):
        # the ops they consumed that are producers or nested in one (a set intersection: it
        # costs the smaller side, so one large branch against many small ones is not a pass
        # over the large one per pair), each lifted to that producer
        reached = consumers.consumed & producers.inside
        lift = enclosing_finder(flow.parent, producers.ops.__contains__)
        needed = {lift(name) for name in reached}
        if not needed:
            continue
        by_name = producers.ops
        busy = length(trace.work_spans(by_name.values()))
        held = length(trace.work_spans(by_name[n] for n in needed))
        heaviest = max(sorted(needed), key=lambda n: by_name[n].work_ns)
        # the first consumer, by name, that (transitively) read the heaviest op or one nested
        # in it: the readers of those ops, found in one walk, not one walk per consumer
        fed = ancestors(flow.readers, [name for name in reached if lift(name) == heaviest])
        consumer = min(c for c in consumers.ops if c in fed)
        found = Dependency(heaviest, consumer, len(needed), held / busy if busy else 1.0)
        if best is None or found.share > best.share:
            best = found
    return best


def lane_op_spans(trace: Trace, lanes: Sequence[str]) -> list[Intervals]:
    """For each of `lanes`, when it was running an op (its outermost ops' work spans)."""
    on_lane: dict[str, list[TraceEvent]] = {lane: [] for lane in lanes}
    for event in trace.ops():  # one pass, not one per lane: O(events + lanes)
        if event.lane in on_lane:
            on_lane[event.lane].append(event)
    return [trace.work_spans(on_lane[lane]) for lane in lanes]


def all_busy_fraction(
    trace: Trace,
    lanes: list[str],
    window: list[tuple[int, int]],
    busy: Sequence[Intervals] | None = None,
) -> float:
    """Fraction of the `window` intervals during which every one of `lanes` was running an op;
    `busy`: `lane_op_spans(trace, lanes)`, when the caller asks about many windows."""
    total = sum(end - start for start, end in window)
    if not total or not lanes:
        return 0.0
    covered = window
    for lane_busy in lane_op_spans(trace, lanes) if busy is None else busy:
        covered = intersect(covered, lane_busy)
    return sum(end - start for start, end in covered) / total


def exclusive_time(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Intervals where exactly one of two interval sets is busy."""
    both = intersect(a, b)
    union = merge([*a, *b])
    return subtract(union, both)


#: The names before units were spelled out (`pg.analysis.total_work` and friends, in ns).
total_work = total_work_ns
lower_bound = lower_bound_ns
idle_gaps = idle_gaps_ns
