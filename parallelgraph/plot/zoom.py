"""Wheel and keyboard zoom of a timeline's time axis, on any interactive canvas.

`plot.gantt` calls `add_zoom` on every timeline it draws. It connects, once per figure, a
`scroll_event` handler and a `key_press_event` handler (matplotlib's own events, so the same
code runs under ipympl, Qt and Tk; on a static Agg canvas nothing ever calls them):

- the mouse wheel over a timeline zooms its time axis around the pointer: the time under the
  pointer stays where it is, the span shrinks (wheel up) or grows (wheel down) by `WHEEL_FACTOR`
  per notch (ipympl sends one event per notch, with `step` +1 or -1);
- `+` (or `=`) and `-` zoom by `KEY_FACTOR` around the pointer when it is over a timeline,
  else around the middle; the left and right arrows pan by `PAN_FRACTION` of the span.

Only the x-limits change; everything else follows at draw time: which bars get an edge, which
names fit on their bars (`gantt`'s draw-time artists), the tick labels, and the axes that share
the time axis (`compare`'s panels, the memory panel). The limits stay sensible: the span between
`MIN_SPAN_MS` and `MAX_ZOOM_OUT` times the widest drawn window, and the middle of the view
inside the drawn windows, so the wheel can neither lose the trace nor zoom past a nanosecond.

Keys. matplotlib's default key handler (connected by a figure manager: pyplot, ipympl, Qt)
binds the left and right arrows to the toolbar's Back and Forward, which would undo a pan the
moment it is made. So `take_default_keys` disconnects the manager's handler and our handler
hands every key it does not use to matplotlib's `key_press_handler` (the same bindings:
h for home, g for the grid, s to save, ...). It runs when the zoom is added and again at each
key press, for a manager made later (the dashboard gives a figure a new ipympl canvas). Before
the first zoom the current view is pushed on the toolbar's navigation stack, so Home (h, or the
toolbar's button) returns to the whole timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WHEEL_FACTOR = 1.25  # span divided by this per wheel notch up
KEY_FACTOR = 1.5  # ... per press of + (multiplied by it per press of -)
PAN_FRACTION = 0.25  # an arrow key moves the view by this share of its span
MIN_SPAN_MS = 1e-6  # one nanosecond
MAX_ZOOM_OUT = 2.0  # the widest view: this many times the widest drawn window
ZOOM_IN_KEYS = frozenset({"+", "="})
ZOOM_OUT_KEYS = frozenset({"-", "_"})
PAN_KEYS = {"left": -1.0, "right": 1.0}
OUR_KEYS = ZOOM_IN_KEYS | ZOOM_OUT_KEYS | frozenset(PAN_KEYS)


# -- the arithmetic -------------------------------------------------------------------------
def zoomed(lo: float, hi: float, x: float, factor: float) -> tuple[float, float]:
    """The limits after zooming (lo, hi) by `factor` (> 1 zooms in) around `x`: `x` keeps its
    place on screen (it is clamped into the view first)."""
    x = min(max(x, lo), hi)
    scale = 1.0 / factor
    return x - (x - lo) * scale, x + (hi - x) * scale


def panned(lo: float, hi: float, fraction: float) -> tuple[float, float]:
    """The limits moved by `fraction` of the span (negative: towards earlier times)."""
    shift = (hi - lo) * fraction
    return lo + shift, hi + shift


def bounded(
    lo: float, hi: float, home: tuple[float, float], anchor: float | None = None
) -> tuple[float, float]:
    """(lo, hi) with the span kept between MIN_SPAN_MS and MAX_ZOOM_OUT times the home span
    (scaled around `anchor`, default the middle) and the middle of the view kept inside
    `home`, the drawn window."""
    home_lo, home_hi = home
    most = max(MAX_ZOOM_OUT * (home_hi - home_lo), MIN_SPAN_MS)
    span = hi - lo
    anchor = (lo + hi) / 2 if anchor is None else anchor
    if span < MIN_SPAN_MS or span > most:
        wanted = min(max(span, MIN_SPAN_MS), most)
        ratio = (anchor - lo) / span if span > 0 else 0.5
        lo, hi = anchor - ratio * wanted, anchor + (1 - ratio) * wanted
    middle = (lo + hi) / 2
    shift = min(max(middle, home_lo), home_hi) - middle
    return lo + shift, hi + shift


# -- the handlers ---------------------------------------------------------------------------
@dataclass
class TimelineZoom:
    """The wheel and key handlers of one figure (see the module docstring)."""

    figure: Any
    taken: set[int] = field(default_factory=set)  # ids of managers whose key handler we took
    delegate: bool = False  # whether keys we do not use go to matplotlib's key handler
    pushed_home: bool = False

    def timeline_for(self, ax: Axes | None) -> Axes | None:
        """The timeline whose time axis `ax` shows: `ax` itself, or a timeline sharing its x
        axis (a memory panel under one); None for any other axes."""
        if ax is None:
            return None
        if getattr(ax, "parallelgraph_bars", None) is not None:
            return ax
        for other in self.timelines():
            if other.get_shared_x_axes().joined(ax, other):
                return other
        return None

    def timelines(self) -> list[Axes]:
        return [ax for ax in self.figure.axes if getattr(ax, "parallelgraph_bars", None)]

    def home(self, ax: Axes) -> tuple[float, float]:
        """The union of the drawn windows of the timelines that share `ax`'s time axis."""
        windows = [
            other.parallelgraph_bars.window
            for other in self.timelines()
            if other is ax or other.get_shared_x_axes().joined(ax, other)
        ]
        return min(w.lo for w in windows), max(w.hi for w in windows)

    def set_limits(self, ax: Axes, lo: float, hi: float, anchor: float | None = None) -> None:
        toolbar = getattr(ax.figure.canvas, "toolbar", None)
        if not self.pushed_home and toolbar is not None and hasattr(toolbar, "push_current"):
            stack = getattr(toolbar, "_nav_stack", None)
            if stack is None or stack() is None:  # Home then returns to the whole timeline
                toolbar.push_current()
            self.pushed_home = True
        lo, hi = bounded(lo, hi, self.home(ax), anchor)
        ax.set_xlim(lo, hi)
        ax.figure.canvas.draw_idle()

    def on_scroll(self, event: Any) -> None:
        """Wheel over a timeline (or a panel sharing its time axis): zoom around the pointer."""
        ax = self.timeline_for(event.inaxes)
        if ax is None or event.xdata is None or not event.step:
            return
        lo, hi = ax.get_xlim()
        x = _x_on(ax, event)
        self.set_limits(ax, *zoomed(lo, hi, x, WHEEL_FACTOR**event.step), anchor=x)

    def on_key(self, event: Any) -> None:
        """+/- zoom, left/right pan; every other key to matplotlib's own key handler."""
        self.take_default_keys(event.canvas)
        key = event.key
        ax = self.key_target(event) if key in OUR_KEYS else None
        if ax is None:
            if self.delegate:
                from matplotlib.backend_bases import key_press_handler

                key_press_handler(event)
            return
        lo, hi = ax.get_xlim()
        if key in PAN_KEYS:
            self.set_limits(ax, *panned(lo, hi, PAN_KEYS[key] * PAN_FRACTION))
            return
        over = self.timeline_for(event.inaxes) is ax and event.xdata is not None
        x = _x_on(ax, event) if over else (lo + hi) / 2
        factor = KEY_FACTOR if key in ZOOM_IN_KEYS else 1 / KEY_FACTOR
        self.set_limits(ax, *zoomed(lo, hi, x, factor), anchor=x)

    def key_target(self, event: Any) -> Axes | None:
        """The timeline a zoom or pan key acts on: the one under the pointer; with the pointer
        over no axes, the figure's first timeline; None over axes of another kind."""
        if event.inaxes is not None:
            return self.timeline_for(event.inaxes)
        timelines = self.timelines()
        return timelines[0] if timelines else None

    def take_default_keys(self, canvas: Any) -> None:
        """Disconnect the key handler of `canvas`'s figure manager, which binds the arrows to
        Back/Forward; `on_key` passes it every key it does not use instead."""
        manager = getattr(canvas, "manager", None)
        handler = getattr(manager, "key_press_handler_id", None)
        if manager is None or handler is None or id(manager) in self.taken:
            return
        canvas.mpl_disconnect(handler)
        manager.key_press_handler_id = None
        self.taken.add(id(manager))
        self.delegate = True


def _x_on(ax: Axes, event: Any) -> float:
    """The time (ms) under the pointer on `ax`, which may be a panel sharing the time axis of
    the axes the event is in."""
    if event.inaxes is ax:
        return float(event.xdata)
    return float(ax.transData.inverted().transform((event.x, event.y))[0])


def add_zoom(ax: Axes) -> TimelineZoom:
    """Let the mouse wheel and the keyboard zoom and pan the time axis of the timeline on `ax`
    (see the module docstring). Called by `gantt` for every timeline; once per figure, the
    rest reuse the figure's handlers. Returns them (`figure.parallelgraph_zoom`)."""
    figure: Figure = ax.figure
    zoom = getattr(figure, "parallelgraph_zoom", None)
    if zoom is None:
        zoom = TimelineZoom(figure)
        figure.canvas.mpl_connect("scroll_event", zoom.on_scroll)
        figure.canvas.mpl_connect("key_press_event", zoom.on_key)
        figure.parallelgraph_zoom = zoom
    zoom.take_default_keys(figure.canvas)
    return zoom
