"""How every analysis of a trace grows with its events: load, explain, simulate, top_ops,
memory and plot, timed on generated traces from max-events / 2**(rows - 1) up to max-events
events, each twice the one before.

    python benchmarks/analysis_scaling.py [--max-events 1000000] [--rows 7] [--repeats 1]

The traces and the steps are the tests' (`tests/generated_traces.py: scaling_events`,
`tests/doubling.py: STEPS`), so what tests/test_analysis_scaling.py asserts at 20,000 events
is what this prints at a million. One row per size: seconds per step (the best of the
repeats, the garbage collector on, as users run them) and the ratio to the size before,
timed again in turns with this one; linear time gives about 2.0, and a ratio over
`MAX_RATIO` is marked "!". Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import doubling  # tests/doubling.py

#: A step whose time grew more than this when the events doubled is marked "!".
MAX_RATIO = 2.5


def table(max_events: int, rows: int, repeats: int) -> list[tuple[int, dict[str, float]]]:
    """Every step timed at each size; prints the table as it goes and returns
    (events, {step: seconds}) per row. Each row's steps are timed in turns with the row
    before's (`doubling.in_turns`), whose trace is kept until then: the ratio compares times
    taken in the same minutes of a shared machine."""
    names = list(doubling.STEPS)
    print(f"| events | {' | '.join(f'{name} s | x' for name in names)} |")
    print("|---" * (1 + 2 * len(names)) + "|", flush=True)
    measured: list[tuple[int, dict[str, float]]] = []
    before: dict[str, Callable[[], object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for row in range(rows):
            count, calls = doubling.prepared(Path(folder), max_events >> (rows - 1 - row))
            seconds, cells = {}, []
            for name in names:
                if before:
                    earlier, seconds[name] = doubling.in_turns(before[name], calls[name], repeats)
                    ratio = seconds[name] / earlier
                    mark = f"{ratio:.2f}" + ("!" if ratio > MAX_RATIO else "")
                else:
                    seconds[name], mark = doubling.best_seconds(calls[name], repeats), ""
                cells.append(f"{seconds[name]:.3f} | {mark}")
            print(f"| {count:,} | {' | '.join(cells)} |", flush=True)
            measured.append((count, seconds))
            before = calls  # timed again with the next row; the row before it is let go
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-events", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    table(args.max_events, args.rows, args.repeats)


if __name__ == "__main__":
    main()
