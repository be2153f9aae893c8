"""How responsive the dashboard is: redraw after a knob or parameter change, pan/zoom, first run.

    python benchmarks/dashboard_speed.py [--changes N] [--zooms N] [--kernels N] [--cold]
                                         [--long-runs N]

1. **Redraw after a change** (targets: a knob <= 0.5 s, a parameter <= 1 s). A dashboard on a
   user's own build function (the seed's two networks, batch 64, hidden 256, 5 repeats) runs
   once; then a control is changed `--changes` times per kind, alternating between two values,
   and the time from `control.value = v` (what a slider release does in a kernel) to the end of
   `dash.wait()` is taken: rebuild what the change requires, warm a new session up, run the
   repeats in the run thread, draw the timeline, update the widgets. Kinds: the inter-op slider
   (a knob: new session), the repeats slider (same session), the batch slider (a parameter: new
   graph). Two timelines: **png** (an Agg draw and a PNG in an Image widget: what every front
   end shows) and **ipympl** (the figure on the dashboard's ipympl canvas; the kernel-side draw
   is timed as the canvas's own `draw()`, i.e. an Agg draw plus the PNG diff ipympl sends, which
   in a browser happens when the front end asks for it). The column *run* is the part spent
   building and running. Not included: carrying the image to the browser and decoding it;
   tests/test_browser.py measures slider-to-new-pixels in a real JupyterLab and prints it.
2. **Pan/zoom redraw with ipympl** (target <= 0.3 s). On the ipympl canvas of a two-panel
   comparison (a pin and the current run), the x range is set to a window 1/5 of the run wide,
   moved `--zooms` times across it (what a pan or a rectangle zoom does to the axes), and each
   `canvas.draw()` is timed: the Agg draw of the zoomed axes (labels decided at draw time, the
   hover index untouched) plus the PNG diff ipympl encodes for the front end. A headless proxy
   for the browser's redraw: the image transfer (tens of KB over a local websocket) is not in it.
3. **First run in a fresh kernel** (target <= 5 s with a warm Numba cache). A new IPython kernel
   (jupyter_client, like a notebook's) executes one cell: import parallelgraph, make the
   dashboard, `dash.run(); dash.wait()`. Reported: the cell's wall time measured inside the
   kernel, the same seen from the client, and the kernel start before it. The Numba cache is
   warmed first by one untimed kernel. `--cold` adds the same with an empty Numba cache.

4. **The live timeline** (the dashboard's default): (a) the redraw after a change of the
   inter-op slider (png) with it on and off, interleaved, `--changes` each (target <= 0.5 s
   on, and no slower than off); (b) a long run — a chain of 200 matmul+tanh layers, 39 or 40
   repeats of about 100 ms, in a session already warm — `--long-runs` times with it on and
   off, interleaved: what the user waits (the change to the end of `wait()`, the final drawing
   included), the run's own wall time (`Result.seconds`), its median makespan (what the run
   reports), how many live drawings it made and the share of the run's wall time they took.
   `--live-share` sets `widgets.viewer.LIVE_SHARE` (the most of a run's wall time live
   drawings may take).

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

CHANGES = {  # kind -> (control, the two values it alternates between)
    "inter-op slider (knob: new session)": ("inter_op_threads", (1, 2)),
    "repeats slider (same session)": ("repeats", (5, 4)),
    "batch slider (parameter: new graph)": ("batch", (64, 32)),
}
FIRST_RUN_CELL = """
import time, json
_t0 = time.perf_counter()
import parallelgraph as pg
dash = pg.dashboard(preset="two-networks", batch=64, hidden=256, timeline="png")
dash.run()
_result = dash.wait(timeout=120)
print(json.dumps({"cell_s": time.perf_counter() - _t0, "ok": _result is not None,
                  "error": repr(dash.error)}))
