"""The dashboard's viewer, driven in-process with real widgets and real runs on small graphs:
the search box (highlight without rerunning), the top-ops table, Save trace (a file Perfetto
opens, with its memory track), the live timeline of a long run, and a busy machine said out
loud (a real busy loop in another process). The rules are `parallelgraph.widgets.viewer`'s.
"""

from __future__ import annotations

import fnmatch
import html
import itertools
import json
import os
import re
import time

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from helpers import neighbour

import parallelgraph as pg
from parallelgraph.config import cpu_count
from parallelgraph.executors.registry import executor_spec
from parallelgraph.experiments.machine_load import MIN_WALL_S, busy_note
from parallelgraph.ops.builder import build
from parallelgraph.ops.registry import REGISTRY, OpDef, register
from parallelgraph.widgets import dashboard as widgets
from parallelgraph.widgets import viewer
from parallelgraph.widgets.settings import GraphSource, Knobs, Settings, preset_graph

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def three_branches(batch: int = 8, width: int = 16, branches: int = 3):
    """Branches of random_normal, matmul and tanh (and a variable, not an op of the run), and
    their sum: 3 * 3 + 1 = 10 ops by default."""
    outputs = []
    for index in range(branches):
        with pg.scope(f"branch{index}"):
            x = pg.random_normal((batch, width), seed=index)
            outputs.append(pg.tanh(pg.matmul(x, pg.variable((width, width), name="w"))))
    return pg.add_n(outputs, name="out")


def slow_chain(width: int = 256, layers: int = 40):
    """Dependent tanh(x @ w) layers of about a millisecond each: repeats of tens of ms."""
    x = pg.random_normal((width, width), seed=0)
    for index in range(layers):
        with pg.scope(f"layer{index % 4}"):
            x = pg.tanh(pg.matmul(x, pg.variable((width, width), name="w")))
    return x


def long_chain(width: int = 256, layers: int = 150):
    """Repeats of 50-80 ms on a quiet 2-core machine: 40 of them make a run of 2-3 s (100
    layers made 36 ms repeats once, too short for the tests that need 1.5 s)."""
    return slow_chain(width, layers)


@pytest.fixture
def dash():
    dashboard = pg.dashboard(three_branches, batch=(8, 64), branches=(1, 4), repeats=3)
    yield dashboard
    dashboard.close()


def text_of(value: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value)).split())


def drawn(dashboard: widgets.Dashboard) -> list[str]:
    """The left titles of the timeline panels now shown."""
    return [
        ax.get_title(loc="left")
        for ax in dashboard._figure.axes
        if hasattr(ax, "parallelgraph_bars")
    ]


def matching_ops(trace: pg.Trace, pattern: str) -> int:
    """Op events whose name without its scope matches `pattern`: counted here, not by plot."""
    return sum(
        1
        for e in trace.events
        if e.kind == "op" and fnmatch.fnmatch(e.name.rsplit("/", 1)[-1].lower(), pattern.lower())
    )


# -- search ---------------------------------------------------------------------------------
def test_search_highlights_the_matching_ops_and_says_how_many_without_rerunning(dash):
    dash.run()
    result = dash.wait(timeout=60)
    plain = bytes(dash.gantt.value)
    assert dash.search_words.value == ""
    ops = sum(1 for e in result.trace.events if e.kind == "op")
    matched = matching_ops(result.trace, "MatMul*")
    assert matched == 3

    dash.search.value = "MatMul*"  # what Enter in the box sends
    assert dash.runs == 1 and dash.result is result and not dash.busy  # no rerun
    words = text_of(dash.search_words.value)
    assert words == f"MatMul*: {matched} of {ops} ops of the run drawn match (highlighted)"
    found = viewer.drawn_highlight(dash._figure)
    assert (found.matched, found.ops) == (matched, ops)
    title = drawn(dash)[0]
    assert title.endswith(f"highlight 'MatMul*': {matched} of {ops} ops")
    assert "(the median of 3 runs)" in title  # the run drawn is still named
    assert bytes(dash.gantt.value) != plain

    dash.search.value = " matmul*, Tanh* ,"  # several patterns; case and spaces do not matter
    assert f"{matched + matching_ops(result.trace, 'tanh*')} of {ops}" in text_of(
        dash.search_words.value
    )
    dash.search.value = "nothing_like_this*"
    assert text_of(dash.search_words.value) == (
        "no op of the run drawn matches nothing_like_this*: everything is drawn as usual"
    )
    dash.search.value = " , "  # nothing to search: drawn as before the search
    assert dash.search_words.value == "" and bytes(dash.gantt.value) == plain
    assert not hasattr(dash._figure.axes[0], "parallelgraph_highlight")
    assert dash.runs == 1


