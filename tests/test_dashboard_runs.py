"""How dashboard runs end, and the measured-run loop they share with the CLI and sweeps.

Every way a run can end — done, stopped (Stop), interrupted (a kernel interrupt while a cell
waits), failed — must leave a true status line, a message, Run and Pin enabled and Stop
disabled. A kernel interrupt is a SIGINT to this process while the main thread waits in
`dash.wait()`, which is what ipykernel sends. The interactive timeline (ipympl canvas) is
hovered through ipympl's own message path, as the browser's mouse would.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

pytest.importorskip("ipywidgets")

import parallelgraph as pg
from parallelgraph import measure, widgets
from parallelgraph.session import Session


def slow_chain(width: int = 256, layers: int = 120):
    """Many dependent ops of a few ms each: a run that lasts long enough to be stopped."""
    x = pg.random_normal((width, width), seed=0)
    for index in range(layers):
        with pg.scope(f"layer{index % 4}"):
            x = pg.tanh(pg.matmul(x, pg.variable((width, width), name="w")))
    return x


def three_branches(batch: int = 8, width: int = 16):
    outputs = []
    for index in range(3):
        with pg.scope(f"branch{index}"):
            x = pg.random_normal((batch, width), seed=index)
            outputs.append(pg.tanh(pg.matmul(x, pg.variable((width, width), name="w"))))
    return pg.add_n(outputs, name="out")


@pytest.fixture
def long_dash():
    dashboard = pg.dashboard(slow_chain, layers=(1, 400), repeats=50, inter_op_threads=1)
    yield dashboard
    dashboard.close()


def time_run_ends(dash: widgets.Dashboard) -> list[float]:
    """Record when each run's measurement returns (before the timeline is drawn)."""
    ends: list[float] = []
    run = dash.runner.run

    def timed(*args, **kwargs):
        try:
            return run(*args, **kwargs)
        finally:
            ends.append(time.perf_counter())

    dash.runner.run = timed
    return ends


def assert_idle_and_said(dash: widgets.Dashboard, ending: str, words: str) -> None:
    """The state every ending must leave: status and message true, buttons usable."""
    assert dash.ending == ending and not dash.busy
    assert words in dash.status, dash.status
    assert dash.message.value, "an ending other than done says so in the message line"
    assert not dash.run_button.disabled and not dash.pin_button.disabled
    assert dash.stop_button.disabled


