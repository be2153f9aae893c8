"""The notes of a report: what it left out of the work (waiting and setup), what Numba's compiler
cost the run, the plan's notes and the producer's, and what overlap means on a GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plan_notes import NoteKind, plan_notes
from ..trace.model import EventRole, covered

if TYPE_CHECKING:
    from ..trace.model import Trace
    from .causes import PairReport


def left_out(trace: Trace) -> tuple[dict[str, int], tuple[str, ...]]:
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
            (e.duration_ns - covered(work.get(e.lane, []), e.start, e.end), e)
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


#: The note on an older trace's first run (no "jit" record: the op times may include loading
#: or compiling kernels).
FIRST_RUN_NOTE = (
    "This was its session's first run: the op times include loading the Numba kernels from "
    "their cache, or compiling them (in a fresh process the first kernel alone takes about half "
    "a second); run it once more for the steady state."
)


#: Numba's compiler busy for less than this share of a run is not worth a note.
JIT_NOTE_SHARE = 0.02


def notes(trace: Trace) -> tuple[str, ...]:
    ours = trace.source == "parallelgraph" and not trace.info.simulated
    mine = ((_jit_note(trace) or ()) + _reference_note(trace)) if ours else ()
    return mine + _plan_notes(trace)


#: The op type of an ONNX node run by onnx's reference evaluator (`onnx.fallback`).
REFERENCE_OP = "onnx_reference"


def _reference_note(trace: Trace) -> tuple[str, ...]:
    """Which ops ran in onnx's reference evaluator (`from_onnx(fallback="reference")`): Python
    and NumPy, one shard, mostly holding the GIL, on the CPU, not parallelgraph's kernels."""
    ran = [e for e in trace.ops() if e.op_type == REFERENCE_OP]
    if not ran:
        return ()
    work = sum(e.work_ns for e in ran)
    share = work / max(trace.work_s() * 1e9, 1)
    names = ", ".join(sorted({e.name.rsplit("/", 1)[-1] for e in ran})[:4])
    return (
        f"{len(ran)} op(s) ({names}) ran in onnx's reference evaluator, not parallelgraph's "
        f"kernels: {work / 1e6:.2f} ms, {share:.0%} of the work (Python and NumPy, one shard, "
        "on the CPU).",
    )


def _jit_note(trace: Trace) -> tuple[str, ...] | None:
    """What Numba's compiler cost this run (the session recorded it: `kernels.jit_clock`)."""
    jit = trace.info.jit
    if jit is None:  # a trace from before the jit record
        return (FIRST_RUN_NOTE,) if trace.info.run == 0 else None
    busy, compiled = jit.busy_s, jit.compiled
    if busy <= JIT_NOTE_SHARE * max(trace.makespan_s, 1e-9):
        return None
    if compiled:
        what = (
            f"{compiled} kernel(s) compiled in {jit.compile_s:.2f} s, their "
            "first use with these types on this machine (Numba caches them: the next process "
            "loads them in milliseconds)"
        )
    else:
        what = "kernels loaded from Numba's cache, once per process and argument types"
    return (
        f"Numba's compiler held this run up for {busy * 1e3:.0f} ms of its "
        f"{trace.makespan_ms:.0f} ms ({what}); the op times include it: run once more for the "
        "steady state.",
    )


def _plan_notes(trace: Trace) -> tuple[str, ...]:
    notes = plan_notes(trace.info.notes or ())
    moved = [n for n in notes if n.kind is NoteKind.SOFT_PLACEMENT]
    # Ours: every plan note but the per-op soft-placement ones (summed up below); another
    # tool's: what its reader noted.
    out = [str(n) for n in notes if n.kind is not NoteKind.SOFT_PLACEMENT]
    if moved:
        devices = sorted({str(n.device) for n in moved if n.device is not None})
        out.append(
            f"Soft placement: {len(moved)} op(s) placed on {', '.join(devices)} ran on cpu:0 "
            "because that device was not usable."
        )
    return tuple(out)


def gpu_notes(pairs: tuple[PairReport, ...], gpu_busy: float | None) -> tuple[str, ...]:
    if gpu_busy is None or not any(pair.overlapped for pair in pairs):
        return ()
    return (
        "On a GPU, kernels that overlap share its multiprocessors: overlap shows they ran at "
        "once, not that the run got shorter — compare the makespan with streams=1 "
        "(pg.plot.compare) to see what the streams bought.",
    )
