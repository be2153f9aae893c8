"""The dashboard's viewer: search, the top ops, a trace file for Perfetto, a live timeline, and
a busy machine said out loud — the pieces `parallelgraph.widgets` puts in its output area.

What each one does, and the rules behind it:

- **Search** (`search_patterns`, `search_words`): the text of the search box is a list of
  fnmatch patterns separated by commas ("MatMul*, net1/*"); the timeline draws the ops that
  match as usual and fades the others (`trace.plot(highlight=...)`, whose matching rules are
  `parallelgraph.plot.highlight`'s), and the line beside the box says how many ops of the run
  drawn matched, read off the drawn figure itself (`drawn_highlight`), so the words and the
  picture cannot disagree. An empty box (or only commas and spaces) draws everything as usual.
- **Top ops** (`top_ops_html`): `trace.top_ops()` of the run drawn, its first TOP_OPS_ROWS
  rows, as a table with inline styles (widget HTML gets no notebook styling); the rows the
  search matches are marked.
- **Trace file** (`trace_file_name`, `save_trace`): the run drawn, as Chrome trace-event JSON
  with the memory track (`Trace.save(path, memory=True)`), in a folder (the current directory
  by default), named after the settings and the time, never over an existing file:
  "pg-trace_seed_graph-batch64-hidden256_cpu-threads-inter2-intra1_20260101-120000.json". It
  opens in ui.perfetto.dev and chrome://tracing.
- **Live timeline** (`LivePacer`, `live_figure`): while a long run goes, the timeline is
  redrawn with the latest traced repeat, titled "running: repeat k of n". It is drawn in the
  run's own thread *between* two repeats — never during one, so no measured run shares the
  CPUs with the drawing — and only when all three hold: a repeat has just ended (and it is not
  the last: the final drawing follows at once), at least LIVE_EVERY_S has passed since the
  first traced repeat began (rebuilds and the warm-up do not count) or since the last drawing,
  and at least `draw time / LIVE_SHARE` has passed too (the median of the recent drawings), so
  drawing takes at most about LIVE_SHARE of a long run's wall time whatever a drawing costs on
  this machine. A short run (the usual few milliseconds a repeat) is never drawn live: the
  redraw after a knob change costs what it cost before. When the run ends, the timeline draws
  the run nearest the median, as without the live timeline.
- **Busy machine** (`threads_used`, `worker_pids`): each run is measured under a
  `machine_load.LoadMonitor` (warm-up and repeats; the Dask executor's worker processes count
  as ours); `machine_load.busy_note` turns that into a sentence when other processes took
  cores the run needed, and into nothing on a quiet machine or over a period too short to
  tell (`MIN_WALL_S`).
"""

from __future__ import annotations

import html
import os
import re
import statistics
import time
from collections.abc import Iterable, MutableSequence, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..executors.registry import executor_spec, find_executor

if TYPE_CHECKING:
    from ..plot import Highlight
    from ..session import Session
    from ..trace.model import Trace
    from .runner import Result
    from .settings import Knobs, Settings

#: How many rows of `trace.top_ops()` the output area shows.
TOP_OPS_ROWS = 10
#: The live timeline redraws at most this often (seconds between two drawings).
LIVE_EVERY_S = 0.5
#: ... and at most this share of the run's wall time goes into live drawings: the next one
#: waits `draw time / LIVE_SHARE` after the last. Drawings happen between repeats, so no
#: measured run is slowed; what grows is the wait for the whole run, by about this share
#: (benchmarks/RESULTS.md, "Live timeline": at 0.1 the wait grew 7%, at 0.05 by less than
#: the runs' own spread).
LIVE_SHARE = 0.05
#: What a drawing is assumed to cost before one has been timed (a Gantt and its PNG on 2 cores).
DRAW_GUESS_S = 0.2
#: How many recent drawing times pace the live timeline (their median).
DRAWS_KEPT = 5
#: What the search box shows when empty.
SEARCH_PLACEHOLDER = "search ops: MatMul*, net1/*"
#: The longest settings part of a trace file's name (the time stamp comes after it).
MAX_NAME_CHARS = 100


