"""parallelgraph against TensorFlow, PyTorch, ONNX Runtime and JAX, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/vs_peers.py \\
        --peers-python /tmp/peersvenv/bin/python [--peers tensorflow,pytorch,onnxruntime,jax]
        [--workloads seed,mlp,wide,chain] [--sizes small,medium,large]
        [--repeats 9] [--warmup 3] [--quick] [--fuse] [--runs-before N]

The peers are never parallelgraph's dependencies: give a Python that has them (a throwaway
venv: `pip install tensorflow-cpu onnxruntime onnx jax jaxlib numpy` and a CPU torch). A peer
missing there is reported as "not installed" and skipped.

Workloads, written once (`WORKLOADS`) and built by every framework from the same
definition, float32, the weights the same glorot-uniform values everywhere, random inputs drawn
inside the graph on every run:

- `seed`: the seed graph, two networks of random_normal -> matmul -> add bias -> matmul,
  summed (`parallelgraph.experiments.presets.TWO_NETWORK_SIZES`);
- `mlp`: the README's dashboard build (branches of random_normal -> matmul, 3 by default,
  summed by add_n) as an MLP of two layers, tanh(x @ w1 + b1) then relu(. @ w2 + b2);
- `wide`: 8 independent branches tanh(random_normal @ w), summed by add_n (`WIDTH_SIZES`);
- `chain`: 2,000 dependent tiny ops (a 1x1 random_normal, a constant, 1,998 adds); no size.

For each inter/intra setting in {1, 2}^2 every peer runs in a fresh worker process (a peer's
pools are process-wide), started with `--peers-python`: TensorFlow as a 1.x Session
(`tf.compat.v1`, ConfigProto inter/intra threads, `use_per_session_threads`); PyTorch eager
with `torch.set_num_threads(intra)`, and for inter > 1 the branches traced into TorchScript
with `torch.jit.fork` (`set_num_interop_threads(inter)`; eager mode cannot run two ops at
once); ONNX Runtime with `inter_op_num_threads`/`intra_op_num_threads` and the ORT_PARALLEL
execution mode when inter > 1; JAX as one `jax.jit` function, its threads limited by CPU
affinity (`os.sched_setaffinity` to inter x intra CPUs, at most the machine's, before jax is
imported; its XLA flags do not limit them here). parallelgraph runs in this process with its
threads executor. Every worker checks its output against parallelgraph's float64 reference
(shape, all finite, RMS within 2x) before it is timed; a wrong build is reported, not timed.

Each cell: `--warmup` untimed runs of every framework, then `--repeats` rounds, each framework
once per round in a shuffled order; a peer's time is measured in its worker around its step
(the pipe is not in it), parallelgraph's around `Session.run`. Between its own runs a worker is
stopped (SIGSTOP), so no peer's spinning pool threads take CPU from the run being timed. Each
peer runs as its users get it: TensorFlow's grappler, for one, rewrites the 2,000-add chain,
and XLA fuses it into one loop. Columns: median ms (IQR as a
percentage of the median), parallelgraph / each peer and / the best peer, and the floor: the
matmul FLOPs at NumPy's float32 BLAS GFLOP/s and every other op's bytes (inputs read, output
written) at np.copyto's bandwidth, both measured in this run with min(inter x intra, cores)
threads (threadpoolctl), the better of a measurement before and one after the runs; the BLAS
kernel in use is printed first, and at the end how many cores other processes kept busy
(`parallelgraph.experiments.machine_load`). `--quick`: 4 rounds after 1 warm-up run, sizes
small and medium. `--fuse`: parallelgraph with `Config(fuse=True)` (off by default, so that a
user sees every op on the timeline; on, a matmul's bias and activation and each group of
elementwise ops run as one step, as XLA fuses inside `jax.jit`). `--runs-before N`: each timed
run follows N untimed runs of the same framework, so it starts hot; by default (0) it follows
the other frameworks' runs, after its process was idle, which on a VM costs every framework
~0.2-0.6 ms a run (`benchmarks/idle_cost.py`) and hides the libraries' own speed on small
graphs. Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
import zlib
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (
    LineWorker,
    alternated,
    blas_description,
    blas_gflops,
    median,
    memory_gbps,
    reply_channel,
    spread,
    table,
    timed,
)

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]
#: peer name -> (module that must import, column label)
PEERS = {
    "tensorflow": ("tensorflow", "TF"),
    "pytorch": ("torch", "torch"),
    "onnxruntime": ("onnxruntime", "ORT"),
    "jax": ("jax", "JAX"),
}
#: (batch, hidden) of the MLP: the dashboard's batch range and hidden choices.
MLP_SIZES = {"small": (64, 256), "medium": (512, 512), "large": (2048, 1024)}
CHAIN_OPS = 2000
RMS_TOLERANCE = 2.0


# -- the workloads, once for every framework ----------------------------------------------------
# `ops` is a namespace of normal(shape, seed), weight(shape, name), constant(array), matmul,
# add, tanh, relu and add_n. A workload makes its weights and returns one callable per
# independent branch; `assemble` calls them and sums the branches (add for two, add_n above).
def glorot(shape: tuple[int, ...], name: str) -> np.ndarray:
    """Glorot-uniform values seeded by the name, the same in every process and framework."""
    fan_in, fan_out = (shape[0], shape[-1]) if len(shape) == 2 else (shape[0], shape[0])
    limit = math.sqrt(6 / (fan_in + fan_out))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return rng.uniform(-limit, limit, shape).astype(np.float32)


def seed_graph(ops, batch: int, n_in: int, n_hidden: int, n_out: int) -> list:
    def network(i: int):
        w1 = ops.weight((n_in, n_hidden), f"net{i}_w1")
        b1 = ops.weight((n_hidden,), f"net{i}_b1")
        w2 = ops.weight((n_hidden, n_out), f"net{i}_w2")
        return lambda: ops.matmul(ops.add(ops.matmul(ops.normal((batch, n_in), i), w1), b1), w2)

    return [network(1), network(2)]


def mlp(ops, batch: int, hidden: int, branches: int = 3) -> list:
    def network(i: int):
        w1, w2 = (ops.weight((hidden, hidden), f"mlp{i}_w{k}") for k in (1, 2))
        b1, b2 = (ops.weight((hidden,), f"mlp{i}_b{k}") for k in (1, 2))

        def run():
            h = ops.tanh(ops.add(ops.matmul(ops.normal((batch, hidden), i), w1), b1))
            return ops.relu(ops.add(ops.matmul(h, w2), b2))

        return run

    return [network(i) for i in range(branches)]


def wide(ops, batch: int, width: int, branches: int = 8) -> list:
    def branch(i: int):
        w = ops.weight((width, width), f"wide{i}_w")
        return lambda: ops.tanh(ops.matmul(ops.normal((batch, width), i), w))

    return [branch(i) for i in range(branches)]


def chain(ops, length: int) -> list:
    one = ops.constant(np.ones((1, 1), np.float32))

    def run():
        x = ops.normal((1, 1), 0)
        for _ in range(length - 2):
            x = ops.add(x, one)
        return x

    return [run]


WORKLOADS = {"seed": seed_graph, "mlp": mlp, "wide": wide, "chain": chain}


def combine(ops, outputs: list):
    if len(outputs) == 1:
        return outputs[0]
    return ops.add(*outputs) if len(outputs) == 2 else ops.add_n(outputs)


def assemble(ops, workload: str, dims: list[int]):
    return combine(ops, [branch() for branch in WORKLOADS[workload](ops, *dims)])


def summed(add):
    return lambda xs: functools.reduce(add, xs)


def cost(workload: str, dims: list[int]) -> tuple[float, float]:
    """(matmul FLOPs, bytes every other op reads and writes) of one run, float32."""
    flops, nbytes = [0.0], [0.0]

    def moved(*shapes, out=None):
        nbytes[0] += 4 * sum(math.prod(s) for s in (*shapes, out or shapes[0]))
        return out or shapes[0]

    def matmul(a, b):
        flops[0] += 2 * a[0] * a[1] * b[1]
        return (a[0], b[1])

    ops = SimpleNamespace(
        normal=lambda shape, seed: moved(out=shape),
        weight=lambda shape, name: shape,
        constant=lambda value: value.shape,
        matmul=matmul,
        add=lambda a, b: moved(a, b, out=np.broadcast_shapes(a, b)),
        tanh=moved,
        relu=moved,
        add_n=lambda xs: moved(*xs, out=xs[0]),
    )
    assemble(ops, workload, dims)
    return flops[0], nbytes[0]


# -- the peers, in their worker processes -------------------------------------------------------
# Each `start_*(inter, intra)` sets the peer's pools and returns (version, build), where
# build(workload, dims) makes the model and returns its step: one run, its output back.
def start_tensorflow(inter: int, intra: int):
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    config = tf1.ConfigProto(
        inter_op_parallelism_threads=inter,
        intra_op_parallelism_threads=intra,
        use_per_session_threads=True,
        device_count={"GPU": 0},
    )
    ops = SimpleNamespace(
        normal=lambda shape, seed: tf1.random_normal(shape, seed=seed),
        weight=lambda shape, name: tf1.Variable(glorot(shape, name), name=name),
        constant=tf1.constant,
        matmul=tf1.matmul,
        add=tf1.add,
        tanh=tf1.tanh,
        relu=tf1.nn.relu,
        add_n=tf1.add_n,
    )

    def build(workload, dims):
        graph = tf.Graph()
        with graph.as_default(), tf.device("/cpu:0"):
            out = assemble(ops, workload, dims)
            init = tf1.global_variables_initializer()
        session = tf1.Session(graph=graph, config=config)
        session.run(init)
        return lambda: session.run(out)

    return tf.__version__, build


def start_pytorch(inter: int, intra: int):
    import torch

    torch.set_num_threads(intra)
    torch.set_num_interop_threads(inter)  # before any parallel work
    torch.set_grad_enabled(False)
    ops = SimpleNamespace(
        normal=lambda shape, seed: torch.randn(shape),
        weight=lambda shape, name: torch.from_numpy(glorot(shape, name)),
        constant=torch.from_numpy,
        matmul=torch.matmul,
        add=torch.add,
        tanh=torch.tanh,
        relu=torch.relu,
        add_n=summed(torch.add),
    )

    def build(workload, dims):
        branches = WORKLOADS[workload](ops, *dims)
        if inter == 1 or len(branches) == 1:  # eager: one op after another
            return lambda: combine(ops, [branch() for branch in branches])

        def forked(_):  # the first branch here, the others as tasks on the inter-op pool
            futures = [torch.jit.fork(branch) for branch in branches[1:]]
            first = branches[0]()
            return combine(ops, [first, *(torch.jit.wait(f) for f in futures)])

        dummy = torch.zeros(1)
        traced = torch.jit.trace(forked, (dummy,), check_trace=False)
        return lambda: traced(dummy)

    return torch.__version__, build


def start_onnxruntime(inter: int, intra: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    options = ort.SessionOptions()
    options.inter_op_num_threads = inter
    options.intra_op_num_threads = intra
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if inter > 1 else ort.ExecutionMode.ORT_SEQUENTIAL
    )

    def build(workload, dims):
        nodes, initializers = [], []

        def node(op_type, *inputs, **attrs):
            name = f"t{len(nodes)}"
            nodes.append(helper.make_node(op_type, list(inputs), [name], name=name, **attrs))
            return name

        def initializer(array, name):
            initializers.append(numpy_helper.from_array(array, name))
            return name

        ops = SimpleNamespace(
            normal=lambda shape, seed: node(
                "RandomNormal", shape=list(shape), seed=float(seed), dtype=TensorProto.FLOAT
            ),
            weight=lambda shape, name: initializer(glorot(shape, name), name),
            constant=lambda value: initializer(value, f"const{len(initializers)}"),
            matmul=lambda a, b: node("MatMul", a, b),
            add=lambda a, b: node("Add", a, b),
            tanh=lambda a: node("Tanh", a),
            relu=lambda a: node("Relu", a),
            add_n=lambda xs: node("Sum", *xs),
        )
        out = assemble(ops, workload, dims)
        graph = helper.make_graph(
            nodes,
            workload,
            [],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
            initializer=initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8  # (no onnx.checker: it wants the output's shape; ORT checks)
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return lambda: session.run(None, {})[0]

    return ort.__version__, build


def start_jax(inter: int, intra: int):
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[: max(1, min(inter * intra, len(cpus)))])  # before jax starts
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp

    state = {}
    ops = SimpleNamespace(
        normal=lambda shape, seed: jax.random.normal(
            jax.random.fold_in(state["key"], seed), shape, jnp.float32
        ),
        weight=lambda shape, name: jnp.asarray(glorot(shape, name)),
        constant=jnp.asarray,
        matmul=jnp.matmul,
        add=jnp.add,
        tanh=jnp.tanh,
        relu=jax.nn.relu,
        add_n=summed(jnp.add),
    )

    def build(workload, dims):
        branches = WORKLOADS[workload](ops, *dims)

        def run(key):  # the key is an argument, so XLA cannot fold the random inputs away
            state["key"] = key
            return combine(ops, [branch() for branch in branches])

        jitted, key = jax.jit(run), jax.random.PRNGKey(0)
        return lambda: jitted(key).block_until_ready()

    return f"{jax.__version__} on {len(os.sched_getaffinity(0))} CPU(s)", build


STARTS = {
    "tensorflow": start_tensorflow,
    "pytorch": start_pytorch,
    "onnxruntime": start_onnxruntime,
    "jax": start_jax,
}


def summary(output) -> dict:
    """What a reference check needs of an output: shape, all finite, RMS."""
    out = np.asarray(output)
    rms = float(np.sqrt(np.mean(np.square(out, dtype=np.float64)))) if out.size else 0.0
    return {"shape": list(out.shape), "finite": bool(np.isfinite(out).all()), "rms": rms}


def serve(peer: str, inter: int, intra: int) -> None:
    """The worker: the hello line, then one reply a request (build, check, run)."""
    replies = reply_channel()

    def reply(**message):
        replies.write(json.dumps(message) + "\n")

    try:
        version, build = STARTS[peer](inter, intra)
    except ImportError as error:
        reply(missing=f"not installed ({type(error).__name__}: {error})")
        return
    except Exception as error:  # noqa: BLE001  (said to the parent, which skips this peer)
        reply(missing=f"could not start ({type(error).__name__}: {error})")
        return
    reply(ready=version)
    steps = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "build":
                start = time.perf_counter()
                steps[request["cell"]] = build(request["workload"], request["dims"])
                reply(built=time.perf_counter() - start)
            elif request["op"] == "check":
                reply(**summary(steps[request["cell"]]()))
            else:
                reply(t=timed_after(steps[request["cell"]], request["before"]))
        except Exception as error:  # noqa: BLE001  (said to the parent, which goes on)
            reply(error=f"{type(error).__name__}: {str(error)[:300]}")


# -- the parent: parallelgraph, the workers, the table ------------------------------------------
def check(summary_: dict, reference: dict) -> str | None:
    """Why an output does not pass for the reference's, or None."""
    if summary_["shape"] != reference["shape"]:
        return f"shape {summary_['shape']} != {reference['shape']}"
    if not summary_["finite"]:
        return "not finite"
    ratio = summary_["rms"] / reference["rms"] if reference["rms"] else 1.0
    if not 1 / RMS_TOLERANCE <= ratio <= RMS_TOLERANCE:
        return f"RMS {summary_['rms']:.3g} against the reference's {reference['rms']:.3g}"
    return None


