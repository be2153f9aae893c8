"""`trace.explain()`: did the independent parts of my graph run in parallel — and if not, why?

The report compares *branches* (`parallelgraph.branches`): by default the top-level scopes, or
for a trace without them the threads (or streams) that ran ops; any others can be named. For
every pair it says how much they overlapped, and when they did not (overlap below
`OVERLAPPED`) it names the first `Cause` that the trace supports, checked in this order:

1. **a dependency**: one branch's real work waited for the other's — the ops of one that an op
   of the other (transitively) consumed hold at least `DEPENDENCY_SHARE` of its busy time. A
   shared constant or shape op that took microseconds is no reason: no thread setting can
   overlap a true dependency, but it can overlap everything around a trivial one;
2. **soft placement**: the ops were placed on a GPU, more than one stream was asked for, but no
   GPU was usable, so they ran on the CPU;
3. **one stream** (GPU ops) or **one worker** (CPU ops): the config allowed only one op at a
   time — or, for a trace without a config, nothing in the whole run ever ran at the same time
   as anything else (TensorFlow's inter_op_parallelism_threads=1, eager PyTorch, XLA's CPU
   runtime, a one-threaded Python program);
4. **every worker busy**: while one branch ran without the other, every worker lane was running
   some op — there was no free worker to start the other;
5. **ops too short**: the ops are so short (median below `SHORT_OP_NS`) that handing them to
   another thread costs as much as running them; for GPU kernels, that launching them does:
   the GPU waits for the host (launch-bound), so a second stream seldom has a kernel queued;
6. **scheduling latency**: ops started long after their inputs were ready (a Dask scheduler's
   round trips, thread wake-ups), so workers idled between them.

Then it compares the makespan with the bounds of `analysis` — work / P and the critical path —
twice: for the P lanes the run used, and for the workers it could have had (the config's
threads or cores, the cores the trace's metadata records, or this machine's: it says which) —
so a run that used one thread is never told that "only more cores help". Last comes the one
change most likely to help, in the words of the tool that wrote the trace (`Trace.source`:
TensorFlow's ConfigProto, PyTorch's torch.set_num_threads, JAX's devices, Python threads).

Evidence first, words second: every cause comes with a typed record of the numbers behind it
(`parallelgraph.evidence`), and the suggestion with the facts it rests on (`Advice`), so a
statement can be checked against its numbers. Where the trace supports no cause the pair says
"not determined" and names the experiment, in the producer's words, that would settle it. Only
work counts (`parallelgraph.trace`): waiting and setup are left out of every number, and the
report says what it left out.

A trace whose ops all ran on a GPU is judged as one: its streams are not processors (kernels on
two streams share one GPU's multiprocessors, so overlap shows concurrency, not speed-up), so the
report gives the GPU's busy fraction instead of work / P, and never proposes CPU thread counts.
"""

from __future__ import annotations

import enum
import html
import itertools
import os
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import analysis
from .branches import Branch, default_branches, overlap_of, select
from .evidence import (
    EVERY_LANE_BUSY,
    Advice,
    AllBusyEvidence,
    DependencyEvidence,
    LatencyEvidence,
    OneAtATimeEvidence,
    OneStreamEvidence,
    PlacementEvidence,
    ShortOpsEvidence,
    Undetermined,
)
from .lanes import LaneKind
from .plan import INEXPENSIVE_NS
from .trace import EventRole, covered

if TYPE_CHECKING:
    from .chrome.producers.base import Knobs
    from .trace import Trace, TraceEvent

#: Pairs overlapping at least this much "ran in parallel".
OVERLAPPED = 0.5
#: Median op duration under which dispatch overhead dominates.
SHORT_OP_NS = 50_000
#: An op waiting this long after its inputs were ready points at scheduling latency.
LATENCY_NS = 1_000_000
#: Ops shorter than this can all finish on one thread before a second one wakes up.
WAKE_UP_NS = 1_000_000
#: Fraction of the exclusive time during which all workers were busy to call them "all busy".
ALL_BUSY = EVERY_LANE_BUSY
#: A dependency is the cause when the producer-side ops it needs hold this much of its branch.
DEPENDENCY_SHARE = 0.5
#: A run in which things computed at once less than this share of the time did one at a time.
ONE_AT_A_TIME = 0.02
#: At most this many pairs are examined (the largest branches first) ...
MAX_PAIRS = 120
#: ... and this many are written out, the ones that matter most first; the rest are counted.
LISTED_PAIRS = 4


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
    #: the numbers behind `cause` (a record of `parallelgraph.evidence`); None when overlapped
    evidence: Any = None

    @property
    def overlapped(self) -> bool:
        return self.overlap >= OVERLAPPED


