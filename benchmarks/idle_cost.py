"""What a call costs right after the process was idle, against the same call back to back.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/idle_cost.py
        [--idle-ms 10] [--repeats 101]

`benchmarks/vs_peers.py` times each framework's run right after the others' runs, so every
run starts with its process idle for a while. On this VM that alone makes a short call many
times slower, whatever the library: this script measures by how much, for an empty Python
function, a 1x1 NumPy add, a 1x1 Numba kernel call, and parallelgraph runs (a two-add graph,
the chain of 2,000 adds fused, the seed graph at small). Each call is timed back to back ("hot":
straight after three calls) and after `--idle-ms` of `time.sleep` ("after idle"), the two
modes alternating call by call, medians of `--repeats`. Results: benchmarks/RESULTS.md,
"A run after the process was idle".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import table
from vs_peers import CHAIN_OPS, pg_graph

import parallelgraph as pg
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES


@njit(nogil=True, cache=True)
def _add_one(a, out):
    out[0, 0] = a[0, 0] + 1


def cases(sessions_to_close: contextlib.ExitStack) -> dict[str, Callable[[], object]]:
    """name: a call, ready (compiled, planned and run once); sessions go on the stack."""
    one = np.ones((1, 1), np.float32)
    out = np.empty_like(one)

    def nothing() -> None:
        pass

    graph = pg.Graph("two adds")
    with graph.as_default():
        constant = pg.constant(one)
        two_adds = pg.add(pg.add(constant, constant), constant)
    runs: dict[str, Callable[[], object]] = {
        "an empty Python function": nothing,
        "np.add on 1x1": lambda: np.add(one, one),
        "a Numba kernel on 1x1": lambda: _add_one(one, out),
    }
    small = list(TWO_NETWORK_SIZES["small"])
    sessions = {
        "pg: two adds on 1x1, 1/1": (graph, two_adds, False),
        "pg: chain of 2,000 adds, fused, 1/1": (*pg_graph(pg, "chain", [CHAIN_OPS]), True),
        "pg: seed graph small, 1/1": (*pg_graph(pg, "seed", small), False),
    }
    for name, (graph, fetch, fuse) in sessions.items():
        config = pg.Config(inter_op_threads=1, intra_op_threads=1, fuse=fuse)
        session = sessions_to_close.enter_context(pg.Session(graph, config))
        runs[name] = lambda session=session, fetch=fetch: session.run(fetch)
    for run in runs.values():
        for _ in range(20):
            run()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle-ms", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=101)
    args = parser.parse_args()
    rows = []
    with contextlib.ExitStack() as sessions:
        calls = cases(sessions)
        for name, call in calls.items():
            rows.append([name, *idle_and_hot(call, args.idle_ms, args.repeats)])
    header = ["call", "hot us", f"after {args.idle_ms:g} ms idle us", "added us", "ratio"]
    print(table(header, rows))


def idle_and_hot(call: Callable[[], object], idle_ms: float, repeats: int) -> list[str]:
    """The table cells of one call: its median hot and after `idle_ms` of sleep (the two
    alternating), the difference and the ratio."""
    times: dict[str, list[float]] = {"hot": [], "idle": []}
    for _ in range(repeats):
        for mode in times:
            if mode == "idle":
                time.sleep(idle_ms / 1e3)
            else:  # three calls before: this one starts straight after them
                for _ in range(3):
                    call()
            start = time.perf_counter()
            call()
            times[mode].append(time.perf_counter() - start)
    hot, idle = (statistics.median(times[mode]) * 1e6 for mode in times)
    return [f"{hot:.1f}", f"{idle:.1f}", f"{idle - hot:.0f}", f"{idle / hot:.1f}"]


if __name__ == "__main__":
    main()
