"""Inter-op and intra-op threads sharing the cores: is 2/2 as fast as the better of 2/1 and 1/2?

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/shared_cores.py [SIZE]

The seed graph (two networks) at one SIZE (small, medium or large), the four settings
inter/intra in {1, 2}^2 measured interleaved (15 rounds after 2 warm-ups), each setting's median
and its speed-up against 1/1 by the package's one rule, then 2/2 against the better of 2/1 and 1/2
(issue 24, item 3: "2/2 is never slower than the better of 2/1 and 1/2"). Results:
benchmarks/RESULTS.md, "Shared cores".
"""

from __future__ import annotations

import sys

import parallelgraph as pg
from parallelgraph.experiments.measure import measure_interleaved
from parallelgraph.experiments.presets import two_networks
from parallelgraph.experiments.stats import speedup_text

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def main(size: str) -> None:
    preset = two_networks(size)
    sessions = {
        setting: pg.Session(
            preset.graph, pg.Config(inter_op_threads=setting[0], intra_op_threads=setting[1])
        )
        for setting in SETTINGS
    }
    try:
        runs = measure_interleaved(sessions, preset.fetch, repeats=15, warmup=2)
    finally:
        for session in sessions.values():
            session.close()
    base = runs[(1, 1)].makespans_ms
    for setting in SETTINGS:
        run = runs[setting]
        against = speedup_text(base, run.makespans_ms)
        print(f"{size} inter {setting[0]} / intra {setting[1]}: {run.median_ms:.2f} ms, {against}")
    better = min((2, 1), (1, 2), key=lambda setting: runs[setting].median_ms)
    print(
        f"2/2 against the better of 2/1 and 1/2 ({better[0]}/{better[1]}): "
        + speedup_text(runs[better].makespans_ms, runs[(2, 2)].makespans_ms)
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "medium")