# -- search ---------------------------------------------------------------------------------
def search_patterns(text: str) -> tuple[str, ...]:
    """The fnmatch patterns of the search box's text: comma-separated, spaces around them and
    empty ones dropped ("" and " , " give none: everything is drawn as usual).

    >>> search_patterns(" MatMul*, net1/* ,,")
    ('MatMul*', 'net1/*')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


def drawn_highlight(figure: Any) -> Highlight | None:
    """What the highlight found in the current run's panel of a dashboard figure (its last
    timeline panel: pins come above it), or None when the figure was drawn without one."""
    panels = [ax for ax in figure.axes if hasattr(ax, "parallelgraph_bars")]
    return getattr(panels[-1], "parallelgraph_highlight", None) if panels else None


def search_words(patterns: Sequence[str], found: Highlight | None) -> str:
    """The line beside the search box: how many ops of the run drawn match, in words."""
    if not patterns:
        return ""
    shown = ", ".join(patterns)
    if found is None:
        return f"{shown}: highlighted in the next timeline drawn"
    if not found.matched:
        return f"no op of the run drawn matches {shown}: everything is drawn as usual"
    return f"{shown}: {found.matched} of {found.ops} ops of the run drawn match (highlighted)"


def search_html(words: str) -> str:
    return f"<span class='pg-search-words' style='color:#555'>{html.escape(words)}</span>"


# -- top ops --------------------------------------------------------------------------------
def top_ops_html(trace: Trace, patterns: Sequence[str] = (), limit: int = TOP_OPS_ROWS) -> str:
    """`trace.top_ops()` (by total time, its first `limit` rows) as a table with inline styles;
    rows whose name the search `patterns` match are marked (a yellow background, bold)."""
    from ..plot import name_matcher

    table = trace.top_ops(limit=limit)
    header, lines = table.table()
    matches = name_matcher(patterns) if patterns else None
    cell = "padding:1px 8px;border-bottom:1px solid #ddd;white-space:nowrap;text-align:right"
    first = cell.replace("text-align:right", "text-align:left")
    head = "".join(
        f"<th style='{first if i == 0 else cell}'>{html.escape(h)}</th>"
        for i, h in enumerate(header)
    )
    body = []
    for cells in lines:
        marked = matches is not None and matches(cells[0])
        style = " style='background:#fff3b0;font-weight:bold'" if marked else ""
        row = "".join(
            f"<td style='{first if i == 0 else cell}'>{html.escape(c)}</td>"
            for i, c in enumerate(cells)
        )
        body.append(f"<tr class='{'pg-top-op-match' if marked else 'pg-top-op'}'{style}>{row}</tr>")
    footer = table._footer() or ("(no work op events in this trace)" if not lines else "")
    note = f"<div style='color:#555'>{html.escape(footer)}</div>" if footer else ""
    return (
        "<div class='pg-top-ops-table' style='font-size:12px;margin-top:6px'>"
        f"<div style='color:#555'>Top ops of the run drawn: {html.escape(table.heading())}</div>"
        f"<table style='border-collapse:collapse'><tr>{head}</tr>{''.join(body)}</table>"
        f"{note}</div>"
    )


# -- the trace file -------------------------------------------------------------------------
def _slug(text: str) -> str:
    """`text` with only letters, digits, '.', '-' and '_' (runs of anything else become one
    '-'), without leading or trailing separators."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-._")


def trace_file_name(settings: Settings, when: datetime) -> str:
    """A file name for the trace of a run with `settings`, made at `when`: graph and
    parameters, device, executor and threads (and streams on a GPU), then the time."""
    k = settings.knobs
    graph = "-".join([settings.source.name, *(f"{name}{value}" for name, value in settings.params)])
    knobs = [k.device, k.executor]
    if executor_spec(k.executor).has_thread_pools:
        knobs += [f"inter{k.inter_op_threads}", f"intra{k.intra_op_threads}"]
    if k.on_gpu:
        knobs += [f"streams{k.streams}", k.stream_policy]
    knobs += [f"{knob.name}{value}" for knob, value in k.changed()]
    named = f"{_slug(graph)}_{_slug('-'.join(knobs))}"[:MAX_NAME_CHARS].rstrip("-._")
    return f"pg-trace_{named}_{when:%Y%m%d-%H%M%S}.json"


