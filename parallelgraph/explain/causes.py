"""Why two branches did not overlap: one check per cause, each returning the cause, its sentence
and the typed record of the numbers behind it (`explain.evidence`); the order of the checks
and the thresholds are the package docstring's (`parallelgraph.explain`)."""

from __future__ import annotations

import enum
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..costs import inexpensive_ns
from ..devices import DeviceKind, device_kind
from ..executors.registry import find_executor
from ..plan_notes import NoteKind, plan_notes
from ..trace import analysis
from ..trace.branches import Branch, overlap_of
from ..trace.intervals import Intervals
from ..trace.lanes import LaneKind
from ..trace.model import EventKind
from .evidence import (
    EVERY_LANE_BUSY,
    AllBusyEvidence,
    DependencyEvidence,
    LatencyEvidence,
    OneAtATimeEvidence,
    OneStreamEvidence,
    PlacementEvidence,
    ShortOpsEvidence,
    Undetermined,
)

if TYPE_CHECKING:
    from ..chrome.producers.base import SettingWords
    from ..trace.model import Trace, TraceEvent
    from ..trace.run_info import RunConfig


#: Pairs overlapping at least this much "ran in parallel".
OVERLAPPED = 0.5


#: Median op duration under which dispatch overhead dominates.
SHORT_OP_NS = 50_000


#: An op waiting this long after its inputs were ready points at scheduling latency.
LATENCY_NS = 1_000_000


#: A dependency is the cause when the producer-side ops it needs hold this much of its branch.
DEPENDENCY_SHARE = 0.5


#: A run in which things computed at once less than this share of the time did one at a time.
ONE_AT_A_TIME = 0.02


class Cause(str, enum.Enum):
    """Why two branches did not overlap (a `str`, so `cause == "one worker"` reads naturally)."""

    DEPENDENCY = "dependency"
    SOFT_PLACEMENT = "soft placement"
    ONE_STREAM = "one stream"
    ONE_WORKER = "one worker"
    ALL_BUSY = "all workers busy"
    TOO_SHORT = "ops too short"
    LATENCY = "scheduling latency"
    NOT_DETERMINED = "not determined"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PairReport:
    """How two branches related in time, and why they did not overlap (if they did not)."""

    scope_a: str
    scope_b: str
    overlap: float
    cause: Cause | None
    detail: str
    #: the numbers behind `cause` (a record of `explain.evidence`); None when overlapped
    evidence: Any = None

    @property
    def overlapped(self) -> bool:
        return self.overlap >= OVERLAPPED


@dataclass(frozen=True)
class Context:
    """What every check reads: the trace, how it was run, the branches; and the facts of the
    whole trace that the checks of every pair ask for, each computed once (when first asked),
    not once per pair (explain() compares up to `parallelgraph.explain.MAX_PAIRS` pairs)."""

    trace: Trace
    config: RunConfig  # the run's settings (empty for a trace that records none)
    cores: int | None  # the run's machine's CPUs, when the trace records them
    knobs: SettingWords
    branches: dict[str, Branch]  # by label: the branches being compared

    @cached_property
    def flow(self) -> analysis.DataFlow:
        """Who consumed whom (`analysis.DataFlow`)."""
        return analysis.DataFlow(self.trace)

    @cached_property
    def workers(self) -> list[str]:
        """`analysis.worker_lanes`: the lanes that ran ops."""
        return analysis.worker_lanes(self.trace)

    @cached_property
    def workers_busy(self) -> list[Intervals]:
        """When each of `workers` ran an op (`analysis.lane_op_spans`)."""
        return analysis.lane_op_spans(self.trace, self.workers)

    @cached_property
    def ops_concurrency(self) -> float:
        """How much of the time two or more whole ops ran at once (`analysis.concurrency`)."""
        return analysis.concurrency(self.trace, ops_only=True)

    @cached_property
    def ops_by_name(self) -> dict[str, TraceEvent]:
        """`analysis.op_events_by_name`."""
        return analysis.op_events_by_name(self.trace)

    @cached_property
    def has_shards(self) -> bool:
        """Whether any op of the trace was split into shards."""
        return any(event.kind == EventKind.SHARD for event in self.trace.events)

    @cached_property
    def top_scopes(self) -> Counter[str]:
        """How many outermost ops each top-level scope has ("<root>" for those in none)."""
        return Counter(_top_scope(e) for e in self.trace.ops())

    @property
    def recorded(self) -> bool:
        """Whether the trace says how it was run (its config or its machine's cores)."""
        return bool(self.config) or self.cores is not None

    @property
    def streams(self) -> int:
        """The run's CUDA streams (1 when not recorded)."""
        return 1 if self.config.streams is None else self.config.streams


