"""The dashboard, driven in-process: no browser, no kernel.

Widgets work without a front end: setting `slider.value` fires the same observers a browser
would, `button.click()` the same handlers, and the output area's state (PNG bytes, HTML) is
readable on the kernel side. Runs go in a background thread, so every step that starts one is
followed by `dash.wait()`. Graphs are tiny so every run takes milliseconds; the time goes into
drawing Gantt charts (~0.2 s each). How runs end (stopped, interrupted, failed) is in
tests/test_dashboard_runs.py.
"""

from __future__ import annotations

import doctest
import html
import re
import threading

import pytest

pytest.importorskip("ipywidgets")

import parallelgraph as pg
from parallelgraph.config import cpu_count
from parallelgraph.experiments import presets, stats
from parallelgraph.widgets import Dashboard, GraphSource, Knobs, Result, Runner, Settings
from parallelgraph.widgets import dashboard as widgets
from parallelgraph.widgets.report import summary_rows
from parallelgraph.widgets.runner import run as run_settings
from parallelgraph.widgets.settings import KNOB_NAMES, preset_graph

TINY = {"batch": 8, "hidden": 16, "repeats": 2}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def three_branches(batch: int = 8, width: int = 16, branches: int = 3, dtype: str = "float32"):
    """A user's own graph: independent tanh(x @ w) branches, summed."""
    outputs = []
    for index in range(branches):
        with pg.scope(f"branch{index}"):
            x = pg.random_normal((batch, width), seed=index, dtype=dtype)
            w = pg.variable((width, width), name="w", dtype=dtype)
            outputs.append(pg.tanh(pg.matmul(x, w)))
    return pg.add_n(outputs, name="out")


@pytest.fixture
def dash():
    dashboard = Dashboard(**TINY)
    yield dashboard
    dashboard.close()


@pytest.fixture
def own():
    dashboard = pg.dashboard(
        three_branches, batch=(8, 64), width=[16, 32], branches=(1, 4), repeats=2
    )
    yield dashboard
    dashboard.close()


def png_of(dashboard: Dashboard) -> bytes:
    return bytes(dashboard.gantt.value)


def png_height(png: bytes) -> int:
    return int.from_bytes(png[20:24], "big")  # IHDR: width at 16, height at 20


def parallelgraph_threads() -> int:
    return sum(t.name.startswith("parallelgraph-") for t in threading.enumerate())


def change(dashboard: Dashboard, name: str, value: object) -> Result | None:
    """What a slider release does, then wait for the run it starts."""
    dashboard.controls[name].value = value
    return dashboard.wait(timeout=60)


def preset_settings(**values: object) -> Settings:
    knobs = {k: values.pop(k) for k in list(values) if k in KNOB_NAMES}
    params = {"preset": "two-networks", "batch": 64, "hidden": 256, "dtype": "float32"}
    return Settings.of(GraphSource(preset_graph), {**params, **values}, Knobs(**knobs))


# -- your own graph -------------------------------------------------------------------------
def test_build_function_parameters_become_interact_controls(own):
    ipywidgets = pytest.importorskip("ipywidgets")
    c = own.controls
    assert isinstance(c["batch"], ipywidgets.IntSlider) and (c["batch"].min, c["batch"].max) == (
        8,
        64,
    )
    assert c["batch"].value == 8  # the signature's default starts it
    assert isinstance(c["width"], ipywidgets.Dropdown) and c["width"].options == (16, 32)
    assert isinstance(c["branches"], ipywidgets.IntSlider) and c["branches"].value == 3
    assert isinstance(c["dtype"], ipywidgets.Text)  # a str default: interact's text box
    assert not c["batch"].continuous_update
    assert {"inter_op_threads", "intra_op_threads", "streams", "executor", "device"} <= set(c)


