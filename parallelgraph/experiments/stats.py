"""Honest statistics for timings: medians, spread, bootstrap confidence intervals, verdicts.

Timings on a shared machine are skewed and heavy-tailed, so everything here is about medians:
the interquartile range says how spread the runs were; a percentile bootstrap gives a 95%
confidence interval of the median (and of the ratio of two medians, resampling both samples);
a difference is called only when that interval excludes 1.0 — otherwise it is "within noise".
For planning, the median's CI half-width is about 1.57 * IQR / sqrt(n) (the notch rule of box
plots), which tells how many repeats a requested precision needs.

Too few runs say nothing about spread. A 95% interval of a median needs at least `MIN_RUNS`
(6) values: without assuming a distribution, the widest interval n values can give, their
minimum to their maximum, holds the median with probability 1 - 2 * 0.5**n, which is 94% at 5
values and 97% at 6; a percentile bootstrap of fewer values gives an interval inside that
range, so it claims more than the runs hold. With fewer values (on either side of a ratio) a CI
is (NaN, NaN), never a pretend interval, and the verdict is "too few runs": a handful of samples
never calls a difference.

One rule for every speed-up shown. `Speedup.of(baseline, other)` (or `speedup_text`) is the
only way the package turns two sets of times into words, and every place that prints a
speed-up — `parallelgraph demo`, the dashboard's status, table and timeline title, the
notebooks — calls it: the ratio of medians with its CI and verdict, "×0.97 (95% CI 0.81-1.12,
within noise)", or "×0.53 (one run: not a conclusion)" where a side has a single run. The
bootstrap is seeded (`SEED`) unless the caller passes a generator, so the same runs read the
same wherever they are shown. `fastest_text` does the same for a ranking: the fastest setting
and whether its runs tell it from the runner-up.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
#: The fewest values a 95% interval of a median is computed from (see the module docstring).
MIN_RUNS = 6
#: The verdict when a CI cannot be computed (fewer than `MIN_RUNS` runs on a side).
TOO_FEW = "too few runs"


def median(values: Sequence[float]) -> float:
    """The median of `values` (the middle one, or the mean of the two middle ones)."""
    return statistics.median(values)


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def relative_iqr(values: Sequence[float]) -> float:
    """Interquartile range over the median (0.1 = the middle half spans 10% of the median)."""
    low, high = quartiles(values)
    middle = median(values)
    return (high - low) / middle if middle else 0.0


def bootstrap_median_ci(
    values: Sequence[float], rng: np.random.Generator, level: float = LEVEL
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median; (NaN, NaN) from fewer than
    `MIN_RUNS` values."""
    data = np.asarray(values, dtype=float)
    if len(data) < MIN_RUNS:
        return math.nan, math.nan
    medians = np.median(rng.choice(data, size=(RESAMPLES, len(data))), axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(medians, tail)), float(np.quantile(medians, 1 - tail))


