"""An ipywidgets dashboard: pick a graph and the thread knobs, run, see the timeline and why.

    dash = pg.dashboard(preset="two-networks", batch=64, hidden=256, inter_op_threads=2)
    dash.run()      # or click Run
    dash            # the last expression of a cell shows it

The design is ipywidgets' `interact_manual` pattern, in three layers:

1. **Controls** — the preset graph (two-networks, wide, chain, random DAG), its sizes (batch,
   hidden width), dtype, device, executor, inter-op and intra-op threads, CUDA streams and stream
   policy, repeats. `Dashboard.settings()` reads them into a frozen `Settings` value.
2. **A pure function of the settings** — `run(settings) -> Result` builds the graph, opens a
   Session, runs it `repeats` times traced and closes it; `Result` holds the measurement (every
   repeat's trace), the median trace, and what the summary table shows. `Runner` is the same
   function with a memory: it keeps the graph and the session of the last settings and rebuilds
   only what a change requires (below), which is what makes a rerun after a slider change fast.
   Nothing in these two layers imports ipywidgets: scripts and tests use them directly.
3. **An output area** — a status line with a progress bar, a message line (errors, warnings such
   as soft placement), the Gantt chart as a PNG in an `Image` widget, the summary table (median
   makespan with its IQR, speed-up against a pinned baseline, overlap of the first two scopes,
   utilization, the critical-path bound) and the `explain()` report.

Reruns. Heavy work happens only on the Run button or when a control is *released*: sliders have
`continuous_update=False`, so dragging sends one change, not one per tick. Changes rerun by
themselves only after the first run and while "rerun on change" is ticked; a change that leaves
the settings equal to the last run's (a queued duplicate) does not rerun. While a run is going
the Run button is disabled and the progress bar counts the runs (at most four updates a second:
each update makes the browser redraw, which on a 2-core machine competes with the measurement).

No flicker. The usual recipe is an `Output` widget with `clear_output(wait=True)` before
displaying the new figure: the old output stays until the new one arrives. We go one step further
and keep one `Image` widget whose PNG bytes are replaced: the browser swaps the picture inside the
same element, nothing is removed, the page never jumps; the state lives in the kernel-side model,
so tests can read it and it survives re-rendering the cell.

Errors. Every exception of a run is caught and shown in the message line with its traceback (in a
collapsed `<details>`); the previous timeline and table stay, the status says they are stale, and
the next run works as usual. Bad options given to the constructor raise at once instead.

Rebuild rules (`Runner.prepare`):
- a change of preset, batch, hidden, dtype or device builds a new graph, hence a new session;
- a change of executor, inter-op or intra-op threads, streams or stream policy builds a new session
  on the same graph;
- repeats, pinning a baseline or "rerun on change" rebuild nothing.
A new session's first run is an untimed warm-up (plans, first-touch of memory, GPU copies).

The pool-closing rule: the old session is closed — its inter-op and intra-op threads joined —
*before* the new one starts its own, so a dashboard never holds more than one session's threads
and `threading.active_count()` returns to its starting value after any number of rebuilds and
`close()`. `Dashboard.close()` closes the session and every widget.

Thread safety. ipywidgets calls the handlers on the kernel's main thread, one message at a time,
so runs never overlap; a run blocks the kernel while it goes (clicks arriving meanwhile are
handled after it). `Session.run` itself is thread-safe, but the Dashboard and Runner are not:
drive them from one thread. `run` records warnings with `warnings.catch_warnings`, which is
process-global state, another reason to keep to one thread.
"""

from __future__ import annotations

import html
import io
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from .config import EXECUTORS, STREAM_POLICIES, Config
from .dtypes import FLOAT_DTYPES
from .graph import Tensor
from .measure import Measurement
from .presets import PRESETS, Preset, build_preset
from .session import Session
from .trace import Trace

BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
HIDDENS = (16, 32, 64, 128, 256, 512, 1024, 2048)
DEVICES = ("cpu", "gpu:0")
MAX_THREADS = 8
MAX_STREAMS = 8
MAX_REPEATS = 50
PNG_DPI = 100
PROGRESS_EVERY_S = 0.25

Progress = Callable[[int, int], None]