def test_explicit_widgets_and_fixed_values_are_accepted():
    ipywidgets = pytest.importorskip("ipywidgets")
    slider = ipywidgets.IntSlider(min=8, max=64, value=16, description="rows")
    dashboard = pg.dashboard(three_branches, batch=slider, width=ipywidgets.fixed(32), repeats=1)
    try:
        assert dashboard.controls["batch"] is slider and slider.description == "rows"
        assert not slider.continuous_update
        dashboard.run()
        assert dashboard.wait(timeout=60).params == {
            "batch": 16,
            "width": 32,
            "branches": 3,
            "dtype": "float32",
        }
    finally:
        dashboard.close()


def test_scripting_contract_on_your_own_graph(own):
    assert own.status.startswith("not run")
    own.run()
    result = own.wait(timeout=60)
    assert result is own.result and own.ending == "done"
    assert result.params == {"batch": 8, "width": 16, "branches": 3, "dtype": "float32"}
    assert result.trace.scopes()[:3] == ["branch0", "branch1", "branch2"]
    assert "three_branches(batch=8, width=16, branches=3" in own.status
    assert "median" in own.status and "done: 2 of 2 runs" in own.status
    assert "3 scopes: " in own.table.value and "ops" in own.table.value
    overlaps = sorted(result.pair_overlaps())  # the median run's, as explain() says
    assert f"pairs side by side (median {overlaps[1]:.2f})" in own.table.value
    first = png_of(own)
    change(own, "branches", 2)  # a parameter: a new graph
    assert own.result.params["branches"] == 2 and own.result.rebuilt == "graph"
    assert own.result.trace.scopes() == ["branch0", "branch1", ""]
    assert png_of(own) != first
    change(own, "inter_op_threads", 1)  # a knob: a new session on the same graph
    assert own.result.rebuilt == "session" and own.result.knobs.inter_op_threads == 1


def test_a_built_graph_and_its_fetches_get_the_knobs_only():
    graph = pg.Graph("mine")
    with graph.as_default():
        out = three_branches()
    dashboard = pg.dashboard(graph, out, repeats=2, inter_op_threads=1)
    try:
        assert set(dashboard.controls) == set(KNOB_NAMES)
        dashboard.run()
        result = dashboard.wait(timeout=60)
        assert result.built.graph is graph and result.params == {}
        assert "graph 'mine'" in dashboard.status
    finally:
        dashboard.close()
    with pytest.raises(TypeError, match="unknown options"):
        pg.dashboard(graph, out, batch=(8, 64))
    with pytest.raises(ValueError, match="one graph"):
        pg.dashboard(pg.Graph("other"), out)


def test_bad_dashboard_options_are_refused_at_once():
    with pytest.raises(TypeError, match="unknown options"):
        Dashboard(threads=2)
    with pytest.raises(TypeError, match="no parameter"):
        pg.dashboard(three_branches, size=(1, 2))
    with pytest.raises(TypeError, match="needs a control or a default"):
        pg.dashboard(lambda batch: None)
    with pytest.raises(TypeError, match="run knob"):
        pg.dashboard(lambda repeats=1: None)
    with pytest.raises(ValueError, match="executor"):
        Knobs(executor="gpu")
    with pytest.raises(ValueError, match="inter_op_threads"):
        Knobs(inter_op_threads=-1)
    with pytest.raises(ValueError, match="repeats"):
        Knobs(repeats=0)


def test_a_build_function_that_returns_nothing_fails_in_the_output_area():
    dashboard = pg.dashboard(lambda batch=8: None, repeats=1)
    try:
        dashboard.run()
        dashboard.wait(timeout=60)
        assert dashboard.ending == "failed" and "nothing to fetch" in dashboard.message.value
        assert not dashboard.run_button.disabled
    finally:
        dashboard.close()


# -- settings, graphs and the pure run function ---------------------------------------------
def test_zero_threads_means_one_per_core_as_in_config():
    dashboard = Dashboard(inter_op_threads=0, **TINY)
    try:
        assert dashboard.knobs().inter_op_threads == 0
        dashboard.run()
        result = dashboard.wait(timeout=60)
        assert result.trace.metadata["config"]["inter_op_threads"] == cpu_count()
    finally:
        dashboard.close()