def pair_report(context: Context, a: Branch, b: Branch) -> PairReport:
    overlap = overlap_of(a, b)
    if overlap >= OVERLAPPED:
        return PairReport(a.label, b.label, overlap, None, "")
    for check in (_dependency, _soft_placement, _one_worker, _all_busy, _too_short, _latency):
        found = check(context, a, b)
        if found is not None:
            return PairReport(a.label, b.label, overlap, *found)
    evidence = _undetermined(context, a, b)
    return PairReport(
        a.label,
        b.label,
        overlap,
        Cause.NOT_DETERMINED,
        "Cause not determined from this trace: no dependency between them was traced, and "
        f"threads sat idle while they ran ({_idle_text(context, evidence)}). To settle it, "
        f"{evidence.experiment}",
        evidence,
    )


def _idle_text(context: Context, evidence: Undetermined) -> str:
    """Which threads were idle, in numbers that say so: lanes idle for at least 1% of the
    pair's window, and the configured inter-op threads that have no lane at all (they ran no
    op; a lane 0% idle is not listed as idle)."""
    idle = [f"{lane} {share:.0%}" for lane, share in evidence.idle_share if share >= 0.01]
    parts = [f"idle: {', '.join(idle[:3])}"] if idle else []
    inter = context.config.inter_op_threads
    lanes = len(context.workers)
    if context.trace.source == "parallelgraph" and inter is not None and inter > lanes:
        parts.append(f"{inter - lanes} of the {inter} inter-op threads ran no op at all")
    return "; ".join(parts) or "idle: none measured"


def _undetermined(context: Context, a: Branch, b: Branch) -> Undetermined:
    trace = context.trace
    window = [(min(a.busy[0][0], b.busy[0][0]), max(a.busy[-1][1], b.busy[-1][1]))]
    size = window[0][1] - window[0][0]
    idle = []
    for lane in context.workers:
        busy = analysis.length(analysis.intersect(trace.work_intervals.get(lane, []), window))
        idle.append((lane, 1 - busy / size if size else 0.0))
    idle.sort(key=lambda item: -item[1])
    return Undetermined(tuple(idle), context.knobs.experiment)


Found = tuple[Cause, str, Any] | None


def _dependency(context: Context, a: Branch, b: Branch) -> Found:
    found = analysis.heaviest_dependency(context.trace, a.ops, b.ops, context.flow)
    if found is None or found.share < DEPENDENCY_SHARE:
        return None
    chain = analysis.input_chain(context.trace, found.producer, found.consumer, context.flow)
    evidence = DependencyEvidence(found.producer, found.consumer, chain, found.count, found.share)
    via = f" (through {' -> '.join(chain[1:-1][:3])})" if len(chain) > 2 else ""
    return (
        Cause.DEPENDENCY,
        f"Cause: a dependency — {found.consumer!r} needs {found.producer!r}{via}"
        + (f" and {found.count - 1} more op(s)" if found.count > 1 else "")
        + f" ({found.share:.0%} of the other's busy time), so one had to wait for the other; "
        "no thread or stream setting can overlap them.",
        evidence,
    )


def _soft_placement(context: Context, a: Branch, b: Branch) -> Found:
    moved = plan_notes(context.trace.info.notes or (), NoteKind.SOFT_PLACEMENT)
    if not moved or context.streams < 2:  # before the pair's names: most traces move nothing
        return None
    names = {e.name for e in a.ops + b.ops}
    moved_here = [n for n in moved if n.op in names]
    if not moved_here:
        return None
    inter = context.config.inter_op_threads
    evidence = PlacementEvidence(len(moved_here), context.streams, inter)
    return (
        Cause.SOFT_PLACEMENT,
        f"Cause: soft placement — {len(moved_here)} of their ops were placed on a GPU to run on "
        f"separate streams, but no GPU was usable, so they ran on the CPU, where "
        f"{inter if inter is not None else '?'} inter-op thread(s) decide.",
        evidence,
    )


