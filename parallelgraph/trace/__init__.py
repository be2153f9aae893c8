"""Traces: the model of what ran where and when, and everything read from it.

A trace is the hand-off between the stages: executors (or an imported profiler file) produce it,
and analysis, explain(), the replay, the plots and the exporters only read it.

- `events`: `TraceEvent`, `EventKind`, `EventRole` and the executors' record tuples;
  `records`: a run's records into events; `nesting`: nesting and work intervals;
  `model`: `Trace`, which holds them (and re-exports them).
- `lanes`: what a lane (a timeline row) is, parsed once from its name.
- `intervals`: half-open time intervals, the arithmetic every analysis is built from.
- `analysis`: work, the critical path, bounds, utilisation, idle gaps, dependencies.
- `branches`: scopes picked by pattern and how much they overlapped.
- `top_ops`, `memory`: the top-ops table and the memory profile.
- `cycles`, `replay`: a trace's dependency order and its what-if replay under other settings.
"""

from .model import (
    WORK,
    CopyRecord,
    EventKind,
    EventRole,
    StepRecord,
    Trace,
    TraceEvent,
    intersection_length,
    merge_intervals,
    nest,
)

__all__ = [
    "WORK",
    "CopyRecord",
    "EventKind",
    "EventRole",
    "StepRecord",
    "Trace",
    "TraceEvent",
    "intersection_length",
    "merge_intervals",
    "nest",
]
