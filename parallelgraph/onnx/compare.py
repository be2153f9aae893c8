"""One ONNX file in parallelgraph and in ONNX Runtime, side by side, at matching thread settings.

parallelgraph's side runs the model with its inputs bound as constants, a session a setting;
ONNX Runtime's is the framework sweep (`parallelgraph.frameworks`: each setting in a worker
process of its own, its `SessionOptions` made before the session, its profiler's trace read
back), with `inter_op_num_threads` under ORT_PARALLEL where inter-op is above 1 and
ORT_SEQUENTIAL (its default) otherwise. Both are measured alike: each sample is the mean of
`steps` back-to-back runs (a single run after the other settings' turns measures mostly the
wake-up of idle threads: ONNX Runtime's ORT_PARALLEL took 4.6 ms instead of 0.044 ms on a tiny
model after a 0.2 s pause), in shuffled interleaved rounds, medians with bootstrap intervals;
the speed-up of each setting is worded by the one rule (`experiments.stats`), the timelines (one
traced run of ours, ONNX Runtime's median profiled sample) go on one time axis (`plot`), and
`explain()` of each says what ran side by side (ONNX Runtime: one node at a time on the CPU
since 1.14, even in ORT_PARALLEL: microsoft/onnxruntime#16158).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..experiments import stats
from ..experiments.sweeps import SweepResult
from ..frameworks.sweep import framework_sweep

SETTINGS = ((1, 1), (2, 1), (1, 2), (2, 2))


def ort_mode(inter: int) -> str:
    """ONNX Runtime's execution mode for an inter-op count: parallel only when it can use it."""
    return "parallel" if inter > 1 else "sequential"


@dataclass
class Comparison:
    """parallelgraph and ONNX Runtime on one model (module docstring)."""

    #: parallelgraph's samples (ms, each the mean of `steps` runs) and a traced run, by setting.
    ours: dict[tuple[int, int], list[float]]
    our_traces: dict[tuple[int, int], Any]
    theirs: SweepResult
    settings: tuple[tuple[int, int], ...]
    #: The largest |parallelgraph - ONNX Runtime| over every output element.
    difference: float
    source: str

    def times_ms(self, inter: int, intra: int) -> tuple[list[float], list[float]]:
        """(parallelgraph's, ONNX Runtime's) run times at one setting."""
        cell = {"inter": inter, "intra": intra, "mode": ort_mode(inter)}
        return self.ours[(inter, intra)], self.theirs.values_ms(self.theirs._cell_index(cell))

    def rows(self) -> list[list[str]]:
        rows = []
        for inter, intra in self.settings:
            ours, theirs = self.times_ms(inter, intra)
            rows.append(
                [
                    f"inter {inter}, intra {intra}",
                    f"{stats.median(ours):.3f}",
                    f"{stats.median(theirs):.3f} ({ort_mode(inter)})",
                    stats.speedup_text(theirs, ours),
                ]
            )
        return rows

    def best(self) -> tuple[tuple[int, int], tuple[int, int], str]:
        """(parallelgraph's best setting, ONNX Runtime's, the speed-up of ours against theirs)."""
        ours = min(self.settings, key=lambda s: stats.median(self.times_ms(*s)[0]))
        theirs = min(self.settings, key=lambda s: stats.median(self.times_ms(*s)[1]))
        text = stats.speedup_text(self.times_ms(*theirs)[1], self.times_ms(*ours)[0])
        return ours, theirs, text

    def __str__(self) -> str:
        header = ["setting", "parallelgraph ms", "ONNX Runtime ms", "parallelgraph's speed-up"]
        widths = [max(len(r[i]) for r in [header, *self.rows()]) for i in range(4)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths))
            for row in [header, *self.rows()]
        ]
        ours, theirs, text = self.best()
        lines.append(
            f"best: parallelgraph at inter {ours[0]}, intra {ours[1]}; ONNX Runtime at inter "
            f"{theirs[0]}, intra {theirs[1]} ({ort_mode(theirs[0])}); parallelgraph {text}"
        )
        lines.append(f"outputs: the largest difference is {self.difference:.3g}")
        return f"{self.source}\n" + "\n".join(lines)

    def traces(self, inter: int = 2, intra: int = 1) -> tuple[Any, Any]:
        """Our traced run and ONNX Runtime's median profiled sample at one setting."""
        cell = {"inter": inter, "intra": intra, "mode": ort_mode(inter)}
        return self.our_traces[(inter, intra)], self.theirs.median_trace(**cell)

    def plot(self, inter: int = 2, intra: int = 1) -> Any:
        """Both median runs on one time axis (`pg.plot.compare`)."""
        from .. import plot

        ours, theirs = self.traces(inter, intra)
        labels = [
            f"parallelgraph (inter {inter}, intra {intra})",
            f"ONNX Runtime ({ort_mode(inter)})",
        ]
        return plot.compare([ours, theirs], labels=labels)

    def explain(self, inter: int = 2, intra: int = 1) -> tuple[Any, Any]:
        """`explain()` of each median run at one setting."""
        ours, theirs = self.traces(inter, intra)
        return ours.explain(), theirs.explain()


