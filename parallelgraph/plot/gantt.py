"""`gantt`: one trace's timeline (rows, bars, labels, arrows, legend); the package docstring
explains the layout.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..trace.analysis import producer_run, runs_named
from ..trace.lanes import LaneKind, parse_lane
from ..trace.model import WORK, EventKind, Trace, TraceEvent
from .hover import BarIndex, add_hover
from .layout import (
    OP_BOTTOM,
    OP_TOP,
    SHARD_BOTTOM,
    SHARD_TOP,
    fit_height,
    lane_labels,
    x_pixels_per_unit,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
from .colors import UNKNOWN_COLOR, color_key, ink_on, scope_colors
from .figures import new_figure, rows_inches, show_once
from .highlight import FADE_KEEP, FADED_INK, highlight_of, highlight_patterns
from .legend import IDLE_STYLES, add_legend, legend_handles
from .memory_panel import MEMORY_INCHES, draw_memory, memory_axes
from .zoom import add_zoom

LABEL_UPPER = (OP_TOP + SHARD_TOP) / 2  # label of an op whose shards nest under it


LABEL_FONTSIZE = 7.0


LABEL_PAD_PX = 3.0  # free pixels wanted on each side of a label


EDGE_MIN_PX = 4.0  # bars narrower than this on screen get no dark edge


THIN_OUTLINE = 0.5  # points: the outline, in its own colour, of a bar narrower than that


#: Sub-rows drawn per lane for nested events (deeper ones are left out of the picture).
MAX_DEPTH = 8


# -- lanes and the time window --------------------------------------------------------------
def lane_group(lane: str) -> str:
    """The group a lane is drawn in: "inter-op", "intra-op", "stream", "copy", "worker" (a
    Dask worker's lanes), or the pool of another thread ("cpu" for "cpu/python")."""
    parsed = parse_lane(lane)
    if parsed.cluster_worker is not None:
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
class Rows:
    """Where lanes sit on the y axis: a lane whose events nest gets one sub-row per depth
    (a flame chart per lane, as Perfetto draws), up to `MAX_DEPTH`."""

    base: dict[str, int]  # lane -> y of its outermost row
    depth: dict[str, int]  # lane -> sub-rows drawn
    total: int

    @classmethod
    def of(cls, trace: Trace, lanes: list[str]) -> Rows:
        deepest: dict[str, int] = dict.fromkeys(lanes, 0)
        for event in trace.events:
            if event.kind != EventKind.SHARD and event.role is WORK:
                deepest[event.lane] = max(deepest[event.lane], min(event.depth, MAX_DEPTH - 1))
        base, y = {}, 0
        for lane in lanes:
            base[lane] = y
            y += deepest[lane] + 1
        return cls(base, {lane: deepest[lane] + 1 for lane in lanes}, y)

    def y(self, event: TraceEvent) -> float:
        """The row of an event: its lane's, plus its depth (a shard sits in its op's row)."""
        depth = event.depth - 1 if event.kind == EventKind.SHARD and event.parent else event.depth
        return self.base[event.lane] + min(max(depth, 0), self.depth[event.lane] - 1)

    def visible(self, event: TraceEvent) -> bool:
        return event.depth < MAX_DEPTH or (
            event.kind == EventKind.SHARD and event.depth == MAX_DEPTH
        )


@dataclass(frozen=True)
class Window:
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
) -> tuple[Window, bool]:
    """The window to draw and whether it is a zoom (t0 or t1 given)."""
    origin = trace.start if time_origin is None else time_origin
    span = (trace.end - origin) / 1e6
    if t0 is None and t1 is None:
        pad = max(span, 1e-6) * 0.01
        return Window(origin, min(0.0, span) - pad, max(span, 0.0) + pad), False
    lo = 0.0 if t0 is None else _zoom_ms("t0", t0)
    hi = span if t1 is None else _zoom_ms("t1", t1)
    if hi <= lo:
        raise ValueError(f"empty zoom window: t0={t0} ms, t1={t1} ms (need t0 < t1)")
    return Window(origin, lo, hi), True


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
    legend beside the axes, or below them when it does not fit there; time_origin: ns
    timestamp that is 0 ms (default: the trace's first event); highlight: an op-name pattern
    or a list of them (fnmatch: "MatMul*", "net1/*"): matching ops drawn as usual, the others
    faded, the count in the title; memory: True adds a panel with the live bytes of the op
    outputs under the timeline (`trace.memory`), or pass the Axes to draw it on when you pass
    `ax`. A new figure is as tall as its lanes, title and legend need (`layout.fit_height`).

    >>> figure = trace.plot(arrows=True)       # doctest: +SKIP
    >>> figure = trace.plot(highlight="MatMul*", memory=True)  # doctest: +SKIP
    >>> figure.savefig("timeline.svg")         # doctest: +SKIP
    """
    patterns = highlight_patterns(highlight)
    lanes = ordered_lanes(trace)
    rows = Rows.of(trace, lanes)
    memory_ax = memory_axes(memory, ax)
    made = ax is None
    if ax is None:
        ax, memory_ax = _new_axes(lanes, rows, bool(memory))
    colors = scope_colors([trace]) if colors is None else colors
    window, zoomed = _window(trace, t0, t1, time_origin)
    shown = [e for e in trace.events if rows.visible(e) and (not zoomed or window.contains(e))]
    events = [e for e in shown if e.role is WORK]
    idle = [e for e in shown if e.role is not WORK and e.parent is None]
    tasks = [e for e in events if e.kind != EventKind.SHARD]  # ops and copies: labels and arrows
    found = highlight_of(patterns, events) if patterns else None
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
        draw_memory(memory_ax, trace, window)
        if memory_ax.get_shared_x_axes().joined(ax, memory_ax):
            ax.set_xlabel("")
    if legend:
        _draw_legend(ax, colors, events, kinds, arrows)
    if made:  # our figure: as tall as its lanes, titles and legend need
        fit_height(ax.figure, _panels_inches(lanes, rows, memory_ax is not None))
    _fit_legend(ax.figure)
    bars = BarIndex.of(events, rows, window, lanes)
    ax.parallelgraph_bars = bars  # what add_hover and the toolbar read
    ax.format_coord = bars.format_coord
    add_hover(ax)
    add_zoom(ax)
    show_once(ax.figure)
    return ax.figure


def _new_axes(lanes: list[str], rows: Rows, memory: bool) -> tuple[Axes, Axes | None]:
    """The axes of a new timeline figure, and of its memory panel when asked for one."""
    sub_rows = rows.total - len(lanes)
    if not memory:
        return new_figure(len(lanes), sub_rows=sub_rows).add_subplot(), None
    figure = new_figure(len(lanes), sub_rows=sub_rows, extra_inches=MEMORY_INCHES + 0.2)
    heights = _panels_inches(lanes, rows, memory)
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": heights})
    return top, bottom


def _panels_inches(lanes: list[str], rows: Rows, memory: bool) -> list[float]:
    """Heights of a new figure's panels: the lanes' rows, and the memory panel's."""
    timeline = rows_inches(len(lanes), rows.total - len(lanes))
    return [timeline, MEMORY_INCHES] if memory else [timeline]


def _fit_legend(figure: Figure) -> None:
    """Give a lone axes on a figure without a layout engine (e.g. from `plt.subplots()`) the
    constrained layout, so the legend outside the axes is not cut off."""
    if figure.get_layout_engine() is None and len(figure.axes) == 1:
        figure.set_layout_engine("constrained")


# -- pieces of a chart ----------------------------------------------------------------------
def _draw_lane_groups(ax: Axes, trace: Trace, lanes: list[str], rows: Rows) -> None:
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


def _draw_idle(ax: Axes, events: list[TraceEvent], rows: Rows, window: Window) -> None:
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
    rows: Rows,
    window: Window,
    colors: dict[str, str],
    bright: frozenset[str] | None = None,
) -> set[str]:
    """One collection per kind of event; returns the kinds drawn. With `bright` (highlight),
    events not named in it are faded."""
    kinds = {}
    for event in events:
        kinds.setdefault(event.kind, []).append(event)
    styles = {
        EventKind.OP: dict(top=OP_TOP, bottom=OP_BOTTOM, shade=1.0, edge="#222222", width=0.5, z=2),
        EventKind.COPY: dict(
            top=OP_TOP, bottom=OP_BOTTOM, shade=1.0, edge="#222222", width=0.5, z=2
        ),
        EventKind.SHARD: dict(
            top=SHARD_TOP, bottom=SHARD_BOTTOM, shade=0.7, edge="white", width=0.4, z=3
        ),
    }
    for kind, members in kinds.items():
        style = styles.get(kind, styles[EventKind.OP])
        collection = _bar_collection(members, rows, window, colors, bright, **style)
        if kind == EventKind.COPY:
            collection.set_hatch("////")
        collection.set_gid(f"{kind!s}-bars")
        ax.add_collection(collection, autolim=False)
    return set(kinds)


