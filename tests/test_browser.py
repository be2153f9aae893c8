"""The dashboard, and a timeline under `%matplotlib widget`, in a real JupyterLab, driven by
headless Chromium.

The dashboard (`test_own_graph_dashboard_in_jupyterlab`): a notebook cell builds a
three-branch graph of its own and shows `pg.dashboard(build, ...)`; in the browser we change a
parameter (a dropdown), move the inter-op slider with the keyboard, pin a run, stop a long run
with the Stop button, and interrupt a foreground run (a cell waiting in `dash.wait()`) with
Kernel ▸ Interrupt. After each step: the status line says what happened, the buttons are in the
right state (Run and Pin enabled, Stop disabled once a run has ended) and the timeline changed.
Under a real kernel with ipympl the timeline is an ipympl canvas: "changed" means the pixels of
its canvas changed (a hash of `getImageData`), after the front end has drawn the new figure.

How (facts from /work/shared/recipes/jupyterlab-browser.md): `jupyter lab` from this Python on a
free localhost port with a random token and private Jupyter folders (config, data, runtime,
settings, workspaces), news and update checks off, notebook windowing off (every cell in the
DOM); Debian's Chromium (`/usr/bin/chromium`) driven by Playwright through `executable_path`
(never `playwright install`). The server is stopped in `finally` (SIGTERM, which shuts its
kernels down; SIGKILL after a grace period), and any kernel still alive that belongs to this
test's private runtime folder is killed by its PID.

A timeline under ipympl (`test_a_widget_timeline_fits_its_cell_zooms_and_hovers`): a cell
with `%matplotlib widget` and `trace.plot()` shows exactly one figure (one canvas, no PNG), and
the canvas fits its cell — its right edge, the toolbar's and (read back from the kernel) the
legend's inside the output area — also after the window is made narrower; the mouse wheel over
the chart zooms the time axis around the pointer without scrolling the notebook, `-` and the
right arrow zoom out and pan; hovering a bar shows its op in ipympl's read-out and the tooltip.
The kernel's side is read by a second client of the notebook's own kernel (jupyter_client on
its connection file, found through the server's sessions API), so reading never moves the
mouse or runs a cell in the page.

Screenshots go to the test's tmp folder (the path is printed and recorded as a property);
with PARALLELGRAPH_UPDATE_SCREENSHOTS=1 the dashboard after the pin and the zoomed ipympl
timeline are also saved, reduced, as docs/dashboard.png and docs/ipympl_timeline.png. One
JupyterLab serves both tests (each opens its notebook in its own workspace). Without Chromium,
Playwright, JupyterLab or ipympl the tests are skipped, saying which is missing.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_NAME = "own_graph_dashboard.ipynb"
#: The notebook the test opens: the first cell is a user's own graph in the dashboard; the
#: second is a foreground run (a cell that waits), run later and interrupted.
OWN_GRAPH_CELL = """\
import parallelgraph as pg


def three_branches(batch=512, width=256, layers=2):
    outputs = []
    for index in range(3):
        with pg.scope(f"branch{index}"):
            x = pg.random_normal((batch, width), seed=index)
            for layer in range(layers):
                x = pg.tanh(pg.matmul(x, pg.variable((width, width), name=f"w{layer}")))
            outputs.append(x)
    return pg.add_n(outputs, name="out")


dash = pg.dashboard(
    three_branches, width=[64, 128, 256], layers=(1, 400), inter_op_threads=1, repeats=6
)
dash.run()
dash
"""
FOREGROUND_CELL = "dash.run()\ndash.wait()  # a foreground run: Kernel > Interrupt ends it"
WIDGET_NOTEBOOK_NAME = "widget_timeline.ipynb"
#: The ipympl notebook: the backend and a recorded trace, then the plot as the cell's value.
WIDGET_CELLS = [
    "%matplotlib widget\nimport parallelgraph as pg\n"
    "from parallelgraph.recorded import framework_trace\n\n"
    "trace = framework_trace('pytorch-eager')",
    "trace.plot()",
    "# Room below the timeline, so that the notebook can scroll:\n" + "#\n" * 60,
]
#: Run in the notebook's kernel by a second client: where things are on the canvas, in CSS
#: pixels from its top-left corner, and what the timeline shows. It never draws (a draw here
#: would send the front end an image it did not ask for, and ipympl's diff frames then race;
#: matplotlib's draw_without_rendering clears the canvas' buffer): the legend's place is read
#: from the last draw, and only once the figure is not stale (drawn at its current size); so
#: are the places of the axes and bars on screen to be trusted only then.
PROBE = """
import json as _json
import matplotlib.pyplot as _plt
_figure = _plt.gcf()
_ax = _figure.axes[0]
_ratio, _height = _figure.canvas.device_pixel_ratio, _figure.bbox.height
def _css(box):
    return [box.x0 / _ratio, (_height - box.y1) / _ratio,
            box.x1 / _ratio, (_height - box.y0) / _ratio]