@dataclass(frozen=True)
class Workers:
    """How many lanes a run used, and how many workers it could have had, and says whence."""

    used: int
    possible: int
    basis: str  # "the run's machine had 16 cores", "this machine's 2 cores; the trace does..."


@dataclass(frozen=True)
class Explanation:
    """The report of `trace.explain()`: print it, or let a notebook render it."""

    pairs: tuple[PairReport, ...]
    makespan_ns: int
    work_ns: int
    workers: int
    critical_path: analysis.CriticalPath
    lower_bound_ns: int
    notes: tuple[str, ...]
    suggestion: str
    omitted_pairs: int = 0
    #: For a trace whose ops all ran on a GPU: the part of the makespan some kernel ran.
    gpu_busy: float | None = None
    source: str = "parallelgraph"
    #: The workers the run could have had; None for GPU traces.
    possible: Workers | None = None
    #: The suggestion with the facts it rests on (`suggestion` is its text).
    advice: Advice | None = None
    #: ns of the waiting and setup left out of every number, by role.
    left_out_ns: dict[str, int] | None = None

    def lines(self) -> list[str]:
        out = [line for pair in self.pairs[:LISTED_PAIRS] for line in _pair_lines(pair)]
        rest = self.pairs[LISTED_PAIRS:]
        if rest or self.omitted_pairs:
            parallel = sum(pair.overlapped for pair in rest)
            out.append(
                f"({len(rest) + self.omitted_pairs} more pairs: {parallel} ran in parallel, "
                f"{len(rest) - parallel} did not"
                + (
                    f", {self.omitted_pairs} of the smallest branches not examined"
                    if self.omitted_pairs
                    else ""
                )
                + "; report.pairs has every one examined)"
            )
        if not self.pairs:
            out.append("Only one top-level scope ran: there is no pair to compare.")
        out.extend(self.notes)
        out.append(self._bound_line())
        out.append(f"Most likely to help: {self.suggestion}")
        return out

    def _bound_line(self) -> str:
        ms = 1e6
        path = " -> ".join(self.critical_path.names[:6]) + (
            " -> ..." if len(self.critical_path.ops) > 6 else ""
        )
        if self.gpu_busy is not None:
            return (
                f"Makespan {self.makespan_ns / ms:.2f} ms, some kernel running "
                f"{self.gpu_busy:.0%} of it; the critical path ({path or 'none'}) takes "
                f"{self.critical_path.length / ms:.2f} ms (kernels that share the GPU run "
                "slower than alone: a guide, not a bound)."
            )
        line = (
            f"Makespan {self.makespan_ns / ms:.2f} ms. Work {self.work_ns / ms:.2f} ms on "
            f"{self.workers} lane(s) gives {self.work_ns / self.workers / ms:.2f} ms; the "
            f"critical path ({path or 'none'}) takes {self.critical_path.length / ms:.2f} "
            f"ms; so no schedule on those lanes beats {self.lower_bound_ns / ms:.2f} ms"
            + (
                f" (this run took {self.makespan_ns / self.lower_bound_ns:.2f}x that)."
                if self.lower_bound_ns
                else "."
            )
        )
        if self.possible and self.possible.possible > self.workers:
            bound = max(self.work_ns // self.possible.possible, self.critical_path.length)
            line += (
                f" With {self.possible.possible} workers ({self.possible.basis}), "
                f"{bound / ms:.2f} ms."
            )
        return line

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self.lines())
        return f"<div class='parallelgraph-explain'><b>explain()</b><ul>{items}</ul></div>"

    def __repr__(self) -> str:
        return str(self)


def _pair_lines(pair: PairReport) -> list[str]:
    verdict = (
        "ran in parallel"
        if pair.overlapped
        else "partly overlapped"
        if pair.overlap > 0
        else "did not overlap"
    )
    lines = [f"{pair.scope_a} and {pair.scope_b}: {verdict} (overlap {pair.overlap:.2f})."]
    if pair.detail:
        lines.append(f"  {pair.detail}")
    return lines


