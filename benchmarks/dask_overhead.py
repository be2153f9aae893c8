"""The dask executor: per-task overhead, and the two-network graph on two worker processes.

    python benchmarks/dask_overhead.py [--quick]

1. Per-task overhead: graphs of tiny ops (1x1 float32 adds in a chain; a fan-in tree of relu
   leaves and adds) run by `Config(executor="dask")` and by plain `dask.delayed` on the *same*
   LocalCluster (2 worker processes, 1 thread each), the delayed tasks calling the very same
   kernels (prepare/compute/finish of each op) with no parallelgraph machinery around them. The
   threads executor on the same graph shows what staying in one process costs. *ms/task* is the
   wall time of a run divided by the number of ops. parallelgraph runs each chain of ops as one
   Dask task (a 200-op chain is one task); "unfused" makes every op its own task, like delayed.
2. The two-network graph (medium: 512x1024 @ 1024x1024, twice, summed) on those 2 worker
   processes, Dask placing the ops or each network pinned to its own worker
   (`pg.device("worker:N")`), each with chains fused (3 tasks) and unfused (9 tasks), against
   the threads executor with inter-op 1 and 2 (intra-op 1 everywhere), with and without
   tracing.

All cases of a table are measured interleaved in one run (after warm-up runs that load the
kernels in the workers and send the variables); tables show medians of repeats.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from _common import interleaved, median, spread, table
from core import chain_graph, fan_in_graph

import parallelgraph as pg
from parallelgraph.config import Config
from parallelgraph.executors import dask as dask_executor
from parallelgraph.executors.dask import OpSpec
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES, network


def plain_step(definition, op, shards, config, *args):
    """What a plain dask.delayed task does for one op: the op's kernels, nothing else."""
    work = definition.prepare(op, list(args), len(shards), config)
    for shard, (start, stop) in enumerate(shards):
        definition.compute(op, work, shard, start, stop)
    return definition.finish(op, work)


def delayed_graph(graph: pg.Graph, fetch: pg.Tensor):
    """The graph as dask.delayed objects over the same kernels (sources embedded)."""
    import dask

    sess = pg.Session(graph, Config(executor="sequential"))
    plan = sess.plan_for(fetch)
    sess.close()
    config = Config(intra_op_threads=1, inter_op_threads=1)
    nodes = {slot: op.attrs["value"] for slot, op in plan.sources}
    for step in plan.steps:
        args = [nodes[s] for s in step.input_slots]
        nodes[step.slot] = dask.delayed(plain_step, pure=False)(
            step.definition, OpSpec.of(step.op), step.shards, config, *args
        )
    return nodes[plan.fetch_slots[0]], len(plan.steps)


