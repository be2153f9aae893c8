"""Facts from a trace file's raw events, with a few lines of the tests' own: the reference that
parallelgraph's reader is checked against (tests/test_real_*.py, generated_traces). Nothing here
imports parallelgraph: spans are (ts, ts + dur) in the file's µs, unions and overlaps are plain
interval arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]


def span(event: dict) -> tuple[float, float]:
    """(start, end) of a complete event, in the file's µs."""
    return (event["ts"], event["ts"] + event.get("dur", 0))


def union(spans) -> list[tuple[float, float]]:
    """The union of [start, end) spans, as sorted disjoint spans."""
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def length(spans) -> float:
    """Total length of disjoint spans."""
    return sum(e - s for s, e in spans)


def overlap(a, b) -> float:
    """The share of the shorter side's busy time during which the other was busy too."""
    a, b = union(a), union(b)
    both = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)
    return both / min(length(a), length(b))
