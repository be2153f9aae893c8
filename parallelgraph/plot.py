"""Gantt timelines of traces, drawn with matplotlib.

matplotlib is imported lazily, inside the functions, so importing parallelgraph stays cheap.
Figures are built without pyplot (a `Figure` with an Agg canvas): they work in scripts and on
servers, never pile up as open pyplot figures, and show inline in IPython as PNG. Pass `ax=`
(for example from `plt.subplots()` under `%matplotlib widget`) to draw on your own axes.

Layout. One row per lane, top to bottom: inter-op workers, intra-op helpers, GPU streams, copy
lanes, Dask workers, anything else. Each pool is a group; groups are told apart by alternating
light background bands and a thin separator line. Time runs left to right in ms from the start
of the trace (or from `time_origin`).

Bars. Op bars fill most of the row, coloured by the op's top-level scope (legend outside the
axes, right). Shards are thinner, darker bars in the lower part of the row of the thread that
ran them: on the op's own lane they nest inside the op's bar, on a helper lane they stand alone.
Copies are hatched. All bars of one kind are one `PolyCollection` (never one `barh` per event),
which is what makes 5,000 events draw and save in a fraction of a second. The collection
decides at draw time, from the current axes transform, which bars are wide enough (a few pixels)
to get a dark edge; thinner ones get only a hairline outline in their own colour (so an instant
still shows) and never a label. Being decided at draw time, this follows interactive zooming.

Labels. Op names (the last part of the name, without the scope) are drawn by one artist that,
at draw time, measures every candidate name in display units against the visible part of its
bar and draws only those that fit with a small margin: no clutter at any zoom level, and zooming
in with ipympl reveals more names. Text is white or black, whichever reads better on the bar.

Dependencies (`arrows=True`) are one light `quiver` from each producer's end to each of its
consumers' start (from `TraceEvent.inputs`), only between ops (or copies) that are both drawn;
the more arrows, the fainter each.

A zoom window `t0`, `t1` (ms) keeps only the events that intersect it and limits the axis to it.
`compare` stacks several timelines on one shared time axis with consistent scope colours.

Colours. A top-level scope keeps its colour in every plot of the process (`SCOPE_COLORS`, a
process-wide map): the first time a scope is drawn it takes the next free palette colour, in
order of first appearance, and keeps it, so "net1" is the same colour in a trace where it comes
second, in `compare`, and in the next cell. When all 20 palette colours are taken, a new scope
takes the colour of the scope drawn least recently that is not in the plot being drawn; a plot
with more than 20 scopes draws the rest grey (`OTHER_COLOR`, one legend entry), so no two
scopes of one plot look alike. `colors=` overrides it; `reset_scope_colors()` starts afresh.

Highlight (`highlight="MatMul*"` or a list of patterns): ops whose name matches a pattern
(fnmatch, case-insensitive, against the full name, the name without its scope, or the name
without the "#N" of repeated imported names) are drawn as usual and every other bar faded
towards white, their labels grey; the title's last line says how many ops matched, or, when
none did, says so and draws everything as usual.

Memory (`memory=True`): a panel under the timeline, on the same time axis, with the live bytes
of the run's op outputs over time per device (`parallelgraph.memory`, a model) and its peak;
a trace without output sizes gets the panel with a note saying so.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .lanes import LaneKind, parse_lane
from .plot_hover import BarIndex, add_hover
from .plot_layout import (
    MAX_LEGEND_CHARS,
    OP_BOTTOM,
    OP_TOP,
    SHARD_BOTTOM,
    SHARD_TOP,
    lane_labels,
    short_name,
    timeline_layout,
    x_pixels_per_unit,
)
from .trace import WORK, EventRole, Trace, TraceEvent

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = (
    "#4C72B0",
    "#DD8452",
    "#55A868",
    "#C44E52",
    "#8172B3",
    "#937860",
    "#DA8BC3",
    "#8C8C8C",
    "#CCB974",
    "#64B5CD",
    "#A6C8E8",
    "#F2B98C",
    "#9ED39B",
    "#E59A9C",
    "#C2B3DE",
    "#C9AE9F",
    "#F0C0DF",
    "#5A5A8F",
    "#8F8F3A",
    "#3A8F8F",
)
UNKNOWN_COLOR = "#999999"
#: Scopes past the palette share this colour (and one legend entry), never a repeated one.
OTHER_COLOR = "#c8c8c8"

LABEL_UPPER = (OP_TOP + SHARD_TOP) / 2  # label of an op whose shards nest under it

LABEL_FONTSIZE = 7.0
LABEL_PAD_PX = 3.0  # free pixels wanted on each side of a label
EDGE_MIN_PX = 4.0  # bars narrower than this on screen get no dark edge
THIN_OUTLINE = 0.5  # points: the outline, in its own colour, of a bar narrower than that
ROW_INCHES, SUB_ROW_INCHES, FIGURE_WIDTH = 0.42, 0.24, 11.0
MEMORY_INCHES = 1.1  # the memory panel under a timeline (`memory=True`)
#: Highlight: how much of its colour a faded bar keeps (the rest is white), and its label ink.
FADE_KEEP, FADED_INK = 0.22, "#a0a0a0"
#: Memory panel: one colour per device (the first one a neutral grey).
DEVICE_COLORS = ("#4d4d4d", "#3b75af", "#c0504d", "#5a9b5a", "#8064a2")

#: Sub-rows drawn per lane for nested events (deeper ones are left out of the picture).
MAX_DEPTH = 8
#: Scopes named in the legend; the rest are counted in one last entry.
MAX_LEGEND_SCOPES = 20
#: How waiting and setup are drawn: behind the lane's work, over all its rows.
IDLE_STYLES = {
    EventRole.WAITING: dict(face="none", edge="#8a8a8a", hatch="xxx", label="waiting"),
    EventRole.SETUP: dict(face="#e4e4e4", edge="#bdbdbd", hatch="", label="setup"),
}


# -- figures --------------------------------------------------------------------------------
def _new_figure(
    rows: int,
    width: float = FIGURE_WIDTH,
    layout: Any = None,
    sub_rows: int = 0,
    extra_inches: float = 0.0,
) -> Figure:
    """A Figure with an Agg canvas, sized for `rows` lanes and `sub_rows` extra rows of nested
    events (drawn less tall), plus `extra_inches` (a memory panel); `layout`: a matplotlib
    layout (default: the timeline layout, see plot_layout)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = 1.3 + _rows_inches(rows, sub_rows) + extra_inches
    if _widget_backend():  # %matplotlib widget: an ipympl canvas you can pan, zoom and hover
        import matplotlib.pyplot as plt

        figure = plt.figure(figsize=(width, height), layout=layout or timeline_layout())
        canvas = figure.canvas
        canvas.toolbar_position = "top"  # on the left it would cover the lane names
        canvas.header_visible = False
        return figure
    if _pyplot_script():  # a script that uses pyplot: plt.savefig() and plt.show() see it
        import matplotlib.pyplot as plt

        return plt.figure(figsize=(width, height), layout=layout or timeline_layout())
    _show_figures_in_notebooks(Figure)
    figure = Figure(figsize=(width, height), layout=layout or timeline_layout())
    FigureCanvasAgg(figure)
    return figure


