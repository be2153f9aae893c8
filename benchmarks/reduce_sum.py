"""reduce_sum on one thread: the op's traced time against NumPy's `np.sum` of the same array,
interleaved, medians of repeats.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/reduce_sum.py [--repeats 31]

For float32 inputs of 256x1024 (axis None, 1 and 0), 64x4096 (axis 0), 8x64x512 (axis 1) and
64x128 (axis None): the op's time in
a one-thread Session's trace (its kernel and the op's own Python work) and NumPy's float32 sum
(pairwise, in float32: ours accumulates in float64, the more accurate). Results:
benchmarks/RESULTS.md, "reduce_sum along the last axis".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import median, spread, table

import parallelgraph as pg

CASES = [
    ((256, 1024), None),
    ((256, 1024), 1),
    ((256, 1024), 0),
    ((64, 4096), 0),
    ((8, 64, 512), 1),
    ((64, 128), None),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for shape, axis in CASES:
        value = rng.standard_normal(shape).astype(np.float32)
        graph = pg.Graph("reduce")
        with graph.as_default():
            total = pg.reduce_sum(pg.placeholder(shape, "float32"), axis=axis)
        feed = {total.op.inputs[0]: value}
        ours, numpy_times = [], []
        with pg.Session(graph, pg.Config(inter_op_threads=1, intra_op_threads=1)) as session:
            session.run(total, feed)
            for _ in range(args.repeats):
                _, trace = session.run(total, feed, trace=True)
                ours.append(next(e.duration_ns for e in trace.ops()) / 1e3)
                start = time.perf_counter()
                value.sum(axis=axis)
                numpy_times.append((time.perf_counter() - start) * 1e6)
        rows.append(
            [
                f"{'x'.join(map(str, shape))}, {axis}",
                f"{median(ours):.1f} ({spread(ours)})",
                f"{median(numpy_times):.1f} ({spread(numpy_times)})",
                f"{median(ours) / median(numpy_times):.2f}",
            ]
        )
    print(f"one thread, medians of {args.repeats} interleaved runs")
    print(table(["shape, axis", "pg op us (IQR)", "NumPy float32 us (IQR)", "pg/NumPy"], rows))


if __name__ == "__main__":
    main()
