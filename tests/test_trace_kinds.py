"""Typed hand-offs in the trace model: every event made by a run or read from a file has an
`EventKind` member as its kind (a str enum: the JSON is what it always was), the executors'
records are named tuples with units in their names, and the trace API spells its units."""

from __future__ import annotations

import json

import pytest

import parallelgraph as pg
from parallelgraph.chrome import from_chrome, to_chrome
from parallelgraph.chrome.producers.base import NESTING_FIELDS, Draft
from parallelgraph.trace import CopyRecord, EventKind, StepRecord, Trace, TraceEvent
from parallelgraph.trace.analysis import CriticalPath, producer_run


def small_run() -> Trace:
    graph = pg.Graph()
    with graph.as_default(), pg.scope("net1"):
        x = pg.random_normal((64, 32), seed=1)
        y = pg.relu(pg.matmul(x, pg.variable((32, 16), name="w")))
    with pg.Session(graph, pg.Config(inter_op_threads=2, intra_op_threads=2)) as session:
        _, trace = session.run(y, trace=True)
    return trace


def test_events_of_a_run_and_of_a_loaded_file_have_event_kind_members():
    trace = small_run()
    assert trace.events and all(type(e.kind) is EventKind for e in trace.events)
    document = to_chrome(trace)
    text = json.dumps(document)
    assert all(type(item["cat"]) is str for item in document["traceEvents"] if item["ph"] == "X")
    assert '"cat": "op"' in text and "EventKind" not in text
    loaded = from_chrome(json.loads(text))
    assert [e.kind for e in loaded.events] == [e.kind for e in trace.events]
    assert all(type(e.kind) is EventKind for e in loaded.events)


def test_a_foreign_files_events_have_event_kind_members():
    events = [
        {"name": "a", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 1},
        {"name": "b", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 2, "cat": "shard",
         "args": {"shard": 0}},
        {"name": "cudaMemcpy", "ph": "X", "ts": 6, "dur": 1, "pid": 1, "tid": 3},
    ]  # fmt: skip
    trace = from_chrome({"traceEvents": events})
    kinds = {e.name: e.kind for e in trace.events}
    assert kinds == {"a": EventKind.OP, "b": EventKind.SHARD, "cudaMemcpy": EventKind.COPY}
    assert all(type(kind) is EventKind for kind in kinds.values())


def test_an_event_made_by_hand_with_a_string_kind_still_reads_as_its_kind():
    event = TraceEvent("x", "matmul", "", "cpu:0", "op", "inter-op/0", 0, 10)
    trace = Trace([event])
    assert trace.ops() == [event] and event.kind == EventKind.OP


def test_a_draft_has_the_fields_of_an_event_less_its_nesting():
    from dataclasses import fields

    event_fields = [f.name for f in fields(TraceEvent) if f.name not in NESTING_FIELDS]
    assert [f.name for f in fields(Draft)] == [*event_fields, "parent"]
    op = Draft("mm", "matmul", "net1", "cpu:0", "op", "w/1", 0, 10, inputs=["x"], shapes="s")
    shard = Draft("mm", "matmul", "net1", "cpu:0", EventKind.SHARD, "w/2", 1, 4, shard=0, parent=op)
    frozen = op.freeze(depth=1, parent="outer")
    assert frozen == TraceEvent(
        "mm", "matmul", "net1", "cpu:0", EventKind.OP, "w/1", 0, 10, inputs=("x",), depth=1,
        parent="outer", shapes="s",
    )  # fmt: skip
    assert type(frozen.kind) is EventKind and shard.freeze().name == "mm"


def test_records_are_typed_with_units_in_their_names():
    step = StepRecord(EventKind.SHARD, 3, "intra-op/0", 10, 20, 1)
    copy = CopyRecord(EventKind.COPY, "net1/w", "copy/h2d", 5, 9, 1024)
    assert (step.start_ns, step.end_ns, step.shard) == (10, 20, 1)
    assert (copy.start_ns, copy.end_ns, copy.nbytes) == (5, 9, 1024)


def test_the_trace_api_spells_its_units_and_keeps_the_old_names():
    trace = small_run()
    assert trace.makespan_s == trace.makespan == pytest.approx(trace.makespan_ms / 1e3)
    assert trace.work_s() == trace.work() > 0
    assert trace.lower_bound_s() == trace.lower_bound()
    assert trace.lane_busy_s() == trace.lane_busy()
    lane = trace.lanes[0]
    assert trace.idle_gaps_ms(lane) == trace.idle_gaps(lane)
    path = trace.critical_path()
    assert isinstance(path, CriticalPath) and path.length_ns == path.length > 0
    assert path.length_s == pytest.approx(path.length_ns / 1e9)


def test_the_producer_run_that_fed_a_consumer_is_the_last_to_end_before_it():
    def op(name: str, start: int, end: int) -> TraceEvent:
        return TraceEvent(name, "t", "", "cpu:0", EventKind.OP, "l", start, end)

    first, second, consumer = op("a", 0, 5), op("a", 10, 20), op("b", 15, 30)
    assert producer_run([first, second], consumer) is first
    assert producer_run([first, second], consumer, until=30) is second
    assert producer_run([second], op("b", 0, 1)) is second  # none before: the first
    assert producer_run([consumer], consumer) is None