def _rows_inches(rows: int, sub_rows: int) -> float:
    return ROW_INCHES * max(rows, 2) + SUB_ROW_INCHES * sub_rows


def _pyplot_script() -> bool:
    """Whether this is a script (not IPython) that imported pyplot: then a figure is pyplot's
    current figure, as `trace.plot(); plt.savefig(...)` expects. Elsewhere figures bypass
    pyplot, so notebooks show each once and scripts never accumulate open figures."""
    import sys

    return "matplotlib.pyplot" in sys.modules and "IPython" not in sys.modules


def _widget_backend() -> bool:
    """Whether pyplot draws on ipympl widgets (`%matplotlib widget` / `ipympl`)."""
    import sys

    if "matplotlib.pyplot" not in sys.modules:  # nobody chose a backend: keep to Agg
        return False
    import matplotlib

    return "ipympl" in matplotlib.get_backend() or matplotlib.get_backend() == "widget"


def _show_figures_in_notebooks(figure_type: type) -> None:
    """In IPython, display a returned Figure as a PNG (our figures bypass pyplot, so the
    inline backend would not show them, and scripts never accumulate open pyplot figures)."""
    import sys

    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.formatters["image/png"].for_type(figure_type, _png_bytes)


def _png_bytes(figure: Any) -> bytes | None:
    """The PNG of a figure for IPython's display — none for a figure on an interactive
    widget canvas, which shows itself."""
    import io

    if type(figure.canvas).__module__.startswith("ipympl"):
        return None
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


class ScopeColors:
    """The process-wide scope -> colour map (see the module docstring: a scope keeps its
    colour; when the palette is full, the scope drawn least recently and absent from the plot
    being drawn gives its colour up). Thread-safe: a dashboard draws from worker threads."""

    def __init__(self, palette: Sequence[str] = PALETTE):
        self.palette = tuple(palette)
        self._colors: dict[str, str] = {}  # in order of last use, least recent first
        self._lock = threading.Lock()

    def assign(self, scopes: Sequence[str]) -> dict[str, str]:
        """The colours of `scopes` (drawn together), giving new ones the next free colour."""
        wanted = list(dict.fromkeys(scopes))
        with self._lock:
            result = {scope: self._colors[scope] for scope in wanted if scope in self._colors}
            taken = set(self._colors.values())
            free = [color for color in self.palette if color not in taken]
            for scope in wanted:
                if scope in result:
                    continue
                if free:
                    color = free.pop(0)
                else:
                    victim = next((s for s in self._colors if s not in result), None)
                    if victim is None:  # every colour is in this plot already
                        result[scope] = OTHER_COLOR
                        continue
                    color = self._colors.pop(victim)
                self._colors[scope] = result[scope] = color
            for scope in wanted:  # now the most recently used
                if scope in self._colors:
                    self._colors[scope] = self._colors.pop(scope)
        return {scope: result[scope] for scope in wanted}

    def known(self) -> dict[str, str]:
        """The scopes with a colour now, least recently drawn first."""
        with self._lock:
            return dict(self._colors)

    def reset(self) -> None:
        with self._lock:
            self._colors.clear()


#: The colours of every plot in this process (`gantt`, `compare`, the dashboard).
SCOPE_COLORS = ScopeColors()


def scope_colors(traces: Sequence[Trace]) -> dict[str, str]:
    """One colour per top-level scope of `traces`, the same in every plot of this process
    (`SCOPE_COLORS`); a plot's scopes past the palette's 20 colours are all grey
    (`OTHER_COLOR`), so no two scopes of one plot look alike."""
    return SCOPE_COLORS.assign([scope for trace in traces for scope in trace.scopes()])


def reset_scope_colors() -> None:
    """Forget the colours given so far: the next plot's scopes take the palette from its
    start."""
    SCOPE_COLORS.reset()


# -- lanes and the time window --------------------------------------------------------------
def lane_group(lane: str) -> str:
    """The group a lane is drawn in: "inter-op", "intra-op", "stream", "copy", "worker" (a
    Dask worker's lanes), or the pool of another thread ("cpu" for "cpu/python")."""
    parsed = parse_lane(lane)
    if parsed.pool.startswith("worker-"):
        return "worker"
    return {
        LaneKind.HELPER: "intra-op",
        LaneKind.STREAM: "stream",
        LaneKind.COPY: "copy",
    }.get(parsed.kind, parsed.pool)


