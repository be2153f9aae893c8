"""RunInfo: the typed record of what a run was, its JSON (`trace.metadata`) kept in step."""

import json
import pickle

import pytest

import parallelgraph as pg
from parallelgraph.devices import split_device
from parallelgraph.trace import analysis
from parallelgraph.trace.run_info import JitInfo, RunConfig, RunInfo


@pytest.fixture(scope="module")
def run_trace():
    preset = pg.presets.two_networks("tiny")
    with pg.Session(preset.graph, pg.Config(inter_op_threads=2)) as session:
        _, trace = session.run(preset.fetch, trace=True)
    return trace


def test_a_run_records_typed_fields_and_the_same_json(run_trace):
    info = run_trace.info
    assert info.config.inter_op_threads == 2 and info.settings is info.config
    assert info.executor == "threads" and info.cores >= 1 and info.run == 0
    assert isinstance(info.jit, JitInfo) and info.jit.busy_s >= 0
    assert info.fetches and all(isinstance(name, str) for name in info.fetches)
    assert dict(run_trace.metadata) == info.to_json()
    assert list(run_trace.metadata) == [
        "config", "graph", "executor", "cores", "wall_ns", "run", "notes", "jit", "fetches"
    ]  # fmt: skip
    assert RunInfo.from_json(json.loads(json.dumps(run_trace.metadata))) == info


def test_keys_it_does_not_read_are_kept_and_written_back():
    data = {"source": "mine", "colour": "blue", "cores": None, "config": {"mine": [1]}}
    info = RunInfo.from_json(data, "t.json")
    assert info.source == "mine" and info.cores is None
    assert dict(info.extra) == {"colour": "blue", "cores": None}
    assert info.config.values == {"mine": [1]} and info.config.streams is None
    trace = pg.Trace((), data)
    assert dict(trace.metadata) == data and list(trace.metadata) == list(data)  # order kept
    assert trace.source == "mine"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"cores": 0}, "cores"),
        ({"config": {"streams": 0}}, "config.streams"),
        ({"simulated_from": {"fuse": "yes"}}, "simulated_from.fuse"),
        ({"jit": {"compiled": 1.5}}, "jit.compiled"),
        ({"notes": ["a", 1]}, "notes"),
    ],
)
def test_an_ill_typed_field_fails_in_one_line_naming_it(bad, field):
    with pytest.raises(ValueError, match=rf"^t.json: otherData.metadata.{field} must be"):
        RunInfo.from_json(bad, "t.json")
    with pytest.raises(ValueError, match=rf"^Trace\(metadata=...\): metadata.{field} must be"):
        pg.Trace((), bad)


def test_a_top_level_write_to_metadata_is_checked_and_changes_info(run_trace):
    trace = pg.Trace(run_trace.events, run_trace.metadata)
    trace.metadata["jit"] = {"busy_s": 1.0, "compiled": 2, "compile_s": 0.5}
    assert trace.info.jit.compiled == 2 and trace.info.jit.compile_s == 0.5
    del trace.metadata["jit"]
    assert trace.info.jit is None and "jit" not in trace.metadata
    before = dict(trace.metadata)
    with pytest.raises(ValueError, match=r"metadata\.cores must be an int >= 1"):
        trace.metadata["cores"] = "two"
    assert dict(trace.metadata) == before and trace.info.cores == before["cores"]
    trace.metadata.update(run=3)
    assert trace.info.run == 3
    assert run_trace.info.jit is not None  # the trace it was made from is untouched


def test_info_and_metadata_pickle(run_trace):
    info = pickle.loads(pickle.dumps(run_trace.info))
    assert info == run_trace.info
    metadata = pickle.loads(pickle.dumps(run_trace.metadata))
    assert metadata == run_trace.metadata and metadata.info == run_trace.info
    assert pickle.loads(pickle.dumps(RunConfig({"streams": 2}))).streams == 2


def test_a_foreign_file_and_a_replay_build_their_info(run_trace, tmp_path):
    predicted = pg.simulate(run_trace, pg.Config(inter_op_threads=1))
    assert predicted.info.simulated is True and predicted.info.cores == run_trace.info.cores
    assert predicted.info.simulated_from == run_trace.info.config
    assert list(predicted.metadata) == [
        "config", "graph", "cores", "simulated", "simulated_from", "source"
    ]  # fmt: skip
    path = run_trace.save(tmp_path / "t.json")
    back = pg.Trace.load(path)
    assert back.info == RunInfo.from_json(json.loads(json.dumps(run_trace.metadata)))


def test_the_bound_is_one_pure_helper(run_trace):
    work = analysis.total_work_ns(run_trace)
    path = analysis.critical_path(run_trace).length_ns
    assert analysis.lower_bound_ns(run_trace, 2) == analysis.bound_ns(work, 2, path)
    assert analysis.bound_ns(100, 0, 7) == 100  # no workers reads as one


def test_split_device_takes_any_kind_apart():
    assert split_device("tpu:3") == ("tpu", 3)
    assert split_device("gpu:0") == ("gpu", 0)
    assert split_device("CUDA") == ("CUDA", None)
    assert split_device("cpu:x") == ("cpu", None)
