"""Oversubscription: more threads runnable at once than the run had cores, so they took turns.

Measured, not guessed: at every moment the runnable threads are the lanes computing then (our
own runs draw every inter-op thread and intra-op helper that ran a shard as a lane), each
weighed by the threads per op the run recorded where a producer's helpers record no lanes of
their own (ONNX Runtime's intra-op pool: `RunInfo.recorded`). Judged against the cores the
trace records (`RunInfo.cores`); a trace that does not record them is not judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..trace import analysis
from .evidence import Oversubscription

if TYPE_CHECKING:
    from .causes import Context


#: Oversubscription is said when more threads than cores were runnable this share of the run.
OVERSUBSCRIBED_SHARE = 0.05


def recorded_value(context: Context, name: str) -> int | None:
    """A setting's value as the run recorded it: a foreign file's (`RunInfo.recorded`), or
    our own Config's field of that name; None where the trace does not say."""
    recorded = context.trace.info.recorded
    if recorded is not None and name in recorded:
        return int(recorded[name])
    if context.trace.source == "parallelgraph" and context.config:
        value = context.config.values.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _threads_per_op(context: Context) -> tuple[int, str | None]:
    """How many threads one lane's op kept runnable, and the setting that says so: a foreign
    run's recorded threads per op (its helpers have no lanes), else 1 (each lane is a thread)."""
    setting = context.knobs.intra_op_setting
    if setting is None or context.trace.source == "parallelgraph":
        return 1, None
    value = recorded_value(context, setting.name)
    return (value, setting.said) if value and value > 1 else (1, None)


def oversubscription(context: Context) -> Oversubscription | None:
    """The evidence of oversubscription in `context`'s trace, or None (see the module)."""
    trace, cores = context.trace, context.cores
    makespan = trace.end - trace.start
    if not cores or makespan <= 0:
        return None
    weight, setting = _threads_per_op(context)
    points: list[tuple[int, int]] = []
    for lane in analysis.compute_lanes(trace):
        for start, end in trace.work_intervals.get(lane, []):
            points += [(start, weight), (end, -weight)]
    points.sort()
    runnable = peak = over = weighted = 0
    last = trace.start
    for time, step in points:
        if runnable > cores:
            over += time - last
            weighted += (time - last) * runnable
        runnable += step
        peak = max(peak, runnable)
        last = time
    share = over / makespan
    if share < OVERSUBSCRIBED_SHARE:
        return None
    value = weight if setting else None
    return Oversubscription(peak, int(cores), weighted / over / cores, share, setting, value)


def sentence(found: Oversubscription) -> str:
    """'Cause: oversubscription — 4 intra-op threads on 2 cores: 2.0 runnable threads per
    core for 78% of the run; ...'."""
    what = (
        f"{found.value} intra-op threads per op ({found.setting}={found.value})"
        if found.setting
        else f"{found.threads} threads busy at once"
    )
    return (
        f"Cause: oversubscription — {what} on {found.cores} cores: {found.per_core:.1f} "
        f"runnable threads per core for {found.share:.0%} of the run; they took turns on the "
        "cores, so each op ran slower than it would alone."
    )
