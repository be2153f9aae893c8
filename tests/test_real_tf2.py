"""TensorFlow 2's profiler, read through the trace viewer's JSON (tests/fixtures/real/tf2_*:
tf.profiler.experimental.start/stop around one step of a two-branch tf.function, converted by
xprof; see make_tf2.py and the fixtures' README). The facts are computed here from the raw
events with this file's own few lines, not with parallelgraph's reader."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from raw_facts import length, span, union

import parallelgraph as pg
from parallelgraph.explain import Cause
from parallelgraph.trace import EventRole

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
INTER1, INTER2 = "tf2_inter1.trace.json", "tf2_inter2.trace.json"
INTRA2, FIRST = "tf2_inter1_intra2.trace.json", "tf2_first_call_inter1.trace.json"
FILES = [INTER1, INTER2, INTRA2, FIRST]
OP = re.compile(r"^[^:]+:[A-Za-z0-9_]+$")  # args.long_name "net1/MatMul:MatMul"


# -- raw facts, straight from the JSON ------------------------------------------------------------
def raw(name: str) -> tuple[list[dict], dict]:
    events = [e for e in json.loads((REAL / name).read_text())["traceEvents"] if e]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("name") == "thread_name"}  # fmt: skip
    return events, threads


def raw_ops(name: str) -> list[dict]:
    events, _ = raw(name)
    return [
        e for e in events if e.get("ph") == "X" and OP.match(e.get("args", {}).get("long_name", ""))
    ]


def raw_shards(name: str) -> list[tuple[int, float, float]]:
    """Intra-op (Eigen) pool regions, cut to the TF ops running meanwhile: (tid, start, end).
    (These files have one inter-op thread where they have intra-op threads: one op at a time.)"""
    events, threads = raw(name)
    ops = [span(o) for o in raw_ops(name)]
    pieces = []
    for e in events:
        if (
            e.get("name") == "ThreadpoolListener::Region"
            and "Eigen" in threads[(e["pid"], e["tid"])]
        ):
            for s, end in ops:
                start, stop = max(s, e["ts"]), min(end, span(e)[1])
                if start < stop:
                    pieces.append((e["tid"], start, stop))
    return pieces


def branch_spans(name: str) -> dict[str, list]:
    spans: dict[str, list] = defaultdict(list)
    for e in raw_ops(name):
        node = e["args"]["long_name"].split(":")[0]
        if "/" in node:
            spans[node.split("/")[0]].append(span(e))
    return spans


def raw_overlap(name: str) -> float:
    a, b = union(branch_spans(name)["net1"]), union(branch_spans(name)["net2"])
    both = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)
    return both / min(length(a), length(b))


def raw_chain(name: str) -> float:
    """Longest run of ops inside one ExecutorState::Process call (the executor ran each op
    that the one before it made ready) — the only dependencies the file shows."""
    events, _ = raw(name)
    ops = raw_ops(name)
    calls = [e for e in events if e.get("name") == "ExecutorState::Process"]
    best = max(e["dur"] for e in ops)
    for call in calls:
        inside = [o["dur"] for o in ops if o["tid"] == call["tid"]
                  and call["ts"] <= o["ts"] and span(o)[1] <= span(call)[1]]  # fmt: skip
        best = max(best, sum(inside))
    return best


# -- every file ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_tf2_files_are_read_as_tensorflow_2_not_jax_with_the_raw_numbers(name):
    trace = pg.Trace.load(REAL / name)
    assert trace.source == "tf_profiler"
    work = [(e["tid"], *span(e)) for e in raw_ops(name)] + raw_shards(name)
    assert trace.makespan_ms == pytest.approx(
        (max(end for _, _, end in work) - min(start for _, start, _ in work)) / 1e3, abs=1e-6
    )
    by_thread = defaultdict(list)
    for tid, start, end in work:
        by_thread[tid].append((start, end))
    busy = sorted(length(spans) / 1e6 for spans in by_thread.values())
    assert sorted(trace.lane_busy_s().values()) == pytest.approx(busy, abs=1e-8)
    assert len(trace.lanes) == len(by_thread)
    # ops are TF's nodes by name, in their name scopes; lanes are readable
    assert {e.scope.split("/")[0] for e in trace.ops()} == {"net1", "net2", ""}
    assert any(e.name == "net1/MatMul" and e.op_type == "MatMul" for e in trace.ops())
    assert all(lane.startswith("tf/inter_op") or lane.startswith("tf/intra_op")
               for lane in trace.lanes)  # fmt: skip
    # the runtime's own events are left out, and said so
    assert not any(e.name.startswith(("ExecutorState", "ThreadpoolListener")) for e in trace.events)
    assert any("ExecutorState::Process" in note for note in trace.metadata["notes"])


@pytest.mark.parametrize("name", FILES)
def test_the_python_thread_waits_while_the_executor_runs_the_ops(name):
    trace = pg.Trace.load(REAL / name)
    python = [e for e in trace.events if e.lane == "tf/python"]
    call = next(e for e in python if e.name.startswith("EagerExecute: __inference_two_branch"))
    assert call.role is EventRole.WAITING
    assert all(e.role is not EventRole.WORK for e in python)
    assert "tf/python" not in trace.lanes and "tf/python" in trace.all_lanes
    # the caller's span holds the whole step: its time is not work
    assert call.start <= trace.start and trace.end <= call.end
    assert trace.work_s() <= trace.makespan_s * len(trace.lanes) + 1e-12


def test_the_first_call_builds_the_graph_as_setup():
    trace = pg.Trace.load(REAL / FIRST)
    (building,) = [e for e in trace.events if e.name == "tf.function-graph_building"]
    assert building.role is EventRole.SETUP
    assert building.end <= trace.start  # tracing the function came before the first op
    # the Python tracing before the first op are no part of the run: the makespan is the ops'
    ops = raw_ops(FIRST)
    assert building.end - building.start > 2 * trace.makespan_s
    assert trace.makespan_ms == pytest.approx(
        (max(span(e)[1] for e in ops) - min(e["ts"] for e in ops)) / 1e3, abs=1e-6
    )
    assert "tf.function-graph_building" in str(trace.explain())


@pytest.mark.parametrize("name", FILES)
def test_overlap_and_lower_bound_match_the_raw_events(name):
    trace = pg.Trace.load(REAL / name)
    assert trace.overlap("net1", "net2") == pytest.approx(raw_overlap(name), abs=0.05)
    if not raw_shards(name):  # with intra-op shards a split op's work is its shards
        work = sum(e["dur"] for e in raw_ops(name)) / 1e6
        assert trace.work_s() == pytest.approx(work, rel=1e-6)
        assert trace.lower_bound_s() == pytest.approx(
            max(work / len(trace.lanes), raw_chain(name) / 1e6), rel=1e-6
        )
    assert trace.lower_bound_s() <= trace.makespan_s + 1e-12


# -- the seed's question in TF2 ------------------------------------------------------------------
def measured(label: str) -> float:
    return MANIFEST[INTER1]["measured_effects"]["settings"][label]["median_ms"]


@pytest.mark.parametrize("name", [INTER1, FIRST])
def test_one_inter_op_thread_is_the_cause_and_the_advice_is_tf2s_own(name):
    report = pg.Trace.load(REAL / name).explain()
    text = str(report)
    assert "Makespan 0.00 ms" not in text
    (pair,) = report.pairs
    assert {pair.scope_a, pair.scope_b} == {"net1", "net2"} and pair.overlap == 0.0
    assert pair.cause is Cause.ONE_WORKER and "one inter-op thread" in pair.detail
    assert "set_inter_op_parallelism_threads" in report.suggestion
    assert not any(word in text for word in ("inter_op_threads=", "Config(", "ConfigProto"))
    assert "XLA" not in report.suggestion and "jax" not in report.suggestion


def test_with_intra_op_helpers_the_one_inter_op_thread_is_named_or_the_experiment_is():
    """The intra-op helpers computed at the same time as each other, so "nothing ran at once"
    does not hold for the whole trace; the ops themselves ran one at a time on one thread."""
    report = pg.Trace.load(REAL / INTRA2).explain()
    (pair,) = report.pairs
    assert pair.overlap == 0.0
    assert pair.cause in (Cause.ONE_WORKER, Cause.NOT_DETERMINED)
    assert "set_inter_op_parallelism_threads(2)" in pair.detail + report.suggestion
    assert "Makespan 0.00 ms" not in str(report)


def test_the_advised_setting_is_the_one_that_helped_when_measured():
    effects = MANIFEST[INTER1]["measured_effects"]
    assert "set_inter_op_parallelism_threads(2)" in effects["helped"]
    assert measured("inter2") < 0.9 * measured("inter1")


def test_two_inter_op_threads_ran_the_branches_side_by_side():
    trace = pg.Trace.load(REAL / INTER2)
    assert sum(lane.startswith("tf/inter_op") for lane in trace.lanes) == 2
    report = trace.explain()
    assert report.pairs[0].overlapped and report.pairs[0].cause is None


def test_intra_op_threads_show_as_helpers_running_shards_of_the_matmuls():
    trace = pg.Trace.load(REAL / INTRA2)
    helpers = [lane for lane in trace.lanes if lane.startswith("tf/intra_op")]
    assert helpers and all(trace.lane(lane).kind.value == "intra-op helper" for lane in helpers)
    shards = [e for e in trace.events if e.kind == "shard"]
    assert len(shards) == len(raw_shards(INTRA2))
    matmul = sum(e.end - e.start for e in shards if e.op_type == "MatMul")
    assert matmul > 0.9 * sum(e.end - e.start for e in shards)
    assert all(e.parent is None and e.role is EventRole.WORK for e in shards)


def test_replaying_the_one_thread_run_with_two_threads_predicts_the_measured_two_thread_run():
    trace = pg.Trace.load(REAL / INTER1)
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=2), cores=2)
    assert predicted.makespan_s >= trace.lower_bound_s(2) - 1e-12
    assert predicted.makespan_ms == pytest.approx(measured("inter2"), rel=0.15)
    # and the speed-up it predicts is the one measured between untraced runs
    speed_up = predicted.makespan_ms / trace.makespan_ms
    assert speed_up == pytest.approx(measured("inter2") / measured("inter1"), rel=0.15)
    assert predicted.overlap("net1", "net2") > 0.5
