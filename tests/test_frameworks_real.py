"""Framework sweeps on PyTorch, TensorFlow and JAX: run where they are installed.

They are large downloads, so CI has none of them and these tests are skipped there with the
reason; they were run once in throwaway environments (benchmarks/RESULTS.md, "Framework
sweeps", says with which versions). Each checks, in real worker processes, that the knobs took
effect (read back from the framework), that the framework's own profiler's trace is loaded
with its producer and explained in its words, and that verify() measures the advice.
"""

from __future__ import annotations

import importlib.util

import pytest

import parallelgraph as pg
import parallelgraph.frameworks
from parallelgraph.frameworks.examples import BUILDS

SHAPE = {"batch": [32], "width": [64]}

CASES = {
    # framework: (module, grid, producer of its traces)
    "pytorch": ("torch", {"inter": [1, 2], "intra": [1, 2]}, "pytorch"),
    "tensorflow": ("tensorflow", {"inter": [1, 2], "intra": [1, 2]}, "tf_profiler"),
    "jax": ("jax", {"devices": [1, 2], "intra": [1]}, "jax"),
}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing(framework: str) -> str | None:
    """Why `framework` cannot be swept here, or None."""
    needed = [CASES[framework][0]] + (["xprof"] if framework == "tensorflow" else [])
    absent = [module for module in needed if not installed(module)]
    if not absent:
        return None
    return (
        f"{' and '.join(absent)} not installed (a large download: run once in a throwaway "
        "environment, see the module docstring)"
    )


def needs(framework: str):
    return pytest.mark.skipif(missing(framework) is not None, reason=str(missing(framework)))


@pytest.fixture(scope="module", params=list(CASES))
def swept(request):
    framework = request.param
    _, grid, _ = CASES[framework]
    if missing(framework):
        pytest.skip(missing(framework))
    result = pg.sweep(
        BUILDS[framework], {**grid, **SHAPE}, framework=framework, repeats=3, trace=True,
        progress=False, noise_check=False,
    )  # fmt: skip
    return framework, result


def test_knobs_are_read_back_as_asked(swept):
    framework, result = swept
    for index, cell in enumerate(result.cells):
        back = result.read_back[index]
        for key in ("inter", "intra", "devices"):
            if key in cell and not (framework == "jax" and key == "intra"):
                assert back[key] == cell[key], (cell, back)
        if framework == "jax":
            assert back["intra"] == 1  # XLA's intra-op threads off
    assert result.complete and len(result.measurements) == 3 * len(result.cells)


def test_traces_come_from_the_frameworks_profiler_and_are_explained(swept):
    framework, result = swept
    trace = result.median_trace(**result.cells[0])
    assert trace.source == CASES[framework][2]
    assert trace.ops()
    report = result.explain()
    assert report.source == trace.source and report.advice is not None


def test_verify_runs_the_advised_setting(swept):
    framework, result = swept
    advice = result.explain().advice
    if advice.knob not in pg.frameworks.framework(framework).advice:  # e.g. "idle_gaps"
        with pytest.raises(ValueError, match=r"is not a .* thread setting"):
            result.verify(repeats=3)
        advice = {"devices": 2} if framework == "jax" else {"inter": 2}
    verification = result.verify(advice, repeats=3)
    changed = {k for k, v in verification.after.items() if verification.before.get(k) != v}
    assert changed and changed <= {"inter", "intra", "devices"}
    for key in changed:
        assert verification.read_back[key] == verification.after[key]
    assert verification.verdict in {"faster", "slower", "within noise"}
    assert "Measured (" in str(verification)


@needs("pytorch")
def test_torch_interop_threads_are_fixed_before_any_parallel_work():
    """set_num_interop_threads fails once parallel work ran: the worker sets it first, so a
    build that runs a forked op still gets the asked-for pool."""

    def build(setting):
        import torch

        torch.jit.wait(torch.jit.fork(torch.add, torch.ones(2), 1))
        return lambda: torch.get_num_interop_threads()

    result = pg.sweep(build, framework="pytorch", inter=[3], repeats=1, progress=False,
                      noise_check=False)  # fmt: skip
    assert result.read_back[0]["inter"] == 3