def pg_graph(pg, workload: str, dims: list[int], dtype: str = "float32"):
    ops = SimpleNamespace(
        normal=lambda shape, seed: pg.random_normal(shape, seed=seed, dtype=dtype),
        weight=lambda shape, name: pg.variable(
            shape, name=name, dtype=dtype, init=glorot(shape, name).astype(dtype)
        ),
        constant=lambda value: pg.constant(value.astype(dtype)),
        matmul=pg.matmul,
        add=pg.add,
        tanh=pg.tanh,
        relu=pg.relu,
        add_n=pg.add_n,
    )
    graph = pg.Graph(f"{workload}-{'x'.join(map(str, dims))}")
    with graph.as_default():
        out = assemble(ops, workload, dims)
    return graph, out


def cells_of(args) -> list[tuple[str, str, list[int]]]:
    """(workload, size, dims) of every cell asked for."""
    from parallelgraph.experiments.presets import TWO_NETWORK_SIZES, WIDTH_SIZES

    tables = {"seed": TWO_NETWORK_SIZES, "mlp": MLP_SIZES, "wide": WIDTH_SIZES}
    cells = []
    for workload in args.workloads.split(","):
        if workload == "chain":
            cells.append(("chain", "-", [CHAIN_OPS]))
            continue
        if workload not in tables:
            raise SystemExit(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
        cells += [(workload, size, list(tables[workload][size])) for size in args.sizes.split(",")]
    return cells


def start_workers(args, peers: list[str], inter: int, intra: int) -> dict[str, LineWorker]:
    env = dict(os.environ, OMP_NUM_THREADS=str(intra), PYTHONWARNINGS="ignore")
    workers = {
        peer: LineWorker(
            [args.peers_python, os.path.abspath(__file__), "--serve", peer, str(inter), str(intra)],
            env=env,
            quiet=not args.verbose,
        )
        for peer in peers
    }
    for worker in workers.values():  # they start side by side; read each hello
        try:
            worker.read()
        except RuntimeError as error:
            worker.hello = {"missing": f"could not start ({error})"}
    return workers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers-python", required=True, help="a Python that has the peers")
    parser.add_argument("--peers", default=",".join(PEERS), help="a subset of " + ",".join(PEERS))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="--repeats 4 --warmup 1, small and medium"
    )
    parser.add_argument(
        "--fuse",
        action="store_true",
        help="run parallelgraph with Config(fuse=True): matmul epilogues and elementwise groups",
    )
    parser.add_argument(
        "--runs-before",
        type=int,
        default=0,
        help="untimed runs of the same framework straight before each timed run (hot runs)",
    )
    parser.add_argument("--verbose", action="store_true", help="show the workers' stderr")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.warmup = 4, 1
        if args.sizes == parser.get_default("sizes"):
            args.sizes = "small,medium"
    peers = args.peers.split(",")
    unknown = set(peers) - set(PEERS)
    if unknown:
        raise SystemExit(f"unknown peer(s) {sorted(unknown)}; choose from {', '.join(PEERS)}")

    import parallelgraph as pg
    from parallelgraph.experiments.machine_load import LoadMonitor, busy_note

    started = time.perf_counter()
    cells = cells_of(args)
    cores = len(os.sched_getaffinity(0))
    pins = [name for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if name in os.environ]
    print(f"BLAS: {blas_description()}")
    print(f"parallelgraph: Config(fuse={args.fuse})")
    print(
        f"each timed run follows {args.runs_before} untimed run(s) of the same framework"
        if args.runs_before
        else "each timed run follows the other frameworks' runs (its process was idle)"
    )
    if pins:
        print(f"note: {' and '.join(pins)} set; run under `env -u {' -u '.join(pins)}`")
    threads = sorted({1, min(2, cores)})
    limits = [machine_limits(threads)]  # and again at the end: a busy moment understates them

    references = {}
    for cell, (workload, _, dims) in enumerate(cells):
        graph, out = pg_graph(pg, workload, dims, "float64")
        with pg.Session(graph, pg.Config(executor="sequential")) as session:
            references[cell] = summary(session.run(out))

    status: dict[str, str] = {}  # peer -> its version, or why it is skipped
    skipped: set[str] = set()
    live: dict[str, LineWorker] = {}
    monitor = LoadMonitor(lambda: [w.process.pid for w in live.values()])
    monitor.start()
    times: dict[tuple[int, tuple[int, int]], dict[str, list[float] | str]] = {}
    for inter, intra in SETTINGS:
        workers = start_workers(args, [p for p in peers if p not in skipped], inter, intra)
        live.update(workers)
        try:
            for peer, worker in list(workers.items()):
                if "missing" in worker.hello:
                    status[peer] = worker.hello["missing"]
                    skipped.add(peer)
                    workers.pop(peer).close()
                else:
                    status[peer] = worker.hello["ready"]
            for worker in workers.values():  # the builds run side by side
                for cell, (workload, _, dims) in enumerate(cells):
                    worker.send(op="build", cell=cell, workload=workload, dims=dims)
                    worker.send(op="check", cell=cell)
            bad: dict[tuple[str, int], str] = {}  # -> "error" or "wrong", said when found
            for peer, worker in list(workers.items()):
                for cell in range(len(cells)):
                    try:
                        built, checked = worker.read(), worker.read()
                    except RuntimeError as error:  # it died: none of its cells run
                        built, checked = {"error": str(error)}, {}
                    why = built.get("error") or checked.get("error")
                    bad[(peer, cell)] = "error" if why else "wrong"
                    why = why or check(checked, references[cell])
                    if not why:
                        del bad[(peer, cell)]
                        continue
                    print(f"{peer} {inter}/{intra} {cells[cell][:2]}: {why}", flush=True)
                    if worker.process.poll() is not None:
                        bad.update({(peer, c): "error" for c in range(len(cells))})
                        workers.pop(peer).close()
                        break
                else:
                    worker.pause()  # resumed only for its own runs (`_peer_run`)
            for cell, (workload, _, dims) in enumerate(cells):
                graph, out = pg_graph(pg, workload, dims)
                config = pg.Config(executor="threads", inter_op_threads=inter,
                                   intra_op_threads=intra, fuse=args.fuse)  # fmt: skip
                with pg.Session(graph, config) as session:
                    why = check(summary(session.run(out)), references[cell])
                    if why:
                        print(f"parallelgraph {inter}/{intra} {cells[cell][:2]}: {why}")
                    run = functools.partial(session.run, out)
                    cases = {"pg": functools.partial(timed_after, run, args.runs_before)}
                    for peer, worker in workers.items():
                        if (peer, cell) not in bad:
                            cases[peer] = functools.partial(
                                _peer_run, worker, cell, args.runs_before
                            )
                    cell_times: dict[str, list[float] | str] = dict(
                        alternated(cases, args.repeats, args.warmup, seed=cell)
                    )
                for peer in peers:
                    if (peer, cell) in bad:
                        cell_times[peer] = bad[(peer, cell)]
                times[(cell, (inter, intra))] = cell_times
                print(f"  done {workload} {cells[cell][1]} {inter}/{intra}", file=sys.stderr,
                      flush=True)  # fmt: skip
        finally:
            for worker in workers.values():
                worker.close()
            live.clear()

    load = monitor.stop()
    limits.append(machine_limits(threads))
    gflops, gbps = ({t: max(m[k][t] for m in limits) for t in threads} for k in (0, 1))
    print("floor basis (the better of a measurement before and after the runs): " + "; ".join(
        f"{t} thread(s) {gflops[t]:.0f} GFLOP/s float32 matmul, {gbps[t]:.1f} GB/s np.copyto"
        for t in threads
    ))  # fmt: skip
    if load is not None:
        note = busy_note(load, min(4, cores))
        print(f"other processes kept {load.other_cores:.2f} of {load.cores} cores busy on "
              f"average during the runs{': ' + note if note else ''}")  # fmt: skip
    for peer in peers:
        print(f"{peer}: {status.get(peer, 'not run')}")
    ran = [p for p in peers if p in status and p not in skipped]
    print(report(cells, times, ran, gflops, gbps, cores))
    print(f"\n{args.repeats} rounds after {args.warmup} warm-up runs a cell; "
          f"the whole run took {time.perf_counter() - started:.0f} s")  # fmt: skip
    short = sorted(
        {
            cells[cell][:2]
            for (cell, _), cell_times in times.items()
            if isinstance(cell_times["pg"], list) and median(cell_times["pg"]) < 2e-3
        }
    )
    if short and not args.runs_before:
        print(
            f"note: {', '.join(' '.join(c) for c in short)} run in under 2 ms; each run here "
            "starts after its process was idle, which can cost more than the run itself "
            "(benchmarks/idle_cost.py): --runs-before 3 times hot runs"
        )


