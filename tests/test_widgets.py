"""The dashboard, driven in-process: no browser, no kernel.

Widgets work without a front end: setting `slider.value` fires the same observers a browser
would, `button.click()` the same handlers, and the output area's state (PNG bytes, HTML) is
readable on the kernel side. Graphs are tiny so every run takes milliseconds; the time goes
into drawing Gantt charts (~0.2 s each).
"""

from __future__ import annotations

import doctest
import threading

import pytest

pytest.importorskip("ipywidgets")

import parallelgraph as pg
from parallelgraph import presets, widgets
from parallelgraph.config import cpu_count
from parallelgraph.widgets import Dashboard, Result, Runner, Settings

TINY = {"batch": 8, "hidden": 16, "repeats": 2}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def dash():
    dashboard = Dashboard(**TINY)
    yield dashboard
    dashboard.close()


def png_of(dashboard: Dashboard) -> bytes:
    return bytes(dashboard.gantt.value)


def png_height(png: bytes) -> int:
    return int.from_bytes(png[20:24], "big")  # IHDR: width at 16, height at 20


def parallelgraph_threads() -> int:
    return sum(t.name.startswith("parallelgraph-") for t in threading.enumerate())


# -- settings, graphs and the pure run function ---------------------------------------------
def test_zero_threads_means_one_per_core_as_in_config():
    dashboard = Dashboard(inter_op_threads=0, **TINY)
    try:
        assert dashboard.settings().inter_op_threads == 0
        result = dashboard.run()
        assert result.trace.metadata["config"]["inter_op_threads"] == cpu_count()
    finally:
        dashboard.close()


def test_settings_are_checked_up_front():
    with pytest.raises(ValueError, match="preset"):
        Settings(preset="ring")
    with pytest.raises(ValueError, match="inter_op_threads"):
        Settings(inter_op_threads=-1)
    with pytest.raises(ValueError, match="repeats"):
        Settings(repeats=0)
    with pytest.raises(TypeError, match="unknown options"):
        Dashboard(threads=2)


def test_rebuild_keys_separate_graph_from_session_knobs():
    base = Settings()
    assert Settings(inter_op_threads=1).graph_key() == base.graph_key()
    assert Settings(inter_op_threads=1).session_key() != base.session_key()
    assert Settings(stream_policy="single").session_key() != base.session_key()
    assert Settings(hidden=32).graph_key() != base.graph_key()
    assert Settings(repeats=9).session_key() == base.session_key()


@pytest.mark.parametrize(
    ("name", "size", "batch", "hidden"),
    [
        ("two-networks", "small", 64, 256),
        ("wide", "small", 64, 128),
        ("chain", "small", 64, 128),
        ("random", "small", 64, 128),
    ],
)
def test_dashboard_graphs_are_the_presets_at_their_named_sizes(name, size, batch, hidden):
    """The sliders' graphs and `presets` stay the same graphs (no drift between copies)."""
    ours = widgets.build_graph(Settings(preset=name, batch=batch, hidden=hidden))
    theirs = presets.build_preset(name, size)
    describe = lambda p: [(op.name, op.type, op.shape) for op in p.graph.ops]  # noqa: E731
    assert describe(ours) == describe(theirs)
    assert ours.scopes == theirs.scopes
    assert ours.fetch.op.name == theirs.fetch.op.name


def test_run_is_a_function_of_the_settings_and_leaves_no_threads():
    before = threading.active_count()
    result = widgets.run(Settings(inter_op_threads=2, intra_op_threads=2, **TINY))
    assert isinstance(result, Result)
    assert len(result.measurement.traces) == 2
    assert result.rebuilt == "graph"
    assert 0.0 <= result.overlap() <= 1.0
    assert result.bound_ms() <= result.trace.makespan_ms + 1e-9
    assert threading.active_count() == before


def test_runner_rebuilds_only_what_changed():
    with Runner() as runner:
        assert runner.run(Settings(**TINY)).rebuilt == "graph"
        assert runner.run(Settings(**{**TINY, "repeats": 3})).rebuilt == ""
        graph = runner.preset.graph
        assert runner.run(Settings(**TINY, inter_op_threads=1)).rebuilt == "session"
        assert runner.preset.graph is graph
        assert runner.run(Settings(**TINY, streams=2)).rebuilt == "session"
        assert runner.run(Settings(**{**TINY, "hidden": 32})).rebuilt == "graph"
        assert (runner.graph_builds, runner.session_builds) == (2, 4)
        session = runner.session
    assert session.closed


