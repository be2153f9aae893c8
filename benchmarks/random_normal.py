"""random_normal on one core: ns per number, parallelgraph's kernels against NumPy and
TensorFlow, medians of interleaved repeats.

    python benchmarks/random_normal.py [--rows 512 --cols 1024] [--repeats 15]
           [--tensorflow /path/to/venv/bin/python]   # a Python with tensorflow-cpu installed

Rows: parallelgraph's vectorized kernels (float32 and float64: what the op runs), its libm
kernel (float32 and float64: the previous kernels), the op itself in a one-thread Session
(float32 and float64), NumPy's
`Generator.standard_normal`, and with `--tensorflow` TensorFlow's RandomStandardNormal (TF2
eager, one intra-op and one inter-op thread, measured in that interpreter in the same rounds).
Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

import parallelgraph as pg
from parallelgraph.kernels.normal32 import normal_rows32
from parallelgraph.kernels.normal64 import normal_rows64
from parallelgraph.kernels.random import normal_constants, normal_rows

TENSORFLOW_WORKER = r"""
import sys, time
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
rows, cols = int(sys.argv[1]), int(sys.argv[2])
for dtype in (tf.float32, tf.float64):
    tf.random.normal((rows, cols), dtype=dtype).numpy()  # warm-up
for line in sys.stdin:
    dtype = tf.float32 if line.strip() == "float32" else tf.float64
    start = time.perf_counter()
    tf.random.normal((rows, cols), dtype=dtype).numpy()
    print(time.perf_counter() - start, flush=True)
"""


def kernel_cases(rows: int, cols: int) -> dict[str, Callable[[], None]]:
    out32 = np.empty((rows, cols), np.float32)
    out64 = np.empty((rows, cols), np.float64)
    seed = np.uint64(1)
    c32, s32 = normal_constants(out32.dtype, 0.0, 1.0)
    c64, s64 = normal_constants(out64.dtype, 0.0, 1.0)
    rng = np.random.default_rng(0)
    graph = pg.Graph()
    with graph.as_default():
        op = pg.random_normal((rows, cols), seed=1)
        op64 = pg.random_normal((rows, cols), seed=1, dtype="float64")
    session = pg.Session(graph, pg.Config(inter_op_threads=1, intra_op_threads=1))
    return {
        "parallelgraph float32, vectorized": lambda: normal_rows32(out32, seed, 0.0, 1.0, 0, rows),
        "parallelgraph float64, vectorized": lambda: normal_rows64(out64, seed, 0.0, 1.0, 0, rows),
        "parallelgraph float32, libm": lambda: normal_rows(out32, seed, c32, s32, 0, rows),
        "parallelgraph float64, libm": lambda: normal_rows(out64, seed, c64, s64, 0, rows),
        "pg.random_normal op, float32, 1 thread": lambda: session.run(op),
        "pg.random_normal op, float64, 1 thread": lambda: session.run(op64),
        "NumPy standard_normal float32": lambda: rng.standard_normal((rows, cols), np.float32),
        "NumPy standard_normal float64": lambda: rng.standard_normal((rows, cols), np.float64),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tensorflow", help="a Python interpreter that has tensorflow-cpu")
    args = parser.parse_args()
    count = args.rows * args.cols
    cases = kernel_cases(args.rows, args.cols)
    for case in cases.values():
        case()  # compile, warm up
    worker = None
    if args.tensorflow:
        worker = subprocess.Popen(
            [args.tensorflow, "-c", TENSORFLOW_WORKER, str(args.rows), str(args.cols)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeats):  # rounds: every case once per round
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
        if worker is not None:
            for dtype in ("float32", "float64"):
                worker.stdin.write(dtype + "\n")
                worker.stdin.flush()
                times.setdefault(f"TensorFlow RandomStandardNormal {dtype}", []).append(
                    float(worker.stdout.readline())
                )
    if worker is not None:
        worker.stdin.close()
        worker.wait()
    numpy32 = statistics.median(times["NumPy standard_normal float32"])
    print(f"{count:,} numbers ({args.rows} x {args.cols}), {args.repeats} rounds, one core")
    print(f"{'case':<42}{'ns/number':>10}{'IQR':>7}{'vs NumPy f32':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        q1, _, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (median,) * 3
        ratio = numpy32 / median
        print(f"{name:<42}{median / count * 1e9:>10.2f}{(q3 - q1) / median:>7.0%}{ratio:>13.2f}x")


if __name__ == "__main__":
    sys.exit(main())
