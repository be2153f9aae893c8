"""Hovering a timeline: which bar is under the mouse, and what its tooltip says.

`plot.gantt` records on its axes where every drawn bar is (`BarIndex`: left and right in ms,
the middle of its row, half its height), sets the toolbar's read-out (`format_coord`: the time,
the lane and the op under the mouse), and calls `add_hover`, which connects one
`motion_notify_event` handler to the canvas. On an interactive canvas (ipympl under
`%matplotlib widget`, Qt, Tk) moving the mouse over a bar shows its tooltip — name, scope, lane,
start, duration, shapes, GFLOP/s — and moving off hides it; on a static canvas (Agg, PNG) the
handler never fires and costs nothing. The lookup is a few numpy comparisons over the drawn bars.

Where the tooltip goes: below and right of the pointer, flipped left or up when it would leave
the figure (measured with the canvas' renderer), and its axes drawn above the figure's other
axes while it shows: in `compare` (and the dashboard's pins above the current run) the next
panel is drawn after this one and would cover a tooltip that reaches into it; the axes' own
z-order comes back when the tooltip hides. The wheel and keys that zoom are in `zoom`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..trace.model import EventKind, TraceEvent
from .layout import OP_BOTTOM, OP_TOP, SHARD_BOTTOM, SHARD_TOP, x_pixels_per_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

OFFSET_PT = 12.0  # the tooltip's corner from the pointer, points


@dataclass
class BarIndex:
    """Where each drawn bar is, to find the one under the mouse (hover, toolbar read-out)."""

    events: list[TraceEvent]
    left: Any  # ms, numpy arrays
    right: Any
    y: Any  # the middle of the bar's row
    half: Any  # half the bar's height
    lanes: list[str]
    rows: Any  # plot._Rows: where lanes and their sub-rows sit
    window: Any  # plot._Window: the time origin and span drawn

    @classmethod
    def of(cls, events: list[TraceEvent], rows: Any, window: Any, lanes: list[str]) -> BarIndex:
        import numpy as np

        shard = np.array([e.kind == EventKind.SHARD for e in events], dtype=bool)
        top = np.where(shard, SHARD_TOP, OP_TOP)
        bottom = np.where(shard, SHARD_BOTTOM, OP_BOTTOM)
        base = np.array([rows.y(e) for e in events], dtype=float)
        return cls(
            events,
            np.array([window.ms(e.start) for e in events]),
            np.array([window.ms(e.end) for e in events]),
            base + (top + bottom) / 2,
            (bottom - top) / 2,
            lanes,
            rows,
            window,
        )

    def at(self, x: float, y: float, slack: float = 0.0) -> TraceEvent | None:
        """The bar under (x ms, y row): the innermost (shards over ops, deeper over
        shallower), `slack` ms of tolerance for hairline bars."""
        import numpy as np

        if not self.events:
            return None
        hit = (
            (self.left - slack <= x) & (x <= self.right + slack) & (np.abs(self.y - y) <= self.half)
        )
        found = np.flatnonzero(hit)
        if not len(found):
            return None
        best = min(found, key=lambda i: (self.right[i] - self.left[i], -self.events[i].depth))
        return self.events[int(best)]

    def lane_at(self, y: float) -> str:
        for lane in self.lanes:
            if self.rows.base[lane] - 0.5 <= y < self.rows.base[lane] + self.rows.depth[lane] - 0.5:
                return lane
        return ""

    def format_coord(self, x: float, y: float) -> str:
        """The toolbar's read-out: time and lane, and the op under the mouse."""
        event = self.at(x, y)
        where = f"t = {x:.3f} ms, lane {self.lane_at(y) or '-'}"
        return f"{where}: {event.name} ({_duration_text(event.duration_ns)})" if event else where


def _duration_text(ns: int) -> str:
    return f"{ns / 1e6:.3f} ms" if ns >= 1_000_000 else f"{ns / 1e3:.1f} us"


