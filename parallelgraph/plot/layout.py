"""A layout engine for timeline figures: margins from a few text measurements.

matplotlib's constrained layout asks every axes for its tight bounding box, which lays out and
measures every tick label of every axis, and then the draw does it all again: on a two-panel
`compare` that was nearly half of a redraw (benchmarks/plot_speed.py), the largest single cost
of a dashboard update.
Timeline figures have a fixed shape, so their margins follow from a handful of texts:

- left: the widest lane name (y tick labels) of any panel, names shortened by `short_name`
  (hex ids elided, the middle of a long name cut) so that the chart keeps most of the width;
- right: the legend's width (a legend beside the axes or a figure legend at the right edge);
- top: the figure title and the first panel's title;
- bottom: the time axis' tick labels and its label;
- between panels: the next panel's title (panels share the time axis, so upper panels have no
  tick labels).

`TimelineLayout.execute` measures those with the renderer and calls `subplots_adjust`, so it
runs at every draw like any layout engine (a resized canvas gets new margins) and costs a few
milliseconds. It lays out a single column of subplots, which is what `gantt` and `compare`
make; axes added by hand (`figure.add_axes`) keep the place they were given, and a grid of
several columns is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

# Vertical geometry inside a timeline row (rows are 1 data unit apart, the y axis points down):
# op bars fill most of the row, shards the lower part.
OP_TOP, OP_BOTTOM = -0.38, 0.38
SHARD_TOP, SHARD_BOTTOM = 0.04, 0.36

#: Lane names and legend entries longer than this are shortened (the unique part kept), so
#: the chart keeps most of the figure's width whatever a profiler calls its threads.
MAX_LANE_CHARS, MAX_LEGEND_CHARS = 28, 14
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
            axes = [ax for ax in figure.axes if ax.get_subplotspec() is not None]
            if axes and _columns(axes) == 1:  # axes placed by hand keep their place
                figure.subplots_adjust(**_margins(figure, axes))

    _LAYOUT_CLASS = TimelineLayout
    return TimelineLayout


_LAYOUT_CLASS: type | None = None


def _columns(axes: list[Any]) -> int:
    return axes[0].get_subplotspec().get_gridspec().ncols


def _margins(figure: Any, axes: list[Any]) -> dict[str, float]:
    """subplots_adjust arguments (figure fractions) for `axes`, one column, top to bottom."""
    renderer = figure._get_renderer()  # as matplotlib's own engines do (any backend)
    points = renderer.points_to_pixels
    width_px, height_px = figure.bbox.width, figure.bbox.height
    pad = points(PAD_PT)
    axes = sorted(axes, key=lambda ax: -ax.get_position().y1)

    left = pad + max(_widest_tick_label(ax, renderer) for ax in axes) + points(TICK_PAD_PT)
    right = pad + _legend_width(figure, axes, renderer)
    if figure._suptitle is not None:  # pinned to the top edge, where the margin expects it
        figure._suptitle.set_y(1 - pad / height_px)
        figure._suptitle.set_verticalalignment("top")
    top = pad + _text_height(figure._suptitle, renderer, pad)
    top += _title_height(axes[0], renderer, pad)
    bottom = pad + _time_axis_height(axes[-1], renderer)
    gap = max((_title_height(ax, renderer, pad) for ax in axes[1:]), default=0.0) + pad

    left_fraction = min(left / width_px, 0.45)
    right_fraction = max(1 - right / width_px, left_fraction + 0.1)
    top_fraction = 1 - min(top / height_px, 0.45)
    bottom_fraction = min(bottom / height_px, top_fraction - 0.1)
    available = (top_fraction - bottom_fraction) * height_px
    panels = len(axes)
    mean_height = max((available - (panels - 1) * gap) / panels, 1.0)
    return {
        "left": left_fraction,
        "right": right_fraction,
        "top": top_fraction,
        "bottom": bottom_fraction,
        "hspace": gap / mean_height if panels > 1 else 0.0,
    }


def _widest_tick_label(ax: Any, renderer: Any) -> float:
    labels = [t for t in ax.yaxis.get_ticklabels() if t.get_visible() and t.get_text()]
    return max((_text_width(t, renderer) for t in labels), default=0.0)


def _text_width(text: Any, renderer: Any) -> float:
    width, _, _ = renderer.get_text_width_height_descent(
        text.get_text(), text.get_fontproperties(), ismath=False
    )
    return width


def _title_height(ax: Any, renderer: Any, pad: float) -> float:
    """The tallest of the axes' three titles (left, centre, right)."""
    titles = (ax.title, ax._left_title, ax._right_title)
    return max(_text_height(title, renderer, pad) for title in titles)


def _text_height(text: Any, renderer: Any, pad: float) -> float:
    """Height of one line of `text` plus `pad`, or 0 for a missing or empty text."""
    if text is None or not text.get_visible() or not text.get_text():
        return 0.0
    lines = text.get_text().count("\n") + 1
    _, height, descent = renderer.get_text_width_height_descent(
        "Ag", text.get_fontproperties(), ismath=False
    )
    return lines * height * 1.2 + descent + pad


def _legend_width(figure: Any, axes: list[Any], renderer: Any) -> float:
    """Room the legends at the right need: a figure legend, or legends beside the axes."""
    pad = renderer.points_to_pixels(PAD_PT)
    # A figure legend sits at the edge, inset by its border pad: keep a gap to the axes.
    widths = [legend.get_window_extent(renderer).width + pad for legend in figure.legends]
    for ax in axes:  # anchored just right of the axes (see gantt._draw_legend)
        legend = ax.get_legend()
        if legend is not None:
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
