"""The seed graph in parallelgraph and in TensorFlow, side by side in one run.

    python benchmarks/vs_tensorflow.py --tensorflow /path/to/venv/bin/python
           [--sizes small,medium,large] [--repeats 9] [--warmup 3]

TensorFlow is not a dependency: give a Python interpreter that has `tensorflow-cpu` (a
throwaway venv; tests/fixtures/real/make_all.sh makes one). For each size and each inter/intra
setting in {1, 2}^2, parallelgraph's threads executor (in this process) and a TensorFlow 1.x
Session (`tf.compat.v1`, ConfigProto with those thread counts and `use_per_session_threads`,
one worker process per setting, since TensorFlow's intra-op pool is process-wide) run the same
graph — two networks of random_normal -> matmul -> add bias -> matmul, summed — alternately,
`--repeats` rounds after `--warmup` untimed runs. Columns: medians and IQRs of the wall time of
`run`, parallelgraph / TensorFlow, and the BLAS bound: the graph's matmul FLOPs at the float32
GFLOP/s NumPy's BLAS reaches here with as many threads as the setting's inter x intra, at most
the cores (measured in the same run). Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import threadpoolctl

import parallelgraph as pg
from parallelgraph.experiments.presets import TWO_NETWORK_SIZES

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]

TENSORFLOW_WORKER = r"""
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_eager_execution()
inter, intra = int(sys.argv[1]), int(sys.argv[2])
sessions = {}
def build(batch, n_in, n_hidden, n_out):
    g = tf.Graph()
    with g.as_default(), tf.device("/cpu:0"):
        results = []
        for name in ("net1", "net2"):
            with tf1.variable_scope(name):
                data = tf1.random_normal([batch, n_in])
                w1 = tf1.get_variable("w1", [n_in, n_hidden])
                b1 = tf1.get_variable("b1", [n_hidden])
                w2 = tf1.get_variable("w2", [n_hidden, n_out])
                results.append(tf.matmul(tf.add(tf.matmul(data, w1), b1), w2))
        out = tf.add(*results)
        init = tf1.global_variables_initializer()
    config = tf1.ConfigProto(inter_op_parallelism_threads=inter,
                             intra_op_parallelism_threads=intra,
                             use_per_session_threads=True, device_count={"GPU": 0})
    sess = tf1.Session(graph=g, config=config)
    sess.run(init)
    return sess, out
print("ready", flush=True)
for line in sys.stdin:
    words = line.split()
    sizes = tuple(int(w) for w in words[1:])
    if sizes not in sessions:
        sessions[sizes] = build(*sizes)
    sess, out = sessions[sizes]
    start = time.perf_counter()
    sess.run(out)
    print(time.perf_counter() - start, flush=True)
"""


class TensorFlowWorker:
    """A TensorFlow process for one inter/intra setting, timing one run per request."""

    def __init__(self, python: str, inter: int, intra: int):
        env = dict(os.environ, OMP_NUM_THREADS=str(intra))
        self.process = subprocess.Popen(
            [python, "-c", TENSORFLOW_WORKER, str(inter), str(intra)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert self.process.stdout.readline().strip() == "ready"

    def time_run(self, sizes: tuple[int, ...]) -> float:
        self.process.stdin.write("run " + " ".join(map(str, sizes)) + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def blas_gflops(threads: int, size: int = 1024, repeats: int = 5) -> float:
    """float32 GFLOP/s of NumPy's matmul with `threads` BLAS threads (best of `repeats`)."""
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        a @ a
        best = min(_timed(lambda: a @ a) for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _timed_run(session: pg.Session, fetch: object) -> float:
    start = time.perf_counter()
    session.run(fetch)
    return time.perf_counter() - start


def matmul_flops(batch: int, n_in: int, n_hidden: int, n_out: int) -> int:
    return 2 * 2 * (batch * n_in * n_hidden + batch * n_hidden * n_out)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return q1, median, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorflow", required=True, help="a Python that has tensorflow-cpu")
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    workers = {s: TensorFlowWorker(args.tensorflow, *s) for s in SETTINGS}
    cores = os.cpu_count() or 1
    gflops = {
        threads: blas_gflops(threads) for threads in sorted({1, min(2, cores), min(4, cores)})
    }
    rates = ", ".join(f"{t} thread(s) {g:.0f}" for t, g in gflops.items())
    print(f"NumPy BLAS float32 GFLOP/s here: {rates}")
    print(f"{'size':<8}{'inter/intra':>12}{'pg ms':>9}{'IQR':>6}{'TF ms':>9}{'IQR':>6}"
          f"{'pg/TF':>8}{'BLAS bound ms':>15}{'pg/bound':>10}")  # fmt: skip
    try:
        for size in args.sizes.split(","):
            sizes = TWO_NETWORK_SIZES[size]
            preset = pg.presets.two_networks(size)
            for inter, intra in SETTINGS:
                config = pg.Config(inter_op_threads=inter, intra_op_threads=intra)
                worker = workers[(inter, intra)]
                with pg.Session(preset.graph, config) as session:
                    for _ in range(args.warmup):
                        session.run(preset.fetch)
                        worker.time_run(sizes)
                    ours, theirs = [], []
                    for _ in range(args.repeats):  # alternate: drift hits both alike
                        ours.append(_timed_run(session, preset.fetch))
                        theirs.append(worker.time_run(sizes))
                q1, ours_ms, q3 = (v * 1e3 for v in quartiles(ours))
                t1, theirs_ms, t3 = (v * 1e3 for v in quartiles(theirs))
                rate = gflops[min(inter * intra, max(gflops))]
                bound = matmul_flops(*sizes) / (rate * 1e9) * 1e3
                print(f"{size:<8}{f'{inter}/{intra}':>12}{ours_ms:>9.2f}{(q3 - q1) / ours_ms:>6.0%}"
                      f"{theirs_ms:>9.2f}{(t3 - t1) / theirs_ms:>6.0%}{ours_ms / theirs_ms:>8.2f}"
                      f"{bound:>15.2f}{ours_ms / bound:>10.2f}")  # fmt: skip
    finally:
        for worker in workers.values():
            worker.close()


if __name__ == "__main__":
    sys.exit(main())
