"""Chrome trace-event JSON: a strict export (checked event by event against the Trace Event
Format), an exact round trip, and import of TensorFlow 1.x timelines, PyTorch profiler traces
and generic trace-event files (hand-written fixtures in tests/fixtures/traces)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import parallelgraph as pg
from parallelgraph.chrome import FLOW_CATEGORY, FORMAT, from_chrome, to_chrome
from parallelgraph.trace import Trace, TraceEvent

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
NUMBER = (int, float)

# Keys each phase must carry (and may carry: nothing else), with their JSON types.
REQUIRED: dict[str, dict[str, Any]] = {
    "X": {"name": str, "cat": str, "ph": str, "ts": NUMBER, "dur": NUMBER, "pid": int, "tid": int,
          "args": dict},
    "M": {"name": str, "ph": str, "ts": NUMBER, "pid": int, "tid": int, "args": dict},
    "s": {"name": str, "cat": str, "ph": str, "id": int, "ts": NUMBER, "pid": int, "tid": int},
    "f": {"name": str, "cat": str, "ph": str, "id": int, "ts": NUMBER, "pid": int, "tid": int,
          "bp": str},
}  # fmt: skip
METADATA_ARGS = {
    "process_name": ("name", str),
    "process_sort_index": ("sort_index", int),
    "thread_name": ("name", str),
    "thread_sort_index": ("sort_index", int),
}


def event(name, lane, start, end, kind="op", shard=None, inputs=(), scope=None, op_type="matmul"):
    scope = name.rpartition("/")[0] if scope is None else scope
    return TraceEvent(name, op_type, scope, "cpu:0", kind, lane, start, end, 7, 9, shard, inputs)


def well_formed(document: dict[str, Any]) -> dict[str, Any]:
    """Check a document against the format's rules; return its slices, threads and flows."""
    assert set(document) == {"traceEvents", "displayTimeUnit", "otherData"}
    assert document["displayTimeUnit"] == "ms" and document["otherData"]["format"] == FORMAT
    events = document["traceEvents"]
    for item in events:
        spec = REQUIRED[item["ph"]]
        assert set(item) == set(spec), item
        for key, kind in spec.items():
            assert isinstance(item[key], kind) and not isinstance(item[key], bool), (key, item)
        if item["ph"] == "M":
            key, kind = METADATA_ARGS[item["name"]]
            assert set(item["args"]) == {key} and isinstance(item["args"][key], kind)
        if item["ph"] == "X":
            assert item["ts"] >= 0 and item["dur"] >= 0
        if item["ph"] == "f":
            assert item["bp"] == "e"
    meta: dict[str, dict[Any, Any]] = defaultdict(dict)
    for item in (e for e in events if e["ph"] == "M"):
        owner = item["pid"] if item["name"].startswith("process") else (item["pid"], item["tid"])
        meta[item["name"]][owner] = next(iter(item["args"].values()))
    assert set(meta["process_name"]) == set(meta["process_sort_index"])
    assert set(meta["thread_name"]) == set(meta["thread_sort_index"])
    slices = [e for e in events if e["ph"] == "X"]
    stacks: dict[tuple[int, int], list[float]] = defaultdict(list)
    last_start: dict[tuple[int, int], float] = {}
    for item in slices:  # in file order: parents first, nested or disjoint, exactly in floats
        thread = (item["pid"], item["tid"])
        assert thread in meta["thread_name"] and item["pid"] in meta["process_name"]
        start, end = item["ts"], item["ts"] + item["dur"]
        assert start >= last_start.get(thread, 0.0)
        last_start[thread] = start
        stack = stacks[thread]
        while stack and stack[-1] <= start:
            stack.pop()
        assert not stack or end <= stack[-1], f"{item['name']} sticks out of its parent"
        stack.append(end)
    flows = defaultdict(list)
    for item in events:
        if item["ph"] in "sf":
            flows[item["id"]].append(item)
    pairs = []
    for steps in flows.values():
        out, into = sorted(steps, key=lambda e: e["ph"], reverse=True)
        assert (out["ph"], into["ph"]) == ("s", "f")
        assert out["cat"] == into["cat"] == FLOW_CATEGORY and out["name"] == into["name"]
        producer = [
            e for e in slices
            if (e["pid"], e["tid"]) == (out["pid"], out["tid"]) and e["name"] == out["name"]
            and e["ts"] <= out["ts"] < e["ts"] + e["dur"]
        ]  # fmt: skip
        consumer = [
            e for e in slices
            if (e["pid"], e["tid"]) == (into["pid"], into["tid"]) and e["ts"] == into["ts"]
        ]  # fmt: skip
        assert len(producer) == 1 and len(consumer) >= 1
        assert producer[0]["args"]["lane"] != consumer[0]["args"]["lane"]
        pairs.append((producer[0]["name"], consumer[0]["name"]))
    return {"slices": slices, "threads": meta["thread_name"], "meta": meta, "flows": pairs}


