"""Advice as a change from the run's own setting, and oversubscription found and said (issue 41,
items 2 and 1): the setting each trace records, the change advised from it, and traces of N
lanes busy side by side on C recorded cores whose right answer (oversubscribed exactly when
N > C) is known by construction."""

import json
import os
from pathlib import Path

import pytest

import parallelgraph as pg
from parallelgraph.explain import explain
from parallelgraph.trace import Trace, TraceEvent
from parallelgraph.trace.run_info import RunInfo

REAL = Path(__file__).parent / "fixtures" / "real"
MS = 1_000_000


def op(name, lane, start, end):
    return TraceEvent(name, "x", name.rpartition("/")[0], "cpu:0", "op", lane, start, end, 0, 0)


def ours(inter, intra=1, cores=None):
    info = {"config": {"inter_op_threads": inter, "intra_op_threads": intra, "streams": 1}}
    return info | ({"cores": cores} if cores else {})


def test_our_runs_advice_names_the_change_from_the_configs_threads():
    trace = Trace(
        (op("net1/a", "inter-op/0", 0, 10 * MS), op("net2/a", "inter-op/0", 10 * MS, 20 * MS)),
        ours(1, cores=4),
    )
    assert "raise inter_op_threads from 1 to 2" in explain(trace).suggestion


def test_our_run_is_never_told_to_raise_a_setting_it_already_had():
    """Four inter-op threads with gaps between ops: the advice may not ask for 2 or more."""
    events = (op("net1/a", "inter-op/0", 0, 5 * MS), op("net2/a", "inter-op/1", 6 * MS, 9 * MS))
    report = explain(Trace(events, ours(4, cores=4)))
    assert "raise inter_op_threads" not in report.suggestion
    assert "to 2" not in report.suggestion


def test_onnxruntime_records_its_intra_op_threads_and_the_advice_starts_from_them():
    one = pg.Trace.load(REAL / "ort_seq_intra1.json")
    two = pg.Trace.load(REAL / "ort_seq_intra2.json")
    assert dict(one.info.recorded) == {"intra_op_num_threads": 1}
    assert dict(two.info.recorded) == {"intra_op_num_threads": 2}
    assert "intra_op_num_threads from 1 to" in one.explain().suggestion
    if (two.info.cores or os.cpu_count() or 1) <= 2:  # the run had what it can use
        advice = two.explain().suggestion
        assert "raise" not in advice and "already had 2" in advice


def test_a_trace_that_does_not_say_its_setting_is_told_so():
    advice = pg.Trace.load(REAL / "torch2_schedule_memory.json").explain().suggestion
    assert "torch.set_num_threads" in advice
    assert "this trace does not say what the run had" in advice


def test_the_recorded_setting_survives_a_save(tmp_path):
    trace = pg.Trace.load(REAL / "ort_seq_intra2.json")
    path = tmp_path / "t.json"
    trace.save(path)
    assert dict(pg.Trace.load(path).info.recorded or {}) == {"intra_op_num_threads": 2}


def side_by_side(lanes: int, cores: int, ms: float = 10.0) -> dict:
    """A plain trace-event file: `lanes` threads each busy for the same `ms` at once, on a
    machine of `cores` CPUs recorded as Chrome records them (metadata num-cpus)."""
    events = [
        {"ph": "X", "name": f"net{i}/op", "pid": 1, "tid": 10 + i, "ts": 0, "dur": ms * 1000}
        for i in range(lanes)
    ]
    return {"traceEvents": events, "metadata": {"num-cpus": cores}}


@pytest.mark.parametrize(("lanes", "cores"), [(1, 1), (2, 2), (2, 4), (3, 2), (4, 2), (8, 4)])
def test_lanes_busy_side_by_side_are_oversubscribed_exactly_when_more_than_the_cores(
    tmp_path, lanes, cores
):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(side_by_side(lanes, cores)))
    trace = pg.Trace.load(path)
    assert trace.info.cores == cores
    report = trace.explain()
    found = report.oversubscribed
    if lanes > cores:
        assert found is not None
        assert (found.threads, found.cores) == (lanes, cores)
        assert found.per_core == pytest.approx(lanes / cores)
        assert found.share == pytest.approx(1.0)
        assert f"{lanes} threads busy at once on {cores} cores" in str(report)
        assert report.suggestion.startswith(f"run fewer threads at once — at most {cores}")
    else:
        assert found is None
        assert "oversubscription" not in str(report)


def test_a_file_that_records_no_cores_is_not_judged(tmp_path):
    document = side_by_side(4, 2)
    del document["metadata"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    assert pg.Trace.load(path).explain().oversubscribed is None


@pytest.mark.parametrize(("inter", "cores", "said"), [(4, 2, True), (2, 2, False)])
def test_our_runs_threads_against_the_recorded_cores(inter, cores, said):
    events = tuple(op(f"net{i}/a", f"inter-op/{i}", 0, 10 * MS) for i in range(inter))
    report = explain(Trace(events, ours(inter, cores=cores)))
    assert (report.oversubscribed is not None) == said
    if said:
        assert "4 threads busy at once on 2 cores: 2.0 runnable threads per core" in str(report)
        assert report.suggestion.startswith("lower inter_op_threads from 4 to 2")


def test_onnx_runtimes_intra_op_threads_on_fewer_cores_are_said_in_its_words():
    """The issue's run: intra_op_num_threads=4 on 2 cores, the node's helpers recording no
    lanes: 4 runnable threads while a node ran, lowered to 2 in ONNX Runtime's words."""
    events = (op("net1/a", "ort/main", 0, 8 * MS), op("net2/a", "ort/main", 8 * MS, 10 * MS))
    info = RunInfo(source="onnxruntime", cores=2, recorded={"intra_op_num_threads": 4})
    report = explain(Trace(events, info))
    found = report.oversubscribed
    assert found is not None and (found.value, found.cores) == (4, 2)
    assert "4 intra-op threads per op (SessionOptions.intra_op_num_threads=4) on 2 cores" in (
        str(report)
    )
    assert "2.0 runnable threads per core for 100% of the run" in str(report)
    assert report.suggestion.startswith("lower SessionOptions.intra_op_num_threads from 4 to 2")
    assert "raise" not in report.suggestion
