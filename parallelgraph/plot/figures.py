"""Figures without pyplot where that is right, with it where a user expects it: the backend glue
(scripts, ipympl, notebooks) and the figure sizes every plot shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .layout import (
    timeline_layout,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


ROW_INCHES, SUB_ROW_INCHES, FIGURE_WIDTH = 0.42, 0.24, 11.0


# -- figures --------------------------------------------------------------------------------
def new_figure(
    rows: int,
    width: float = FIGURE_WIDTH,
    layout: Any = None,
    sub_rows: int = 0,
    extra_inches: float = 0.0,
) -> Figure:
    """A Figure with an Agg canvas, sized for `rows` lanes and `sub_rows` extra rows of nested
    events (drawn less tall), plus `extra_inches` (a memory panel); `layout`: a matplotlib
    layout (default: the timeline layout, see `layout`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = 1.3 + rows_inches(rows, sub_rows) + extra_inches
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


def rows_inches(rows: int, sub_rows: int) -> float:
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
