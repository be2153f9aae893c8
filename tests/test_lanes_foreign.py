"""Lanes of foreign traces: our lane-naming rules ("transfer" and "memcpy" workers are copy
lanes, "intra-op..." helpers, "stream..." GPU streams) apply to our own traces only. A file
written by another tool records every lane's kind as its producer module decided it, so a
thread that happens to be called "transfer" is a thread that computed and its work counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from parallelgraph.chrome import from_chrome
from parallelgraph.trace.lanes import LaneKind

FIXTURES = Path(__file__).parent / "fixtures"


def thread_names(pid: int, names: dict[int, str]) -> list[dict]:
    return [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        for tid, name in names.items()
    ]


def complete(name: str, tid: int, ts: float, dur: float, pid: int = 1, **extra) -> dict:
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid, **extra}


@pytest.mark.parametrize("process", [None, "copy", "7"])
def test_a_generic_thread_named_transfer_is_a_thread_that_computed(process):
    events = thread_names(7, {1: "main", 2: "transfer", 3: "memcpy"})
    if process is not None:
        events.append({"name": "process_name", "ph": "M", "pid": 7, "args": {"name": process}})
    events += [
        complete("load", 1, 0, 100, pid=7),
        complete("compress", 2, 0, 80, pid=7),
        complete("pack", 3, 10, 30, pid=7),
    ]
    trace = from_chrome({"traceEvents": events})
    assert trace.source == "trace-event"
    assert {trace.lane(lane).kind for lane in trace.lanes} == {LaneKind.WORKER}
    assert trace.work_s() == pytest.approx(210e-6)
    assert sorted(trace.utilization().values()) == pytest.approx([0.3, 0.8, 1.0])


def test_a_python_tracers_thread_named_transfer_is_a_worker():
    events = thread_names(1, {1: "MainThread", 2: "transfer"})
    events += [
        complete("main (prog.py:1)", 1, 0, 100),
        complete("copy_rows (prog.py:5)", 2, 10, 60),
    ]
    trace = from_chrome({"traceEvents": events})
    assert trace.source == "python"
    assert trace.lane("python/transfer").kind is LaneKind.WORKER
    assert "python/transfer" in trace.lanes
    assert trace.lane_busy_s()["python/transfer"] == pytest.approx(60e-6)


def test_a_pytorch_cpu_thread_named_transfer_is_a_worker_and_streams_stay_streams():
    events = thread_names(1, {1: "python", 2: "transfer"})
    events += [
        complete("aten::mm", 1, 0, 100, cat="cpu_op"),
        complete("aten::copy_", 2, 0, 50, cat="cpu_op"),
        complete("sgemm", 7, 10, 40, pid=0, cat="kernel", args={"device": 0, "stream": 7}),
    ]
    trace = from_chrome({"traceEvents": events})
    assert trace.source == "pytorch"
    assert trace.lane("cpu/transfer").kind is LaneKind.WORKER
    assert trace.lane("gpu:0/stream/7").kind is LaneKind.STREAM
    assert trace.work_s() == pytest.approx(190e-6)


REAL = sorted(
    path for path in (FIXTURES / "real").glob("*.json*") if path.name != "MANIFEST.json"
) + sorted((FIXTURES / "traces").glob("*.json"))


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.name)
def test_every_lane_of_a_foreign_trace_has_its_kind_recorded(path):
    from parallelgraph.chrome import load

    trace = load(path)
    kinds = trace.metadata.get("lane_kinds", {})
    assert set(trace.all_lanes) <= set(kinds), set(trace.all_lanes) - set(kinds)
    assert all(trace.lane(lane).kind.value == kinds[lane] for lane in trace.all_lanes)


def test_loading_and_analysing_a_foreign_trace_imports_neither_the_planner_nor_the_ops(tmp_path):
    """The trace stage stands on its own: reading a PyTorch file and analysing it loads no op
    registry, planner, session or executor (the package's own `__init__` is bypassed, as a
    stand-alone trace viewer would)."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [complete("aten::mm", 1, 0, 100, cat="cpu_op")]}))
    root = Path(__file__).parent.parent / "parallelgraph"
    script = f"""
import sys, types
package = types.ModuleType("parallelgraph")
package.__path__ = [{str(root)!r}]
sys.modules["parallelgraph"] = package
from parallelgraph.chrome import load
trace = load({str(path)!r})
trace.work_s(), trace.lower_bound_s(), trace.critical_path(), trace.lane_busy_s()
trace.top_ops(), trace.memory(), trace.overlap("", ""), trace.to_chrome()
loaded = sorted(m for m in sys.modules if m.startswith("parallelgraph."))
print("\\n".join(loaded))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = result.stdout.split()
    assert "parallelgraph.chrome.reader" in loaded
    for stage in ("plan", "ops", "session", "executors", "graph", "kernels"):
        assert not [
            m
            for m in loaded
            if m == f"parallelgraph.{stage}" or m.startswith(f"parallelgraph.{stage}.")
        ], (stage, loaded)