def test_search_before_a_run_and_with_pins_highlights_every_panel(dash):
    dash.search.value = "Tanh*"  # nothing drawn yet: said, and used by the next drawing
    assert "highlighted in the next timeline drawn" in text_of(dash.search_words.value)
    dash.run()
    dash.wait(timeout=60)
    assert drawn(dash)[0].endswith("highlight 'Tanh*': 3 of 10 ops")
    dash.pin()
    dash.controls["inter_op_threads"].value = 1
    dash.wait(timeout=60)
    titles = drawn(dash)
    assert len(titles) == 2 and all(t.endswith("highlight 'Tanh*': 3 of 10 ops") for t in titles)
    assert titles[0].startswith("pin 1 (") and titles[1].startswith("current (")
    dash.clear_pins()  # a redraw after the pins changed keeps the highlight
    assert drawn(dash)[0].endswith("highlight 'Tanh*': 3 of 10 ops")


def test_the_search_applies_to_a_run_that_is_going():
    dashboard = pg.dashboard(slow_chain, repeats=8, inter_op_threads=1, live=False)
    try:
        dashboard.run()
        dashboard.search.value = "Tanh*"  # while it runs: said, applied to its drawing
        assert dashboard.busy and "next timeline" in text_of(dashboard.search_words.value)
        result = dashboard.wait(timeout=60)
        assert drawn(dashboard)[0].endswith("highlight 'Tanh*': 40 of 81 ops")
        assert "40 of 81 ops of the run drawn match" in text_of(dashboard.search_words.value)
        assert result.runs == 8
    finally:
        dashboard.close()


def test_search_patterns_are_comma_separated_and_trimmed():
    assert viewer.search_patterns("") == ()
    assert viewer.search_patterns(" ,, ") == ()
    assert viewer.search_patterns("MatMul*") == ("MatMul*",)
    assert viewer.search_patterns(" net1/* , *Add*,") == ("net1/*", "*Add*")