def ordered_lanes(trace: Trace) -> list[str]:
    """The trace's lanes in display order (`Trace.all_lanes`: workers, helpers, streams, copies,
    then Dask workers; a lane that only waited is drawn too)."""
    return trace.all_lanes


@dataclass(frozen=True)
class _Rows:
    """Where lanes sit on the y axis: a lane whose events nest gets one sub-row per depth
    (a flame chart per lane, as Perfetto draws), up to `MAX_DEPTH`."""

    base: dict[str, int]  # lane -> y of its outermost row
    depth: dict[str, int]  # lane -> sub-rows drawn
    total: int

    @classmethod
    def of(cls, trace: Trace, lanes: list[str]) -> _Rows:
        deepest: dict[str, int] = dict.fromkeys(lanes, 0)
        for event in trace.events:
            if event.kind != "shard" and event.role is WORK:
                deepest[event.lane] = max(deepest[event.lane], min(event.depth, MAX_DEPTH - 1))
        base, y = {}, 0
        for lane in lanes:
            base[lane] = y
            y += deepest[lane] + 1
        return cls(base, {lane: deepest[lane] + 1 for lane in lanes}, y)

    def y(self, event: TraceEvent) -> float:
        """The row of an event: its lane's, plus its depth (a shard sits in its op's row)."""
        depth = event.depth - 1 if event.kind == "shard" and event.parent else event.depth
        return self.base[event.lane] + min(max(depth, 0), self.depth[event.lane] - 1)

    def visible(self, event: TraceEvent) -> bool:
        return event.depth < MAX_DEPTH or (event.kind == "shard" and event.depth == MAX_DEPTH)


@dataclass(frozen=True)
class _Window:
    """What to draw: the time origin (ns) and the visible span in ms from it."""

    origin: int
    lo: float
    hi: float

    def contains(self, event: TraceEvent) -> bool:
        start, end = self.ms(event.start), self.ms(event.end)
        return end >= self.lo and start <= self.hi

    def ms(self, ns: int) -> float:
        return (ns - self.origin) / 1e6


def _zoom_ms(name: str, value: object) -> float:
    """A zoom bound as a finite number of ms, or a ValueError naming it."""
    try:
        ms = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        ms = math.nan
    if not math.isfinite(ms):
        raise ValueError(f"zoom {name}={value!r}: must be a finite number of ms")
    return ms


def _window(
    trace: Trace, t0: float | None, t1: float | None, time_origin: int | None
) -> tuple[_Window, bool]:
    """The window to draw and whether it is a zoom (t0 or t1 given)."""
    origin = trace.start if time_origin is None else time_origin
    span = (trace.end - origin) / 1e6
    if t0 is None and t1 is None:
        pad = max(span, 1e-6) * 0.01
        return _Window(origin, min(0.0, span) - pad, max(span, 0.0) + pad), False
    lo = 0.0 if t0 is None else _zoom_ms("t0", t0)
    hi = span if t1 is None else _zoom_ms("t1", t1)
    if hi <= lo:
        raise ValueError(f"empty zoom window: t0={t0} ms, t1={t1} ms (need t0 < t1)")
    return _Window(origin, lo, hi), True


# -- the public drawing functions -----------------------------------------------------------
def gantt(
    trace: Trace,
    ax: Axes | None = None,
    *,
    title: str | None = None,
    colors: dict[str, str] | None = None,
    t0: float | None = None,
    t1: float | None = None,
    arrows: bool = False,
    labels: bool = True,
    legend: bool = True,
    time_origin: int | None = None,
    highlight: str | Sequence[str] | None = None,
    memory: bool | Axes = False,
) -> Figure:
    """Draw `trace` as a Gantt chart on `ax` (a new Figure if None) and return the Figure.

    title: axes title (default: graph, thread settings and makespan); colors: top-level scope
    -> colour (default: the process-wide colours, the same for a scope in every plot); t0, t1:
    zoom window in ms from the origin (only events that intersect it are drawn); arrows:
    dependency arrows between drawn ops; labels: op names on bars wide enough; legend: scope
    legend outside the axes; time_origin: ns timestamp that is 0 ms (default: the trace's first
    event); highlight: an op-name pattern or a list of them (fnmatch: "MatMul*", "net1/*"):
    matching ops drawn as usual, the others faded, the count in the title; memory: True adds a
    panel with the live bytes of the op outputs under the timeline (`parallelgraph.memory`), or
    pass the Axes to draw it on when you pass `ax`.

    >>> figure = trace.plot(arrows=True)       # doctest: +SKIP
    >>> figure = trace.plot(highlight="MatMul*", memory=True)  # doctest: +SKIP
    >>> figure.savefig("timeline.svg")         # doctest: +SKIP
    """
    patterns = _patterns(highlight)
    lanes = ordered_lanes(trace)
    rows = _Rows.of(trace, lanes)
    memory_ax = _memory_axes(memory, ax)
    if ax is None:
        ax, memory_ax = _new_axes(lanes, rows, bool(memory))
    colors = scope_colors([trace]) if colors is None else colors
    window, zoomed = _window(trace, t0, t1, time_origin)
    shown = [e for e in trace.events if rows.visible(e) and (not zoomed or window.contains(e))]
    events = [e for e in shown if e.role is WORK]
    idle = [e for e in shown if e.role is not WORK and e.parent is None]
    tasks = [e for e in events if e.kind != "shard"]  # ops and copies: labels and arrows
    found = _highlight(patterns, events) if patterns else None
    bright = found.names if found is not None and found.matched else None
    _draw_lane_groups(ax, trace, lanes, rows)
    _draw_idle(ax, idle, rows, window)
    kinds = _draw_bars(ax, events, rows, window, colors, bright) | {e.role.value for e in idle}
    if labels:
        _draw_labels(ax, tasks, events, rows, window, colors, bright)
    if arrows:
        _draw_arrows(ax, tasks, rows, window)
    heading = _default_title(trace, window, zoomed) if title is None else title
    if found is not None:
        heading = f"{heading}\n{found.note}" if heading else found.note
        ax.parallelgraph_highlight = found
    _decorate(ax, lanes, rows, window, heading)
    if memory_ax is not None:
        _draw_memory(memory_ax, trace, window)
        if memory_ax.get_shared_x_axes().joined(ax, memory_ax):
            ax.set_xlabel("")
    if legend:
        _draw_legend(ax, colors, events, kinds, arrows)
    _fit_legend(ax.figure)
    bars = BarIndex.of(events, rows, window, lanes)
    ax.parallelgraph_bars = bars  # what add_hover and the toolbar read
    ax.format_coord = bars.format_coord
    add_hover(ax)
    return ax.figure


