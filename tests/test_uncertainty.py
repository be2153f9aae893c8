"""Issue 23, "one rule for every number shown": a speed-up or a ranking is printed with its
uncertainty, by one function (`stats.speedup_text`), everywhere.

Before, notebook 00 printed "inter-op 2 ×0.53" from one run of each setting, `parallelgraph
demo` printed a speed-up of 0.97 (IQR 32.5-63.4 ms) and then "net1 and net2 ran in parallel
(overlap 1.00)", and the dashboard showed the same settings as a pin at "×0.65"; only pg.sweep
said the machine was noisy. These tests hold the rule itself, and the demo's words to it.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from parallelgraph.chrome.reader import from_chrome
from parallelgraph.cli import DEMO_SETTINGS, demo_conclusion, demo_runs, demo_table
from parallelgraph.experiments import stats
from parallelgraph.experiments.measure import Measurement
from parallelgraph.experiments.presets import build_preset
from parallelgraph.trace import Trace

CI_TEXT = re.compile(
    r"^×(\d+\.\d\d) \(95% CI (\d+\.\d\d)-(\d+\.\d\d), (faster|slower|within noise)\)$"
)


def normal(centre: float, count: int, seed: int) -> list[float]:
    return list(centre + np.random.default_rng(seed).standard_normal(count))


# -- the rule ---------------------------------------------------------------------------------
def test_one_run_on_either_side_is_not_a_conclusion():
    """The user's "×0.53" from one run each (19.7 ms against 10.4): no CI, no verdict."""
    assert stats.speedup_text([10.4], [19.7]) == "×0.53 (one run: not a conclusion)"
    many = normal(10, 15, seed=0)
    assert stats.speedup_text(many, [5.0]).endswith("(one run: not a conclusion)")
    assert stats.speedup_text([20.0], many).endswith("(one run: not a conclusion)")
    one = stats.speedup([10.4], [19.7])
    assert math.isnan(one.low) and one.verdict == stats.TOO_FEW and not one.conclusive


def test_fewer_than_six_runs_a_side_give_no_interval_and_no_verdict():
    """A 95% interval of a median needs six values: the widest interval n values give (their
    minimum to their maximum) holds the median with probability 1 - 2 * 0.5**n, 94% at five.
    Below that the speed-up says how many runs it has and that they decide nothing."""
    assert stats.MIN_RUNS == 6 and 1 - 2 * 0.5**5 < stats.LEVEL <= 1 - 2 * 0.5**6
    base, other = [10.4, 11.0], [19.7, 20.2]
    result = stats.speedup(base, other)
    assert result.ratio == pytest.approx(10.7 / 19.95)
    assert math.isnan(result.low) and math.isnan(result.high) and result.verdict == stats.TOO_FEW
    assert result.text() == "×0.54 (2 runs: too few for a 95% CI, not a conclusion)"
    five, six = [10.0, 10.2, 10.4, 10.6, 10.8], [20.0, 20.2, 20.4, 20.6, 20.8, 21.0]
    assert (
        stats.speedup(five, six).text().endswith("(5 runs: too few for a 95% CI, not a conclusion)")
    )
    assert stats.speedup([10.0], six).text().endswith("(one run: not a conclusion)")
    assert math.isnan(stats.bootstrap_median_ci(five, np.random.default_rng(0))[0])
    # six a side: an interval, and a verdict where it excludes 1.0
    assert CI_TEXT.match(stats.speedup_text([*five, 11.0], six)).group(4) == "slower"
    assert stats.speedup_text([10.0, 12.0] * 3, [11.0, 11.5] * 3).endswith(", within noise)")


def test_a_clear_difference_is_called_and_noise_is_not():
    base, faster = normal(20, 15, seed=1), normal(10, 15, seed=2)
    clear = stats.speedup(base, faster)
    assert clear.low > 1.0 and clear.verdict == "faster" and 1.8 < clear.ratio < 2.2
    assert CI_TEXT.match(clear.text()).groups() == (
        f"{clear.ratio:.2f}",
        f"{clear.low:.2f}",
        f"{clear.high:.2f}",
        "faster",
    )
    assert CI_TEXT.match(stats.speedup_text(faster, base)).group(4) == "slower"
    noise = stats.speedup(base, normal(20, 15, seed=3))
    assert noise.low < 1.0 < noise.high and noise.verdict == "within noise"
    assert noise.text().endswith(", within noise)") and not noise.conclusive
    # the user's demo case: a ratio of 0.97 from widely spread runs is not "slower"
    spread = list(np.random.default_rng(4).uniform(32.5, 63.4, 15))
    assert stats.speedup(spread, [value * 1.03 for value in spread]).verdict == "within noise"


def test_the_same_runs_read_the_same_wherever_they_are_shown():
    """The bootstrap is seeded unless a generator is given, so a table and a figure title that
    both show a speed-up agree to the last digit."""
    base, other = normal(20, 7, seed=5), normal(17, 7, seed=6)
    assert stats.speedup_text(base, other) == stats.speedup_text(base, other)
    assert stats.speedup(base, other) == stats.speedup(base, other, np.random.default_rng(0))
    ratio, low, high = stats.bootstrap_ratio_ci(base, other, np.random.default_rng(stats.SEED))
    assert stats.speedup(base, other) == stats.Speedup(ratio, low, high)
    assert str(stats.Speedup(ratio, low, high)) == stats.speedup_text(base, other)


