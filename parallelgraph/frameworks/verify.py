"""Advice checked by measurement: run the setting explain() advises beside the one it read.

A trace reader can only say what a trace shows; whether its advice helps is a measurement.
`verify(result, cell, advice)` turns the advice into a setting (`Framework.advice` maps the
advice's kind — "inter_op", "intra_op" — to a change in the framework's own terms: ONNX
Runtime's inter-op advice is about intra_op_num_threads, JAX's about devices), starts two
fresh workers — the cell's setting and the advised one, same build parameters — and times
them in interleaved rounds like the sweep. The `Verification` says what was measured (the
speed-up with its bootstrap CI and a verdict that calls a difference only when the CI excludes
1.0) against what the replay predicted from the cell's trace, and says plainly when the
advice did not help or the framework did not take the setting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import cpu_count
from ..experiments import stats
from ..experiments.sweeps import SweepResult, SweepRun
from ..explain.evidence import Advice
from .knobs import Framework, unapplied, unapplied_text
from .pool import Workers
from .sweep import Runner, label_of, predicted_ratio, replay_config


@dataclass(frozen=True)
class Verification:
    """What running an advised setting measured, beside what the replay predicted."""

    framework: str
    advice: str  # the advice's words, or "the setting ..." when a setting was given
    before: dict[str, Any]  # the cell's knobs and parameters
    after: dict[str, Any]  # the advised ones
    read_back: dict[str, Any]  # what the framework reported for `after`
    before_ms: list[float]
    after_ms: list[float]
    speedup: float  # median(before) / median(after)
    speedup_ci: tuple[float, float]
    #: stats.verdict ("faster", "slower", "within noise", "too few runs"), or "not applied"
    #: when the framework did not confirm a changed knob of `after`: then nothing was verified
    verdict: str
    predicted_speedup: float | None  # the replay's, from the cell's trace
    complete: bool = True

    @property
    def helped(self) -> bool:
        return self.verdict == "faster"

    def __str__(self) -> str:
        changed = ", ".join(
            f"{k} {self.before.get(k)} -> {v}"
            for k, v in self.after.items()
            if self.before.get(k) != v
        )
        low, high = self.speedup_ci
        ci = "no CI: too few runs" if math.isnan(low) else f"95% CI {low:.2f}-{high:.2f}"
        outcome = {
            "faster": "it helped",
            "slower": "it made the step slower",
            "within noise": (
                "the CI includes 1.0, so these runs cannot tell it from no change: not shown "
                "to help (more repeats, or a quieter machine, would narrow the CI)"
            ),
            "not applied": (
                "no verdict: the framework did not confirm the advised setting, so these runs "
                "did not measure it"
            ),
        }.get(self.verdict, "too few runs to tell")
        lines = [
            f"Advice: {self.advice}",
            f"Measured ({changed}; {len(self.before_ms)} and {len(self.after_ms)} steps, "
            f"interleaved): median {stats.median(self.before_ms):.3f} ms -> "
            f"{stats.median(self.after_ms):.3f} ms, speed-up {self.speedup:.2f}x ({ci}): "
            f"{outcome}.",
        ]
        if self.predicted_speedup is not None:
            lines.append(
                f"The replay of the trace predicted {self.predicted_speedup:.2f}x, "
                + (
                    "inside the measured 95% CI."
                    if low <= self.predicted_speedup <= high
                    else "outside the measured 95% CI: the replay's model of this framework "
                    "misses something here."
                    if not math.isnan(low)
                    else "with no measured CI to hold it against."
                )
            )
        else:
            lines.append("The replay made no prediction for this trace.")
        missing = unapplied_text(self.after, self.read_back)
        if missing:
            lines.append(f"Not applied: {missing}.")
        if not self.complete:
            lines.append("INCOMPLETE: interrupted; the numbers are what was measured before.")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        items = "".join(f"<li>{html.escape(line)}</li>" for line in str(self).splitlines())
        return f"<div class='parallelgraph-verify'><b>verify()</b><ul>{items}</ul></div>"


def advised_setting(result: SweepResult, index: int, advice: Any) -> tuple[str, dict[str, Any]]:
    """(the advice's words, the setting it asks for) for cell `index` of a sweep."""
    framework_ = result.runner.framework
    cell = dict(result.cells[index])
    if isinstance(advice, Mapping):
        unknown = [k for k in advice if k not in cell and not result.is_knob(k)]
        if unknown:
            raise ValueError(
                f"verify({dict(advice)}): {unknown} are not knobs of {framework_.title}"
            )
        return f"the setting {dict(advice)}", {**cell, **advice}
    if advice is None:
        if not result.traces.get(index):
            raise ValueError(
                "verify() without advice explains the cell's trace: run the sweep with "
                "trace=True, or pass the advice (an Advice, explain()'s report, or a setting)"
            )
        advice = result.traces[index][0].explain()
    return advised_change(framework_, cell, advice)


def advised_change(
    framework_: Framework, cell: Mapping[str, Any], advice: Any
) -> tuple[str, dict[str, Any]]:
    """(the advice's words, the setting it asks for): `Framework.advice` maps the advice's kind
    to a change of `cell`; a ValueError when it is no thread setting or changes nothing."""
    from ..explain import Explanation

    cell = dict(cell)
    if isinstance(advice, Explanation):
        advice = advice.advice
    if not isinstance(advice, Advice):
        raise TypeError(
            f"verify(advice=...): an Advice, explain()'s report or a setting, not {advice!r:.80}"
        )
    change = framework_.advice.get(advice.knob)
    if change is None:
        raise ValueError(
            f"the advice ({advice.knob}: {advice.text}) is not a {framework_.title} thread "
            "setting: a run with other knobs cannot verify it"
        )
    after = change(cell, cpu_count())
    if after == cell:
        raise ValueError(
            f"the advice ({advice.text}) asks for what {label_of(framework_, cell)} already "
            "has: there is nothing to compare"
        )
    return advice.text, after


def compared(
    framework_: Framework,
    words: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    kept: list[SweepRun],
    read_back: tuple[Mapping[str, Any], Mapping[str, Any]],
    trace: Any,
    is_knob: Callable[[str], bool],
    complete: bool,
    seed: int = 0,
) -> Verification:
    """The Verification of interleaved measurements `kept` (cell 0: before, 1: after), with
    the replay's prediction from `trace` (the before setting's, or None)."""
    before_ms = [m.makespan_ms for m in kept if m.cell == 0]
    after_ms = [m.makespan_ms for m in kept if m.cell == 1]
    if not before_ms or not after_ms:
        raise KeyboardInterrupt("verify() was interrupted before both settings were measured")
    speedup, low, high = stats.bootstrap_ratio_ci(before_ms, after_ms, np.random.default_rng(seed))
    predicted = None
    if trace is not None:
        ratio = predicted_ratio(
            trace,
            replay_config({k: v for k, v in before.items() if is_knob(k)}, read_back[0]),
            replay_config({k: v for k, v in after.items() if is_knob(k)}, read_back[1]),
        )
        predicted = None if ratio is None else 1 / ratio
    return Verification(
        framework=framework_.name,
        advice=words,
        before=dict(before),
        after=dict(after),
        read_back=dict(read_back[1]),
        before_ms=before_ms,
        after_ms=after_ms,
        speedup=speedup,
        speedup_ci=(low, high),
        verdict=(
            "not applied"
            if any(before.get(k) != after[k] for k in unapplied(after, read_back[1]))
            else stats.verdict(low, high)
        ),
        predicted_speedup=predicted,
        complete=complete,
    )


def verify(result: SweepResult, index: int, advice: Any, repeats: int | None) -> Verification:
    """Measure the advised setting against cell `index` (see the module docstring)."""
    runner: Runner | None = result.runner
    if runner is None:
        raise ValueError(
            "verify() needs the sweep that made this result (a loaded result has none)"
        )
    words, after = advised_setting(result, index, advice)
    before = dict(result.cells[index])
    kept: list[SweepRun] = []
    with Workers() as workers:
        (b, _), (a, reply) = runner.start(workers, [before, after], result.is_knob)
        complete = runner.measure([b, a], repeats or runner.repeats, kept.append)
    traces = result.traces.get(index)
    return compared(
        runner.framework, words, before, after, kept,
        (result.read_back.get(index, {}), reply["read_back"]),
        traces[0] if traces else None, result.is_knob, complete, runner.seed,
    )  # fmt: skip
