"""The one change most likely to help, with the facts it rests on (`evidence.Advice`), in the
words of the tool that wrote the trace (`SettingWords`); and the workers the run could have had."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..trace import analysis
from .causes import Cause, Context, PairReport, short_and_total_ns
from .evidence import EVERY_LANE_BUSY, Advice, Oversubscription
from .oversubscription import recorded_value

if TYPE_CHECKING:
    from ..chrome.producers.base import Setting
    from ..trace.model import Trace


@dataclass(frozen=True)
class Workers:
    """How many lanes a run used, and how many workers it could have had, and says whence."""

    used: int
    possible: int
    basis: str  # "the run's machine had 16 cores", "this machine's 2 cores; the trace does..."


def possible_workers(cores: int | None, used: int) -> Workers:
    """The workers the run could have had (`cores`: the run's machine's, when the trace says),
    and whence that number comes."""
    if cores:
        return Workers(used, max(used, int(cores)), f"the run's machine had {cores} cores")
    machine = os.cpu_count() or 1
    return Workers(
        used,
        max(used, machine),
        f"this machine's {machine} cores; the trace does not say what the traced one had",
    )


def gpu_suggestion(
    context: Context, pairs: tuple[PairReport, ...], makespan: int, gpu_busy: float, path: int
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


def _short_ops(pairs: tuple[PairReport, ...], context: Context) -> bool:
    """Whether the ops of the non-overlapping pairs are too short to be worth handing off
    (`short_share` of their ops, a branch's counted once per such pair it is in: each branch's
    sums are taken once and weighted, not its ops listed again for each pair)."""
    times = Counter(
        label for pair in pairs if not pair.overlapped for label in (pair.scope_a, pair.scope_b)
    )
    short = total = 0
    for label, count in times.items():
        branch_short, branch_total = short_and_total_ns(context.branches[label].ops)
        short += count * branch_short
        total += count * branch_total
    any_ops = any(context.branches[label].ops for label in times)
    return any_ops and (short / total if total else 1.0) >= 0.5  # short_share's rule


def suggestion(
    context: Context,
    pairs: tuple[PairReport, ...],
    makespan: int,
    work: int,
    possible: Workers | None,
    path: int,
    oversubscribed: Oversubscription | None = None,
) -> Advice:
    """The one change most likely to help a CPU run, with the facts it rests on: fewer
    threads first for a run that had more runnable than cores (more would only take turns)."""
    config, knobs = context.config, context.knobs
    if oversubscribed is not None:
        return lower(context, oversubscribed, possible)
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
                "handing one to another thread costs; " + _bigger_ops(context),
                "bigger_ops",
            )
        return _raise(context, "inter_op", possible)
    if Cause.SOFT_PLACEMENT in causes:
        return Advice(
            "run where a GPU is usable, or raise inter_op_threads so the CPU overlaps them.",
            "inter_op",
        )
    if Cause.TOO_SHORT in causes:
        return Advice(_bigger_ops(context), "bigger_ops")
    if Cause.LATENCY in causes:
        return Advice(
            "fewer, bigger tasks: each dependency costs a scheduling round trip, so larger ops "
            "(or the threads executor on one machine) spend less time waiting.",
            "bigger_ops",
        )
    if Cause.ALL_BUSY in causes:
        inter = config.inter_op_threads or used
        raised = _raise(context, "inter_op", possible, possible.possible if room else None)
        if room and raised.knob == "inter_op":
            return Advice(
                f"more workers than {inter} — the machine has cores to spare: {raised.text}",
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
        return Advice(_critical_path_advice(context), "critical_path")
    if makespan and busy_share >= EVERY_LANE_BUSY:
        raised = _raise(context, "intra_op", possible)
        if room and raised.knob == "intra_op":
            assert possible is not None
            return Advice(
                f"more threads: the {used} lane(s) did work {busy_share:.0%} of the run, but "
                f"the run could have had {possible.possible} ({possible.basis}) — "
                f"{raised.text}",
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
    raised = _raise(context, "inter_op", possible)
    if causes and raised.knob == "inter_op":  # side by side, they would fill the gaps
        return Advice(f"{text}: {raised.text}", "idle_gaps", busy_share)
    return Advice(
        f"{text}: the branches already ran side by side, so a thread setting will not fill "
        "them: see where they fall on the timeline (trace.idle_gaps_ms(lane)).",
        "idle_gaps",
        busy_share,
    )


def _target(setting: Setting, possible: Workers | None, cores: int | None) -> tuple[int, str]:
    """What `setting` is raised to, and whence: the cores the run had for threads per op
    (`possible`'s, else the recorded ones), else 2 (two branches side by side)."""
    if setting.to_cores and possible is not None:
        return possible.possible, f" ({possible.basis})"
    if setting.to_cores and cores:
        return int(cores), f" (the run's machine had {cores} cores)"
    return 2, ""


def change(setting: Setting, current: int | None, target: int, basis: str = "") -> str:
    """'from 1 to 2', or 'to 2 (this trace does not say what the run had)'."""
    if current is None:
        return f"to {target}{basis} (this trace does not say what the run had)"
    return f"from {current} to {target}{basis}"


def _raise(
    context: Context, role: str, possible: Workers | None, target: int | None = None
) -> Advice:
    """The tool's words for `role` ("inter_op", "intra_op"), their {change} the change from
    the run's own setting; where the run already had the target or more, not those words
    (knob "none"): advice never asks for what the run had."""
    knobs = context.knobs
    text: str = getattr(knobs, role)
    setting: Setting | None = getattr(knobs, f"{role}_setting")
    if setting is None:
        return Advice(text, role)
    wanted, basis = _target(setting, possible, context.cores)
    wanted = target or wanted
    current = recorded_value(context, setting.name)
    if current is not None and current >= wanted:
        return Advice(
            f"nothing more from {setting.said}: the run already had {current}, and "
            f"{wanted}{basis} is all it can use; only less work or faster ops help.",
            "none",
        )
    return Advice(text.replace("{change}", change(setting, current, wanted, basis)), role)


def lower(context: Context, found: Oversubscription, possible: Workers | None) -> Advice:
    """Fewer threads, for an oversubscribed run: the recorded setting lowered to fit the
    cores ("lower SessionOptions.intra_op_num_threads from 4 to 2"), in the tool's words."""
    knobs = context.knobs
    per_op = knobs.intra_op_setting
    inter = recorded_value(context, "inter_op_threads") if knobs.tool == "parallelgraph" else None
    intra = recorded_value(context, per_op.name) if per_op else None
    why = (
        f": {found.per_core:.1f} runnable threads per core took turns on the {found.cores} "
        f"cores for {found.share:.0%} of the run"
    )
    if per_op is not None and intra is not None and intra > 1:
        fit = max(1, found.cores // max(1, inter or 1))
        if fit < intra:
            return Advice(
                f"lower {per_op.said} {change(per_op, intra, fit)}{why}.", "fewer_threads"
            )
    if inter and inter > found.cores:
        text = f"lower inter_op_threads from {inter} to {found.cores}{why}."
        return Advice(text, "fewer_threads")
    said = per_op.said if per_op is not None else "the threads the program starts"
    return Advice(
        f"run fewer threads at once — at most {found.cores}, one per core (lower {said}; this "
        f"trace does not say what the run had){why}.",
        "fewer_threads",
    )


def _bigger_ops(context: Context) -> str:
    """The tool's words for making ops bigger; for a run that had its fusion on, the words
    that do not ask for it again."""
    knobs = context.knobs
    if context.config.fuse and knobs.bigger_ops_fused is not None:
        return knobs.bigger_ops_fused
    return knobs.bigger_ops


def _longest_gap(trace: Trace) -> str:
    """'; the longest, 2.40 ms on cpu/PTThreadPool 2, 0.10 ms into the run', or ''."""
    gaps = [
        (end - start, start, lane)
        for lane in analysis.worker_lanes(trace)
        for start, end in analysis.idle_gaps_ns(trace, lane)
    ]
    if not gaps:
        return ""
    size, start, lane = max(gaps)
    return (
        f"; the longest, {size / 1e6:.2f} ms on {lane}, "
        f"{(start - trace.start) / 1e6:.2f} ms into the run"
    )


def _critical_path_advice(context: Context) -> str:
    config, knobs, cores = context.config, context.knobs, context.cores
    if knobs.tool != "parallelgraph":
        return (
            "faster ops on the critical path: it takes most of the run, so only making its "
            f"ops faster shortens it — {_raise(context, 'intra_op', None).text}"
        )
    intra = config.intra_op_threads or 1
    threads = (config.inter_op_threads or 1) * intra
    if cores and threads >= cores and intra < cores:
        return (
            f"the critical path takes most of the run: only faster ops on it help. More "
            f"intra_op_threads would do that, but the {cores} cores are already all in use "
            f"({threads} threads); fewer inter-op and more intra-op threads may balance better."
        )
    return (
        "raise intra_op_threads: the critical path takes most of the run, so only making "
        "its ops faster (splitting them across threads) shortens it."
    )