def test_rebuild_keys_separate_graph_from_session_knobs():
    base = preset_settings()
    assert preset_settings(inter_op_threads=1).graph_key() == base.graph_key()
    assert preset_settings(inter_op_threads=1).session_key() != base.session_key()
    assert preset_settings(stream_policy="single").session_key() != base.session_key()
    assert preset_settings(hidden=32).graph_key() != base.graph_key()
    assert preset_settings(device="gpu:0").graph_key() != base.graph_key()
    assert preset_settings(repeats=9).session_key() == base.session_key()
    assert preset_settings(inter_op_threads=1).same_graph(base)
    assert not preset_settings(hidden=32).same_graph(base)


@pytest.mark.parametrize(
    ("name", "size", "batch", "hidden"),
    [
        ("two-networks", "small", 64, 256),
        ("wide", "small", 64, 128),
        ("chain", "small", 64, 128),
        ("random", "small", 64, 128),
    ],
)
def test_the_presets_build_function_gives_the_presets_at_their_named_sizes(
    name, size, batch, hidden
):
    """The sliders' graphs and `presets` stay the same graphs (no drift between copies)."""
    params = {"preset": name, "batch": batch, "hidden": hidden, "dtype": "float32"}
    ours = GraphSource(preset_graph).make(params, "cpu")
    theirs = presets.build_preset(name, size)
    describe = lambda g: [(op.name, op.type, op.shape, op.device) for op in g.ops]  # noqa: E731
    assert describe(ours.graph) == describe(theirs.graph)
    assert ours.scopes == theirs.scopes
    on_gpu = GraphSource(preset_graph).make(params, "gpu:0")
    assert {op.device for op in on_gpu.graph.ops} == {"gpu:0"}


def test_run_is_a_function_of_the_settings_and_leaves_no_threads():
    before = threading.active_count()
    settings = preset_settings(inter_op_threads=2, intra_op_threads=2, **TINY)
    result = run_settings(settings)
    assert isinstance(result, Result)
    assert len(result.measurement.traces) == 2 and len(result.measurement.warmup_ms) == 1
    assert result.rebuilt == "graph" and result.ending == "done"
    assert 0.0 <= result.overlap() <= 1.0
    assert result.bound_ms() <= result.trace.makespan_ms + 1e-9
    assert threading.active_count() == before


def test_runner_rebuilds_only_what_changed_and_warms_each_session_once():
    with Runner() as runner:
        first = runner.run(preset_settings(**TINY))
        assert first.rebuilt == "graph" and len(first.measurement.warmup_ms) == 1
        again = runner.run(preset_settings(**{**TINY, "repeats": 3}))
        assert again.rebuilt == "" and again.measurement.warmup_ms == ()
        graph = runner.built.graph
        assert runner.run(preset_settings(**TINY, inter_op_threads=1)).rebuilt == "session"
        assert runner.built.graph is graph
        assert runner.run(preset_settings(**TINY, streams=2)).rebuilt == "session"
        assert runner.run(preset_settings(**{**TINY, "hidden": 32})).rebuilt == "graph"
        assert (runner.graph_builds, runner.session_builds) == (2, 4)
        session = runner.session
    assert session.closed
    with Runner(warmup=False) as cold:
        assert cold.run(preset_settings(**TINY)).measurement.warmup_ms == ()


def test_widgets_module_docstring_examples():
    from parallelgraph.widgets import runner, settings

    results = [
        doctest.testmod(module, extraglobs={"pg": pg}, optionflags=doctest.ELLIPSIS)
        for module in (settings, runner)
    ]
    assert sum(r.failed for r in results) == 0 and sum(r.attempted for r in results) >= 2


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
        assert not dashboard.interactive  # no kernel here: the PNG timeline
    finally:
        dashboard.close()


