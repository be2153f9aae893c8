"""The dashboard on a user's own graph, in a real JupyterLab, driven by headless Chromium.

What it proves: a notebook cell builds a three-branch graph of its own and shows
`pg.dashboard(build, ...)`; in the browser we change a parameter (a dropdown), move the inter-op
slider with the keyboard, pin a run, stop a long run with the Stop button, and interrupt a
foreground run (a cell waiting in `dash.wait()`) with Kernel ▸ Interrupt. After each step: the
status line says what happened, the buttons are in the right state (Run and Pin enabled, Stop
disabled once a run has ended) and the timeline changed. Under a real kernel with ipympl the
timeline is an ipympl canvas: "changed" means the pixels of its canvas changed (a hash of
`getImageData`), after the front end has drawn the new figure.

How (facts from /work/shared/recipes/jupyterlab-browser.md): `jupyter lab` from this Python on a
free localhost port with a random token and private Jupyter folders (config, data, runtime,
settings, workspaces), news and update checks off, notebook windowing off (every cell in the
DOM); Debian's Chromium (`/usr/bin/chromium`) driven by Playwright through `executable_path`
(never `playwright install`). The server is stopped in `finally` (SIGTERM, which shuts its
kernels down; SIGKILL after a grace period), and any kernel still alive that belongs to this
test's private runtime folder is killed by its PID.

Screenshots go to the test's tmp folder (the path is printed and recorded as a property);
with PARALLELGRAPH_UPDATE_SCREENSHOTS=1 the dashboard after the pin is also saved, reduced, as
docs/dashboard.png (the README shows it). Without Chromium, Playwright, JupyterLab or ipympl the
test is skipped, saying which is missing.
"""

from __future__ import annotations

import contextlib
import json
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
    three_branches, width=[64, 128, 256], layers=(1, 400), inter_op_threads=1, repeats=3
)
dash.run()
dash
"""
FOREGROUND_CELL = "dash.run()\ndash.wait()  # a foreground run: Kernel > Interrupt ends it"
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


def write_notebook(path: Path) -> None:
    import nbformat

    cells = [nbformat.v4.new_code_cell(OWN_GRAPH_CELL), nbformat.v4.new_code_cell(FOREGROUND_CELL)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(notebook, path)


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab on a free port serving the test's notebook; yields (base_url, token)."""
    notebooks, private = tmp_path / "notebooks", tmp_path / "jupyter"
    notebooks.mkdir()
    write_notebook(notebooks / NOTEBOOK_NAME)
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
        yield base, token
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
    base, token = lab
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
            expect(status).to_contain_text("done: 3 of 3 runs", timeout=FIRST_RUN_S * 1000)
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


def save_small(source: Path, target: Path) -> None:
    """The screenshot at most SCREENSHOT_WIDTH wide, as an optimized PNG."""
    from PIL import Image

    image = Image.open(source).convert("RGB")
    if image.width > SCREENSHOT_WIDTH:
        height = round(image.height * SCREENSHOT_WIDTH / image.width)
        image = image.resize((SCREENSHOT_WIDTH, height), Image.LANCZOS)
    image.save(target, optimize=True)
