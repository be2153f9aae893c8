"""Cost-model thresholds that more than one stage reads.

A leaf module: the planner decides with these, and explain() words its causes with the same
numbers, without explain (or trace analysis) importing the planner and with it the op registry.
"""

from __future__ import annotations

import math

from . import calibration

#: The least a CPU step must be estimated at to be worth handing to another worker; the bar
#: itself is `inexpensive_ns()`, the measured hand-off cost when that is higher. An op below it
#: is mostly Python, which holds the GIL: a second thread cannot run it at the same time, and
#: waking one costs more than the op (benchmarks/RESULTS.md, tiny ops).
INEXPENSIVE_NS = 20_000

__all__ = ["INEXPENSIVE_NS", "inexpensive_ns"]


def inexpensive_ns() -> int:
    """A CPU step estimated under this is inexpensive: the worker that makes it ready runs it,
    and no other worker is woken for it (as TensorFlow's executor runs inexpensive ops inline).
    It is what handing an op to another thread costs here (`calibration.handoff_ns`, measured
    once per process), rounded to a power of two microseconds, and at least `INEXPENSIVE_NS`;
    0 inside that measurement itself.

    Why rounded: one process measures 56 us and the next 83 on the same machine; an op the
    planner estimates at 59 or 85 us would then be handed off in one and not in the other, and
    two runs of one program would schedule differently. Rounded (64 us for anything from 45 to
    90), the same machine gives the same bar."""
    if calibration.calibrating():
        return 0
    measured = calibration.handoff_ns()
    rounded = 1000 * 2 ** round(math.log2(measured / 1000)) if measured >= 1000 else 0
    return max(INEXPENSIVE_NS, int(rounded))