# -- top ops --------------------------------------------------------------------------------
def table_of(value: str) -> list[list[str]]:
    """The rows (cells as text) of the top-ops table, header first."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", value)
    return [[text_of(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)] for row in rows]


def test_the_top_ops_table_is_the_first_ten_rows_of_the_run_drawn(dash):
    dash.controls["branches"].value = 4  # 13 op names
    dash.run()
    result = dash.wait(timeout=60)
    expected = result.trace.top_ops(limit=10)
    assert len(expected) == 10 and expected.names == 13
    header, *rows = table_of(dash.top_ops.value)
    assert header == ["name", "count", "total ms", "self ms", "mean ms", "share"]
    assert rows == expected.table()[1]
    text = text_of(dash.top_ops.value)
    assert "Top ops of the run drawn: top 10 of 13 op names by total" in text
    assert "(+3 more," in text
    assert "pg-top-op-match" not in dash.top_ops.value

    dash.search.value = "MatMul*"  # the rows the search matches are marked
    marked = re.findall(r"<tr class='pg-top-op-match'[^>]*>(.*?)</tr>", dash.top_ops.value)
    names = [text_of(re.findall(r"<td[^>]*>(.*?)</td>", row)[0]) for row in marked]
    shown = [row[0] for row in rows]
    assert names == [n for n in shown if n.endswith("/MatMul")] and len(names) >= 1


def test_the_top_ops_of_the_previous_run_are_greyed_when_a_run_fails():
    def sometimes(batch: int = 8):
        if batch == 16:
            raise ValueError("no graph for 16")
        return three_branches(batch)

    dashboard = pg.dashboard(sometimes, batch=[8, 16], repeats=1)
    try:
        dashboard.run()
        dashboard.wait(timeout=60)
        before = dashboard.top_ops.value
        dashboard.controls["batch"].value = 16
        dashboard.wait(timeout=60)
        assert dashboard.ending == "failed"
        assert "opacity:0.5" in dashboard.top_ops.value and before in dashboard.top_ops.value
    finally:
        dashboard.close()


# -- save trace -----------------------------------------------------------------------------
NAME = re.compile(
    r"pg-trace_three_branches-batch8-width16-branches3_cpu-threads-inter2-intra1_\d{8}-\d{6}(-\d+)?\.json"
)


def test_save_trace_writes_the_run_drawn_for_perfetto_with_its_memory_track(
    dash, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert dash.save_button.disabled  # nothing to save before a run
    dash.save_trace()
    assert "Run first" in dash.message.value and list(tmp_path.iterdir()) == []
    dash.run()
    assert dash.save_button.disabled  # while the run goes
    result = dash.wait(timeout=60)
    assert not dash.save_button.disabled
    dash.save_button.click()
    (path,) = tmp_path.iterdir()
    assert NAME.fullmatch(path.name), path.name
    said = text_of(dash.message.value)
    assert f"with its memory track to {path}: open it in ui.perfetto.dev" in said
    assert f"makespan {result.trace.makespan_ms:.2f} ms, the median of 3 runs" in said

    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    counters = [e for e in events if e.get("ph") == "C"]
    assert counters, "the memory track: counter events"
    loaded = pg.Trace.load(path)
    assert loaded.makespan_ms == pytest.approx(result.trace.makespan_ms, rel=1e-3)
    names = sorted(e.name for e in loaded.events if e.kind == "op")
    assert names == sorted(e.name for e in result.trace.events if e.kind == "op")

    second = dash.save_trace()  # again, within the same second: a new name, nothing replaced
    assert second != path and path.exists() and len(list(tmp_path.iterdir())) == 2
    assert NAME.fullmatch(second.name), second.name


def test_save_trace_says_why_it_could_not_write(dash, tmp_path):
    dash.run()
    dash.wait(timeout=60)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert dash.save_trace(blocker) is None
    assert "Save trace failed:" in dash.message.value and str(blocker) in dash.message.value
    assert blocker.read_text() == "not a folder"


def test_trace_file_names_give_the_settings_and_a_gpu_run_its_streams():
    from datetime import datetime

    when = datetime(2026, 1, 2, 3, 4, 5)
    source = GraphSource(preset_graph)
    gpu = Knobs(device="gpu:0", streams=2, stream_policy="single")
    settings = Settings.of(source, {"preset": "two-networks", "batch": 64}, gpu)
    assert viewer.trace_file_name(settings, when) == (
        "pg-trace_preset_graph-presettwo-networks-batch64_gpu-0-threads-inter2-intra1-"
        "streams2-single_20260102-030405.json"
    )
    odd = Settings.of(source, {"preset": "a b/c", "batch": 1}, Knobs(executor="sequential"))
    assert viewer.trace_file_name(odd, when) == (
        "pg-trace_preset_graph-preseta-b-c-batch1_cpu-sequential_20260102-030405.json"
    )


# -- busy machine ---------------------------------------------------------------------------
needs_proc = pytest.mark.skipif(
    not os.path.exists("/proc/stat"), reason="LoadMonitor reads Linux's /proc"
)


@needs_proc
def test_a_busy_neighbour_is_said_in_the_message_and_the_status():
    """All cores' worth of threads (0: one per core), so the loop takes a core the run may
    use; a run of about a second, well past MIN_WALL_S."""
    dashboard = pg.dashboard(slow_chain, repeats=20, inter_op_threads=0)
    try:
        with neighbour():
            dashboard.run()
            result = dashboard.wait(timeout=120)
        assert result.load is not None and result.load.wall_s >= MIN_WALL_S
        note = busy_note(result.load, threads_used=viewer.threads_used(result.knobs))
        assert note is not None and result.busy_note() == note, result.load
        assert f"Busy machine: {note}." in text_of(dashboard.message.value)
        assert "other processes used" in note and f"of {cpu_count()} core" in note
        assert dashboard.status.endswith("; busy machine: timings not reliable (see below)")
    finally:
        dashboard.close()


@needs_proc
def test_the_busy_words_come_exactly_when_busy_note_gives_a_sentence(dash):
    """A run of milliseconds is too short to tell (MIN_WALL_S): nothing is called busy even
    with a neighbour running, and once a speed-up against a pin stands beside it, the message
    says the run was too short to tell; on this shared machine, whatever the load of a longer
    run, the message and status say it exactly when `busy_note` does."""
    with neighbour():
        dash.run()
        result = dash.wait(timeout=60)
        assert result.load is not None and result.load.wall_s < MIN_WALL_S
        assert result.busy_note() is None
        assert "busy" not in dash.status.lower() and "busy" not in dash.message.value.lower()
        dash.pin()
        dash.run()
        dash.wait(timeout=60)
    assert "busy machine" not in dash.status.lower()
    assert "Too short to tell whether the machine was busy" in dash.message.value
    dash.controls["batch"].value = 64
    dash.controls["repeats"].value = 1  # the same graph: a rerun
    longer = dash.wait(timeout=60)
    said = "Busy machine" in dash.message.value
    assert said == (longer.busy_note() is not None) == ("busy machine" in dash.status)


def test_threads_used_counts_inter_op_threads_and_shared_intra_op_helpers():
    assert viewer.threads_used(Knobs(executor="sequential")) == 1
    assert viewer.threads_used(Knobs(inter_op_threads=2, intra_op_threads=1)) == 2
    assert viewer.threads_used(Knobs(inter_op_threads=2, intra_op_threads=3)) == 4
    assert viewer.threads_used(Knobs(inter_op_threads=0, intra_op_threads=1)) == (cpu_count())


# -- the live timeline ----------------------------------------------------------------------
def watch_timeline(dashboard: widgets.Dashboard) -> list[dict]:
    """Every drawing shown, as the run thread shows it: when, its title and live marker, and
    the note above the timeline."""
    seen: list[dict] = []

    def shown(_change: dict) -> None:
        figure = dashboard._figure
        seen.append(
            {
                "at": time.monotonic(),
                "title": figure.axes[0].get_title(loc="left"),
                "live": getattr(figure, "parallelgraph_live", None),
                "note": text_of(dashboard.previous_note.value),
                "highlight": viewer.drawn_highlight(figure),
            }
        )

    dashboard.gantt.observe(shown, names="value")
    return seen


def test_a_long_run_draws_its_latest_repeat_while_it_goes(monkeypatch):
    """Paced at twice a second (LIVE_SHARE raised so that this machine's drawing time does not
    space them further): the timeline shows "running: repeat k of n" with the k-th repeat, k
    growing, never the last; the run's end draws the run nearest the median."""
    monkeypatch.setattr(viewer, "LIVE_SHARE", 1.0)
    dashboard = pg.dashboard(long_chain, repeats=40, inter_op_threads=1)
    try:
        dashboard.search.value = "MatMul*"
        seen = watch_timeline(dashboard)
        dashboard.run()
        result = dashboard.wait(timeout=120)
        live, final = seen[:-1], seen[-1]
        assert len(live) >= 2, [s["title"] for s in seen]
        repeats = [s["live"][0] for s in live]
        assert repeats == sorted(set(repeats)) and all(0 < k < 40 for k in repeats)
        for shot in live:
            k, n = shot["live"]
            assert n == 40
            trace = result.measurement.traces[k - 1]
            assert shot["title"].startswith(
                f"running: repeat {k} of 40 — the latest, makespan {trace.makespan_ms:.2f} ms"
            )
            assert shot["highlight"] is not None and shot["highlight"].matched == 150  # layers
            assert shot["note"].startswith(f"Timeline: running: repeat {k} of 40")
        gaps = [b["at"] - a["at"] for a, b in itertools.pairwise(live)]
        assert all(gap >= viewer.LIVE_EVERY_S for gap in gaps), gaps
        assert final["live"] is None and "running:" not in final["title"]
        assert "(the lower middle of 40 runs;" in final["title"]
        assert final["highlight"] is not None
        assert dashboard.previous_note.value == "" and dashboard.ending == "done"
        assert result.runs == 40
    finally:
        dashboard.close()


