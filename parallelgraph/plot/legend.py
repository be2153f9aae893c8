"""The timeline's scope legend: every entry kept, laid out at draw time to fit its figure.

A legend hung beside the axes of a short figure lost its last entries below the figure's edge
(eight attention heads and a "shard" entry on a one-lane timeline). So the legend is planned,
like the margins, by the timeline's layout engine (`layout`) at every draw, from its measured
size at the figure's current width and dpi (`plan_legend`):

- beside the axes, right, in one column (or two when one is too tall), where it fits in the
  height from the top panel's top to the figure's bottom and takes at most `BESIDE_MAX` of the
  figure's width;
- otherwise below the time axis, in as many columns as the width under the axes holds (filled
  column by column, as matplotlib does, with as few columns as give that many rows), and the
  bottom margin grows to hold it.

A figure `gantt` or `compare` makes is then given the height its lanes, titles and this legend
need (`layout.fit_height`), and a legend placed below there stays below (`prefer_below`): the
height it was given is not turned back into taller lanes at the next draw.

matplotlib lays a legend's columns out once, when it is made, so a new column count makes a
new legend (`ax.legend` again, with the same handles): read it with `ax.get_legend()` after a
draw. Sizes measured per column count and dpi are kept on the legend, so a redraw at the same
size measures nothing. Labels of long scopes keep their last parts ("…/head7"), the parts that
tell branches apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..trace.model import EventKind, EventRole
from .colors import MAX_LEGEND_SCOPES, OTHER_COLOR

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend

#: Scope labels longer than this keep their last path parts ("…/head7").
MAX_LEGEND_CHARS = 14
#: The widest a legend beside the axes may be, as a share of the figure's width.
BESIDE_MAX = 1 / 3
#: One column beside the axes up to this many entries, then two (figures without our layout).
ONE_COLUMN_ENTRIES = 16

LEGEND_STYLE: dict[str, Any] = dict(
    fontsize=8,
    frameon=False,
    title="scope",
    title_fontsize=8,
    alignment="left",
    handlelength=1.2,
    handletextpad=0.5,
    borderaxespad=0.0,  # its corner exactly where the layout puts it
)

#: How waiting and setup are drawn: behind the lane's work, over all its rows (`gantt`), and
#: in the legend.
IDLE_STYLES = {
    EventRole.WAITING: dict(face="none", edge="#8a8a8a", hatch="xxx", label="waiting"),
    EventRole.SETUP: dict(face="#e4e4e4", edge="#bdbdbd", hatch="", label="setup"),
}


def scope_label(scope: str, limit: int = MAX_LEGEND_CHARS) -> str:
    """A legend's name for `scope`: itself when short, else its last path parts after "…/"
    ("…/head7"), else its middle cut (`short_name`); "<root>" for the root scope."""
    if not scope:
        return "<root>"
    if len(scope) <= limit:
        return scope
    parts = scope.split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(tail) + 3 > limit:
            break
        tail = f"{part}/{tail}"
    if len(tail) + 2 <= limit:
        return "…/" + tail
    from .layout import short_name  # the layout plans this legend: it imports this module

    return short_name(scope, limit)


def scope_labels(scopes: list[str]) -> list[str]:
    """Legend labels for `scopes`, still unique (longer ones where two would read alike)."""
    labels = [scope_label(scope) for scope in scopes]
    if len(set(labels)) < len(labels):
        labels = [scope_label(scope, 3 * MAX_LEGEND_CHARS) for scope in scopes]
    return labels if len(set(labels)) == len(labels) else [s or "<root>" for s in scopes]


def legend_handles(colors: dict[str, str], kinds: set[str], arrows: bool) -> list[Any]:
    """Legend entries: one per scope, then the bar styles and arrows in use."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    named = [(s, c) for s, c in colors.items() if c != OTHER_COLOR][:MAX_LEGEND_SCOPES]
    labels = scope_labels([s for s, _ in named])
    handles: list[Any] = [Patch(color=c, label=label) for (_, c), label in zip(named, labels)]
    if len(colors) > len(named):
        more = len(colors) - len(named)
        handles.append(Patch(color=OTHER_COLOR, label=f"+{more} more scope(s)"))
    if EventKind.SHARD in kinds:
        handles.append(Patch(facecolor="#555555", edgecolor="white", label="shard (lower part)"))
    if EventKind.COPY in kinds:
        handles.append(
            Patch(facecolor="white", edgecolor="#333333", hatch="////", label=str(EventKind.COPY))
        )
    for role, style in IDLE_STYLES.items():
        if role.value in kinds:
            patch = Patch(facecolor=style["face"], edgecolor=style["edge"], label=style["label"])
            if style["hatch"]:
                patch.set_hatch(style["hatch"])
            handles.append(patch)
    if arrows:
        handles.append(Line2D([], [], color="#303030", alpha=0.6, lw=1, label="dependency"))
    return handles


