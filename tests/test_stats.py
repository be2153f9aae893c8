"""Statistics for timings: bootstrap CIs of medians and ratios, verdicts, repeats needed."""

import numpy as np
import pytest

from parallelgraph.experiments import stats


def test_median_ci_contains_the_median_and_narrows_with_more_data():
    rng = np.random.default_rng(0)
    small = list(10 + rng.standard_normal(10))
    large = list(10 + rng.standard_normal(400))
    low, high = stats.bootstrap_median_ci(small, np.random.default_rng(1))
    assert low <= stats.median(small) <= high
    wide = high - low
    low, high = stats.bootstrap_median_ci(large, np.random.default_rng(1))
    assert low <= 10.1 and high >= 9.9 and high - low < wide


def test_ratio_ci_and_verdicts():
    rng = np.random.default_rng(2)
    base = list(20 + rng.standard_normal(30))
    faster = list(10 + rng.standard_normal(30))
    same = list(20 + rng.standard_normal(30))
    ratio, low, high = stats.bootstrap_ratio_ci(base, faster, np.random.default_rng(3))
    assert ratio == pytest.approx(2.0, rel=0.1) and low > 1.0
    assert stats.verdict(low, high) == "faster"
    _, low, high = stats.bootstrap_ratio_ci(base, same, np.random.default_rng(3))
    assert low < 1.0 < high and stats.verdict(low, high) == "within noise"
    _, low, high = stats.bootstrap_ratio_ci(faster, base, np.random.default_rng(3))
    assert stats.verdict(low, high) == "slower"


def test_quartiles_and_repeats_for_precision():
    assert stats.quartiles([1.0]) == (1.0, 1.0)
    assert stats.quartiles([1, 2, 3, 4, 5]) == (2, 4)
    assert stats.relative_iqr([1, 2, 3, 4, 5]) == pytest.approx(2 / 3)
    assert stats.repeats_for_precision([10, 10, 10], 0.05) == 3
    # IQR/median = 0.2 -> (1.57 * 0.2 / 0.05)^2 = 39.4 -> 40 repeats
    assert stats.repeats_for_precision([9, 9, 10, 11, 11], 0.05) == 40


def test_one_sample_never_gives_a_verdict():
    """Before: with one run per cell the CI was (ratio, ratio), so 0.53 was called 'slower'."""
    ratio, low, high = stats.bootstrap_ratio_ci([10.0], [19.0], np.random.default_rng(0))
    assert ratio == pytest.approx(10 / 19) and np.isnan(low) and np.isnan(high)
    assert stats.verdict(low, high) == stats.TOO_FEW
    assert all(np.isnan(stats.bootstrap_median_ci([3.0], np.random.default_rng(0))))
    _, low, high = stats.bootstrap_ratio_ci([10.0, 11.0], [19.0], np.random.default_rng(0))
    assert stats.verdict(low, high) == stats.TOO_FEW
