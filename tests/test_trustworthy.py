"""Answers a user can trust on traces we have not seen.

Two sources of traces: every real fixture (tests/fixtures/real, whatever producer wrote it) and
random traces from an unknown producer whose right answers are known by construction
(`generated_traces`). On each, explain()'s statements are checked against the numbers they rest
on (its `evidence` records, recomputed here), and on the generated ones the numbers themselves
are checked against the construction: waiting and setup are not work, nesting counts once, and
no replay beats its own lower bound or runs an op before its inputs ended.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from generated_traces import generate

import parallelgraph as pg
from parallelgraph.chrome import from_chrome
from parallelgraph.explain import Cause
from parallelgraph.explain.evidence import EVERY_LANE_BUSY
from parallelgraph.trace import EventRole, analysis, intervals

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
FIXTURES = sorted(
    p.name for p in REAL.iterdir() if p.name.endswith((".json", ".json.gz")) and p.name in MANIFEST
)
SEEDS = range(40)
#: parallelgraph's own knobs, never advised for another tool's trace.
OUR_KNOBS = ("inter_op_threads", "intra_op_threads", "Config(")


def pg_names_exist(text: str) -> list[str]:
    """Every `pg.name` (and `pg.a.b`) in `text` that parallelgraph does not have."""
    missing = []
    for dotted in re.findall(r"\bpg\.([A-Za-z_][\w.]*[\w])", text):
        target = pg
        for part in dotted.split("."):
            if not hasattr(target, part):
                missing.append(dotted)
                break
            target = getattr(target, part)
    return missing


def check_report(trace: pg.Trace, report) -> None:
    """Each statement of `report` against the numbers it rests on."""
    text = str(report)
    assert report.makespan_ns == trace.end - trace.start
    assert report.lower_bound_ns <= report.makespan_ns
    assert not pg_names_exist(text), pg_names_exist(text)
    assert "no core was idle" not in text
    if trace.source != "parallelgraph":
        assert not any(knob in text for knob in OUR_KNOBS), text
    inputs = analysis.data_inputs(trace)
    for pair in report.pairs:
        evidence = pair.evidence
        if pair.overlapped:
            assert pair.cause is None
            continue
        assert pair.cause is not None and evidence is not None, pair
        if pair.cause is Cause.DEPENDENCY:
            chain = evidence.chain
            assert chain[0] == evidence.producer and chain[-1] == evidence.consumer
            for source, consumer in itertools.pairwise(chain):
                assert source in inputs[consumer], (source, consumer)  # a real data input
        elif pair.cause is Cause.ALL_BUSY:
            assert evidence.busy_share >= EVERY_LANE_BUSY
            assert "every worker busy" in pair.detail
        elif pair.cause is Cause.ONE_WORKER:
            assert evidence.setting or evidence.concurrency < 0.02
            assert analysis.concurrency(trace, ops_only=True) == pytest.approx(evidence.concurrency)
        elif pair.cause is Cause.NOT_DETERMINED:
            assert "not determined" in pair.detail and evidence.experiment in pair.detail
    if "every worker busy" in text:
        assert any(p.cause is Cause.ALL_BUSY for p in report.pairs)
    if "every lane was busy" in text or "were all busy" in text:
        assert report.advice.busy_share is not None
    if "every lane was busy" in text:
        assert report.advice.busy_share >= EVERY_LANE_BUSY
    if any(p.cause is Cause.NOT_DETERMINED for p in report.pairs) and len(report.pairs) == 1:
        assert report.advice.knob == "experiment"


# -- every real fixture ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", FIXTURES)
def test_no_statement_contradicts_its_numbers_on_any_real_trace(name):
    trace = pg.Trace.load(REAL / name)
    check_report(trace, trace.explain())


@pytest.mark.parametrize("name", FIXTURES)
def test_waiting_and_setup_are_never_work_on_any_real_trace(name):
    trace = pg.Trace.load(REAL / name)
    busy = sum(trace.lane_busy_s().values())
    assert trace.work_s() <= busy + 1e-9
    for event in trace.events:
        if event.role is not EventRole.WORK:
            assert event.work_ns == 0
    for lane, spans in trace.work_intervals.items():
        for event in trace.events:
            if event.lane == lane and event.role is not EventRole.WORK:
                # only work nested inside a waiting or setup event counts during it
                inside = intervals.intersect(spans, [(event.start, event.end)])
                nested = intervals.merge(
                    (e.start, e.end)
                    for e in trace.events
                    if e.lane == lane
                    and e.role is EventRole.WORK
                    and e.start >= event.start
                    and e.end <= event.end
                )
                assert intervals.length(inside) <= intervals.length(nested) + 1


# -- a producer nobody has seen -------------------------------------------------------------------
def load_generated(seed: int):
    events, truth = generate(seed)
    return from_chrome(events, f"<generated {seed}>"), truth


@pytest.mark.parametrize("seed", SEEDS)
def test_an_unknown_producers_waiting_and_setup_are_found_and_left_out(seed):
    trace, truth = load_generated(seed)
    roles = {e.name: e.role for e in trace.events}
    assert all(roles[name] is EventRole.WAITING for name in truth.waiting)
    assert all(roles[name] is EventRole.SETUP for name in truth.setup)
    assert trace.source == "trace-event"
    # the work's numbers, by construction (µs in the generator, ns here)
    assert trace.start == pytest.approx(truth.start_us * 1e3, abs=2)
    assert trace.end == pytest.approx(truth.end_us * 1e3, abs=2)
    busy = {lane.rpartition("w")[2]: value for lane, value in trace.lane_busy_s().items()}
    expected = {
        str(tid - 10) if tid >= 10 else "": us / 1e6 for tid, us in truth.lane_work_us.items()
    }
    assert sorted(busy.values()) == pytest.approx(sorted(expected.values()), abs=1e-8)
    assert trace.work_s() == pytest.approx(truth.work_us / 1e6, abs=1e-8)
    assert trace.critical_path().length_ns == pytest.approx(truth.critical_path_us * 1e3, abs=20)
    for a, b in truth.scope_pairs():
        assert trace.overlap(a, b) == pytest.approx(truth.overlap(a, b), abs=1e-4)
    report = trace.explain()
    check_report(trace, report)
    assert "Not counted as work: 1 waiting event(s) (run " in str(report)
    assert "1 setup event(s) (load_model" in str(report)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_replay_never_beats_its_bound_nor_runs_an_op_before_its_inputs(seed, workers):
    trace, truth = load_generated(seed)
    cores = 8  # the traced run was not oversubscribed, so its times are its work
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=workers), cores=cores)
    bound = max(truth.work_us * 1e3 / workers, truth.critical_path_us * 1e3)
    assert predicted.makespan_ms * 1e6 >= bound * (1 - 1e-9) - 2
    ends = {e.name: e.end for e in predicted.ops()}
    measured = {e.name: e for e in trace.ops()}
    for event in predicted.ops():
        for name in measured[event.name].inputs:
            if name in ends:
                assert event.start >= ends[name], (name, event.name)
    assert not any(e.role is not EventRole.WORK for e in predicted.events)


def test_a_replay_keeps_program_order_on_a_program_order_lane():
    """Two ops of one Python thread with no traced data flow: the second still follows the
    first in every replay, however many workers (eager PyTorch, one Python thread)."""
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "MainThread"}},
        {"ph": "X", "name": "a (/p/prog.py:1)", "pid": 1, "tid": 1, "ts": 0, "dur": 10_000},
        {"ph": "X", "name": "b (/p/prog.py:5)", "pid": 1, "tid": 1, "ts": 10_000, "dur": 10_000},
    ]
    trace = from_chrome({"traceEvents": events, "viztracer_metadata": {}})
    assert trace.source == "python"
    assert [e.after for e in trace.ops()] == [None, "a"]
    predicted = pg.simulate(trace, pg.Config(inter_op_threads=2), cores=2)
    a, b = sorted(predicted.ops(), key=lambda e: e.start)
    assert b.start >= a.end
    assert predicted.makespan_ms >= trace.lower_bound_s(2) * 1e3 - 1e-6
    report = trace.explain()
    assert report.pairs[0].cause is not Cause.DEPENDENCY  # program order is no data dependency


def test_a_waiting_caller_does_not_make_a_busy_lane():
    """The fork/join shape: a caller launches two workers and waits in a span of its own."""
    events = [
        {"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "name": "fork", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"ph": "X", "name": "net1/a", "pid": 1, "tid": 2, "ts": 2, "dur": 97},
        {"ph": "X", "name": "net2/a", "pid": 1, "tid": 3, "ts": 2, "dur": 97},
    ]
    trace = from_chrome(events)
    step = next(e for e in trace.events if e.name == "step")
    assert step.role is EventRole.WAITING
    assert trace.lane_busy_s()["1/1"] == pytest.approx(1e-6)
    assert trace.work_s() == pytest.approx((1 + 97 + 97) * 1e-6)
    report = trace.explain()
    assert report.pairs[0].overlapped
    assert "Not counted as work: 1 waiting event(s) (step" in str(report)


def test_two_events_that_flow_to_each_other_are_not_both_waiting():
    """A flow both ways between two threads that start together: neither launched the other,
    so neither is judged waiting, and the work is not zero (found by the input hunt)."""
    events = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "a.child", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b.child", "pid": 1, "tid": 2, "ts": 1, "dur": 1},
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 0.5, "bp": "e"},
        {"ph": "f", "id": 1, "pid": 1, "tid": 2, "ts": 0.5, "bp": "e"},
        {"ph": "s", "id": 2, "pid": 1, "tid": 2, "ts": 0.5, "bp": "e"},
        {"ph": "f", "id": 2, "pid": 1, "tid": 1, "ts": 0.5, "bp": "e"},
    ]
    trace = from_chrome(events)
    assert all(e.role is EventRole.WORK for e in trace.events)
    assert trace.work_s() == pytest.approx(20e-6)
