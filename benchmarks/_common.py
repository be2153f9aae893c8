"""Helpers for the benchmark scripts: interleaved repeats, medians, tables."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved(
    cases: dict[str, Callable[[], object]], repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Time every case `repeats` times, round-robin (so drift hits all alike); seconds."""
    for case in cases.values():
        for _ in range(warmup):
            case()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """The interquartile range as a percentage of the median."""
    if len(values) < 4:
        return "-"
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"{100 * (q3 - q1) / statistics.median(values):.0f}%"


def table(header: list[str], rows: list[list[object]]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
