"""How well does the what-if replay predict? Measured against predicted makespans.

    python benchmarks/simulate_accuracy.py [--repeats N] [--sizes small,medium]

For the two-network graph and a random DAG, a sweep over inter-op {1, 2, 4} x intra-op {1, 2}
measures every cell (interleaved, medians); `simulate` replays the median trace of the
inter 1 / intra 1 cell under each cell's config. The table gives both and the relative error;
the last line the median absolute error over the non-baseline cells (target: <= 15%).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--sizes", default="small,medium")
    args = parser.parse_args()
    rows, errors = [], []
    for preset in ("two-networks", "random"):
        for size in args.sizes.split(","):
            grid = {"size": [size], "inter": [1, 2, 4], "intra": [1, 2]}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                result = pg.sweep(preset, grid, repeats=args.repeats, warmup=3, progress=False)
            for row in result.rows():
                error = row["predicted_ms"] / row["median_ms"] - 1
                if row["verdict"] != "baseline":
                    errors.append(abs(error))
                rows.append(
                    [
                        preset,
                        size,
                        row["inter"],
                        row["intra"],
                        f"{row['median_ms']:.2f}",
                        f"{row['predicted_ms']:.2f}",
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