def test_no_live_drawing_when_switched_off_or_when_the_run_is_short(monkeypatch):
    monkeypatch.setattr(viewer, "LIVE_SHARE", 1.0)
    dashboard = pg.dashboard(long_chain, repeats=40, inter_op_threads=1, live=False)
    try:
        assert not dashboard.live.value
        seen = watch_timeline(dashboard)
        dashboard.run()
        result = dashboard.wait(timeout=120)
        assert result.seconds > 3 * viewer.LIVE_EVERY_S  # long enough to have drawn live
        assert len(seen) == 1 and seen[0]["live"] is None
        dashboard.live.value = True  # the checkbox: on again
        dashboard.controls["layers"].value = 1  # repeats of a millisecond: nothing to show
        dashboard.wait(timeout=60)
        assert len(seen) == 2 and seen[1]["live"] is None
    finally:
        dashboard.close()


if "test_fails_later" in REGISTRY:  # imported twice under different names
    del REGISTRY["test_fails_later"]


@register
class FailsLater(OpDef):
    """A copy that raises in its `fail_at`-th run and later ones (counted in `prepare`, once
    per run of the op): a graph that breaks in the middle of a measurement."""

    type = "test_fails_later"
    default_name = "FailsLater"
    runs = 0

    def infer(self, inputs, attrs):
        return inputs[0].shape, inputs[0].dtype

    def prepare(self, op, args, num_shards, config):
        FailsLater.runs += 1
        if FailsLater.runs >= op.attrs["fail_at"]:
            raise ZeroDivisionError("broke in the middle of the run")
        return args[0], np.empty(op.shape, op.dtype)

    def compute(self, op, work, shard, row_start, row_stop):
        work[1][row_start:row_stop] = work[0][row_start:row_stop]

    def reference(self, op, args):
        return args[0]


