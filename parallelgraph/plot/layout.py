"""A layout engine for timeline figures: margins from a few text measurements.

matplotlib's constrained layout asks every axes for its tight bounding box, which lays out and
measures every tick label of every axis, and then the draw does it all again: on a two-panel
`compare` that was nearly half of a redraw (benchmarks/plot_speed.py), the largest single cost
of a dashboard update.
Timeline figures have a fixed shape, so their margins follow from a handful of texts:

- left: the widest lane name (y tick labels) of any panel, names shortened by `short_name`
  (hex ids elided, the middle of a long name cut) so that the chart keeps most of the width;
- right: the scope legend when it sits beside the axes (and any legend of your own there);
- top: the figure title and the first panel's title, both wrapped to the figure's width
  (matplotlib's `wrap`, the text itself unchanged), so a long title or a highlight's line
  gets more lines instead of running past the right edge;
- bottom: the time axis' tick labels and its label, and the scope legend when it sits below
  (`legend`: beside when it fits, else below in as many columns as the width holds);
- between panels: the next panel's title (panels share the time axis, so upper panels have no
  tick labels).

`TimelineLayout.execute` measures those with the renderer and calls `subplots_adjust`, so it
runs at every draw like any layout engine (a resized canvas gets new margins) and costs a few
milliseconds. It lays out a single column of subplots, which is what `gantt` and `compare`
make; axes added by hand (`figure.add_axes`) keep the place they were given, and a grid of
several columns is left alone. The engine never changes a figure's size (a canvas is drawn at
the size it has); `fit_height`, called once when `gantt` or `compare` makes a figure, gives it
the height its lanes plus these margins need.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .legend import is_planned, place_legend, plan_legend

# Vertical geometry inside a timeline row (rows are 1 data unit apart, the y axis points down):
# op bars fill most of the row, shards the lower part.
OP_TOP, OP_BOTTOM = -0.38, 0.38
SHARD_TOP, SHARD_BOTTOM = 0.04, 0.36

#: Lane names longer than this are shortened (the unique part kept), so the chart keeps most
#: of the figure's width whatever a profiler calls its threads.
MAX_LANE_CHARS = 28
_HEX_RUN = re.compile(r"[0-9a-fA-F]{12,}")

PAD_PT = 4.0  # free space kept at the figure edges and around titles
TICK_PAD_PT = 4.5  # lane names: gap to the axes (no tick marks; matplotlib's 3.5 pt pad, and 1)


def short_name(name: str, limit: int = MAX_LANE_CHARS) -> str:
    """`name` fit for an axis label: long hex ids elided ("worker 3f9a…2e1"), then, if still too
    long, its middle cut so that the start and the distinctive end are kept."""
    shorter = _HEX_RUN.sub(lambda match: match.group(0)[:4] + "…" + match.group(0)[-3:], name)
    if len(shorter) <= limit:
        return shorter
    head = (limit - 1) // 2
    return shorter[:head] + "…" + shorter[-(limit - 1 - head) :]


def lane_labels(lanes: Sequence[str]) -> list[str]:
    """Short, still unique labels for `lanes` (see `short_name`; a longer cut where two
    would read alike)."""
    labels = [short_name(lane) for lane in lanes]
    if len(set(labels)) < len(labels):
        labels = [short_name(lane, 2 * MAX_LANE_CHARS) for lane in lanes]
    if len(set(labels)) < len(labels):
        labels = list(lanes)
    return labels


def timeline_layout() -> Any:
    """A `TimelineLayout` instance (the class is made on first use: matplotlib loads lazily)."""
    return _layout_class()()


def _layout_class() -> type:
    from matplotlib.layout_engine import LayoutEngine

    global _LAYOUT_CLASS
    if _LAYOUT_CLASS is not None:
        return _LAYOUT_CLASS

    class TimelineLayout(LayoutEngine):
        """Margins of a one-column timeline figure from measured texts (module docstring)."""

        _adjust_compatible = True
        _colorbar_gridspec = True

        def execute(self, figure: Any) -> None:
            axes = _timeline_axes(figure)
            if axes:  # axes placed by hand keep their place
                _apply(figure, axes, _measure(figure, axes))

    _LAYOUT_CLASS = TimelineLayout
    return TimelineLayout


_LAYOUT_CLASS: type | None = None


def fit_height(figure: Any, panels_inches: Sequence[float] | None = None) -> None:
    """Make a timeline `figure` as tall as its panels, `panels_inches` tall from top to bottom
    (default: as at its last fit), plus what its titles (wrapped to its width), time axis and
    legend (beside or below, `legend`) need at its current width: the figure grows with the
    lanes, scopes and legend entries it shows. A legend it puts below stays below."""
    panels = getattr(figure, "parallelgraph_panels_inches", None)
    panels = tuple(panels_inches) if panels_inches is not None else panels
    axes = _timeline_axes(figure)
    if not axes or panels is None or len(panels) != len(axes):
        return
    figure.parallelgraph_panels_inches = panels
    legend = _planned_legend(axes)
    if legend is not None:
        legend.parallelgraph_below = False  # decided afresh for these panels
    dpi = figure.dpi
    margins = _measure(figure, axes, panels_px=sum(panels) * dpi)
    if margins.legend_plan is not None:
        legend.parallelgraph_below = margins.legend_plan.below
    gaps = (len(axes) - 1) * margins.gap
    height = margins.top + sum(panels) * dpi + gaps + margins.bottom
    figure.set_figheight(math.ceil(height) / dpi, forward=True)  # whole pixels, as canvases are


def _timeline_axes(figure: Any) -> list[Any]:
    """The subplots of a one-column figure, top to bottom (none for other figures)."""
    axes = [ax for ax in figure.axes if ax.get_subplotspec() is not None]
    if not axes or _columns(axes) != 1:
        return []
    return sorted(axes, key=lambda ax: -ax.get_position().y1)


def _columns(axes: list[Any]) -> int:
    return axes[0].get_subplotspec().get_gridspec().ncols


def _planned_legend(axes: list[Any]) -> Any:
    return next((ax.get_legend() for ax in axes if is_planned(ax.get_legend())), None)


@dataclass(frozen=True)
class Margins:
    """What a timeline figure's texts need, in display pixels: the four margins, the gap
    between panels, and the plan of its scope legend (if it has one)."""

    left: float
    right: float
    top: float
    bottom: float
    gap: float
    legend: Any = None
    legend_plan: Any = None


def _measure(figure: Any, axes: list[Any], panels_px: float | None = None) -> Margins:
    """The margins of `axes` (one column, top to bottom). The legend goes beside the panels
    if it fits from the top panel's top to the figure's bottom: with `panels_px`, the height
    the panels will have (`fit_height`), else the figure's present height."""
    renderer = figure._get_renderer()  # as matplotlib's own engines do (any backend)
    points = renderer.points_to_pixels
    width_px, height_px = figure.bbox.width, figure.bbox.height
    pad = points(PAD_PT)

    left = pad + max(_widest_tick_label(ax, renderer) for ax in axes) + points(TICK_PAD_PT)
    figure.subplots_adjust(left=_left_fraction(left, width_px))  # titles wrap from there
    if figure._suptitle is not None:  # pinned to the top edge, where the margin expects it
        figure._suptitle.set_y(1 - pad / height_px)
        figure._suptitle.set_verticalalignment("top")
    top = pad + _text_height(figure._suptitle, renderer, pad)
    top += _title_height(axes[0], renderer, pad)
    time_axis = _time_axis_height(axes[-1], renderer)
    gap = max((_title_height(ax, renderer, pad) for ax in axes[1:]), default=0.0) + pad

    legend, plan = _planned_legend(axes), None
    if legend is not None:
        panels = height_px - top - pad - time_axis if panels_px is None else panels_px
        room = panels + (0.0 if panels_px is None else (len(axes) - 1) * gap) + time_axis
        plan = plan_legend(legend, renderer, room, width_px, width_px - left - pad)
    right = pad + _legend_width(figure, axes, renderer)
    if plan is not None and not plan.below:
        right = max(right, 2 * pad + plan.width)
    bottom = pad + time_axis + (plan.height + pad if plan is not None and plan.below else 0.0)
    return Margins(left, right, top, bottom, gap, legend, plan)


