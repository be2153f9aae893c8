"""Figures without pyplot where that is right, with it where a user expects it: the backend glue
(scripts, ipympl, notebooks) and the figure sizes every plot shares.

Where a figure goes, by where it is made (`new_figure`):

- a script that imported pyplot: pyplot's current figure, so `trace.plot(); plt.savefig(...)`
  and `plt.show()` see it;
- IPython with a static backend (the inline default): a bare Figure with an Agg canvas, shown
  once, as a PNG, when it is the cell's value (never an open pyplot figure that piles up);
- IPython under `%matplotlib widget` (ipympl): a pyplot figure on an ipympl canvas that pans,
  zooms (`zoom`: the wheel and + - and the arrows) and shows the op under the mouse (`hover`).

One figure per plot under ipympl. pyplot queues every new figure to be shown (as its canvas)
when the cell ends, and a Figure that is the cell's value is displayed too: IPython registers,
for `%matplotlib widget`, a display hook for Figures meant for nbagg (`manager.reshow`), which
ipympl's manager lacks, so IPython falls back to its PNG formatter — the same plot twice, a PNG
above the canvas. `show_once` marks our figures and puts a display hook of ours in front of
IPython's (`_FigureDisplay`; it hands every figure not ours to the hook it replaced): a marked
figure shows its canvas, where the display happens, and leaves pyplot's queue. So
`trace.plot()` as the cell's value shows its canvas once, in its place; a plot that is not the
value (`fig = trace.plot()`) is shown once by pyplot at the end of the cell; after `plt.ioff()`
only an explicit display shows it. A plain inline backend is untouched: one PNG per plot that
is the cell's value, as before.

The canvas fits its cell. ipympl sizes a canvas from the figure (inches x dpi) and has no
notion of the width around it (matplotlib/ipympl#297 and #431 are open), so a 1100 px figure
in a 960 px cell lost its legend and the end of its time axis. A widget figure therefore starts
`CANVAS_WIDTH_PX` wide at the figure's dpi (text keeps its size in pixels), and each time its
canvas is displayed a small script goes with it (an HTML output: JupyterLab runs the scripts
of outputs it trusts, that is of outputs made in this session; a notebook opened from disk
runs none, and its canvas keeps its size). The script finds the canvas' view by a class unique
to the figure, measures the output area it sits in, and asks the kernel for a canvas that
leaves `TOOLBAR_ROOM_PX` (ipympl's toolbar, on the right, floats there) and the canvas' frame
free; a `ResizeObserver` asks again whenever that width changes (a window or sidebar resized).
The request goes through ipympl's own key channel (a key event "pg-fit:<pixels>" on the
canvas), which reaches `_fit_on_key` as a matplotlib `key_press_event`; that resizes the
figure the way ipympl's resize handle does (`handle_resize`: width from the request, the
height kept), and the timeline's layout engine recomputes the margins at the next draw, so the
legend stays inside at any width. The resize handle still works by hand.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from .layout import (
    timeline_layout,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


ROW_INCHES, SUB_ROW_INCHES, FIGURE_WIDTH = 0.42, 0.24, 11.0

#: Width of a new ipympl canvas, before its cell's width is known (a JupyterLab cell beside
#: the file browser, on a 1400 px window, has 968 px for outputs).
CANVAS_WIDTH_PX = 860
#: Room the fitted canvas leaves at its right for ipympl's toolbar (a column of 36 px buttons,
#: 3 px from the edge), and the canvas' frame (2 px margins of its container and its div).
TOOLBAR_ROOM_PX, CANVAS_FRAME_PX = 44, 8
#: The narrowest and widest canvas a fit asks for, in CSS pixels.
FIT_MIN_PX, FIT_MAX_PX = 360, 2400
FIT_KEY = re.compile(r"pg-fit:(\d{1,5})")


# -- figures --------------------------------------------------------------------------------
def new_figure(
    rows: int,
    width: float = FIGURE_WIDTH,
    layout: Any = None,
    sub_rows: int = 0,
    extra_inches: float = 0.0,
) -> Figure:
    """A Figure sized for `rows` lanes and `sub_rows` extra rows of nested events (drawn less
    tall), plus `extra_inches` (a memory panel), `width` inches wide (a widget canvas: at most
    CANVAS_WIDTH_PX, then fitted to its cell); `layout`: a matplotlib layout (default: the
    timeline layout, see `layout`). Where it goes: the module docstring."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = 1.3 + rows_inches(rows, sub_rows) + extra_inches
    if _widget_backend():  # %matplotlib widget: an ipympl canvas you can pan, zoom and hover
        import matplotlib
        import matplotlib.pyplot as plt

        width = min(width, CANVAS_WIDTH_PX / matplotlib.rcParams["figure.dpi"])
        figure = plt.figure(figsize=(width, height), layout=layout or timeline_layout())
        fit_to_cell(figure.canvas)
        show_once(figure)
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