# -- settings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Everything one dashboard run depends on; a frozen value, compared to decide rebuilds.

    >>> Settings(inter_op_threads=1).config().inter_op_threads
    1
    """

    preset: str = "two-networks"
    batch: int = 64
    hidden: int = 256
    dtype: str = "float32"
    device: str = "cpu"
    executor: str = "threads"
    inter_op_threads: int = 2
    intra_op_threads: int = 1
    streams: int = 1
    stream_policy: str = "branches"
    repeats: int = 5

    def __post_init__(self) -> None:
        choices = {
            "preset": PRESETS,
            "dtype": tuple(FLOAT_DTYPES),
            "device": DEVICES,
            "executor": EXECUTORS,
            "stream_policy": STREAM_POLICIES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("batch", "hidden", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.config()  # Config checks the thread and stream counts

    def graph_key(self) -> tuple[Any, ...]:
        """What the graph depends on: a change rebuilds the graph (and the session)."""
        return (self.preset, self.batch, self.hidden, self.dtype, self.device)

    def session_key(self) -> tuple[Any, ...]:
        """What the session depends on: a change rebuilds the session (closing the old one)."""
        return (*self.graph_key(), *sorted(self.config().as_dict().items()))

    def config(self) -> Config:
        return Config(
            executor=self.executor,
            inter_op_threads=self.inter_op_threads,
            intra_op_threads=self.intra_op_threads,
            streams=self.streams,
            stream_policy=self.stream_policy,
        )

    def label(self) -> str:
        """A short line naming the run: graph, sizes, placement, executor and knobs."""
        return (
            f"{self.preset} {self.batch}x{self.hidden} {self.dtype} on {self.device}, "
            f"{self.executor}: {_knobs(self)}"
        )


# -- graphs ---------------------------------------------------------------------------------
def build_graph(settings: Settings) -> Preset:
    """The preset's graph with the dashboard's sizes: `batch` rows, `hidden` wide.

    `parallelgraph.presets` with explicit dimensions (its named sizes are points on these
    sliders: two-networks "small" is batch 64, hidden 256; wide/chain/random "small" is 64,
    128). Ops go on `settings.device` (a GPU without a GPU: soft placement runs them on the CPU).
    """
    batch, hidden = settings.batch, settings.hidden
    size = (batch, hidden, hidden, batch) if settings.preset == "two-networks" else (batch, hidden)
    device_name = None if settings.device == "cpu" else settings.device
    return build_preset(settings.preset, size, settings.dtype, device_name)


# -- running --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    """One dashboard run: the settings, the graph, every repeat's trace, and the warnings."""

    settings: Settings
    preset: Preset
    measurement: Measurement
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0  # wall time of the whole run, rebuilds and warm-up included
    rebuilt: str = ""  # "graph", "session" or "" (same session as the previous run)

    @property
    def trace(self) -> Trace:
        """The repeat with the median makespan: the one drawn and explained."""
        return self.measurement.median_trace()

    @property
    def median_ms(self) -> float:
        return self.measurement.median_ms

    def overlap(self) -> float | None:
        """Median overlap of the graph's first two scopes (None for graphs without a pair)."""
        scopes = self.preset.scopes
        return self.measurement.median_overlap(*scopes[:2]) if len(scopes) >= 2 else None

    def utilization(self) -> float:
        """Mean busy fraction over the lanes of the median trace."""
        shares = self.trace.utilization()
        return sum(shares.values()) / len(shares) if shares else 0.0

    def bound_ms(self) -> float:
        """max(work / lanes, critical path) of the median trace: no schedule beats it."""
        return self.trace.lower_bound() * 1e3


def measure_runs(
    session: Session, fetch: Tensor, repeats: int, warmup: int, progress: Progress | None = None
) -> Measurement:
    """`parallelgraph.measure.measure`, reporting `progress(done, total)` after every run."""
    total, done = warmup + repeats, 0
    for _ in range(warmup):
        session.run(fetch)
        done += 1
        if progress:
            progress(done, total)
    traces, walls = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        _, trace = session.run(fetch, trace=True)
        walls.append((time.perf_counter() - start) * 1e3)
        traces.append(trace)
        done += 1
        if progress:
            progress(done, total)
    return Measurement(tuple(traces), tuple(walls))