def _knobs(trace: Trace) -> Knobs:
    from .chrome.producers import knobs_for

    config = trace.metadata.get("config") or {}
    return knobs_for(trace.source, config.get("executor") if isinstance(config, dict) else None)


def explain(trace: Trace, *branches: str) -> Explanation:
    """Build the report for `trace` (see the module docstring); `branches` name what to
    compare (scopes, "lane:NAME", "op:PATTERN"), by default the top-level scopes."""
    config: dict[str, Any] = dict(trace.metadata.get("config", {}) or {})
    if "cores" in trace.metadata:
        config["cores"] = trace.metadata["cores"]
    chosen = [select(trace, b) for b in branches] if branches else default_branches(trace)
    pairs_all = sorted(  # the pairs of the largest branches first: they matter most
        itertools.combinations(chosen, 2), key=lambda pair: -min(b.busy_ns for b in pair)
    )
    context = _Context(trace, config, _knobs(trace), {b.label: b for b in chosen})
    pairs = _ranked(_pair_report(context, a, b) for a, b in pairs_all[:MAX_PAIRS])
    work = analysis.total_work(trace)
    used = max(1, len(analysis.compute_lanes(trace)))
    path = analysis.critical_path(trace)
    bound = max(work // used, path.length)
    makespan = trace.end - trace.start
    gpu_busy = analysis.gpu_busy(trace)
    possible = None if gpu_busy is not None else possible_workers(trace, config, used)
    left_out, left_note = _left_out(trace)
    notes = left_note + _notes(trace) + _gpu_notes(pairs, gpu_busy)
    if gpu_busy is not None:
        advice = _gpu_suggestion(context, pairs, makespan, gpu_busy, path.length)
    else:
        advice = _suggestion(context, pairs, makespan, work, possible, path.length)
    return Explanation(
        pairs=pairs,
        makespan_ns=makespan,
        work_ns=work,
        workers=used,
        critical_path=path,
        lower_bound_ns=bound,
        notes=notes,
        suggestion=advice.text,
        omitted_pairs=max(0, len(pairs_all) - MAX_PAIRS),
        gpu_busy=gpu_busy,
        source=trace.source,
        possible=possible,
        advice=advice,
        left_out_ns=left_out,
    )


def _left_out(trace: Trace) -> tuple[dict[str, int], tuple[str, ...]]:
    """What the report did not count as work: the outermost waiting and setup events, each with
    the time it took away from the work (its span less the work nested in it), by role."""
    work = trace.work_intervals
    totals: dict[str, int] = {}
    lines = []
    for role, why in (
        (EventRole.WAITING, "a caller waiting; the ops nested in them still count as work"),
        (EventRole.SETUP, "loading, initialisation, starting threads"),
    ):
        excluded = [
            (e.duration - covered(work.get(e.lane, []), e.start, e.end), e)
            for e in trace.left_out().get(role, [])
        ]
        excluded = sorted(((ns, e) for ns, e in excluded if ns > 0), key=lambda item: -item[0])
        totals[role.value] = sum(ns for ns, _ in excluded)
        if excluded:
            named = ", ".join(f"{e.name} {ns / 1e6:.2f} ms" for ns, e in excluded[:3])
            more = f" and {len(excluded) - 3} more" if len(excluded) > 3 else ""
            lines.append(
                f"Not counted as work: {len(excluded)} {role.value} event(s) ({named}{more}; "
                f"{why})."
            )
    return totals, tuple(lines)


def _ranked(reports: Iterable[PairReport]) -> tuple[PairReport, ...]:
    """Pairs that did not overlap first (they are what the report is for), then the rest, each
    group in the order given (largest branches first)."""
    reports = list(reports)
    return tuple(sorted(reports, key=lambda pair: pair.overlapped))


def possible_workers(trace: Trace, config: dict[str, Any], used: int) -> Workers:
    """The workers the run could have had, and whence that number comes."""
    cores = config.get("cores")
    if cores:
        return Workers(used, max(used, int(cores)), f"the run's machine had {cores} cores")
    machine = os.cpu_count() or 1
    return Workers(
        used,
        max(used, machine),
        f"this machine's {machine} cores; the trace does not say what the traced one had",
    )


@dataclass(frozen=True)
class _Context:
    trace: Trace
    config: dict[str, Any]
    knobs: Knobs
    branches: dict[str, Branch]  # by label: the branches being compared


def _pair_report(context: _Context, a: Branch, b: Branch) -> PairReport:
    overlap = overlap_of(a, b)
    if overlap >= OVERLAPPED:
        return PairReport(a.label, b.label, overlap, None, "")
    for check in (_dependency, _soft_placement, _one_worker, _all_busy, _too_short, _latency):
        found = check(context, a, b)
        if found is not None:
            return PairReport(a.label, b.label, overlap, *found)
    evidence = _undetermined(context, a, b)
    idle = ", ".join(f"{lane} {share:.0%}" for lane, share in evidence.idle_share[:3])
    return PairReport(
        a.label,
        b.label,
        overlap,
        Cause.NOT_DETERMINED,
        "Cause not determined from this trace: no dependency between them was traced, and "
        f"threads sat idle while they ran (idle: {idle or 'none measured'}). To settle it, "
        f"{evidence.experiment}",
        evidence,
    )


def _undetermined(context: _Context, a: Branch, b: Branch) -> Undetermined:
    trace = context.trace
    window = [(min(a.busy[0][0], b.busy[0][0]), max(a.busy[-1][1], b.busy[-1][1]))]
    size = window[0][1] - window[0][0]
    idle = []
    for lane in analysis.worker_lanes(trace):
        busy = analysis.length(analysis.intersect(trace.work_intervals.get(lane, []), window))
        idle.append((lane, 1 - busy / size if size else 0.0))
    idle.sort(key=lambda item: -item[1])
    return Undetermined(tuple(idle), context.knobs.experiment)


Found = tuple[Cause, str, Any] | None


def _dependency(context: _Context, a: Branch, b: Branch) -> Found:
    found = analysis.heaviest_dependency(context.trace, a.ops, b.ops)
    if found is None or found.share < DEPENDENCY_SHARE:
        return None
    chain = analysis.input_chain(context.trace, found.producer, found.consumer)
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


def _soft_placement(context: _Context, a: Branch, b: Branch) -> Found:
    moved = [n for n in context.trace.metadata.get("notes", []) if "soft placement" in n]
    names = {e.name for e in a.ops + b.ops}
    moved_here = [n for n in moved if n.split(":", 1)[0] in names]
    if not moved_here or context.config.get("streams", 1) < 2:
        return None
    inter = context.config.get("inter_op_threads")
    evidence = PlacementEvidence(len(moved_here), context.config.get("streams", 1), inter)
    return (
        Cause.SOFT_PLACEMENT,
        f"Cause: soft placement — {len(moved_here)} of their ops were placed on a GPU to run on "
        f"separate streams, but no GPU was usable, so they ran on the CPU, where "
        f"{inter if inter is not None else '?'} inter-op thread(s) decide.",
        evidence,
    )


def _on_streams(trace: Trace, ops: tuple[TraceEvent, ...]) -> bool:
    return bool(ops) and all(trace.lane(e.lane).kind is LaneKind.STREAM for e in ops)


def _one_worker(context: _Context, a: Branch, b: Branch) -> Found:
    trace, config, ops = context.trace, context.config, a.ops + b.ops
    lanes = {e.lane for e in ops}
    if _on_streams(trace, ops):  # GPU ops: streams decide
        return _one_stream(context, ops, lanes)
    concurrency = analysis.concurrency(trace, ops_only=True)  # an op's own threads aside
    ordered = tuple(sorted(lanes))
    if config.get("inter_op_threads") == 1:
        return (
            Cause.ONE_WORKER,
            "Cause: one inter-op thread — the config lets only one op run at a time "
            "(inter_op_threads=1), so independent ops queue up.",
            OneAtATimeEvidence(ordered, concurrency, "inter_op_threads=1"),
        )
    if not config and concurrency < ONE_AT_A_TIME:
        where = f"{len(lanes)} lanes" if len(lanes) > 1 else f"one lane, {ordered[0]}"
        return (
            Cause.ONE_WORKER,
            f"Cause: {context.knobs.one_at_a_time} — no two ops in the whole trace ran at the "
            f"same time (on {where}; two ops at once {concurrency:.0%} of the time"
            + (", an op's own intra-op threads aside" if _has_shards(trace) else "")
            + "), so independent ops queued up.",
            OneAtATimeEvidence(ordered, concurrency, None),
        )
    return None


def _has_shards(trace: Trace) -> bool:
    return any(event.kind == "shard" for event in trace.events)


def _one_stream(context: _Context, ops: tuple[TraceEvent, ...], lanes: set[str]) -> Found:
    config = context.config
    if config:
        single = config.get("streams", 1) == 1 or config.get("stream_policy") == "single"
        if len(lanes) == 1 and single:
            lane = next(iter(lanes))
            streams, policy = config.get("streams", 1), config.get("stream_policy")
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
        time_on[event.lane] = time_on.get(event.lane, 0) + event.work
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


def _all_busy(context: _Context, a: Branch, b: Branch) -> Found:
    """Every worker was occupied while one branch ran alone, or while the later one waited to
    start (from the earlier one's start to its own first op)."""
    trace = context.trace
    workers = analysis.worker_lanes(trace)
    if len(workers) < 2 or not a.busy or not b.busy:
        return None
    alone = analysis.exclusive_time(a.busy, b.busy)
    first, later = sorted((a, b), key=lambda branch: branch.busy[0][0])
    waited = [(first.busy[0][0], later.busy[0][0])] if later.busy[0][0] > first.busy[0][0] else []
    while_alone = analysis.all_busy_fraction(trace, workers, alone)
    while_waiting = analysis.all_busy_fraction(trace, workers, waited) if waited else 0.0
    if max(while_alone, while_waiting) < ALL_BUSY:
        return None
    mine = {id(e) for e in a.ops + b.ops}
    others = sorted({e.scope.split("/")[0] or "<root>" for e in trace.ops() if id(e) not in mine})
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


def short_share(ops: Iterable[TraceEvent]) -> float:
    """The share of the ops' time spent in ops shorter than `SHORT_OP_NS`: a branch of a few
    long matmuls and many microsecond reads is not "too short", whatever its median."""
    durations = [e.work for e in ops]
    total = sum(durations)
    return sum(d for d in durations if d < SHORT_OP_NS) / total if total else 1.0


def _too_short(context: _Context, a: Branch, b: Branch) -> Found:
    ops = a.ops + b.ops
    median = statistics.median(e.work for e in ops)
    share = short_share(ops)
    short = share >= 0.5
    inter = context.config.get("inter_op_threads", 1)
    one_lane = len({e.lane for e in ops}) == 1 and inter > 1
    gpu = all(e.device.startswith("gpu") for e in ops)
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
            f"ran them all on one (ops it estimates under {INEXPENSIVE_NS / 1e3:.0f} us run on "
            "the thread that made them ready, as TensorFlow runs inexpensive ops inline; they "
            "are mostly Python, which a second thread could not run at the same time)."
        )
    elif short:
        detail = (
            f"Cause: ops too short — their median duration is {median / 1e3:.1f} us, about "
            "what handing an op to another thread costs; the workers spent their time "
            "dispatching, not computing."
        )
    elif one_lane and median < WAKE_UP_NS:
        detail = (
            f"Cause: ops too short — {inter} inter-op threads were available, but every op ran "
            f"on {ops[0].lane}: each (median {median / 1e3:.0f} us) finished before another "
            "worker thread had woken up to take the next one."
        )
    else:
        return None
    return Cause.TOO_SHORT, detail, evidence