"""


def seed_graph(batch: int = 64, hidden: int = 256) -> object:
    """The seed's two networks as a user writes them for the dashboard."""
    import parallelgraph as pg

    results = []
    for name, seed in (("net1", 1), ("net2", 2)):
        with pg.scope(name):
            x = pg.random_normal((batch, hidden), seed=seed)
            w1 = pg.variable((hidden, hidden), name="w1")
            b1 = pg.variable((hidden,), name="b1")
            w2 = pg.variable((hidden, batch), name="w2")
            results.append(pg.matmul(pg.add(pg.matmul(x, w1), b1), w2))
    return pg.add(*results)


def make_dashboard(timeline: str, live: bool = True) -> object:
    import parallelgraph as pg

    return pg.dashboard(
        seed_graph,
        batch=[32, 64, 128],
        hidden=[128, 256, 512],
        repeats=5,
        timeline=timeline,
        live=live,
    )


def long_chain(width: int = 256, layers: int = 200) -> object:
    """Repeats of about 100 ms on 2 cores: 40 of them are a run of about 4 s."""
    import parallelgraph as pg

    x = pg.random_normal((width, width), seed=0)
    for index in range(layers):
        with pg.scope(f"layer{index % 4}"):
            x = pg.tanh(pg.matmul(x, pg.variable((width, width), name="w")))
    return x


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
def redraw_times(changes: int, timeline: str) -> list[list[str]]:
    dash = make_dashboard(timeline)
    try:
        dash.run()
        dash.wait(timeout=120)
        rows = []
        for kind, (name, values) in CHANGES.items():
            control, total, run = dash.controls[name], [], []
            for index in range(changes):
                value = values[(index + 1) % 2]
                start = time.perf_counter()
                control.value = value  # what a slider release does in a kernel
                result = dash.wait(timeout=120)
                if timeline == "interactive":
                    dash._canvas.draw()  # what the front end asks for next
                total.append(time.perf_counter() - start)
                assert result is not None and dash.ending == "done", dash.status
                changed = result.params if name in result.params else vars(result.knobs)
                assert changed[name] == value
                run.append(result.seconds)
            control.value = values[0]
            dash.wait(timeout=120)
            rows.append(stats_row(f"{kind}, {timeline}", total, run))
        return rows
    finally:
        dash.close()


# -- 2. pan/zoom with ipympl ----------------------------------------------------------------
def zoom_times(zooms: int) -> list[list[str]]:
    dash = make_dashboard("interactive")
    try:
        dash.run()
        dash.wait(timeout=120)
        dash.pin()
        dash.controls["inter_op_threads"].value = 1
        dash.wait(timeout=120)
        canvas = dash._canvas  # the ipympl canvas in the timeline's Output
        figure = canvas.figure
        ax = figure.axes[-1]
        low, high = ax.get_xlim()
        width = (high - low) / 5
        canvas.draw()  # the first, full draw (layout) is not a pan
        times = []
        for step in range(zooms):
            start_ms = low + (high - low - width) * step / max(zooms - 1, 1)
            ax.set_xlim(start_ms, start_ms + width)  # shared x: every panel follows
            start = time.perf_counter()
            canvas.draw()
            times.append(time.perf_counter() - start)
        events = sum(
            len(a.parallelgraph_bars.events)
            for a in figure.axes
            if hasattr(a, "parallelgraph_bars")
        )
        return [stats_row(f"pan/zoom, {len(figure.axes)} panels, {events} bars", times)]
    finally:
        dash.close()


# -- 4. the live timeline -------------------------------------------------------------------
def live_knob_rows(changes: int) -> list[list[str]]:
    """The inter-op slider's redraw with the live timeline on and off, interleaved (png)."""
    dashes = {live: make_dashboard("png", live=live) for live in (True, False)}
    try:
        for dash in dashes.values():
            dash.run()
            dash.wait(timeout=120)
        times: dict[bool, list[float]] = {True: [], False: []}
        for index in range(changes):
            for live, dash in dashes.items():
                start = time.perf_counter()
                dash.controls["inter_op_threads"].value = (2, 1)[index % 2]
                dash.wait(timeout=120)
                times[live].append(time.perf_counter() - start)
                assert dash.ending == "done", dash.status
        return [
            stats_row(f"inter-op slider, png, live timeline {'on' if live else 'off'}", times[live])
            for live in (True, False)
        ]
    finally:
        for dash in dashes.values():
            dash.close()


