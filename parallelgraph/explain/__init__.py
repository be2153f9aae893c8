"""`trace.explain()`: did the independent parts of my graph run in parallel — and if not, why?

The report compares *branches* (`parallelgraph.trace.branches`): by default the top-level scopes, or
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

Before them, for the whole run: **oversubscription** (`explain.oversubscription`), more threads
runnable at once than the cores the trace records; then the advice is to lower the setting,
from the run's own value. Advice that changes a number names the change from what the run
recorded ("from 1 to 2"; `SettingWords.inter_op_setting`), or says the trace does not tell it.

Then it compares the makespan with the bounds of `analysis` — work / P and the critical path —
twice: for the P lanes the run used, and for the workers it could have had (the config's
threads or cores, the cores the trace's metadata records, or this machine's: it says which) —
so a run that used one thread is never told that "only more cores help". Last comes the one
change most likely to help, in the words of the tool that wrote the trace (`Trace.source`:
TensorFlow's ConfigProto, PyTorch's torch.set_num_threads, JAX's devices, Python threads).

Evidence first, words second: every cause comes with a typed record of the numbers behind it
(`parallelgraph.explain.evidence`), and the suggestion with the facts it rests on (`Advice`), so a
statement can be checked against its numbers. Where the trace supports no cause the pair says
"not determined" and names the experiment, in the producer's words, that would settle it. Only
work counts (`parallelgraph.trace`): waiting and setup are left out of every number, and the
report says what it left out.

A trace whose ops all ran on a GPU is judged as one: its streams are not processors (kernels on
two streams share one GPU's multiprocessors, so overlap shows concurrency, not speed-up), so the
report gives the GPU's busy fraction instead of work / P, and never proposes CPU thread counts.

The package: `causes` (the checks, with their evidence), `oversubscription` (the run's runnable
threads against its cores), `advice` (the suggestion and the workers a run could have had),
`notes` (what was left out, the compiler's time, plan notes); this module builds the report
from them.
"""

from __future__ import annotations

import bisect
import html
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..trace import analysis
from ..trace.branches import Branch, default_branches, select
from .advice import Workers, gpu_suggestion, possible_workers, suggestion
from .causes import (
    DEPENDENCY_SHARE,
    LATENCY_NS,
    ONE_AT_A_TIME,
    OVERLAPPED,
    SHORT_OP_NS,
    Cause,
    Context,
    PairReport,
    pair_report,
    short_share,
)
from .evidence import Advice, Oversubscription
from .notes import gpu_notes, left_out, notes
from .oversubscription import oversubscription, sentence

if TYPE_CHECKING:
    from ..chrome.producers.base import SettingWords
    from ..trace.model import Trace

__all__ = [
    "DEPENDENCY_SHARE",
    "LATENCY_NS",
    "LISTED_PAIRS",
    "MAX_PAIRS",
    "ONE_AT_A_TIME",
    "OVERLAPPED",
    "SHORT_OP_NS",
    "Cause",
    "Explanation",
    "PairReport",
    "Workers",
    "explain",
    "possible_workers",
    "short_share",
]


#: At most this many pairs are examined (the largest branches first) ...
MAX_PAIRS = 120


#: ... and this many are written out, the ones that matter most first; the rest are counted.
LISTED_PAIRS = 4


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
    #: More threads runnable than cores (`explain.oversubscription`); None when not found.
    oversubscribed: Oversubscription | None = None

    def group(self) -> GroupSummary | None:
        """The branches as one group, when there are three or more (`GroupSummary`)."""
        return GroupSummary.of(self.pairs, self.omitted_pairs)

    def lines(self) -> list[str]:
        group = self.group()
        out = [group.line()] if group is not None else []
        out += [line for pair in self.pairs[:LISTED_PAIRS] for line in _pair_lines(pair)]
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
        if self.oversubscribed is not None:
            out.append(sentence(self.oversubscribed))
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
                f"{self.critical_path.length_ns / ms:.2f} ms (kernels that share the GPU run "
                "slower than alone: a guide, not a bound)."
            )
        line = (
            f"Makespan {self.makespan_ns / ms:.2f} ms. Work {self.work_ns / ms:.2f} ms on "
            f"{self.workers} lane(s) gives {self.work_ns / self.workers / ms:.2f} ms; the "
            f"critical path ({path or 'none'}) takes {self.critical_path.length_ns / ms:.2f} "
            f"ms; so no schedule on those lanes beats {self.lower_bound_ns / ms:.2f} ms"
            + (
                f" (this run took {self.makespan_ns / self.lower_bound_ns:.2f}x that)."
                if self.lower_bound_ns
                else "."
            )
        )
        if self.possible and self.possible.possible > self.workers:
            bound = analysis.bound_ns(
                self.work_ns, self.possible.possible, self.critical_path.length_ns
            )
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