def save_trace(result: Result, folder: str | Path = ".", when: datetime | None = None) -> Path:
    """Write the run drawn (`result.trace`) with its memory track to a new file in `folder`
    (see `trace_file_name`; "-2", "-3", ... before ".json" if the name is taken) and return
    its absolute path. OSError (a read-only folder, a full disk) names the path."""
    folder = Path(folder)
    name = trace_file_name(result.settings, when or datetime.now())
    path, number = folder / name, 1
    while path.exists():
        number += 1
        path = folder / name.replace(".json", f"-{number}.json")
    return result.trace.save(path, memory=True).absolute()


def saved_words(result: Result, path: Path) -> str:
    from .report import drawn_words

    return (
        f"Saved the run drawn (makespan {result.trace.makespan_ms:.2f} ms, "
        f"{drawn_words(result)}) with its memory track to {path}: open it in "
        "ui.perfetto.dev or chrome://tracing."
    )


# -- the live timeline ----------------------------------------------------------------------
class LivePacer:
    """When the live timeline may redraw (see the module docstring): after a repeat that is
    not the last, at least `every_s` after the start or the last drawing, and at least
    `draw_s / share` after it. The start is `started`, or, when None, when the first traced
    repeat began (its end less what it took): rebuilds and a warm-up that compiles for
    seconds make no long run of a graph whose repeats take milliseconds.

    `draw_s` is the median of the last DRAWS_KEPT drawings' times in `history` (the
    dashboard's, final drawings too; DRAW_GUESS_S while empty): a median, so that one slow
    drawing does not hold the live timeline back for long.

    >>> pacer = LivePacer(started=0.0, history=[0.2], every_s=0.5, share=0.05)
    >>> pacer.due(3.9, repeat=3, planned=10), pacer.due(4.0, repeat=3, planned=10)
    (False, True)
    >>> pacer.history.append(0.1)  # a drawing took 0.1 s: the median is 0.15 s
    >>> pacer.drawn(at=4.0)  # so the next one waits 3 s
    >>> pacer.due(6.9, 4, 10), pacer.due(7.1, 4, 10), pacer.due(9.0, 10, 10)
    (False, True, False)
    """

    def __init__(
        self,
        started: float | None = None,
        history: MutableSequence[float] | None = None,
        every_s: float | None = None,
        share: float | None = None,
    ) -> None:
        self.every_s = LIVE_EVERY_S if every_s is None else every_s
        self.share = LIVE_SHARE if share is None else share
        self.last: float | None = started
        self.history = [] if history is None else history
        self.drawings = 0
        self.spent_s = 0.0  # what the live drawings took, in all

    @property
    def draw_s(self) -> float:
        recent = list(self.history)[-DRAWS_KEPT:]
        return statistics.median(recent) if recent else DRAW_GUESS_S

    def wait_s(self) -> float:
        """Seconds from the last drawing (or the start) to the next one allowed."""
        return max(self.every_s, self.draw_s / self.share)

    def due(self, now: float, repeat: int, planned: int, took_s: float = 0.0) -> bool:
        """Whether to draw after traced repeat `repeat` of `planned`, which ended at `now` and
        took `took_s` (which starts the clock, if nothing did)."""
        if self.last is None:
            self.last = now - took_s
        return repeat < planned and now - self.last >= self.wait_s()

    def drawn(self, at: float, seconds: float = 0.0) -> None:
        """A live drawing ended at `at` and took `seconds` (the dashboard keeps that in
        `history` too: `keep_drawing_time`)."""
        self.last = at
        self.drawings += 1
        self.spent_s += seconds


_drawn_in_process = False