_bars = _ax.parallelgraph_bars
_lo, _hi = _ax.get_xlim()
_seen = [i for i in range(len(_bars.events)) if _bars.right[i] > _lo and _bars.left[i] < _hi]
_i = max(_seen, key=lambda i: min(_bars.right[i], _hi) - max(_bars.left[i], _lo))
_x = (max(_bars.left[_i], _lo) + min(_bars.right[_i], _hi)) / 2
_px, _py = _ax.transData.transform((_x, _bars.y[_i]))
_tip = _ax.parallelgraph_tooltip
print(_json.dumps({
    "stale": bool(_figure.stale), "width": _figure.bbox.width / _ratio, "xlim": [_lo, _hi],
    "axes": _css(_ax.get_window_extent()),
    "legend": None if _figure.stale else _css(_ax.get_legend().get_window_extent()),
    "bar": [_px / _ratio, (_height - _py) / _ratio], "name": _bars.events[_i].name,
    "tooltip": [bool(_tip.get_visible()), _tip.get_text()],
}))
"""
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_S = 90
FIRST_RUN_S = 120  # imports and the first run take ~5 s on 2 idle cores
RERUN_S = 60
SCREENSHOT_WIDTH = 900

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"no Chromium at {CHROMIUM}: install Debian's `chromium` (apt-get install "
        "chromium; `make test` does it as root) to run the JupyterLab browser test",
    ),
]
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the Python package `playwright` is not installed"
)
pytest.importorskip("jupyterlab", reason="the Python package `jupyterlab` is not installed")
pytest.importorskip("ipywidgets", reason="the Python package `ipywidgets` is not installed")
pytest.importorskip("ipympl", reason="the Python package `ipympl` is not installed")


# -- the server -----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_lab_settings(settings: Path) -> None:
    """No news toast, no update check; windowing off so every cell is in the DOM."""
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for name, content in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))


def wait_until_up(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({process.returncode}):\n{log.read_text()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        time.sleep(0.25)
    raise RuntimeError(
        f"jupyter lab did not answer {url} in {SERVER_START_S} s:\n{log.read_text()}"
    )


def stop_server(process: subprocess.Popen, runtime: Path) -> None:
    """SIGTERM (the server shuts its kernels down), SIGKILL if it lingers, then kill any
    kernel started from this test's private runtime folder (its connection file is there)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    for pid in pids_mentioning(str(runtime)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pids_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains `text` (a path unique to this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            with contextlib.suppress(OSError):
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
    return found