def _new_axes(lanes: list[str], rows: _Rows, memory: bool) -> tuple[Axes, Axes | None]:
    """The axes of a new timeline figure, and of its memory panel when asked for one."""
    sub_rows = rows.total - len(lanes)
    if not memory:
        return _new_figure(len(lanes), sub_rows=sub_rows).add_subplot(), None
    figure = _new_figure(len(lanes), sub_rows=sub_rows, extra_inches=MEMORY_INCHES + 0.2)
    heights = [_rows_inches(len(lanes), sub_rows), MEMORY_INCHES]
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": heights})
    return top, bottom


def _memory_axes(memory: object, ax: Axes | None) -> Axes | None:
    """The Axes given as `memory=`, or None; a ValueError for memory=True with an `ax` (the
    panel needs a figure of its own) and a TypeError for anything else."""
    if memory is None or isinstance(memory, bool):
        if memory and ax is not None:
            raise ValueError(
                "memory=True draws a panel of its own under the timeline, in a new figure: "
                "leave out ax=, or pass memory=<an Axes> to draw the memory track there"
            )
        return None
    from matplotlib.axes import Axes

    if not isinstance(memory, Axes):
        raise TypeError(f"memory= takes True, False or a matplotlib Axes, got {memory!r:.60}")
    if ax is None:
        raise ValueError("memory=<an Axes> goes with ax=<the timeline's Axes>: pass both")
    return memory


# -- highlight ------------------------------------------------------------------------------
def _patterns(highlight: object) -> tuple[str, ...]:
    """The highlight patterns as a tuple ('' and None: none), or a TypeError/ValueError."""
    if highlight is None:
        return ()
    items = [highlight] if isinstance(highlight, str) else highlight
    if not isinstance(items, Sequence | set | frozenset) or isinstance(items, bytes):
        raise TypeError(
            f"highlight= takes an op-name pattern or a list of them, got {highlight!r:.60}"
        )
    patterns = tuple(items)
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValueError(
                f"highlight= patterns are non-empty strings (fnmatch: 'MatMul*'), got {pattern!r}"
            )
    if not patterns:
        raise ValueError("highlight=[] names no pattern: give one ('MatMul*') or leave it out")
    return patterns


@dataclass(frozen=True)
class Highlight:
    """What `highlight=` found: the patterns, the names of the drawn ops that match, and how
    many op events were drawn and matched; `note` is the title's line about it."""

    patterns: tuple[str, ...]
    names: frozenset[str]  # matching names of drawn events (ops, their shards and copies)
    ops: int
    matched: int

    @property
    def note(self) -> str:
        shown = ", ".join(repr(p) for p in self.patterns[:4])
        if len(self.patterns) > 4:
            shown += f" (+{len(self.patterns) - 4})"
        if not self.matched:
            return f"highlight {shown}: no op matched (all {self.ops} ops drawn as usual)"
        return f"highlight {shown}: {self.matched} of {self.ops} ops"


def name_matcher(patterns: Sequence[str]) -> Any:
    """A function name -> bool: whether an op name matches one of the fnmatch `patterns`,
    case-insensitively, as the full name, without its scope, or without a reader's "#N"."""
    expression = re.compile("|".join(f"(?:{fnmatch.translate(p.lower())})" for p in patterns))

    def matches(name: str) -> bool:
        lowered = name.lower()
        plain = re.sub(r"#\d+$", "", lowered)
        candidates = {lowered, plain, lowered.rsplit("/", 1)[-1], plain.rsplit("/", 1)[-1]}
        return any(expression.match(candidate) for candidate in candidates)

    return matches


def _highlight(patterns: tuple[str, ...], events: list[TraceEvent]) -> Highlight:
    matches = name_matcher(patterns)
    names = frozenset(name for name in {e.name for e in events} if matches(name))
    ops = [e for e in events if e.kind == "op"]
    return Highlight(patterns, names, len(ops), sum(1 for e in ops if e.name in names))


