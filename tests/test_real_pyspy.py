"""py-spy 0.4.3 chrometrace files (tests/fixtures/real/pyspy_*.json, made by make_pyspy.py): the
numbers and the explanation agree with facts this file computes from the raw B/E samples with its
own few lines, the threading module's waits are waiting and its thread machinery setup, and the
advice for the GIL-bound program is processes or a free-threaded Python, not more threads (two
threads did not speed it up when measured)."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from raw_facts import length, overlap, union

import parallelgraph as pg
from parallelgraph.trace import EventRole

REAL = Path(__file__).parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "MANIFEST.json").read_text())["files"]
FILES = ("pyspy_numpy_threads.json", "pyspy_python_threads.json", "pyspy_python_threads_gil.json")
WAITS = ("Thread.join", "Thread._wait_for_tstate_lock", "Event.wait", "Condition.wait",
         "Barrier.wait")  # fmt: skip


# -- raw facts, straight from the JSON ------------------------------------------------------------
def raw_slices(name: str) -> list[dict]:
    """B/E pairs per thread as {name, file, tid, ts, end}; frames py-spy closed only when it
    wrote the file (the last ts) end at the last ts before it (the README's rule)."""
    events = json.loads((REAL / name).read_text())
    written = max(e["ts"] for e in events)
    observed = max(e["ts"] for e in events if e["ts"] < written)
    stacks, out = defaultdict(list), []
    for index, e in enumerate(events):
        if e["ph"] == "B":
            stacks[e["tid"]].append((index, e))
        else:
            at, begin = stacks[e["tid"]].pop()
            assert begin["name"] == e["name"]
            end = observed if e["ts"] == written else e["ts"]
            out.append({"name": e["name"], "file": begin["args"]["filename"], "tid": e["tid"],
                        "ts": begin["ts"], "end": max(begin["ts"], end), "at": at})  # fmt: skip
    return out


def role(s: dict) -> str:
    if s["file"].endswith("threading.py"):
        return "waiting" if s["name"] in WAITS else "setup"
    return "work"


def work_time(slices: list[dict]) -> list[tuple[float, float]]:
    """The spans of one thread in which its innermost open frame (the last one begun: py-spy
    begins a sample's new frames outermost first) was work."""
    bounds = sorted({t for s in slices for t in (s["ts"], s["end"])})
    pieces = []
    for low, high in itertools.pairwise(bounds):
        open_now = [s for s in slices if s["ts"] <= low and high <= s["end"]]
        if open_now and role(max(open_now, key=lambda s: (s["ts"], -s["end"], s["at"]))) == "work":
            pieces.append((low, high))
    return union(pieces)


def raw_threads(name: str) -> dict[int, list[dict]]:
    threads = defaultdict(list)
    for s in raw_slices(name):
        threads[s["tid"]].append(s)
    return threads


def target_of(slices: list[dict]) -> str:
    """A thread's branch: net1 or net2 when one of its frames is that function."""
    return next((s["name"] for s in slices if s["name"] in ("net1", "net2")), "main")


# -- every file -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_pyspy_file_loads_with_the_raw_makespan_busy_time_and_bound(name):
    trace = pg.Trace.load(REAL / name)
    assert trace.source == "py-spy"
    threads = raw_threads(name)
    working = {tid: work_time(slices) for tid, slices in threads.items()}
    start = min(spans[0][0] for spans in working.values() if spans)
    end = max(spans[-1][1] for spans in working.values() if spans)
    assert trace.makespan_ms == pytest.approx((end - start) / 1e3, abs=1e-6)
    raw_busy = sorted(length(spans) / 1e6 for spans in working.values())
    assert sorted(trace.lane_busy_s().values()) == pytest.approx(raw_busy, abs=1e-8)
    # a lane is a thread with a work frame (the main thread's <module> is one, even when all of
    # its time was inside Event.wait); each thread runs in program order, so the chain is the
    # busiest thread
    lanes = [tid for tid, slices in threads.items() if any(role(s) == "work" for s in slices)]
    assert len(trace.lanes) == len(lanes)
    total = sum(length(spans) for spans in working.values())
    bound = max(total / len(lanes), max(length(spans) for spans in working.values()))
    assert trace.lower_bound_s() == pytest.approx(bound / 1e6, abs=1e-8)
    assert trace.work_s() == pytest.approx(total / 1e6, abs=1e-8)


@pytest.mark.parametrize("name", FILES)
def test_pyspy_threads_are_named_after_their_targets_and_overlap_as_raw(name):
    trace = pg.Trace.load(REAL / name)
    by_branch = {target_of(slices): work_time(slices) for slices in raw_threads(name).values()}
    assert {"py-spy/net1", "py-spy/net2"} <= set(trace.lanes)
    assert trace.overlap("net1", "net2") == pytest.approx(
        overlap(by_branch["net1"], by_branch["net2"]), abs=0.05
    )
    assert {e.scope for e in trace.ops()} <= {"", "net1", "net2"}
    assert all(e.lane == f"py-spy/{e.scope}" for e in trace.ops() if e.scope)
    assert not any("(" in e.name or ".py" in e.name for e in trace.events)


def test_waiting_and_setup_are_the_threading_modules_calls():
    trace = pg.Trace.load(REAL / "pyspy_numpy_threads.json")
    roles = defaultdict(set)
    for e in trace.events:
        roles[e.op_type].add(e.role)
    assert roles["Event.wait"] == roles["Condition.wait"] == {EventRole.WAITING}
    assert roles["Thread._bootstrap"] == roles["Thread.run"] == {EventRole.SETUP}
    assert roles["linear"] == roles["numpy_branch"] == {EventRole.WORK}
    # the main thread only waited: its <module> frame holds no work time
    assert trace.lane_busy_s()["py-spy/MainThread"] == 0


def test_each_thread_runs_in_program_order():
    trace = pg.Trace.load(REAL / "pyspy_python_threads.json")
    for lane in ("py-spy/net1", "py-spy/net2"):
        ops = sorted((e for e in trace.ops() if e.lane == lane), key=lambda e: e.start)
        assert [e.after for e in ops[1:]] == [e.name for e in ops[:-1]]


def test_the_notes_say_it_is_sampled_and_the_gil_bounds_the_overlap():
    for name in FILES:
        notes = " ".join(pg.Trace.load(REAL / name).metadata["notes"])
        assert "samples stacks" in notes and "GIL" in notes and "upper bound" in notes
        assert "still open when py-spy wrote the file" in notes


def test_numpy_threads_overlapped_and_two_threads_helped():
    report = pg.Trace.load(REAL / "pyspy_numpy_threads.json").explain()
    assert report.pairs[0].overlapped
    effects = MANIFEST["pyspy_numpy_threads.json"]["measured_effects"]
    one, two = (s["median_ms"] for s in effects["settings"])
    assert two < one


@pytest.mark.parametrize("name", ["pyspy_python_threads.json", "pyspy_python_threads_gil.json"])
def test_the_gil_bound_program_is_advised_processes_not_threads(name):
    """Two threads did not make the pure-Python program faster (MANIFEST measured_effects):
    the advice must be processes or a free-threaded Python, and never more threads."""
    effects = MANIFEST[name]["measured_effects"]
    one, two = (s["median_ms"] for s in effects["settings"])
    assert two > 0.9 * one  # no speed-up from the second thread
    report = pg.Trace.load(REAL / name).explain()
    advice = report.suggestion
    assert "ProcessPoolExecutor" in advice and "free-threaded" in advice
    assert not advice.startswith("more threads")
    for wrong in ("inter_op", "intra_op", "Config(", "threading.Thread", "ray.init"):
        assert wrong not in advice
    assert "upper bound" in str(report)


def test_the_gil_option_recorded_only_the_threads_holding_it():
    plain = pg.Trace.load(REAL / "pyspy_python_threads.json")
    gil = pg.Trace.load(REAL / "pyspy_python_threads_gil.json")
    assert "py-spy/MainThread" in plain.lanes and "py-spy/MainThread" not in gil.lanes
    assert MANIFEST["pyspy_python_threads_gil.json"]["program"]["gil_option"] is True


def test_imports_sampled_by_a_spawned_program_are_setup(tmp_path):
    """`py-spy record -- python prog.py` samples the imports too: importlib's _find_and_load
    and everything in it (the imported module's own <module> code) is setup, not work."""

    def frame(ph, name, filename, ts):
        return {"args": {"filename": filename, "line": 1}, "cat": "py-spy", "name": name,
                "ph": ph, "pid": 7, "tid": 1, "ts": ts}  # fmt: skip

    imp, prog, lib = "<frozen importlib._bootstrap>", "/tmp/prog.py", "/site/numpy/__init__.py"
    events = [frame("B", "<module>", prog, 0), frame("B", "_find_and_load", imp, 0),
              frame("B", "<module>", lib, 0), frame("E", "<module>", lib, 100),
              frame("E", "_find_and_load", imp, 100), frame("E", "<module>", prog, 100),
              frame("B", "<module>", prog, 100), frame("B", "work", prog, 100),
              frame("E", "work", prog, 150), frame("E", "<module>", prog, 150),
              # a second thread, still starting when py-spy wrote the file (at 200)
              dict(frame("B", "Thread._bootstrap", "/py/threading.py", 140), tid=2),
              dict(frame("E", "Thread._bootstrap", "/py/threading.py", 200), tid=2)]  # fmt: skip
    path = tmp_path / "spawned.json"
    path.write_text(json.dumps(events))
    trace = pg.Trace.load(path)
    assert trace.source == "py-spy"
    roles = sorted((e.start, e.op_type, e.end, str(e.role)) for e in trace.events)
    assert roles[:3] == [
        (0, "<module>", 100_000, "setup"),  # numpy's module code, inside the import
        (0, "<module>", 100_000, "work"),  # the program's line that imports
        (0, "_find_and_load", 100_000, "setup"),
    ]
    assert trace.makespan_ms == pytest.approx(0.05)
    assert [e.name for e in trace.ops()] == ["<module>", "<module>#3"]  # #2: numpy's, setup
