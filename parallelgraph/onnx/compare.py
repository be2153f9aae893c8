"""One ONNX file in parallelgraph and in ONNX Runtime, side by side, at matching thread settings.

parallelgraph's side is `pg.sweep` over the model with its inputs bound as constants; ONNX
Runtime's is the framework sweep (`parallelgraph.frameworks`: each setting in a worker process
of its own, its `SessionOptions` made before the session, its profiler's trace read back), with
`inter_op_num_threads` under ORT_PARALLEL where inter-op is above 1 and ORT_SEQUENTIAL (its
default) otherwise. Both are medians of interleaved rounds with bootstrap intervals; the
speed-up of each setting is worded by the one rule (`experiments.stats`), the timelines go on one
time axis (`plot`), and `explain()` of each says what ran side by side (ONNX Runtime: one node at
a time on the CPU since 1.14, even in ORT_PARALLEL: microsoft/onnxruntime#16158).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..experiments import stats
from ..experiments.sweeps import SweepResult, sweep

SETTINGS = ((1, 1), (2, 1), (1, 2), (2, 2))


def ort_mode(inter: int) -> str:
    """ONNX Runtime's execution mode for an inter-op count: parallel only when it can use it."""
    return "parallel" if inter > 1 else "sequential"


@dataclass
class Comparison:
    """parallelgraph and ONNX Runtime on one model (module docstring)."""

    ours: SweepResult
    theirs: SweepResult
    settings: tuple[tuple[int, int], ...]
    #: The largest |parallelgraph - ONNX Runtime| over every output element.
    difference: float
    source: str

    def times_ms(self, inter: int, intra: int) -> tuple[list[float], list[float]]:
        """(parallelgraph's, ONNX Runtime's) run times at one setting."""
        ours = self.ours.values_ms(self.ours._cell_index({"inter": inter, "intra": intra}))
        cell = {"inter": inter, "intra": intra, "mode": ort_mode(inter)}
        return ours, self.theirs.values_ms(self.theirs._cell_index(cell))

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
        """The median run's trace of each at one setting."""
        cell = {"inter": inter, "intra": intra, "mode": ort_mode(inter)}
        return self.ours.median_trace(inter=inter, intra=intra), self.theirs.median_trace(**cell)

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
    progress: bool = False,
) -> Comparison:
    """Measure an `OnnxModel` (`pg.from_onnx`) and ONNX Runtime on the same file and inputs."""
    feeds = dict(feeds or model.example_feeds())
    data = model.model_bytes()
    bound = model.with_inputs(feeds)
    fetches = [bound.outputs[name] for name in model.outputs]
    inters = sorted({inter for inter, _ in settings})
    intras = sorted({intra for _, intra in settings})

    def ours() -> tuple[Any, Any]:
        return bound.graph, fetches

    def theirs(setting: Any) -> Any:
        session = setting.session(data)
        return lambda: session.run(None, feeds)

    grid = {"inter": inters, "intra": intras}
    common = dict(repeats=repeats, warmup=warmup, progress=progress, noise_check=False)
    our_result = sweep(ours, grid, predict=False, **common)
    modes = sorted({ort_mode(inter) for inter in inters})
    their_result = sweep(
        theirs, {**grid, "mode": modes}, framework="onnxruntime", trace=True, **common
    )
    difference = _difference(model, data, feeds)
    return Comparison(our_result, their_result, tuple(settings), difference, model.source)


def _difference(model: Any, data: bytes, feeds: Mapping[str, np.ndarray]) -> float:
    import onnxruntime as ort

    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, dict(feeds))
    got = model.run(feeds)
    return max(
        float(np.max(np.abs(np.asarray(got[name], np.float64) - want), initial=0.0))
        for name, want in zip(model.outputs, expected)
    )