class Runner:
    """The graph and session of the last settings; rebuilds only what a change requires.

    `run(settings)` is `parallelgraph.widgets.run` with a memory (see the module docstring for
    the rebuild and pool-closing rules). Not thread-safe: one caller at a time.

    >>> with Runner() as runner:                                    # doctest: +SKIP
    ...     first = runner.run(Settings(inter_op_threads=1))
    ...     second = runner.run(Settings(inter_op_threads=2))       # new session, same graph
    """

    def __init__(self) -> None:
        self.preset: Preset | None = None
        self.session: Session | None = None
        self._graph_key: tuple[Any, ...] | None = None
        self._session_key: tuple[Any, ...] | None = None
        self._session_warnings: tuple[str, ...] = ()
        self.graph_builds = 0
        self.session_builds = 0

    def prepare(self, settings: Settings) -> str:
        """Make the graph and session match `settings`; say what was rebuilt ("graph",
        "session" or "")."""
        rebuilt = ""
        if settings.graph_key() != self._graph_key:
            self.close()  # the session belongs to the old graph
            self.preset = build_graph(settings)
            self._graph_key = settings.graph_key()
            self.graph_builds += 1
            rebuilt = "graph"
        if settings.session_key() != self._session_key:
            self._close_session()  # join the old pools before starting new ones
            assert self.preset is not None
            self.session = Session(self.preset.graph, settings.config())
            self._session_key = settings.session_key()
            self.session_builds += 1
            rebuilt = rebuilt or "session"
        return rebuilt

    def run(self, settings: Settings, progress: Progress | None = None) -> Result:
        """Rebuild what changed, warm a new session up once, then run `repeats` times traced."""
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rebuilt = self.prepare(settings)
            assert self.session is not None and self.preset is not None
            warmup = 1 if rebuilt else 0
            measurement = measure_runs(
                self.session, self.preset.fetch, settings.repeats, warmup, progress
            )
        if rebuilt:  # a session warns once (soft placement): keep saying it while it lives
            self._session_warnings = ()
        self._session_warnings += tuple(
            dict.fromkeys(str(w.message) for w in caught if str(w.message))
        )
        return Result(
            settings,
            self.preset,
            measurement,
            self._session_warnings,
            time.perf_counter() - start,
            rebuilt,
        )

    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session, self._session_key = None, None

    def close(self) -> None:
        """Close the session (joining its threads) and forget the graph. Idempotent."""
        self._close_session()
        self.preset, self._graph_key = None, None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run(settings: Settings | None = None, progress: Progress | None = None) -> Result:
    """Build the graph, run it `settings.repeats` times traced in a fresh session, close it.

    The pure function behind the dashboard: same settings, same kind of result, no widgets.

    >>> result = run(Settings(preset="two-networks", batch=8, hidden=16, repeats=3))
    >>> result.measurement.traces[0].scopes()[:2]
    ['net1', 'net2']
    """
    with Runner() as runner:
        return runner.run(settings or Settings(), progress)


# -- what the output area shows -------------------------------------------------------------
def figure_for(result: Result, baseline: Result | None = None) -> Any:
    """The Gantt of the median run; with a baseline, both on one time axis (baseline first)."""
    from .plot import compare, gantt

    if baseline is None:
        return gantt(result.trace)
    labels = [f"baseline ({_knobs(baseline.settings)})", f"current ({_knobs(result.settings)})"]
    return compare([baseline.trace, result.trace], labels=labels)