def _left_fraction(left_px: float, width_px: float) -> float:
    return min(left_px / width_px, 0.45)


def _apply(figure: Any, axes: list[Any], margins: Margins) -> None:
    """`subplots_adjust` to `margins`, then the scope legend put where its plan says."""
    width_px, height_px = figure.bbox.width, figure.bbox.height
    left = _left_fraction(margins.left, width_px)
    right = max(1 - margins.right / width_px, left + 0.1)
    top = 1 - min(margins.top / height_px, 0.45)
    bottom = min(margins.bottom / height_px, top - 0.1)
    available = (top - bottom) * height_px
    panels = len(axes)
    mean_height = max((available - (panels - 1) * margins.gap) / panels, 1.0)
    hspace = margins.gap / mean_height if panels > 1 else 0.0
    figure.subplots_adjust(left=left, right=right, top=top, bottom=bottom, hspace=hspace)
    plan = margins.legend_plan
    if plan is not None:
        pad = figure._get_renderer().points_to_pixels(PAD_PT)
        corner = (left, pad / height_px) if plan.below else (right + pad / width_px, top)
        place_legend(margins.legend, plan, *corner)


def _widest_tick_label(ax: Any, renderer: Any) -> float:
    labels = [t for t in ax.yaxis.get_ticklabels() if t.get_visible() and t.get_text()]
    return max((_text_width(t, renderer) for t in labels), default=0.0)


