"""The command line: run --json, demo, and one-line errors for bad arguments."""

import json
import re
import subprocess
import sys

import pytest

from parallelgraph.cli import main


def test_run_json_reports_the_promised_fields(capsys, tmp_path):
    trace_path = tmp_path / "t.json"
    code = main(
        [
            "run",
            "--preset",
            "two-networks",
            "--size",
            "tiny",
            "--inter",
            "2",
            "--intra",
            "1",
            "--repeats",
            "3",
            "--json",
            "--trace",
            str(trace_path),
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["makespan_ms"] > 0 and len(report["makespan_ms_all"]) == 3
    assert 0.0 <= report["overlap"] <= 1.0
    assert report["ops"] == 9 and "inter-op/0" in report["lanes"]
    assert report["config"]["inter_op_threads"] == 2
    assert trace_path.exists()


@pytest.mark.parametrize("preset", ["wide", "chain", "random"])
def test_run_other_presets_in_text_mode(capsys, preset):
    assert (
        main(
            [
                "run",
                "--preset",
                preset,
                "--size",
                "tiny",
                "--repeats",
                "1",
                "--executor",
                "sequential",
            ]
        )
        == 0
    )
    assert "median makespan" in capsys.readouterr().out


def test_demo_writes_trace_and_timeline(tmp_path, capsys):
    assert main(["demo", "--size", "small", "--repeats", "6", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "inter-op" in out and "overlap" in out
    # issue 23: every speed-up with its CI and verdict, and words the numbers do not contradict
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("inter-op"))
    assert lines[header].endswith("speed-up against inter-op 1, intra-op 1")
    assert lines[header + 1].endswith("  baseline")
    for row in lines[header + 2 : header + 5]:
        assert re.search(
            r"  ×\d+\.\d\d \(95% CI \d+\.\d\d-\d+\.\d\d, (faster|slower|within noise)\)$", row
        )
    assert "ran in parallel" not in out
    assert re.search(r"net1 and net2 (ran|mostly did NOT run) side by side in the drawn run", out)
    assert re.search(r"Speed-up of 2 against 1 over 6 runs: ×\d+\.\d\d \(95% CI ", out)
    written = json.loads((tmp_path / "trace.ctf.json").read_text())
    assert any(e["ph"] == "C" for e in written["traceEvents"])  # the memory track, for Perfetto
    assert (tmp_path / "timeline.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--inter", "-1"], "must be >= 0"),
        (["run", "--preset", "nope"], "invalid choice: 'nope'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_arguments_exit_non_zero_with_one_line(argv, message):
    result = subprocess.run(
        [sys.executable, "-m", "parallelgraph", *argv], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
def two_traces(tmp_path):
    import parallelgraph as pg
    from parallelgraph.experiments.presets import two_networks

    preset = two_networks("tiny")
    paths = []
    for inter in (1, 2):
        with pg.Session(preset.graph, pg.Config(inter_op_threads=inter)) as sess:
            _, trace = sess.run(preset.fetch, trace=True)
        paths.append(trace.save(tmp_path / f"inter{inter}.json"))
    return paths


def test_plot_compare_and_explain_commands(two_traces, tmp_path, capsys):
    one, two = two_traces
    assert main(["plot", str(one), "--out", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(two), "--out", str(tmp_path / "t.svg"), "--arrows"]) == 0
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")
    out = tmp_path / "c.png"
    assert main(["compare", str(one), str(two), "--labels", "one,two", "--out", str(out)]) == 0
    compared = capsys.readouterr().out
    assert out.exists() and "one: makespan" in compared and "(baseline)" in compared
    assert re.search(
        r"two: makespan \d+\.\d\d ms \(×\d+\.\d\d \(one run: not a conclusion\)\)", compared
    )
    assert main(["explain", str(one)]) == 0
    report = capsys.readouterr().out
    assert "net1 and net2: did not overlap" in report and "inter_op_threads=1" in report


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "missing.json"], "No such file"),
        (["compare", "a.json"], "at least two trace files"),
    ],
)
def test_trace_commands_report_errors_in_one_line(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_garbage_trace_file_gives_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1')
    assert main(["explain", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and err.count("\n") == 1


def test_sweep_command_prints_table_and_writes_files(tmp_path, capsys):
    out = tmp_path / "sweeps" / "results.json"
    code = main(
        [
            "sweep",
            "--size",
            "tiny",
            "--inter",
            "1,2",
            "--intra",
            "1",
            "--repeats",
            "3",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "speed-up (95% CI)" in printed and "verdict" in printed
    assert out.exists() and out.with_suffix(".csv").exists()
    assert (tmp_path / "sweeps" / "results-tiny-heatmap.png").exists()
    assert main(["sweep", "--inter", "1,x"]) == 2
    assert "comma-separated integers" in capsys.readouterr().err