def _on_widget_canvas(figure: Any) -> bool:
    return type(figure.canvas).__module__.startswith("ipympl")


# -- one figure per plot --------------------------------------------------------------------
def show_once(figure: Any) -> None:
    """Under ipympl, make `figure` display as its canvas, once (see the module docstring);
    elsewhere do nothing. `gantt` calls it on every figure it draws on, yours too."""
    if not _on_widget_canvas(figure):
        return
    figure.parallelgraph_show_once = True
    shell = _shell()
    if shell is None:
        return
    from matplotlib.figure import Figure

    hooks = shell.display_formatter.ipython_display_formatter
    try:
        current = hooks.lookup_by_type(Figure)
    except KeyError:
        current = None
    if not isinstance(current, _FigureDisplay):  # `%matplotlib widget` again puts IPython's back
        hooks.for_type(Figure, _FigureDisplay(current))


class _FigureDisplay:
    """IPython's display hook for Figures: ours on ipympl shown by `_display_canvas`, any other
    handed to the hook this one replaced (or, raising NotImplementedError, to IPython's
    formatters, which is what IPython does when a hook declines)."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, figure: Any) -> None:
        if getattr(figure, "parallelgraph_show_once", False) and _on_widget_canvas(figure):
            _display_canvas(figure)
        elif self.previous is not None:
            self.previous(figure)
        else:
            raise NotImplementedError


def _display_canvas(figure: Any) -> None:
    """Display `figure` as its canvas, which pyplot then no longer shows at the end of the
    cell, and the fitting script with it (for canvases made by `new_figure`: a figure of your
    own keeps the size you gave it)."""
    from IPython.display import display

    backend = getattr(_ipympl_module(), "_Backend_ipympl", None)
    waiting = getattr(backend, "_to_show", None)
    if isinstance(waiting, list) and figure in waiting:
        waiting.remove(figure)
    canvas = figure.canvas
    before = getattr(canvas, "parallelgraph_fit_scripts", 0)
    display(canvas)
    fittable = getattr(canvas, "parallelgraph_fit_class", None)
    if fittable and getattr(canvas, "parallelgraph_fit_scripts", 0) == before:  # no hook call
        _display_fit_script(canvas)


def _shell() -> Any:
    """The running IPython shell, or None (without importing IPython)."""
    import sys

    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def _ipympl_module() -> Any:
    import sys

    return sys.modules.get("ipympl.backend_nbagg")


# -- a canvas that fits its cell ------------------------------------------------------------
def fit_to_cell(canvas: Any) -> None:
    """Make an ipympl `canvas` fit the width of the output area it is displayed in, and follow
    it (module docstring): its toolbar on the right, no header, the wheel kept from scrolling
    the page (it zooms), a class naming its view, the fitting script sent with each display,
    and the figure's handler for the script's requests. Idempotent."""
    if getattr(canvas, "parallelgraph_fit_class", None):
        return
    figure = canvas.figure
    canvas.header_visible = False
    canvas.toolbar_position = "right"  # beside the figure, in the room the fit leaves
    canvas.capture_scroll = True  # the wheel zooms the timeline instead of scrolling the page
    canvas.parallelgraph_fit_class = f"pg-fit-{canvas.model_id}"  # unique, as the widget
    canvas.add_class(canvas.parallelgraph_fit_class)
    canvas._handle_displayed = functools.partial(_on_displayed, canvas)  # ipympl's hook
    if not getattr(figure, "parallelgraph_fits", False):
        figure.canvas.mpl_connect("key_press_event", _fit_on_key)
        figure.parallelgraph_fits = True


def fit_output(canvas: Any) -> dict[str, Any]:
    """An output-area entry (what `display` would append) holding the fitting script of an
    ipympl `canvas` (made fittable first): put it in the output area that shows the canvas,
    e.g. an `ipywidgets.Output`'s `outputs`, beside the canvas' own entry."""
    fit_to_cell(canvas)
    return {"output_type": "display_data", "data": fit_bundle(canvas), "metadata": {}}


def fit_bundle(canvas: Any) -> dict[str, str]:
    """The fitting script of `canvas` as a display bundle: HTML, no text (nothing to read)."""
    config = {
        "cls": canvas.parallelgraph_fit_class,
        "room": TOOLBAR_ROOM_PX + CANVAS_FRAME_PX,
        "least": FIT_MIN_PX,
        "most": FIT_MAX_PX,
    }
    script = _FIT_SCRIPT.replace("__CONFIG__", json.dumps(config))
    return {"text/html": f'<div class="pg-fit-script" hidden></div><script>{script}</script>',
            "text/plain": ""}  # fmt: skip


def _on_displayed(canvas: Any, **_: Any) -> None:
    _display_fit_script(canvas)


def _display_fit_script(canvas: Any) -> None:
    from IPython.display import display

    canvas.parallelgraph_fit_scripts = getattr(canvas, "parallelgraph_fit_scripts", 0) + 1
    display(fit_bundle(canvas), raw=True)


def _fit_on_key(event: Any) -> None:
    """A fitting script's request ("pg-fit:<CSS pixels>", ipympl's key channel): resize the
    figure to that width as ipympl's resize handle would, keeping its height."""
    match = FIT_KEY.fullmatch(event.key or "")
    canvas = event.canvas
    if match is None or not hasattr(canvas, "handle_resize"):
        return
    width = min(max(int(match[1]), FIT_MIN_PX), FIT_MAX_PX)
    ratio = getattr(canvas, "device_pixel_ratio", 1) or 1
    height = round(canvas.figure.bbox.height / ratio)
    if abs(canvas.figure.bbox.width / ratio - width) >= 1:
        canvas.handle_resize({"width": width, "height": height})