def hand_trace() -> Trace:
    """Ops on the classic pools and on later lanes (GPU streams, copies, remote workers), in
    start order like the events of a run."""
    events = sorted(
        (
            event("net1/a", "inter-op/0", 1_000, 5_000),
            event("net1/a", "inter-op/0", 1_500, 2_500, kind="shard", shard=0),
            event("net1/a", "intra-op/0", 1_600, 2_700, kind="shard", shard=1),
            event("net1/a", "inter-op/0", 2_500, 5_000, kind="shard", shard=2),
            event("net2/b", "inter-op/1", 1_200, 3_000),
            event("net2/c", "inter-op/1", 3_100, 4_000, inputs=("net2/b",)),
            event("h2d", "copy/0", 5_100, 5_600, kind="copy", inputs=("net1/a",), op_type="copy"),
            event("gpu/k", "stream/1", 5_700, 9_000, inputs=("h2d", "net2/c")),
            event("remote", "worker-tcp://10.0.0.2:1234/0", 9_100, 9_900, inputs=("gpu/k",)),
            event("add", "inter-op/0", 10_000, 10_333, inputs=("net1/a", "remote", "missing")),
        ),
        key=lambda e: (e.start, e.kind != "op"),
    )
    return Trace(
        events,
        {"config": {"inter_op_threads": 2, "ratio": 0.1}, "notes": ["é"], "user": ["é", None]},
    )


def test_export_is_strict_trace_event_format():
    trace = hand_trace()
    document = to_chrome(trace)
    checked = well_formed(document)
    meta = checked["meta"]
    assert sorted(meta["process_name"].values()) == sorted(
        ["inter-op pool", "intra-op pool", "stream", "copy", "worker-tcp://10.0.0.2:1234"]
    )
    # viewers keep our lane order: pools, then threads, numbered in the order of Trace.lanes
    by_pid = sorted(meta["process_sort_index"], key=meta["process_sort_index"].get)
    assert [meta["process_name"][pid] for pid in by_pid][:2] == ["inter-op pool", "intra-op pool"]
    threads = sorted(meta["thread_sort_index"], key=meta["thread_sort_index"].get)
    assert [meta["thread_name"][t] for t in threads] == trace.lanes
    assert {t[1] for t, name in meta["thread_name"].items() if name.startswith("inter-op/")} == {
        0,
        1,
    }
    for item in checked["slices"]:
        assert meta["thread_name"][(item["pid"], item["tid"])] == item["args"]["lane"]
    # one flow per input on another lane; none for same-lane inputs or unknown producers
    assert sorted(checked["flows"]) == sorted(
        [("net1/a", "h2d"), ("h2d", "gpu/k"), ("net2/c", "gpu/k"), ("gpu/k", "remote"),
         ("remote", "add")]
    )  # fmt: skip
    assert json.loads(json.dumps(document)) == document


def test_flow_events_bind_inside_producer_and_at_consumer_start():
    document = to_chrome(hand_trace())
    slices = {e["name"]: e for e in document["traceEvents"] if e["ph"] == "X"}
    flows = [e for e in document["traceEvents"] if e["ph"] in "sf"]
    assert document["traceEvents"][-len(flows) :] == flows  # after every complete event
    for item in flows:
        if item["ph"] == "s":  # 1 ns before the producer's end (Perfetto closes it at its end)
            producer = slices[item["name"]]
            assert item["ts"] == pytest.approx(producer["ts"] + producer["dur"] - 0.001)


