"""Shared fixtures: a switch that forces sharding, and a thread-leak guard."""

from __future__ import annotations

import os
import shutil
import threading
import time

# Without an NVIDIA GPU, CUDA code paths run in Numba's CUDA simulator. This must be decided
# before anything imports numba.cuda, hence here, at the top of the first conftest.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not (
    shutil.which("nvidia-smi") or os.path.exists("/dev/nvidia0")
):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
# Which ops are worth handing to another worker depends on the hand-off cost measured on the
# machine (parallelgraph.calibration): pinned here, so that tests see the same schedules on
# every machine (tests/test_calibration.py measures it for real). Timing only: results are the
# same either way.
os.environ.setdefault("PARALLELGRAPH_HANDOFF_US", "20")

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


@pytest.fixture
def no_gpu(monkeypatch):
    """Behave as on a machine without a usable GPU (even with the CUDA simulator enabled)."""
    from parallelgraph.executors import cuda

    monkeypatch.setattr(cuda, "gpu_available", lambda: False)


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


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` need real hardware: skip them in the simulator or without a GPU."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU (running under the CUDA simulator)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