def _on_streams(trace: Trace, lanes: Iterable[str]) -> bool:
    """Whether there are lanes and all are CUDA streams."""
    kinds = [trace.lane(lane).kind for lane in lanes]
    return bool(kinds) and all(kind is LaneKind.STREAM for kind in kinds)


def _one_worker(context: Context, a: Branch, b: Branch) -> Found:
    trace, config = context.trace, context.config
    lanes = set(a.lanes | b.lanes)  # each branch's, gathered once: a branch is in many pairs
    if _on_streams(trace, lanes):  # GPU ops: streams decide
        return _one_stream(context, a.ops + b.ops, lanes)
    concurrency = context.ops_concurrency  # an op's own threads aside
    ordered = tuple(sorted(lanes))
    if config.inter_op_threads == 1:
        return (
            Cause.ONE_WORKER,
            "Cause: one inter-op thread — the config lets only one op run at a time "
            "(inter_op_threads=1), so independent ops queue up.",
            OneAtATimeEvidence(ordered, concurrency, "inter_op_threads=1"),
        )
    if not context.recorded and concurrency < ONE_AT_A_TIME:
        where = f"{len(lanes)} lanes" if len(lanes) > 1 else f"one lane, {ordered[0]}"
        return (
            Cause.ONE_WORKER,
            f"Cause: {context.knobs.one_at_a_time} — no two ops in the whole trace ran at the "
            f"same time (on {where}; two ops at once {concurrency:.0%} of the time"
            + (", an op's own intra-op threads aside" if context.has_shards else "")
            + "), so independent ops queued up.",
            OneAtATimeEvidence(ordered, concurrency, None),
        )
    return None


def _one_stream(context: Context, ops: tuple[TraceEvent, ...], lanes: set[str]) -> Found:
    if context.recorded:
        streams, policy = context.streams, context.config.stream_policy
        single = streams == 1 or policy == "single"
        if len(lanes) == 1 and single:
            lane = next(iter(lanes))
            return (
                Cause.ONE_STREAM,
                f"Cause: one CUDA stream — every kernel of both went to {lane} "
                f"(streams={streams}, stream_policy={policy or '?'!r}), and a stream runs its "
                "kernels one after another: TensorFlow 1.x's single compute stream.",
                OneStreamEvidence(lane, 1.0, streams, policy),
            )
        return None
    time_on: dict[str, int] = {}
    for event in ops:
        time_on[event.lane] = time_on.get(event.lane, 0) + event.work_ns
    lane = max(time_on, key=time_on.__getitem__)
    total = sum(time_on.values())
    if total and time_on[lane] >= 0.9 * total:
        share = time_on[lane] / total
        return (
            Cause.ONE_STREAM,
            f"Cause: one stream — {share:.0%} of both branches' op time was "
            f"on one lane ({lane}), which ran them one after another.",
            OneStreamEvidence(lane, share, None, None),
        )
    return None


def _all_busy(context: Context, a: Branch, b: Branch) -> Found:
    """Every worker was occupied while one branch ran alone, or while the later one waited to
    start (from the earlier one's start to its own first op)."""
    trace, workers, busy = context.trace, context.workers, context.workers_busy
    if len(workers) < 2 or not a.busy or not b.busy:
        return None
    alone = analysis.exclusive_time(a.busy, b.busy)
    first, later = sorted((a, b), key=lambda branch: branch.busy[0][0])
    waited = [(first.busy[0][0], later.busy[0][0])] if later.busy[0][0] > first.busy[0][0] else []
    while_alone = analysis.all_busy_fraction(trace, workers, alone, busy)
    while_waiting = analysis.all_busy_fraction(trace, workers, waited, busy) if waited else 0.0
    if max(while_alone, while_waiting) < EVERY_LANE_BUSY:
        return None
    # the scopes of the outermost ops not in either branch: the trace's counts less theirs
    left = context.top_scopes.copy()
    left.subtract(
        _top_scope(e) for e in {id(e): e for e in a.ops + b.ops}.values() if e.parent is None
    )
    others = sorted(scope for scope, count in left.items() if count > 0)
    by_waiting = while_waiting >= while_alone
    when = f"until {later.label} started" if by_waiting else "while one of them ran alone"
    window = waited if by_waiting else alone
    share = max(while_alone, while_waiting)
    evidence = AllBusyEvidence(tuple(workers), analysis.length(window), share, when, tuple(others))
    return (
        Cause.ALL_BUSY,
        f"Cause: every worker busy — {when}, all {len(workers)} worker lanes were occupied "
        f"{share:.0%} of the time"
        + (f" (also by {', '.join(others[:4])})" if others else "")
        + "; no worker was free to start the other.",
        evidence,
    )