# -- memory ---------------------------------------------------------------------------------
def _draw_memory(ax: Axes, trace: Trace, window: _Window) -> None:
    """The live bytes of the trace's op outputs over time, per device, on `ax` (the panel
    under the timeline); a note instead when the trace records no output sizes."""
    from matplotlib.legend import Legend
    from matplotlib.patches import Patch

    from .memory import format_bytes, memory_profile

    profile = memory_profile(trace)
    ax.parallelgraph_memory = profile
    ax.set_xlim(window.lo, window.hi)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", color="#d0d0d0", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.tick_params(axis="y", length=0, labelsize=7)
    top, when = profile.peak()
    if not profile.known or not top:
        note = (
            "memory: this trace records no output shapes and dtypes, so no output sizes"
            if not profile.known
            else "memory: every output is empty (0 bytes)"
        )
        ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                color="#555555", gid="memory-note")  # fmt: skip
        ax.set_yticks([])
        ax.set_ylim(0, 1)
        return
    devices = profile.devices
    handles = []
    for number, device in enumerate(devices):
        times, values = profile.series(device)
        if not times:
            continue
        x = [window.ms(t) for t in times]
        if values[-1]:  # what the run returns stays: draw it to the right edge
            x, values = [*x, max(window.hi, x[-1])], [*values, 0]
        color = DEVICE_COLORS[number % len(DEVICE_COLORS)]
        fill = ax.stairs(values[:-1], x, baseline=0, fill=True, color=color, alpha=0.18, lw=0)
        line = ax.stairs(values[:-1], x, baseline=0, color=color, lw=1.0)
        fill.set_gid(f"memory-fill {device}")
        line.set_gid(f"memory-line {device}")
        handles.append(Patch(facecolor=color, alpha=0.6, label=device))
    if len(devices) > 1:  # beside the note, not ax.legend (the layout would leave room for it)
        key = Legend(ax, handles, [h.get_label() for h in handles], loc="upper right",
                     fontsize=7, frameon=False, ncols=len(handles), handlelength=1.0)  # fmt: skip
        ax.add_artist(key)
    ax.plot([window.ms(when)], [top], marker="v", ms=4, color="#222222", lw=0, gid="memory-peak")
    returned = (
        f" · {format_bytes(profile.returned_bytes)} returned" if profile.returned_bytes else ""
    )
    note = (
        f"live bytes of op outputs (model) · peak {format_bytes(top)} at {window.ms(when):.3f} ms"
        + returned
    )
    ax.text(0.004, 0.96, note, transform=ax.transAxes, ha="left", va="top", fontsize=7,
            color="#333333", gid="memory-note")  # fmt: skip
    ticks, labels = _byte_ticks(top)
    ax.set_ylim(0, top * 1.45)
    ax.set_yticks(ticks, labels)

    def read_out(x: float, y: float) -> str:
        live = profile.live_at(window.origin + round(x * 1e6))
        return f"t = {x:.3f} ms, live {format_bytes(live)}"

    ax.format_coord = read_out


