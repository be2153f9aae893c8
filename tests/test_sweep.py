"""Sweeps: interleaved shuffled rounds, every measurement kept, honest tables, files, plots."""

import csv
import json

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.experiments.sweeps import SweepResult

GRID = {"size": ["tiny"], "inter": [1, 2], "intra": [1, 2]}


@pytest.fixture(scope="module")
def result():
    return pg.sweep("two-networks", GRID, repeats=6, seed=7, progress=False, noise_check=False)


def test_every_cell_measured_in_shuffled_interleaved_rounds(result):
    assert len(result.cells) == 4 and result.complete
    assert len(result.measurements) == 24
    for round_index in range(6):
        in_round = [m for m in result.measurements if m.round == round_index]
        assert sorted(m.cell for m in in_round) == [0, 1, 2, 3]
        assert [m.position for m in in_round] == [0, 1, 2, 3]
    orders = [tuple(m.cell for m in result.measurements if m.round == r) for r in range(6)]
    assert len(set(orders)) > 1  # shuffled, not the same order every round
    expected = [tuple(np.random.default_rng(7).permutation(4)) for _ in range(1)]
    assert orders[0] == expected[0]
    assert all(m.makespan_ms > 0 and m.wall_ms >= m.makespan_ms * 0.5 for m in result.measurements)


def test_table_has_medians_cis_speedups_verdicts_and_predictions(result):
    rows = result.rows()
    assert [(r.params["inter"], r.params["intra"]) for r in rows] == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    ]
    assert rows[0].verdict == "baseline" and rows[0].speedup == 1.0
    for row in rows:
        low, high = row.ci_ms
        assert low <= row.median_ms <= high and row.n == 6
        assert row.verdict in ("baseline", "faster", "slower", "within noise")
        s_low, s_high = row.speedup_ci
        assert s_low <= row.speedup <= s_high
        assert row.predicted_ms is not None and row.predicted_ms > 0
    text = str(result)
    assert "speed-up (95% CI)" in text
    assert "a verdict is given only when its 95% CI excludes 1.0" in text
    assert "<table>" in result._repr_html_()