def _latency(context: _Context, a: Branch, b: Branch) -> Found:
    waits = analysis.input_wait(context.trace, a.ops + b.ops)
    if not waits or statistics.median(waits) < LATENCY_NS:
        return None
    where = "the Dask scheduler" if context.config.get("executor") == "dask" else "the scheduler"
    median = int(statistics.median(waits))
    return (
        Cause.LATENCY,
        f"Cause: scheduling latency — an op started a median {median / 1e6:.2f} ms after its "
        f"inputs were ready (round trips through {where}, thread wake-ups); workers sat idle "
        "in between.",
        LatencyEvidence(median, len(waits)),
    )


#: The note on an older trace's first run (no "jit" record: the op times may include loading
#: or compiling kernels).
FIRST_RUN_NOTE = (
    "This was its session's first run: the op times include loading the Numba kernels from "
    "their cache, or compiling them (in a fresh process the first kernel alone takes about half "
    "a second); run it once more for the steady state."
)

#: Numba's compiler busy for less than this share of a run is not worth a note.
JIT_NOTE_SHARE = 0.02


def _notes(trace: Trace) -> tuple[str, ...]:
    ours = trace.source == "parallelgraph" and not trace.metadata.get("simulated")
    return ((_jit_note(trace) or ()) if ours else ()) + _plan_notes(trace)