def figure_png(figure: Any, dpi: int = PNG_DPI) -> bytes:
    """Render a figure once and encode it as PNG (fast compression: it is sent, not archived).

    One `canvas.draw()` runs the layout engine and draws; `savefig` would draw a second time.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    figure.set_dpi(dpi)
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else None
    canvas = canvas or FigureCanvasAgg(figure)
    canvas.draw()
    image = Image.frombuffer(
        "RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
    )
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def summary_rows(result: Result, baseline: Result | None = None) -> list[tuple[str, ...]]:
    """(metric, current[, baseline]) rows of the summary table, as text."""
    runs = [result] if baseline is None else [result, baseline]
    scopes = result.preset.scopes
    overlap_name = f"overlap {scopes[0]}/{scopes[1]}" if len(scopes) >= 2 else "overlap"
    rows: list[tuple[str, ...]] = [
        ("run", *(_knobs(r.settings) for r in runs)),
        ("median makespan", *(_median_text(r) for r in runs)),
        ("speed-up vs baseline", *(_speedup_text(r, baseline) for r in runs)),
        (overlap_name, *(_overlap_text(r) for r in runs)),
        ("utilization (mean of lanes)", *(_utilization_text(r) for r in runs)),
        ("critical-path bound", *(_bound_text(r) for r in runs)),
        ("repeats, wall per run", *(_wall_text(r) for r in runs)),
    ]
    return rows


def summary_html(result: Result, baseline: Result | None = None) -> str:
    """The summary table as HTML (inline styles: widget HTML gets no notebook styling)."""
    header = ["", "current"] + ([] if baseline is None else ["baseline"])
    cell = "padding:2px 10px;text-align:left;border-bottom:1px solid #ddd;white-space:nowrap"
    head = "".join(f"<th style='{cell}'>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='{cell}'>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(result, baseline)
    )
    return (
        "<table class='pg-summary-table' style='border-collapse:collapse;font-size:13px'>"
        f"<tr>{head}</tr>{body}</table>"
    )


def _knobs(settings: Settings) -> str:
    if settings.executor == "sequential":
        return "one thread (reference)"
    text = f"inter {settings.inter_op_threads}, intra {settings.intra_op_threads}"
    if settings.device != "cpu":
        text += f", {settings.streams} stream(s) {settings.stream_policy}"
    return text


def _median_text(result: Result) -> str:
    q1, q3 = result.measurement.quartiles_ms()
    return f"{result.median_ms:.2f} ms (IQR {q1:.2f}-{q3:.2f})"


def _speedup_text(result: Result, baseline: Result | None) -> str:
    if baseline is None:
        return "— (pin a baseline)"
    if not result.median_ms:
        return "—"
    return f"{baseline.median_ms / result.median_ms:.2f}x"


def _overlap_text(result: Result) -> str:
    overlap = result.overlap()
    return "— (no independent scopes)" if overlap is None else f"{overlap:.2f}"


def _utilization_text(result: Result) -> str:
    return f"{100 * result.utilization():.0f}% of {len(result.trace.lanes)} lane(s)"


def _bound_text(result: Result) -> str:
    bound = result.bound_ms()
    ratio = f", makespan {result.trace.makespan_ms / bound:.2f}x it" if bound else ""
    return f"{bound:.2f} ms{ratio}"


def _wall_text(result: Result) -> str:
    return f"{len(result.measurement.traces)}, {result.measurement.median_wall_ms:.2f} ms"


def error_html(error: BaseException) -> str:
    """An exception for the message line: one line in red, the traceback folded away."""
    summary = html.escape(f"{type(error).__name__}: {error}")
    details = html.escape("".join(traceback.format_exception(error)))
    return (
        f"<div class='pg-error' style='color:#b00020'><b>Run failed:</b> {summary}"
        f"<details><summary>traceback</summary><pre style='font-size:11px'>{details}</pre>"
        "</details></div>"
    )


def notes_html(result: Result) -> str:
    """Warnings of the run (soft placement, ...) for the message line; empty if none."""
    items = "".join(f"<li>{html.escape(w)}</li>" for w in result.warnings)
    return f"<div class='pg-notes' style='color:#8a5a00'><ul>{items}</ul></div>" if items else ""


# -- the widget -----------------------------------------------------------------------------
class Dashboard:
    """Controls, a Run button, a baseline, and an output area for one graph at a time.

    `Dashboard(**settings)` takes any `Settings` field as a starting value (and `auto_run`:
    rerun when a control is released, after the first run; default True). Show it as the last
    expression of a cell; `run()`, `pin_baseline()`, `clear_baseline()` do what the buttons do;
    `close()` ends its session and widgets. Main-thread only (see the module docstring).

    >>> dash = Dashboard(preset="two-networks", batch=64, hidden=256)  # doctest: +SKIP
    >>> dash.run(); dash                                               # doctest: +SKIP
    """

    def __init__(self, *, auto_run: bool = True, **settings: Any):
        import ipywidgets

        self._widgets = ipywidgets
        names = {f.name for f in fields(Settings)}
        unknown = sorted(set(settings) - names)
        if unknown:
            raise TypeError(f"Dashboard got unknown options {unknown}; known: {sorted(names)}")
        start = Settings(**settings)
        self.runner = Runner()
        self.result: Result | None = None
        self.baseline: Result | None = None
        self.error: BaseException | None = None
        self.runs = 0
        self._last_progress = 0.0
        self.controls = self._make_controls(start)
        self._make_buttons(auto_run)
        self._make_output_area()
        self.widget = self._layout()
        self._watch_controls()

    # -- building the widgets ---------------------------------------------------------------
    def _make_controls(self, start: Settings) -> dict[str, Any]:
        w = self._widgets
        wide = {"description_width": "initial"}

        def slider(name: str, label: str, low: int, high: int, tip: str) -> Any:
            return w.IntSlider(
                value=getattr(start, name),
                min=min(low, getattr(start, name)),  # 0 threads (one per core) if asked for
                max=max(high, getattr(start, name)),
                description=label,
                continuous_update=False,
                style=wide,
                tooltip=tip,
            )

        def choice(name: str, label: str, options: tuple, tip: str) -> Any:
            return w.Dropdown(
                options=options,
                value=getattr(start, name),
                description=label,
                style=wide,
                tooltip=tip,
                layout=w.Layout(width="200px"),
            )

        def size(name: str, label: str, options: tuple[int, ...], tip: str) -> Any:
            values = tuple(sorted({*options, getattr(start, name)}))
            return w.SelectionSlider(
                options=values,
                value=getattr(start, name),
                description=label,
                continuous_update=False,
                style=wide,
                tooltip=tip,
            )

        executors = tuple(e for e in EXECUTORS if e != "dask" or _dask_usable())
        controls = {
            "preset": choice("preset", "graph", PRESETS, "which preset graph to build"),
            "dtype": choice("dtype", "dtype", tuple(FLOAT_DTYPES), "float type of every tensor"),
            "device": choice("device", "device", DEVICES, "where ops are placed"),
            "executor": choice("executor", "executor", executors, "what runs the plan"),
            "batch": size("batch", "batch", BATCHES, "rows of every input"),
            "hidden": size("hidden", "hidden", HIDDENS, "width of the hidden layers"),
            "repeats": slider("repeats", "repeats", 1, MAX_REPEATS, "traced runs per Run"),
            "inter_op_threads": slider(
                "inter_op_threads", "inter-op", 1, MAX_THREADS, "ops running at the same time"
            ),
            "intra_op_threads": slider(
                "intra_op_threads", "intra-op", 1, MAX_THREADS, "threads working on one op"
            ),
            "streams": slider("streams", "streams", 1, MAX_STREAMS, "CUDA streams (GPU ops)"),
            "stream_policy": choice(
                "stream_policy", "policy", STREAM_POLICIES, "which GPU op goes on which stream"
            ),
        }
        for name, control in controls.items():
            control.add_class(f"pg-{name.replace('_', '-')}")
        return controls

    def _make_buttons(self, auto_run: bool) -> None:
        w = self._widgets
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.pin_button = w.Button(description="Pin as baseline", icon="thumb-tack")
        self.clear_button = w.Button(description="Clear baseline", disabled=True)
        self.auto_run = w.Checkbox(value=auto_run, description="rerun on change", indent=False)
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="160px"))
        self.status = w.Label("not run yet: press Run")
        for name, widget in (
            ("run", self.run_button),
            ("pin", self.pin_button),
            ("clear-baseline", self.clear_button),
            ("auto-run", self.auto_run),
            ("progress", self.progress),
            ("status", self.status),
        ):
            widget.add_class(f"pg-{name}")
        self.run_button.on_click(lambda _button: self.run())
        self.pin_button.on_click(lambda _button: self.pin_baseline())
        self.clear_button.on_click(lambda _button: self.clear_baseline())

    def _make_output_area(self) -> None:
        w = self._widgets
        self.message = w.HTML("")
        self.gantt = w.Image(  # hidden until there is a picture (no broken-image icon)
            format="png", layout=w.Layout(max_width="100%", height="auto", display="none")
        )
        self.table = w.HTML("", layout=w.Layout(flex="0 0 auto"))
        self.explanation = w.HTML(
            "", layout=w.Layout(flex="1 1 360px", min_width="360px", margin="0 0 0 16px")
        )
        for name, widget in (
            ("message", self.message),
            ("gantt", self.gantt),
            ("summary", self.table),
            ("explain", self.explanation),
        ):
            widget.add_class(f"pg-{name}")
        self.output = w.VBox(
            [
                self.message,
                self.gantt,
                w.HBox([self.table, self.explanation], layout=w.Layout(flex_flow="row wrap")),
            ],
            layout=w.Layout(border="1px solid #ddd", padding="4px"),
        )
        self.output.add_class("pg-output")

    def _layout(self) -> Any:
        w, c = self._widgets, self.controls
        rows = [
            w.HBox([c["preset"], c["dtype"], c["device"], c["executor"]]),
            w.HBox([c["batch"], c["hidden"], c["repeats"]]),
            w.HBox(
                [c["inter_op_threads"], c["intra_op_threads"], c["streams"], c["stream_policy"]]
            ),
            w.HBox(
                [self.run_button, self.pin_button, self.clear_button, self.auto_run, self.progress]
            ),
            self.status,
            self.output,
        ]
        box = w.VBox(rows)
        box.add_class("pg-dashboard")
        self._update_gpu_controls()
        return box

    def _watch_controls(self) -> None:
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

    def _update_gpu_controls(self) -> None:
        """Streams and stream policy only matter for GPU-placed ops: grey them out on the CPU."""
        on_cpu = self.controls["device"].value == "cpu"
        self.controls["streams"].disabled = on_cpu
        self.controls["stream_policy"].disabled = on_cpu

    # -- behaviour --------------------------------------------------------------------------
    def settings(self) -> Settings:
        """The controls' current values."""
        return Settings(**{name: control.value for name, control in self.controls.items()})

    def _on_change(self, change: dict[str, Any]) -> None:
        if change.get("owner") is self.controls["device"]:
            self._update_gpu_controls()
        if not self.auto_run.value or self.runs == 0:
            return
        try:
            unchanged = self.result is not None and self.settings() == self.result.settings
        except (TypeError, ValueError):
            unchanged = False  # settings the controls cannot hold: let run() report it
        if not unchanged:
            self.run()

    def run(self) -> Result | None:
        """Run with the controls' settings and show the result; on an error, show it and keep
        the previous result. Returns the new Result, or None if the run failed."""
        self.runs += 1
        self._busy(True)
        try:
            result = self.runner.run(self.settings(), progress=self._progress)
            png = figure_png(figure_for(result, self.baseline))
        except Exception as error:  # noqa: BLE001 - every failure goes to the output area
            self._show_error(error)
            return None
        finally:
            self._busy(False)
        self._show(result, png)
        return result

    def pin_baseline(self) -> None:
        """Keep the current result as the baseline: the table gains a speed-up and a baseline
        column, the Gantt shows both runs on one time axis."""
        if self.result is None:
            self.message.value = "<i>Run first: there is nothing to pin yet.</i>"
            return
        self.baseline = self.result
        self._redraw()

    def clear_baseline(self) -> None:
        self.baseline = None
        self._redraw()

    def _redraw(self) -> None:
        """Redraw the table and Gantt of the current result (after the baseline changed)."""
        self.clear_button.disabled = self.baseline is None
        if self.result is None:
            return
        try:
            png = figure_png(figure_for(self.result, self.baseline))
        except Exception as error:  # noqa: BLE001
            self._show_error(error)
            return
        self._show(self.result, png)

    def _busy(self, busy: bool) -> None:
        self.run_button.disabled = busy
        self.pin_button.disabled = busy
        if busy:
            self._last_progress = time.monotonic()
            self.progress.bar_style = "info"
            self.progress.value = 0
            self.status.value = f"running {self.settings_text()} ..."

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
        self.status.value = f"running {done}/{total} ..."

    def _show(self, result: Result, png: bytes) -> None:
        self.result, self.error = result, None
        self.gantt.value = png
        self.gantt.layout.display = None
        self.table.value = summary_html(result, self.baseline)
        self.explanation.value = result.trace.explain()._repr_html_()
        self.message.value = notes_html(result)
        self.progress.value, self.progress.bar_style = self.progress.max, "success"
        self.clear_button.disabled = self.baseline is None
        rebuilt = f" (new {result.rebuilt})" if result.rebuilt else ""
        self.status.value = (
            f"{result.settings.label()}: median {result.median_ms:.2f} ms of "
            f"{result.settings.repeats}; done in {result.seconds:.2f} s{rebuilt}"
        )

    def _show_error(self, error: BaseException) -> None:
        self.error = error
        self.message.value = error_html(error)
        self.progress.bar_style = "danger"
        stale = " (the timeline below is from the previous run)" if self.result else ""
        self.status.value = f"error: {type(error).__name__}{stale}"

    def close(self) -> None:
        """Close the session (joining its threads) and every widget of the dashboard."""
        self.runner.close()
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


def _dask_usable() -> bool:
    """Offer the dask executor only where both dask.distributed and our adapter exist."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("distributed", "parallelgraph.executors.dask")
    )


__all__ = [
    "Dashboard",
    "Result",
    "Runner",
    "Settings",
    "build_graph",
    "figure_for",
    "figure_png",
    "measure_runs",
    "run",
    "summary_html",
    "summary_rows",
]