def test_json_round_trip_and_csv(result, tmp_path):
    loaded = SweepResult.load(result.to_json(tmp_path / "r.json"))
    assert loaded.cells == result.cells and loaded.measurements == result.measurements
    assert [r.median_ms for r in loaded.rows()] == [r.median_ms for r in result.rows()]
    assert json.loads((tmp_path / "r.json").read_text())["format"] == "parallelgraph-sweep/1"
    with open(result.to_csv(tmp_path / "r.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 24 and set(rows[0]) >= {"inter", "intra", "size", "makespan_ms"}
    with pytest.raises(ValueError, match="not a parallelgraph sweep"):
        bad = tmp_path / "bad.json"
        bad.write_text("{}")
        SweepResult.load(bad)


def test_plots_and_median_gantt(result):
    assert result.heatmap("inter", "intra") is not None
    assert result.speedup_curve("inter", hue="intra") is not None
    trace = result.median_trace(inter=2, intra=1)
    assert trace.metadata["config"]["inter_op_threads"] == 2
    assert result.gantt(inter=1, intra=1) is not None
    with pytest.raises(ValueError, match="matches 2 cells"):
        result.median_trace(inter=1)


def test_interrupt_returns_what_was_measured(monkeypatch):
    calls = {"n": 0}
    real_run = pg.Session.run

    def interrupting_run(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2 + 5:  # 2 warm-ups, then the 5th measured run
            raise KeyboardInterrupt
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(pg.Session, "run", interrupting_run)
    partial = pg.sweep(
        "two-networks",
        {"size": ["tiny"], "inter": [1, 2]},
        repeats=5,
        progress=False,
        noise_check=False,
    )
    assert not partial.complete and len(partial.measurements) == 4
    assert "INCOMPLETE" in str(partial)


def test_noise_check_warns_with_repeats_needed():
    with pytest.warns(RuntimeWarning, match=r"needs about \d+ repeats, not 2"):
        noisy = pg.sweep(
            "two-networks",
            {"size": ["tiny"], "inter": [1]},
            repeats=2,
            precision=1e-6,
            progress=False,
        )
    assert noisy.noise["repeats_needed"] > 2 and "noisy machine" in str(noisy)


def test_callable_builds_and_per_graph_baselines():
    def build(width):
        g = pg.Graph(f"w{width}")
        with g.as_default():
            pg.tanh(pg.random_normal((8, width), seed=1))  # a sink: fetched automatically
        return g

    swept = pg.sweep(
        build,
        {"width": [4, 8], "inter": [1, 2]},
        repeats=2,
        progress=False,
        noise_check=False,
        baseline={"width": 4, "inter": 1},
    )
    rows = swept.rows()
    assert [r.verdict for r in rows if r.params["inter"] == 1] == ["baseline", "baseline"]
    assert swept.baseline_of(3) == 2  # width 8, inter 2 is compared with width 8, inter 1


def test_bad_grids_are_refused():
    with pytest.raises(ValueError, match="empty"):
        pg.sweep("two-networks", {"inter": []}, progress=False)
    with pytest.raises(ValueError, match="repeats"):
        pg.sweep("two-networks", {"inter": [1]}, repeats=0, progress=False)
    with pytest.raises(TypeError, match="build"):
        pg.sweep(lambda: 42, {"inter": [1]}, progress=False, noise_check=False)


def test_a_sweep_of_one_repeat_calls_no_difference():
    result = pg.sweep(
        "two-networks",
        {"size": ["tiny"], "inter": [1, 2]},
        repeats=1,
        progress=False,
        noise_check=False,
        predict=False,
    )
    verdicts = [row.verdict for row in result.rows()]
    assert verdicts == ["baseline", "too few runs"]
    assert "too few runs" in str(result)
    result.heatmap("inter", "size")  # draws the cell without a verdict


def test_a_grid_key_named_like_a_statistic_keeps_its_values():
    """Issue 20: a grid key "n" was overwritten by the repeat count in rows() and table()."""
    result = pg.sweep(
        lambda n=2: _scaled_graph(n),
        {"n": [3, 5], "inter": [1]},
        repeats=2,
        progress=False,
        noise_check=False,
        predict=False,
    )
    rows = result.rows()
    assert [row.params["n"] for row in rows] == [3, 5] and [row.n for row in rows] == [2, 2]
    header, lines = result.table()
    assert header[:3] == ["param:n", "inter", "n"]  # the grid's n is named so: "n" is the runs
    assert [line[0] for line in lines] == ["3", "5"] and [line[2] for line in lines] == ["2", "2"]


def test_grid_keys_named_like_a_column_are_marked_in_the_table_csv_and_kept_in_json(tmp_path):
    result = pg.sweep(
        lambda n=2, round=0: _scaled_graph(n),
        {"n": [3], "round": [0, 1], "inter": [1]},
        repeats=2,
        progress=False,
        noise_check=False,
        predict=False,
    )
    header, _ = result.table()
    assert header[:3] == ["param:n", "round", "inter"] and len(set(header)) == len(header)
    with open(result.to_csv(tmp_path / "r.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert {"param:round", "round", "n", "inter"} <= set(rows[0])  # "n": no statistic in a CSV
    assert sorted({row["param:round"] for row in rows}) == ["0", "1"]
    assert sorted(row["round"] for row in rows) == ["0", "0", "1", "1"]  # the rounds measured
    loaded = SweepResult.load(result.to_json(tmp_path / "r.json"))
    assert [row.params for row in loaded.rows()] == [row.params for row in result.rows()]
    assert loaded.rows()[1].params == {"n": 3, "round": 1, "inter": 1}


def test_sweeps_recorded_by_older_versions_still_load():
    for name in pg.recorded.FRAMEWORK_SWEEPS:
        result = pg.recorded.framework_sweep(name).result
        rows = result.rows()
        assert rows and all(row.n == len(result.values_ms(i)) for i, row in enumerate(rows))
        header, lines = result.table()
        assert len(set(header)) == len(header) and len(lines) == len(rows)


def test_every_place_draws_the_same_median_run():
    from parallelgraph.experiments.measure import Measurement, median_trace

    traces = [_FakeTrace(ms) for ms in (5.0, 1.0, 4.0, 2.0)]
    assert median_trace(traces).makespan_ms == 2.0  # the lower middle of an even count
    assert median_trace(traces[:3]).makespan_ms == 4.0
    assert Measurement(tuple(traces), (1.0,) * 4).median_trace() is median_trace(traces)
    with pytest.raises(ValueError, match="no traces"):
        median_trace([])


class _FakeTrace:
    def __init__(self, makespan_ms):
        self.makespan_ms = makespan_ms


def _scaled_graph(n):
    graph = pg.Graph()
    with graph.as_default():
        with pg.scope("net1"):
            a = pg.random_normal((n, 8), seed=1)
        with pg.scope("net2"):
            b = pg.random_normal((n, 8), seed=2)
        out = pg.add(a, b)
    return graph, out


def test_a_build_function_returning_tensors_is_swept_like_the_dashboards():
    """One build convention: the function `pg.dashboard` takes (it returns what to fetch) is
    swept as it is, each cell built in a graph of its own."""

    def build(batch=16):
        with pg.scope("net1"):
            a = pg.tanh(pg.random_normal((batch, 8), seed=1))
        with pg.scope("net2"):
            b = pg.relu(pg.random_normal((batch, 8), seed=2))
        return [a + b, a]

    before = len(pg.get_default_graph())
    result = pg.sweep(
        build,
        {"inter": [1, 2], "batch": [16, 24]},
        repeats=2,
        progress=False,
        noise_check=False,
        predict=False,
    )
    assert len(result.rows()) == 4 and len(pg.get_default_graph()) == before


@pytest.mark.parametrize("framework", [None, "numpy"])
def test_a_grid_key_given_in_the_grid_and_as_a_keyword_is_refused_not_dropped(framework):
    with pytest.raises(ValueError, match=r"'intra' is given twice, in the grid \('intra': \[1, 2\]"
                       r"\) and as the keyword intra=\[4\]"):  # fmt: skip
        pg.sweep("two-networks", {"intra": [1, 2]}, intra=[4], framework=framework)


def test_one_setting_under_two_names_is_refused_not_dropped():
    with pytest.raises(ValueError, match="'inter' and 'inter_op_threads' both set the Config"):
        pg.sweep("two-networks", {"inter": [1]}, inter_op_threads=[2], progress=False)


def test_a_typo_of_an_argument_names_the_argument_meant():
    with pytest.raises(TypeError, match=r"no argument 'repeat'; did you mean repeats=5\?"):
        pg.sweep("two-networks", {"size": ["tiny"]}, repeat=5)
    with pytest.raises(ValueError, match=r"grid key 'intre' .*; did you mean 'intra'\?"):
        pg.sweep("two-networks", {"size": ["tiny"], "intre": [1]})
    with pytest.raises(ValueError, match=r"grid key 'warmups' .*; did you mean 'warmup'\?"):
        pg.sweep("two-networks", {"size": ["tiny"]}, warmups=[1])