def _bar_collection(
    events: list[TraceEvent],
    rows: Rows,
    window: Window,
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
    key = _keys(colors)
    faces = np.array([palette.get(key(e.scope), unknown) for e in events]).reshape(-1, 4)
    faces[:, :3] *= shade
    if bright is not None:  # highlight: the others towards white
        faded = np.array([e.name not in bright for e in events], dtype=bool)
        faces[faded, :3] = faces[faded, :3] * FADE_KEEP + (1 - FADE_KEEP)
    return faces


def _keys(colors: dict[str, str]) -> Any:
    """scope -> its key in `colors` (`colors.color_key`), remembered per scope."""
    return functools.lru_cache(maxsize=None)(lambda scope: color_key(scope, colors))


def _draw_labels(
    ax: Axes,
    tasks: list[TraceEvent],
    events: list[TraceEvent],
    rows: Rows,
    window: Window,
    colors: dict[str, str],
    bright: frozenset[str] | None = None,
) -> None:
    """Names of ops and copies, drawn at draw time only on bars wide enough (see
    `_draw_bar_labels`); above the shards when the op's shards nest under it; grey on bars
    that a highlight fades."""
    import numpy as np

    nested = {(e.name, e.lane) for e in events if e.kind == EventKind.SHARD}
    y = [rows.y(e) + (LABEL_UPPER if (e.name, e.lane) in nested else 0.0) for e in tasks]
    ink = {scope: ink_on(color) for scope, color in colors.items()}
    key = _keys(colors)
    labels = _artist_types()[1](
        left=np.array([window.ms(e.start) for e in tasks]),
        right=np.array([window.ms(e.end) for e in tasks]),
        y=np.array(y, dtype=float),
        texts=[_label(e) for e in tasks],
        colors=[
            FADED_INK
            if bright is not None and e.name not in bright
            else ink.get(key(e.scope), "black")
            for e in tasks
        ],
    )
    labels.set_gid("bar-labels")
    ax.add_artist(labels)


def _label(event: TraceEvent) -> str:
    """A bar's text: the op's name without its scope, and without the "#2" that tells
    repeated imported names apart."""
    return re.sub(r"#\d+$", "", event.name.rsplit("/", 1)[-1])


def _draw_arrows(ax: Axes, tasks: list[TraceEvent], rows: Rows, window: Window) -> None:
    """A light arrow from each drawn producer's end to each drawn consumer's start."""
    by_name: dict[str, list[TraceEvent]] = {}
    for task in tasks:
        by_name.setdefault(task.name, []).append(task)
    segments = []
    for consumer in tasks:
        for name in _inputs(consumer):
            producer = producer_run(runs_named(by_name, name), consumer)
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
    if event.inputs or event.kind != EventKind.COPY:
        return event.inputs
    return (event.name,)


def _decorate(ax: Axes, lanes: list[str], rows: Rows, window: Window, title: str) -> None:
    ax.set_yticks([rows.base[lane] for lane in lanes], lane_labels(lanes), fontsize=8)
    ax.set_ylim(max(rows.total, 1) - 0.5, -0.5)
    ax.set_xlim(window.lo, window.hi)
    ax.set_xlabel("time (ms)")
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#d0d0d0", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_title(title, fontsize=10, loc="left", wrap=True)  # wrapped to the figure's width


def _default_title(trace: Trace, window: Window, zoomed: bool) -> str:
    from ..executors.registry import find_executor

    config = trace.info.settings
    name = trace.info.graph if trace.info.graph is not None else "trace"
    parts = [str(name)]
    inter, intra = config.inter_op_threads, config.intra_op_threads
    spec = find_executor(config.executor)
    if spec is not None and spec.distributed:
        workers = len({trace.lane(lane).cluster_worker for lane in trace.lanes} - {None})
        shown = "?" if intra is None else intra
        parts[0] += f": {spec.name}, {workers} worker(s), intra-op {shown}"
    elif inter is not None or intra is not None:
        parts[0] += f": inter-op {'?' if inter is None else inter}, "
        parts[0] += f"intra-op {'?' if intra is None else intra}"
    parts.append(f"makespan {trace.makespan_ms:.2f} ms")
    if zoomed:
        parts.append(f"window {window.lo:.4g}–{window.hi:.4g} ms")
    return " — ".join(parts)


def _draw_legend(
    ax: Axes, colors: dict[str, str], events: list[TraceEvent], kinds: set[str], arrows: bool
) -> None:
    """A legend of the scopes drawn (and the bar styles in use): the layout puts it beside the
    axes or below them (`legend`)."""
    key = _keys(colors)
    drawn = {key(e.scope) for e in events}
    handles = legend_handles({s: c for s, c in colors.items() if s in drawn}, kinds, arrows)
    if handles:
        add_legend(ax, handles)


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
