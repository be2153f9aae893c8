"""PaddlePaddle's profiler on a real two-branch model (tests/fixtures/real/paddle_two_branch.json,
made by make_paddle.py): each OS thread is written as a Python and a C++ lane, and range names
carry their own durations ("net1[2.120 ms]"). Read right, the file is one thread whose
operators' time is the work, net1 and net2 the branches, one after the other; read as a file of
unknown origin it was two threads that doubled the work and "ran in parallel" with themselves.
The expected numbers come from the raw events (`raw_facts`)."""

from __future__ import annotations

import json

import pytest
from raw_facts import MANIFEST, REAL, length, union

import parallelgraph as pg

NAME = "paddle_two_branch.json"
LABEL = "PythonUserDefined"  # paddle.profiler.RecordEvent


def raw() -> list[dict]:
    return [e for e in json.loads((REAL / NAME).read_text())["traceEvents"] if e.get("ph") == "X"]


def offsets(event: dict) -> tuple[float, float]:
    """(start, end) in µs from the first step's start: `args.start_time`/`end_time` ("68.323
    us"), to the ns, where `ts` is rounded to a whole µs."""
    return tuple(
        float(event["args"][key].removesuffix(" us")) for key in ("start_time", "end_time")
    )


def raw_spans(cat: str, name: str | None = None) -> list[tuple[float, float]]:
    return [
        offsets(e)
        for e in raw()
        if e["cat"] == cat and (name is None or e["name"].split("[")[0] == name)
    ]


def test_a_thread_written_as_python_and_cpp_lanes_is_one_lane_of_its_operators_work():
    trace = pg.Trace.load(REAL / NAME)
    assert trace.source == "paddle"
    assert trace.lanes == ["paddle/MainThread"]
    operators = union(raw_spans("Operator") + raw_spans("UserDefined"))
    assert trace.work_s() * 1e6 == pytest.approx(length(operators), abs=0.01)
    assert trace.lane_busy_s()["paddle/MainThread"] * 1e6 == pytest.approx(length(operators))
    names = {e.name.split("#")[0] for e in trace.ops(nested=True)}
    assert {"matmul", "add", "relu"} <= names
    assert not any("[" in name or "dygraph" in name for name in names)
    assert "ProfileStep#N x2" in " ".join(trace.info.notes)


def test_the_record_event_labels_are_the_branches_and_paddles_own_labels_are_none():
    trace = pg.Trace.load(REAL / NAME)
    assert set(trace.scopes()) == {"", "net1", "net2"}
    first = min(start for start, _ in raw_spans("Operator") + raw_spans("UserDefined"))
    origin = min(e.start for e in trace.ops()) - first * 1e3  # the file's offsets in the trace
    for branch in ("net1", "net2"):
        labelled = [(origin + s * 1e3, origin + t * 1e3) for s, t in raw_spans(LABEL, branch)]
        ops = [e for e in trace.ops() if e.scope.split("/")[0] == branch]
        assert ops and all(
            any(s - 1 <= e.start and e.end <= t + 1 for s, t in labelled) for e in ops
        )
    report = trace.explain()
    assert [(p.scope_a, p.scope_b, p.overlap) for p in report.pairs] == [("net1", "net2", 0.0)]
    assert "dygraph Paddle runs ops one after another" in report.suggestion
    assert not any(knob in str(report) for knob in ("inter_op_threads", "Config("))


def test_the_manifest_records_what_made_it():
    entry = MANIFEST[NAME]
    assert entry["tool_versions"]["paddlepaddle"]
    assert set(entry["measured_effects"]) >= {"default", "math_threads_2", "two_python_threads"}
