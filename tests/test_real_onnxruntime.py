"""ONNX Runtime profiler files (tests/fixtures/real/ort_*.json, made by make_onnxruntime.py with
onnxruntime 1.32 on a 2-core VM; see the fixtures' README): every one loads as "onnxruntime",
and its numbers and explanation agree with facts this file computes from the raw events with its
own few lines — not with parallelgraph's reader. The advice must name the setting that helped
in the script's own measurement (MANIFEST `measured_effects`), and never one that did not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from raw_facts import length, span, union

import parallelgraph as pg
from parallelgraph.explain import Cause
from parallelgraph.trace import EventRole

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
TRACES = sorted(p.name for p in REAL.glob("ort_*.json") if p.name in MANIFEST)
SETUP = {"model_loading_uri", "session_initialization"}
WAITING = {"model_run", "SequentialExecutor::Execute"}


# -- raw facts, straight from the JSON ------------------------------------------------------------
def raw(name: str) -> list[dict]:
    return json.loads((REAL / name).read_text())


def nodes(name: str) -> list[dict]:
    """Node events that are a node's run: 'X', cat Node, name ending in _kernel_time."""
    return [
        e
        for e in raw(name)
        if e.get("ph") == "X" and e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    ]


def raw_overlap(name: str) -> float:
    a = union(span(e) for e in nodes(name) if "/net1/" in e["name"])
    b = union(span(e) for e in nodes(name) if "/net2/" in e["name"])
    both = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)
    return both / min(length(a), length(b))


def lane_of(e: dict) -> str:
    """The README's lane rule: the main thread (tid == pid), else the pool thread(s)."""
    return "ort/main" if e["tid"] == e["pid"] else "ort/pool 1"


@pytest.fixture(scope="module", params=TRACES)
def case(request):
    return request.param, pg.Trace.load(REAL / request.param)


def test_the_fixtures_are_there():
    assert {"ort_seq_intra1.json", "ort_parallel_inter2.json", "ort_seq_intra2.json"} <= set(TRACES)


def test_source_ops_and_roles(case):
    name, trace = case
    assert trace.source == "onnxruntime"
    want = sorted(
        e["name"].removesuffix("_kernel_time").removeprefix("fused ").lstrip("/")
        for e in nodes(name)
    )
    got = sorted(e.name.split("#")[0] for e in trace.ops())
    assert got == want
    assert {e.op_type for e in trace.ops()} == {e["args"]["op_name"] for e in nodes(name)}
    roles = {e.name: e.role for e in trace.events if e.name in SETUP | WAITING}
    assert {n for n, r in roles.items() if r is EventRole.SETUP} == SETUP
    assert {n for n, r in roles.items() if r is EventRole.WAITING} == WAITING
    assert all(e.role is EventRole.WORK for e in trace.ops())
    assert {e.scope.split("/")[0] for e in trace.ops()} == {"net1", "net2", ""}


def test_numbers_match_the_raw_events(case):
    name, trace = case
    work = nodes(name)
    first, last = min(e["ts"] for e in work), max(e["ts"] + e["dur"] for e in work)
    assert trace.makespan_ms == pytest.approx((last - first) / 1e3, abs=1e-3)
    busy: dict[str, list] = {}
    for e in work:
        busy.setdefault(lane_of(e), []).append(span(e))
    assert trace.lanes == sorted(busy)
    for lane, spans in busy.items():
        assert trace.lane_busy_s()[lane] == pytest.approx(length(union(spans)) / 1e6, abs=1e-6)
    total = sum(e["dur"] for e in work) / 1e6
    assert trace.work_s() == pytest.approx(total, abs=1e-6)
    # one lane in program order: the chain is every node, so the bound is the work itself,
    # whatever the number of workers
    assert trace.lower_bound_s() == pytest.approx(max(total / len(busy), total), abs=1e-6)
    assert trace.lower_bound_s(2) == pytest.approx(total, abs=1e-6)
    assert trace.overlap("net1", "net2") == pytest.approx(raw_overlap(name), abs=0.05)


