"""Where the dashboard's timeline is drawn: a PNG in an `Image` widget, or an ipympl canvas.

The timeline is interactive where the front end allows it: under a Jupyter kernel with ipympl
installed (`live_canvas_possible`), the figure gets an ipympl canvas (pan, zoom, and the hover
tooltip `plot.gantt` attaches); elsewhere (scripts, tests, no ipympl) it is a PNG in one
`Image` widget whose bytes are replaced, so the page never jumps. `timeline="png"` or
`"interactive"` chooses explicitly.

The plots' own backend glue (which figure pyplot owns, the canvas that fits its cell, the
display hook) is `parallelgraph.plot.figures`; this module reads what it can from there (the
running shell, the room ipympl's toolbar needs) and adds only what a dashboard does that a plot
does not: it makes the canvas itself (a figure drawn without pyplot), replaces it run after
run in an `Output` widget (fitted to its cell by the plots' own fitting script, and given the
timeline's zoom keys), and encodes a PNG once per run, fast.

Nothing here imports ipywidgets, ipympl or matplotlib until a function is called.
"""

from __future__ import annotations

import io
from typing import Any

from ..plot.figures import TOOLBAR_ROOM_PX, _shell, fit_output

#: The resolution of the timeline's PNG.
PNG_DPI = 100
#: The interactive canvas has a fixed size in pixels (a PNG scales down with the panel, a
#: canvas does not): draw it at a resolution that fits a notebook cell of JupyterLab.
CANVAS_WIDTH_PX = 840
#: Room to the right of the canvas for ipympl's toolbar, which floats over the figure's right
#: edge (where the legend is) unless the widget leaves it a margin of its own.
TOOLBAR_ROOM = f"0 {TOOLBAR_ROOM_PX}px 0 0"


def live_canvas_possible() -> bool:
    """Whether figures can be live ipympl canvases: a Jupyter kernel and ipympl installed."""
    import importlib.util

    if importlib.util.find_spec("ipympl") is None:
        return False
    shell = _shell()
    return shell is not None and getattr(shell, "kernel", None) is not None


def figure_png(figure: Any, dpi: int = PNG_DPI) -> bytes:
    """Render a figure once and encode it as PNG (fast compression: it is sent, not archived).

    One `canvas.draw()` runs the layout engine and draws; `savefig` would draw a second time.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    figure.set_dpi(dpi)
    # A plain Agg canvas (not an interactive one, which would also send the picture).
    canvas = figure.canvas if type(figure.canvas) is FigureCanvasAgg else FigureCanvasAgg(figure)
    canvas.draw()
    image = Image.frombuffer(
        "RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
    )
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def ipympl_canvas(figure: Any) -> Any:
    """An ipympl canvas (with its toolbar) for a figure made without pyplot."""
    from ipympl.backend_nbagg import Canvas, FigureManager

    canvas = Canvas(figure)
    FigureManager(canvas, 0)
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.resizable = False
    canvas.toolbar_position = "right"  # beside the figure, never over the lane names
    canvas.layout.padding = TOOLBAR_ROOM  # ... nor over the legend
    canvas.add_class("pg-canvas")
    zoom = getattr(figure, "parallelgraph_zoom", None)  # `plot.zoom`, added by the gantt
    if zoom is not None:  # the new manager binds the arrows to Back/Forward: ours pan
        zoom.take_default_keys(canvas)
    return canvas


def fitted_outputs(canvas: Any) -> tuple[dict[str, Any], ...]:
    """The output-area entries that show an ipympl `canvas` at the width of its cell, and
    follow it when the cell is resized: the canvas, and the fitting script of
    `plot.figures.fit_output` (the one fitting rule of every parallelgraph canvas)."""
    return (widget_output(canvas), fit_output(canvas))


def leave_pyplot(figure: Any) -> None:
    """Under `%matplotlib widget` the timeline's figure is made by pyplot, which would keep it
    (one more open figure per run) and show it again below the cell; the dashboard shows it
    itself, so pyplot lets it go (the figure stays usable)."""
    import sys

    manager = getattr(figure.canvas, "manager", None)
    if manager is None or "matplotlib.pyplot" not in sys.modules:
        return
    from matplotlib._pylab_helpers import Gcf

    if Gcf.get_fig_manager(manager.num) is manager:
        Gcf.figs.pop(manager.num, None)  # not plt.close: that would close the canvas widget
        if hasattr(figure.canvas, "close"):
            figure.canvas.close()


def widget_output(widget: Any) -> dict[str, Any]:
    """An output-area entry that shows `widget` (what `display(widget)` would append)."""
    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    return {
        "output_type": "display_data",
        "data": {"text/plain": repr(widget), "application/vnd.jupyter.widget-view+json": view},
        "metadata": {},
    }


def close_canvas(canvas: Any) -> None:
    """Close an ipympl canvas and its toolbar (their views leave the page)."""
    toolbar = getattr(canvas, "toolbar", None)
    for widget in (toolbar, canvas):
        if hasattr(widget, "close"):
            widget.close()


__all__ = [
    "CANVAS_WIDTH_PX",
    "PNG_DPI",
    "TOOLBAR_ROOM",
    "close_canvas",
    "figure_png",
    "fitted_outputs",
    "ipympl_canvas",
    "leave_pyplot",
    "live_canvas_possible",
    "widget_output",
]
