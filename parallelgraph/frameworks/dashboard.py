"""The dashboard on a framework: its thread knobs as sliders, each setting in a warm worker.

    dash = pg.dashboard(build, framework="pytorch", batch=(8, 512))
    dash                        # Run: times the step, traces one, draws and explains it
    dash.run(); dash.wait()     # the same from code

`build(setting)` is the build function of a framework sweep (`parallelgraph.frameworks`). The
framework's knobs (inter, intra; ONNX Runtime's mode, JAX's devices) are sliders beside the
build's own parameters (the keyword abbreviations, as `interact` reads them: (min, max) a
slider, a list a dropdown). Run times `repeats` steps of the setting on screen in its worker,
then traces one step with the framework's profiler, draws that trace and explains it; the
status gives the median with its 95% bootstrap interval, and the speed-up against the pinned
setting with its interval (a single run is "one run: not a conclusion"), and says when the
machine was busy.

Workers: a setting's worker is started on first use and kept warm (`WorkerCache`, at most
`max_workers`, the least recently used ended first), since a framework's pools cannot change
in a running process. Stop ends a run within 0.1 s: the worker inside a step is ended (its
setting starts afresh next time). Kernel ▸ Interrupt ends a Run-button run the same way (the
SIGINT relay of `parallelgraph.interrupts`), and `dash.wait()` re-raises a KeyboardInterrupt
after stopping the run, so a Run All stops there. `close()` (and the interpreter's exit) ends
every worker.
"""

from __future__ import annotations

import html
import math
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..config import cpu_count
from ..experiments import stats
from ..experiments.machine_load import LoadMonitor, load_note
from ..interrupts import RELAY, end_listener
from .knobs import Framework, framework, unapplied_text
from .pool import Stopped, Worker, Workers
from .sweep import check_knobs, label_of, pickled_build, setup_request

#: How the status line begins, by the run's ending.
ENDING_WORDS = {
    "done": "",
    "stopped": "Stopped: ",
    "interrupted": "Interrupted: ",
    "failed": "Failed: ",
}
#: The status shows a run's progress at most this often.
PROGRESS_EVERY_S = 0.25
#: Warm workers kept alive at most (each holds a framework's process: 100-500 MB).
MAX_WORKERS = 3


def _key(knobs: Mapping[str, Any], params: Mapping[str, Any]) -> tuple:
    return tuple(sorted({**knobs, **params}.items()))


#: The most warm workers and repeats a dashboard takes (far above any useful number).
MAX_WORKERS_LIMIT = 32
MAX_REPEATS = 100_000


def _check_whole(name: str, value: Any, low: int, high: int) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not low <= value <= high
    ):
        raise ValueError(
            f"pg.dashboard(..., {name}={value!r}): a whole number from {low} to {high}"
        )


def slider_range(framework_: Framework, knob: str, given: Any) -> tuple[int, int, int]:
    """(min, value, max) of a knob's slider from what the user gave: a value (the slider runs
    from 1 to twice the cores, or further to hold it: oversubscription is worth seeing) or a
    (min, max) pair (the slider starts at min). A ValueError names anything else."""
    cores = cpu_count()
    pair = isinstance(given, tuple) and len(given) == 2
    for value in given if pair else (given,):
        check_knobs(framework_, [{knob: value}])
    if pair:
        low, high = (int(v) for v in given)
        if low > high:
            raise ValueError(f"pg.dashboard(..., {knob}={given!r}): (min, max) with min <= max")
        return low, low, high
    if given is None:
        raise ValueError(f"pg.dashboard(..., {knob}=None): give a whole number or (min, max)")
    return 1, int(given), max(2 * cores, 4, int(given))