def _jit_note(trace: Trace) -> tuple[str, ...] | None:
    """What Numba's compiler cost this run (the session recorded it: `parallelgraph.jit_clock`)."""
    jit = trace.metadata.get("jit")
    if jit is None:  # a trace from before the jit record
        return (FIRST_RUN_NOTE,) if trace.metadata.get("run") == 0 else None
    busy, compiled = float(jit.get("busy_s", 0.0)), int(jit.get("compiled", 0))
    if busy <= JIT_NOTE_SHARE * max(trace.makespan, 1e-9):
        return None
    if compiled:
        what = (
            f"{compiled} kernel(s) compiled in {float(jit.get('compile_s', 0.0)):.2f} s, their "
            "first use with these types on this machine (Numba caches them: the next process "
            "loads them in milliseconds)"
        )
    else:
        what = "kernels loaded from Numba's cache, once per process and argument types"
    return (
        f"Numba's compiler held this run up for {busy * 1e3:.0f} ms of its "
        f"{trace.makespan * 1e3:.0f} ms ({what}); the op times include it: run once more for the "
        "steady state.",
    )


def _plan_notes(trace: Trace) -> tuple[str, ...]:
    notes = trace.metadata.get("notes", [])
    moved = [n for n in notes if "soft placement" in n]
    # Ours: every plan note but the per-op soft-placement ones (summed up below); another
    # tool's: what its reader noted.
    out = [n for n in notes if "soft placement" not in n]
    if moved:
        devices = sorted(
            {n.split("placed on ", 1)[1].split(",")[0] for n in moved if "placed on " in n}
        )
        out.append(
            f"Soft placement: {len(moved)} op(s) placed on {', '.join(devices)} ran on cpu:0 "
            "because that device was not usable."
        )
    return tuple(out)


