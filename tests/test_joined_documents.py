"""Two complete trace documents joined in one file (`cat a.json b.json > both.json`) read as one
trace of both documents' processes: a process of the second document whose pid the first one
used too is kept apart from it, and each document's flows stay within it."""

from __future__ import annotations

import gzip
import json

import pytest
from raw_facts import REAL

import parallelgraph as pg


def test_a_real_trace_joined_to_itself_is_two_processes(tmp_path):
    """viztracer's two-thread file twice: the same pid in both, so six lanes, twice the work."""
    one = pg.Trace.load(REAL / "viztracer_two_threads.json")
    text = gzip.decompress((REAL / "viztracer_two_threads.json.gz").read_bytes())
    both = tmp_path / "both.json"
    both.write_bytes((REAL / "viztracer_two_threads.json").read_bytes() + b"\n" + text)
    trace = pg.Trace.load(both)
    assert len(trace.lanes) == 2 * len(one.lanes)
    assert len({lane.partition("/")[0] for lane in trace.lanes}) == 2  # two processes
    second = pg.Trace.load(REAL / "viztracer_two_threads.json.gz")
    assert trace.work_s() == pytest.approx(one.work_s() + second.work_s())
    assert any("2 JSON documents one after another" in note for note in trace.info.notes)
    assert any("renamed" in note for note in trace.info.notes)  # the pid was used twice


def document(scope: str) -> list[dict]:
    """Two ops of one thread (pid 1, tid 1) linked by flow id 7."""
    where = {"pid": 1, "tid": 1, "cat": "data", "id": 7}
    return [
        {"ph": "X", "name": f"{scope}/a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "s", "ts": 5, **where},
        {"ph": "f", "bp": "e", "ts": 20, **where},
        {"ph": "X", "name": f"{scope}/b", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
    ]


@pytest.mark.parametrize("form", ["object", "list"])
def test_each_documents_pids_and_flows_are_its_own(tmp_path, form):
    def text(events):
        return json.dumps({"traceEvents": events} if form == "object" else events)

    path = tmp_path / "joined.json"
    path.write_text(text(document("net1")) + text(document("net2")))
    trace = pg.Trace.load(path)
    assert len(trace.lanes) == 2
    assert trace.lane_busy_s() == {lane: pytest.approx(20e-6) for lane in trace.lanes}
    inputs = {event.name: event.inputs for event in trace.ops()}
    assert inputs == {"net1/a": (), "net1/b": ("net1/a",), "net2/a": (), "net2/b": ("net2/a",)}
    report = trace.explain()
    assert [(pair.scope_a, pair.scope_b) for pair in report.pairs] == [("net1", "net2")]