def machine_limits(threads: list[int]) -> tuple[dict[int, float], dict[int, float]]:
    """GFLOP/s and GB/s at each thread count, each at least what fewer threads reached."""
    gflops, gbps = {}, {}
    for t in threads:
        gflops[t] = max([blas_gflops(t, repeats=10), *(gflops[u] for u in gflops)])
        gbps[t] = max([memory_gbps(t), *(gbps[u] for u in gbps)])
    return gflops, gbps


def timed_after(step, before: int) -> float:
    """Seconds of one call of `step`, made straight after `before` untimed calls."""
    for _ in range(before):
        step()
    return timed(step)


def _peer_run(worker: LineWorker, cell: int, before: int) -> float:
    worker.resume()
    try:
        reply = worker.request(op="run", cell=cell, before=before)
    finally:
        worker.pause()
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["t"]


def report(cells, times, peers, gflops, gbps, cores) -> str:
    labels = [PEERS[p][1] for p in peers]
    header = ["workload", "size", "inter/intra", "pg ms (IQR)"]
    header += [f"{label} ms (IQR)" for label in labels]
    header += [f"pg/{label}" for label in labels] + ["pg/best", "floor ms", "pg/floor"]
    rows = []
    for (cell, (inter, intra)), cell_times in times.items():
        workload, size, dims = cells[cell]
        ms = {name: median(v) * 1e3 for name, v in cell_times.items() if isinstance(v, list)}
        row = [workload, size, f"{inter}/{intra}", _ms(cell_times["pg"])]
        row += [_ms(cell_times.get(p, "-")) for p in peers]
        row += [f"{ms['pg'] / ms[p]:.2f}" if p in ms else "-" for p in peers]
        best = min((ms[p] for p in peers if p in ms), default=None)
        row.append(f"{ms['pg'] / best:.2f}" if best else "-")
        used = min(inter * intra, max(gflops), cores)
        flops, nbytes = cost(workload, dims)
        floor = (flops / (gflops[used] * 1e9) + nbytes / (gbps[used] * 1e9)) * 1e3
        row += [f"{floor:.3f}" if floor < 1 else f"{floor:.2f}", f"{ms['pg'] / floor:.2f}"]
        rows.append(row)
    return "\n" + table(header, rows)


def _ms(values) -> str:
    if not isinstance(values, list):
        return values
    value = median(values) * 1e3
    return f"{value:.3f} ({spread(values)})" if value < 1 else f"{value:.2f} ({spread(values)})"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