def test_run_button_fills_the_output_area(dash):
    assert dash.gantt.value == b"" and dash.runs == 0
    assert dash.gantt.layout.display == "none"  # no empty picture before the first run
    dash.run_button.click()
    assert dash.stop_button.disabled is False or dash.busy is False  # Stop while running
    dash.wait(timeout=60)
    assert png_of(dash).startswith(PNG_MAGIC) and dash.gantt.layout.display is None
    table = dash.table.value
    assert "median makespan" in table and "net1/net2" in table and "GFLOP per run" in table
    assert "critical-path bound" in table and "utilization" in table
    assert "explain()" in dash.explanation.value
    assert "median" in dash.status and "(new graph)" in dash.status
    assert "warm-up" in dash.status
    assert dash.progress.value == dash.progress.max and dash.progress.bar_style == "success"
    assert not dash.run_button.disabled and dash.stop_button.disabled
    assert dash.message.value == ""


def test_without_a_warm_up_the_status_says_the_first_run_compiles():
    dashboard = Dashboard(warmup=False, **TINY)
    try:
        dashboard.run()
        dashboard.wait(timeout=60)
        assert "no warm-up: the first run includes compilation" in dashboard.status
    finally:
        dashboard.close()


def test_changes_rerun_only_after_the_first_run(dash):
    dash.controls["inter_op_threads"].value = 1
    assert dash.runs == 0 and dash.result is None  # before the first Run: nothing heavy
    dash.run()
    dash.wait(timeout=60)
    first_png = png_of(dash)
    change(dash, "inter_op_threads", 3)  # a slider release
    assert dash.runs == 2 and dash.result.knobs.inter_op_threads == 3
    assert dash.result.rebuilt == "session"
    assert png_of(dash) != first_png
    change(dash, "hidden", 32)
    assert dash.result.rebuilt == "graph" and dash.result.params["hidden"] == 32
    change(dash, "repeats", 3)
    assert dash.result.rebuilt == "" and len(dash.result.measurement.traces) == 3
    change(dash, "preset", "chain")
    assert "no independent scopes" in dash.table.value


def test_a_change_during_a_run_is_run_after_it(dash):
    dash.run()
    dash.controls["inter_op_threads"].value = 1  # arrives while the first run goes
    dash.wait(timeout=60)
    assert dash.result.knobs.inter_op_threads == 1 and not dash.busy


def test_rerun_on_change_can_be_switched_off(dash):
    dash.run()
    dash.wait(timeout=60)
    dash.auto_run.value = False
    change(dash, "intra_op_threads", 2)
    assert dash.runs == 1 and dash.result.knobs.intra_op_threads == 1
    dash.run_button.click()
    dash.wait(timeout=60)
    assert dash.result.knobs.intra_op_threads == 2


def test_pins_compare_only_runs_of_the_same_graph(dash):
    dash.pin_button.click()
    assert "Run first" in dash.message.value and dash.baseline is None
    dash.controls["inter_op_threads"].value = 1
    dash.run()
    dash.wait(timeout=60)
    single_height = png_height(png_of(dash))
    dash.pin_button.click()
    assert dash.baseline is dash.result and not dash.clear_button.disabled
    change(dash, "inter_op_threads", 2)
    dash.pin_button.click()  # a second pin: two baselines at once
    assert [p.knobs.inter_op_threads for p in dash.pinned] == [1, 2]
    change(dash, "intra_op_threads", 2)
    rows = {row[0]: row[1:] for row in summary_rows(dash.result, dash.pinned)}
    expected = stats.speedup_text(
        dash.pinned[0].measurement.makespans_ms, dash.result.measurement.makespans_ms
    )
    assert rows["current's speed-up vs this"][1] == expected and "95% CI" in expected
    assert "pin 2" in dash.table.value
    three_panels = png_height(png_of(dash))
    assert three_panels > single_height  # the pins and the current run, one time axis
    change(dash, "hidden", 32)  # another graph: no speed-up, both absolute times
    rows = {row[0]: row[1:] for row in summary_rows(dash.result, dash.pinned)}
    assert rows["current's speed-up vs this"][1:] == ("another graph: not compared",) * 2
    assert rows["median makespan"][1].endswith(")") and "ms" in rows["median makespan"][1]
    assert "another graph" in dash.table.value
    assert png_height(png_of(dash)) == single_height  # pins of another graph are not drawn
    dash.clear_button.click()
    assert dash.pinned == [] and dash.clear_button.disabled
    assert "pin 1" not in dash.table.value