def live_run_rows(runs: int) -> list[list[str]]:
    """A long run with the live timeline on and off, interleaved: what the user waits (from
    the change to the end of `wait()`, the final drawing included), the run's own wall time,
    the median makespan and the live drawings made."""
    import parallelgraph as pg

    dashes = {
        live: pg.dashboard(long_chain, repeats=40, inter_op_threads=1, timeline="png", live=live)
        for live in (True, False)
    }
    cases = {
        live: {"waited": [], "run": [], "median": [], "drawings": [], "drawing": []}
        for live in dashes
    }
    try:
        for dash in dashes.values():  # graph, session, warm-up: then only repeats are timed
            dash.run()
            dash.wait(timeout=300)
        for index in range(runs):
            for live, dash in dashes.items():
                start = time.perf_counter()
                dash.controls["repeats"].value = (39, 40)[index % 2]  # a rerun, same session
                result = dash.wait(timeout=300)
                waited = time.perf_counter() - start
                assert result is not None and dash.ending == "done", dash.status
                case = cases[live]
                case["waited"].append(waited)
                case["run"].append(result.seconds)
                case["median"].append(result.median_ms)
                case["drawings"].append(dash._pacer.drawings)  # the run's live drawings
                case["drawing"].append(dash._pacer.spent_s / result.seconds)
    finally:
        for dash in dashes.values():
            dash.close()
    return [
        [
            f"live timeline {'on' if live else 'off'}",
            str(runs),
            f"{statistics.median(case['waited']):.3f}",
            f"{min(case['waited']):.3f}-{max(case['waited']):.3f}",
            f"{statistics.median(case['run']):.3f}",
            f"{statistics.median(case['median']):.2f}",
            f"{statistics.median(case['drawings']):g}",
            f"{100 * statistics.median(case['drawing']):.1f}%",
        ]
        for live, case in cases.items()
    ]


# -- 3. first run in a fresh kernel ---------------------------------------------------------
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
    parser.add_argument("--zooms", type=int, default=20, help="pan/zoom redraws to time")
    parser.add_argument("--kernels", type=int, default=3, help="fresh kernels to time")
    parser.add_argument("--cold", action="store_true", help="also time an empty Numba cache")
    parser.add_argument("--long-runs", type=int, default=5, help="long runs, live on and off")
    parser.add_argument("--live-share", type=float, help="widgets.viewer.LIVE_SHARE to use")
    args = parser.parse_args()
    if args.live_share is not None:
        from parallelgraph.widgets import viewer

        viewer.LIVE_SHARE = args.live_share

    print("## Redraw after a change (seed graph 64x256, 5 repeats); seconds\n")
    header = ["change, timeline", "n", "median", "p90", "max", "of which run (median)"]
    rows = redraw_times(args.changes, "png") + redraw_times(args.changes, "interactive")
    print(table(header, rows))
    print("\n## Pan/zoom redraw on the ipympl canvas (Agg draw + PNG diff); seconds\n")
    print(table(["case", "n", "median", "p90", "max"], zoom_times(args.zooms)))
    if args.long_runs:
        print("\n## The live timeline: a knob's redraw, on and off (interleaved); seconds\n")
        print(table(["change", "n", "median", "p90", "max"], live_knob_rows(args.changes)))
        print("\n## A long run (200 layers, 39-40 repeats), live timeline on and off\n")
        header = ["case", "runs", "waited s", "waited range", "run s", "makespan ms", "drawings"]
        header.append("drawing share of run")
        print(table(header, live_run_rows(args.long_runs)))
    if args.kernels:
        print("\n## First run in a fresh kernel: import, dashboard, run and wait; seconds\n")
        header = ["case", "kernels", "cell median", "cell max", "seen by client", "kernel start"]
        print(table(header, first_run_rows(args.kernels, args.cold)))


if __name__ == "__main__":
    main()