def test_rounding_never_lets_a_child_stick_out_of_its_parent():
    rng = random.Random(7)
    origin = 1_700_000_000_123_456_789  # nanoseconds since the epoch: large, odd
    events = []
    for index in range(300):
        lane = f"inter-op/{index}"
        start = origin + rng.randrange(0, 10**12)
        end = start + rng.randrange(1, 10**9)
        events.append(event(f"op{index}", lane, start, end))
        child_start = rng.randrange(start, end)
        for child_end in (end, rng.randrange(child_start, end + 1)):
            events.append(event(f"op{index}", lane, child_start, child_end, "shard", 0))
    events.append(event("first", "inter-op/0", origin, origin + 1))
    document = to_chrome(Trace(events))
    well_formed(document)  # exact float nesting, no tolerance
    for item in document["traceEvents"]:
        if item["ph"] == "X":
            assert round((item["ts"] + item["dur"]) * 1000) == round(
                item["ts"] * 1000 + item["dur"] * 1000
            )


def test_overlapping_events_on_one_lane_move_to_an_overlap_thread(tmp_path):
    trace = Trace(
        (
            event("a", "stream/1", 0, 100),
            event("b", "stream/1", 50, 150),
            event("c", "stream/1", 60, 70),
            event("d", "stream/1", 160, 170),
        )
    )
    checked = well_formed(to_chrome(trace))
    names = {e["name"]: checked["threads"][(e["pid"], e["tid"])] for e in checked["slices"]}
    assert names == {
        "a": "stream/1",
        "b": "stream/1 (overlap 1)",
        "c": "stream/1",
        "d": "stream/1",
    }
    back = pg.Trace.load(trace.save(tmp_path / "overlap.json"))
    assert back.events == trace.events and back.lanes == ["stream/1"]


def test_save_then_load_is_an_exact_inverse(tmp_path):
    trace = hand_trace()
    back = pg.Trace.load(trace.save(tmp_path / "deep" / "hand.ctf.json"))
    assert back.events == trace.events  # every field, absolute times included
    assert back.metadata == trace.metadata
    assert back.lanes == trace.lanes


def test_a_traced_run_exports_well_formed_and_round_trips(tmp_path, many_shards):
    g = pg.Graph("traced")
    with g.as_default():
        with pg.scope("net1"):
            a = pg.tanh(pg.random_normal((64, 16), seed=1))
        with pg.scope("net2"):
            b = pg.relu(pg.random_normal((64, 16), seed=2))
        out = a + b
    with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=2)) as sess:
        _, trace = sess.run(out, trace=True)
    path = trace.save(tmp_path / "run.ctf.json")
    checked = well_formed(json.loads(path.read_text()))
    cross_lane = {
        (producer.name, op.name)
        for op in trace.ops()
        for producer in trace.ops()
        if producer.name in op.inputs and producer.lane != op.lane
    }
    assert set(checked["flows"]) == cross_lane
    back = pg.Trace.load(path)
    assert sorted(back.events, key=repr) == sorted(trace.events, key=repr)
    assert back.metadata == json.loads(json.dumps(trace.metadata, default=str))


# -- import ------------------------------------------------------------------------------------


def by_name(trace: Trace) -> dict[str, TraceEvent]:
    return {e.name: e for e in trace.events if e.kind != "shard"}


def assert_survives_save_and_load(trace: Trace, tmp_path: Path) -> None:
    path = trace.save(tmp_path / "again.ctf.json")
    well_formed(json.loads(path.read_text()))
    back = pg.Trace.load(path)
    assert back.events == trace.events and back.metadata == trace.metadata


