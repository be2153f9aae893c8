"""Numbers of measured results as text: to the digits that tell them apart, never more.

A table of timings rounded to a fixed number of decimals says too little about fast things and
too much about slow ones: at one decimal, an interquartile range of 0.213-0.225 ms read
"0.2-0.2", and a median of 0.05 ms lost its second digit. Here a number shows `SIGNIFICANT`
digits, an interval shows as many decimals as its ends need to read differently, and an
interval that does not exist (the CI of fewer than `stats.MIN_RUNS` runs, NaN) says "too few
runs" instead of "nan-nan". The sweep table and the sweep heatmap print through these.
"""

from __future__ import annotations

import math

from .stats import TOO_FEW

#: The significant digits a number of the table has at least.
SIGNIFICANT = 3


def _places(value: float) -> int:
    """Decimals that show `value` to SIGNIFICANT digits (none for 1234.5)."""
    if not math.isfinite(value) or value == 0:
        return SIGNIFICANT - 1
    return max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))


def range_places(low: float, high: float) -> int:
    """Decimals for an interval: SIGNIFICANT digits of its larger end, more until the two ends
    read differently (ends that are equal read alike); 0 for an interval that does not exist."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return 0
    places = _places(max(abs(low), abs(high)))
    while low != high and f"{low:.{places}f}" == f"{high:.{places}f}" and places < 15:
        places += 1
    return places


def number_text(value: float, at_least: int = 0) -> str:
    """`value` to SIGNIFICANT digits, with `at_least` decimals: "12.3", "0.0514", "1234".

    >>> number_text(0.051449), number_text(12.3456, at_least=2)
    ('0.0514', '12.35')
    """
    if not math.isfinite(value):
        return "-"
    return f"{value:.{max(_places(value), at_least)}f}"


def range_text(low: float, high: float) -> str:
    """An interval printed to the digits that tell its ends apart, "too few runs" where it does
    not exist (a CI of fewer than `stats.MIN_RUNS` runs is NaN).

    >>> range_text(0.2134, 0.2251), range_text(0.21341, 0.21344), range_text(math.nan, 1)
    ('0.213-0.225', '0.21341-0.21344', 'too few runs')
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return TOO_FEW
    places = range_places(low, high)
    return f"{low:.{places}f}-{high:.{places}f}"


__all__ = ["SIGNIFICANT", "number_text", "range_places", "range_text"]