def _top_scope(event: TraceEvent) -> str:
    return event.scope.split("/")[0] or "<root>"


def short_share(ops: Iterable[TraceEvent]) -> float:
    """The share of the ops' time spent in ops shorter than `SHORT_OP_NS`: a branch of a few
    long matmuls and many microsecond reads is not "too short", whatever its median."""
    short, total = short_and_total_ns(ops)
    return short / total if total else 1.0


def short_and_total_ns(ops: Iterable[TraceEvent]) -> tuple[int, int]:
    """The ops' time in ops shorter than `SHORT_OP_NS`, and all their time (ns): sums, so the
    share of several branches' ops adds up without going over their ops again."""
    durations = [e.work_ns for e in ops]
    return sum(d for d in durations if d < SHORT_OP_NS), sum(durations)


def _too_short(context: Context, a: Branch, b: Branch) -> Found:
    ops = a.ops + b.ops
    median = statistics.median(e.work_ns for e in ops)
    share = short_share(ops)
    short = share >= 0.5
    inter = 1 if context.config.inter_op_threads is None else context.config.inter_op_threads
    one_lane = len({e.lane for e in ops}) == 1 and inter > 1
    gpu = all(device_kind(e.device) is DeviceKind.GPU for e in ops)
    evidence = ShortOpsEvidence(int(median), share, one_lane, gpu)
    if short and gpu:
        detail = (
            f"Cause: kernels too short — their median time is {median / 1e3:.1f} us, about "
            "what launching a kernel from Python costs; the GPU finished each one before the "
            "host had launched the next, so the streams seldom had two kernels to run at once."
        )
    elif short and one_lane and context.trace.source == "parallelgraph":
        detail = (
            f"Cause: ops too short — their median duration is {median / 1e3:.1f} us, less "
            f"than waking another thread costs: of the {inter} inter-op threads, parallelgraph "
            f"ran them all on one (ops it estimates under {inexpensive_ns() / 1e3:.0f} us, about "
            "what handing one to another thread costs on this machine, run on the thread that made "
            "them ready, as TensorFlow runs inexpensive ops inline; they "
            "are mostly Python, which a second thread could not run at the same time)."
        )
    elif short:
        detail = (
            f"Cause: ops too short — their median duration is {median / 1e3:.1f} us, about "
            "what handing an op to another thread costs; the workers spent their time "
            "dispatching, not computing."
        )
    elif one_lane and median < (handoff := inexpensive_ns()):
        detail = (
            f"Cause: ops too short — {inter} inter-op threads were available, but every op ran "
            f"on {ops[0].lane}: each (median {median / 1e3:.0f} us) finished before another "
            f"worker thread could have taken the next one (a hand-off costs about "
            f"{handoff / 1e3:.0f} us on this machine)."
        )
    else:
        return None
    return Cause.TOO_SHORT, detail, evidence


def _latency(context: Context, a: Branch, b: Branch) -> Found:
    waits = analysis.input_wait(context.trace, a.ops + b.ops, by_name=context.ops_by_name)
    if not waits or statistics.median(waits) < LATENCY_NS:
        return None
    spec = find_executor(context.config.executor)
    where = spec.scheduler if spec is not None else "the scheduler"
    median = int(statistics.median(waits))
    return (
        Cause.LATENCY,
        f"Cause: scheduling latency — an op started a median {median / 1e6:.2f} ms after its "
        f"inputs were ready (round trips through {where}, thread wake-ups); workers sat idle "
        "in between.",
        LatencyEvidence(median, len(waits)),
    )