def breaks_late(layers: int = 40, fail_at: int = 0):
    """slow_chain, then a FailsLater op (fail_at 0: never)."""
    return build("test_fails_later", (slow_chain(layers=layers),), {"fail_at": fail_at or 10**9})


def test_a_run_that_fails_after_live_drawings_puts_the_last_timeline_back(monkeypatch):
    # A drawing every 0.05 s of repeats: 40 repeats of slow_chain take more than that on any
    # machine (1,600 matmuls of 256^3), however fast its BLAS; at the default 0.5 s a fast
    # CPU finished all 40 before the first drawing was due.
    monkeypatch.setattr(viewer, "LIVE_EVERY_S", 0.05)
    monkeypatch.setattr(viewer, "LIVE_SHARE", 100.0)
    dashboard = pg.dashboard(breaks_late, fail_at=(0, 1000), repeats=50, inter_op_threads=1)
    try:
        dashboard.run()
        good = dashboard.wait(timeout=120)
        good_png, good_title = bytes(dashboard.gantt.value), drawn(dashboard)[0]
        seen = watch_timeline(dashboard)
        FailsLater.runs = 0
        dashboard.controls["fail_at"].value = 42  # a new graph: warm-up, 40 repeats, a failure
        dashboard.wait(timeout=120)
        assert dashboard.ending == "failed" and "broke in the middle" in dashboard.status
        assert "(the timeline below is from the previous run)" in dashboard.status
        lives = [s["live"] for s in seen if s["live"] is not None]
        assert lives and all(k <= 40 for k, _ in lives), lives
        assert seen[-1]["live"] is None and seen[-1]["title"] == good_title
        assert dashboard.result is good and bytes(dashboard.gantt.value) == good_png
        assert not text_of(dashboard.previous_note.value).startswith("Timeline: running")
    finally:
        dashboard.close()


