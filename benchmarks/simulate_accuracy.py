"""How well does the what-if replay predict? Measured against predicted makespans.

    python benchmarks/simulate_accuracy.py [--repeats N] [--sizes small,medium]
    python benchmarks/simulate_accuracy.py --gpu

For the two-network graph and a random DAG, a sweep over inter-op {1, 2, 4} x intra-op {1, 2}
measures every cell (interleaved, medians); `simulate` replays the median trace of the
inter 1 / intra 1 cell under each cell's config. The table gives both and the relative error;
the last line the median absolute error over the non-baseline cells (target: <= 15%).

`--gpu` needs no GPU: it replays the two-stream traces that benchmarks/gpu_streams.py recorded
on an H200 (shipped as `parallelgraph.recorded`) on one stream and on their own two, and
compares with the medians measured there in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from _common import table

import parallelgraph as pg


def gpu_table() -> str:
    """Replays of the H200 two-stream traces against the medians measured with them."""
    from parallelgraph.recorded import h200_medians, h200_trace

    measured = h200_medians()
    medians = {
        (row["size"], row["streams"]): row["median_ms"]
        for row in measured["rows"]
        if row["launch"] == "prepared"
    }
    rows = []
    for size in dict.fromkeys(size for size, _ in medians):
        trace = h200_trace(size)
        for streams in (1, 2):
            predicted = pg.simulate(trace, pg.Config(streams=streams, stream_policy="branches"))
            real = medians[(size, streams)]
            error = predicted.makespan_ms / real - 1
            rows.append([size, streams, f"{real:.3f}", f"{predicted.makespan_ms:.3f}"])
            rows[-1].append(f"{100 * error:+.0f}%")
    header = ["size (from its 2-stream trace)", "streams", "measured ms", "predicted ms", "error"]
    return f"{measured['device']}\n" + table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--sizes", default="small,medium")
    parser.add_argument("--gpu", action="store_true", help="replay the stored H200 traces")
    args = parser.parse_args()
    if args.gpu:
        print(gpu_table())
        return
    rows, errors = [], []
    for preset in ("two-networks", "random"):
        for size in args.sizes.split(","):
            grid = {"size": [size], "inter": [1, 2, 4], "intra": [1, 2]}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                result = pg.sweep(preset, grid, repeats=args.repeats, warmup=3, progress=False)
            for row in result.rows():
                error = row.predicted_ms / row.median_ms - 1
                if row.verdict != "baseline":
                    errors.append(abs(error))
                rows.append(
                    [
                        preset,
                        size,
                        row.params["inter"],
                        row.params["intra"],
                        f"{row.median_ms:.2f}",
                        f"{row.predicted_ms:.2f}",
                        f"{100 * error:+.0f}%",
                    ]
                )
    print(table(["graph", "size", "inter", "intra", "measured ms", "predicted ms", "error"], rows))
    print(
        f"median absolute error over {len(errors)} non-baseline cells: "
        f"{100 * statistics.median(errors):.1f}% (max {100 * max(errors):.0f}%)"
    )


if __name__ == "__main__":
    main()
