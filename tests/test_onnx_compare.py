"""parallelgraph beside ONNX Runtime on one ONNX file: from Python, the CLI and the dashboard.
(Numbers are not asserted: the machine decides them; the structure and the outputs are.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import parallelgraph as pg

MODEL = Path(__file__).parent / "fixtures" / "onnx" / "ensemble.onnx"


def test_the_comparison_from_python():
    with pg.from_onnx(MODEL) as model:
        comparison = model.compare_onnxruntime(settings=[(1, 1), (2, 1)], repeats=6)
    assert comparison.difference < 1e-5
    for inter, intra in [(1, 1), (2, 1)]:
        ours, theirs = comparison.times_ms(inter, intra)
        assert len(ours) == len(theirs) == 6 and min(ours) > 0 and min(theirs) > 0
    text = str(comparison)
    assert "inter 2, intra 1" in text and "(parallel)" in text and "largest difference" in text
    ours, theirs = comparison.explain(2, 1)
    assert {p.scope_a for p in ours.pairs} & {"member0", "member1", "member2"}
    assert theirs.source == "onnxruntime"
    figure = comparison.plot(2, 1)
    assert len(figure.axes) >= 2


def test_bound_inputs_give_the_fed_runs_bits():
    with pg.from_onnx(MODEL) as model:
        feeds = model.example_feeds(3)
        fed = model.run(feeds)
        with model.with_inputs(feeds) as bound:
            assert all(op.type != "placeholder" for op in bound.graph.ops)
            with pg.Session(bound.graph) as session:
                values = session.run([bound.outputs[name] for name in model.outputs])
    for name, value in zip(model.outputs, values):
        assert value.tobytes() == fed[name].tobytes()


def test_the_cli_runs_a_file_and_compares(tmp_path):
    trace = tmp_path / "t.json"
    command = [
        sys.executable,
        "-m",
        "parallelgraph",
        "run",
        str(MODEL),
        "--inter",
        "2",
        "--intra",
        "1",
        "--repeats",
        "5",
        "--compare",
        "onnxruntime",
        "--trace",
        str(trace),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ONNX Runtime ms" in done.stdout and "member0 / member1 overlap" in done.stdout
    assert trace.exists()
    bad = subprocess.run(
        [sys.executable, "-m", "parallelgraph", "run", str(tmp_path / "no.onnx")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "no such file" in bad.stderr


def test_the_dashboard_on_a_file_compares_with_onnxruntime():
    pytest.importorskip("ipywidgets")
    dash = pg.dashboard(str(MODEL), compare_repeats=6, inter_op_threads=2)
    try:
        dash.run()
        dash.wait(120)
        assert dash.result is not None and dash.result.trace.ops()
        dash.compare()
        comparison = dash.wait_compare(240)
        assert comparison is not None, dash.compare_text.value
        assert "ONNX Runtime" in dash.compare_text.value and dash.compare_picture.value
        assert np.isfinite(comparison.difference)
    finally:
        dash.close()
