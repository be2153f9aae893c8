"""The dashboard in a real JupyterLab, driven by headless Chromium.

What it proves: notebook 01 runs top to bottom in JupyterLab (Run ▸ Run All Cells), its
dashboard renders (ipywidgets front end, our CSS classes), a slider moved with the keyboard
reruns the graph by itself, Pin as baseline and Run do what they say, and each time the timeline
image really changes (its `src` and its pixels).

How (facts from /work/shared/recipes/jupyterlab-browser.md): `jupyter lab` from this Python on a
free localhost port with a random token and private Jupyter folders (config, data, runtime,
settings, workspaces), news and update checks off, notebook windowing off (every cell in the
DOM); Debian's Chromium (`/usr/bin/chromium`) driven by Playwright through `executable_path`
(never `playwright install`). The server is stopped in `finally` (SIGTERM, which shuts its
kernels down; SIGKILL after a grace period), and any kernel still alive that belongs to this
test's private runtime folder is killed by its PID.

Screenshots go to the test's tmp folder (the path is printed and recorded as a property);
with PARALLELGRAPH_UPDATE_SCREENSHOTS=1 the final one is also copied to docs/dashboard.png.
Without Chromium, Playwright or JupyterLab the test is skipped, saying which is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "01_parallel_subgraphs.ipynb"
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
RUN_ALL_S = 240  # notebook 01 takes ~15 s on 2 idle cores; generous for a loaded machine
RERUN_S = 60

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


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab on a free port serving a copy of notebook 01; yields (base_url, token)."""
    notebooks, private = tmp_path / "notebooks", tmp_path / "jupyter"
    notebooks.mkdir()
    shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name)
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
def gantt_src(page) -> str:
    return page.locator(".pg-dashboard img.pg-gantt").get_attribute("src") or ""


def wait_for_new_gantt(page, old_src: str) -> None:
    page.wait_for_function(
        """old => {
            const img = document.querySelector('.pg-dashboard img.pg-gantt');
            return img && img.src && img.src !== old && img.complete && img.naturalWidth > 0;
        }""",
        arg=old_src,
        timeout=RERUN_S * 1000,
    )


def test_dashboard_in_jupyterlab(lab, tmp_path, record_property):
    base, token = lab
    shots = tmp_path / "screenshots"
    shots.mkdir()
    record_property("screenshots", str(shots))
    print(f"screenshots in {shots}")
    expect = sync_api.expect
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/workspaces/pg-browser-test/tree/{NOTEBOOK.name}?token={token}")

            # The notebook is open and its kernel is up.
            page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for()
            kernel_name = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName")
            expect(kernel_name).to_have_text(re.compile("Python 3"), timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()

            # Run ▸ Run All Cells; the dashboard's first run ends with a status "... median".
            page.locator("li.lm-MenuBar-item", has_text="Run").click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
            dashboard = page.locator(".pg-dashboard")
            status = dashboard.locator(".pg-status")
            expect(status).to_contain_text("median", timeout=RUN_ALL_S * 1000)
            expect(status).to_contain_text("inter 1, intra 1")
            gantt = dashboard.locator("img.pg-gantt")
            page.wait_for_function(
                "() => { const i = document.querySelector('.pg-dashboard img.pg-gantt');"
                " return i && i.complete && i.naturalWidth > 0; }"
            )
            dashboard.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "01_page_after_run_all.png"))
            dashboard.screenshot(path=str(shots / "02_dashboard_after_run_all.png"))
            first_src, first_pixels = gantt_src(page), gantt.screenshot()

            # Pin this run (inter-op 1) as the baseline: the table gains a baseline column.
            dashboard.locator("button.pg-pin").click()
            wait_for_new_gantt(page, first_src)  # now baseline and current, one time axis
            expect(dashboard.locator(".pg-summary")).to_contain_text("baseline")
            pinned_src = gantt_src(page)

            # Move the inter-op slider from 1 to 2 with the keyboard: on release it reruns.
            handle = dashboard.locator(".pg-inter-op-threads .noUi-handle[role='slider']")
            handle.focus()
            pressed = time.perf_counter()
            handle.press("ArrowRight")
            wait_for_new_gantt(page, pinned_src)
            slider_s = time.perf_counter() - pressed
            expect(handle).to_have_attribute("aria-valuenow", re.compile(r"^2(\.0)?$"))
            expect(status).to_contain_text("inter 2, intra 1", timeout=RERUN_S * 1000)
            expect(status).to_contain_text("new session")
            expect(dashboard.locator(".pg-summary")).to_contain_text(re.compile(r"\d\.\d\dx"))
            dashboard.screenshot(path=str(shots / "03_dashboard_after_slider.png"))
            slider_src, slider_pixels = gantt_src(page), gantt.screenshot()
            assert slider_pixels != first_pixels, "the timeline did not change with inter-op 2"

            # Click Run: the same settings run again and the timeline is replaced.
            clicked = time.perf_counter()
            dashboard.locator("button.pg-run").click()
            wait_for_new_gantt(page, slider_src)
            click_s = time.perf_counter() - clicked
            expect(status).to_contain_text("median")
            expect(status).not_to_contain_text("new session")  # same session, rerun only
            expect(dashboard.locator(".pg-summary")).to_contain_text("median makespan")
            expect(dashboard.locator(".pg-explain")).to_contain_text("net1 and net2")
            assert dashboard.locator(".pg-error").count() == 0
            final = shots / "04_dashboard_after_run_click.png"
            dashboard.screenshot(path=str(final))
            assert gantt.screenshot() != first_pixels
        finally:
            browser.close()
    print(f"in the browser: slider -> new timeline {slider_s:.2f} s, Run -> {click_s:.2f} s")
    record_property("slider_to_new_timeline_s", round(slider_s, 3))
    record_property("run_click_to_new_timeline_s", round(click_s, 3))
    if os.environ.get("PARALLELGRAPH_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(final, ROOT / "docs" / "dashboard.png")
