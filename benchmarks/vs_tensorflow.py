"""The seed graph in parallelgraph and in TensorFlow, side by side in one run.

    python benchmarks/vs_tensorflow.py --tensorflow /path/to/venv/bin/python
           [--sizes small,medium,large] [--repeats 9] [--warmup 3]

A thin wrapper: `benchmarks/vs_peers.py --peers tensorflow --workloads seed`, which also runs
the other peers and workloads (its docstring says how each is measured). TensorFlow is not a
dependency: give a Python interpreter that has `tensorflow-cpu` (a throwaway venv;
tests/fixtures/real/make_all.sh makes one). Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorflow", required=True, help="a Python that has tensorflow-cpu")
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    peer = ["--peers-python", args.tensorflow, "--peers", "tensorflow", "--workloads", "seed"]
    vs_peers.main(
        [*peer, "--sizes", args.sizes, "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
    )


if __name__ == "__main__":
    sys.exit(main())
