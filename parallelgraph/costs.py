"""Cost-model thresholds that more than one stage reads.

A leaf module: the planner decides with these, and explain() words its causes with the same
numbers, without explain (or trace analysis) importing the planner and with it the op registry.
"""

from __future__ import annotations

#: A CPU step estimated under this is inexpensive: the worker that makes it ready runs it, and
#: no other worker is woken for it (as TensorFlow's executor runs inexpensive ops inline). An
#: op that small is mostly Python, which holds the GIL: a second thread cannot run it at the
#: same time, and waking one costs more than the op (benchmarks/RESULTS.md, tiny ops).
INEXPENSIVE_NS = 20_000

__all__ = ["INEXPENSIVE_NS"]