def compare_onnxruntime(
    model: Any,
    feeds: Mapping[str, np.ndarray] | None = None,
    settings: Sequence[tuple[int, int]] = SETTINGS,
    repeats: int = 10,
    warmup: int = 2,
    steps: int = 10,
    seed: int = 0,
    progress: bool = False,
) -> Comparison:
    """Measure an `OnnxModel` (`pg.from_onnx`) and ONNX Runtime on the same file and inputs
    (module docstring): `repeats` samples a setting, each the mean of `steps` runs."""
    feeds = dict(feeds or model.example_feeds())
    data = model.model_bytes()
    settings = tuple(dict.fromkeys((int(i), int(j)) for i, j in settings))
    ours, our_traces = _measure_ours(
        model.with_inputs(feeds), model, settings, repeats, warmup, steps, seed
    )

    def theirs(setting: Any) -> Any:
        session = setting.session(data)
        return lambda: session.run(None, feeds)

    inters = sorted({inter for inter, _ in settings})
    grid = {
        "inter": inters,
        "intra": sorted({intra for _, intra in settings}),
        "mode": sorted({ort_mode(inter) for inter in inters}),
    }
    their_result = framework_sweep(
        theirs,
        "onnxruntime",
        grid,
        repeats=repeats,
        warmup=warmup,
        seed=seed,
        noise_check=False,
        trace=True,
        predict=False,
        progress=progress,
        steps=steps,
    )
    difference = _difference(model, data, feeds)
    return Comparison(ours, our_traces, their_result, settings, difference, model.source)


def _measure_ours(
    bound: Any,
    model: Any,
    settings: tuple[tuple[int, int], ...],
    repeats: int,
    warmup: int,
    steps: int,
    seed: int,
) -> tuple[dict[tuple[int, int], list[float]], dict[tuple[int, int], Any]]:
    """Samples (ms, the mean of `steps` back-to-back runs) in shuffled interleaved rounds, and
    one traced run, for each setting."""
    import time

    from ..config import Config

    fetches = [bound.outputs[name] for name in model.outputs]
    sessions = {
        setting: bound.session(Config(inter_op_threads=setting[0], intra_op_threads=setting[1]))
        for setting in settings
    }
    samples: dict[tuple[int, int], list[float]] = {setting: [] for setting in settings}
    try:
        for session in sessions.values():
            for _ in range(warmup):
                session.run(fetches)
        rng = np.random.default_rng(seed)
        for _ in range(repeats):
            for index in rng.permutation(len(settings)):
                setting = settings[index]
                session = sessions[setting]
                start = time.perf_counter_ns()
                for _ in range(steps):
                    session.run(fetches)
                samples[setting].append((time.perf_counter_ns() - start) / steps / 1e6)
        traces = {setting: sessions[setting].run(fetches, trace=True)[1] for setting in settings}
    finally:
        bound.close()
    return samples, traces


def _difference(model: Any, data: bytes, feeds: Mapping[str, np.ndarray]) -> float:
    import onnxruntime as ort

    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, dict(feeds))
    got = model.run(feeds)
    return max(
        float(np.max(np.abs(np.asarray(got[name], np.float64) - want), initial=0.0))
        for name, want in zip(model.outputs, expected)
    )