class WorkerCache:
    """Warm workers by setting, the least recently used ended beyond `limit`."""

    def __init__(self, framework_: Framework, build: bytes, warmup: int, limit: int):
        self.framework, self.build, self.warmup, self.limit = framework_, build, warmup, limit
        self._workers: OrderedDict[tuple, tuple[Worker, dict[str, Any]]] = OrderedDict()
        self._group = Workers()

    def get(
        self, knobs: Mapping[str, Any], params: Mapping[str, Any], stopped: Callable[[], bool]
    ) -> tuple[Worker, dict[str, Any]]:
        """(worker, its setup reply) for this setting, started and set up if needed."""
        key = _key(knobs, params)
        if self.warm(knobs, params):
            self._workers.move_to_end(key)
            return self._workers[key]
        self.forget(key)
        while len(self._workers) >= self.limit:
            _, (oldest, _) = self._workers.popitem(last=False)
            oldest.close()
        worker = self._group.start(
            self.framework, knobs, label_of(self.framework, {**knobs, **params})
        )
        worker.send("setup", setup_request(self.framework, knobs, params, self.build, self.warmup))
        try:
            reply = worker.receive(stopped)
        except BaseException:
            worker.close()
            raise
        self._workers[key] = (worker, reply)
        return worker, reply

    def warm(self, knobs: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
        """Whether this setting has a live worker already."""
        key = _key(knobs, params)
        return key in self._workers and self._workers[key][0].alive

    def forget(self, key: tuple) -> None:
        if key in self._workers:
            self._workers.pop(key)[0].close()

    def end(self, worker: Worker) -> None:
        """End a worker that is inside a step (a Stop): its setting starts afresh next time."""
        for key, (known, _) in list(self._workers.items()):
            if known is worker:
                self.forget(key)
        worker.close()

    def pids(self) -> list[int]:
        return [w.pid for w, _ in self._workers.values() if w.alive]

    def close(self) -> None:
        self._workers.clear()
        self._group.close()


class Measured:
    """One run of the dashboard: the setting, its step times and its traced step."""

    def __init__(self, knobs: dict[str, Any], params: dict[str, Any], times_ms: list[float]):
        self.knobs, self.params, self.times_ms = knobs, params, times_ms
        self.read_back: dict[str, Any] = {}
        self.trace: Any = None
        self.busy: str | None = None
        self.ending = "done"

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in {**self.knobs, **self.params}.items())

    def median_text(self) -> str:
        if not self.times_ms:
            return "no step measured"
        low, high = stats.bootstrap_median_ci(self.times_ms, np.random.default_rng(0))
        spread = (
            stats.too_few_text(len(self.times_ms))
            if math.isnan(low)
            else f"95% CI {low:.3f}-{high:.3f} ms"
        )
        return (
            f"median {stats.median(self.times_ms):.3f} ms of {len(self.times_ms)} steps ({spread})"
        )

    def speedup_text(self, pin: Measured) -> str:
        """Against the pinned run, by the one rule every screen uses (`stats.speedup_text`)."""
        if not self.times_ms or not pin.times_ms:
            return ""
        return f"{stats.speedup_text(pin.times_ms, self.times_ms)} against the pin ({pin.label})"