def test_the_history_of_pins_is_small(dash):
    dash.run()
    dash.wait(timeout=60)
    for inter in range(1, widgets.MAX_PINNED + 3):
        change(dash, "inter_op_threads", inter)
        dash.pin()
    assert len(dash.pinned) == widgets.MAX_PINNED
    assert dash.pinned[-1].knobs.inter_op_threads == widgets.MAX_PINNED + 2


def test_soft_placement_is_said_once_in_the_output_area(dash, no_gpu):
    dash.controls["device"].value = "gpu:0"
    assert dash.controls["streams"].disabled  # no GPU: streams would do nothing
    assert "no GPU" in dash.controls["streams"].description
    dash.run()
    dash.wait(timeout=60)
    assert dash.message.value.count("<li>soft placement") == 1
    assert "Soft placement" in dash.explanation.value
    change(dash, "inter_op_threads", 1)  # a new session: still said, still once
    assert dash.result.rebuilt == "session" and dash.message.value.count("<li>soft placement") == 1
    change(dash, "device", "cpu")
    assert dash.controls["streams"].disabled and dash.message.value == ""


def test_two_hundred_rebuilds_leave_the_thread_count_where_it_started():
    """Each thread or stream change makes a new session and joins the old one's threads."""
    run_settings(preset_settings(**TINY))  # imports and first-use costs out of the way
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
            result = dashboard.runner.run(dashboard.settings())  # the call a run makes
            assert result.rebuilt in ("graph", "session")
            k = result.knobs
            expected = (k.inter_op_threads - 1) + (k.intra_op_threads - 1)
            assert parallelgraph_threads() == expected, f"after rebuild {step}"
        assert dashboard.runner.session_builds == 200
        dashboard.run()  # and through the widget path once more
        dashboard.wait(timeout=60)
    finally:
        dashboard.close()
    assert threading.active_count() == start


def test_rebuilds_through_the_widget_path_close_old_pools(dash):
    start = threading.active_count()
    dash.run()
    dash.wait(timeout=60)
    for inter in (4, 1, 3, 2, 4, 1):
        change(dash, "inter_op_threads", inter)
        assert parallelgraph_threads() == inter - 1
    dash.close()
    assert threading.active_count() == start and parallelgraph_threads() == 0
    assert dash.runner.session is None


def test_pin_says_what_it_kept(dash):
    """Pin gave no feedback: now the message line names the pin, its run and median, an
    already pinned run, a dropped oldest pin, and cleared pins."""
    dash.run()
    dash.wait(timeout=60)
    first = dash.result
    dash.pin_button.click()
    said = html.unescape(dash.message.value)
    assert f"Pinned as pin 1: {first.settings.label()}, median {first.median_ms:.2f} ms" in said
    assert "The table compares the next runs with it" in said and "dropped" not in said
    dash.pin_button.click()
    assert "This run is pin 1 already." in html.unescape(dash.message.value)
    assert dash.pinned == [first]
    for hidden in (32, 64, 128, 256):  # other graphs: pinned, not drawn (a quick timeline)
        change(dash, "hidden", hidden)
        assert dash.message.value == ""  # a new run cleared the last answer
        dash.pin_button.click()
    said = html.unescape(dash.message.value)
    assert f"Pinned as pin {widgets.MAX_PINNED}: " in said and "hidden=256" in said
    assert f"The oldest pin was dropped: at most {widgets.MAX_PINNED}" in said
    assert first not in dash.pinned
    dash.clear_button.click()
    assert f"{widgets.MAX_PINNED} pin(s) cleared." in html.unescape(dash.message.value)