def bootstrap_ratio_ci(
    baseline: Sequence[float],
    other: Sequence[float],
    rng: np.random.Generator,
    level: float = LEVEL,
) -> tuple[float, float, float]:
    """Speed-up median(baseline) / median(other) and its bootstrap CI (both resampled); the CI
    is (NaN, NaN) when either side has fewer than `MIN_RUNS` values."""
    base, new = np.asarray(baseline, dtype=float), np.asarray(other, dtype=float)
    ratio = float(np.median(base) / np.median(new))
    if len(base) < MIN_RUNS or len(new) < MIN_RUNS:
        return ratio, math.nan, math.nan
    base_medians = np.median(rng.choice(base, size=(RESAMPLES, len(base))), axis=1)
    new_medians = np.median(rng.choice(new, size=(RESAMPLES, len(new))), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample of zeros: inf, not a warning
        ratios = base_medians / new_medians
    tail = (1 - level) / 2
    return ratio, float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def verdict(low: float, high: float) -> str:
    """'faster' / 'slower' when the speed-up CI excludes 1.0, else 'within noise' ('too few
    runs' when there is no CI)."""
    if math.isnan(low) or math.isnan(high):
        return TOO_FEW
    if low > 1.0:
        return "faster"
    if high < 1.0:
        return "slower"
    return "within noise"


def repeats_for_precision(values: Sequence[float], precision: float) -> int:
    """Repeats needed for the median's 95% CI half-width to be `precision` of the median."""
    spread = relative_iqr(values)
    if spread == 0:
        return 3
    return max(3, math.ceil((1.57 * spread / precision) ** 2))


# -- the one rule for a speed-up shown to a user --------------------------------------------
#: What a speed-up says instead of a CI when a side has a single run.
ONE_RUN = "one run: not a conclusion"


def runs_text(count: int) -> str:
    """ "1 run", "15 runs"."""
    return f"{count} run{'' if count == 1 else 's'}"


def too_few_text(runs: int) -> str:
    """What a number says instead of a CI when `runs` (fewer than `MIN_RUNS`) are all it has:
    `ONE_RUN`, or "3 runs: too few for a 95% CI, not a conclusion"."""
    if runs <= 1:
        return ONE_RUN
    return f"{runs} runs: too few for a {LEVEL:.0%} CI, not a conclusion"


#: Seed of the bootstrap when the caller gives no generator: the same runs always give the
#: same text, so a speed-up shown in two places (a table and a figure title) reads the same.
SEED = 0


@dataclass(frozen=True)
class Speedup:
    """A speed-up median(baseline) / median(other) with its 95% bootstrap CI (NaN, NaN when a
    side has fewer than `MIN_RUNS` runs: see the module docstring). Above 1.0 the other runs
    were faster.

    `text()` is how every speed-up the package prints reads — the demo's table, the
    dashboard's status, table and timeline title, the notebooks — so that a number is never
    shown without what it is worth:

    - "×1.89 (95% CI 1.80-1.97, faster)" — the CI excludes 1.0;
    - "×0.97 (95% CI 0.81-1.12, within noise)" — it does not, whatever the ratio;
    - "×0.53 (one run: not a conclusion)" — a side has a single run: no CI exists;
    - "×0.91 (3 runs: too few for a 95% CI, not a conclusion)" — fewer than `MIN_RUNS`.

    A sweep's row holds the same three numbers: `Speedup(row.speedup, *row.speedup_ci)`.
    """

    ratio: float
    low: float
    high: float
    #: runs on the side with fewer (what the text gives when there are too few for a CI);
    #: not compared: two speed-ups are equal when their numbers are
    runs: int | None = field(default=None, compare=False)

    @classmethod
    def of(
        cls,
        baseline: Sequence[float],
        other: Sequence[float],
        rng: np.random.Generator | None = None,
    ) -> Speedup:
        """The speed-up of `other` against `baseline` (times, e.g. makespans in ms).

        `rng` defaults to a fresh generator seeded with `SEED`. A median of zero (nothing was
        timed) gives a ratio of NaN, never a division by zero."""
        if len(baseline) == 0 or len(other) == 0:
            raise ValueError(
                f"a speed-up needs at least one run on each side, got {len(baseline)} "
                f"and {len(other)}"
            )
        if not median(baseline) > 0 or not median(other) > 0:
            return cls(math.nan, math.nan, math.nan)
        generator = np.random.default_rng(SEED) if rng is None else rng
        runs = min(len(baseline), len(other))
        return cls(*bootstrap_ratio_ci(baseline, other, generator), runs=runs)

    @property
    def verdict(self) -> str:
        """`verdict(low, high)`: "faster", "slower", "within noise" or "too few runs"."""
        return verdict(self.low, self.high)

    @property
    def conclusive(self) -> bool:
        """Whether the runs support calling a difference (the CI excludes 1.0)."""
        return self.verdict in ("faster", "slower")

    def text(self) -> str:
        """The speed-up as every place shows it (see the class docstring)."""
        if math.isnan(self.ratio):
            return "no speed-up: a median of 0 ms"
        if math.isnan(self.low) or math.isnan(self.high):
            return f"×{self.ratio:.2f} ({too_few_text(self.runs or 1)})"
        return f"×{self.ratio:.2f} ({LEVEL:.0%} CI {self.low:.2f}-{self.high:.2f}, {self.verdict})"

    def __str__(self) -> str:
        return self.text()


def speedup(
    baseline: Sequence[float], other: Sequence[float], rng: np.random.Generator | None = None
) -> Speedup:
    """`Speedup.of(baseline, other, rng)`: the speed-up of `other` against `baseline`."""
    return Speedup.of(baseline, other, rng)


def speedup_text(
    baseline: Sequence[float], other: Sequence[float], rng: np.random.Generator | None = None
) -> str:
    """The speed-up of `other` against `baseline` as every place prints it, e.g.
    "×1.89 (95% CI 1.80-1.97, faster)" or "×0.53 (one run: not a conclusion)"."""
    return Speedup.of(baseline, other, rng).text()


def fastest_text(
    samples: Mapping[str, Sequence[float]], rng: np.random.Generator | None = None
) -> str:
    """A ranking with its uncertainty: which setting has the lowest median time, and whether
    the runs tell it from the runner-up — the one ranking that matters, and the one most often
    decided by noise. `samples` maps a setting's name to its times.

    "fastest: inter 2 (median 25.95 ms), ×1.27 (95% CI 1.20-1.35, faster) against the next,
    inter 1/intra 2" when the CI of the first against the second excludes 1.0; otherwise the
    same numbers end "...: no clear fastest" (or with "one run: not a conclusion")."""
    named = {name: list(values) for name, values in samples.items() if len(values)}
    if not named:
        raise ValueError("a ranking needs at least one setting with runs")
    order = sorted(named, key=lambda name: median(named[name]))
    first = order[0]
    head = f"fastest: {first} (median {median(named[first]):.2f} ms)"
    if len(order) == 1:
        return f"{head}, the only setting measured"
    second = order[1]
    against = Speedup.of(named[second], named[first], rng)
    text = f"{head}, {against.text()} against the next, {second}"
    return text if against.verdict == "faster" else f"{text}: no clear fastest"
