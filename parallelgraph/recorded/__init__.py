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

Traces written by other frameworks ship too (copies of tests/fixtures/real, where the scripts
that made them are): TensorFlow 2.21's timeline of the seed graph with one and with two inter-op
threads, and PyTorch 2.13's profiler on two branches, eager and with `torch.jit.fork`
(`framework_trace`); `framework_runs` has how each was made and the times measured beside it.

>>> tf1 = framework_trace("tensorflow-inter1")                       # doctest: +SKIP
>>> print(tf1.explain())                                              # doctest: +SKIP

Framework sweeps of the seed graph (`pg.sweep(build, framework=...)`, written by
`tools/record_framework_sweeps.py` in throwaway environments with PyTorch and TensorFlow):
the result, the baseline trace's explanation and the verification of its advice, as text and
numbers (`framework_sweep`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..trace.model import Trace

__all__ = [
    "FRAMEWORK_TRACES",
    "H200_SIZES",
    "framework_runs",
    "framework_sweep",
    "framework_trace",
    "h200_medians",
    "h200_trace",
]

#: Framework traces shipped: name -> file.
FRAMEWORK_TRACES = {
    "tensorflow-inter1": "tf_seed_inter1.ctf.json",
    "tensorflow-inter2": "tf_seed_inter2.ctf.json",
    "pytorch-eager": "torch_eager_record_function.json",
    "pytorch-fork": "torch_fork_interop2.json",
}

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


def framework_trace(name: str = "tensorflow-inter1") -> Trace:
    """A trace written by TensorFlow or PyTorch (see `FRAMEWORK_TRACES`)."""
    if name not in FRAMEWORK_TRACES:
        raise ValueError(f"no framework trace {name!r}; choose from {tuple(FRAMEWORK_TRACES)}")
    return Trace.load(_path(FRAMEWORK_TRACES[name]))


def framework_runs() -> dict[str, Any]:
    """How each framework trace was made (tool versions, program, threads) and the times its
    script measured beside it (`timings_ms`: median, min, all runs), keyed by name."""
    with _path("framework_traces.json").open() as file:
        runs = json.load(file)
    return {name: runs[file] for name, file in FRAMEWORK_TRACES.items()}


#: Frameworks with a recorded sweep.
FRAMEWORK_SWEEPS = ("pytorch", "tensorflow")


@dataclass(frozen=True)
class RecordedSweep:
    """A framework sweep recorded elsewhere: the result (no traces), the explanation of the
    baseline's trace and the verification of its advice (as printed then), and where and when."""

    result: Any  # SweepResult
    explanation: str
    verification: str
    versions: dict[str, str]
    when: str
    machine: str


def framework_sweep(name: str = "pytorch") -> RecordedSweep:
    """The recorded sweep of the seed graph on `name` (see `FRAMEWORK_SWEEPS`)."""
    from ..experiments.sweeps import SweepResult

    if name not in FRAMEWORK_SWEEPS:
        raise ValueError(f"no recorded sweep for {name!r}; choose from {FRAMEWORK_SWEEPS}")
    with _path(f"framework_sweep_{name}.json").open() as file:
        record = json.load(file)
    return RecordedSweep(
        result=SweepResult.from_document(record["sweep"]),
        explanation=record["explanation"],
        verification=record["verification"],
        versions=record["versions"],
        when=record["when"],
        machine=record["machine"],
    )


def _path(name: str) -> Any:
    return resources.files(__name__).joinpath(name)