def _byte_ticks(top: int) -> tuple[list[float], list[str]]:
    """0 and one or two round values up to `top` bytes, labelled in binary units."""
    unit, size = next(
        ((u, s) for u, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)) if top >= s),
        ("B", 1),
    )
    scaled = top / size
    step = 10 ** math.floor(math.log10(scaled)) if scaled > 0 else 1
    for factor in (5, 2, 1):
        if factor * step <= scaled:
            step *= factor
            break
    ticks = [i * step for i in range(int(scaled // step) + 1)]  # 0 and 1 to 4 steps
    if len(ticks) > 3:
        ticks = [0, ticks[len(ticks) // 2], ticks[-1]]
    labels = [f"{t:g} {unit}" if t else "0" for t in ticks]
    return [t * size for t in ticks], labels


def _fit_legend(figure: Figure) -> None:
    """Give a lone axes on a figure without a layout engine (e.g. from `plt.subplots()`) the
    constrained layout, so the legend outside the axes is not cut off."""
    if figure.get_layout_engine() is None and len(figure.axes) == 1:
        figure.set_layout_engine("constrained")


def compare(
    *traces: Trace | Sequence[Trace],
    labels: Sequence[str] | None = None,
    title: str | None = None,
    branches: tuple[str, str] | None = None,
    **options: Any,
) -> Figure:
    """Timelines stacked on one shared time axis, each from its own start, with the same scope
    colours; each panel is titled with its makespan and the figure title gives the speed-up of
    each run against the first. `compare([a, b], labels=[...])` and `compare(a, b, ...)` both
    work. `branches`: two branches — scopes, "lane:NAME" or "op:PATTERN" (see
    `parallelgraph.branches`) — whose overlap each panel's title gives. `title` replaces the
    speed-up line on top; other keyword options (arrows, t0, t1, highlight) go to `gantt` for
    every panel (a memory panel is not one of them: `trace.plot(memory=True)` draws one per
    trace).

    >>> compare(trace_1, trace_2, labels=["inter-op 1", "inter-op 2"])  # doctest: +SKIP
    """
    if options.get("memory"):
        raise ValueError(
            "compare draws no memory panels: draw each trace's with trace.plot(memory=True)"
        )
    runs = _flatten_traces(traces)
    names = list(labels) if labels is not None else [f"run {i + 1}" for i in range(len(runs))]
    if len(names) != len(runs):
        raise ValueError(f"{len(runs)} traces but {len(names)} labels: {names}")
    lane_counts = [max(_Rows.of(t, ordered_lanes(t)).total, 1) for t in runs]
    figure = _new_figure(sum(lane_counts) + 2 * len(runs))
    axes = figure.subplots(
        len(runs), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": lane_counts}
    )[:, 0]
    colors = scope_colors(runs)
    for index, (ax, trace, name) in enumerate(zip(axes, runs, names)):
        heading = f"{name}: makespan {trace.makespan_ms:.2f} ms" + _speedup(runs, names, index)
        if branches is not None:
            heading += f", overlap {branches[0]} / {branches[1]} {trace.overlap(*branches):.2f}"
        gantt(trace, ax=ax, colors=colors, legend=False, title=heading, **options)
        if index < len(runs) - 1:
            ax.set_xlabel("")
    if "t0" not in options and "t1" not in options:
        longest = max((t.makespan_ms for t in runs), default=1.0) or 1e-6
        axes[0].set_xlim(-0.01 * longest, 1.01 * longest)
    kinds = {e.kind if e.role is WORK else e.role.value for trace in runs for e in trace.events}
    handles = _legend_handles(colors, kinds, bool(options.get("arrows")))
    if handles:
        figure.legend(handles=handles, loc="outside right upper", **_legend_options(len(handles)))
    figure.suptitle(_speedup_summary(runs, names) if title is None else title, fontsize=11)
    return figure


def _flatten_traces(traces: tuple[Trace | Sequence[Trace], ...]) -> list[Trace]:
    runs: list[Trace] = []
    for item in traces:
        runs.extend([item] if isinstance(item, Trace) else item)
    if not runs:
        raise ValueError("compare needs at least one trace")
    for index, run in enumerate(runs):
        if not isinstance(run, Trace):
            raise TypeError(
                f"compare takes Traces (pg.Trace.load(path) reads a file), got "
                f"{type(run).__name__} {run!r:.60} as trace {index}"
            )
    return runs


def _speedup(runs: list[Trace], names: list[str], index: int) -> str:
    if index == 0:
        return ""
    base, this = runs[0].makespan_ms, runs[index].makespan_ms
    return f"  (×{base / this:.2f} vs {names[0]})" if this else ""


def _speedup_summary(runs: list[Trace], names: list[str]) -> str:
    if len(runs) == 1:
        return f"{names[0]}: makespan {runs[0].makespan_ms:.2f} ms"
    base = runs[0].makespan_ms
    parts = [
        f"{name} ×{base / trace.makespan_ms:.2f}" if trace.makespan_ms else f"{name} ×?"
        for trace, name in zip(runs[1:], names[1:])
    ]
    return f"speed-up against {names[0]}: " + ", ".join(parts)


# -- pieces of a chart ----------------------------------------------------------------------
def _draw_lane_groups(ax: Axes, trace: Trace, lanes: list[str], rows: _Rows) -> None:
    """Light bands behind every other pool of lanes and a thin line between pools."""
    pools = [trace.lane(lane).pool for lane in lanes]
    starts = [i for i in range(len(lanes)) if i == 0 or pools[i] != pools[i - 1]]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lanes)
        top, bottom = (
            rows.base[lanes[start]],
            rows.base[lanes[end - 1]] + rows.depth[lanes[end - 1]],
        )
        if number % 2:
            ax.axhspan(top - 0.5, bottom - 0.5, color="#f2f2f2", zorder=0, lw=0)
        if start:
            ax.axhline(top - 0.5, color="#9a9a9a", lw=0.8, zorder=0.5)


def _draw_idle(ax: Axes, events: list[TraceEvent], rows: _Rows, window: _Window) -> None:
    """Waiting (hatched) and setup (grey) spans behind their lane's work, over all its rows."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    for role, style in IDLE_STYLES.items():
        members = [e for e in events if e.role is role]
        if not members:
            continue
        left = np.array([window.ms(e.start) for e in members])
        right = np.array([window.ms(e.end) for e in members])
        top = np.array([rows.base[e.lane] + OP_TOP for e in members], dtype=float)
        bottom = np.array(
            [rows.base[e.lane] + rows.depth[e.lane] - 1 + OP_BOTTOM for e in members], dtype=float
        )
        verts = np.empty((len(members), 4, 2))
        verts[:, :, 0] = np.column_stack([left, right, right, left])
        verts[:, :, 1] = np.column_stack([top, top, bottom, bottom])
        spans = PolyCollection(
            verts, facecolors=style["face"], edgecolors=style["edge"], linewidths=0.5, zorder=1
        )
        if style["hatch"]:
            spans.set_hatch(style["hatch"])
        spans.set_gid(f"{role.value}-spans")
        ax.add_collection(spans, autolim=False)


def _draw_bars(
    ax: Axes,
    events: list[TraceEvent],
    rows: _Rows,
    window: _Window,
    colors: dict[str, str],
    bright: frozenset[str] | None = None,
) -> set[str]:
    """One collection per kind of event; returns the kinds drawn. With `bright` (highlight),
    events not named in it are faded."""
    kinds = {}
    for event in events:
        kinds.setdefault(event.kind, []).append(event)
    styles = {
        "op": dict(top=OP_TOP, bottom=OP_BOTTOM, shade=1.0, edge="#222222", width=0.5, z=2),
        "copy": dict(top=OP_TOP, bottom=OP_BOTTOM, shade=1.0, edge="#222222", width=0.5, z=2),
        "shard": dict(top=SHARD_TOP, bottom=SHARD_BOTTOM, shade=0.7, edge="white", width=0.4, z=3),
    }
    for kind, members in kinds.items():
        style = styles.get(kind, styles["op"])
        collection = _bar_collection(members, rows, window, colors, bright, **style)
        if kind == "copy":
            collection.set_hatch("////")
        collection.set_gid(f"{kind}-bars")
        ax.add_collection(collection, autolim=False)
    return set(kinds)


def _bar_collection(
    events: list[TraceEvent],
    rows: _Rows,
    window: _Window,
    colors: dict[str, str],
    bright: frozenset[str] | None,
    *,
    top: float,
    bottom: float,
    shade: float,
    edge: str,
    width: float,
    z: float,
) -> Any:
    import numpy as np
    from matplotlib.colors import to_rgba

    left = np.array([window.ms(e.start) for e in events])
    right = np.array([window.ms(e.end) for e in events])
    y = np.array([rows.y(e) for e in events], dtype=float)
    verts = np.empty((len(events), 4, 2))
    verts[:, :, 0] = np.column_stack([left, right, right, left])
    verts[:, :, 1] = np.column_stack([y + top, y + top, y + bottom, y + bottom])
    faces = _face_colors(events, colors, shade, bright)
    bars = _artist_types()[0](verts, facecolors=faces, edgecolors=edge, zorder=z)
    bars.widths_ms, bars.edge_width, bars.faces = right - left, width, faces
    bars.edge_rgba = np.array(to_rgba(edge))
    return bars


def _face_colors(
    events: list[TraceEvent],
    colors: dict[str, str],
    shade: float,
    bright: frozenset[str] | None = None,
) -> Any:
    import numpy as np
    from matplotlib.colors import to_rgba

    palette = {scope: to_rgba(color) for scope, color in colors.items()}
    unknown = to_rgba(UNKNOWN_COLOR)
    faces = np.array([palette.get(_top_scope(e), unknown) for e in events]).reshape(-1, 4)
    faces[:, :3] *= shade
    if bright is not None:  # highlight: the others towards white
        faded = np.array([e.name not in bright for e in events], dtype=bool)
        faces[faded, :3] = faces[faded, :3] * FADE_KEEP + (1 - FADE_KEEP)
    return faces


def _top_scope(event: TraceEvent) -> str:
    return event.scope.split("/", 1)[0]


def _draw_labels(
    ax: Axes,
    tasks: list[TraceEvent],
    events: list[TraceEvent],
    rows: _Rows,
    window: _Window,
    colors: dict[str, str],
    bright: frozenset[str] | None = None,
) -> None:
    """Names of ops and copies, drawn at draw time only on bars wide enough (see
    `_draw_bar_labels`); above the shards when the op's shards nest under it; grey on bars
    that a highlight fades."""
    import numpy as np
    from matplotlib.colors import to_rgb

    nested = {(e.name, e.lane) for e in events if e.kind == "shard"}
    y = [rows.y(e) + (LABEL_UPPER if (e.name, e.lane) in nested else 0.0) for e in tasks]
    ink = {}
    for scope, color in colors.items():
        r, g, b = to_rgb(color)
        ink[scope] = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.62 else "white"
    labels = _artist_types()[1](
        left=np.array([window.ms(e.start) for e in tasks]),
        right=np.array([window.ms(e.end) for e in tasks]),
        y=np.array(y, dtype=float),
        texts=[_label(e) for e in tasks],
        colors=[
            FADED_INK
            if bright is not None and e.name not in bright
            else ink.get(_top_scope(e), "black")
            for e in tasks
        ],
    )
    labels.set_gid("bar-labels")
    ax.add_artist(labels)


def _label(event: TraceEvent) -> str:
    """A bar's text: the op's name without its scope, and without the "#2" that tells
    repeated imported names apart."""
    return re.sub(r"#\d+$", "", event.name.rsplit("/", 1)[-1])


def _draw_arrows(ax: Axes, tasks: list[TraceEvent], rows: _Rows, window: _Window) -> None:
    """A light arrow from each drawn producer's end to each drawn consumer's start."""
    by_name: dict[str, list[TraceEvent]] = {}
    for task in tasks:
        by_name.setdefault(task.name, []).append(task)
    segments = []
    for consumer in tasks:
        for name in _inputs(consumer):
            candidates = by_name.get(name) or by_name.get(name.rpartition(":")[0], [])
            producer = _producer(candidates, consumer)
            if producer is not None:
                x0, y0 = window.ms(producer.end), rows.y(producer)
                x1, y1 = window.ms(consumer.start), rows.y(consumer)
                segments.append((x0, y0, x1 - x0, y1 - y0))
    if not segments:
        return
    x, y, u, v = zip(*segments)
    alpha = max(0.1, 0.5 * min(1.0, (40 / len(segments)) ** 0.5))  # many arrows: fainter
    quiver = ax.quiver(
        x, y, u, v, angles="xy", scale_units="xy", scale=1, width=0.0012, headwidth=5,
        headlength=6, headaxislength=5, minlength=0, color="#303030", alpha=alpha, zorder=4,
    )  # fmt: skip
    quiver.set_gid("dependency-arrows")


def _inputs(event: TraceEvent) -> tuple[str, ...]:
    """What an event waited for; a copy recorded without inputs moves its namesake op's output."""
    if event.inputs or event.kind != "copy":
        return event.inputs
    return (event.name,)


def _producer(candidates: list[TraceEvent], consumer: TraceEvent) -> TraceEvent | None:
    """Of the events named like an input (an op, and maybe copies of its output), the last
    one to finish before the consumer starts; else any other one."""
    others = [e for e in candidates if e is not consumer]
    before = [e for e in others if e.end <= consumer.start]
    if before:
        return max(before, key=lambda e: e.end)
    return others[0] if others else None


def _decorate(ax: Axes, lanes: list[str], rows: _Rows, window: _Window, title: str) -> None:
    ax.set_yticks([rows.base[lane] for lane in lanes], lane_labels(lanes), fontsize=8)
    ax.set_ylim(max(rows.total, 1) - 0.5, -0.5)
    ax.set_xlim(window.lo, window.hi)
    ax.set_xlabel("time (ms)")
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#d0d0d0", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_title(title, fontsize=10, loc="left")


def _default_title(trace: Trace, window: _Window, zoomed: bool) -> str:
    config = trace.metadata.get("config") or {}
    name = trace.metadata.get("graph", "trace")
    parts = [str(name)]
    if config.get("executor") == "dask":
        pools = {trace.lane(lane).pool for lane in trace.lanes}
        workers = len({pool for pool in pools if pool.startswith("worker-")})
        parts[0] += f": dask, {workers} worker(s), intra-op {config.get('intra_op_threads', '?')}"
    elif "inter_op_threads" in config or "intra_op_threads" in config:
        inter, intra = config.get("inter_op_threads", "?"), config.get("intra_op_threads", "?")
        parts[0] += f": inter-op {inter}, intra-op {intra}"
    parts.append(f"makespan {trace.makespan_ms:.2f} ms")
    if zoomed:
        parts.append(f"window {window.lo:.4g}–{window.hi:.4g} ms")
    return " — ".join(parts)


def _legend_handles(colors: dict[str, str], kinds: set[str], arrows: bool) -> list[Any]:
    """Legend entries: one per scope, then the bar styles and arrows in use."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    named = [(s, c) for s, c in colors.items() if c != OTHER_COLOR][:MAX_LEGEND_SCOPES]
    handles: list[Any] = [
        Patch(color=c, label=short_name(s, MAX_LEGEND_CHARS) if s else "<root>") for s, c in named
    ]
    if len(colors) > len(named):
        more = len(colors) - len(named)
        handles.append(Patch(color=OTHER_COLOR, label=f"+{more} more scope(s)"))
    if "shard" in kinds:
        handles.append(Patch(facecolor="#555555", edgecolor="white", label="shard (lower part)"))
    if "copy" in kinds:
        handles.append(Patch(facecolor="white", edgecolor="#333333", hatch="////", label="copy"))
    for role, style in IDLE_STYLES.items():
        if role.value in kinds:
            patch = Patch(facecolor=style["face"], edgecolor=style["edge"], label=style["label"])
            if style["hatch"]:
                patch.set_hatch(style["hatch"])
            handles.append(patch)
    if arrows:
        handles.append(Line2D([], [], color="#303030", alpha=0.6, lw=1, label="dependency"))
    return handles


def _legend_options(count: int) -> dict[str, Any]:
    return dict(
        fontsize=8,
        frameon=False,
        ncols=1 if count <= 16 else 2,
        title="scope",
        title_fontsize=8,
        alignment="left",
        handlelength=1.2,
        handletextpad=0.5,
    )


def _draw_legend(
    ax: Axes, colors: dict[str, str], events: list[TraceEvent], kinds: set[str], arrows: bool
) -> None:
    """A legend of the scopes drawn (and the bar styles in use) outside the axes, right."""
    drawn = {_top_scope(e) for e in events}
    handles = _legend_handles({s: c for s, c in colors.items() if s in drawn}, kinds, arrows)
    if handles:
        options = _legend_options(len(handles))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), **options)


# -- artists that decide at draw time -------------------------------------------------------
@functools.cache
def _artist_types() -> tuple[type, type]:
    """(TimelineBars, BarLabels), made on first use so that matplotlib loads lazily."""
    from matplotlib.artist import Artist
    from matplotlib.collections import PolyCollection

    bars = type("TimelineBars", (PolyCollection,), {"draw": _draw_timeline_bars})
    labels = type("BarLabels", (Artist,), {"__init__": _init_bar_labels, "draw": _draw_bar_labels})
    return bars, labels


def _draw_timeline_bars(self: Any, renderer: Any) -> None:
    """Edge the bars at least EDGE_MIN_PX wide at the current zoom; outline thinner ones in
    their own colour (so even an instant shows as a hairline), then draw."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    thin = self.widths_ms * x_pixels_per_unit(self.axes) < EDGE_MIN_PX
    widths = np.where(thin, THIN_OUTLINE, self.edge_width)
    edges = np.where(thin[:, None], self.faces, self.edge_rgba)
    callback, self.stale_callback = self.stale_callback, None  # a draw must not mark stale
    try:
        self.set_linewidth(widths)
        self.set_edgecolor(edges)
    finally:
        self.stale_callback = callback
    PolyCollection.draw(self, renderer)


def _init_bar_labels(
    self: Any, *, left: Any, right: Any, y: Any, texts: list[str], colors: list[str]
) -> None:
    from matplotlib.artist import Artist
    from matplotlib.font_manager import FontProperties

    Artist.__init__(self)
    self.left, self.right, self.y, self.texts, self.colors = left, right, y, texts, colors
    self.font = FontProperties(size=LABEL_FONTSIZE)
    self.drawn_labels: list[str] = []  # the names drawn last time (tests read it)
    self.drawn_indices: list[int] = []  # and which bars they were on
    self.set_zorder(5)


def _draw_bar_labels(self: Any, renderer: Any) -> None:
    """Draw each name centred on the visible part of its bar, if it fits with a margin."""
    import numpy as np
    from matplotlib.text import Text

    self.drawn_labels, self.drawn_indices = [], []
    if not self.get_visible() or not self.texts:
        return
    ax = self.axes
    lo, hi = sorted(ax.get_xlim())
    left, right = np.maximum(self.left, lo), np.minimum(self.right, hi)
    room = (right - left) * x_pixels_per_unit(ax) - 2 * LABEL_PAD_PX
    char_px = renderer.points_to_pixels(LABEL_FONTSIZE) * 0.25  # about the narrowest glyph
    lengths = np.fromiter((len(t) for t in self.texts), int, len(self.texts))
    text = Text(fontproperties=self.font, ha="center", va="center", clip_on=True)
    text.set_figure(self.figure)
    text.set_transform(ax.transData)
    text.set_clip_box(ax.bbox)
    for i in np.flatnonzero(room >= lengths * char_px):
        width = renderer.get_text_width_height_descent(self.texts[i], self.font, ismath=False)[0]
        if width <= room[i]:
            text.set(x=(left[i] + right[i]) / 2, y=self.y[i], text=self.texts[i])
            text.set_color(self.colors[i])
            text.draw(renderer)
            self.drawn_labels.append(self.texts[i])
            self.drawn_indices.append(int(i))
