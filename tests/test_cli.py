"""The command line: run --json, demo, and one-line errors for bad arguments."""

import json
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
    assert main(["demo", "--size", "small", "--repeats", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "inter-op" in out and "overlap" in out
    assert (tmp_path / "trace.ctf.json").stat().st_size > 100
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
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr
