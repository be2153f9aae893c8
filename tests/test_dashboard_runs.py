"""How dashboard runs end, and the measured-run loop they share with the CLI and sweeps.

Every way a run can end — done, stopped (Stop), interrupted (a kernel interrupt while a cell
waits), failed — must leave a true status line, a message, Run and Pin enabled and Stop
disabled. A kernel interrupt is a SIGINT to this process while the main thread waits in
`dash.wait()`, which is what ipykernel sends. The interactive timeline (ipympl canvas) is
hovered through ipympl's own message path, as the browser's mouse would.
"""

from __future__ import annotations

import _thread
import html
import os
import re
import signal
import statistics
import threading
import time

import pytest

pytest.importorskip("ipywidgets")

import parallelgraph as pg
from parallelgraph.experiments import measure
from parallelgraph.session import Session
from parallelgraph.widgets import dashboard as widgets
from parallelgraph.widgets.report import drawn_words


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


def sigint_self() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize(
    "interrupt", [sigint_self, _thread.interrupt_main], ids=["SIGINT", "interrupt_main"]
)
def test_a_kernel_interrupt_while_a_cell_waits_stops_the_run_and_is_raised_again(
    long_dash, interrupt
):
    """Kernel > Interrupt during `dash.wait()`: the run ends "interrupted" with what it
    measured, and wait() raises the KeyboardInterrupt again, so the cell fails and a Run All
    stops there (it was swallowed: the next cell ran). `_thread.interrupt_main` only flags the
    interrupt, as a SIGINT taken by another thread does: wait() must still notice it."""
    ends = time_run_ends(long_dash)
    long_dash.run()
    wait_for_traced_runs(long_dash, 1)
    timer = threading.Timer(0.3, interrupt)
    timer.start()
    pressed = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        long_dash.wait(timeout=60)  # the interrupt lands here, in the main thread
    timer.join()
    assert ends[-1] - pressed < 0.3 + 1.0
    assert_idle_and_said(long_dash, "interrupted", "interrupted (kernel interrupt) after")
    result = long_dash.result
    assert result.runs >= 1 and result.ending == "interrupted" and result.runs < 50
    assert "interrupted" in long_dash.message.value and "(interrupted)" in long_dash.table.value
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    long_dash.controls["repeats"].value = 2  # usable afterwards: the same session runs on
    assert long_dash.wait(timeout=60).ending == "done" and long_dash.result.rebuilt == ""
    assert long_dash.message.value == "" and dashboard_threads() == []


def dashboard_threads(timeout: float = 5) -> list[str]:
    """The dashboards' own threads (run, interrupt listener) still alive after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [t.name for t in threading.enumerate() if t.name.startswith("pg-dashboard")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)


@pytest.mark.parametrize(
    "previous",
    [signal.SIG_IGN, signal.default_int_handler],
    ids=["idle-kernel-ignores-SIGINT", "script-default-handler"],
)
def test_a_kernel_interrupt_stops_a_run_started_with_the_run_button(long_dash, previous):
    """A run started with the Run button goes in a background thread while the kernel is idle,
    and an idle ipykernel ignores SIGINT (SIG_IGN). A SIGINT to this process must stop the run
    anyway (it went on: "running 4/50 ... 9/50"), then do what the handler it found would: nothing
    when idle, KeyboardInterrupt in the main thread of a script. The handler is put back."""
    before = signal.signal(signal.SIGINT, previous)
    try:
        ends = time_run_ends(long_dash)
        long_dash.run_button.click()  # what a click does: the handler runs on the main thread
        wait_for_traced_runs(long_dash, 2)
        pressed = time.perf_counter()
        if previous is signal.SIG_IGN:
            sigint_self()
        else:
            with pytest.raises(KeyboardInterrupt):
                sigint_self()
                time.sleep(5)  # where a script would be
        while long_dash.busy and time.perf_counter() - pressed < 10:
            time.sleep(0.01)  # not wait(): an idle kernel waits for nothing
        assert ends and ends[-1] - pressed < 1.5
        assert_idle_and_said(long_dash, "interrupted", "interrupted (kernel interrupt) after")
        assert 2 <= long_dash.result.runs < 50
        assert dashboard_threads() == []  # no run thread, no interrupt listener
        assert long_dash.wait(timeout=1) is long_dash.result  # idle: returns; restores
        assert signal.getsignal(signal.SIGINT) is previous
        long_dash.controls["repeats"].value = 1
        assert long_dash.wait(timeout=60).ending == "done"
    finally:
        signal.signal(signal.SIGINT, before)


KERNEL_SETUP = """
import signal, threading
import parallelgraph as pg


