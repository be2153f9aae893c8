"""Fusion (`Config(fuse=True)`) against unfused, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/fusion.py
        [--workloads seed,mlp,chain,activations] [--sizes medium,large] [--repeats 15]

The workloads seed, mlp and chain are `benchmarks/vs_peers.py`'s (the seed graph: matmul -> add
bias -> matmul; the MLP: tanh(x @ w1 + b1) then relu(. @ w2 + b2), three branches; a chain of
2,000 tiny adds), so what fusion covers there is matmul+add, matmul+add+tanh / +relu and a
group of 1,999 adds. `activations` is elementwise only, one group of nine ops on a
random_normal: relu(tanh(x * sigmoid(x) + b)) + exp(x * -0.5) * 0.25 (sizes as the MLP's
batch x hidden; chain has no size). For each workload, size and inter/intra setting in
{1, 2}^2 a session with fuse on and one with it off are measured interleaved
(`measure_interleaved`: `--repeats` rounds after 2 warm-ups), with the package's one speed-up
rule (median ratio with its bootstrap 95% CI and verdict). Issue 24, item 5. Results:
benchmarks/RESULTS.md, "Fused epilogues".
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_peers import CHAIN_OPS, MLP_SIZES, pg_graph

import parallelgraph as pg
from parallelgraph.experiments.measure import measure_interleaved
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES
from parallelgraph.experiments.stats import speedup_text

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]
SIZES = {"seed": TWO_NETWORK_SIZES, "mlp": MLP_SIZES, "activations": MLP_SIZES}


def activations(rows: int, columns: int) -> tuple[pg.Graph, pg.Tensor]:
    """Nine elementwise ops on one random_normal: one fused group."""
    graph = pg.Graph(f"activations-{rows}x{columns}")
    with graph.as_default():
        x = pg.random_normal((rows, columns), seed=1)
        bias = pg.variable((columns,), name="b", init=np.linspace(-1, 1, columns, dtype="f4"))
        swish = x * pg.sigmoid(x)
        out = pg.relu(pg.tanh(swish + bias)) + pg.exp(x * -0.5) * 0.25
    return graph, out


def build(workload: str, size: str) -> tuple[pg.Graph, pg.Tensor]:
    if workload == "activations":
        return activations(*SIZES[workload][size])
    if workload == "chain":
        return pg_graph(pg, "chain", [CHAIN_OPS])
    return pg_graph(pg, workload, list(SIZES[workload][size]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="seed,mlp")
    parser.add_argument("--sizes", default="medium,large")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print("| workload | size | inter/intra | unfused ms | fused ms | fused against unfused |")
    print("|---|---|---|---|---|---|")
    for workload in args.workloads.split(","):
        for size in ["-"] if workload == "chain" else args.sizes.split(","):
            graph, out = build(workload, size)
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
