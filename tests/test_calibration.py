"""Issue 24, item 4: the hand-off cost is measured on the machine (once per process) and decides
which ops are worth another inter-op worker; it changes schedules, never results."""

from __future__ import annotations

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph import calibration, costs
from parallelgraph.experiments.presets import random_dag


def test_the_handoff_is_measured_by_running_parallelgraph_itself():
    measured = calibration.measure_handoff_ns(runs=6)
    # Waking a thread, taking the scheduler's lock and the GIL: microseconds to a fraction of a
    # millisecond on any machine that can run the suite (capped so a starved sample cannot
    # put every op on one thread for good).
    assert 1_000 < measured <= calibration.MAX_HANDOFF_NS
    assert not calibration.calibrating()  # the flag is down again after the measurement


def test_the_pin_is_honoured_and_a_bad_one_is_refused(monkeypatch):
    calibration.handoff_ns.cache_clear()
    try:
        monkeypatch.setenv(calibration.ENVIRONMENT_VARIABLE, "35")
        # the bar is the hand-off rounded to a power of two microseconds (costs.inexpensive_ns)
        assert calibration.handoff_ns() == 35_000 and costs.inexpensive_ns() == 32_000
        calibration.handoff_ns.cache_clear()
        monkeypatch.setenv(calibration.ENVIRONMENT_VARIABLE, "5")
        assert costs.inexpensive_ns() == costs.INEXPENSIVE_NS  # never below the floor
        calibration.handoff_ns.cache_clear()
        monkeypatch.setenv(calibration.ENVIRONMENT_VARIABLE, "fast")
        with pytest.raises(ValueError, match=r"PARALLELGRAPH_HANDOFF_US='fast'.*microseconds"):
            calibration.handoff_ns()
    finally:
        calibration.handoff_ns.cache_clear()


@pytest.mark.parametrize("handoff_us, workers", [(20, 2), (60, 1)])
def test_ops_cheaper_than_a_handoff_stay_on_one_worker_with_the_same_bits(
    monkeypatch, handoff_us, workers
):
    """The random DAG at small: its largest ops are estimated at ~28 us. Where a hand-off costs
    20 us they are worth a second worker; where it costs 60 us (as measured on a 2-core VM) the
    whole graph runs on one, and gives the bits it gives on one thread."""
    monkeypatch.setattr(calibration, "handoff_ns", lambda: handoff_us * 1000)
    preset = random_dag("small")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=1)) as one:
        expected = one.run(preset.fetch)
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2)) as sess:
        plan = sess.plan_for(preset.fetch)
        assert plan.useful_workers(2) == workers
        value, trace = sess.run(preset.fetch, trace=True)
    assert np.array_equal(value, expected)
    assert len({e.lane for e in trace.ops()}) <= workers


def test_explain_words_the_bar_it_used(monkeypatch):
    """On tiny ops (8x16: a few us each), which the bar keeps on one worker. The wording needs
    most of the ops' time in ops under `SHORT_OP_NS`: a loaded machine can stretch one run's ops
    past it (a CI run of the small preset, whose matmuls take ~30 us, did), so the best of a
    few traced runs is taken."""
    monkeypatch.setattr(calibration, "handoff_ns", lambda: 60_000)
    preset = random_dag("tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2)) as sess:
        sess.run(preset.fetch)
        texts = [str(sess.run(preset.fetch, trace=True)[1].explain()) for _ in range(5)]
    wording = "under 64 us, about what handing one to another thread costs on this machine"
    assert any(wording in text for text in texts), texts[0]


@pytest.mark.parametrize(
    "measured_us, bar_us", [(46, 64), (56, 64), (83, 64), (90, 64), (92, 128), (30, 32), (5, 20)]
)
def test_the_bar_is_the_handoff_rounded_to_a_power_of_two(monkeypatch, measured_us, bar_us):
    """Measurements of one machine spread by +-25% from process to process; rounded, they give
    one bar, so two runs of a program schedule alike (never below the 20 us floor)."""
    monkeypatch.setattr(calibration, "handoff_ns", lambda: measured_us * 1000)
    assert costs.inexpensive_ns() == bar_us * 1000


@pytest.mark.parametrize("pinned", ["inf", "1e309", "nan", "-1", "abc"])
def test_a_pin_that_is_no_finite_number_is_one_line_from_the_cli(monkeypatch, capsys, pinned):
    from parallelgraph.cli import main

    calibration.handoff_ns.cache_clear()
    monkeypatch.setenv(calibration.ENVIRONMENT_VARIABLE, pinned)
    try:
        with pytest.raises(ValueError, match=rf"HANDOFF_US='{pinned}': .*a finite number >= 0"):
            calibration.handoff_ns()
        assert main(["run", "--size", "tiny", "--repeats", "1", "--inter", "2"]) == 2
    finally:
        calibration.handoff_ns.cache_clear()
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"PARALLELGRAPH_HANDOFF_US='{pinned}'" in error