def slow_chain(width=256, layers=120):
    x = pg.random_normal((width, width), seed=0)
    for index in range(layers):
        with pg.scope(f"layer{index % 4}"):
            x = pg.tanh(pg.matmul(x, pg.variable((width, width), name="w")))
    return x


dash = pg.dashboard(slow_chain, repeats=50, inter_op_threads=1, timeline="png")
print(dash.run_button.model_id)
"""


class KernelCells:
    """A real ipykernel in a child process, driven as JupyterLab drives it: execute requests,
    a comm message for a button click, an interrupt request (SIGINT to the kernel process)."""

    def __init__(self, tmp_path):
        import json
        import sys

        manager = pytest.importorskip("jupyter_client.manager")
        kernelspec = pytest.importorskip("jupyter_client.kernelspec")
        pytest.importorskip("ipykernel")
        spec = tmp_path / "kernels" / "pg-test"
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python"}))
        specs = kernelspec.KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
        self.manager = manager.KernelManager(kernel_name="pg-test", kernel_spec_manager=specs)
        self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def output(self, msg_id: str, timeout: float = 120) -> str:
        """The text a cell printed (or its error's name), once the kernel is idle again."""
        text = []
        while True:
            message = self.client.get_iopub_msg(timeout=timeout)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind == "error":
                text.append(f"error {content['ename']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(text)

    def wait_for_text(self, msg_id: str, text: str, timeout: float = 60) -> None:
        while True:
            message = self.client.get_iopub_msg(timeout=timeout)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream" and text in message["content"]["text"]:
                return

    def run(self, code: str) -> str:
        return self.output(self.client.execute(code))

    def reply(self, msg_id: str, timeout: float = 60) -> dict:
        while True:
            message = self.client.get_shell_msg(timeout=timeout)
            if message["parent_header"].get("msg_id") == msg_id:
                return message["content"]

    def click(self, model_id: str) -> None:
        """What the browser sends when a Button is clicked."""
        data = {"method": "custom", "content": {"event": "click"}}
        message = self.client.session.msg("comm_msg", {"comm_id": model_id, "data": data})
        self.client.shell_channel.send(message)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.mark.timeout(240)
def test_kernel_interrupt_in_a_real_kernel_stops_run_button_and_waiting_runs(tmp_path):
    """Kernel > Interrupt in a real ipykernel: during a Run-button run (the kernel idle, which
    ignores SIGINT) it stops the run; during a cell waiting in dash.wait() it stops the run, the
    cell fails with KeyboardInterrupt and the cell queued after it (Run All) is not run."""
    kernel = KernelCells(tmp_path)
    try:
        model_id = kernel.run(KERNEL_SETUP).strip()
        kernel.click(model_id)
        deadline = time.monotonic() + 120
        while int(kernel.run("print(dash.progress.value)")) < 3:  # warm-up + 2 traced runs
            assert time.monotonic() < deadline, kernel.run("print(dash.status)")
            time.sleep(0.1)
        time.sleep(0.2)  # the kernel idle, the run going
        pressed = time.monotonic()
        kernel.manager.interrupt_kernel()
        while kernel.run("print(dash.busy)").strip() == "True":
            assert time.monotonic() - pressed < 10, "the interrupt did not stop the run"
            time.sleep(0.1)
        said = kernel.run(
            "print(dash.ending, dash.result.runs, [t.name for t in threading.enumerate()"
            " if t.name.startswith('pg-dashboard')], dash.status)"
        )
        ending, runs, threads = said.split(maxsplit=2)[:3]
        assert ending == "interrupted" and 2 <= int(runs) < 50, said
        assert threads.startswith("[]") and "interrupted (kernel interrupt) after" in said
        restored = "dash.wait(); print(get_ipython().kernel.saved_sigint_handler is signal.SIG_IGN)"
        assert kernel.run(restored) == "True\n"  # the kernel's own idle handler is back
        waiting = kernel.client.execute("dash.run(); print('waiting', flush=True); dash.wait()")
        queued = kernel.client.execute("print('the next cell ran')")
        kernel.wait_for_text(waiting, "waiting")
        time.sleep(1.0)  # the cell waits, the run goes
        kernel.manager.interrupt_kernel()
        failed = kernel.reply(waiting)
        assert failed["status"] == "error" and failed["ename"] == "KeyboardInterrupt"
        assert kernel.reply(queued)["status"] == "aborted"  # a Run All stops here
        said = kernel.run("print(dash.busy, dash.ending, dash.status)")
        assert said.startswith("False interrupted") and "after" in said, said
    finally:
        kernel.close()


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


# -- one run, one set of numbers -----------------------------------------------------------
def two_branches(batch: int = 32, width: int = 64):
    outputs = []
    for index, name in enumerate(("left", "right")):
        with pg.scope(name):
            x = pg.random_normal((batch, width), seed=index)
            outputs.append(pg.tanh(pg.matmul(x, pg.variable((width, width), name="w"))))
    return pg.add_n(outputs, name="out")


def end_after(dash: widgets.Dashboard, kept: int, action) -> None:
    """Do `action()` in the run thread when `kept` traced runs are measured, and hold the run
    there until its StopSignal is set: the run then ends with exactly `kept` runs."""
    run = dash.runner.run

    def run_until(settings, progress=None, stop=None):
        def counted(done: int, total: int) -> None:
            progress(done, total)
            if done - (total - settings.knobs.repeats) == kept:
                action()
                deadline = time.monotonic() + 30
                while not stop.requested and time.monotonic() < deadline:
                    time.sleep(0.005)

        return run(settings, counted, stop)

    dash.runner.run = run_until


def text_of(value: str) -> str:
    """What an HTML widget shows, as text."""
    return html.unescape(re.sub(r"<[^>]+>", " ", value))


def table_rows(value: str) -> dict[str, list[str]]:
    """The summary table widget's rows: metric -> cells (current, pin 1, ...)."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", value, re.S):
        cells = [html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
        rows[cells[0]] = cells[1:]
    return rows


def timeline_panels(figure) -> list:
    return [ax for ax in figure.axes if hasattr(ax, "parallelgraph_bars")]


def drawn_trace(panel, traces):
    """The repeat whose events a timeline panel draws (by identity, not by its numbers)."""
    drawn = {id(e) for e in panel.parallelgraph_bars.events}
    (trace,) = [t for t in traces if drawn <= {id(e) for e in t.events}]
    return trace


def assert_every_number_is_of_the_run_drawn(dash: widgets.Dashboard, planned: int) -> None:
    """Status, table, timeline title, explain() and message: each median is the median of the
    repeats, each makespan the drawn repeat's, which is a middle one (the median itself for an
    odd count); where the two differ, each place that gives one gives the other; the bound,
    overlap and utilization are the drawn repeat's; the counts are the runs kept."""
    result = dash.result
    traces = result.measurement.traces
    (panel,) = timeline_panels(dash._figure)
    drawn = drawn_trace(panel, traces)
    makespans = sorted(t.makespan_ms for t in traces)
    n = len(makespans)
    assert drawn.makespan_ms in (makespans[(n - 1) // 2], makespans[n // 2])
    median, made = f"{statistics.median(makespans):.2f}", f"{drawn.makespan_ms:.2f}"
    if n % 2:
        assert drawn.makespan_ms == statistics.median(makespans)
    shown = {
        "status": dash.status,
        "title": panel.get_title(loc="left"),
        "table": text_of(dash.table.value),
        "explain": text_of(dash.explanation.value),
        "message": text_of(dash.message.value),
    }
    for where, text in shown.items():
        assert set(re.findall(r"median (\d+\.\d+) ms", text)) <= {median}, (where, text)
        assert set(re.findall(r"makespan (\d+\.\d+) ms", text, re.I)) <= {made}, (where, text)
    assert f"median {median} ms of {n} runs" in shown["status"]
    assert f"makespan {made} ms" in shown["title"] and f"Makespan {made} ms." in shown["explain"]
    rows = {name: cells[0] for name, cells in table_rows(dash.table.value).items()}
    assert rows["median makespan"].startswith(f"{median} ms (IQR ")
    assert rows["drawn and explained"].startswith(f"makespan {made} ms")
    both = [shown["title"], shown["explain"], rows["drawn and explained"]]
    if n % 2:
        assert all(f"the median of {n} runs" in text for text in both)
        assert f"median {median} ms of {n} runs, the run drawn;" in shown["status"]
    else:  # the median is no run's makespan: every place gives both
        assert all(f"median {median} ms" in text for text in both), both
        assert f"makespan {made} ms" in shown["status"]
    assert f"{n} of {planned} runs" in shown["status"]
    assert rows["repeats, wall per run"].startswith(f"{n}, ")
    if dash.ending != "done":
        assert f"after {n} of {planned} runs, kept" in shown["message"]
    bound = f"{drawn.lower_bound() * 1e3:.2f}"
    ratio = re.search(r"makespan (\d+\.\d+)x it", rows["critical-path bound"]).group(1)
    assert rows["critical-path bound"].startswith(f"{bound} ms")
    assert f"beats {bound} ms (this run took {ratio}x that)" in shown["explain"]
    overlap = f"{drawn.overlap('left', 'right'):.2f}"
    assert rows["overlap of the scopes"] == f"left/right {overlap}"
    assert f"(overlap {overlap})" in shown["explain"]
    shares = drawn.utilization()
    busy = 100 * sum(shares.values()) / len(shares)
    assert rows["utilization (mean of lanes)"] == f"{busy:.0f}% of {len(drawn.lanes)} lane(s)"


@pytest.mark.parametrize("kept", [4, 5], ids=["even", "odd"])
@pytest.mark.parametrize("ending", ["done", "stopped", "interrupted"])
def test_every_number_on_screen_is_of_the_run_drawn(ending, kept):
    """Issue 23: after an ending with an even number of runs kept, the status and table said
    "median 1090.37 ms" while the timeline and explain() said "makespan 1019.36 ms"."""
    planned = kept if ending == "done" else 50
    dash = pg.dashboard(two_branches, repeats=planned)
    try:
        if ending == "stopped":
            end_after(dash, kept, dash.stop_button.click)
        elif ending == "interrupted":  # a kernel interrupt while a cell waits
            end_after(dash, kept, sigint_self)
        dash.run_button.click()
        if ending == "interrupted":
            with pytest.raises(KeyboardInterrupt):
                dash.wait(timeout=60)
        else:
            dash.wait(timeout=60)
        assert dash.ending == ending and dash.result.runs == kept, dash.status
        assert_every_number_is_of_the_run_drawn(dash, planned)
    finally:
        dash.close()


def test_a_new_run_clears_the_message_and_marks_what_is_shown_as_the_previous_run(monkeypatch):
    """While a run goes, the message of the last one (\"interrupted ... after 8 of 50 runs\")
    is gone, the output area says it is the previous run's and greys its table and
    explanation, and the progress counts the traced runs of this run ("1/50", not "1/51")."""
    monkeypatch.setattr(widgets, "PROGRESS_EVERY_S", 0)  # every run updates the progress
    dash = pg.dashboard(two_branches, repeats=50)
    seen = {}
    try:
        end_after(dash, 3, dash.stop)
        dash.run()
        dash.wait(timeout=60)
        assert "stopped (Stop) after 3 of 50 runs" in dash.message.value
        first = dash.result

        def look() -> None:
            seen.update(
                message=dash.message.value,
                note=text_of(dash.previous_note.value).strip(),
                table=dash.table.value,
                explain=dash.explanation.value,
                status=dash.status,
            )
            dash.stop()

        end_after(dash, 2, look)
        dash.controls["batch"].value = 16  # a new graph, so a warm-up step again
        dash.wait(timeout=60)
        assert seen["message"] == ""
        assert seen["note"].startswith("Previous run, shown until this run ends: two_branches(")
        assert f"median {first.median_ms:.2f} ms of 3 runs" in seen["note"]
        assert "opacity" in seen["table"] and "opacity" in seen["explain"]
        assert seen["status"] == "running 2/50 runs ..."  # the warm-up is not counted
        assert dash.previous_note.value == "" and "opacity" not in dash.table.value
        assert "opacity" not in dash.explanation.value
        assert dash.result.params["batch"] == 16 and dash.result.runs == 2
    finally:
        dash.close()


def test_the_timeline_of_pins_gives_the_numbers_of_the_table():
    """With pins, each panel names its run and makespan (and median beside it for an even
    count), and the speed-up on top is the table's (a ratio of medians), not a ratio of the
    drawn runs' makespans, which would contradict the table's."""
    dash = pg.dashboard(two_branches, repeats=6)
    try:
        dash.run()
        dash.wait(timeout=60)
        dash.pin_button.click()
        dash.controls["repeats"].value = 7  # the same graph: compared, drawn on one time axis
        dash.wait(timeout=60)
        pin, current = dash.pinned[0], dash.result
        panels = timeline_panels(dash._figure)
        assert len(panels) == 2
        for panel, run, words in zip(
            panels, (pin, current), ("the lower middle of 6 runs", "the median of 7 runs")
        ):
            drawn = drawn_trace(panel, run.measurement.traces)
            assert drawn is run.trace
            title = panel.get_title(loc="left")
            assert f"makespan {drawn.makespan_ms:.2f} ms ({words}" in title
            assert set(re.findall(r"median (\d+\.\d+) ms", title)) <= {f"{run.median_ms:.2f}"}
            assert "×" not in title  # no ratio of the drawn makespans
        assert f"median {pin.median_ms:.2f} ms" in panels[0].get_title(loc="left")
        speedup = table_rows(dash.table.value)["current's speed-up vs this"][1]
        ratio = pin.median_ms / current.median_ms
        assert speedup.startswith(f"×{ratio:.2f} (95% CI ")
        top = dash._figure.get_suptitle()
        assert "ratio of medians" in top and top.endswith(f"\n{speedup} vs pin 1")
    finally:
        dash.close()


# -- the interactive timeline ---------------------------------------------------------------
def shown_canvas(dash):
    """The ipympl canvas the dashboard's timeline shows (in its Output area)."""
    from ipywidgets import Widget

    (area,) = dash.timeline.children
    output, fitting = area.outputs  # the canvas, and the script that fits it to its cell
    assert "<script>" in fitting["data"]["text/html"]
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
from parallelgraph.experiments import measure
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


# -- the live timeline and how runs end ----------------------------------------------------
def test_stop_after_live_drawings_ends_within_a_second_and_draws_the_median_of_what_was_kept(
    monkeypatch,
):
    """The live timeline draws between repeats (here twice a second: LIVE_SHARE raised); Stop
    pressed right after a live drawing still ends the run within a second, and the timeline
    then is the kept runs' median, not the live drawing."""
    from parallelgraph.widgets import viewer as dashboard_viewer

    monkeypatch.setattr(dashboard_viewer, "LIVE_SHARE", 1.0)
    dash = pg.dashboard(slow_chain, repeats=50, inter_op_threads=1)
    lives: list[tuple[int, int]] = []
    try:
        dash.gantt.observe(
            lambda _change: lives.append(getattr(dash._figure, "parallelgraph_live", None)),
            names="value",
        )
        ends = time_run_ends(dash)
        dash.run()
        deadline = time.monotonic() + 60
        while not any(lives) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(lives), f"no live drawing in 60 s: {dash.status}"
        pressed = time.perf_counter()
        dash.stop_button.click()
        dash.wait(timeout=10)
        assert ends[-1] - pressed < 1.0
        assert_idle_and_said(dash, "stopped", "stopped (Stop) after")
        assert lives[-1] is None  # the final drawing
        title = dash._figure.axes[0].get_title(loc="left")
        assert "running:" not in title and drawn_words(dash.result) in title
        assert dash.result.runs >= max(k for k, _ in filter(None, lives))
        assert "Timeline: running" not in dash.previous_note.value
    finally:
        dash.close()
