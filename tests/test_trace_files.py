"""Reading trace files the way users have them: gzip by content, folders, and every problem
reported with the file's name and where it is; and the nesting model under random timing."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parallelgraph as pg
from parallelgraph.trace import Trace, TraceEvent, nest

REAL = Path(__file__).parent / "fixtures" / "real"


def test_gzip_is_recognised_by_content_whatever_the_name(tmp_path):
    packed = (REAL / "torch_tb_handler.pt.trace.json.gz").read_bytes()
    disguised = tmp_path / "trace.json"
    disguised.write_bytes(packed)
    plain = pg.Trace.load(REAL / "torch_tb_handler.pt.trace.json.gz")
    assert pg.Trace.load(disguised).events == plain.events


def test_a_folder_with_one_trace_file_is_read(tmp_path):
    folder = tmp_path / "plugins" / "profile" / "2026_12_01"
    folder.mkdir(parents=True)
    shutil.copy(REAL / "jax_two_branch.trace.json.gz", folder / "vm.trace.json.gz")
    (folder / "vm.xplane.pb").write_bytes(b"\0")
    assert pg.Trace.load(tmp_path).source == "jax"
    shutil.copy(REAL / "jax_two_branch.trace.json.gz", folder / "other.trace.json.gz")
    with pytest.raises(ValueError, match=r"2 trace files .* name one"):
        pg.Trace.load(tmp_path)


def test_save_as_gzip_round_trips_and_is_atomic(tmp_path, monkeypatch):
    trace = pg.Trace.load(REAL / "tf_seed_inter2.ctf.json")
    path = trace.save(tmp_path / "t.json.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    back = pg.Trace.load(path)
    assert back.events == trace.events and back.source == "tensorflow"
    # a write that fails half-way leaves the old file whole and no temporary beside it
    good = path.read_bytes()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        trace.save(path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json.gz"]


BROKEN = [
    ("truncated.json.gz", lambda: (REAL / "jax_two_branch.trace.json.gz").read_bytes()[:900],
     r"gzip stream ends early"),
    ("latin1.json", lambda: '{"traceEvents": [{"name": "caf\xe9"}]}'.encode("latin-1"),
     r"not UTF-8 text: byte 30 is 0xe9"),
    ("deep.json", lambda: b"[" * 10_000 + b"]" * 10_000, r"nested too deeply"),
    ("empty.json", lambda: b"  \n", r"the file is empty"),
    ("bad.json", lambda: b'{"traceEvents": [}', r"not valid JSON at line 1, column 18"),
    ("notgzip.json.gz", lambda: b"\x1f\x8b\x08\x00garbage", r"not a valid gzip file|ends early"),
    ("tid.json", lambda: json.dumps({"traceEvents": [
        {"ph": "X", "name": "a", "ts": 0, "dur": 1, "pid": 1, "tid": "²"}]}).encode(), None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_every_read_error_names_the_file_and_says_what_is_wrong(tmp_path, name, make, message):
    path = tmp_path / name
    path.write_bytes(make())
    if message is None:  # odd but valid: loads
        assert len(pg.Trace.load(path).events) == 1
        return
    with pytest.raises(ValueError) as problem:
        pg.Trace.load(path)
    assert str(problem.value).startswith(str(path))
    assert problem.match(message)


def test_a_missing_file_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file"):
        pg.Trace.load(tmp_path / "nope.json")


# -- nesting under random timing ------------------------------------------------------------------
def random_nested_trace(rng: random.Random, lanes: int = 3, events: int = 40) -> Trace:
    """Events on a few lanes, each either nested in an open one or after it (a call tree)."""
    made = []
    for lane in range(lanes):
        stack: list[tuple[int, int]] = []
        clock = rng.randrange(0, 1000)
        for i in range(events):
            while stack and rng.random() < 0.4:
                stack.pop()
            if stack:
                lo, hi = stack[-1]
                if hi - lo < 4:
                    stack.pop()
                    continue
                start = rng.randrange(lo, hi - 2)
                end = rng.randrange(start + 1, hi + 1)
            else:
                start = clock + rng.randrange(0, 50)
                end = start + rng.randrange(0, 400)
                clock = end
            scope = rng.choice(["net1", "net2", ""])
            made.append(TraceEvent(f"{scope}/op{lane}_{i}", "op", scope, "cpu", "op",
                                   f"cpu/t{lane}", start, end))  # fmt: skip
            stack.append((start, end))
    return Trace(made, {"source": "trace-event"})


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_random_nesting_counts_nested_time_once(seed):
    trace = random_nested_trace(random.Random(seed))
    for event in trace.events:
        if event.parent is not None:
            parent = next(e for e in trace.events if e.name == event.parent)
            assert parent.lane == event.lane and parent.depth < event.depth
            assert parent.start <= event.start and event.end <= parent.end
    assert trace.work_s() <= sum(trace.lane_busy_s().values()) + 1e-12
    assert trace.lower_bound_s() <= trace.makespan_s + 1e-12
    assert all(u <= 1.0 + 1e-9 for u in trace.utilization().values())
    scopes = [s for s in trace.scopes() if s]
    if len(scopes) == 2:
        assert 0.0 <= trace.overlap(*scopes) <= 1.0
        report = trace.explain()
        assert report.lower_bound_ns <= report.makespan_ns
    assert nest(trace.events) == trace.events  # nesting is idempotent


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_random_nested_traces_survive_save_and_load(tmp_path_factory, seed):
    trace = random_nested_trace(random.Random(seed), lanes=2, events=15)
    path = trace.save(tmp_path_factory.mktemp("t") / "t.json")
    back = pg.Trace.load(path)
    key = lambda e: (e.lane, e.start, -e.end, e.name)  # noqa: E731
    assert sorted(back.events, key=key) == sorted(trace.events, key=key)


def test_empty_trace_and_zero_length_events():
    assert Trace([]).explain().makespan_ns == 0
    instant = TraceEvent("a", "op", "", "cpu", "op", "cpu/0", 5, 5)
    inside = TraceEvent("b", "op", "", "cpu", "op", "cpu/0", 5, 5)
    trace = Trace([instant, inside])
    assert trace.makespan_s == 0 and trace.work_s() == 0
    assert trace.lower_bound_s() <= trace.makespan_s


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ({"cores": -3}, ValueError, "cores must be a whole number >= 1"),
        ({"cores": 1.5}, ValueError, "cores must be a whole number"),
        ({"config": "inter=2"}, TypeError, "config must be a pg.Config"),
    ],
)
def test_simulate_refuses_bad_arguments_before_replaying(args, error, message):
    trace = pg.Trace.load(REAL / "tf_seed_inter1.ctf.json")
    with pytest.raises(error, match=message):
        pg.simulate(trace, **args)
    with pytest.raises(TypeError, match="replays a Trace"):
        pg.simulate("trace.json")
    with pytest.raises(ValueError, match="needs a trace with op events"):
        pg.simulate(Trace([]))


def test_the_cli_says_a_broken_trace_in_one_line(tmp_path, capsys):
    from parallelgraph.cli import main

    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 10_000 + b"]" * 10_000)
    assert main(["explain", str(deep)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err and str(deep) in err