def test_a_sweep_row_reads_by_the_same_rule():
    row_ratio, row_ci = 1.0712, (math.nan, math.nan)  # a sweep cell of one repeat
    assert stats.Speedup(row_ratio, *row_ci).text() == "×1.07 (one run: not a conclusion)"
    assert stats.Speedup(1.5, 1.2, 1.8).text() == "×1.50 (95% CI 1.20-1.80, faster)"


def test_nothing_timed_is_no_ratio_and_nothing_at_all_is_an_error():
    assert stats.speedup_text([0.0, 0.0], [1.0, 2.0]) == "no speed-up: a median of 0 ms"
    assert stats.speedup_text([1.0, 2.0], [0.0]) == "no speed-up: a median of 0 ms"
    with pytest.raises(ValueError, match="at least one run on each side"):
        stats.speedup([], [1.0])


def test_a_ranking_says_whether_the_fastest_is_told_from_the_next():
    clear = {"slow": normal(20, 9, 7), "fast": normal(10, 9, 8), "middle": normal(15, 9, 9)}
    text = stats.fastest_text(clear)
    assert text.startswith("fastest: fast (median ") and text.endswith(" against the next, middle")
    assert ", faster)" in text and "no clear" not in text
    tied = {"a": normal(10, 9, 10), "b": normal(10, 9, 11)}
    assert stats.fastest_text(tied).endswith(": no clear fastest")
    assert ", within noise)" in stats.fastest_text(tied)
    assert stats.fastest_text({"a": [3.0], "b": [4.0]}).endswith(
        "(one run: not a conclusion) against the next, b: no clear fastest"
    )
    assert stats.fastest_text({"only": [3.0, 4.0]}).endswith("the only setting measured")


# -- the demo's words -------------------------------------------------------------------------
def event(name: str, thread: int, start_us: float, length_us: float) -> dict:
    return {"ph": "X", "name": name, "pid": 1, "tid": thread, "ts": start_us, "dur": length_us}


def run_of(makespan_ms: float, side_by_side: bool) -> Trace:
    """A run of net1 and net2 taking `makespan_ms`, on two threads at once or one after the
    other; the words only read makespans and overlaps, which these runs fix by construction."""
    length = makespan_ms * 1e3 / (1 if side_by_side else 2)  # µs, the format's unit
    second = (2, 0.0) if side_by_side else (1, length)
    return from_chrome(
        {"traceEvents": [event("net1/op", 1, 0.0, length), event("net2/op", *second, length)]}
    )


def measurement(makespans: list[float], side_by_side: bool) -> Measurement:
    traces = tuple(run_of(ms, side_by_side) for ms in makespans)
    return Measurement(traces, tuple(makespans))


def test_the_demo_does_not_say_parallel_beside_a_speedup_within_noise():
    """The user's case: overlap 1.00 and a speed-up of 0.97 with a wide spread. The words say
    the overlap of the drawn run, the speed-up with its CI and verdict, and that overlap is not
    speed-up; never "ran in parallel" as the conclusion."""
    spread = list(np.random.default_rng(12).uniform(32.5, 63.4, 15))
    one = measurement(spread, side_by_side=False)
    two = measurement([ms * 1.03 for ms in spread], side_by_side=True)
    words = demo_conclusion(one, two)
    assert "ran in parallel" not in words
    assert "net1 and net2 ran side by side in the drawn run (overlap 1.00)" in words
    assert "(overlap 0.00 in the drawn run)" in words
    gain = stats.speedup_text(one.makespans_ms, two.makespans_ms)
    assert f"over 15 runs: {gain}: these runs cannot tell 2 from 1: overlap is not speed-up." in (
        words
    )
    assert ", within noise)" in gain
    busy = demo_conclusion(one, two, busy=True)
    assert busy.endswith("overlap is not speed-up (the machine was busy, see above).")


def test_the_demo_calls_a_real_gain_and_a_single_run_not():
    one = measurement(normal(50, 9, 13), side_by_side=False)
    two = measurement(normal(26, 9, 14), side_by_side=True)
    words = demo_conclusion(one, two)
    assert ", faster): the graph was faster with 2, as they overlapped." in words
    quick = measurement(normal(26, 9, 15), side_by_side=False)
    slower = demo_conclusion(quick, measurement(normal(50, 9, 16), side_by_side=True))
    assert ", slower): the graph was slower with 2, although they overlapped" in slower
    single = demo_conclusion(measurement([49.0], False), measurement([26.0], True))
    assert "over 1 run: ×1.88 (one run: not a conclusion): rerun with --repeats 5" in single


def test_the_demo_runs_its_settings_interleaved_and_tables_them_by_the_rule():
    """Run r of every setting starts before run r + 1 of any (a machine that slows down during
    the demo slows every setting alike); the table's speed-ups are the rule's."""
    preset = build_preset("two-networks", "tiny")
    measured, _ = demo_runs(preset, repeats=3)
    assert list(measured) == list(DEMO_SETTINGS)
    starts = [[trace.start for trace in measured[s].traces] for s in DEMO_SETTINGS]
    rounds = list(zip(*starts))
    assert len(rounds) == 3
    for this, following in itertools.pairwise(rounds):
        assert max(this) < min(following)
    lines = demo_table(measured, repeats=3)
    base = measured[DEMO_SETTINGS[0]].makespans_ms
    assert lines[1].endswith("  baseline")
    for line, setting in zip(lines[2:], DEMO_SETTINGS[1:]):
        assert line.endswith(f"  {stats.speedup_text(base, measured[setting].makespans_ms)}")
        assert "95% CI" in line