def overhead_table(client, ops: int, repeats: int) -> str:
    rows = []
    for label, (graph, fetch) in (("chain", chain_graph(ops)), ("fan-in", fan_in_graph(ops // 2))):
        delayed, n = delayed_graph(graph, fetch)
        sessions = {
            "parallelgraph dask, trace off": pg.Session(graph, dask_config(client)),
            "parallelgraph dask, unfused": dask_session(graph, client, fuse=False),
            "parallelgraph threads inter 2": pg.Session(
                graph, Config(inter_op_threads=2, intra_op_threads=1)
            ),
        }
        cases = {"dask.delayed (same kernels)": lambda d=delayed: client.compute(d, sync=True)}
        for name, sess in sessions.items():
            cases[name] = lambda s=sess, f=fetch: s.run(f)
        trace_case = sessions["parallelgraph dask, trace off"]
        cases["parallelgraph dask, trace on"] = lambda s=trace_case, f=fetch: s.run(f, trace=True)
        times = interleaved(cases, repeats, warmup=2)
        base = median(times["dask.delayed (same kernels)"])
        for name, values in times.items():
            rows.append(
                [
                    label,
                    n,
                    name,
                    f"{median(values) * 1e3 / n:.3f}",
                    f"{median(values) / base:.2f}",
                    spread(values),
                ]
            )
        for sess in sessions.values():
            sess.close()
    return table(["graph", "ops", "runner", "ms/task", "vs delayed", "IQR"], rows)


def two_networks(size: str, pinned: bool) -> tuple[pg.Graph, pg.Tensor]:
    """The seed graph; `pinned` puts net1 on worker:0 and net2 on worker:1."""
    batch, n_in, n_hidden, n_out = TWO_NETWORK_SIZES[size]
    g = pg.Graph(f"two-networks-{size}{'-pinned' if pinned else ''}")
    with g.as_default():
        results = []
        for index, name in enumerate(("net1", "net2")):
            with pg.device(f"worker:{index}" if pinned else None), pg.scope(name):
                results.append(network(batch, n_in, n_hidden, n_out, "float32", seed=index + 1))
        out = pg.add(*results, name="out")
    return g, out


def scale_out_table(client, size: str, repeats: int) -> str:
    plain, plain_out = two_networks(size, pinned=False)
    pinned, pinned_out = two_networks(size, pinned=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # worker:N on threads: soft placement
        sessions = {
            "threads inter 1": (pg.Session(plain, threads_config(1)), plain_out),
            "threads inter 2": (pg.Session(plain, threads_config(2)), plain_out),
            "dask, 2 workers, Dask places": (pg.Session(plain, dask_config(client)), plain_out),
            "dask, 2 workers, Dask places, unfused": (
                dask_session(plain, client, fuse=False),
                plain_out,
            ),
            "dask, 2 workers, net1/net2 pinned": (
                pg.Session(pinned, dask_config(client)),
                pinned_out,
            ),
            "dask, 2 workers, net1/net2 pinned, unfused": (
                dask_session(pinned, client, fuse=False),
                pinned_out,
            ),
        }
    cases = {}
    for name, (sess, fetch) in sessions.items():
        cases[name] = lambda s=sess, f=fetch: s.run(f)
        cases[name + ", traced"] = lambda s=sess, f=fetch: s.run(f, trace=True)
    times = interleaved(cases, repeats, warmup=2)
    overlaps = {}
    for name, (sess, fetch) in sessions.items():
        traces = [sess.run(fetch, trace=True)[1] for _ in range(3)]
        overlaps[name] = median([t.overlap("net1", "net2") for t in traces])
        sess.close()
    base = median(times["threads inter 2"])
    rows = []
    for name, values in times.items():
        session_name = name.removesuffix(", traced")
        rows.append(
            [
                name,
                f"{median(values) * 1e3:.1f}",
                spread(values),
                f"{base / median(values):.2f}",
                f"{overlaps[session_name]:.2f}",
            ]
        )
    header = ["runner", "median ms", "IQR", "speed vs threads inter 2", "net1/net2 overlap"]
    return table(header, rows)


def threads_config(inter: int) -> Config:
    return Config(inter_op_threads=inter, intra_op_threads=1)


def dask_config(client) -> Config:
    return Config(executor="dask", dask_client=client, intra_op_threads=1)


def dask_session(graph: pg.Graph, client, fuse: bool) -> pg.Session:
    """A dask session whose executor fuses chains of ops into one task each, or not."""
    dask_executor.FUSE_CHAINS = fuse
    try:
        return pg.Session(graph, dask_config(client))
    finally:
        dask_executor.FUSE_CHAINS = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller graphs")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    repeats = 5 if args.quick else 11
    ops = 100 if args.quick else 200
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        print(f"LocalCluster: 2 worker processes x 1 thread, {os.cpu_count()} cores\n")
        print(f"## Per-task overhead ({repeats} repeats)\n")
        print(overhead_table(client, ops, repeats))
        print(f"\n## Two networks (medium) on 2 worker processes ({repeats} repeats)\n")
        print(scale_out_table(client, "medium", repeats))


if __name__ == "__main__":
    main()
