"""`trace.explain()`: did the independent parts of my graph run in parallel — and if not, why?

For every pair of top-level scopes the report says how much they overlapped. When two scopes
did not overlap (overlap below `OVERLAPPED`), it names the first cause that the trace supports,
checked in this order:

1. **a dependency**: an op of one scope consumed (transitively) an op of the other — no thread
   setting can overlap them;
2. **soft placement**: the ops were placed on a GPU, more than one stream was asked for, but no
   GPU was usable, so they ran on the CPU;
3. **one stream** (GPU ops) or **one inter-op thread** (CPU ops): the config allowed only one op
   at a time, or every op ran on one lane;
4. **every worker busy**: while one scope ran without the other, every worker lane was running
   some op — there was no free worker to start the other;
5. **ops too short**: the ops are so short (median below `SHORT_OP_NS`) that handing them to
   another thread costs as much as running them (~15-40 us per hand-off on this kind of machine);
   for GPU kernels, that launching them from Python does: the GPU waits for the host
   (launch-bound), so a second stream seldom has a kernel queued;
6. **scheduling latency**: ops started long after their inputs were ready (a Dask scheduler's
   round trips, thread wake-ups), so workers idled between them.

Then it compares the makespan with the bounds of `analysis` (work / P and the critical path)
and proposes the one change most likely to help.

A trace whose ops all ran on a GPU is judged as one: its streams are not processors (kernels on
two streams share one GPU's multiprocessors, so overlap shows concurrency, not speed-up), so the
report gives the GPU's busy fraction instead of work / P, and never proposes CPU thread counts.
"""

from __future__ import annotations

import html
import itertools
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import analysis

if TYPE_CHECKING:
    from .trace import Trace

#: Pairs overlapping at least this much "ran in parallel".
OVERLAPPED = 0.5
#: Median op duration under which dispatch overhead dominates.
SHORT_OP_NS = 50_000
#: An op waiting this long after its inputs were ready points at scheduling latency.
LATENCY_NS = 1_000_000
#: Ops shorter than this can all finish on one thread before a second one wakes up.
WAKE_UP_NS = 1_000_000
#: Fraction of the exclusive time during which all workers were busy to call them "all busy".
ALL_BUSY = 0.8
#: At most this many scope pairs are listed.
MAX_PAIRS = 12

CAUSES = (
    "dependency",
    "soft placement",
    "one stream",
    "one worker",
    "all workers busy",
    "ops too short",
    "scheduling latency",
)


