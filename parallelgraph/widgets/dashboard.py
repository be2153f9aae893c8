"""An ipywidgets dashboard for your own graph: controls, runs you can stop, the timeline and why.

    def build(batch=64, hidden=512, dtype="float32"):      # builds into a fresh pg.Graph
        with pg.scope("net1"): ...
        return out                                         # what to fetch

    dash = pg.dashboard(build, batch=(8, 2048), hidden=[256, 512, 1024], dtype=["float32"])
    dash                      # the last expression of a cell shows it; press Run
    dash.run(); dash.wait()   # the same from code (tests, scripts)

The design is ipywidgets' `interact_manual` pattern, in three layers, each a module of
`parallelgraph.widgets`:

1. **Controls** (`controls`): the parameters of `build` become widgets by `interact`'s
   abbreviations; the run knobs (device, executor, inter-op and intra-op threads, CUDA streams
   and policy, repeats) are always there, made from `Config`'s field metadata.
   `dash.controls[name]` is the widget of a parameter or knob. `pg.dashboard(graph, fetches)`
   takes a graph already built (knobs only); `pg.dashboard(preset="wide")` the built-in graphs,
   `pg.dashboard(preset="attention")` an architecture of `pg.models` with a slider for each of
   its sizes (heads, branches, experts, width, batch: `models.presets.ARCHITECTURES`).
2. **A pure function of the settings** (`settings`, `runner`): `Settings` (the graph source,
   its parameters, the `Knobs`) is a frozen value; `Runner.run(settings) -> Result` rebuilds
   only what a change requires and closes an old session before opening a new one. Nothing in
   this layer imports ipywidgets.
3. **An output area** (`report`, `canvas`, `viewer`): a status line (`dash.status`: what ran,
   how it ended), a progress bar, a message line (errors with their traceback folded, stops,
   soft placement, what Pin did), the timeline, the summary table and `explain()`. While a run
   goes, what is still on screen is the previous run's: a grey note says so and its table and
   explanation are greyed; the message line is cleared when a run starts.

Runs go in the background (`background`: Stop, `wait()`, kernel interrupts). Every ending —
done, stopped, interrupted, failed — leaves a true status line, a message, the Run and Pin
buttons enabled and Stop disabled; a failure keeps the previous timeline and says so. The
progress counts traced runs ("running 3/50 runs"), not the warm-up, and updates at most every
PROGRESS_EVERY_S (each update makes the browser redraw, which competes with the measurement on
2 cores).

Results remember what they ran: the build function and its parameters, the graph's size, the
knobs. **Pin** keeps the current result (up to `MAX_PINNED`, oldest dropped) and says so in the
message line, with its number and median; the table shows a column per pinned run, and a
speed-up only against pins of the same graph and parameters — a pin of another graph says so
and shows its own absolute time. The status gives the speed-up against the latest such pin.
The timeline draws the pins of the same graph above the current run, on one time axis.

Reruns. Changes rerun by themselves only after the first run and while "rerun on change" is
ticked; a change that leaves the settings equal to the last run's does not rerun.

Thread safety. Handlers run on the kernel's main thread; a run's work and its widget updates run
in the run's thread, one run at a time (a `threading.Lock` guards the busy/pending state).
`stop()` may be called from any thread. Drive the other methods from one thread.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..devices import Device
from ..dtypes import FLOAT_DTYPES
from ..experiments import stats
from ..graph import Graph
from ..interrupts import RELAY
from ..models.presets import ARCHITECTURES
from . import canvas, viewer
from .background import RunThread
from .canvas import figure_png
from .controls import Controls, knob_controls, knob_rows, param_controls, preset_controls
from .report import (
    LastEnding,
    comparable,
    ending_text,
    error_html,
    explained_html,
    figure_for,
    info_html,
    median_words,
    notes_html,
    pin_number,
    speedup_text,
    summary_html,
)
from .runner import Result, Runner
from .settings import (
    KNOB_NAMES,
    GraphSource,
    Knobs,
    Settings,
    _gpu_usable,
    built_from,
    preset_graph,
)

MAX_PINNED = 4
PROGRESS_EVERY_S = 0.25


class Dashboard(RunThread, viewer.ViewerControls):
    """Controls, Run / Stop / Pin buttons and an output area for one graph source.

    `Dashboard(build, **abbreviations_and_knobs)`, `Dashboard(graph, fetches, **knobs)`, or
    `Dashboard(**preset_values_and_knobs)` for the built-in graphs (see the module docstring).
    Options: `auto_run` (rerun when a control is released, after the first run; default True),
    `warmup` (warm a new session up before its first traced run; default True), `timeline`
    ("auto", "png" or "interactive"), `live` (the live timeline of a long run; default True, the
    "live timeline" checkbox).

    Scripting: `controls[name]`, `run()`, `wait(timeout)`, `stop()`, `result` (`.trace`,
    `.params`), `status` (the status line's text), `ending`, `pin()`, `clear_pins()`, `close()`;
    the viewer: `search` (its `.value`, the patterns), `search_words`, `top_ops`, `save_trace()`
    (the Save trace button), `live`.

    >>> dash = Dashboard(preset="two-networks", batch=64, hidden=256)  # doctest: +SKIP
    >>> dash.run(); dash.wait(); dash.result.trace                     # doctest: +SKIP
    """

    def __init__(
        self,
        build: Callable[..., Any] | Graph | None = None,
        fetches: Any = None,
        /,
        *,
        auto_run: bool = True,
        warmup: bool = True,
        timeline: str = "auto",
        live: bool = True,
        **options: Any,
    ):
        import ipywidgets

        self._widgets = ipywidgets
        if timeline not in ("auto", "png", "interactive"):
            raise ValueError(f"timeline must be 'auto', 'png' or 'interactive', not {timeline!r}")
        self.interactive = timeline == "interactive" or (
            timeline == "auto" and canvas.live_canvas_possible()
        )
        knob_values = {name: options.pop(name) for name in KNOB_NAMES if name in options}
        self.source, params = self._source_and_params(build, fetches, options)
        start_knobs = Knobs(**knob_values)
        self.runner = Runner(warmup=warmup)
        self.result: Result | None = None
        self.pinned: list[Result] = []
        self.error: BaseException | None = None
        self.ending: LastEnding = "not run"
        self.runs = 0
        self.closed = False
        self._init_run_thread()
        self._planned = 0  # traced runs the current run plans (the progress text counts them)
        self._last_progress = 0.0
        self._run_notes = ""  # the message line's text about the last run (pin adds to it)
        self._figure: Any = None
        self._canvas: Any = None  # the ipympl canvas, once there is an interactive figure
        self._patterns: tuple[str, ...] = ()  # the search box's patterns (the timeline's)
        self._draw_times: list[float] = []  # what the last drawings took (paces live ones)
        self._pacer = viewer.LivePacer()
        self._live_shown = False  # is the timeline a live drawing of the current run?
        self.runner.on_repeat = self._on_repeat
        self.param_controls = params
        self.knob_controls = knob_controls(start_knobs)
        self.controls = Controls({**self.param_controls, **self.knob_controls})
        self._make_buttons(auto_run, live)
        self._make_output_area()
        self.widget = self._layout()
        self._watch_controls()

    # -- the graph source and its parameters ------------------------------------------------
    def _source_and_params(
        self, build: Any, fetches: Any, options: dict[str, Any]
    ) -> tuple[GraphSource, dict[str, Any]]:
        """The graph source and one control per parameter (see the module docstring)."""
        if isinstance(build, Graph):
            if options:
                raise TypeError(
                    f"Dashboard got unknown options {sorted(options)} for a built graph; "
                    f"knobs: {list(KNOB_NAMES)}"
                )
            built_from(build, fetches)  # fails now if the fetches are not the graph's tensors
            return GraphSource(graph=build, fetches=fetches), {}
        if fetches is not None:
            raise TypeError("fetches go with a built graph: Dashboard(graph, fetches)")
        if build is None and options.get("preset") in ARCHITECTURES:  # pg.models' presets
            architecture = ARCHITECTURES[options.pop("preset")]
            abbreviations = {**architecture.controls, "dtype": list(FLOAT_DTYPES)}
            starting = {**architecture.sizes["small"], **options}
            controls = param_controls(architecture.build, abbreviations, starting, KNOB_NAMES)
            return GraphSource(architecture.build), controls
        if build is None:  # the built-in graphs: options are starting values
            abbreviations = preset_controls()
            unknown = sorted(set(options) - set(abbreviations))
            if unknown:
                raise TypeError(
                    f"Dashboard got unknown options {unknown}; known: "
                    f"{sorted([*abbreviations, *KNOB_NAMES])}"
                )
            controls = param_controls(preset_graph, abbreviations, options, KNOB_NAMES)
            return GraphSource(preset_graph), controls
        if not callable(build):
            raise TypeError(
                f"Dashboard(build, ...) takes a function that builds the graph, or a pg.Graph, "
                f"not {type(build).__name__}"
            )
        return GraphSource(build), param_controls(build, options, {}, KNOB_NAMES)

    # -- building the widgets ---------------------------------------------------------------
    def _make_buttons(self, auto_run: bool, live: bool) -> None:
        w = self._widgets
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.pin_button = w.Button(description="Pin", icon="thumb-tack", tooltip="keep this run")
        self.clear_button = w.Button(description="Clear pins", disabled=True)
        self.auto_run = w.Checkbox(value=auto_run, description="rerun on change", indent=False)
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="160px"))
        self.status_line = w.HTML("")
        self._say("not run yet: press Run")
        for name, widget in (
            ("run", self.run_button),
            ("stop", self.stop_button),
            ("pin", self.pin_button),
            ("clear-pins", self.clear_button),
            ("auto-run", self.auto_run),
            ("progress", self.progress),
            ("status", self.status_line),
        ):
            widget.add_class(f"pg-{name}")
        self.run_button.on_click(lambda _button: self.run())
        self.stop_button.on_click(lambda _button: self.stop())
        self.pin_button.on_click(lambda _button: self.pin())
        self.clear_button.on_click(lambda _button: self.clear_pins())
        self._make_viewer_widgets(live)

    def _make_output_area(self) -> None:
        w = self._widgets
        self.message = w.HTML("")
        self.previous_note = w.HTML("")  # "Previous run, ...": what is shown is not the latest
        self._table_html = self._explain_html = ""  # unmarked (not greyed) contents
        self._previous_html = ""  # the "Previous run, ..." note (a live drawing keeps it)
        self._previous_why: str | None = None  # why the output area is marked "previous run"
        self.gantt = w.Image(  # hidden until there is a picture (no broken-image icon)
            format="png", layout=w.Layout(max_width="100%", height="auto", display="none")
        )
        # The canvas' Output takes the timeline's width, not its content's (a flex item's
        # default minimum), so the fitting script reads the cell's width and the canvas
        # follows it when the page gets narrower.
        fill = {"width": "100%", "min_width": "0"}
        self.timeline = w.Box([self.gantt], layout=w.Layout(**fill))
        self._canvas_area = w.Output(layout=w.Layout(**fill))  # holds the ipympl canvas
        self.table = w.HTML("", layout=w.Layout(flex="0 0 auto"))
        self.explanation = w.HTML(
            "", layout=w.Layout(flex="1 1 360px", min_width="360px", margin="0 0 0 16px")
        )
        for name, widget in (
            ("message", self.message),
            ("previous", self.previous_note),
            ("gantt", self.gantt),
            ("timeline", self.timeline),
            ("summary", self.table),
            ("explain", self.explanation),
        ):
            widget.add_class(f"pg-{name}")
        self.output = w.VBox(
            [
                self.message,
                w.HBox([self.search, self.search_words], layout=w.Layout(align_items="center")),
                self.previous_note,
                self.timeline,
                w.HBox([self.table, self.explanation], layout=w.Layout(flex_flow="row wrap")),
                self.top_ops,
            ],
            layout=w.Layout(border="1px solid #ddd", padding="4px"),
        )
        self.output.add_class("pg-output")

    def _layout(self) -> Any:
        w = self._widgets
        shown = [p for p in self.param_controls.values() if isinstance(p, w.Widget)]
        rows = [
            w.HBox(shown, layout=w.Layout(flex_flow="row wrap")),
            *knob_rows(Knobs.specs, self.knob_controls),
            w.HBox(
                [
                    self.run_button,
                    self.stop_button,
                    self.pin_button,
                    self.clear_button,
                    self.save_button,
                    self.auto_run,
                    self.live,
                    self.progress,
                ],
                layout=w.Layout(flex_flow="row wrap", align_items="center"),
            ),
            self.status_line,
            self.output,
        ]
        box = w.VBox(rows)
        box.add_class("pg-dashboard")
        self._update_gpu_controls()
        return box

    def _watch_controls(self) -> None:
        for control in self.controls.values():
            if isinstance(control, self._widgets.Widget):
                control.observe(self._on_change, names="value")

    def _update_gpu_controls(self) -> None:
        """The knobs that only matter for ops on a GPU (streams, stream policy: `gpu_only` in
        their metadata) are greyed out on the CPU, and on gpu:0 where no GPU is usable (soft
        placement runs the ops on the CPU), which their labels then say."""
        placed_on_gpu = Device(self.knob_controls["device"].value).is_gpu
        on_gpu = placed_on_gpu and _gpu_usable()
        for spec in Knobs.specs:
            if spec.gpu_only:
                control = self.knob_controls[spec.name]
                control.disabled = not on_gpu
                no_gpu = placed_on_gpu and not on_gpu
                control.description = f"{spec.label} (no GPU)" if no_gpu else spec.label

    # -- behaviour --------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """The status line's text: what ran and how it ended."""
        return self._status_text

    def _say(self, text: str) -> None:
        """Set the status line (an HTML widget, so that a long line wraps instead of being
        cut off at the panel's edge)."""
        self._status_text = text
        self.status_line.value = html.escape(text)

    @property
    def baseline(self) -> Result | None:
        """The most recently pinned run, if any."""
        return self.pinned[-1] if self.pinned else None

    def params(self) -> dict[str, Any]:
        """The build function's parameters as the controls hold them."""
        return {name: control.value for name, control in self.param_controls.items()}

    def knobs(self) -> Knobs:
        return Knobs(**{name: control.value for name, control in self.knob_controls.items()})

    def settings(self) -> Settings:
        """The controls' current values."""
        return Settings.of(self.source, self.params(), self.knobs())

    def _on_change(self, change: dict[str, Any]) -> None:
        if change.get("owner") is self.knob_controls["device"]:
            self._update_gpu_controls()
        if not self.auto_run.value or self.runs == 0 or self.closed:
            return
        try:
            unchanged = self.result is not None and self.settings() == self.result.settings
        except (TypeError, ValueError):
            unchanged = False  # settings the controls cannot hold: let run() report it
        if not unchanged or self._busy:
            self.run()

    def _run_once(self) -> None:
        """One run; whatever happens, the status, the message and the buttons end true.

        The message line is cleared (it spoke of the last run) and what is still on screen is
        marked as the previous run's until this one replaces it."""
        self._last_progress = time.monotonic()
        self.progress.bar_style, self.progress.value = "info", 0
        self.message.value = self._run_notes = ""
        self._mark_previous("shown until this run ends")
        self._say(f"running {self.settings_text()} ...")
        self._pacer, self._live_shown = viewer.LivePacer(history=self._draw_times), False
        try:
            settings = self.settings()
            self._planned = settings.knobs.repeats
            result = self.runner.run(settings, self._progress, self._stop_signal)
            how = self._stop_reason if result.ending != "done" else "done"
            if how != result.ending:  # the loop was stopped because the kernel was interrupted
                result = replace(result, measurement=replace(result.measurement, ending=how))
            result.measurement.makespans_ms  # noqa: B018 - read each trace once, before timing
            drawing = time.monotonic()
            figure = figure_for(result, self.pinned, self._patterns) if result.runs else None
            # what a drawing of one timeline takes paces the live ones (pins add panels)
            built_s = time.monotonic() - drawing if not comparable(result, self.pinned) else None
            self._show(result, how, figure, built_s)
        except BaseException as error:  # noqa: BLE001 - every failure goes to the output area
            self._show_error(error)

    def pin(self) -> None:
        """Keep the current result for comparison (at most MAX_PINNED, the oldest dropped);
        the message line says what was pinned, under which number, and what it is for."""
        if self._busy:  # the run thread owns the output area until the run ends
            self.message.value = "<i>A run is going: pin when it has ended.</i>"
            return
        if self.result is None:
            self.message.value = "<i>Run first: there is nothing to pin yet.</i>"
            return
        result = self.result
        if result in self.pinned:
            said = f"This run is pin {self.pinned.index(result) + 1} already."
        else:
            dropped = len(self.pinned) == MAX_PINNED
            self.pinned = [*self.pinned, result][-MAX_PINNED:]
            said = (
                f"Pinned as pin {len(self.pinned)}: {result.settings.label()}, "
                f"{median_words(result)}. The table compares the next runs with it, and the "
                "timeline draws it above those of the same graph."
                + (f" (The oldest pin was dropped: at most {MAX_PINNED}.)" if dropped else "")
                + (
                    f" It has {stats.runs_text(result.runs)}: a speed-up against it will say "
                    f'"{stats.too_few_text(result.runs)}" ({stats.MIN_RUNS} or more repeats '
                    "give it a confidence interval)."
                    if result.runs < stats.MIN_RUNS
                    else ""
                )
            )
        self._redraw()
        self._tell(said)

    def clear_pins(self) -> None:
        """Forget the pinned runs (ignored while a run is going, like the greyed button)."""
        if self._busy:
            return
        count, self.pinned = len(self.pinned), []
        self._redraw()
        if count:
            self._tell(f"{count} pin(s) cleared.")

    def _tell(self, text: str) -> None:
        """An answer to a button (Pin, Clear pins) under the last run's notes."""
        self.message.value = self._run_notes + info_html(text)

    def _mark_previous(self, why: str | None) -> None:
        """Mark the output area as the previous run's (`why`: until when, or what happened to
        the newer run), greying its tables and explanation; None unmarks it."""
        self._previous_why = why
        if why is None or self.result is None:
            self.previous_note.value = self._previous_html = ""
            self.table.value, self.explanation.value = self._table_html, self._explain_html
            self.top_ops.value = self._top_ops_html
            return
        self.previous_note.value = self._previous_html = (
            "<div class='pg-previous-run-note' style='color:#777'><i>"
            f"{html.escape(f'Previous run, {why}: {self.result.settings.label()}')}, "
            f"{html.escape(median_words(self.result))}.</i></div>"
        )
        grey = "<div class='pg-previous-run' style='opacity:0.5'>{}</div>"
        self.table.value = grey.format(self._table_html)
        self.explanation.value = grey.format(self._explain_html)
        self.top_ops.value = grey.format(self._top_ops_html)

    def _redraw(self) -> None:
        """Redraw the table and timeline of the current result (after the pins changed)."""
        self.clear_button.disabled = not self.pinned
        if self.result is None:
            return
        marked = self._previous_why  # a redraw keeps the mark of a failed or empty run
        try:
            self._show_result(self.result, figure_for(self.result, self.pinned, self._patterns))
        except Exception as error:  # noqa: BLE001
            self._show_error(error)
            return
        self._mark_previous(marked)

    def _set_buttons(self, busy: bool) -> None:
        self.run_button.disabled = busy
        self.pin_button.disabled = busy
        self.stop_button.disabled = not busy
        self.stop_button.button_style = "warning" if busy else ""
        self.clear_button.disabled = busy or not self.pinned
        self.save_button.disabled = busy or self.result is None

    def settings_text(self) -> str:
        try:
            return self.settings().label()
        except (TypeError, ValueError) as error:
            return f"(invalid settings: {error})"

    def _progress(self, done: int, total: int) -> None:
        """Count the runs on the progress bar, at most every PROGRESS_EVERY_S: each update
        makes the browser redraw, which on a small machine competes with the run measured."""
        now = time.monotonic()
        if done < total and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        self.progress.max = total + 1  # the last step is drawing
        self.progress.value = done
        warmups = total - self._planned  # the bar counts them; the words count traced runs
        traced = max(0, done - warmups)
        self._say(
            f"running {traced}/{self._planned} runs"
            + (" (warmed up)" if warmups and not traced else "")
            + " ..."
        )

    def _show(self, result: Result, how: str, figure: Any, built_s: float | None = None) -> None:
        """Show a finished run (done, stopped or interrupted) and say how it ended."""
        self.ending = how
        said = ending_text(result, how)
        if figure is None:  # stopped before any traced run: keep the previous output
            stale = "; the timeline below is from the previous run" if self.result else ""
            self.message.value = self._run_notes = notes_html([f"{said}{stale}."])
            self._mark_previous(f"kept: the last run ({how}) measured nothing")
            self.progress.bar_style = "warning"
            self._say(f"{said}: {result.settings.label()}")
            return
        self._show_result(result, figure, built_s)
        notes = list(result.notes())
        if how != "done":
            notes.insert(0, f"{said}: the table and timeline show the runs measured.")
        load_line = result.load_note()
        # too short to judge: said where a speed-up against a pin stands beside it
        if load_line is not None and (result.busy_note() or comparable(result, self.pinned)):
            notes.append(load_line)
        self.message.value = self._run_notes = notes_html(notes)
        self.progress.value = self.progress.max
        self.progress.bar_style = "success" if how == "done" else "warning"
        self._say(self._status_of(result, said))

    def _status_of(self, result: Result, said: str) -> str:
        rebuilt = f" (new {result.rebuilt})" if result.rebuilt else ""
        if result.measurement.warmup_ms:
            warm = f"; warm-up {result.warmup_s:.2f} s"
            if result.warmup_s > max(0.1, 3 * result.measurement.median_wall_ms / 1e3):
                warm += " (compiling, first touch: not in the timings)"
        elif result.rebuilt and not self.runner.warmup:
            warm = "; no warm-up: the first run includes compilation"
        else:
            warm = ""
        pins = comparable(result, self.pinned)
        against = (
            f"; {speedup_text(result, pins[-1])} against pin {pin_number(self.pinned, pins[-1])}"
            if pins
            else ""
        )
        busy = "; busy machine: timings not reliable (see below)" if result.busy_note() else ""
        return (
            f"{result.settings.label()}: {median_words(result)}{against}; {said}{warm}; "
            f"{result.seconds:.2f} s{rebuilt}{busy}"
        )

    def _show_result(self, result: Result, figure: Any, built_s: float | None = None) -> None:
        """Timeline, table and explanation of `result` (it becomes `self.result`); `built_s`:
        what making the figure took (kept, with the showing, to pace live drawings)."""
        self.result, self.error = result, None
        self._show_figure(figure, built_s)
        self._live_shown = False
        self._table_html = summary_html(result, self.pinned)
        self._explain_html = explained_html(result)
        self._top_ops_html = viewer.top_ops_html(result.trace, self._patterns)
        self._mark_previous(None)
        self.clear_button.disabled = not self.pinned or self._busy

    def _show_figure(self, figure: Any, built_s: float | None = None) -> None:
        """The figure as PNG bytes in the Image widget, or (interactive) on a new ipympl canvas
        that replaces the previous one in an Output widget, whose output area disposes of the
        old view (a canvas swapped in a Box left its old view in the page; one canvas given
        each new figure in turn froze in the browser, which waits for an image per request).

        `built_s` (what making the figure took) is kept with the time showing it took among
        the recent drawing times that pace the live timeline."""
        started = time.monotonic()
        self._figure = figure
        canvas.leave_pyplot(figure)
        found = viewer.drawn_highlight(figure) if self._patterns else None
        words = viewer.search_words(self._patterns, found)
        self.search_words.value = viewer.search_html(words) if words else ""
        if not self.interactive:
            self.gantt.value = figure_png(figure)
            self.gantt.layout.display = None
        else:
            figure.set_dpi(min(canvas.PNG_DPI, canvas.CANVAS_WIDTH_PX / figure.get_figwidth()))
            old, self._canvas = self._canvas, canvas.ipympl_canvas(figure)
            if not self.timeline.children or self.timeline.children[0] is not self._canvas_area:
                self.timeline.children = (self._canvas_area,)
            self._canvas_area.outputs = canvas.fitted_outputs(self._canvas)
            if old is not None:
                canvas.close_canvas(old)
        if built_s is not None:
            viewer.keep_drawing_time(self._draw_times, built_s + time.monotonic() - started)

    def _show_error(self, error: BaseException) -> None:
        self.ending, self.error = "failed", error
        if self._live_shown:  # the timeline is a live drawing of the run that failed
            self._live_shown = False
            self._restore_timeline()
        self.message.value = self._run_notes = error_html(error)
        self._mark_previous("kept: the last run failed")
        self.progress.bar_style = "danger"
        stale = " (the timeline below is from the previous run)" if self.result else ""
        self._say(f"failed: {type(error).__name__}: {error}{stale}")

    def close(self) -> None:
        """Stop a run, close the session (joining its threads) and every widget."""
        self.closed = True
        self.stop()
        self._idle.wait(30)
        RELAY.restore()
        self.runner.close()
        if self._canvas is not None:
            canvas.close_canvas(self._canvas)
        for widget in _descendants(self.widget):
            widget.close()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        last = f"last {self.result.median_ms:.2f} ms" if self.result else "not run"
        return f"<Dashboard {self.settings_text()}; {last}>"


def _descendants(widget: Any) -> list[Any]:
    children = list(getattr(widget, "children", ()))
    return [widget, *(d for child in children for d in _descendants(child))]


__all__ = ["MAX_PINNED", "PROGRESS_EVERY_S", "Dashboard"]
