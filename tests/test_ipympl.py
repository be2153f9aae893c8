"""Timelines under `%matplotlib widget` (ipympl): one figure per plot, a canvas that fits its
cell, wheel and keyboard zoom, hover.

Two halves. In this process, with pyplot switched to ipympl's backend, the canvas is driven
through ipympl's own message path (`Canvas._handle_message`, what the browser sends): a fit
request, wheel notches, keys, mouse moves. In a real kernel (nbclient), notebooks under
`%matplotlib widget` and under the inline default show each plot exactly once. The browser
half (the fitting script, bounding boxes in JupyterLab) is in tests/test_browser.py.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest

ipympl = pytest.importorskip("ipympl.backend_nbagg")

import parallelgraph as pg  # noqa: E402
from parallelgraph.plot import figures, zoom  # noqa: E402
from parallelgraph.recorded import framework_trace  # noqa: E402

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def widget_backend():
    """pyplot on ipympl's backend for the test, as `%matplotlib widget` leaves it."""
    import matplotlib.pyplot as plt

    previous = plt.get_backend()
    plt.switch_backend("module://ipympl.backend_nbagg")
    try:
        yield plt
    finally:
        plt.close("all")
        plt.switch_backend(previous)


def send(canvas, kind: str, **fields) -> None:
    """One message from the browser's view of `canvas`, as ipympl's front end sends it."""
    message = {"type": kind, "guiEvent": None, **fields}
    canvas._handle_message(canvas, message, [])


def mouse(canvas, kind: str, x: float, y: float, buttons: int = 0, **fields) -> None:
    """A mouse message at display point (x, y) (the browser counts y from the top)."""
    height = canvas.get_renderer().height
    send(canvas, kind, x=x, y=height - y, button=0, buttons=buttons, modifiers=[], **fields)


def test_a_widget_timeline_is_a_fittable_ipympl_canvas(widget_backend):
    figure = framework_trace("pytorch-eager").plot()
    canvas = figure.canvas
    assert isinstance(canvas, ipympl.Canvas) and canvas.toolbar is not None
    assert canvas.toolbar_position == "right" and not canvas.header_visible
    assert canvas.capture_scroll  # the wheel zooms instead of scrolling the notebook
    assert canvas.parallelgraph_fit_class in canvas._dom_classes
    assert figure.bbox.width == pytest.approx(figures.CANVAS_WIDTH_PX)
    assert widget_backend.gcf() is figure  # pyplot's current figure: plt.savefig() sees it
    bundle = figures.fit_bundle(canvas)
    assert canvas.parallelgraph_fit_class in bundle["text/html"] and bundle["text/plain"] == ""


@pytest.mark.parametrize("width", [640, 420, 1500])
def test_a_fit_request_resizes_the_canvas_and_keeps_the_legend_inside(widget_backend, width):
    """What the fitting script asks through ipympl's key channel: the figure becomes `width`
    CSS pixels wide, as tall as before, and the legend stays inside it, right of the chart."""
    figure = pg.plot.compare(framework_trace("pytorch-eager"), framework_trace("pytorch-eager"))
    canvas = figure.canvas
    height = figure.bbox.height
    send(canvas, "key_press", key=f"kpg-fit:{width}")
    assert (figure.bbox.width, figure.bbox.height) == pytest.approx((width, height))
    assert canvas._size == pytest.approx((width, height))  # what the front end is told
    canvas.draw()
    renderer = canvas.get_renderer()
    legend = figure.axes[0].get_legend()  # the scope legend, on the top panel
    box = legend.get_window_extent(renderer)
    right_of_charts = max(ax.get_window_extent(renderer).x1 for ax in figure.axes)
    assert right_of_charts <= box.x0 and box.x1 <= width
    ticks = figure.axes[-1].get_xticklabels()
    assert all(t.get_window_extent(renderer).x1 <= width for t in ticks if t.get_text())
    send(canvas, "key_press", key="kpg-fit:5")  # a silly request is clamped
    assert figure.bbox.width == pytest.approx(figures.FIT_MIN_PX)


def test_the_wheel_and_keys_zoom_through_ipympl_and_hover_still_finds_the_op(widget_backend):
    trace = framework_trace("pytorch-eager")
    figure = trace.plot()
    canvas = figure.canvas
    canvas.draw()
    ax = figure.axes[0]
    bars = ax.parallelgraph_bars
    widest = max(range(len(bars.events)), key=lambda i: bars.right[i] - bars.left[i])
    x_ms = (bars.left[widest] + bars.right[widest]) / 2
    x, y = ax.transData.transform((x_ms, bars.y[widest]))
    lo, hi = ax.get_xlim()
    mouse(canvas, "scroll", x, y, step=1)
    mouse(canvas, "scroll", x, y, step=1)
    new_lo, new_hi = ax.get_xlim()
    assert new_hi - new_lo == pytest.approx((hi - lo) / zoom.WHEEL_FACTOR**2)
    assert ax.transData.transform((x_ms, 0))[0] == pytest.approx(x)  # still under the pointer
    canvas.draw()
    mouse(canvas, "motion_notify", x, y)  # hover after the zoom: the same op
    tooltip = ax.parallelgraph_tooltip
    assert tooltip.get_visible() and tooltip.get_text().startswith(bars.events[widest].name)
    send(canvas, "key_press", key="k-")
    send(canvas, "key_release", key="k-")
    assert ax.get_xlim()[1] - ax.get_xlim()[0] == pytest.approx((new_hi - new_lo) * zoom.KEY_FACTOR)
    canvas.toolbar.home()  # the view before the first zoom was kept: Home goes back to it
    assert ax.get_xlim() == pytest.approx((lo, hi))


