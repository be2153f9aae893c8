"""Repeated, traced runs of one session: the measurement the CLI, the demo and benchmarks share."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from .session import Session
from .trace import Trace


@dataclass(frozen=True)
class Measurement:
    """Every repeat's trace and wall time (the warm-up runs are not kept)."""

    traces: tuple[Trace, ...]
    wall_ms: tuple[float, ...]

    @property
    def makespans_ms(self) -> list[float]:
        return [trace.makespan_ms for trace in self.traces]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.makespans_ms)

    def quartiles_ms(self) -> tuple[float, float]:
        """The first and third quartiles of the makespans (the middle half of the runs)."""
        values = self.makespans_ms
        if len(values) < 2:
            return values[0], values[0]
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return q1, q3

    @property
    def median_wall_ms(self) -> float:
        return statistics.median(self.wall_ms)

    def median_trace(self) -> Trace:
        """The trace whose makespan is the median (the lower one for an even count)."""
        ordered = sorted(self.traces, key=lambda t: t.makespan_ms)
        return ordered[(len(ordered) - 1) // 2]

    def median_overlap(self, scope_a: str, scope_b: str) -> float:
        return statistics.median(t.overlap(scope_a, scope_b) for t in self.traces)


def measure(session: Session, fetch: Any, repeats: int = 5, warmup: int = 1) -> Measurement:
    """Run `fetch` `warmup` times untimed, then `repeats` times traced."""
    return measure_interleaved({"": session}, fetch, repeats, warmup)[""]


def measure_interleaved(
    sessions: dict[str, Session], fetch: Any, repeats: int = 5, warmup: int = 1
) -> dict[str, Measurement]:
    """Measure several sessions round-robin: repeat r of every session runs before repeat
    r + 1 of any, so a machine that slows down or speeds up during the measurement affects
    every session alike instead of biasing whichever ran last."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    for session in sessions.values():
        for _ in range(warmup):
            session.run(fetch)
    traces: dict[str, list[Trace]] = {name: [] for name in sessions}
    walls: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(repeats):
        for name, session in sessions.items():
            start = time.perf_counter()
            _, trace = session.run(fetch, trace=True)
            walls[name].append((time.perf_counter() - start) * 1e3)
            traces[name].append(trace)
    return {name: Measurement(tuple(traces[name]), tuple(walls[name])) for name in sessions}
