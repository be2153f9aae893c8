"""Shared fixtures: a switch that forces sharding, and a thread-leak guard."""

from __future__ import annotations

import threading
import time

import pytest

from parallelgraph import plan as plan_module


@pytest.fixture
def many_shards(monkeypatch):
    """Make every op with more than one row split into shards, even tiny ones."""
    from parallelgraph.kernels.matmul import ROW_ALIGN
    from parallelgraph.ops.math import MatMul

    monkeypatch.setattr(plan_module, "MIN_SHARD_NS", 1)
    monkeypatch.setattr(MatMul, "min_shard_rows", 1)
    monkeypatch.setattr(MatMul, "row_align", ROW_ALIGN)


def parallelgraph_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("parallelgraph-")]


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Every test must leave no parallelgraph thread running."""
    yield
    deadline = time.monotonic() + 5
    while parallelgraph_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    leaked = parallelgraph_threads()
    assert not leaked, f"threads left running: {[t.name for t in leaked]}"