def _text_width(text: Any, renderer: Any) -> float:
    width, _, _ = renderer.get_text_width_height_descent(
        text.get_text(), text.get_fontproperties(), ismath=False
    )
    return width


def _title_height(ax: Any, renderer: Any, pad: float) -> float:
    """The tallest of the axes' three titles (left, centre, right), with the gap matplotlib
    leaves between a title and its axes."""
    from matplotlib import rcParams

    titles = (ax.title, ax._left_title, ax._right_title)
    tallest = max(_text_height(title, renderer, pad) for title in titles)
    return tallest + renderer.points_to_pixels(rcParams["axes.titlepad"]) if tallest else 0.0


def _text_height(text: Any, renderer: Any, pad: float) -> float:
    """Height of `text` as drawn (wrapped where it wraps) plus `pad`, or 0 for a missing or
    empty text."""
    if text is None or not text.get_visible() or not text.get_text():
        return 0.0
    return text.get_window_extent(renderer).height + pad


def _legend_width(figure: Any, axes: list[Any], renderer: Any) -> float:
    """Room that legends the layout does not plan need at the right: a figure legend, or
    a legend of your own beside the axes."""
    pad = renderer.points_to_pixels(PAD_PT)
    # A figure legend sits at the edge, inset by its border pad: keep a gap to the axes.
    widths = [legend.get_window_extent(renderer).width + pad for legend in figure.legends]
    for ax in axes:  # anchored just right of the axes, as `legend.add_legend` does
        legend = ax.get_legend()
        if legend is not None and not is_planned(legend):
            widths.append(legend.get_window_extent(renderer).width + 0.01 * figure.bbox.width)
    return max(widths, default=0.0)


def _time_axis_height(ax: Any, renderer: Any) -> float:
    """Tick labels and the axis label under the bottom panel (tick labels in the rc font:
    asking the axis for its labels would compute every tick, the cost this engine avoids)."""
    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties

    points = renderer.points_to_pixels
    font = FontProperties(size=rcParams["xtick.labelsize"])
    _, text_height, descent = renderer.get_text_width_height_descent("0", font, ismath=False)
    ticks = points(rcParams["xtick.major.size"] + rcParams["xtick.major.pad"])
    return (
        ticks
        + text_height
        + descent
        + _text_height(ax.xaxis.label, renderer, points(ax.xaxis.labelpad))
    )


def x_pixels_per_unit(ax: Any) -> float:
    """Screen pixels per data unit (ms) along the time axis, at the current zoom."""
    (x0, _), (x1, _) = ax.transData.transform([(0.0, 0.0), (1.0, 0.0)])
    return abs(x1 - x0)
