"""Core engine benchmarks: dispatch overhead, inter-op scaling, intra-op scaling.

    python benchmarks/core.py [--quick]
    python benchmarks/core.py --processes 9    # the tiny-op cost only, in 9 fresh processes
    python benchmarks/core.py --run-overhead   # a run's fixed cost, with and without BLAS held

1. Dispatch overhead per op on graphs of ~2,000 tiny ops (a chain and a fan-in tree), with
   tracing on and off, against Dask's threaded scheduler and a plain ThreadPoolExecutor running
   the *same* step function on the same graph, and against a bare loop that calls the kernels in
   topological order with no scheduling at all (the floor).
2. Inter-op scaling: the two-network graph (medium), inter-op 2 vs 1, intra-op 1.
3. Intra-op scaling: one 2048x2048 float32 matmul, intra-op 2 vs 1, inter-op 1.

`--processes N` measures only the cost of a tiny op, traced (the chain and the fan-in, inter-op
1 and 2), in N fresh processes, one row each, with the time of a fixed pure-Python loop measured
between the runs: this VM's cores run Python up to 2x slower in some phases than in others
(other tenants), and that column says which phase a row was measured in.

All cases of a table are measured interleaved in one run; the tables show medians of repeats.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import interleaved, median, spread, table

import parallelgraph as pg
from parallelgraph.config import Config
from parallelgraph.executors.blas_threads import single_threaded_blas
from parallelgraph.experiments.presets import two_networks
from parallelgraph.plan import Plan, build_plan


def chain_graph(length: int) -> tuple[pg.Graph, pg.Tensor]:
    g = pg.Graph(f"chain-{length}")
    with g.as_default():
        x = pg.constant(np.ones((1, 1), np.float32))
        one = pg.constant(np.ones((1, 1), np.float32))
        for _ in range(length - 2):
            x = pg.add(x, one)
    return g, x


def fan_in_graph(leaves: int) -> tuple[pg.Graph, pg.Tensor]:
    g = pg.Graph(f"fan-in-{leaves}")
    with g.as_default():
        level = [pg.relu(pg.constant(np.full((1, 1), i, np.float32))) for i in range(leaves)]
        while len(level) > 1:
            level = [pg.add(a, b) for a, b in zip(level[::2], level[1::2])] + level[
                len(level) // 2 * 2 :
            ]
    return g, level[0]


# -- the same step function for every scheduler -------------------------------------------------
def step_function(step, config):
    definition, op, shards = step.definition, step.op, step.shards
    if step.whole is not None:  # the one-call path the executors take for one-shard steps
        whole = step.whole
        return lambda *args: whole(list(args))

    def run(*args):
        work = definition.prepare(op, list(args), len(shards), config)
        for shard, (start, stop) in enumerate(shards):
            definition.compute(op, work, shard, start, stop)
        return definition.finish(op, work)

    return run


def source_values(plan: Plan) -> dict[int, np.ndarray]:
    return {slot: op.attrs["value"] for slot, op in plan.sources}


def bare_loop(plan: Plan, config: Config):
    functions = [step_function(step, config) for step in plan.steps]

    def run():
        values = dict(source_values(plan))
        for step, function in zip(plan.steps, functions):
            values[step.slot] = function(*(values[s] for s in step.input_slots))
        return values

    return run


def dask_threaded(plan: Plan, config: Config, workers: int):
    import dask.threaded

    graph = {("v", slot): value for slot, value in source_values(plan).items()}
    for step in plan.steps:
        function = step_function(step, config)
        graph[("v", step.slot)] = (function, *[("v", s) for s in step.input_slots])
    target = ("v", plan.fetch_slots[0])
    pool = futures.ThreadPoolExecutor(workers)

    def run():
        return dask.threaded.get(graph, target, pool=pool)

    return run, pool


def thread_pool(plan: Plan, config: Config, workers: int):
    """A plain ThreadPoolExecutor driven by dependency counts from the calling thread."""
    functions = [step_function(step, config) for step in plan.steps]
    pool = futures.ThreadPoolExecutor(workers)

    def run():
        values = dict(source_values(plan))
        pending = list(plan.initial_pending)
        running = {}
        for index in plan.initial_ready:
            step = plan.steps[index]
            args = [values[s] for s in step.input_slots]
            running[pool.submit(functions[index], *args)] = index
        while running:
            done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                values[plan.steps[index].slot] = future.result()
                for consumer in plan.steps[index].consumers:
                    pending[consumer] -= 1
                    if pending[consumer] == 0:
                        step = plan.steps[consumer]
                        args = [values[s] for s in step.input_slots]
                        running[pool.submit(functions[consumer], *args)] = consumer
        return values

    return run, pool


def dispatch_table(ops: int, repeats: int) -> str:
    rows = []
    for label, (graph, fetch) in (("chain", chain_graph(ops)), ("fan-in", fan_in_graph(ops // 2))):
        config = Config(inter_op_threads=1, intra_op_threads=1)
        plan = build_plan(graph, [fetch.op], [], config)
        n = len(plan.steps)
        sessions = {
            "parallelgraph sequential": pg.Session(graph, Config(executor="sequential")),
            "parallelgraph threads inter 1": pg.Session(
                graph, Config(inter_op_threads=1, intra_op_threads=1)
            ),
            "parallelgraph threads inter 2": pg.Session(
                graph, Config(inter_op_threads=2, intra_op_threads=1)
            ),
        }
        cases = {"bare loop (no scheduler)": bare_loop(plan, config)}
        for name, sess in sessions.items():
            cases[name + ", trace off"] = lambda s=sess, f=fetch: s.run(f)
            cases[name + ", trace on"] = lambda s=sess, f=fetch: s.run(f, trace=True)
        pools = []
        for workers in (1, 2):
            run, pool = dask_threaded(plan, config, workers)
            cases[f"dask threaded scheduler, {workers} workers"] = run
            pools.append(pool)
            run, pool = thread_pool(plan, config, workers)
            cases[f"ThreadPoolExecutor, {workers} workers"] = run
            pools.append(pool)
        with single_threaded_blas():
            times = interleaved(cases, repeats, warmup=2)
        floor = median(times["bare loop (no scheduler)"]) / n
        for name, values in times.items():
            per_op = median(values) / n
            rows.append(
                [
                    label,
                    n,
                    name,
                    f"{per_op * 1e6:.2f}",
                    f"{(per_op - floor) * 1e6:.2f}",
                    spread(values),
                ]
            )
        for sess in sessions.values():
            sess.close()
        for pool in pools:
            pool.shutdown()
    return table(["graph", "ops", "scheduler", "us/op", "overhead us/op", "IQR"], rows)


def scaling_table(repeats: int) -> str:
    rows = []
    preset = two_networks("medium")
    g = pg.Graph("one-matmul")
    with g.as_default():
        a = pg.random_normal((2048, 2048), seed=1)
        b = pg.variable((2048, 2048), name="b")
        product = pg.matmul(a, b)
    # Time only the matmul: feed `a` so the random numbers are not part of the op under test.
    a_value = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    experiments = [
        (
            "inter-op, two-networks medium",
            preset.graph,
            preset.fetch,
            {},
            [("inter 1, intra 1", 1, 1), ("inter 2, intra 1", 2, 1)],
        ),
        (
            "intra-op, matmul 2048 float32 (blas)",
            g,
            product,
            {a: a_value},
            [("inter 1, intra 1", 1, 1), ("inter 1, intra 2", 1, 2)],
        ),
    ]
    for label, graph, fetch, feed, settings in experiments:
        sessions = {
            name: pg.Session(graph, Config(inter_op_threads=i, intra_op_threads=j))
            for name, i, j in settings
        }
        cases = {name: (lambda s=s, f=fetch, d=feed: s.run(f, d)) for name, s in sessions.items()}
        times = interleaved(cases, repeats, warmup=2)
        base = median(times[settings[0][0]])
        for name, values in times.items():
            rows.append(
                [
                    label,
                    name,
                    f"{median(values) * 1e3:.1f}",
                    spread(values),
                    f"{median(values) / base:.2f}",
                ]
            )
        for sess in sessions.values():
            sess.close()
    return table(["experiment", "setting", "median ms", "IQR", "time ratio vs first"], rows)


def matmul_session_table(
    repeats: int, sizes: tuple[int, ...] = (1024, 2048), thread_counts: tuple[int, ...] = (1, 2)
) -> str:
    """GFLOP/s of one float32 matmul run through a Session (its shards on the intra-op pool)
    against numpy/OpenBLAS limited to the same number of threads, alternated round by round.

    *calls*: the kernel calls a traced run made (the plan's shards stay the same; where fewer
    threads take part than there are shards, each thread's run of shards is one call when the
    kernel gives the same bits that way: `executors.step._pieces`). After each numpy call the
    round pauses 0.2 s before timing the sessions: OpenBLAS's own threads spin ~0.1 s after a
    multi-threaded call and would steal a core.
    """
    from threadpoolctl import threadpool_limits

    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        a_value = rng.standard_normal((n, n)).astype(np.float32)
        b_value = rng.standard_normal((n, n)).astype(np.float32)
        g = pg.Graph(f"matmul-{n}")
        with g.as_default():
            a = pg.placeholder((n, n), name="a")
            product = pg.matmul(a, pg.constant(b_value))
        flops, feed = 2 * n**3, {a: a_value}
        for threads in thread_counts:
            sessions = {
                kernel: pg.Session(
                    g, Config(inter_op_threads=1, intra_op_threads=threads, matmul_kernel=kernel)
                )
                for kernel in ("blas", "numba")
            }
            shards = len(sessions["blas"].plan_for(product, feed).steps[0].shards)
            calls = {
                kernel: sum(1 for e in sess.run(product, feed, trace=True)[1].events
                            if e.kind == "shard") or 1
                for kernel, sess in sessions.items()
            }  # fmt: skip
            calls["numpy"] = 1
            times: dict[str, list[float]] = {"numpy": [], **{k: [] for k in sessions}}
            for round_ in range(repeats + 2):  # the first 2 rounds warm up
                with threadpool_limits(threads, user_api="blas"):
                    start = time.perf_counter()
                    a_value @ b_value
                    took = time.perf_counter() - start
                time.sleep(0.2)
                timed = {"numpy": took}
                for kernel, sess in sessions.items():
                    start = time.perf_counter()
                    sess.run(product, feed)
                    timed[kernel] = time.perf_counter() - start
                if round_ >= 2:
                    for name, value in timed.items():
                        times[name].append(value)
            numpy_rate = flops / median(times["numpy"]) / 1e9
            for name, values in times.items():
                rate = flops / median(values) / 1e9
                rows.append(
                    [
                        n,
                        threads,
                        shards,
                        calls[name],
                        name,
                        f"{rate:.1f}",
                        spread(values),
                        f"{100 * rate / numpy_rate:.0f}%",
                    ]
                )
            for sess in sessions.values():
                sess.close()
    header = ["n", "intra-op threads", "shards", "calls", "kernel", "GFLOP/s", "IQR", "vs numpy"]
    return table(header, rows)


def run_overhead_table(repeats: int) -> str:
    """us per `Session.run` of a two-op graph of Numba kernels (an add and a tanh on 8x8), as it
    runs now (its plan calls no BLAS, so the run does not hold BLAS to one thread) against the
    same session's plan told that it calls BLAS (what every run did before `Plan.calls_blas`),
    interleaved; each sample is the mean of 200 runs."""
    graph = pg.Graph("two-tiny-ops")
    with graph.as_default():
        fetch = pg.tanh(pg.constant(np.ones((8, 8), np.float32)) + 1.0)
    sessions = {}
    for label, holds in (("holds BLAS to 1 thread (before)", True), ("no BLAS hold (now)", False)):
        session = pg.Session(graph, Config(inter_op_threads=1))
        plan = session.plan_for(fetch)
        object.__setattr__(plan, "calls_blas", holds)  # the frozen plan, for this comparison
        sessions[label] = session

    def two_hundred(session: pg.Session) -> None:
        for _ in range(200):
            session.run(fetch)

    times = interleaved({k: lambda s=s: two_hundred(s) for k, s in sessions.items()}, repeats)
    rows = [[k, f"{median(v) / 200 * 1e6:.1f}", spread(v)] for k, v in times.items()]
    for session in sessions.values():
        session.close()
    return table(["run of a 2-op graph", "us per run", "IQR"], rows)


def python_loop_ms() -> float:
    """A fixed piece of pure-Python work, timed: how fast this core runs Python right now."""
    start = time.perf_counter()
    total = 0
    for i in range(200_000):
        total += i * i
    return (time.perf_counter() - start) * 1e3


def tiny_ops_here(repeats: int) -> dict[str, float]:
    """us per op of traced runs of the chain and the fan-in, inter-op 1 and 2 (medians), and
    the Python loop's median ms measured between them; one fresh process's numbers."""
    graphs = {"chain": chain_graph(2000), "fan-in": fan_in_graph(1000)}
    result, loop_ms = {}, []
    with single_threaded_blas():
        for label, (graph, fetch) in graphs.items():
            for inter in (1, 2):
                with pg.Session(graph, Config(inter_op_threads=inter)) as session:
                    ops = len(session.plan_for(fetch).steps)
                    session.run(fetch, trace=True)
                    times = []
                    for _ in range(repeats):
                        start = time.perf_counter()
                        session.run(fetch, trace=True)
                        times.append(time.perf_counter() - start)
                        loop_ms.append(python_loop_ms())
                result[f"{label}, inter {inter}"] = median(times) / ops * 1e6
    result["python loop ms"] = median(loop_ms)
    return result


def tiny_ops_table(processes: int, repeats: int) -> str:
    """`tiny_ops_here` in `processes` fresh processes, one row each, and the worst of them."""
    import json
    import subprocess

    rows, worst = [], {}
    for number in range(1, processes + 1):
        done = subprocess.run(
            [sys.executable, __file__, "--tiny-here", str(repeats)],
            capture_output=True,
            text=True,
            check=True,
        )
        facts = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append([number, *(f"{value:.2f}" for value in facts.values())])
        for key, value in facts.items():
            worst[key] = max(worst.get(key, 0.0), value)
    rows.append(["worst", *(f"{value:.2f}" for value in worst.values())])
    units = [key if key.endswith(" ms") else f"{key} us/op" for key in worst]
    return table(["process", *units], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        metavar="N",
        help="only the tiny-op cost (traced) in N fresh processes, one row each",
    )
    parser.add_argument("--tiny-here", type=int, metavar="REPEATS", help=argparse.SUPPRESS)
    parser.add_argument(
        "--matmul", action="store_true", help="only the matmul-through-a-Session table"
    )
    parser.add_argument(
        "--run-overhead", action="store_true", help="only the cost of a run with and without BLAS"
    )
    parser.add_argument(
        "--sizes", default="1024,2048", help="--matmul: n of the n^3 matmuls (comma-separated)"
    )
    parser.add_argument(
        "--threads", default="1,2", help="--matmul: intra-op thread counts (comma-separated)"
    )
    args = parser.parse_args()
    repeats = 5 if args.quick else 15
    if args.matmul:
        from threadpoolctl import threadpool_info

        blas = [
            f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
        print(f"cores: {os.cpu_count()}, numpy {np.__version__}, BLAS: {'; '.join(blas)}")
        sizes = tuple(int(n) for n in args.sizes.split(","))
        counts = tuple(int(n) for n in args.threads.split(","))
        print(matmul_session_table(repeats, sizes, counts))
        return
    if args.run_overhead:
        print(run_overhead_table(repeats * 3))
        return
    if args.tiny_here:
        import json

        print(json.dumps(tiny_ops_here(args.tiny_here)))
        return
    if args.processes:
        print(f"## Tiny ops, traced, in {args.processes} fresh processes ({repeats} runs each)\n")
        print(tiny_ops_table(args.processes, repeats))
        return
    print(f"cores: {os.cpu_count()}, numpy {np.__version__}")
    print("\n## Dispatch overhead per op (2,000 tiny ops)\n")
    print(dispatch_table(2000, repeats))
    print("\n## Inter-op and intra-op scaling\n")
    print(scaling_table(repeats))
    print("\n## Matmul through a Session vs numpy at the same thread count (float32)\n")
    print(matmul_session_table(repeats))


if __name__ == "__main__":
    main()