def add_legend(ax: Axes, handles: list[Any]) -> Legend:
    """The scope legend on `ax`, beside it (right, top-aligned): where a figure without the
    timeline layout (e.g. from `plt.subplots()`) keeps it; the timeline layout re-plans it
    at every draw."""
    columns = 1 if len(handles) <= ONE_COLUMN_ENTRIES else 2
    options = dict(loc="upper left", bbox_to_anchor=(1.005, 1.0), ncols=columns)
    legend = ax.legend(handles=handles, **options, **LEGEND_STYLE)
    legend.parallelgraph_handles = handles
    legend.parallelgraph_sizes = {}
    return legend


def is_planned(legend: Any) -> bool:
    """Whether `legend` is a timeline's scope legend, which the layout plans."""
    return legend is not None and hasattr(legend, "parallelgraph_handles")


@dataclass(frozen=True)
class LegendPlan:
    """Where a legend goes: below the time axis or beside the axes, in how many columns, and
    its size then (display pixels)."""

    below: bool
    columns: int
    width: float
    height: float


def plan_legend(
    legend: Legend, renderer: Any, beside_height: float, figure_width: float, below_width: float
) -> LegendPlan:
    """Beside when one or two columns fit `beside_height` and `BESIDE_MAX` of `figure_width`
    (and the legend was not placed below when its figure was sized), else below in the
    columns that fit `below_width` (module docstring)."""
    if not getattr(legend, "parallelgraph_below", False):
        for columns in (1, 2):
            width, height = legend_size(legend, columns, renderer)
            if height <= beside_height and width <= BESIDE_MAX * figure_width:
                return LegendPlan(False, columns, width, height)
    count = len(legend.parallelgraph_handles)
    one_width = legend_size(legend, 1, renderer)[0]
    fontsize = renderer.points_to_pixels(legend._fontsize)
    border, spacing = 2 * legend.borderpad * fontsize, legend.columnspacing * fontsize
    columns = int((below_width - border + spacing) // max(one_width - border + spacing, 1.0))
    columns = min(max(columns, 1), count)
    while columns > 1 and legend_size(legend, columns, renderer)[0] > below_width:
        columns -= 1
    columns = math.ceil(count / math.ceil(count / columns))  # as few columns as these rows need
    return LegendPlan(True, columns, *legend_size(legend, columns, renderer))


def legend_size(legend: Legend, columns: int, renderer: Any) -> tuple[float, float]:
    """Width and height in pixels of `legend` laid out in `columns` (measured on a detached
    copy, kept per column count and dpi)."""
    key = (columns, renderer.points_to_pixels(72.0))
    sizes = legend.parallelgraph_sizes
    if key not in sizes:
        probe = legend if legend._ncols == columns else _detached(legend, columns)
        box = probe.get_window_extent(renderer)
        sizes[key] = (box.width, box.height)
    return sizes[key]


def _detached(legend: Legend, columns: int) -> Legend:
    from matplotlib.legend import Legend

    handles = legend.parallelgraph_handles
    labels = [handle.get_label() for handle in handles]
    return Legend(legend.axes, handles, labels, ncols=columns, loc="upper left", **LEGEND_STYLE)


def place_legend(legend: Legend, plan: LegendPlan, x: float, y: float) -> Legend:
    """Put `legend` where `plan` says, its corner at figure fraction (x, y): the upper left
    corner beside the axes, the lower left corner below them. A new column count makes a new
    legend on the same axes (returned); the plan's sizes stay with it."""
    ax, figure = legend.axes, legend.get_figure(root=True)
    loc = "lower left" if plan.below else "upper left"
    if legend._ncols != plan.columns:
        handles, sizes = legend.parallelgraph_handles, legend.parallelgraph_sizes
        below = getattr(legend, "parallelgraph_below", False)
        legend = ax.legend(handles=handles, ncols=plan.columns, loc=loc, **LEGEND_STYLE)
        legend.parallelgraph_handles, legend.parallelgraph_sizes = handles, sizes
        legend.parallelgraph_below = below
    legend.set_loc(loc)
    legend.set_bbox_to_anchor((x, y), transform=figure.transFigure)
    return legend
