"""Fused epilogues (`Config(fuse=True)`) against unfused, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/fusion.py
        [--workloads seed,mlp] [--sizes medium,large] [--repeats 15]

The workloads are `benchmarks/vs_peers.py`'s (the seed graph: matmul -> add bias -> matmul; the
MLP: tanh(x @ w1 + b1) then relu(. @ w2 + b2), three branches), so what fusion covers there is
matmul+add and matmul+add+tanh / +relu. For each workload, size and inter/intra setting in
{1, 2}^2 a session with fuse on and one with it off are measured interleaved
(`measure_interleaved`: `--repeats` rounds after 2 warm-ups), with the package's one speed-up
rule (median ratio with its bootstrap 95% CI and verdict). Issue 24, item 5. Results:
benchmarks/RESULTS.md, "Fused epilogues".
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_peers import MLP_SIZES, pg_graph

import parallelgraph as pg
from parallelgraph.experiments.measure import measure_interleaved
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES
from parallelgraph.experiments.stats import speedup_text

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]
SIZES = {"seed": TWO_NETWORK_SIZES, "mlp": MLP_SIZES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="seed,mlp")
    parser.add_argument("--sizes", default="medium,large")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print("| workload | size | inter/intra | unfused ms | fused ms | fused against unfused |")
    print("|---|---|---|---|---|---|")
    for workload in args.workloads.split(","):
        for size in args.sizes.split(","):
            graph, out = pg_graph(pg, workload, list(SIZES[workload][size]))
            for inter, intra in SETTINGS:
                sessions = {
                    fuse: pg.Session(
                        graph,
                        pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse),
                    )
                    for fuse in (False, True)
                }
                try:
                    runs = measure_interleaved(sessions, out, repeats=args.repeats, warmup=2)
                finally:
                    for session in sessions.values():
                        session.close()
                unfused, fused = runs[False], runs[True]
                against = speedup_text(unfused.makespans_ms, fused.makespans_ms)
                print(
                    f"| {workload} | {size} | {inter}/{intra} | {unfused.median_ms:.2f} "
                    f"| {fused.median_ms:.2f} | {against} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