def write_notebook(path: Path, sources: list[str]) -> None:
    import nbformat

    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on a free port serving the tests' notebooks; yields (base_url, token,
    its runtime folder, where the kernels' connection files are)."""
    tmp_path = tmp_path_factory.mktemp("lab")
    notebooks, private = tmp_path / "notebooks", tmp_path / "jupyter"
    notebooks.mkdir()
    write_notebook(notebooks / NOTEBOOK_NAME, [OWN_GRAPH_CELL, FOREGROUND_CELL])
    write_notebook(notebooks / WIDGET_NOTEBOOK_NAME, WIDGET_CELLS)
    folders = {name: private / name for name in ("config", "data", "runtime", "settings", "ws")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    write_lab_settings(folders["settings"])
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the kernel runs as a user's would
    env.update(
        JUPYTER_CONFIG_DIR=str(folders["config"]),
        JUPYTER_DATA_DIR=str(folders["data"]),
        JUPYTER_RUNTIME_DIR=str(folders["runtime"]),
    )
    port, token = free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={notebooks}",
        "--allow-root",
        f"--LabApp.user_settings_dir={folders['settings']}",
        f"--LabApp.workspaces_dir={folders['ws']}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as log_file:
        process = subprocess.Popen(
            command, cwd=notebooks, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(f"{base}/api/status?token={token}", process, log)
        yield base, token, folders["runtime"]
    finally:
        stop_server(process, folders["runtime"])


# -- the test -------------------------------------------------------------------------------
#: A hash of the timeline's pixels: the ipympl canvas (its first <canvas>, the image; the second
#: is the zoom rubber band), or the PNG <img> drawn onto a canvas. 0 while nothing (or only a
#: stale picture) is drawn.
TIMELINE_HASH = """() => {
    const box = document.querySelector('.pg-dashboard .pg-timeline');
    if (!box) return 0;
    let source = box.querySelector('canvas');
    if (!source) {
        const img = box.querySelector('img');
        if (!img || !img.complete || !img.naturalWidth) return 0;
        source = document.createElement('canvas');
        source.width = img.naturalWidth; source.height = img.naturalHeight;
        source.getContext('2d').drawImage(img, 0, 0);
    }
    if (!source.width || !source.height) return 0;
    const data = source.getContext('2d').getImageData(0, 0, source.width, source.height).data;
    // Every timeline has its time axis at the bottom: a picture without ink there is a stale
    // image stretched to a new size, not the new figure.
    const bottom = 4 * source.width * Math.floor(source.height * 0.9);
    let hash = 0, ink = 0, bottomInk = 0;
    for (let i = 0; i < data.length; i += 4) {
        hash = (hash * 31 + data[i] + 7 * data[i + 1] + 13 * data[i + 2]) % 1000000007;
        if (data[i] < 250 || data[i + 1] < 250 || data[i + 2] < 250) {
            ink++;
            if (i >= bottom) bottomInk++;
        }
    }
    return ink > 100 && bottomInk > 20 ? hash : 0;
}"""


def timeline_hash(page) -> int:
    return page.evaluate(TIMELINE_HASH)


def wait_for_new_timeline(page, old: int) -> int:
    """Wait until the timeline shows a drawn picture other than `old`; return its hash."""
    page.wait_for_function(
        f"old => {{ const h = ({TIMELINE_HASH})(); return h !== 0 && h !== old; }}",
        arg=old,
        timeout=RERUN_S * 1000,
    )
    figures = page.locator(".pg-dashboard .pg-timeline .jupyter-matplotlib")
    sync_api.expect(figures).to_have_count(1)  # the old figure's view is gone
    return timeline_hash(page)


def run_ended(expect, dashboard, *words: str) -> None:
    """The status says the run ended with `words`; Run and Pin enabled, Stop disabled."""
    status = dashboard.locator(".pg-status")
    for text in words:
        expect(status).to_contain_text(text, timeout=RERUN_S * 1000)
    expect(dashboard.locator("button.pg-run")).to_be_enabled()
    expect(dashboard.locator("button.pg-pin")).to_be_enabled()
    expect(dashboard.locator("button.pg-stop")).to_be_disabled()


def running_traced(page, at_least: int) -> None:
    """Wait until the status counts `at_least` traced runs (the warm-up is run 1)."""
    page.wait_for_function(
        """n => { const s = document.querySelector('.pg-dashboard .pg-status');
                  const m = s && s.textContent.match(/running (\\d+)\\//);
                  return m && Number(m[1]) >= n; }""",
        arg=at_least,
        timeout=RERUN_S * 1000,
    )


def test_own_graph_dashboard_in_jupyterlab(lab, tmp_path, record_property):
    base, token, _ = lab
    shots = tmp_path / "screenshots"
    shots.mkdir()
    record_property("screenshots", str(shots))
    print(f"screenshots in {shots}")
    expect = sync_api.expect
    timings: dict[str, float] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/workspaces/pg-browser-test/tree/{NOTEBOOK_NAME}?token={token}")

            # The notebook is open and its kernel is up.
            cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
            cells.first.wait_for()
            kernel_name = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")
            expect(kernel_name).to_have_text(re.compile("Python 3"), timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()

            # Run the first cell only: the dashboard of our own graph, and its first run.
            cells.first.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Control+Enter")
            dashboard = page.locator(".pg-dashboard")
            status = dashboard.locator(".pg-status")
            expect(status).to_contain_text("done: 6 of 6 runs", timeout=FIRST_RUN_S * 1000)
            expect(status).to_contain_text("three_branches(batch=512, width=256, layers=2)")
            expect(status).to_contain_text("inter 1, intra 1")
            expect(status).to_contain_text("warm-up")
            run_ended(expect, dashboard)
            expect(dashboard.locator(".pg-timeline .jupyter-matplotlib")).to_be_visible()
            shown = wait_for_new_timeline(page, 0)
            dashboard.scroll_into_view_if_needed()
            dashboard.screenshot(path=str(shots / "01_first_run.png"))

            # Pin this run (inter-op 1): the table gains a column, the timeline redraws.
            dashboard.locator("button.pg-pin").click()
            expect(dashboard.locator(".pg-summary")).to_contain_text("pin 1")
            expect(dashboard.locator("button.pg-clear-pins")).to_be_enabled()
            shown = wait_for_new_timeline(page, shown)

            # Inter-op 1 -> 2 with the keyboard: on release it reruns on a new session.
            handle = dashboard.locator(".pg-inter-op-threads .noUi-handle[role='slider']")
            handle.focus()
            pressed = time.perf_counter()
            handle.press("ArrowRight")
            run_ended(expect, dashboard, "inter 2, intra 1", "new session", "done")
            shown = wait_for_new_timeline(page, shown)
            timings["slider_to_new_timeline_s"] = time.perf_counter() - pressed
            expect(dashboard.locator(".pg-summary")).to_contain_text(re.compile(r"\d\.\d\dx"))
            expect(dashboard.locator(".pg-explain")).to_contain_text("branch0")
            assert dashboard.locator(".pg-error").count() == 0
            # Hover the timeline: ipympl's toolbar shows, beside the figure (not over it).
            canvas = dashboard.locator(".pg-timeline .jupyter-matplotlib-canvas-div").first
            box = canvas.bounding_box()
            canvas.hover(position={"x": box["width"] * 0.3, "y": box["height"] * 0.45})
            toolbar = dashboard.locator(".pg-timeline .jupyter-matplotlib-toolbar")
            expect(toolbar).to_be_visible()
            bar = toolbar.bounding_box()
            assert bar["x"] >= box["x"] + box["width"] - 2, "the toolbar covers the figure"
            pinned_shot = shots / "02_pinned_and_inter_op_2.png"
            dashboard.screenshot(path=str(pinned_shot))

            # A parameter: width 256 -> 64 builds another graph; the pin is not compared.
            pressed = time.perf_counter()
            dashboard.locator(".pg-param-width select").select_option("64")
            run_ended(expect, dashboard, "width=64", "new graph", "done")
            shown = wait_for_new_timeline(page, shown)
            timings["parameter_to_new_timeline_s"] = time.perf_counter() - pressed
            expect(dashboard.locator(".pg-summary")).to_contain_text("another graph")

            # A long run (400 layers, 20 repeats), stopped with Stop after two traced runs.
            dashboard.locator(".pg-repeats .widget-readout").fill("20")
            dashboard.locator(".pg-repeats .widget-readout").press("Enter")
            run_ended(expect, dashboard, "done: 20 of 20 runs")
            shown = wait_for_new_timeline(page, shown)
            dashboard.locator(".pg-param-layers .widget-readout").fill("400")
            dashboard.locator(".pg-param-layers .widget-readout").press("Enter")
            running_traced(page, 3)
            expect(dashboard.locator("button.pg-stop")).to_be_enabled()
            expect(dashboard.locator("button.pg-run")).to_be_disabled()
            pressed = time.perf_counter()
            dashboard.locator("button.pg-stop").click()
            run_ended(expect, dashboard, "stopped (Stop) after", "of 20 runs, kept")
            timings["stop_to_status_s"] = time.perf_counter() - pressed
            expect(dashboard.locator(".pg-message")).to_contain_text("stopped (Stop)")
            shown = wait_for_new_timeline(page, shown)
            dashboard.screenshot(path=str(shots / "03_stopped.png"))

            # A foreground run (the second cell waits for it), ended by Kernel > Interrupt.
            cells.nth(1).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Control+Enter")
            running_traced(page, 2)
            page.locator("li.lm-MenuBar-item", has_text="Kernel").click()
            pressed = time.perf_counter()
            page.locator("li.lm-Menu-item[data-command='kernelmenu:interrupt']").click()
            run_ended(expect, dashboard, "interrupted (kernel interrupt) after", "kept")
            timings["interrupt_to_status_s"] = time.perf_counter() - pressed
            expect(dashboard.locator(".pg-message")).to_contain_text("interrupted")
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
            shown = wait_for_new_timeline(page, shown)
            dashboard.screenshot(path=str(shots / "04_interrupted.png"))
            assert dashboard.locator(".pg-error").count() == 0

            # The canvas and its toolbar fit inside the dashboard, and follow its cell when
            # the page gets narrower (the plots' own fitting script).
            def canvas_right_and_width() -> tuple[float, float, float]:
                shown_canvas = dashboard.locator(".pg-timeline .jupyter-matplotlib").first
                canvas_box = shown_canvas.bounding_box()
                figure_box = dashboard.locator(
                    ".pg-timeline .jupyter-matplotlib-canvas-div"
                ).first.bounding_box()
                panel = dashboard.bounding_box()
                return (
                    canvas_box["x"] + canvas_box["width"],
                    panel["x"] + panel["width"],
                    figure_box["width"],
                )

            right, edge, wide = canvas_right_and_width()
            assert right <= edge + 2, f"the canvas ends at {right}, past the dashboard's {edge}"
            page.set_viewport_size({"width": 1000, "height": 1600})
            page.wait_for_function(
                """was => { const d = document.querySelector(
                    '.pg-dashboard .pg-timeline .jupyter-matplotlib-canvas-div');
                    return d && d.getBoundingClientRect().width < was - 100; }""",
                arg=wide,
                timeout=30_000,
            )
            right, edge, _ = canvas_right_and_width()
            assert right <= edge + 2, f"narrower: the canvas ends at {right}, past {edge}"
        except Exception:
            page.screenshot(path=str(shots / "failed.png"), full_page=True)
            raise
        finally:
            browser.close()
    for name, seconds in timings.items():
        print(f"in the browser: {name} {seconds:.2f}")
        record_property(name, round(seconds, 3))
    if os.environ.get("PARALLELGRAPH_UPDATE_SCREENSHOTS") == "1":
        save_small(pinned_shot, ROOT / "docs" / "dashboard.png")


# -- a timeline under %matplotlib widget ----------------------------------------------------
#: The ipympl view(s) in the notebook's second cell, and where its canvas, toolbar and output
#: area are (page CSS pixels); `inner`: the output area's width inside its padding.
WIDGET_STATE = """() => {
    const cell = document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')[1];
    const box = e => e ? e.getBoundingClientRect().toJSON() : null;
    const views = cell ? cell.querySelectorAll('.jupyter-matplotlib') : [];
    const state = {views: views.length,
                   everywhere: document.querySelectorAll('.jupyter-matplotlib').length,
                   images: cell ? cell.querySelectorAll('.jp-OutputArea img').length : 0};
    if (views.length !== 1) return state;
    const view = views[0], host = view.parentElement, style = getComputedStyle(host);
    state.inner = host.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    state.output = box(host);
    state.canvas = box(view.querySelector('.jupyter-matplotlib-canvas-div canvas'));
    state.toolbar = box(view.querySelector('.jupyter-matplotlib-toolbar'));
    return state;
}"""


def kernel_client(base: str, token: str, runtime: Path, notebook: str):
    """A second client of `notebook`'s kernel (its connection file is in `runtime`)."""
    from jupyter_client import BlockingKernelClient

    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as response:
        sessions = json.load(response)
    (kernel,) = [s["kernel"]["id"] for s in sessions if s["path"].endswith(notebook)]
    client = BlockingKernelClient(connection_file=str(runtime / f"kernel-{kernel}.json"))
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return client


def probe(client) -> dict:
    """What the kernel's timeline shows now (see PROBE)."""
    printed: list[str] = []

    def collect(message: dict) -> None:
        if message["header"]["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        elif message["header"]["msg_type"] == "error":
            printed.append("\n".join(message["content"]["traceback"]))

    reply = client.execute_interactive(PROBE, store_history=False, timeout=60, output_hook=collect)
    assert reply["content"]["status"] == "ok", "".join(printed)
    return json.loads("".join(printed))


def probe_until(client, test, what: str, timeout_s: float = RERUN_S) -> dict:
    """Probe until `test(probe)` holds; fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = probe(client)
        if test(seen):
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s} s; the kernel shows {seen}")
        time.sleep(0.2)


def fitted(page, room: float) -> dict:
    """Wait until the canvas is as wide as its output area leaves it (`room` px for the toolbar
    and the frame); the widget's state then."""
    page.wait_for_function(
        f"""room => {{ const s = ({WIDGET_STATE})();
            return s.views === 1 && s.canvas &&
                   Math.abs(s.canvas.width - Math.floor(s.inner - room)) <= 2; }}""",
        arg=room,
        timeout=RERUN_S * 1000,
    )
    return page.evaluate(WIDGET_STATE)


def resized(page, width: int, room: float) -> dict:
    """Make the window `width` px wide; wait until the output area and then the canvas follow."""
    inner = page.evaluate(WIDGET_STATE)["inner"]
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_function(
        f"old => Math.abs(({WIDGET_STATE})().inner - old) > 100", arg=inner, timeout=30_000
    )
    return fitted(page, room)


def assert_fits(state: dict, client) -> None:
    """One canvas, no picture, all inside the output area: the canvas, the toolbar beside it,
    and the legend (read from the kernel, once drawn at this size) right of the chart and
    inside the canvas."""
    assert (state["views"], state["everywhere"], state["images"]) == (1, 1, 0), state
    output, canvas, toolbar = state["output"], state["canvas"], state["toolbar"]
    assert output["left"] <= canvas["left"] and canvas["right"] <= output["right"], state
    assert canvas["right"] - 2 <= toolbar["left"] and toolbar["right"] <= output["right"], state
    shown = probe_until(
        client,
        lambda shown: not shown["stale"] and abs(shown["width"] - canvas["width"]) <= 1,
        f"the figure was not drawn {canvas['width']} px wide",
    )
    legend, axes = shown["legend"], shown["axes"]
    assert axes[2] <= legend[0] and legend[2] <= shown["width"], shown


def test_a_widget_timeline_fits_its_cell_zooms_and_hovers(lab, tmp_path, record_property):
    from parallelgraph.plot import figures, zoom

    base, token, runtime = lab
    room = figures.TOOLBAR_ROOM_PX + figures.CANVAS_FRAME_PX
    shots = tmp_path / "screenshots"
    shots.mkdir()
    expect = sync_api.expect
    timings: dict[str, float] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        client = None
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/workspaces/pg-widget/tree/{WIDGET_NOTEBOOK_NAME}?token={token}")
            cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
            cells.first.wait_for()
            kernel_name = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")
            expect(kernel_name).to_have_text(re.compile("Python 3"), timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()

            # Run All: one figure, fitted to its cell, legend and toolbar inside.
            started = time.perf_counter()
            page.locator("li.lm-MenuBar-item", has_text="Run").click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
            view = cells.nth(1).locator(".jupyter-matplotlib")
            expect(view).to_be_visible(timeout=FIRST_RUN_S * 1000)
            state = fitted(page, room)
            timings["run_to_fitted_canvas_s"] = time.perf_counter() - started
            client = kernel_client(base, token, runtime, WIDGET_NOTEBOOK_NAME)
            view.hover(position={"x": 5, "y": 5})  # ipympl shows its toolbar on hover
            expect(view.locator(".jupyter-matplotlib-toolbar")).to_be_visible()
            state = page.evaluate(WIDGET_STATE)
            assert_fits(state, client)

            # A narrower window: the canvas follows its cell.
            wide = state["canvas"]["width"]
            state = resized(page, 1000, room)
            assert state["canvas"]["width"] < wide - 300
            assert_fits(state, client)
            state = resized(page, 1400, room)
            assert state["canvas"]["width"] == pytest.approx(wide, abs=2)

            # The wheel over a bar: the time axis zooms around the pointer, the page stays.
            before = probe_until(client, lambda shown: not shown["stale"], "no redraw")
            canvas = state["canvas"]
            x, y = round(canvas["x"] + before["bar"][0]), round(canvas["y"] + before["bar"][1])
            left, right = before["axes"][0], before["axes"][2]
            lo, hi = before["xlim"]
            pointer_ms = lo + (x - canvas["x"] - left) / (right - left) * (hi - lo)
            page.mouse.move(x, y)
            started = time.perf_counter()
            for _ in range(3):
                page.mouse.wheel(0, -120)
                page.wait_for_timeout(150)
            span = hi - lo
            after = probe_until(
                client,
                lambda shown: shown["xlim"][1] - shown["xlim"][0] < span / zoom.WHEEL_FACTOR**2.5,
                "three wheel notches did not zoom in",
            )
            timings["wheel_to_zoomed_s"] = time.perf_counter() - started
            new_lo, new_hi = after["xlim"]
            notches = math.log(span / (new_hi - new_lo), zoom.WHEEL_FACTOR)
            assert notches == pytest.approx(3, abs=1e-6)
            pixel_ms = (new_hi - new_lo) / (right - left)
            still = new_lo + (x - canvas["x"] - left) / (right - left) * (new_hi - new_lo)
            assert still == pytest.approx(pointer_ms, abs=2 * pixel_ms)  # zoomed around it
            assert page.evaluate(WIDGET_STATE)["canvas"]["y"] == canvas["y"]  # no page scroll

            # Keys: - zooms out around the pointer, the right arrow pans.
            page.mouse.click(x, y)  # focus the canvas (no toolbar mode: a click does nothing)
            page.keyboard.press("-")
            out = probe_until(
                client,
                lambda shown: shown["xlim"][1] - shown["xlim"][0] > (new_hi - new_lo) * 1.4,
                "- did not zoom out",
            )
            out_lo, out_hi = out["xlim"]
            assert out_hi - out_lo == pytest.approx((new_hi - new_lo) * zoom.KEY_FACTOR)
            page.keyboard.press("ArrowRight")
            shift = (out_hi - out_lo) * zoom.PAN_FRACTION
            panned = probe_until(  # and drawn so: where the bars are on screen
                client,
                lambda shown: (
                    shown["xlim"][0] == pytest.approx(out_lo + shift) and not shown["stale"]
                ),
                "the right arrow did not pan",
            )

            # Hover the widest bar in view: ipympl's read-out and the tooltip name its op.
            bar_x = round(canvas["x"] + panned["bar"][0])
            bar_y = round(canvas["y"] + panned["bar"][1])
            page.mouse.move(bar_x, bar_y, steps=4)
            footer = view.locator(".jupyter-matplotlib-footer")
            expect(footer).to_contain_text(panned["name"], timeout=RERUN_S * 1000)
            hovered = probe_until(
                client, lambda shown: shown["tooltip"][0], "hovering showed no tooltip"
            )
            assert hovered["tooltip"][1].startswith(hovered["name"])
            timeline_shot = shots / "ipympl_timeline.png"
            cells.nth(1).screenshot(path=str(timeline_shot))
        except Exception:
            page.screenshot(path=str(shots / "failed.png"), full_page=True)
            raise
        finally:
            if client is not None:
                client.stop_channels()
            browser.close()
    for name, seconds in timings.items():
        print(f"in the browser: {name} {seconds:.2f}")
        record_property(name, round(seconds, 3))
    if os.environ.get("PARALLELGRAPH_UPDATE_SCREENSHOTS") == "1":
        save_small(timeline_shot, ROOT / "docs" / "ipympl_timeline.png")


def save_small(source: Path, target: Path) -> None:
    """The screenshot at most SCREENSHOT_WIDTH wide, as an optimized PNG."""
    from PIL import Image

    image = Image.open(source).convert("RGB")
    if image.width > SCREENSHOT_WIDTH:
        height = round(image.height * SCREENSHOT_WIDTH / image.width)
        image = image.resize((SCREENSHOT_WIDTH, height), Image.LANCZOS)
    image.save(target, optimize=True)
