"""Honest statistics for timings: medians, spread, bootstrap confidence intervals, verdicts.

Timings on a shared machine are skewed and heavy-tailed, so everything here is about medians:
the interquartile range says how spread the runs were; a percentile bootstrap gives a 95%
confidence interval of the median (and of the ratio of two medians, resampling both samples);
a difference is called only when that interval excludes 1.0 — otherwise it is "within noise".
For planning, the median's CI half-width is about 1.57 * IQR / sqrt(n) (the notch rule of box
plots), which tells how many repeats a requested precision needs.

One run says nothing about spread: with fewer than two values a CI is (NaN, NaN), never the
value twice, and the verdict is "too few runs" — a single sample never calls a difference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
#: The verdict when a CI cannot be computed (fewer than two runs on a side).
TOO_FEW = "too few runs"


def median(values: Sequence[float]) -> float:
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
    """Percentile-bootstrap confidence interval of the median."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
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
    is (NaN, NaN) when either side has fewer than two values."""
    base, new = np.asarray(baseline, dtype=float), np.asarray(other, dtype=float)
    ratio = float(np.median(base) / np.median(new))
    if len(base) < 2 or len(new) < 2:
        return ratio, math.nan, math.nan
    base_medians = np.median(rng.choice(base, size=(RESAMPLES, len(base))), axis=1)
    new_medians = np.median(rng.choice(new, size=(RESAMPLES, len(new))), axis=1)
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
