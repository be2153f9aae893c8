"""How long a Gantt timeline takes to draw and save, by trace size.

    python benchmarks/plot_speed.py [--repeats N]

Builds synthetic traces of 10, 500 and 5,000 events on 6 lanes (3 inter-op workers running ops
of 4 scopes that depend on recent ops, 3 intra-op helpers running shards; a third of the ops also
have a shard nested on their own lane) and times `gantt(trace)` followed by `savefig` to an
in-memory PNG (dpi 100), plus the same with dependency arrows and to SVG. Medians of repeats,
all cases interleaved; the target is under 1 s for 5,000 events, PNG, no arrows.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import interleaved, median, spread, table

from parallelgraph.plot import gantt
from parallelgraph.trace import Trace, TraceEvent

SIZES = (10, 500, 5000)


def synthetic_trace(events: int, lanes: int = 6, seed: int = 0) -> Trace:
    """`events` events: ops on the first half of the lanes, shards on the others."""
    rng = random.Random(seed)
    ends = [0] * lanes
    made: list[TraceEvent] = []
    names: list[str] = []
    while len(made) < events:
        lane = rng.randrange(lanes)
        start = ends[lane] + rng.randint(2_000, 30_000)
        end = start + rng.randint(20_000, 600_000)
        ends[lane] = end
        scope = f"net{rng.randrange(4)}"
        if lane < lanes // 2:
            name = f"{scope}/op{len(names)}"
            inputs = tuple(rng.sample(names[-12:], min(2, len(names))))
            made.append(op_event(name, scope, f"inter-op/{lane}", start, end, inputs))
            names.append(name)
            if len(made) < events and rng.random() < 0.33:
                middle = (start + end) // 2
                made.append(shard_event(name, scope, f"inter-op/{lane}", start, middle))
        else:
            name = f"{scope}/op{rng.randrange(len(names) or 1)}"
            made.append(shard_event(name, scope, f"intra-op/{lane - lanes // 2}", start, end))
    made.sort(key=lambda e: (e.start, e.kind != "op"))
    return Trace(made, {"graph": f"synthetic-{events}"})


def op_event(name: str, scope: str, lane: str, start: int, end: int, inputs: tuple) -> TraceEvent:
    return TraceEvent(name, "matmul", scope, "cpu:0", "op", lane, start, end, inputs=inputs)


def shard_event(name: str, scope: str, lane: str, start: int, end: int) -> TraceEvent:
    return TraceEvent(name, "matmul", scope, "cpu:0", "shard", lane, start, end, shard=0)


def draw_and_save(trace: Trace, fmt: str, arrows: bool = False) -> None:
    figure = gantt(trace, arrows=arrows)
    figure.savefig(io.BytesIO(), format=fmt, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    traces = {size: synthetic_trace(size) for size in SIZES}
    cases = {}
    for size, trace in traces.items():
        cases[f"{size} png"] = lambda t=trace: draw_and_save(t, "png")
        cases[f"{size} png+arrows"] = lambda t=trace: draw_and_save(t, "png", arrows=True)
        cases[f"{size} svg"] = lambda t=trace: draw_and_save(t, "svg")
    times = interleaved(cases, args.repeats, warmup=1)
    rows = []
    for size in SIZES:
        row: list[object] = [size]
        for kind in ("png", "png+arrows", "svg"):
            values = times[f"{size} {kind}"]
            row += [f"{1000 * median(values):.0f}", spread(values)]
        rows.append(row)
    header = ["events", "PNG ms", "IQR", "PNG+arrows ms", "IQR", "SVG ms", "IQR"]
    print(table(header, rows))
    print(f"(gantt() + savefig at dpi 100; medians of {args.repeats} interleaved repeats)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