@dataclass(frozen=True)
class GroupSummary:
    """Many branches (the heads of an attention block, the experts of a mixture) said as a group
    before the pairs: how many pairs overlapped, partly or not at all, the median overlap, and
    the causes of those that did not, with their counts."""

    branches: tuple[str, ...]
    pairs: int
    overlapped: int
    partly: int
    median_overlap: float
    causes: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, pairs: tuple[PairReport, ...], omitted: int = 0) -> GroupSummary | None:
        names = tuple(
            sorted(
                {n for pair in pairs for n in (pair.scope_a, pair.scope_b)},
                key=lambda name: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)],
            )
        )
        if len(names) < 3 or not pairs:
            return None
        overlaps = sorted(pair.overlap for pair in pairs)
        causes = Counter(str(p.cause) for p in pairs if not p.overlapped and p.cause is not None)
        return cls(
            names,
            len(pairs),
            sum(pair.overlapped for pair in pairs),
            sum(0 < pair.overlap and not pair.overlapped for pair in pairs),
            overlaps[len(overlaps) // 2],
            tuple(causes.most_common()),
        )

    def line(self) -> str:
        shown = ", ".join(self.branches[:3]) + (
            f", ... {self.branches[-1]}" if len(self.branches) > 3 else ""
        )
        did_not = self.pairs - self.overlapped - self.partly
        text = (
            f"{len(self.branches)} branches ({shown}): {self.overlapped} of {self.pairs} pairs "
            f"ran in parallel, {self.partly} partly, {did_not} did not (median overlap "
            f"{self.median_overlap:.2f})"
        )
        if self.causes:
            text += "; why not: " + ", ".join(f"{cause} ({n})" for cause, n in self.causes)
        return text + "."


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


def _knobs(trace: Trace) -> SettingWords:
    from ..chrome.producers import knobs_for

    return knobs_for(trace.source, trace.info.settings.executor)


@analysis.collector_paused
def explain(trace: Trace, *branches: str) -> Explanation:
    """Build the report for `trace` (see the module docstring); `branches` name what to
    compare (scopes, "lane:NAME", "op:PATTERN"), by default the top-level scopes."""
    info = trace.info
    chosen = [select(trace, b) for b in branches] if branches else default_branches(trace)
    first_pairs = _largest_pairs(chosen, MAX_PAIRS)
    context = Context(trace, info.settings, info.cores, _knobs(trace), {b.label: b for b in chosen})
    pairs = _ranked(pair_report(context, a, b) for a, b in first_pairs)
    work = analysis.total_work_ns(trace)
    used = max(1, len(analysis.compute_lanes(trace)))
    path = analysis.critical_path(trace)
    bound = analysis.bound_ns(work, used, path.length_ns)  # the one bound: max(work / P, path)
    makespan = trace.end - trace.start
    gpu_busy = analysis.gpu_busy(trace)
    possible = None if gpu_busy is not None else possible_workers(info.cores, used)
    left_out_ns, left_note = left_out(trace)
    report_notes = left_note + notes(trace) + gpu_notes(pairs, gpu_busy)
    over = None if gpu_busy is not None else oversubscription(context)
    if gpu_busy is not None:
        advice = gpu_suggestion(context, pairs, makespan, gpu_busy, path.length_ns)
    else:
        advice = suggestion(context, pairs, makespan, work, possible, path.length_ns, over)
    return Explanation(
        pairs=pairs,
        makespan_ns=makespan,
        work_ns=work,
        workers=used,
        critical_path=path,
        lower_bound_ns=bound,
        notes=report_notes,
        suggestion=advice.text,
        omitted_pairs=len(chosen) * (len(chosen) - 1) // 2 - len(first_pairs),
        gpu_busy=gpu_busy,
        source=trace.source,
        possible=possible,
        advice=advice,
        left_out_ns=left_out_ns,
        oversubscribed=over,
    )


def _largest_pairs(chosen: list[Branch], limit: int) -> list[tuple[Branch, Branch]]:
    """The first `limit` of the pairs of `chosen`, the pairs of the largest branches first
    (by the smaller one's busy time; ties in the order of `itertools.combinations`), without
    making all n²/2 of them: a trace with a branch per thread can have thousands.

    The pairs whose smaller branch has busy time v are those of the branches of at least v
    with one of exactly v; each value, from the largest down, takes O(n) and gives a pair once
    two branches are in, so this is O(limit · n) however many branches tie."""
    found: list[tuple[Branch, Branch]] = []
    for value in sorted({b.busy_ns for b in chosen}, reverse=True):
        among = [b for b in chosen if b.busy_ns >= value]
        tied = [p for p, b in enumerate(among) if b.busy_ns == value]
        for position, first in enumerate(among):
            if first.busy_ns == value:
                seconds: Iterable[int] = range(position + 1, len(among))
            else:
                seconds = tied[bisect.bisect_right(tied, position) :]
            for other in seconds:
                found.append((first, among[other]))
                if len(found) == limit:
                    return found
    return found


def _ranked(reports: Iterable[PairReport]) -> tuple[PairReport, ...]:
    """Pairs that did not overlap first (they are what the report is for), then the rest, each
    group in the order given (largest branches first)."""
    reports = list(reports)
    return tuple(sorted(reports, key=lambda pair: pair.overlapped))
