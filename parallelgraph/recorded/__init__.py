"""Traces recorded on real hardware, shipped with the package: see a GPU run without a GPU.

`benchmarks/gpu_streams.py` ran the two-network graph on an NVIDIA H200 on 2026-11-30 (driver
580.159.04, numba-cuda 0.30.4; benchmarks/RESULTS.md has the whole table). Kept here are the
median two-stream trace of each size it measured — `narrow` (32, 16384, 1024, 32), `small`,
`medium`, `large` and three other thin shapes — and the medians of every configuration. They load
like any trace: plot them, `explain()` them, replay them with `pg.simulate` on one stream (the
replay predicts the measured one-stream time within 5% for `narrow` and `small`).

>>> two = h200_trace("narrow")                                      # doctest: +SKIP
>>> one = pg.simulate(two, pg.Config(streams=1))                    # doctest: +SKIP
>>> pg.plot.compare([one, two], labels=["1 stream, replayed", "2"])  # doctest: +SKIP
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ..trace import Trace

__all__ = ["H200_SIZES", "h200_medians", "h200_trace"]

#: Sizes with a recorded trace: preset names and BATCHxINxHIDDENxOUT shapes.
H200_SIZES = (
    "narrow",
    "small",
    "medium",
    "large",
    "32x2048x2048x32",
    "32x32768x1024x32",
    "64x16384x1024x64",
)


def h200_trace(size: str = "narrow") -> Trace:
    """The median two-stream trace of the two-network graph of `size`, recorded on an H200."""
    if size not in H200_SIZES:
        raise ValueError(f"no recorded H200 trace for size {size!r}; choose from {H200_SIZES}")
    return Trace.load(_path(f"h200_{size}_2streams.json"))


def h200_medians() -> dict[str, Any]:
    """The benchmark's rows: size, launch path, streams, median ms, overlap, errors (JSON)."""
    with _path("h200_gpu_streams.json").open() as file:
        return json.load(file)


def _path(name: str) -> Any:
    return resources.files(__name__).joinpath(name)
