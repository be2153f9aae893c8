"""How responsive the dashboard is: redraw after a control change, and the first run.

    python benchmarks/dashboard_speed.py [--changes N] [--kernels N] [--cold]

1. **Redraw after a change** (target <= 0.5 s). A `Dashboard` on the small two-network preset
   (batch 64, hidden 256, 5 repeats) runs once; then a control is changed `--changes` times per
   kind, alternating between two values, and the time of the assignment `control.value = v` is
   taken: in a kernel that is exactly the work of the change message — rebuild what the change
   requires, warm a new session up, run the repeats, draw the Gantt, encode the PNG, update the
   widgets. Kinds: a thread slider (new session), the repeats slider (same session), the batch
   slider (new graph). The column *run* is the part spent building and running; the rest is
   drawing and the output area. Not included: carrying the PNG to the browser (~25 KB over a
   local websocket) and the browser decoding it; tests/test_browser.py measures slider-to-image
   in a real JupyterLab and prints it.
2. **First run in a fresh kernel** (target <= 5 s with a warm Numba cache). A new IPython kernel
   (jupyter_client, like a notebook's) executes one cell: import parallelgraph, make the
   dashboard, `dash.run()`. Reported: the cell's wall time measured inside the kernel, the same
   seen from the client (includes the widget messages), and the kernel start before it. The
   Numba cache is warmed first by one untimed kernel. `--cold` adds the same with an empty
   Numba cache (a fresh NUMBA_CACHE_DIR: every kernel compiles; the shared cache is untouched).

Medians, with the 90th percentile and maximum, since what a user feels is the slow tail.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import table

SMALL = {"preset": "two-networks", "batch": 64, "hidden": 256, "repeats": 5}
CHANGES = {  # kind -> (control, the two values it alternates between)
    "thread slider (new session)": ("inter_op_threads", (1, 2)),
    "repeats slider (same session)": ("repeats", (5, 4)),
    "batch slider (new graph)": ("batch", (64, 32)),
}
FIRST_RUN_CELL = """
import time, json
_t0 = time.perf_counter()
import parallelgraph as pg
dash = pg.dashboard(preset="two-networks", batch=64, hidden=256)
_result = dash.run()
print(json.dumps({"cell_s": time.perf_counter() - _t0, "ok": _result is not None,
                  "error": repr(dash.error)}))
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def stats_row(name: str, seconds: list[float], extra: list[float] | None = None) -> list[str]:
    row = [
        name,
        str(len(seconds)),
        f"{statistics.median(seconds):.3f}",
        f"{percentile(seconds, 0.9):.3f}",
        f"{max(seconds):.3f}",
    ]
    if extra is not None:
        row.append(f"{statistics.median(extra):.3f}")
    return row


# -- 1. redraw after a change ---------------------------------------------------------------
def redraw_times(changes: int) -> list[list[str]]:
    from parallelgraph.widgets import Dashboard

    dash = Dashboard(**SMALL)
    try:
        dash.run()
        rows = []
        for kind, (name, values) in CHANGES.items():
            control, total, run = dash.controls[name], [], []
            for index in range(changes):
                value = values[(index + 1) % 2]
                start = time.perf_counter()
                control.value = value  # what a slider release does in a kernel
                total.append(time.perf_counter() - start)
                assert dash.result is not None and dash.error is None, dash.error
                assert getattr(dash.result.settings, name) == value
                run.append(dash.result.seconds)
            control.value = values[0]
            rows.append(stats_row(kind, total, run))
        return rows
    finally:
        dash.close()


# -- 2. first run in a fresh kernel ---------------------------------------------------------
def first_run(env: dict[str, str]) -> dict[str, float]:
    """Start a kernel, run FIRST_RUN_CELL, shut the kernel down; times in seconds."""
    from jupyter_client.manager import start_new_kernel

    start = time.perf_counter()
    manager, client = start_new_kernel(kernel_name="python3", env=env, startup_timeout=60)
    started = time.perf_counter()
    lines: list[str] = []

    def keep_stdout(message: dict) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            lines.append(message["content"]["text"])

    try:
        reply = client.execute_interactive(FIRST_RUN_CELL, timeout=120, output_hook=keep_stdout)
        done = time.perf_counter()
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"the cell failed: {reply['content']}")
    inside = json.loads("".join(lines).strip().splitlines()[-1])
    if not inside["ok"]:
        raise RuntimeError(f"the dashboard's first run failed: {inside['error']}")
    return {"kernel_s": started - start, "cell_s": inside["cell_s"], "client_s": done - started}


def first_run_rows(kernels: int, cold: bool) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    first_run(env)  # warms the Numba cache (and the OS file cache)
    cases = ["warm Numba cache"] + (["empty Numba cache"] if cold else [])
    rows = []
    for name in cases:
        runs = []
        for _ in range(kernels):
            with tempfile.TemporaryDirectory(prefix="pg-numba-") as empty:
                cache = {"NUMBA_CACHE_DIR": empty} if name != cases[0] else {}
                runs.append(first_run({**env, **cache}))
        rows.append(
            [
                name,
                str(kernels),
                f"{statistics.median(r['cell_s'] for r in runs):.2f}",
                f"{max(r['cell_s'] for r in runs):.2f}",
                f"{statistics.median(r['client_s'] for r in runs):.2f}",
                f"{statistics.median(r['kernel_s'] for r in runs):.2f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=20, help="changes per kind of control")
    parser.add_argument("--kernels", type=int, default=3, help="fresh kernels to time")
    parser.add_argument("--cold", action="store_true", help="also time an empty Numba cache")
    args = parser.parse_args()

    print("## Redraw after a change (small two-network graph, 5 repeats); seconds\n")
    header = ["change", "n", "median", "p90", "max", "of which run (median)"]
    print(table(header, redraw_times(args.changes)))
    print("\n## First run in a fresh kernel: import, dashboard, dash.run(); seconds\n")
    header = ["case", "kernels", "cell median", "cell max", "seen by client", "kernel start"]
    print(table(header, first_run_rows(args.kernels, args.cold)))


if __name__ == "__main__":
    main()
