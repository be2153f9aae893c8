"""Every analysis of a trace timed on generated traces as their events double: what
tests/test_analysis_scaling.py asserts (the growth ratios at a few thousand events) and
benchmarks/analysis_scaling.py prints (up to a million events).

The traces are `generated_traces.scaling_events(count)`, written as trace-event JSON; each
analysis (`STEPS`) is a function of the file and its loaded Trace that returns the call to
time. Each call is timed alone and the best of a few runs kept: what the work takes when
nothing else on the machine got in its way; two sizes are timed in turns (`in_turns`).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from pathlib import Path

from generated_traces import scaling_events

import parallelgraph as pg


def fresh(trace: pg.Trace) -> pg.Trace:
    """A new Trace of the same events: nothing a step computed on `trace` is kept for the next
    run (the lanes' work layout, the start and end are computed again)."""
    return pg.Trace(trace.events, trace.metadata, nested=True)


def _plot(trace: pg.Trace) -> None:
    figure = fresh(trace).plot(arrows=True, memory=True)  # an Agg canvas, never shown
    figure.canvas.draw()  # the labels are placed at draw time


#: name -> (file, its loaded Trace) -> the call to time.
STEPS: dict[str, Callable[[Path, pg.Trace], Callable[[], object]]] = {
    "load": lambda path, trace: lambda: pg.Trace.load(path).events,
    "explain": lambda path, trace: lambda: str(fresh(trace).explain()),
    "simulate": lambda path, trace: (
        lambda: (
            pg.simulate(
                fresh(trace), pg.Config(inter_op_threads=2, intra_op_threads=1), cores=2
            ).events
        )
    ),
    "top_ops": lambda path, trace: lambda: str(fresh(trace).top_ops()),
    "memory": lambda path, trace: lambda: str(fresh(trace).memory()),
    "plot": lambda path, trace: lambda: _plot(trace),
}


def write_trace(path: Path, count: int) -> int:
    """`scaling_events(count)` as a JSON file at `path`; returns how many events it holds."""
    events = scaling_events(count)
    path.write_text(json.dumps(events))
    return len(events)


def best_seconds(call: Callable[[], object], repeats: int, collector: bool = True) -> float:
    """The shortest of `repeats` runs of `call`, in seconds. `collector=False`: each run after
    a full collection, with the cyclic garbage collector paused, so that the time is the
    analysis's alone. At a few thousand events one more of the collector's full passes
    (each over every tracked object in the process) in the larger run made linear steps grow
    3x when the events doubled; over many calls the passes cost time in proportion to the
    objects made, and the benchmark keeps them."""
    times = []
    for _ in range(repeats):
        if not collector:
            gc.collect()
            gc.disable()
        try:
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        finally:
            if not collector:
                gc.enable()
    return min(times)


def in_turns(
    small: Callable[[], object], large: Callable[[], object], turns: int, collector: bool = True
) -> tuple[float, float]:
    """The best seconds of each of two calls (`best_seconds`) over `turns` turns of one run of
    each, so that a spell when the machine was busy with other work slows both: their ratio
    is what a doubling measures, far steadier than either time."""
    best_small = best_large = float("inf")
    for _ in range(turns):
        best_small = min(best_small, best_seconds(small, 1, collector))
        best_large = min(best_large, best_seconds(large, 1, collector))
    return best_small, best_large


def prepared(folder: Path, count: int) -> tuple[int, dict[str, Callable[[], object]]]:
    """A trace of about `count` events written in `folder`: how many events it holds, and the
    call of every step on it."""
    path = folder / f"scaling-{count}.json"
    events = write_trace(path, count)
    trace = pg.Trace.load(path)
    return events, {name: step(path, trace) for name, step in STEPS.items()}