def _gpu_notes(pairs: tuple[PairReport, ...], gpu_busy: float | None) -> tuple[str, ...]:
    if gpu_busy is None or not any(pair.overlapped for pair in pairs):
        return ()
    return (
        "On a GPU, kernels that overlap share its multiprocessors: overlap shows they ran at "
        "once, not that the run got shorter — compare the makespan with streams=1 "
        "(pg.plot.compare) to see what the streams bought.",
    )


def _gpu_suggestion(
    context: _Context, pairs: tuple[PairReport, ...], makespan: int, gpu_busy: float, path: int
) -> Advice:
    """The one change most likely to help a trace whose ops all ran on a GPU."""
    causes = {pair.cause for pair in pairs if not pair.overlapped}
    if Cause.ONE_STREAM in causes:
        return Advice(context.knobs.streams, "streams")
    if Cause.TOO_SHORT in causes or gpu_busy < 0.7:
        idle = (1 - gpu_busy) * makespan / 1e6
        return Advice(
            f"fewer, bigger kernels: the GPU sat idle {idle:.2f} ms waiting for kernels to be "
            "launched (launch-bound); batching work into bigger ops helps, more streams do not.",
            "bigger_ops",
        )
    if makespan and path >= 0.8 * makespan:
        return Advice(
            "faster kernels on the critical path (it takes most of the run): more streams "
            "cannot shorten a chain of dependent kernels.",
            "critical_path",
        )
    return Advice(
        f"nothing in the schedule: some kernel ran {gpu_busy:.0%} of the run; only faster "
        "kernels or less work help (kernels that fill the GPU gain nothing from more streams).",
        "gpu",
        gpu_busy,
    )


def _short_ops(pairs: tuple[PairReport, ...], context: _Context) -> bool:
    """Whether the ops of the non-overlapping pairs are too short to be worth handing off."""
    ops = [
        e
        for pair in pairs
        if not pair.overlapped
        for label in (pair.scope_a, pair.scope_b)
        for e in context.branches[label].ops
    ]
    return bool(ops) and short_share(ops) >= 0.5