def test_speedups_against_pins_carry_their_uncertainty_everywhere(dash):
    """Issue 23: a pin showed the same settings at "×0.65", from one run. Now the status, the
    table and the timeline's title give the same words by the one rule: the CI and verdict, or
    "one run: not a conclusion" while a side has a single run; Pin says so of a one-run pin."""
    dash.controls["repeats"].value = 1
    dash.run()
    dash.wait(timeout=60)
    dash.pin_button.click()
    assert f'It has 1 run: a speed-up against it will say "{stats.ONE_RUN}"' in html.unescape(
        dash.message.value
    )
    change(dash, "inter_op_threads", 2)
    change(dash, "repeats", 6)  # six runs against the pin's one: still no conclusion

    def shown(pin_number: int) -> str:
        rows = {row[0]: row[1:] for row in summary_rows(dash.result, dash.pinned)}
        cell = rows["current's speed-up vs this"][pin_number]
        if pin_number == len(dash.pinned):  # the status gives the latest pin's
            assert f"; {cell} against pin {pin_number};" in dash.status
        assert f"{cell} vs pin {pin_number}" in dash._figure.get_suptitle()
        assert cell in html.unescape(dash.table.value)
        return cell

    one_run = shown(1)
    pin = dash.pinned[0].measurement.makespans_ms
    assert one_run == stats.speedup_text(pin, dash.result.measurement.makespans_ms)
    assert one_run.endswith("(one run: not a conclusion)")
    dash.pin_button.click()  # pin 2: six runs, the fewest a 95% CI is computed from
    change(dash, "inter_op_threads", 1)
    assert shown(1).endswith("(one run: not a conclusion)")
    measured = shown(2)  # the latest pin, as the status gives it
    assert re.fullmatch(r"×\d+\.\d\d \(95% CI \d+\.\d\d-\d+\.\d\d, [a-z ]+\)", measured)
    assert measured == stats.speedup_text(
        dash.pinned[1].measurement.makespans_ms, dash.result.measurement.makespans_ms
    )


def test_the_overlap_row_says_many_scopes_as_a_group():
    """Issue #40: eight heads are said as a group (pairs side by side, the median), not by the
    first two scopes, which may have shared a lane while the rest ran side by side."""
    from parallelgraph.widgets.report import summary_rows

    dash = pg.dashboard(preset="attention", auto_run=False)
    try:
        dash.run()
        result = dash.wait(timeout=120)
        rows = {row[0]: row[1] for row in summary_rows(result)}
        overlaps = sorted(result.pair_overlaps())
        scopes = len(result.built.scopes)
        assert len(overlaps) == scopes * (scopes - 1) // 2 and scopes > 2
        side = sum(value >= 0.5 for value in overlaps)
        assert rows["overlap of the scopes"] == (
            f"{scopes} scopes: {side} of {len(overlaps)} pairs side by side "
            f"(median {overlaps[len(overlaps) // 2]:.2f})"
        )
    finally:
        dash.close()


def test_a_gpu_placement_without_a_gpu_says_first_that_it_ran_on_the_cpu(monkeypatch):
    """Issue #40: 'on gpu:0 ... 1 stream(s)' first and the CPU after it read as a GPU run."""
    from parallelgraph.widgets import settings as settings_module

    monkeypatch.setattr(settings_module, "_gpu_usable", lambda: False)
    dash = pg.dashboard(preset="two-networks", auto_run=False, device="gpu:0")
    try:
        label = dash.settings().label()
        assert " on cpu (gpu:0 asked: no usable GPU, soft placement), " in label
        assert "stream(s)" not in label
        monkeypatch.setattr(settings_module, "_gpu_usable", lambda: True)
        label = dash.settings().label()
        assert " on gpu:0, " in label and "1 stream(s) branches" in label
    finally:
        dash.close()
