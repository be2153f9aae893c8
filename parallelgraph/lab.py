"""The notebooks' toolbox: what the teaching notebooks use besides `pg.*`, public and in one place.

    from parallelgraph.lab import measure_interleaved, speedup_text, LoadMonitor, load_note

Measure settings against each other honestly (the notebooks' pattern):

- `measure_interleaved(sessions, fetch, repeats=25)`: run several sessions of one graph in
  interleaved rounds (run 1 of each, then run 2 of each...), so a machine that gets busier slows
  them alike; each `Measurement` has `.makespans_ms`, `.median_ms`, `.quartiles_ms()` and its
  traces (`.median_trace()`).
- `speedup(before_ms, after_ms)` / `speedup_text(...)`: the ratio of the medians with its 95%
  bootstrap interval and the verdict ("faster" only when the interval excludes 1.0) — the one rule
  every screen of parallelgraph uses; `Speedup` is its record, `fastest_text` names the fastest of
  several, `median` is the median.
- `LoadMonitor()` (a context manager) records what else used the CPUs meanwhile; `load_note(load,
  threads_used)` is the line to show (busy, or too short to tell), `busy_note` the busy sentence
  alone, `MIN_WALL_S` how long a measurement must last for the check to judge.

And the facts the notebooks read about the machine and the graph: `cpu_count()`,
`gpu_available()` and `simulated()` (numba.cuda, or its simulator), `wide(...)` (the many-branch
preset), `build_plan(graph, fetches, ...)` (the plan a Session would run), `branch_level(scopes)`
(the scopes explain() compares), `merge` and `length` of time intervals.

Each name is the function of the module that owns it (listed in `SOURCES`), so help() shows its
real signature; importing this module loads them (numpy, not Numba or matplotlib).
"""

from __future__ import annotations

from .config import cpu_count
from .executors.cuda import gpu_available, simulated
from .experiments.machine_load import MIN_WALL_S, LoadMonitor, busy_note, load_note
from .experiments.measure import Measurement, measure_interleaved
from .experiments.presets import wide
from .experiments.stats import Speedup, fastest_text, median, speedup, speedup_text
from .plan import build_plan
from .scopes import branch_level
from .trace.intervals import length, merge

#: Where each name lives (for readers who want the whole module).
SOURCES = {
    "parallelgraph.experiments.measure": ("measure_interleaved", "Measurement"),
    "parallelgraph.experiments.stats": ("speedup", "speedup_text", "Speedup", "fastest_text",
                                        "median"),
    "parallelgraph.experiments.machine_load": ("LoadMonitor", "load_note", "busy_note",
                                               "MIN_WALL_S"),
    "parallelgraph.config": ("cpu_count",),
    "parallelgraph.executors.cuda": ("gpu_available", "simulated"),
    "parallelgraph.experiments.presets": ("wide",),
    "parallelgraph.plan": ("build_plan",),
    "parallelgraph.scopes": ("branch_level",),
    "parallelgraph.trace.intervals": ("length", "merge"),
}  # fmt: skip

__all__ = [
    "MIN_WALL_S",
    "LoadMonitor",
    "Measurement",
    "Speedup",
    "branch_level",
    "build_plan",
    "busy_note",
    "cpu_count",
    "fastest_text",
    "gpu_available",
    "length",
    "load_note",
    "measure_interleaved",
    "median",
    "merge",
    "simulated",
    "speedup",
    "speedup_text",
    "wide",
]