def test_the_live_pacer_waits_for_the_drawing_share_and_the_minimum_interval():
    pacer = viewer.LivePacer(started=10.0, history=[], every_s=0.5, share=0.1)
    assert pacer.draw_s == viewer.DRAW_GUESS_S and pacer.wait_s() == pytest.approx(2.0)
    assert not pacer.due(11.9, 5, 10) and pacer.due(12.0, 5, 10)
    assert not pacer.due(50.0, 10, 10)  # the last repeat: the final drawing follows
    pacer.history.extend([0.01, 0.01, 0.01])  # cheap drawings: the minimum interval rules
    pacer.drawn(20.0)
    assert pacer.wait_s() == 0.5 and not pacer.due(20.4, 6, 10) and pacer.due(20.5, 6, 10)
    pacer.history[:] = [5.0, 0.1, 0.1]  # one slow first drawing does not rule: the median
    assert pacer.draw_s == 0.1


def test_the_live_pacer_starts_its_clock_with_the_first_traced_repeat():
    """A warm-up that compiled for a minute before: no drawing until the repeats themselves
    have gone on long enough."""
    pacer = viewer.LivePacer(history=[0.05], every_s=0.5, share=0.1)
    assert not pacer.due(60.0, 1, 10, took_s=0.2)  # the clock starts at 59.8
    assert not pacer.due(60.2, 2, 10, took_s=0.2) and pacer.due(60.3, 3, 10, took_s=0.1)


def test_live_drawings_on_the_interactive_timeline_replace_and_close_their_canvases(
    monkeypatch,
):
    """Under ipympl each live drawing is a new canvas in the timeline's output area, the one it
    replaces closed, so a long run leaves one canvas: the final one, hovering as usual."""
    ipympl = pytest.importorskip("ipympl.backend_nbagg")
    monkeypatch.setattr(viewer, "LIVE_SHARE", 1.0)
    dashboard = pg.dashboard(long_chain, repeats=30, inter_op_threads=1, timeline="interactive")
    canvases = []
    try:
        dashboard._canvas_area.observe(
            lambda _change: canvases.append(dashboard._canvas), names="outputs"
        )
        dashboard.run()
        dashboard.wait(timeout=120)
        assert len(canvases) >= 2, "at least one live drawing, then the final one"
        assert all(isinstance(c, ipympl.Canvas) for c in canvases)
        live = [c for c in canvases if getattr(c.figure, "parallelgraph_live", None)]
        assert live and canvases[-1] not in live
        assert all(c.comm is None for c in canvases[:-1]) and canvases[-1].comm is not None
        output, fitting = dashboard._canvas_area.outputs  # the canvas and its fitting script
        shown = output["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        assert shown == canvases[-1].model_id
        assert canvases[-1].parallelgraph_fit_class in fitting["data"]["text/html"]
        assert "running:" not in canvases[-1].figure.axes[0].get_title(loc="left")
    finally:
        dashboard.close()


@needs_proc
def test_the_dask_workers_cpu_time_is_the_runs_own_not_a_neighbours():
    """Under the Dask executor the ops run in worker processes that this process waits on:
    named as ours (`worker_pids`), their work is own_cores, not other processes'."""
    if not executor_spec("dask").usable():
        pytest.skip("dask.distributed is not installed")
    dashboard = pg.dashboard(slow_chain, width=512, layers=12, repeats=2, executor="dask")
    try:
        dashboard.run()
        result = dashboard.wait(timeout=180)
        assert dashboard.ending == "done", dashboard.status
        pids = list(viewer.worker_pids(dashboard.runner.session))
        assert len(pids) == 2 and os.getpid() not in pids
        load = result.load
        assert load is not None and load.wall_s >= MIN_WALL_S, load
        # the matmuls ran in the workers: most of a core's worth of their time is ours
        assert load.own_cores >= 0.5, load
    finally:
        dashboard.close()
    assert viewer.worker_pids(None) == ()
