"""What handing an op to another thread costs on this machine: measured once per process, for
decisions that change when things run, never what they compute.

The planner lets the thread that made an op ready run it, instead of waking another inter-op
worker, when the op is estimated to take less than the hand-off would (`costs.inexpensive_ns`,
`Plan.expensive`), as TensorFlow's executor runs inexpensive ops inline. A fixed 20 us was
wrong here: on a 2-core VM an op handed to the other worker started ~48 us after its input was
ready (~4 us on the same worker), and graphs of ~30 us ops ran 1.4-1.7x slower on two workers
than on one (benchmarks/RESULTS.md, "Hand-off calibration").

Why it never reaches shard boundaries: they depend on shapes only (DESIGN.md), and two processes
on one machine — a Dask worker and its client, two sessions a minute apart — would measure
different numbers, cut different shards and change a reduction's bits. The hand-off cost only
decides which thread runs a step and whether a sleeping worker is notified.

How: parallelgraph itself runs a small fan-out graph (one add releasing four, summed) at two
inter-op workers, with every op counted as worth a hand-off, traced, in 3 rounds of 6 runs; the
hand-off is the median time from a producer's end to the start of a consumer on another lane,
the least of the rounds' medians. So what is measured is what a run pays: the wake-up, the
scheduler's lock, the GIL and the dispatch. It
takes ~10-20 ms, once per process, when the first plan that could use two inter-op workers
asks. A thread wake-up alone (`Condition.notify` to running) measured ~19 us on that machine:
less than half. Not kept on disk: a number measured under another day's load would steer
today's runs. `PARALLELGRAPH_HANDOFF_US` pins it (the test suite pins it, to schedule alike on
every machine).
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import threading

__all__ = ["ENVIRONMENT_VARIABLE", "calibrating", "handoff_ns", "measure_handoff_ns"]

ENVIRONMENT_VARIABLE = "PARALLELGRAPH_HANDOFF_US"
#: A hand-off cost this high or higher says the measurement itself was starved (a core or more
#: taken by others while it ran); it is capped here so one bad sample cannot run everything on
#: one thread for the rest of the process.
MAX_HANDOFF_NS = 500_000
_state = threading.local()


def calibrating() -> bool:
    """True inside the measurement (its own plan must count every op as worth a hand-off)."""
    return getattr(_state, "active", False)


def measure_handoff_ns(rounds: int = 3, runs: int = 6) -> int:
    """The hand-off cost in ns: in each of `rounds`, the median gap from an op's end to the
    start of a consumer on another inter-op worker over `runs` traced runs of a fan-out graph
    (see the module docstring); the least of the rounds' medians, so that one round disturbed
    by something else (a garbage collection, a neighbour) does not set the bar for the whole
    process (single measurements here read 46-92 us, and now and then ~200)."""
    import numpy as np

    from .config import Config
    from .graph import Graph
    from .ops import add
    from .ops.sources import constant
    from .session import Session
    from .trace.analysis import input_wait

    graph = Graph("handoff-calibration")
    with graph.as_default():
        # Adds of ~0.1 ms: long enough that the woken worker always finds one left to take.
        x = constant(np.ones((384, 384), np.float32))
        first = add(x, x)
        branches = [add(first, x) for _ in range(4)]
        out = add(add(branches[0], branches[1]), add(branches[2], branches[3]))
    medians: list[float] = []
    _state.active = True
    try:
        with Session(graph, Config(inter_op_threads=2, intra_op_threads=1)) as session:
            session.run(out)
            for _ in range(rounds):
                delays = []
                for _ in range(runs):
                    _, trace = session.run(out, trace=True)
                    delays += input_wait(trace, trace.ops(), across_lanes=True)
                if delays:
                    medians.append(statistics.median(delays))
    finally:
        _state.active = False
    return min(MAX_HANDOFF_NS, int(min(medians))) if medians else 0


@functools.cache
def handoff_ns() -> int:
    """This process's measured hand-off cost (ns), or `PARALLELGRAPH_HANDOFF_US` if set."""
    pinned = os.environ.get(ENVIRONMENT_VARIABLE)
    if pinned:
        try:
            value = float(pinned)
        except ValueError:
            value = -1.0
        if not 0 <= value < math.inf:  # "abc", "-1", "nan", "inf", "1e309" (inf as a float)
            raise ValueError(
                f"{ENVIRONMENT_VARIABLE}={pinned!r}: give the hand-off cost in microseconds, "
                "a finite number >= 0 (for example 20)"
            )
        return int(value * 1000)
    return measure_handoff_ns()
