"""A lane is a thread, and a thread is its (process, thread) pair: names only label it.

Generated documents (`generated_traces.shared_threads`) hold processes whose threads share
names and tids across processes and names within one, in every format that can record several
processes' threads in one file; each must read as one lane per thread, with each lane's busy
time and the total work what the construction says, and each process's lanes side by side on
the timeline. The real fixture is viztracer following two `multiprocessing` children, which
keep their parent's tid."""

from __future__ import annotations

import pytest
from generated_traces import LANE_FORMATS, shared_threads
from raw_facts import REAL

from parallelgraph.chrome import from_chrome, load

SEEDS = range(60)


@pytest.mark.parametrize("form", LANE_FORMATS)
@pytest.mark.parametrize("seed", SEEDS)
def test_every_thread_is_a_lane_of_its_own(form, seed):
    document, truth = shared_threads(seed, form)
    trace = from_chrome(document)
    assert trace.source == {"python": "python", "trace-event": "trace-event"}.get(form, form)
    thread_of_lane = {}
    for event in trace.ops():
        thread = truth.op_thread.get(event.name.removesuffix("_kernel_time"))
        if thread is None:
            continue  # py-spy's last sample
        assert thread_of_lane.setdefault(event.lane, thread) == thread, (event.lane, event.name)
    assert sorted(thread_of_lane.values()) == sorted(truth.busy_us), "one lane per thread"
    busy = trace.lane_busy_s()
    for lane, thread in thread_of_lane.items():
        assert busy[lane] * 1e6 == pytest.approx(truth.busy_us[thread], abs=0.01), lane
        if thread in truth.names:  # the name labels the lane
            assert truth.names[thread].replace("/", "∕") in lane
    assert trace.work_s() * 1e6 == pytest.approx(truth.work_us, abs=0.05)
    order = [thread_of_lane[lane][0] for lane in trace.lanes if lane in thread_of_lane]
    grouped = [pid for i, pid in enumerate(order) if i == 0 or order[i - 1] != pid]
    assert len(grouped) == len(set(order)), f"processes interleaved on the timeline: {order}"


def test_viztracer_following_two_processes_reads_them_as_two_branches():
    """Two `multiprocessing` children named net1 and net2, each in its "MainThread" with the
    launcher's tid (the real file): three lanes, the children the two branches, side by side
    as the raw events say; the launcher joining them is waiting, not a branch."""
    trace = load(REAL / "viztracer_two_processes.json.gz")
    assert trace.lanes == [
        "python:MainProcess/MainThread",
        "python:net1/MainThread",
        "python:net2/MainThread",
    ]
    assert set(trace.scopes()) == {"", "net1", "net2"}
    report = trace.explain()
    assert [(p.scope_a, p.scope_b) for p in report.pairs] == [("net1", "net2")]
    assert report.pairs[0].overlapped
    assert not any("GIL" in note for note in report.notes)  # each process has its own
    assert "BaseProcess.join" in str(report)  # said to be waiting, left out of the work


def test_threads_that_share_a_name_are_lanes_of_their_own():
    """Chromium's shape: two processes named alike, threads named alike within each."""
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "Renderer"}}
        for pid in (7, 8)
    ]
    for pid in (7, 8):
        for tid in (1, 2):
            name = {"name": "ThreadPoolForegroundWorker"}
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": name})
            events.append({"ph": "X", "name": "task", "pid": pid, "tid": tid, "ts": 0, "dur": 10})
    trace = from_chrome(events)
    assert trace.lanes == [
        "Renderer 7/ThreadPoolForegroundWorker 1",
        "Renderer 7/ThreadPoolForegroundWorker 2",
        "Renderer 8/ThreadPoolForegroundWorker 1",
        "Renderer 8/ThreadPoolForegroundWorker 2",
    ]
    assert trace.work_s() == pytest.approx(40e-6)