#: Runs in the browser, next to the canvas' view (see the module docstring). __CONFIG__: the
#: view's class, the room to leave, the narrowest and widest canvas.
_FIT_SCRIPT = """(() => {
  const config = __CONFIG__;
  const script = document.currentScript;
  const scope = (script && script.closest('.jp-OutputArea')) || document;
  let view = null, sent = 0, timer = 0;
  const fit = () => {
    timer = 0;
    if (!view.isConnected) { resized.disconnect(); return; }
    const canvasDiv = view.querySelector('.jupyter-matplotlib-canvas-div');
    const host = view.parentElement;
    if (!canvasDiv || !host) return;
    const style = getComputedStyle(host);
    const inner = host.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = Math.max(config.least, Math.min(config.most, Math.floor(inner - config.room)));
    const now = Math.round(canvasDiv.getBoundingClientRect().width);
    if (width === sent || Math.abs(width - now) < 2) return;
    sent = width;
    for (const type of ['keydown', 'keyup']) {
      canvasDiv.dispatchEvent(new KeyboardEvent(type, {key: 'pg-fit:' + width}));
    }
  };
  const resized = new ResizeObserver(() => { if (!timer) timer = setTimeout(fit, 100); });
  const attach = () => {
    view = scope.querySelector('.' + config.cls) || document.querySelector('.' + config.cls);
    if (!view || !view.parentElement) return false;
    resized.observe(view.parentElement);
    resized.observe(view);
    return true;
  };
  if (!attach()) {
    const added = new MutationObserver(() => { if (attach()) added.disconnect(); });
    added.observe(scope, {childList: true, subtree: true});
    setTimeout(() => added.disconnect(), 60000);
  }
})();"""


# -- static backends ------------------------------------------------------------------------
def _show_figures_in_notebooks(figure_type: type) -> None:
    """In IPython, display a returned Figure as a PNG (our figures bypass pyplot, so the
    inline backend would not show them, and scripts never accumulate open pyplot figures)."""
    shell = _shell()
    if shell is None:
        return
    shell.display_formatter.formatters["image/png"].for_type(figure_type, _png_bytes)


def _png_bytes(figure: Any) -> bytes | None:
    """The PNG of a figure for IPython's display — none for a figure on an interactive
    widget canvas, which shows itself."""
    import io

    if _on_widget_canvas(figure):
        return None
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
