"""Record the framework sweeps notebook 06 shows where PyTorch or TensorFlow is not installed.

    /tmp/tjvenv/bin/python tools/record_framework_sweeps.py pytorch
    /tmp/tf2venv/bin/python tools/record_framework_sweeps.py tensorflow

Run in a throwaway environment with the framework, parallelgraph (`pip install -e .`) and,
for TensorFlow, xprof. Sweeps the seed graph (`parallelgraph.frameworks.examples`, batch 128,
width 512) over inter [1, 2] x intra [1, 2] with `trace=True`, explains the baseline's trace,
verifies its advice, and writes parallelgraph/recorded/framework_sweep_<name>.json. Wait for a
quiet machine first: the result says when it was busy.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path

import parallelgraph as pg
from parallelgraph.frameworks.examples import BUILDS

OUT = Path(__file__).resolve().parent.parent / "parallelgraph" / "recorded"
PACKAGES = {"pytorch": ["torch"], "tensorflow": ["tensorflow-cpu", "tensorflow", "xprof"]}
REPEATS = 20


def versions(name: str) -> dict[str, str]:
    found = {"python": platform.python_version(), "parallelgraph": pg.__version__}
    for package in PACKAGES[name]:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def main() -> None:
    name = sys.argv[1]
    result = pg.sweep(
        BUILDS[name], framework=name, inter=[1, 2], intra=[1, 2], batch=[128], width=[512],
        repeats=REPEATS, trace=True, progress=False,
    )  # fmt: skip
    explanation = str(result.explain())
    verification = str(result.verify(repeats=REPEATS))
    print(result, explanation, verification, sep="\n\n")
    record = {
        "sweep": result.to_document(),
        "explanation": explanation,
        "verification": verification,
        "versions": versions(name),
        "when": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, load {os.getloadavg()[0]:.1f}",
    }
    path = OUT / f"framework_sweep_{name}.json"
    path.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