def _suggestion(
    context: _Context,
    pairs: tuple[PairReport, ...],
    makespan: int,
    work: int,
    possible: Workers | None,
    path: int,
) -> Advice:
    """The one change most likely to help a CPU run, with the facts it rests on."""
    config, knobs = context.config, context.knobs
    causes = {pair.cause for pair in pairs if not pair.overlapped}
    used = possible.used if possible else 1
    room = possible is not None and possible.possible > used
    busy_share = work / (used * makespan) if makespan else 0.0
    if Cause.ONE_STREAM in causes:
        return Advice(knobs.streams, "streams")
    if Cause.ONE_WORKER in causes:
        if _short_ops(pairs, context):
            return Advice(
                "nothing that more threads can buy: the ops take microseconds, about what "
                "handing one to another thread costs; " + knobs.bigger_ops,
                "bigger_ops",
            )
        return Advice(knobs.inter_op, "inter_op")
    if Cause.SOFT_PLACEMENT in causes:
        return Advice(
            "run where a GPU is usable, or raise inter_op_threads so the CPU overlaps them.",
            "inter_op",
        )
    if Cause.TOO_SHORT in causes:
        return Advice(knobs.bigger_ops, "bigger_ops")
    if Cause.LATENCY in causes:
        return Advice(
            "fewer, bigger tasks: each dependency costs a scheduling round trip, so larger ops "
            "(or the threads executor on one machine) spend less time waiting.",
            "bigger_ops",
        )
    if Cause.ALL_BUSY in causes:
        inter = config.get("inter_op_threads") or used
        if room:
            return Advice(
                f"more workers than {inter} — the machine has cores to spare: {knobs.inter_op}",
                "inter_op",
            )
        return Advice(
            f"more cores, or less work: the {inter} workers were all busy while a branch "
            f"waited (their lanes did work {busy_share:.0%} of the whole run).",
            "none",
            busy_share,
        )
    if Cause.NOT_DETERMINED in causes:
        return Advice(f"not determined from this trace — {knobs.experiment}", "experiment")
    if makespan and path >= 0.8 * makespan:
        return Advice(_critical_path_advice(config, knobs), "critical_path")
    if makespan and busy_share >= EVERY_LANE_BUSY:
        if room:
            assert possible is not None
            return Advice(
                f"more threads: the {used} lane(s) did work {busy_share:.0%} of the run, but "
                f"the run could have had {possible.possible} ({possible.basis}) — "
                f"{knobs.intra_op}",
                "intra_op",
                busy_share,
            )
        return Advice(
            f"nothing in the schedule: every lane was busy ({busy_share:.0%} of the run); only "
            "more cores or less work help.",
            "none",
            busy_share,
        )
    idle = makespan * used - work
    text = (
        f"look at the idle gaps ({idle / 1e6:.1f} ms of lane time; the lanes did work "
        f"{busy_share:.0%} of the run{_longest_gap(context.trace)})"
    )
    if causes:  # a pair did not overlap: letting them run side by side would fill the gaps
        return Advice(f"{text}: {knobs.inter_op}", "idle_gaps", busy_share)
    return Advice(
        f"{text}: the branches already ran side by side, so a thread setting will not fill "
        "them: see where they fall on the timeline (trace.idle_gaps(lane)).",
        "idle_gaps",
        busy_share,
    )


def _longest_gap(trace: Trace) -> str:
    """'; the longest, 2.40 ms on cpu/PTThreadPool 2, 0.10 ms into the run', or ''."""
    gaps = [
        (end - start, start, lane)
        for lane in analysis.worker_lanes(trace)
        for start, end in analysis.idle_gaps(trace, lane)
    ]
    if not gaps:
        return ""
    size, start, lane = max(gaps)
    return (
        f"; the longest, {size / 1e6:.2f} ms on {lane}, "
        f"{(start - trace.start) / 1e6:.2f} ms into the run"
    )


def _critical_path_advice(config: dict[str, Any], knobs: Knobs) -> str:
    if knobs.tool != "parallelgraph":
        return (
            "faster ops on the critical path: it takes most of the run, so only making its "
            f"ops faster shortens it — {knobs.intra_op}"
        )
    threads = (config.get("inter_op_threads") or 1) * (config.get("intra_op_threads") or 1)
    cores = config.get("cores")
    if cores and threads >= cores and (config.get("intra_op_threads") or 1) < cores:
        return (
            f"the critical path takes most of the run: only faster ops on it help. More "
            f"intra_op_threads would do that, but the {cores} cores are already all in use "
            f"({threads} threads); fewer inter-op and more intra-op threads may balance better."
        )
    return (
        "raise intra_op_threads: the critical path takes most of the run, so only making "
        "its ops faster (splitting them across threads) shortens it."
    )
