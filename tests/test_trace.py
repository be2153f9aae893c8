"""Traces: events from runs, overlap on hand-built traces, Chrome JSON out and back in."""

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph import plan as plan_module
from parallelgraph.chrome import from_chrome
from parallelgraph.trace import Trace, TraceEvent, intersection_length, merge_intervals


def event(name, scope, lane, start, end, kind="op", shard=None):
    return TraceEvent(name, "matmul", scope, "cpu:0", kind, lane, start, end, 10, 20, shard)


def hand_trace():
    return Trace(
        (
            event("net1/a", "net1", "inter-op/0", 0, 100),
            event("net1/b", "net1", "inter-op/0", 100, 200),
            event("net2/a", "net2", "inter-op/1", 50, 120),
            event("net2/a", "net2", "intra-op/0", 60, 90, kind="shard", shard=1),
            event("net3/x", "net3/inner", "inter-op/1", 300, 400),
        )
    )


def test_interval_helpers():
    assert merge_intervals([(5, 8), (0, 2), (1, 3), (8, 9)]) == [(0, 3), (5, 9)]
    assert intersection_length([(0, 10), (20, 30)], [(5, 25)]) == 10


def test_makespan_lanes_overlap_on_a_known_trace():
    trace = hand_trace()
    assert trace.makespan_s == pytest.approx(400e-9) and trace.makespan_ms == pytest.approx(4e-4)
    assert trace.lanes == ["inter-op/0", "inter-op/1", "intra-op/0"]
    assert trace.scopes() == ["net1", "net2", "net3"]
    # net2 busy 50..120 (70 ns), entirely inside net1's 0..200
    assert trace.overlap("net1", "net2") == 1.0
    assert trace.overlap("net1", "net3") == 0.0
    assert trace.lane_busy_s()["inter-op/1"] == pytest.approx(170e-9)
    with pytest.raises(ValueError, match="no op events for scope 'net9'"):
        trace.overlap("net1", "net9")


def test_partial_overlap():
    trace = Trace((event("a", "a", "inter-op/0", 0, 100), event("b", "b", "inter-op/1", 75, 275)))
    assert trace.overlap("a", "b") == pytest.approx(0.25)


def test_run_trace_has_op_and_shard_events(many_shards):
    g = pg.Graph("traced")
    with g.as_default(), pg.scope("net1"):
        y = pg.tanh(pg.random_normal((256, 256), seed=1))  # 16 rows of 4,096 to the kernels
    with pg.Session(g, pg.Config(inter_op_threads=1, intra_op_threads=2)) as sess:
        _, trace = sess.run(y, trace=True)
    ops = trace.ops()
    assert [e.name for e in ops] == ["net1/RandomNormal", "net1/Tanh"]
    assert ops[1].inputs == ("net1/RandomNormal",) and ops[0].flops == 40 * 256 * 256
    shards = [e for e in trace.events if e.kind == "shard" and e.name == "net1/Tanh"]
    # Elementwise ops keep one call per shard (ElementwiseOp.merges_rows), each its own event.
    assert len(shards) == plan_module.MAX_SHARDS and all(e.shards == 1 for e in shards)
    assert sorted(e.shard for e in shards) == list(range(len(shards)))
    for shard in shards:
        assert ops[1].start <= shard.start <= shard.end <= ops[1].end
    assert trace.metadata["config"]["intra_op_threads"] == 2
    assert set(trace.lanes) <= {"inter-op/0", "intra-op/0"}


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"traceEvents": [', "not valid JSON at line 1"),
        ('{"events": []}', "needs a 'traceEvents' list"),
        ('"text"', "expected a JSON object or list"),
        ('[{"ph": "X", "name": "a"}]', "event 0 has no valid ts/dur"),
        ("[3]", "event 0 is not an object"),
    ],
)
def test_malformed_trace_files_raise_clear_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        pg.Trace.load(path)


def test_bare_list_form_of_complete_events():
    trace = from_chrome(
        [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "worker"}},
            {"ph": "X", "name": "net1/MatMul", "ts": 1.0, "dur": 2.5, "pid": 1, "tid": 7},
        ]
    )
    (only,) = trace.events
    assert (only.lane, only.scope, only.start, only.end) == ("worker", "net1", 1000, 3500)
    assert np.isclose(trace.makespan_ms, 0.0025)


def test_top_ops_and_memory_of_the_hand_trace():
    table = hand_trace().top_ops()
    assert [(r.name, r.count, r.total_ns, r.self_ns) for r in table] == [
        ("net1/a", 1, 100, 100),
        ("net1/b", 1, 100, 100),
        ("net3/x", 1, 100, 100),
        ("net2/a", 1, 70, 70),  # its shard is no op
    ]
    assert table.work_ns == 370 and table[3].share == pytest.approx(70 / 370)
    memory = hand_trace().memory()  # no shapes recorded: nothing known, nothing made up
    assert not memory.known and memory.series() == ([], []) and len(memory.unknown) == 4


def test_a_traced_run_names_its_fetches_in_the_metadata():
    g = pg.Graph("fetches")
    with g.as_default():
        a = pg.tanh(pg.random_normal((8, 4), seed=1), name="a")
        b = pg.relu(a, name="b")
    with pg.Session(g) as sess:
        _, trace = sess.run([b, a], trace=True)
    assert trace.metadata["fetches"] == ["b", "a"]
    assert {x.op for x in trace.memory().buffers if x.fetched} == {"a", "b"}