def keep_drawing_time(history: MutableSequence[float], seconds: float) -> None:
    """Keep what a drawing took in `history` (the last DRAWS_KEPT), unless it is the first
    drawing of the process, whose one-off costs (fonts, imports of the backend: several times a
    drawing) say nothing about the next ones."""
    global _drawn_in_process
    if _drawn_in_process:
        history.append(seconds)
        del history[:-DRAWS_KEPT]
    _drawn_in_process = True


def live_title(trace: Trace, repeat: int, planned: int) -> str:
    return (
        f"running: repeat {repeat} of {planned} — the latest, makespan {trace.makespan_ms:.2f} ms "
        "(when the run ends: the run nearest the median)"
    )


def live_figure(trace: Trace, repeat: int, planned: int, patterns: Sequence[str] = ()) -> Any:
    """The timeline of the latest repeat while the run goes, titled "running: repeat k of n"
    (with the search's highlight, like every timeline of the dashboard)."""
    from ..plot import gantt

    figure = gantt(trace, title=live_title(trace, repeat, planned), highlight=patterns or None)
    figure.parallelgraph_live = (repeat, planned)
    return figure


def live_note_html(repeat: int, planned: int) -> str:
    return (
        "<div class='pg-live-note' style='color:#2a5d8a'><i>"
        f"Timeline: running: repeat {repeat} of {planned}, the latest repeat of this run."
        "</i></div>"
    )


# -- a busy machine -------------------------------------------------------------------------
def threads_used(knobs: Knobs) -> int:
    """At most how many threads a run with `knobs` keeps running: the inter-op threads plus
    the intra-op helpers they share (`intra - 1`), as `parallelgraph demo` counts them; one for
    the sequential executor. 0 threads (one per core) count as the cores."""
    if not executor_spec(knobs.executor).has_thread_pools:
        return 1
    config = knobs.config().resolved()
    return max(1, config.inter_op_threads + config.intra_op_threads - 1)


def worker_pids(session: Session | None) -> Iterable[int]:
    """The worker processes of a session's distributed executor (Dask: their CPU time is the
    run's own); none for the in-process executors, or when the cluster cannot be asked."""
    executor = getattr(session, "_executor", None)
    spec = find_executor(getattr(executor, "name", None))
    client = getattr(executor, "client", None) if spec is not None and spec.distributed else None
    if client is None:
        return ()
    try:
        return [int(pid) for pid in client.run(os.getpid).values()]
    except Exception:  # noqa: BLE001 - a cluster going away: no pids rather than no run
        return ()