def wait_for_traced_runs(dash: widgets.Dashboard, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = dash.progress.value - 1  # the first step is the warm-up
        if progress >= count and dash.busy:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {count} traced runs in {timeout} s: {dash.status}")


# -- endings --------------------------------------------------------------------------------
def test_stop_ends_a_long_run_within_a_second_and_keeps_what_was_measured(long_dash):
    ends = time_run_ends(long_dash)
    long_dash.run()
    assert long_dash.busy and not long_dash.stop_button.disabled
    assert long_dash.run_button.disabled and long_dash.pin_button.disabled
    wait_for_traced_runs(long_dash, 2)
    long_dash.pin()  # the run thread owns the output area: pinning waits for the end
    assert long_dash.pinned == [] and "pin when it has ended" in long_dash.message.value
    pressed = time.perf_counter()
    long_dash.stop_button.click()
    long_dash.wait(timeout=10)
    assert ends[-1] - pressed < 1.0  # the run ended; drawing what it measured comes after
    assert time.perf_counter() - pressed < 5.0
    assert_idle_and_said(long_dash, "stopped", "stopped (Stop) after")
    result = long_dash.result
    assert result.ending == "stopped" and 2 <= result.runs < 50
    assert f"after {result.runs} of 50 runs, kept" in long_dash.status
    assert long_dash.progress.bar_style == "warning"
    assert "(stopped)" in long_dash.table.value
    long_dash.controls["repeats"].value = 1  # the same session runs again
    long_dash.wait(timeout=60)
    assert long_dash.ending == "done" and long_dash.result.rebuilt == ""


def test_stop_inside_a_single_long_run_ends_it_between_ops(long_dash):
    """One run of 400 ops of ~2 ms lasts about a second: Stop cuts it short, between ops."""
    long_dash.controls["width"].value = 512
    long_dash.controls["layers"].value = 400
    long_dash.controls["repeats"].value = 1
    ends = time_run_ends(long_dash)
    long_dash.run()
    wait_for_traced_runs(long_dash, 0)
    time.sleep(0.5)  # inside the warm-up or the traced run
    pressed = time.perf_counter()
    long_dash.stop()
    long_dash.wait(timeout=10)
    assert ends[-1] - pressed < 1.0
    assert_idle_and_said(long_dash, "stopped", "nothing measured")
    assert long_dash.result is None  # nothing traced: nothing drawn
    session = long_dash.runner.session
    assert not session.closed and session.run(long_dash.runner.built.fetch) is not None


def test_a_kernel_interrupt_while_a_cell_waits_ends_the_run(long_dash):
    ends = time_run_ends(long_dash)
    long_dash.run()
    wait_for_traced_runs(long_dash, 1)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    pressed = time.perf_counter()
    result = long_dash.wait(timeout=60)  # the SIGINT lands here, in the main thread
    timer.join()
    assert ends[-1] - pressed < 0.3 + 1.0
    assert_idle_and_said(long_dash, "interrupted", "interrupted (kernel interrupt) after")
    assert result is long_dash.result and result.runs >= 1
    assert "interrupted" in long_dash.message.value and result.ending == "interrupted"
    assert "(interrupted)" in long_dash.table.value


def test_a_failure_keeps_the_last_timeline_and_the_dashboard_working(monkeypatch):
    dash = pg.dashboard(three_branches, batch=(8, 64), repeats=2)
    try:
        dash.run()
        dash.wait(timeout=60)
        good_png = bytes(dash.gantt.value)
        calls = {"n": 0}
        real_run = Session.run

        def failing(self, *args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("the kernel broke")
            return real_run(self, *args, **kwargs)

        monkeypatch.setattr(Session, "run", failing)
        dash.controls["batch"].value = 16
        dash.wait(timeout=60)
        assert_idle_and_said(dash, "failed", "failed: RuntimeError: the kernel broke")
        assert "previous run" in dash.status and isinstance(dash.error, RuntimeError)
        assert "Run failed" in dash.message.value and "traceback" in dash.message.value
        assert dash.progress.bar_style == "danger"
        assert bytes(dash.gantt.value) == good_png  # the last good timeline stays
        monkeypatch.undo()
        dash.run_button.click()
        dash.wait(timeout=60)
        assert dash.ending == "done" and dash.error is None and dash.message.value == ""
        assert dash.result.params["batch"] == 16 and bytes(dash.gantt.value) != good_png
    finally:
        dash.close()


def test_a_build_function_that_raises_is_a_failed_run():
    def broken(batch=8):
        raise ValueError("the graph builder broke")

    dash = pg.dashboard(broken, repeats=1)
    try:
        dash.run()
        dash.wait(timeout=60)
        assert_idle_and_said(dash, "failed", "the graph builder broke")
        assert dash.result is None
    finally:
        dash.close()


# -- the interactive timeline ---------------------------------------------------------------
def shown_canvas(dash):
    """The ipympl canvas the dashboard's timeline shows (in its Output area)."""
    from ipywidgets import Widget

    (area,) = dash.timeline.children
    (output,) = area.outputs
    model_id = output["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    return Widget.widgets[model_id]


def hover(canvas, ax):
    """Move the mouse over the widest bar through ipympl's message path; return the tooltip."""
    canvas.draw()
    bars = ax.parallelgraph_bars
    index = max(range(len(bars.events)), key=lambda i: bars.right[i] - bars.left[i])
    x, y = ax.transData.transform(((bars.left[index] + bars.right[index]) / 2, bars.y[index]))
    height = canvas.get_renderer().height
    message = {"type": "motion_notify", "x": x, "y": height - y, "button": 0}
    message.update(buttons=0, modifiers=[], guiEvent=None)
    canvas._handle_message(canvas, message, [])  # what the browser sends on a mouse move
    return next(t for t in ax.texts if t.get_gid() == "hover-tooltip")


def drag(canvas, ax, pixels: float) -> None:
    """Press, move `pixels` to the right and release, as the browser's messages."""
    x, y = ax.transAxes.transform((0.5, 0.5))
    height = canvas.get_renderer().height
    for kind, at in (
        ("button_press", x),
        ("motion_notify", x + pixels),
        ("button_release", x + pixels),
    ):
        message = {"type": kind, "x": at, "y": height - y, "button": 0, "buttons": 1}
        message.update(modifiers=[], guiEvent=None)
        canvas._handle_message(canvas, message, [])


def test_the_interactive_timeline_is_an_ipympl_canvas_with_a_hover_tooltip():
    ipympl = pytest.importorskip("ipympl.backend_nbagg")
    dash = pg.dashboard(three_branches, repeats=2, timeline="interactive")
    try:
        dash.run()
        dash.wait(timeout=60)
        canvas = shown_canvas(dash)
        assert isinstance(canvas, ipympl.Canvas) and canvas.toolbar is not None
        assert canvas.toolbar_position == "right" and not canvas.header_visible
        figure = canvas.figure
        ax = figure.axes[0]
        bars = ax.parallelgraph_bars
        index = max(range(len(bars.events)), key=lambda i: bars.right[i] - bars.left[i])
        event = bars.events[index]
        tooltip = hover(canvas, ax)
        assert tooltip.get_visible() and tooltip.get_text().startswith(event.name)
        assert f"lane {event.lane}" in tooltip.get_text()
        dash.controls["inter_op_threads"].value = 1
        dash.wait(timeout=60)
        new = shown_canvas(dash)  # a new canvas replaces the old one, which is closed
        assert new is not canvas and new.figure is not figure and canvas.comm is None
        canvas = new
        assert canvas.figure.axes[0].get_title("left").startswith("three_branches: inter-op 1")
        assert hover(canvas, canvas.figure.axes[0]).get_visible()  # hover moved along
        ax = canvas.figure.axes[0]
        before = ax.get_xlim()
        canvas.toolbar.pan()
        drag(canvas, ax, 200)  # the toolbar's pan works on the new figure too
        assert ax.get_xlim()[0] < before[0]
    finally:
        dash.close()


@pytest.mark.parametrize("timeline", ["interactive", "png"])
def test_under_matplotlib_widget_pyplot_keeps_no_dashboard_figures(timeline):
    """`%matplotlib widget` makes timelines with pyplot; the dashboard takes them from it."""
    pytest.importorskip("ipympl")
    import matplotlib.pyplot as plt

    previous = plt.get_backend()
    plt.switch_backend("module://ipympl.backend_nbagg")
    try:
        dash = pg.dashboard(three_branches, repeats=1, timeline=timeline)
        try:
            for inter in (1, 2):
                dash.controls["inter_op_threads"].value = inter
                dash.run()
                dash.wait(timeout=60)
                assert dash.ending == "done", dash.status
            assert plt.get_fignums() == []
        finally:
            dash.close()
    finally:
        plt.switch_backend(previous)


# -- the measured-run loop ------------------------------------------------------------------
def test_the_loop_stops_between_runs_and_keeps_what_it_measured():
    graph = pg.Graph()
    with graph.as_default():
        out = three_branches()
    with Session(graph) as session:
        stop = measure.StopSignal()
        seen = []

        def on_run(planned, trace, wall_ms):
            seen.append((planned.key, trace is not None, wall_ms > 0))
            if len(seen) == 3:
                stop.stop()  # from the loop's own thread: seen before the next run

        schedule = [measure.Planned(i, session, out, traced=i > 0) for i in range(10)]
        assert measure.run_schedule(schedule, on_run, stop) == "stopped"
        assert seen == [(0, False, True), (1, True, True), (2, True, True)]
        measured = measure.measure_interleaved({"a": session}, out, repeats=3, warmup=2)["a"]
        assert measured.complete and len(measured.traces) == 3 and len(measured.warmup_ms) == 2


def test_an_interrupt_propagates_from_the_loop_unless_kept():
    graph = pg.Graph()
    with graph.as_default():
        out = three_branches()

    def interrupt(planned, trace, wall_ms):
        raise KeyboardInterrupt

    with Session(graph) as session:
        schedule = [measure.Planned(0, session, out)] * 3
        assert measure.run_schedule(schedule, interrupt) == "interrupted"
        with pytest.raises(KeyboardInterrupt):
            measure.run_schedule(schedule, interrupt, keep_interrupted=False)


POISON_CHECK = """
import sys, threading, time
import parallelgraph as pg
from parallelgraph import measure
graph = pg.Graph()
with graph.as_default():
    out = pg.tanh(pg.random_normal((256, 256), seed=1))
with pg.Session(graph) as session:
    for stop_at in (0, 1, 2):  # before, inside and after runs
        stop = measure.StopSignal()
        def on_run(planned, trace, wall_ms, stop=stop, stop_at=stop_at):
            if planned.key == stop_at:
                stop.stop()
        schedule = [measure.Planned(i, session, out) for i in range(5)]
        measure.run_schedule(schedule, on_run, stop)
    for _ in range(20):  # a Stop from another thread while runs go on
        stop = measure.StopSignal()
        threading.Timer(0.001, stop.stop).start()
        runs = [measure.Planned(i, session, out) for i in range(50)]
        measure.run_schedule(runs, lambda *a: None, stop)
def python_function():
    return 1
sys.setprofile(lambda frame, event, arg: None)
start = time.perf_counter()
python_function()
sys.setprofile(None)
print("ok", time.perf_counter() - start)
"""


def test_stopping_leaves_no_pending_exception_behind():
    """A Stop must not leave CPython's eval breaker set: a profiled call after it once spun
    forever (and every bytecode took the slow path)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", POISON_CHECK], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ok")
