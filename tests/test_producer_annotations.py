"""A producer's own annotations are never scopes: PyTorch's labels around its own work — the
DataLoader iterator's next batch, the optimizer's step, the profiler's step — are not branches to
compare with the user's `record_function("net1")`. The iterator's wait for its worker processes
is waiting; a single-process iterator loading the batch itself is work."""

from __future__ import annotations

import pytest
from raw_facts import REAL

import parallelgraph as pg
from parallelgraph.chrome import from_chrome
from parallelgraph.trace import EventRole

LOADER = "enumerate(DataLoader)#_{}DataLoaderIter.__next__"


@pytest.mark.parametrize("workers, role", [(2, EventRole.WAITING), (0, EventRole.WORK)])
def test_the_dataloader_iterator_is_no_branch(workers, role):
    trace = pg.Trace.load(REAL / f"torch_dataloader_workers{workers}.json")
    assert set(trace.scopes()) == {"", "net1", "net2"}
    report = trace.explain()
    assert [(pair.scope_a, pair.scope_b) for pair in report.pairs] == [("net1", "net2")]
    kind = "MultiProcessing" if workers else "SingleProcess"
    loads = [e for e in trace.events if e.name.startswith(LOADER.format(kind))]
    assert len(loads) == 5 and {e.role for e in loads} == {role}  # 4 batches, then the end
    assert all(e.scope == "" for e in loads)
    if workers:  # the wait for the worker processes is said, and left out of the work
        assert "Not counted as work: 5 waiting event(s) (enumerate(DataLoader)#" in str(report)


def kineto(*events: dict) -> dict:
    common = {"ph": "X", "pid": 1, "tid": 1}
    return {"traceEvents": [{**common, **event} for event in events], "schemaVersion": 1}


def test_the_optimizers_and_the_profilers_labels_are_no_scopes():
    trace = from_chrome(
        kineto(
            {"name": "ProfilerStep#3", "cat": "user_annotation", "ts": 0, "dur": 100},
            {"name": "net1", "cat": "user_annotation", "ts": 0, "dur": 40},
            {"name": "aten::mm", "cat": "cpu_op", "ts": 1, "dur": 30},
            {"name": "Optimizer.step#SGD.step", "cat": "user_annotation", "ts": 50, "dur": 40},
            {"name": "aten::add_", "cat": "cpu_op", "ts": 51, "dur": 30},
        )
    )
    assert {e.name: e.scope for e in trace.ops()} == {"aten::mm": "net1", "aten::add_": ""}
    assert "Optimizer.step#SGD.step x1" in " ".join(trace.info.notes)