# -- the dashboard's part -------------------------------------------------------------------
class ViewerControls:
    """The viewer's widgets and handlers, a part of `widgets.Dashboard` (its base class): the
    search box and its words, the top-ops table, Save trace, the live timeline's checkbox and
    drawings. They use the dashboard's output area and state as its own methods do: drawn on
    the kernel's main thread when idle, in the run's thread while a run goes."""

    # what the Dashboard has (its output area, its state)
    result: Result | None
    pinned: list[Result]
    closed: bool
    _busy: bool
    _patterns: tuple[str, ...]
    _pacer: LivePacer
    _live_shown: bool
    _previous_html: str
    _previous_why: str | None
    _run_notes: str
    _top_ops_html: str
    _figure: Any
    _canvas: Any
    _canvas_area: Any
    _stop_signal: Any
    message: Any
    previous_note: Any
    gantt: Any
    timeline: Any
    _widgets: Any

    if TYPE_CHECKING:  # the Dashboard's methods these use

        def _show_figure(self, figure: Any, built_s: float | None = None) -> None: ...
        def _show_error(self, error: BaseException) -> None: ...
        def _mark_previous(self, why: str | None) -> None: ...
        def _tell(self, text: str) -> None: ...

    def _make_viewer_widgets(self, live: bool) -> None:
        """The search box and its words, the top-ops table, Save trace and the live timeline's
        checkbox (`live`: ticked), with their CSS classes and handlers."""
        w = self._widgets
        self.search = w.Text(
            value="",
            placeholder=SEARCH_PLACEHOLDER,
            continuous_update=False,  # Enter or leaving the box redraws, not every key
            layout=w.Layout(width="260px"),
        )
        self.search_words = w.HTML("")
        self.top_ops = w.HTML("")
        self._top_ops_html = ""
        self.save_button = w.Button(
            description="Save trace",
            icon="download",
            disabled=True,
            tooltip="the run drawn, for ui.perfetto.dev or chrome://tracing",
        )
        self.live = w.Checkbox(value=live, description="live timeline", indent=False)
        for name, widget in (
            ("search", self.search),
            ("search-words", self.search_words),
            ("top-ops", self.top_ops),
            ("save", self.save_button),
            ("live", self.live),
        ):
            widget.add_class(f"pg-{name}")
        self.search.observe(self._on_search, names="value")
        self.save_button.on_click(lambda _button: self.save_trace())

    def _on_repeat(self, trace: Trace, repeat: int, planned: int, wall_ms: float) -> None:
        """After each traced repeat (the run thread, between repeats): the live timeline, when
        it is on, the run is not being stopped, and the pacer says a drawing is due (see the
        module docstring). A drawing that fails turns the live timeline off for this run
        (the run goes on; its end draws as usual)."""
        stop = self._stop_signal
        if not self.live.value or (stop is not None and stop.requested):
            return
        if not self._pacer.due(time.monotonic(), repeat, planned, wall_ms / 1e3):
            return
        started = time.monotonic()
        self.previous_note.value = live_note_html(repeat, planned) + self._previous_html
        try:
            figure = live_figure(trace, repeat, planned, self._patterns)
            self._show_figure(figure, time.monotonic() - started)
        except Exception:  # noqa: BLE001 - a picture is not worth the run
            self.previous_note.value = self._previous_html
            self._pacer.every_s = float("inf")
            return
        self._live_shown = True
        ended = time.monotonic()
        self._pacer.drawn(ended, ended - started)

    def _restore_timeline(self) -> None:
        """Show the last result's timeline again (after a live drawing of a run that failed);
        hide the timeline when there is none (or it cannot be drawn again)."""
        from .canvas import close_canvas
        from .report import figure_for

        if self.result is not None:
            try:
                self._show_figure(figure_for(self.result, self.pinned, self._patterns))
                return
            except Exception:  # noqa: BLE001 - the failure being shown is the one to tell
                pass
        self._figure = None
        self.gantt.value, self.gantt.layout.display = b"", "none"
        self._canvas_area.outputs = ()
        if self._canvas is not None:
            close_canvas(self._canvas)
            self._canvas = None
        self.timeline.children = (self.gantt,)
        self.search_words.value = ""

    def _on_search(self, change: dict[str, Any]) -> None:
        """The search box changed (Enter, or leaving it): highlight the matching ops in the
        timeline, without rerunning. While a run goes, its drawings take the new patterns."""
        from .report import figure_for

        self._patterns = search_patterns(str(change["new"]))
        if self._busy or self.result is None or self.closed:
            words = search_words(self._patterns, None)
            self.search_words.value = search_html(words) if words else ""
            return
        try:
            self._show_figure(figure_for(self.result, self.pinned, self._patterns))
        except Exception as error:  # noqa: BLE001
            self._show_error(error)
            return
        self._top_ops_html = top_ops_html(self.result.trace, self._patterns)
        self._mark_previous(self._previous_why)

    def save_trace(self, folder: str | Path = ".") -> Path | None:
        """Write the run drawn (`result.trace`) with its memory track to a new file in `folder`
        (the current directory), named after its settings and the time (`trace_file_name`),
        for ui.perfetto.dev or chrome://tracing; the message line says where. Returns the path
        (None when there is nothing to save, a run is going, or the write failed: said too)."""
        if self._busy:
            self.message.value = "<i>A run is going: save when it has ended.</i>"
            return None
        if self.result is None:
            self.message.value = "<i>Run first: there is no trace to save yet.</i>"
            return None
        try:
            path = save_trace(self.result, folder)
        except OSError as error:
            self.message.value = self._run_notes + (
                "<div class='pg-save-error' style='color:#b00020'><b>Save trace failed:</b> "
                f"{html.escape(str(error))}</div>"
            )
            return None
        self._tell(saved_words(self.result, path))
        return path
