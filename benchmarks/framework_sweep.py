"""What a framework sweep costs, and whether its answer is the one a long measurement finds.

    python benchmarks/framework_sweep.py [--quick] [--frameworks numpy,onnxruntime,pytorch,...]

1. **Worker start**: from `Worker(...)` to the reply of "setup" (framework imported, knobs
   set, the example build run, no warm-up), per framework; median of a few starts.
2. **Per-step overhead**: the example step's time as the worker measures it (perf_counter_ns
   around step(), in the worker's loop) against the same step in a bare loop
   (`for _: step()` timed as a whole, divided by the count) in the same worker process, and
   the round trip a measurement costs on top (not inside the measured time). Steps of two
   sizes: an empty step (the machinery alone) and the example graph.
3. **Does the sweep find the best setting?** `pg.sweep` with its default 10 repeats against an
   exhaustive measurement (EXHAUSTIVE repeats per setting, interleaved): the best setting of
   each, and whether the sweep's verdict on it agrees.

Frameworks that are not installed are skipped with a line saying so; this machine's numbers
are in benchmarks/RESULTS.md with the command.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import table

import parallelgraph as pg
from parallelgraph.frameworks import framework
from parallelgraph.frameworks.examples import BUILDS
from parallelgraph.frameworks.pool import Workers
from parallelgraph.frameworks.sweep import Runner, pickled_build

MODULES = {"numpy": "numpy", "onnxruntime": "onnxruntime", "pytorch": "torch",
           "tensorflow": "tensorflow", "jax": "jax"}  # fmt: skip
GRIDS = {
    "numpy": {"inter": [1, 2], "intra": [1, 2]},
    "onnxruntime": {"intra": [1, 2], "inter": [1, 2]},
    "pytorch": {"inter": [1, 2], "intra": [1, 2]},
    "tensorflow": {"inter": [1, 2], "intra": [1, 2]},
    "jax": {"devices": [1, 2], "intra": [1, None]},
}
SHAPE = {"batch": 128, "width": 256}


def empty_build(setting):
    return lambda: None


def looped(inner, count):
    """A build whose step is `count` calls of `inner`'s step in a bare loop: one timed call of
    it, divided by `count`, is the bare loop's time per step."""

    def build(setting):
        step = inner(setting)

        def loop():
            for _ in range(count):
                step()

        return loop

    return build


def start_times(name: str, starts: int) -> list[float]:
    fw = framework(name)
    runner = Runner(fw, pickled_build(BUILDS[name]), warmup=0)
    times = []
    for _ in range(starts):
        with Workers() as workers:
            began = time.perf_counter()
            runner.start(workers, [dict(SHAPE)], fw.knobs.__contains__)
            times.append(time.perf_counter() - began)
    return times


def overhead(name: str, steps: int, rounds: int) -> list[list[object]]:
    """Rows: step, worker-timed us, bare-loop us, difference, round trip us. Two workers of the
    same framework, one timing each call of the step, one timing a bare loop of `steps` calls
    as one call; their rounds alternate."""
    fw = framework(name)
    rows = []
    for label, inner in (("empty step", empty_build), ("example graph", BUILDS[name])):
        timed_runner = Runner(fw, pickled_build(inner), warmup=3)
        bare_runner = Runner(fw, pickled_build(looped(inner, steps)), warmup=1)
        with Workers() as workers:
            ((timed_worker, _),) = timed_runner.start(workers, [dict(SHAPE)], fw.knobs.__contains__)
            ((bare_worker, _),) = bare_runner.start(workers, [dict(SHAPE)], fw.knobs.__contains__)
            timed, bare, trips = [], [], []
            for _ in range(rounds):
                began = time.perf_counter_ns()
                per_step = timed_worker.ask("time", steps=steps)
                trips.append((time.perf_counter_ns() - began - sum(per_step)) / 1e3)
                timed.append(statistics.mean(per_step) / 1e3)
                time.sleep(0.02)
                bare.append(bare_worker.ask("time", steps=1)[0] / steps / 1e3)
                time.sleep(0.02)
        timed_us, bare_us = statistics.median(timed), statistics.median(bare)
        rows.append([name, label, f"{timed_us:.2f}", f"{bare_us:.2f}",
                     f"{timed_us - bare_us:+.2f}", f"{statistics.median(trips):.0f}"])  # fmt: skip
    return rows


def best_of_sweep(name: str, repeats: int, exhaustive: int) -> list[list[object]]:
    grid = {**GRIDS[name], **{k: [v] for k, v in SHAPE.items()}}
    quick = pg.sweep(BUILDS[name], grid, framework=name, repeats=repeats, progress=False)
    long = pg.sweep(BUILDS[name], grid, framework=name, repeats=exhaustive, progress=False,
                    noise_check=False, seed=1)  # fmt: skip
    rows = []
    for label, result in (("sweep", quick), ("exhaustive", long)):
        best = min(result.rows(), key=lambda row: row.median_ms)
        knobs = {k: v for k, v in best.params.items() if result.is_knob(k)}
        rows.append([name, label, result.rows()[0].n, knobs, f"{best.median_ms:.3f}",
                     f"{best.speedup:.2f} ({best.speedup_ci[0]:.2f}-{best.speedup_ci[1]:.2f})",
                     best.verdict])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--frameworks", default=",".join(MODULES))
    args = parser.parse_args()
    steps = 50 if args.quick else 200
    starts, rounds = (2, 5) if args.quick else (5, 15)
    repeats, exhaustive = (5, 15) if args.quick else (10, 60)
    chosen = []
    for name in args.frameworks.split(","):
        if importlib.util.find_spec(MODULES[name]) is None:
            print(f"{name}: not installed here, skipped")
        else:
            chosen.append(name)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    rows = []
    for name in chosen:
        times = start_times(name, starts)
        rows.append([name, f"{statistics.median(times):.2f}", f"{min(times):.2f}", len(times)])
    print("\n1. Worker start (process, framework import, knobs, example build), seconds")
    print(table(["framework", "median s", "min s", "starts"], rows))
    print(f"\n2. Per-step overhead: median over {rounds} rounds of {steps} steps, microseconds")
    rows = [row for name in chosen for row in overhead(name, steps, rounds)]
    print(table(["framework", "step", "timed us", "bare loop us", "difference us",
                 "round trip us"], rows))  # fmt: skip
    print(f"\n3. Best setting: the sweep ({repeats} repeats) against {exhaustive} repeats")
    rows = [row for name in chosen for row in best_of_sweep(name, repeats, exhaustive)]
    print(table(["framework", "measured by", "runs", "best setting", "median ms",
                 "speed-up (95% CI)", "verdict"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