def test_tensorflow_timeline_of_the_seed_graph(tmp_path):
    trace = pg.Trace.load(FIXTURES / "tf_timeline_seed.json")
    assert trace.source == "tensorflow"
    # the executor's _SOURCE node (the only event on cpu:0) is left out, and said so
    assert trace.lanes == ["gpu:0/0", "gpu:0/stream:14/0", "gpu:0/memcpy/0"]
    assert "_SOURCE" not in {e.name for e in trace.events}
    assert any("Left out" in note and "NoOp" in note for note in trace.metadata["notes"])
    assert trace.lane("gpu:0/0").kind.value == "stream"
    events = by_name(trace)
    matmul = events["net1/MatMul"]
    assert (matmul.op_type, matmul.scope, matmul.device, matmul.kind) == (
        "MatMul",
        "net1",
        "gpu:0",
        "op",
    )
    # the GPU kernel is the op (its launch on the executor thread is dropped)
    base = 1516043281273000 * 1000
    assert (matmul.lane, matmul.start - base, matmul.end - base) == (
        "gpu:0/stream:14/0",
        130_000,
        630_000,
    )
    assert matmul.inputs == ("net1/random_normal/RandomStandardNormal", "net1/w1/read")
    assert events["net2/add"].inputs == ("net2/MatMul", "net2/w1/read")  # ':0' and '^' dropped
    assert events["add"].inputs == ("net1/add", "net2/add")  # args and flows agree: no repeats
    assert events["net1/w1/read"].inputs == ()  # net1/w1 never ran in this step
    assert events["net1/w1/read"].lane == "gpu:0/0"
    # stream:all repeats stream:14: each kernel once
    assert len([e for e in trace.ops() if e.name == "net1/MatMul"]) == 1
    # a node with two kernels: an op spanning them, one shard per kernel
    shards = [e for e in trace.events if e.name == "add" and e.kind == "shard"]
    assert [(s.shard, s.duration_ns) for s in shards] == [(0, 10_000), (1, 15_000)]
    assert events["add"].duration_ns == 25_000
    assert events["edge_12_add"].kind == "copy" and events["edge_12_add"].op_type == "MEMCPYDtoH"
    assert trace.scopes() == ["net1", "net2", ""]
    assert events["net1/random_normal/RandomStandardNormal"].in_scope("net1")
    # one GPU stream runs the two subnetworks one after the other
    assert trace.overlap("net1", "net2") == 0.0
    assert_survives_save_and_load(trace, tmp_path)


def test_pytorch_profiler_trace(tmp_path):
    trace = pg.Trace.load(FIXTURES / "pytorch_profiler.json")
    imported = trace.metadata["imported"]
    assert trace.source == "pytorch" and imported["header"]["schemaVersion"] == 1
    assert trace.lanes == ["cpu/4242", "gpu:0/stream/7", "gpu:0/stream/20"]
    events = by_name(trace)
    assert set(events) == {
        "aten::mm",
        "aten::mm#2",
        "aten::add",
        "aten::copy_",
        "cudaLaunchKernel",
        "cudaLaunchKernel#2",
        "cudaLaunchKernel#3",
        "cudaMemcpyAsync",
        "ampere_sgemm_128x64_nn",
        "ampere_sgemm_128x64_nn#2",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3>)",
        "Memcpy DtoH (Device -> Pageable)",
    }  # fmt: skip  (record_function ranges are scopes, not events)
    first, second = events["ampere_sgemm_128x64_nn"], events["ampere_sgemm_128x64_nn#2"]
    assert (first.lane, first.device, first.op_type) == ("gpu:0/stream/7", "gpu:0", "kernel")
    assert (second.lane, second.start, second.end) == ("gpu:0/stream/20", 70_000, 470_000)
    # scopes: the gpu_user_annotation around a kernel, else the record_function of its launch
    assert (first.scope, second.scope, events["aten::mm#2"].scope) == ("net1", "net2", "net2")
    assert events["aten::add"].scope == ""  # ProfilerStep#0 is not a scope
    # dependencies: ac2g flows and, without a flow, the shared correlation id
    assert first.inputs == ("cudaLaunchKernel",) and second.inputs == ("cudaLaunchKernel#2",)
    copy = events["Memcpy DtoH (Device -> Pageable)"]
    assert (copy.kind, copy.bytes, copy.inputs) == ("copy", 1_048_576, ("cudaMemcpyAsync",))
    assert events["aten::mm"].op_type == "aten::mm" and events["aten::mm"].device == "cpu"
    # net1 busy 12..430 µs (its mm, launch and kernel), net2 52..470: they overlap 378 of 418
    assert trace.overlap("net1", "net2") == pytest.approx(378 / 418)
    assert_survives_save_and_load(trace, tmp_path)