def test_an_arrow_pans_and_is_not_also_the_toolbars_back(widget_backend):
    """matplotlib binds the left arrow to Back: after a toolbar zoom, Back would undo it."""
    figure = framework_trace("pytorch-eager").plot()
    canvas = figure.canvas
    canvas.draw()
    ax = figure.axes[0]
    canvas.toolbar.zoom()  # a rubber-band zoom with the toolbar: the navigation stack fills
    x0, y0 = ax.transAxes.transform((0.2, 0.5))
    x1, y1 = ax.transAxes.transform((0.6, 0.6))
    home = ax.get_xlim()
    mouse(canvas, "button_press", x0, y0, buttons=1)
    mouse(canvas, "motion_notify", x1, y1, buttons=1)
    mouse(canvas, "button_release", x1, y1)
    canvas.toolbar.zoom()
    lo, hi = ax.get_xlim()
    assert hi - lo == pytest.approx(0.4 * (home[1] - home[0]), rel=0.05)
    send(canvas, "key_press", key="kArrowLeft")
    shift = (hi - lo) * zoom.PAN_FRACTION
    assert ax.get_xlim() == pytest.approx((lo - shift, hi - shift))
    send(canvas, "key_release", key="kArrowLeft")
    send(canvas, "key_press", key="kh")  # other keys still reach matplotlib: h is Home
    assert ax.get_xlim() == pytest.approx(home)


# -- in a real kernel -----------------------------------------------------------------------
def executed(cells: list[str], path) -> list[list[dict]]:
    """Run `cells` in a fresh kernel; the outputs of each cell."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path)}}
    )
    client.comm_open_handlers = {}  # avoids the nbclient#312 stall with widgets under load
    client.execute()
    return [cell.outputs for cell in notebook.cells]


def kinds(outputs: list[dict]) -> list[str]:
    """What each output is: "canvas", "png", "fit script" or its output type."""
    found = []
    for output in outputs:
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            found.append("canvas")
        elif "image/png" in data:
            found.append("png")
        elif "pg-fit-script" in data.get("text/html", ""):
            found.append("fit script")
        else:
            found.append(output["output_type"])
    return found


SETUP = (
    "import matplotlib.pyplot as plt\nimport parallelgraph as pg\n"
    "from parallelgraph.recorded import framework_trace\n"
    "trace = framework_trace('pytorch-eager')"
)


def test_under_matplotlib_widget_each_plot_shows_one_canvas_and_no_png(tmp_path):
    cells = [
        "%matplotlib widget",
        SETUP,
        "trace.plot()",  # the cell's value
        "pg.plot.compare(trace, trace)",
        "figure = trace.plot()",  # not the value: pyplot shows it at the end of the cell
        "trace.plot(); plt.savefig('saved.png')",  # pyplot's current figure
        "fig, ax = plt.subplots()\ntrace.plot(ax=ax)",  # the user's own figure
        "plt.ioff()\nquiet = trace.plot()",  # pyplot shows nothing after ioff ...
        "quiet",  # ... until asked
    ]
    outputs = executed(cells, tmp_path)
    for source, shown in zip(cells[2:], outputs[2:]):
        expected = [] if source.startswith("plt.ioff") else ["fit script", "canvas"]
        if source.startswith("fig, ax"):
            expected = ["canvas"]  # not made by us: no fitting script, but shown once
        assert kinds(shown) == expected, source
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "saved.png")
    assert (image[..., :3] < 0.9).mean() > 0.02  # the timeline, not a blank page


def test_the_inline_backend_still_shows_one_png_per_plot(tmp_path):
    outputs = executed([SETUP, "trace.plot()", "pg.plot.compare(trace, trace)", "f = trace.plot()"],
                       tmp_path)  # fmt: skip
    assert [kinds(shown) for shown in outputs[1:]] == [["png"], ["png"], []]
    png = base64.b64decode(outputs[1][0]["data"]["image/png"])
    from PIL import Image

    assert Image.open(io.BytesIO(png)).width == 1100  # 11 in at 100 dpi, as before


def test_the_onnx_dashboards_comparison_picture_leaves_no_figure_to_pyplot(widget_backend):
    """The comparison is drawn in the button's thread into a PNG; under `%matplotlib widget`
    its figure was left to pyplot, which would show it once more, as a canvas, under a later
    cell (a canvas of a figure already drawn and re-canvased for the PNG)."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("onnx")
    from matplotlib._pylab_helpers import Gcf

    from parallelgraph.recorded import framework_trace

    class Comparison:  # what `compare_onnxruntime` returns, without measuring anything
        difference = 0.0

        def plot(self, inter: int, intra: int):
            trace = framework_trace("pytorch-eager")
            return pg.plot.compare(trace, trace, labels=["parallelgraph", "ONNX Runtime"])

        def __str__(self) -> str:
            return "measured"

    model = Path(__file__).parent / "fixtures" / "onnx" / "ensemble.onnx"
    dash = pg.dashboard(str(model), compare_repeats=1)
    try:
        dash.model.compare_onnxruntime = lambda *args, **options: Comparison()
        dash.compare()
        assert dash.wait_compare(60) is not None, dash.compare_text.value
        assert bytes(dash.compare_picture.value).startswith(b"\x89PNG")
        assert not Gcf.get_all_fig_managers()  # nothing for pyplot to show again
    finally:
        dash.close()