class FrameworkDashboard:
    """Sliders for a framework's knobs and the build's parameters, Run / Stop / Pin, the status,
    the traced step's timeline and its explanation (see the module docstring)."""

    def __init__(
        self,
        build: Callable[..., Any],
        framework_name: str,
        *,
        repeats: int = 10,
        warmup: int = 2,
        max_workers: int = MAX_WORKERS,
        trace: bool = True,
        **abbreviations: Any,
    ):
        import ipywidgets as widgets
        from ipywidgets import interactive

        self.framework = framework(framework_name)
        _check_whole("repeats", repeats, 1, MAX_REPEATS)
        _check_whole("warmup", warmup, 0, MAX_REPEATS)
        _check_whole("max_workers", max_workers, 1, MAX_WORKERS_LIMIT)
        knob_values = {
            k: abbreviations.pop(k) for k in list(abbreviations) if k in self.framework.knobs
        }
        self.workers = WorkerCache(self.framework, pickled_build(build), warmup, max_workers)
        self.trace_steps = trace
        self.controls: dict[str, Any] = {}
        for knob in self.framework.sliders:
            low, value, high = slider_range(self.framework, knob, knob_values.get(knob, 1))
            self.controls[knob] = widgets.IntSlider(
                value=value, min=low, max=high, description=knob, continuous_update=False
            )
        for knob, choices in self.framework.choices.items():
            chosen = knob_values.get(knob, choices[0])
            if chosen not in choices:
                raise ValueError(
                    f"pg.dashboard(..., {knob}={chosen!r}): {self.framework.title}'s {knob} is "
                    f"one of {list(choices)}"
                )
            self.controls[knob] = widgets.Dropdown(
                options=list(choices), value=chosen, description=knob
            )
        ignored = sorted(set(knob_values) - set(self.controls))
        if ignored:
            raise ValueError(
                f"pg.dashboard(..., {ignored[0]}=...): the {self.framework.title} dashboard has "
                f"no {ignored[0]} control (its knobs: {', '.join(self.controls)})"
            )
        for name, abbrev in abbreviations.items():
            widget = interactive.widget_from_abbrev(abbrev)
            if widget is None:
                raise ValueError(f"pg.dashboard(..., {name}={abbrev!r}): not a control")
            widget.description = name
            self.controls[name] = widget
        self.repeats = widgets.IntSlider(
            value=repeats, min=1, max=max(200, repeats), description="repeats"
        )
        self.run_button = widgets.Button(description="Run", button_style="primary")
        self.stop_button = widgets.Button(description="Stop", disabled=True)
        self.pin_button = widgets.Button(description="Pin", disabled=True)
        self.verify_button = widgets.Button(description="Verify advice", disabled=True)
        self.status = widgets.HTML("Press Run: the first run of a setting starts its worker.")
        self.message = widgets.HTML("")
        self.timeline = widgets.Image(format="png")
        self.explanation = widgets.HTML("")
        self.run_button.on_click(lambda _: self.run())
        self.stop_button.on_click(lambda _: self.stop())
        self.pin_button.on_click(lambda _: self.pin())
        self.verify_button.on_click(lambda _: self.verify())
        self.widget = widgets.VBox(
            [
                widgets.HBox(list(self.controls.values())),
                widgets.HBox([self.repeats, self.run_button, self.stop_button, self.pin_button,
                             self.verify_button]),
                self.status, self.message, self.timeline, self.explanation,
            ]
        )  # fmt: skip
        self.last: Measured | None = None
        #: The last verification of advice (the Verify advice button), with its numbers.
        self.verification: Any = None
        self.pinned: Measured | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._interrupted = False
        self._finished = threading.Event()
        #: The run going now (or the last one): its steps so far.
        self.current: Measured | None = None

    # -- what the controls say ------------------------------------------------------------------
    def setting(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(knobs, build parameters) as the controls show them, checked."""
        values = {name: control.value for name, control in self.controls.items()}
        knobs = {k: v for k, v in values.items() if k in self.framework.knobs}
        params = {k: v for k, v in values.items() if k not in self.framework.knobs}
        check_knobs(self.framework, [values])
        return knobs, params

    # -- runs -----------------------------------------------------------------------------------
    def run(self) -> None:
        """Start a run of the setting on screen in the background (the Run button)."""
        knobs, params = self.setting()
        what = label_of(self.framework, {**knobs, **params})
        self._start(f"running {html.escape(what)} ...", self._run, knobs, params)

    def verify(self) -> None:
        """Run the setting the last traced run's advice asks for against that run's setting,
        interleaved in their warm workers (the Verify advice button); `dash.verification`
        and the message line say what was measured against what the replay predicted."""
        from .verify import advised_change

        last = self.last
        if last is None or last.trace is None:
            self.message.value = "Run (traced) first: Verify measures the advice of that run."
            return
        try:
            words, after = advised_change(
                self.framework, {**last.knobs, **last.params}, last.trace.explain()
            )
        except ValueError as refused:
            self.message.value = html.escape(str(refused))
            return
        self._start(f"verifying: {html.escape(words[:120])} ...", self._verify, last, words, after)

    def _start(self, status: str, target: Callable[..., None], *args: Any) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.message.value = "A run is going: Stop it first."
            return
        self._stop.clear()
        self._error = None
        self.message.value = ""
        self.status.value = status
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.verify_button.disabled = True
        self._interrupted = False
        words: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        relayed = RELAY.attach(words)  # Kernel ▸ Interrupt reaches a Run-button run
        listener = threading.Thread(target=self._listen, args=(words,), daemon=True)
        if relayed:
            listener.start()

        finished = self._finished = threading.Event()

        def body() -> None:
            try:
                target(*args)
            finally:
                if relayed:
                    end_listener(words, listener)
                finished.set()

        self._thread = threading.Thread(target=body, name="pg-framework-run", daemon=True)
        self._thread.start()

    def _listen(self, words: queue.SimpleQueue[str | None]) -> None:
        """The run's SIGINT listener: a word from the relay stops the run as "interrupted"."""
        if words.get() is not None:
            self._interrupted = True
            self.stop()

    def _verify(self, last: Measured, words: str, after: dict[str, Any]) -> None:
        from .sweep import Runner
        from .verify import compared

        is_knob = self.framework.knobs.__contains__
        before = {**last.knobs, **last.params}
        kept: list[Any] = []
        try:
            pair = [
                self.workers.get(
                    {k: v for k, v in cell.items() if is_knob(k)},
                    {k: v for k, v in cell.items() if not is_knob(k)},
                    self._stop.is_set,
                )
                for cell in (before, after)
            ]
            runner = Runner(self.framework, self.workers.build, self.workers.warmup)
            complete = runner.measure(
                [worker for worker, _ in pair], self.repeats.value, kept.append, self._stop.is_set
            )
            self.verification = compared(
                self.framework, words, before, after, kept,
                (pair[0][1]["read_back"], pair[1][1]["read_back"]), last.trace, is_knob,
                complete,
            )  # fmt: skip
            self.message.value = f"<pre>{html.escape(str(self.verification))}</pre>"
            self.status.value = f"Verified: {html.escape(self.verification.verdict)}"
        except BaseException as error:  # noqa: BLE001 - shown, and raised by wait()
            self._error = error
            self.message.value = f"<pre>{html.escape(str(error))[:4000]}</pre>"
            self.status.value = "Failed: the verification"
        self._enable()

    def _run(self, knobs: dict[str, Any], params: dict[str, Any]) -> None:
        measured = self.current = Measured(knobs, params, [])
        worker = None
        try:
            with LoadMonitor(own_pids=self.workers.pids) as monitor:
                if not self.workers.warm(knobs, params):
                    self.status.value = f"starting a worker for {html.escape(measured.label)} ..."
                worker, reply = self.workers.get(knobs, params, self._stop.is_set)
                measured.read_back = reply["read_back"]
                shown = 0.0
                for index in range(self.repeats.value):
                    if self._stop.is_set():
                        raise Stopped(worker.label)
                    (ns,) = worker.ask("time", self._stop.is_set, steps=1)
                    measured.times_ms.append(ns / 1e6)
                    if time.monotonic() - shown > PROGRESS_EVERY_S:
                        shown = time.monotonic()
                        self.status.value = (
                            f"running {html.escape(measured.label)}: step {index + 1} of "
                            f"{self.repeats.value}"
                        )
            measured.busy = load_note(monitor.load)
            if self.trace_steps and self.framework.profile is not None:
                from ..trace.model import Trace

                measured.trace = Trace.load(worker.ask("trace", self._stop.is_set))
        except Stopped:
            measured.ending = "interrupted" if self._interrupted else "stopped"
            if worker is not None:
                self.workers.end(worker)
        except BaseException as error:  # noqa: BLE001 - shown on the message line, kept for wait()
            measured.ending = "failed"
            self._error = error
        self.last = measured if measured.times_ms or self.last is None else self.last
        self._show(measured)

    def _show(self, measured: Measured) -> None:
        line = f"{ENDING_WORDS[measured.ending]}{html.escape(measured.label)}: "
        line += measured.median_text()
        if self.pinned is not None and self.pinned is not measured:
            line += "; " + html.escape(measured.speedup_text(self.pinned))
        if measured.read_back:
            line += f"<br>{self.framework.title} reported: {html.escape(str(measured.read_back))}"
            missing = unapplied_text(measured.knobs, measured.read_back)
            if missing:
                line += (
                    f"<br><b>Not applied</b>: {html.escape(missing)}: these steps ran with "
                    f"{self.framework.title}'s defaults, not this setting"
                )
        if measured.busy:
            line += f"<br>{html.escape(measured.busy)}"
        self.status.value = line
        if self._error is not None:
            self.message.value = f"<pre>{html.escape(str(self._error))[:4000]}</pre>"
        if measured.trace is not None:
            import matplotlib.pyplot as plt

            from ..widgets.canvas import figure_png

            figure = measured.trace.plot(
                title=f"{self.framework.title} {measured.label}: traced step"
            )
            self.timeline.value = figure_png(figure)
            plt.close(figure)
            self.explanation.value = f"<pre>{html.escape(str(measured.trace.explain()))}</pre>"
        self._enable()

    def _enable(self) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True
        self.pin_button.disabled = self.last is None
        self.verify_button.disabled = self.last is None or self.last.trace is None

    def stop(self) -> None:
        """End the run (the Stop button): within 0.1 s, the worker inside a step ended."""
        self._stop.set()

    def pin(self) -> None:
        """Keep the last run as the one later runs are compared with."""
        if self.last is not None:
            self.pinned = self.last
            self.message.value = (
                f"Pinned {html.escape(self.last.label)}: later runs give their speed-up against it."
            )

    def wait(self, timeout: float | None = None) -> Measured | None:
        """Block until the run ends; a KeyboardInterrupt stops it and is raised again."""
        if self._thread is None:
            return self.last
        finished = self._finished
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # An Event of our own, in slices: an interrupt that is only flagged (interrupt_main)
            # is seen between them, and an interrupted Thread.join can leave the thread looking
            # ended while it runs (CPython 3.11), so the run's end is never read off the thread.
            while not finished.wait(0.05) and (deadline is None or time.monotonic() < deadline):
                pass
        except KeyboardInterrupt:
            self.stop()
            finished.wait()
            raise
        finally:
            RELAY.restore()
        if self._error is not None:
            raise self._error
        return self.last

    def close(self) -> None:
        """Stop any run and end every worker."""
        self.stop()
        if self._thread is not None:
            self._thread.join()
        RELAY.restore()
        self.workers.close()
        self.widget.close()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
