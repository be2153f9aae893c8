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

    python benchmarks/fusion.py --kernel-paths [--repeats 201]

times the group kernel's two paths (`kernels.program`: a SIMD loop a tile, or element by
element) on the same program and operands, interleaved, at widths 1 to 8: the chain's 1,998
adds on one row and `activations`' nine ops on 64 rows, float32 and float64, planned as
`Config(fuse=True)` plans them. It is where `program.NARROW` comes from ("Narrow groups
element by element").
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_peers import CHAIN_OPS, MLP_SIZES, pg_graph

import parallelgraph as pg
from parallelgraph.dtypes import row_view_shape
from parallelgraph.experiments.measure import measure_interleaved
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES
from parallelgraph.experiments.stats import speedup_text
from parallelgraph.kernels import program
from parallelgraph.ops.fused_elementwise import _operands

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


def chain_of(columns: int, dtype: str) -> tuple[pg.Graph, pg.Tensor]:
    """The chain's adds on a 1 x `columns` value."""
    graph = pg.Graph(f"chain-1x{columns}")
    with graph.as_default():
        x = pg.random_normal((1, columns), seed=0, dtype=dtype)
        one = pg.constant(np.ones((1, columns), dtype))
        for _ in range(CHAIN_OPS - 2):
            x = pg.add(x, one)
    return graph, x


def kernel_paths(repeats: int) -> None:
    """Both paths of the group kernel, interleaved call by call, on one fused step each."""
    print("| group | dtype | shape | tile loops us | element by element us | elements/tiles |")
    print("|---|---|---|---|---|---|")
    for name in ("chain", "activations"):
        for dtype in ("float32", "float64"):
            for columns in (1, 2, 3, 4, 8):
                graph, out = (
                    chain_of(columns, dtype) if name == "chain" else activations(64, columns)
                )
                with pg.Session(graph, pg.Config(fuse=True)) as session:
                    (step,) = [
                        s for s in session.plan_for(out).steps if s.op.type == "fused_elementwise"
                    ]
                    args = [session.run(t) for t in step.op.inputs]
                if name == "activations" and dtype == "float64":
                    args = [a.astype(dtype) for a in args]
                rows, width = row_view_shape(step.op.shape)
                operands = _operands(args, rows, width)
                code, registers = step.op.attrs["code"], step.op.attrs["registers"]
                paths = {"tiles": program._run_tiles, "elements": program._run_elements}
                outs = {path: np.empty((rows, width), args[0].dtype) for path in paths}
                times: dict[str, list[float]] = {path: [] for path in paths}
                for n in range(repeats + 3):
                    for path, kernel in paths.items():
                        start = time.perf_counter()
                        kernel(code, registers, operands, outs[path], 0, rows)
                        if n >= 3:
                            times[path].append((time.perf_counter() - start) * 1e6)
                assert outs["tiles"].tobytes() == outs["elements"].tobytes(), (name, columns)
                tiles, elements = (float(np.median(times[p])) for p in paths)
                group = f"{name} ({len(code)} instructions)"
                print(
                    f"| {group} | {dtype} | {rows}x{width} | {tiles:.2f} | {elements:.2f} "
                    f"| {elements / tiles:.2f} |",
                    flush=True,
                )


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
    parser.add_argument("--kernel-paths", action="store_true", help="the group kernel's paths")
    args = parser.parse_args()
    if args.kernel_paths:
        kernel_paths(args.repeats)
        return
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