@dataclass(frozen=True)
class PairReport:
    """How two top-level scopes related in time, and why they did not overlap (if they did not)."""

    scope_a: str
    scope_b: str
    overlap: float
    cause: str | None
    detail: str

    @property
    def overlapped(self) -> bool:
        return self.overlap >= OVERLAPPED


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

    def lines(self) -> list[str]:
        out = []
        for pair in self.pairs:
            verdict = (
                "ran in parallel"
                if pair.overlapped
                else "partly overlapped"
                if pair.overlap > 0
                else "did not overlap"
            )
            out.append(
                f"{pair.scope_a} and {pair.scope_b}: {verdict} (overlap {pair.overlap:.2f})."
            )
            if pair.detail:
                out.append(f"  {pair.detail}")
        if self.omitted_pairs:
            out.append(f"({self.omitted_pairs} more scope pairs not listed)")
        if not self.pairs:
            out.append("Only one top-level scope ran: there is no pair to compare.")
        out.extend(self.notes)
        ms = 1e6
        path = " -> ".join(self.critical_path.names[:6]) + (
            " -> ..." if len(self.critical_path.ops) > 6 else ""
        )
        if self.gpu_busy is not None:
            out.append(
                f"Makespan {self.makespan_ns / ms:.2f} ms, some kernel running "
                f"{self.gpu_busy:.0%} of it; the critical path ({path or 'none'}) takes "
                f"{self.critical_path.length / ms:.2f} ms (kernels that share the GPU run "
                "slower than alone: a guide, not a bound)."
            )
        else:
            out.append(
                f"Makespan {self.makespan_ns / ms:.2f} ms. Work {self.work_ns / ms:.2f} ms on "
                f"{self.workers} lane(s) gives {self.work_ns / self.workers / ms:.2f} ms; the "
                f"critical path ({path or 'none'}) takes {self.critical_path.length / ms:.2f} "
                f"ms; so no schedule beats {self.lower_bound_ns / ms:.2f} ms"
                + (
                    f" (this run took {self.makespan_ns / self.lower_bound_ns:.2f}x that)."
                    if self.lower_bound_ns
                    else "."
                )
            )
        out.append(f"Most likely to help: {self.suggestion}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self.lines())
        return f"<div class='parallelgraph-explain'><b>explain()</b><ul>{items}</ul></div>"

    def __repr__(self) -> str:
        return str(self)


def explain(trace: Trace) -> Explanation:
    """Build the report for `trace` (see the module docstring)."""
    config: dict[str, Any] = dict(trace.metadata.get("config", {}) or {})
    if "cores" in trace.metadata:
        config["cores"] = trace.metadata["cores"]
    scopes = [s for s in trace.scopes() if s]
    pairs_all = list(itertools.combinations(scopes, 2))
    pairs = tuple(_pair_report(trace, a, b, config) for a, b in pairs_all[:MAX_PAIRS])
    work = analysis.total_work(trace)
    workers = max(1, len(analysis.compute_lanes(trace)))
    path = analysis.critical_path(trace)
    bound = max(work // workers, path.length)
    makespan = trace.end - trace.start
    gpu_busy = analysis.gpu_busy(trace)
    notes = _notes(trace) + _gpu_notes(pairs, gpu_busy)
    if gpu_busy is not None:
        suggestion = _gpu_suggestion(pairs, makespan, gpu_busy, path.length)
    else:
        suggestion = _suggestion(pairs, config, makespan, work, workers, path.length)
    return Explanation(
        pairs=pairs,
        makespan_ns=makespan,
        work_ns=work,
        workers=workers,
        critical_path=path,
        lower_bound_ns=bound,
        notes=notes,
        suggestion=suggestion,
        omitted_pairs=max(0, len(pairs_all) - MAX_PAIRS),
        gpu_busy=gpu_busy,
    )


def _pair_report(trace: Trace, a: str, b: str, config: dict[str, Any]) -> PairReport:
    overlap = trace.overlap(a, b)
    if overlap >= OVERLAPPED:
        return PairReport(a, b, overlap, None, "")
    for check in (_dependency, _soft_placement, _one_worker, _all_busy, _too_short, _latency):
        found = check(trace, a, b, config)
        if found is not None:
            return PairReport(a, b, overlap, *found)
    return PairReport(
        a,
        b,
        overlap,
        None,
        "Cause not determined: they were independent and workers were free at times; "
        "look for gaps on the timeline.",
    )


def _ops_of(trace: Trace, *scopes: str) -> list:
    return [e for e in trace.ops() if any(e.in_scope(s) for s in scopes)]


def _dependency(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    edge = analysis.dependency_between(trace, a, b)
    if edge is None:
        return None
    producer, consumer = edge
    return "dependency", (
        f"Cause: a dependency — {consumer!r} needs {producer!r}, so one had to wait for the "
        "other; no thread or stream setting can overlap them."
    )


def _soft_placement(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    moved = [n for n in trace.metadata.get("notes", []) if "soft placement" in n]
    names = {e.name for e in _ops_of(trace, a, b)}
    moved_here = [n for n in moved if n.split(":", 1)[0] in names]
    if not moved_here or config.get("streams", 1) < 2:
        return None
    return "soft placement", (
        f"Cause: soft placement — {len(moved_here)} of their ops were placed on a GPU to run on "
        f"separate streams, but no GPU was usable, so they ran on the CPU, where "
        f"{config.get('inter_op_threads', '?')} inter-op thread(s) decide."
    )


def _one_worker(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    ops = _ops_of(trace, a, b)
    lanes = {e.lane for e in ops}
    if ops and all(e.lane.startswith("stream/") for e in ops):  # GPU ops: streams decide
        single = config.get("streams", 1) == 1 or config.get("stream_policy") == "single"
        if len(lanes) == 1 and single:
            return "one stream", (
                f"Cause: one CUDA stream — every kernel of both went to {lanes.pop()} "
                f"(streams={config.get('streams', 1)}, "
                f"stream_policy={config.get('stream_policy', '?')!r}), and a stream runs its "
                "kernels one after another: TensorFlow 1.x's single compute stream."
            )
        return None
    if config.get("inter_op_threads") == 1:
        return "one worker", (
            "Cause: one inter-op thread — the config lets only one op run at a time "
            "(inter_op_threads=1), so independent ops queue up."
        )
    if not config:  # an imported trace: judge by where the time went
        time_on: dict[str, int] = {}
        for event in ops:
            time_on[event.lane] = time_on.get(event.lane, 0) + event.duration
        lane = max(time_on, key=time_on.__getitem__, default=None)
        total = sum(time_on.values())
        if lane is not None and total and time_on[lane] >= 0.9 * total:
            kind = "stream" if "stream" in lane else "worker thread"
            return ("one stream" if kind == "stream" else "one worker"), (
                f"Cause: one {kind} — {time_on[lane] / total:.0%} of both scopes' op time was "
                f"on one lane ({lane}), which ran them one after another."
            )
    return None


def _all_busy(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    workers = analysis.worker_lanes(trace)
    if len(workers) < 2:
        return None
    alone = analysis.exclusive_time(trace.busy_intervals(a), trace.busy_intervals(b))
    fraction = analysis.all_busy_fraction(trace, workers, alone)
    if fraction < ALL_BUSY:
        return None
    others = sorted({e.scope.split("/")[0] or "<root>" for e in trace.ops()} - {a, b})
    return "all workers busy", (
        f"Cause: every worker busy — while one of them ran alone, all {len(workers)} worker "
        f"lanes were occupied {fraction:.0%} of the time"
        + (f" (also by {', '.join(others[:4])})" if others else "")
        + "; no worker was free to start the other."
    )


def _too_short(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    ops = _ops_of(trace, a, b)
    if not ops:
        return None
    median = statistics.median(e.duration for e in ops)
    one_lane = len({e.lane for e in ops}) == 1 and config.get("inter_op_threads", 1) > 1
    if median < SHORT_OP_NS and all(e.device.startswith("gpu") for e in ops):
        return "ops too short", (
            f"Cause: kernels too short — their median time is {median / 1e3:.1f} us, about what "
            "launching a kernel from Python costs; the GPU finished each one before the host "
            "had launched the next, so the streams seldom had two kernels to run at once."
        )
    if median < SHORT_OP_NS:
        return "ops too short", (
            f"Cause: ops too short — their median duration is {median / 1e3:.1f} us, about "
            "what handing an op to another thread costs; the workers spent their time "
            "dispatching, not computing."
        )
    if one_lane and median < WAKE_UP_NS:
        return "ops too short", (
            f"Cause: ops too short — {config['inter_op_threads']} inter-op threads were "
            f"available, but every op ran on {ops[0].lane}: each (median {median / 1e3:.0f} us) "
            "finished before another worker thread had woken up to take the next one."
        )
    return None


def _latency(trace: Trace, a: str, b: str, config: dict) -> tuple[str, str] | None:
    waits = analysis.input_wait(trace, _ops_of(trace, a, b))
    if not waits or statistics.median(waits) < LATENCY_NS:
        return None
    where = "the Dask scheduler" if config.get("executor") == "dask" else "the scheduler"
    return "scheduling latency", (
        f"Cause: scheduling latency — an op started a median "
        f"{statistics.median(waits) / 1e6:.2f} ms after its inputs were ready (round trips "
        f"through {where}, thread wake-ups); workers sat idle in between."
    )


def _notes(trace: Trace) -> tuple[str, ...]:
    moved = [n for n in trace.metadata.get("notes", []) if "soft placement" in n]
    if not moved:
        return ()
    devices = sorted(
        {n.split("placed on ", 1)[1].split(",")[0] for n in moved if "placed on " in n}
    )
    return (
        f"Soft placement: {len(moved)} op(s) placed on {', '.join(devices)} ran on cpu:0 "
        "because that device was not usable.",
    )


def _gpu_notes(pairs: tuple[PairReport, ...], gpu_busy: float | None) -> tuple[str, ...]:
    if gpu_busy is None or not any(pair.overlapped for pair in pairs):
        return ()
    return (
        "On a GPU, kernels that overlap share its multiprocessors: overlap shows they ran at "
        "once, not that the run got shorter — compare the makespan with streams=1 (pg.compare) "
        "to see what the streams bought.",
    )


def _gpu_suggestion(
    pairs: tuple[PairReport, ...], makespan: int, gpu_busy: float, path: int
) -> str:
    """The one change most likely to help a trace whose ops all ran on a GPU."""
    causes = {pair.cause for pair in pairs if not pair.overlapped}
    if "one stream" in causes:
        return _suggestion(pairs, {}, makespan, 0, 1, path)
    if "ops too short" in causes or gpu_busy < 0.7:
        idle = (1 - gpu_busy) * makespan / 1e6
        return (
            f"fewer, bigger kernels: the GPU sat idle {idle:.2f} ms waiting for kernels to be "
            "launched (launch-bound); batching work into bigger ops helps, more streams do not."
        )
    if makespan and path >= 0.8 * makespan:
        return (
            "faster kernels on the critical path (it takes most of the run): more streams "
            "cannot shorten a chain of dependent kernels."
        )
    return (
        f"nothing in the schedule: some kernel ran {gpu_busy:.0%} of the run; only faster "
        "kernels or less work help (kernels that fill the GPU gain nothing from more streams)."
    )


def _suggestion(
    pairs: tuple[PairReport, ...],
    config: dict[str, Any],
    makespan: int,
    work: int,
    workers: int,
    path: int,
) -> str:
    causes = {pair.cause for pair in pairs if not pair.overlapped}
    inter = config.get("inter_op_threads")
    if "one stream" in causes:
        return (
            "Config(streams=2, stream_policy='branches'): independent chains then get their own "
            "CUDA streams and can run side by side on the GPU."
        )
    if "one worker" in causes:
        return (
            "raise inter_op_threads to 2 or more: independent scopes could then run side by side."
        )
    if "soft placement" in causes:
        return "run where a GPU is usable, or raise inter_op_threads so the CPU overlaps them."
    if "ops too short" in causes:
        return (
            "make ops bigger (batch the work) or use fewer inter-op threads: tiny ops cost more "
            "to hand off than to run."
        )
    if "scheduling latency" in causes:
        return (
            "fewer, bigger tasks: each dependency costs a scheduling round trip, so larger ops "
            "(or the threads executor on one machine) spend less time waiting."
        )
    if "all workers busy" in causes:
        return (
            f"more inter-op threads than {inter or workers} (if cores are free) — or accept it: "
            "the workers were never idle."
        )
    if makespan and path >= 0.8 * makespan:
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
    if makespan and work / workers >= 0.8 * makespan:
        return "nothing in the schedule: every lane was busy; only more cores or less work help."
    idle = makespan * workers - work
    return (
        f"look at the idle gaps ({idle / 1e6:.1f} ms of lane time): more inter-op threads or "
        "a different graph split could fill them."
    )