def test_generic_begin_end_trace(tmp_path):
    trace = pg.Trace.load(FIXTURES / "generic_begin_end.json")
    assert trace.source == "trace-event"
    assert trace.lanes == ["scheduler/main", "scheduler/worker-1"]
    events = by_name(trace)
    assert [(e.name, e.lane) for e in trace.events] == [
        ("step", "scheduler/main"),
        ("net1/MatMul", "scheduler/main"),
        ("net2/MatMul", "scheduler/worker-1"),
        ("net1/Add", "scheduler/main"),
        ("net2/Add", "scheduler/worker-1"),
        ("add", "scheduler/main"),
    ]
    # ts is in µs even though displayTimeUnit is "ns"; string and int pid/tid are one thread
    assert (events["net2/MatMul"].start, events["net2/MatMul"].end) == (2_000, 7_000)
    assert (events["step"].start, events["step"].end) == (0, 10_000)
    assert events["net1/MatMul"].op_type == "compute" and events["step"].scope == ""
    assert events["add"].inputs == ("net2/Add",)  # flow 'f' without bp: binds to the next slice
    # net1 busy 1-5, 5.5-6.5 µs; net2 2-7, 7.25-8: overlap 4 µs of net1's 5
    assert trace.overlap("net1", "net2") == pytest.approx(0.8)
    assert_survives_save_and_load(trace, tmp_path)


def test_bare_list_trace(tmp_path):
    trace = pg.Trace.load(FIXTURES / "generic_bare_list.json")
    assert trace.lanes == ["7/1", "7/2", "7/3"]
    events = by_name(trace)
    assert (events["net1/conv"].start, events["net1/conv"].end) == (100_500, 150_750)
    assert events["marker"].duration_ns == 0  # 'X' without dur
    assert (events["memcpy HtoD"].kind, events["memcpy HtoD"].bytes) == ("copy", 4096)
    assert trace.overlap("net1", "net2") == pytest.approx(30.75 / 50.25)
    assert_survives_save_and_load(trace, tmp_path)
    # the JSON Array Format may lack its closing bracket
    text = (FIXTURES / "generic_bare_list.json").read_text().rstrip().removesuffix("]") + ",\n"
    (tmp_path / "streamed.json").write_text(text)
    assert pg.Trace.load(tmp_path / "streamed.json").events == trace.events


def test_unknown_and_unused_phases_are_skipped():
    trace = from_chrome(
        [
            {"ph": "Z", "what": "a phase from the future"},
            {"ph": "C", "name": "memory", "pid": 1, "args": {"bytes": 3}},
            {"ph": "i", "name": "tick", "pid": 1, "tid": 1},
            {"ph": "b", "cat": "io", "name": "request", "id": 4, "pid": 1, "tid": 1, "ts": 1},
            {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
        ]
    )
    assert [(e.name, e.start, e.end, e.lane) for e in trace.events] == [("work", 2000, 3000, "1/1")]


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"traceEvents": {}}', "'traceEvents' must be a list, got dict"),
        ('[{"ph": "X", "ts": 1}, "oops"]', "event 1 is not an object: 'oops'"),
        ('[{"ph": "X", "name": "a", "pid": 1}]', r"event 0 has no valid ts/dur: 'ts' is missing"),
        ('[{"ph": "B", "ts": "soon"}]', r"event 0 has no valid ts/dur: 'ts' must be a number"),
        ('[{"ph": "X", "ts": 1, "dur": true}]', r"'dur' must be a number of µs, got True"),
        ('[{"ph": "X", "ts": 1, "dur": -2}]', r"event 0 has no valid ts/dur: 'dur' is negative"),
    ],
)
def test_malformed_files_say_what_and_where(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as caught:
        pg.Trace.load(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_an_orphan_end_is_skipped_and_an_open_slice_ends_at_the_traces_end():
    """As Chrome's viewer and Perfetto read them: a ring buffer that overwrote a 'B', a
    streamed file cut before its outer 'E' — each repaired and said in a note."""
    trace = from_chrome(
        [
            {"ph": "E", "pid": 1, "tid": 1, "ts": 0.5},
            {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 1},
            {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 2},
            {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
            {"ph": "X", "name": "other", "pid": 1, "tid": 2, "ts": 2, "dur": 5},
        ]
    )
    spans = {e.name: (e.start, e.end, e.depth) for e in trace.events}
    assert spans == {"outer": (1000, 7000, 0), "inner": (2000, 3000, 1), "other": (2000, 7000, 0)}
    notes = " ".join(trace.metadata["notes"])
    assert "Skipped 1 'E' event(s)" in notes and "event 0 at ts 0.5" in notes
    assert "1 slice(s) never ended ('outer'" in notes


def test_a_truncated_file_says_where_it_stops(tmp_path):
    text = (FIXTURES / "pytorch_profiler.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"cut.json: not valid JSON at line \d+, column \d+ .*"
                       r"is the file truncated\?"):  # fmt: skip
        pg.Trace.load(path)