def test_setup_and_waiting_are_not_work(case):
    name, trace = case
    events = raw(name)
    setup_end = max(e["ts"] + e["dur"] for e in events if e["name"] in SETUP)
    first_node = min(e["ts"] for e in nodes(name))
    assert setup_end <= first_node  # loading and initialisation came before any node ran
    # the makespan starts at the first node, not at model loading
    assert trace.makespan_ms < (max(e["ts"] + e["dur"] for e in events) - events[0]["ts"]) / 1e3


def test_explain_cause_and_advice(case):
    name, trace = case
    report = trace.explain()
    (pair,) = report.pairs
    assert pair.overlap == pytest.approx(raw_overlap(name), abs=0.05)
    assert pair.cause == Cause.ONE_WORKER
    effects = MANIFEST[name]["measured_effects"]
    advice = report.suggestion
    # ORT_PARALLEL with inter_op_num_threads=2 did not help in the measurement: never advised
    assert not effects["inter_op_num_threads=2 with ExecutionMode.ORT_PARALLEL helped"]
    assert "inter_op_num_threads" not in advice
    assert "intra_op_num_threads" in advice
    assert "intra_op_num_threads" in effects["helped"]  # what the advice names did help
    for ours in ("inter_op_threads", "intra_op_threads", "Config("):
        assert ours not in str(report)


def test_intra_op_helpers_are_noted():
    trace = pg.Trace.load(REAL / "ort_seq_intra2.json")
    assert any("helper" in note for note in trace.metadata["notes"])


def test_the_pool_thread_ran_the_nodes_under_ort_parallel():
    trace = pg.Trace.load(REAL / "ort_parallel_inter2.json")
    assert trace.lanes == ["ort/pool 1"]
    callers = {e.lane for e in trace.events if e.name == "model_run"}
    assert callers == {"ort/main"}


def test_replay_under_two_workers_predicts_what_ort_parallel_measured():
    """ORT runs a CPU model's nodes one at a time even with ORT_PARALLEL: the replay of the
    sequential trace under two workers must not promise a speed-up the measurement did not see.

    The trace holds 3 runs (the first a session's first), so the comparison is of ratios: the
    replay's makespan over the traced one against the measured two-thread time over the
    one-thread time — the median over the interleaved rounds of their ratio in the same round
    (on the shared 2-core machine both settings of a round saw the same load)."""
    trace = pg.Trace.load(REAL / "ort_seq_intra1.json")
    replay = pg.simulate(trace, pg.Config(inter_op_threads=2), cores=2)
    assert replay.makespan_ms >= trace.lower_bound_s(2) * 1e3 - 1e-6
    settings = {
        s["file"]: s for s in MANIFEST["ort_seq_intra1.json"]["measured_effects"]["settings"]
    }
    measured = settings["ort_parallel_inter2.json"]["median_of_paired_ratios"]
    assert replay.makespan_ms / trace.makespan_ms == pytest.approx(measured, rel=0.15)


def test_fences_are_left_out_and_noted(tmp_path):
    def event(cat, ts, dur, name):
        return {"cat": cat, "pid": 7, "tid": 7, "ph": "X", "ts": ts, "dur": dur, "name": name,
                "args": {"op_name": "MatMul"} if cat == "Node" else {}}  # fmt: skip

    events = [
        event("Session", 0, 5, "model_loading_uri"),
        event("Session", 10, 40, "model_run"),
        event("Node", 11, 1, "/a/MatMul_fence_before"),
        event("Node", 12, 10, "/a/MatMul_kernel_time"),
        event("Node", 22, 1, "/a/MatMul_fence_after"),
        event("Node", 25, 10, "/b/MatMul_kernel_time"),
    ]
    path = tmp_path / "onnxruntime_profile__x.json"
    path.write_text(json.dumps(events))
    trace = pg.Trace.load(path)
    assert trace.source == "onnxruntime"
    assert [e.name for e in trace.ops()] == ["a/MatMul", "b/MatMul"]
    assert [e.scope for e in trace.ops()] == ["a", "b"]
    assert any("fence" in note for note in trace.metadata["notes"])
    assert trace.makespan_ms == pytest.approx(0.023)
    assert trace.lower_bound_s(2) == pytest.approx(20e-6)  # program order: a then b