def test_widgets_module_docstring_examples():
    result = doctest.testmod(widgets, extraglobs={"pg": pg}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 3


# -- the dashboard --------------------------------------------------------------------------
def test_pg_dashboard_shortcut_and_display():
    dashboard = pg.dashboard(**TINY)
    try:
        assert isinstance(dashboard, Dashboard)
        bundle = dashboard._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        names = set(dashboard.controls)
        assert {"preset", "batch", "hidden", "dtype", "device", "executor"} <= names
        assert {"inter_op_threads", "intra_op_threads", "streams", "stream_policy"} <= names
        assert "repeats" in names
        sliders = [c for c in dashboard.controls.values() if hasattr(c, "continuous_update")]
        assert sliders and not any(s.continuous_update for s in sliders)
        assert "not run" in repr(dashboard)
    finally:
        dashboard.close()


def test_run_button_fills_the_output_area(dash):
    assert dash.gantt.value == b"" and dash.runs == 0
    assert dash.gantt.layout.display == "none"  # no empty picture before the first run
    dash.run_button.click()
    assert png_of(dash).startswith(PNG_MAGIC) and dash.gantt.layout.display is None
    assert "median makespan" in dash.table.value and "overlap net1/net2" in dash.table.value
    assert "critical-path bound" in dash.table.value and "utilization" in dash.table.value
    assert "explain()" in dash.explanation.value
    assert "median" in dash.status.value and "(new graph)" in dash.status.value
    assert dash.progress.value == dash.progress.max and dash.progress.bar_style == "success"
    assert not dash.run_button.disabled and dash.message.value == ""


def test_changes_rerun_only_after_the_first_run(dash):
    dash.controls["inter_op_threads"].value = 1
    assert dash.runs == 0 and dash.result is None  # before the first Run: nothing heavy
    dash.run()
    first_png = png_of(dash)
    dash.controls["inter_op_threads"].value = 3  # a slider release
    assert dash.runs == 2 and dash.result.settings.inter_op_threads == 3
    assert dash.result.rebuilt == "session"
    assert png_of(dash) != first_png
    dash.controls["hidden"].value = 32
    assert dash.result.rebuilt == "graph" and dash.result.settings.hidden == 32
    dash.controls["repeats"].value = 3
    assert dash.result.rebuilt == "" and len(dash.result.measurement.traces) == 3
    dash.controls["preset"].value = "chain"
    assert "no independent scopes" in dash.table.value


def test_rerun_on_change_can_be_switched_off(dash):
    dash.run()
    dash.auto_run.value = False
    dash.controls["intra_op_threads"].value = 2
    assert dash.runs == 1 and dash.result.settings.intra_op_threads == 1
    dash.run_button.click()
    assert dash.result.settings.intra_op_threads == 2


def test_pin_a_baseline_and_compare(dash):
    dash.pin_button.click()
    assert "Run first" in dash.message.value and dash.baseline is None
    dash.controls["inter_op_threads"].value = 1
    dash.run()
    single_height = png_height(png_of(dash))
    dash.pin_button.click()
    assert dash.baseline is dash.result and not dash.clear_button.disabled
    dash.controls["inter_op_threads"].value = 2
    assert dash.baseline.settings.inter_op_threads == 1
    assert "baseline" in dash.table.value
    speedup = dict((row[0], row[1]) for row in widgets.summary_rows(dash.result, dash.baseline))
    expected = dash.baseline.median_ms / dash.result.median_ms
    assert speedup["speed-up vs baseline"] == f"{expected:.2f}x"
    assert png_height(png_of(dash)) > single_height  # both timelines, one above the other
    dash.clear_button.click()
    assert dash.baseline is None and dash.clear_button.disabled
    assert "baseline" not in dash.table.value.split("</tr>")[0]
    assert png_height(png_of(dash)) == single_height


def test_errors_show_in_the_output_area_and_the_dashboard_keeps_working(dash, monkeypatch):
    dash.run()
    good_png = png_of(dash)

    def broken(settings):
        raise RuntimeError("the graph builder broke")

    monkeypatch.setattr(widgets, "build_graph", broken)
    dash.controls["hidden"].value = 32  # a graph rebuild: fails
    assert dash.runs == 2 and isinstance(dash.error, RuntimeError)
    assert "Run failed" in dash.message.value and "the graph builder broke" in dash.message.value
    assert "traceback" in dash.message.value
    assert (
        dash.status.value.startswith("error: RuntimeError") and "previous run" in dash.status.value
    )
    assert dash.progress.bar_style == "danger" and not dash.run_button.disabled
    assert png_of(dash) == good_png  # the last good timeline stays
    monkeypatch.undo()
    dash.run_button.click()
    assert dash.error is None and dash.message.value == ""
    assert dash.result.settings.hidden == 32 and png_of(dash) != good_png


def test_soft_placement_is_said_in_the_output_area(dash, no_gpu):
    dash.controls["device"].value = "gpu:0"
    assert not dash.controls["streams"].disabled
    dash.run()
    assert "soft placement" in dash.message.value
    assert "Soft placement" in dash.explanation.value
    dash.controls["streams"].value = 2  # same session's warning, still said
    assert dash.result.rebuilt == "session" and "soft placement" in dash.message.value
    dash.controls["device"].value = "cpu"
    assert dash.controls["streams"].disabled and dash.message.value == ""


def test_two_hundred_rebuilds_leave_the_thread_count_where_it_started():
    """Each thread or stream change makes a new session and joins the old one's threads."""
    widgets.run(Settings(**TINY))  # imports and first-use costs out of the way
    start = threading.active_count()
    dashboard = Dashboard(**{**TINY, "repeats": 1}, auto_run=False)
    knobs = [
        ("inter_op_threads", (1, 2, 3, 4)),
        ("intra_op_threads", (1, 2, 3)),
        ("streams", (1, 2)),
    ]
    try:
        for step in range(200):
            name, values = knobs[step % len(knobs)]
            control = dashboard.controls[name]
            control.value = values[(values.index(control.value) + 1) % len(values)]
            result = dashboard.runner.run(dashboard.settings())  # the call Dashboard.run makes
            assert result.rebuilt in ("graph", "session")
            config = result.settings
            expected = (config.inter_op_threads - 1) + (config.intra_op_threads - 1)
            assert parallelgraph_threads() == expected, f"after rebuild {step}"
        assert dashboard.runner.session_builds == 200
        dashboard.run()  # and through the widget path once more
    finally:
        dashboard.close()
    assert threading.active_count() == start


def test_rebuilds_through_the_widget_path_close_old_pools(dash):
    start = threading.active_count()
    dash.run()
    for inter in (4, 1, 3, 2, 4, 1):
        dash.controls["inter_op_threads"].value = inter
        assert parallelgraph_threads() == inter - 1
    dash.close()
    assert threading.active_count() == start and parallelgraph_threads() == 0
    assert dash.runner.session is None
