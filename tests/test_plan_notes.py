"""The executor registry and typed plan notes: readers ask kinds and capabilities, not text."""

import json
import pickle

import parallelgraph as pg
from parallelgraph.config import EXECUTORS
from parallelgraph.executors.registry import EXECUTOR_NAMES, executor_spec, find_executor
from parallelgraph.plan_notes import NoteKind, PlanNote, plan_notes, soft_placement_warning


def test_the_registry_lists_every_config_executor_with_its_capabilities():
    assert set(EXECUTOR_NAMES) == set(EXECUTORS)
    assert executor_spec("sequential").cpu_only and not executor_spec("sequential").has_thread_pools
    assert executor_spec("threads").runs_gpu_steps
    dask = executor_spec("dask")
    assert dask.fuses_chains and dask.pins_workers and dask.distributed and dask.needs
    assert find_executor("tensorflow") is None and find_executor(None) is None


def test_a_soft_placement_note_is_its_sentence_and_round_trips_through_json():
    g = pg.Graph()
    with g.as_default(), pg.device("gpu:1"), pg.scope("net1"):
        out = pg.relu(pg.random_normal((4, 4), seed=1))
    sess = pg.Session(g, pg.Config(executor="threads", inter_op_threads=1, intra_op_threads=1))
    notes = plan_notes(sess.plan_for(out).notes, NoteKind.SOFT_PLACEMENT)
    assert notes and all(n.device.is_gpu and n.op.startswith("net1/") for n in notes)
    text = json.loads(json.dumps(list(notes)))
    assert plan_notes(text) == notes and [n.op for n in plan_notes(text)] == [n.op for n in notes]
    assert pickle.loads(pickle.dumps(notes[0])).kind is NoteKind.SOFT_PLACEMENT
    assert soft_placement_warning(text).startswith(f"soft placement: {len(notes)} op(s)")


def test_the_sequential_reference_notes_cpu_only_and_foreign_notes_are_other():
    note = PlanNote.moved("a", "gpu:0", NoteKind.CPU_ONLY, "sequential: CPU only")
    assert PlanNote.parse(str(note)).kind is NoteKind.CPU_ONLY
    assert PlanNote.parse("the profiler dropped 3 events").kind is NoteKind.OTHER
    assert soft_placement_warning([note]) is None


def test_a_saved_trace_keeps_its_notes_typed_without_reading_their_words(tmp_path, monkeypatch):
    """Issue #43: plan notes are stored as records beside their sentences ("note_kinds") and
    come back typed from them; only a file without records is typed from its words."""
    import warnings

    import parallelgraph as pg
    from parallelgraph.plan_notes import NoteKind, PlanNote

    graph = pg.Graph()
    with graph.as_default(), pg.device("gpu:9"):
        y = pg.relu(pg.random_normal((4, 4), seed=1))
    with warnings.catch_warnings(), pg.Session(graph, pg.Config(executor="sequential")) as s:
        warnings.simplefilter("ignore")
        _, trace = s.run(y, trace=True)
    path = trace.save(tmp_path / "t.json")

    def no_parse(note):
        raise AssertionError(f"parsed back: {note!r}")

    monkeypatch.setattr(PlanNote, "parse", classmethod(lambda cls, note: no_parse(note)))
    loaded = pg.Trace.load(path)
    assert [n.kind for n in loaded.info.notes] == [n.kind for n in trace.info.notes]
    assert all(n.kind is not NoteKind.OTHER and n.op for n in loaded.info.notes)
    monkeypatch.undo()
    # an older file, without the records: typed from the words
    old = pg.Trace.load(path)
    old.metadata.pop("note_kinds")
    assert [PlanNote.parse(n).kind for n in old.info.notes] == [n.kind for n in trace.info.notes]
    # new sentences written over the old: the old records do not describe them
    old.metadata["notes"] = ["something else"]
    assert "note_kinds" not in old.metadata
