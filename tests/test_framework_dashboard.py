"""The dashboard on a framework (ONNX Runtime, NumPy): real widgets, real worker processes."""

from __future__ import annotations

import re
import threading
import time

import pytest

import parallelgraph as pg
from parallelgraph.frameworks.examples import build_numpy, build_onnxruntime

pytest.importorskip("ipywidgets")
pytest.importorskip("onnxruntime")

from test_frameworks import build_slow, children, no_worker_left


def test_a_run_times_traces_draws_and_explains_the_setting_on_screen():
    before = children()
    dash = pg.dashboard(build_onnxruntime, framework="onnxruntime", batch=(8, 64), repeats=6)
    try:
        dash.controls["intra"].value = 2
        dash.controls["batch"].value = 16
        dash.run()
        measured = dash.wait(120)
        assert measured.ending == "done" and len(measured.times_ms) == 6
        assert measured.read_back["intra"] == 2  # the knob took effect in the worker
        assert "median" in dash.status.value and "95% CI" in dash.status.value
        assert "intra=2" in dash.status.value and "batch=16" in dash.status.value
        assert dash.timeline.value[:8] == b"\x89PNG\r\n\x1a\n"
        assert "Most likely to help" in dash.explanation.value
        assert not dash.run_button.disabled and dash.stop_button.disabled
        dash.pin()
        dash.controls["intra"].value = 1
        dash.run()
        dash.wait(120)
        assert "against the pin (inter=1, intra=2, mode=sequential, batch=16)" in dash.status.value
        assert re.search(r"×\d\.\d\d \(95% CI \d\.\d\d-\d\.\d\d, ", dash.status.value)
        assert len(dash.workers.pids()) == 2  # both settings kept warm
    finally:
        dash.close()
    assert no_worker_left(before)


def test_warm_workers_are_capped_least_recently_used_first():
    before = children()
    dash = pg.dashboard(build_numpy, framework="numpy", batch=[8], width=[8], repeats=1,
                        max_workers=2, trace=False)  # fmt: skip
    try:
        for inter in (1, 2, 3):
            dash.controls["inter"].max = 4
            dash.controls["inter"].value = inter
            dash.run()
            dash.wait(60)
        assert len(dash.workers.pids()) == 2
    finally:
        dash.close()
    assert no_worker_left(before)


def test_stop_ends_a_long_step_quickly_and_the_dashboard_stays_usable():
    before = children()

    def build(setting):
        import time as clock

        return (lambda: clock.sleep(30)) if setting.inter == 2 else (lambda: None)

    dash = pg.dashboard(build, framework="numpy", repeats=2, trace=False)
    try:
        dash.controls["inter"].value = 2
        dash.run()
        time.sleep(2.0)
        started = time.monotonic()
        dash.stop()
        measured = dash.wait(30)
        assert time.monotonic() - started < 5
        assert "Stopped" in dash.status.value and not dash.run_button.disabled
        assert measured is None or measured.ending in ("stopped", "done")
        dash.controls["inter"].value = 1
        dash.run()
        assert dash.wait(60).ending == "done"
    finally:
        dash.close()
    assert no_worker_left(before)


def test_wait_reraises_an_interrupt_after_stopping_the_run():
    import _thread

    before = children()
    dash = pg.dashboard(build_slow, framework="numpy", repeats=200, trace=False)
    try:
        dash.run()
        threading.Timer(1.5, _thread.interrupt_main).start()
        with pytest.raises(KeyboardInterrupt):
            dash.wait()
        assert dash._finished.is_set()  # the run ended before wait() raised
        assert not dash.run_button.disabled
    finally:
        dash.close()
    assert no_worker_left(before)


def test_a_failing_build_is_shown_and_raised_by_wait():
    def build(setting):
        raise ValueError("no such model")

    dash = pg.dashboard(build, framework="numpy", repeats=1)
    try:
        dash.run()
        with pytest.raises(pg.frameworks.FrameworkError, match="no such model"):
            dash.wait(60)
        assert "no such model" in dash.message.value and "Failed" in dash.status.value
    finally:
        dash.close()


def test_bad_settings_are_refused_before_a_worker_starts():
    dash = pg.dashboard(build_numpy, framework="jax", trace=False)
    try:
        assert list(dash.controls) == ["devices"]
    finally:
        dash.close()
    dash = pg.dashboard(build_numpy, framework="onnxruntime", trace=False)
    try:
        before = children()
        dash.controls["inter"].value = 2
        dash.controls["mode"].value = "sequential"
        dash.run()  # allowed: sequential with 2 inter threads is a setting ORT takes
        dash.wait(60)
        assert children() - before
    finally:
        dash.close()


def test_verify_advice_runs_the_advised_setting_beside_the_traced_one():
    before = children()
    dash = pg.dashboard(build_onnxruntime, framework="onnxruntime", batch=[64], repeats=3)
    try:
        assert dash.verify_button.disabled
        dash.run()
        dash.wait(120)
        assert not dash.verify_button.disabled
        if dash.last.trace.explain().advice.knob not in dash.framework.advice:
            dash.verify()  # ops too short on this machine: the advice is no thread setting
            assert "is not a ONNX Runtime thread setting" in dash.message.value
            pytest.skip("the traced run's advice here is not a thread setting")
        dash.verify()
        dash.wait(120)
        verification = dash.verification
        assert verification.before["intra"] == 1 and verification.after["intra"] == 2
        assert len(verification.before_ms) == len(verification.after_ms) == 3
        assert "Measured (intra 1 -&gt; 2" in dash.message.value
        assert dash.status.value.startswith("Verified: ")
        assert len(dash.workers.pids()) == 2  # the advised setting's worker stays warm
    finally:
        dash.close()
    assert no_worker_left(before)


def test_kernel_interrupt_stops_a_run_button_run():
    """An idle ipykernel ignores SIGINT (SIG_IGN); the relay still stops the background run."""
    import os
    import signal

    before = children()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    dash = pg.dashboard(build_slow, framework="numpy", repeats=400, trace=False)
    try:
        dash.run()
        deadline = time.monotonic() + 60
        while not (dash.current and dash.current.times_ms) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the worker started and steps are being timed
        os.kill(os.getpid(), signal.SIGINT)
        measured = dash.wait(30)
        assert measured is not None and measured.ending == "interrupted"
        assert 0 < len(measured.times_ms) < 400
        assert dash.status.value.startswith("Interrupted: ")
        assert dash._finished.is_set() and not dash.run_button.disabled
    finally:
        dash.close()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the relay is gone
        signal.signal(signal.SIGINT, previous)
    assert no_worker_left(before)