def tooltip_text(event: TraceEvent, window_origin: int) -> str:
    """What hovering a bar shows: name, scope, lane, start, duration, shapes, flops."""
    if event.shard is None:
        name = event.name
    elif event.shards > 1:  # consecutive shards computed in one call (executors.step)
        name = f"{event.name} [shards {event.shard}-{event.shard + event.shards - 1}, one call]"
    else:
        name = f"{event.name} [shard {event.shard}]"
    lines = [
        name,
        f"scope {event.scope or '<root>'} · lane {event.lane}",
        f"start {(event.start - window_origin) / 1e6:.3f} ms · {_duration_text(event.duration_ns)}",
    ]
    if event.shapes:
        lines.append(event.shapes)
    if event.flops:
        rate = event.flops / event.duration_ns if event.duration_ns else 0.0  # flop/ns = GFLOP/s
        lines.append(f"{event.flops / 1e9:.3g} GFLOP at {rate:.3g} GFLOP/s")
    return "\n".join(lines)


def add_hover(ax: Axes) -> Any:
    """Make hovering a bar of the timeline on `ax` show its tooltip (`tooltip_text`).

    Works on any interactive canvas (ipympl under `%matplotlib widget`, Qt, Tk); on a static
    one it costs nothing. Returns the tooltip (an Annotation, gid "hover-tooltip"). Drawn by
    `gantt` on every timeline; call it again after redrawing by hand.
    """
    bars: BarIndex | None = getattr(ax, "parallelgraph_bars", None)
    if bars is None:
        raise ValueError("add_hover: draw a timeline on these axes first (trace.plot(ax=ax))")
    old = getattr(ax, "parallelgraph_tooltip", None)
    if old is not None:
        return old
    tooltip = ax.annotate(
        "", xy=(0, 0), xytext=(OFFSET_PT, -OFFSET_PT), textcoords="offset points", fontsize=8,
        va="top",
        bbox={"boxstyle": "round,pad=0.4", "fc": "#fffff0", "ec": "#888888", "alpha": 0.95},
        zorder=20, annotation_clip=False, visible=False,
    )  # fmt: skip
    tooltip.set_gid("hover-tooltip")

    def on_move(mouse: Any) -> None:
        event = None
        if mouse.inaxes is ax and mouse.xdata is not None:
            slack = 3.0 / max(x_pixels_per_unit(ax), 1e-9)  # 3 px around hairlines
            event = ax.parallelgraph_bars.at(mouse.xdata, mouse.ydata, slack)
        if event is None:
            if tooltip.get_visible():
                tooltip.set_visible(False)
                _back_in_place(ax)
                ax.figure.canvas.draw_idle()
            return
        tooltip.xy = (mouse.xdata, mouse.ydata)
        tooltip.set_text(tooltip_text(event, ax.parallelgraph_bars.window.origin))
        tooltip.set_visible(True)
        _to_front(ax)
        _keep_inside(tooltip, ax.figure)
        ax.figure.canvas.draw_idle()

    ax.figure.canvas.mpl_connect("motion_notify_event", on_move)
    ax.parallelgraph_tooltip = tooltip
    return tooltip


def _keep_inside(tooltip: Any, figure: Figure) -> None:
    """Put the tooltip below right of the pointer, or left / above where it would leave the
    figure there."""
    tooltip.xyann = (OFFSET_PT, -OFFSET_PT)
    tooltip.set_horizontalalignment("left")
    tooltip.set_verticalalignment("top")
    box = tooltip.get_window_extent(figure._get_renderer())  # as matplotlib's layouts do
    pad = figure.dpi / 72 * 8 * 0.4  # the bbox's pad (0.4 of the 8 pt font) is not counted
    right, low = box.x1 + pad > figure.bbox.x1, box.y0 - pad < figure.bbox.y0
    if right or low:
        tooltip.xyann = (-OFFSET_PT if right else OFFSET_PT, OFFSET_PT if low else -OFFSET_PT)
        tooltip.set_horizontalalignment("right" if right else "left")
        tooltip.set_verticalalignment("bottom" if low else "top")


def _to_front(ax: Axes) -> None:
    """Draw `ax` after the figure's other axes (its z-order kept, to restore)."""
    others = [a.get_zorder() for a in ax.figure.axes if a is not ax]
    if others and ax.get_zorder() <= max(others):
        if not hasattr(ax, "parallelgraph_zorder"):
            ax.parallelgraph_zorder = ax.get_zorder()
        ax.set_zorder(max(others) + 1)


def _back_in_place(ax: Axes) -> None:
    if hasattr(ax, "parallelgraph_zorder"):
        ax.set_zorder(ax.parallelgraph_zorder)
        del ax.parallelgraph_zorder
