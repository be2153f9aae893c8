"""Framework sweeps on real frameworks: ONNX Runtime (a test extra) and NumPy with threads.

Every test runs real worker processes. What is checked: the knobs take effect in the worker
(read back from the framework, and its OS threads), one process per setting and none left
after any ending, interleaved rounds, failures naming the setting with the worker's traceback,
Stop and Ctrl-C keeping what was measured, bad input refused before a worker starts, traces
loaded and explained, advice verified by measurement.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

import pytest

import parallelgraph as pg
from parallelgraph.experiments.sweeps import SweepResult
from parallelgraph.frameworks import FrameworkError, WorkerLost
from parallelgraph.frameworks import framework as framework_named
from parallelgraph.frameworks.examples import build_numpy, build_onnxruntime
from parallelgraph.frameworks.pool import Worker, Workers
from parallelgraph.frameworks.sweep import framework_sweep
from parallelgraph.frameworks.verify import Verification

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

SMALL = {"batch": [32], "width": [64]}


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def children() -> set[int]:
    """This process's live child processes."""
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(") ", 1)[1].split()
            except (FileNotFoundError, IndexError):
                continue
            if fields[1] == me and fields[0] != "Z":
                found.add(int(entry))
    return found


def no_worker_left(before: set[int], wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not (children() - before):
            return True
        time.sleep(0.05)
    return False


def ort_sweep(**kwargs):
    options = {"repeats": 3, "progress": False, "noise_check": False, **kwargs}
    grid = options.pop("grid", {"inter": [1, 2], "intra": [1, 2], **SMALL})
    return pg.sweep(build_onnxruntime, grid, framework="onnxruntime", **options)


@pytest.fixture(scope="module")
def traced_result():
    before = children()
    # nodes of tens of microseconds or more: threads can pay (tiny ones get "bigger ops")
    grid = {"inter": [1, 2], "intra": [1, 2], "batch": [64], "width": [256]}
    result = ort_sweep(grid=grid, repeats=4, trace=True)
    assert no_worker_left(before)
    return result


def test_knobs_take_effect_in_each_worker(traced_result):
    result = traced_result
    for index, cell in enumerate(result.cells):
        back = result.read_back[index]
        assert (back["inter"], back["intra"]) == (cell["inter"], cell["intra"])
        # ORT_SEQUENTIAL ignores the inter-op pool: "parallel" exactly when inter > 1
        assert back["mode"] == ("parallel" if cell["inter"] > 1 else "sequential")
    threads = {
        (c["inter"], c["intra"]): result.read_back[i]["os_threads"]
        for i, c in enumerate(result.cells)
    }
    # intra_op_num_threads=2 makes a pool with one more thread (the caller is the other)
    assert threads[(1, 2)] == threads[(1, 1)] + 1


def test_one_process_per_setting_interleaved_and_none_left(traced_result):
    result = traced_result
    assert result.complete and result.framework == "onnxruntime"
    rounds = [m.round for m in result.measurements]
    assert rounds == sorted(rounds)  # round r ends before round r + 1 starts
    for r in range(4):
        cells = [m.cell for m in result.measurements if m.round == r]
        assert sorted(cells) == list(range(len(result.cells)))
    assert all(m.makespan_ms > 0 and m.wall_ms >= m.makespan_ms for m in result.measurements)
    assert len(result.rows()) == 4 and str(result).count("onnxruntime") == 0  # knobs, not names


def test_each_setting_ran_in_its_own_process():
    before = children()
    pids = []
    with Workers() as workers:
        for inter in (1, 2):
            worker = workers.start(framework_named("onnxruntime"), {"inter": inter}, f"{inter}")
            pids.append(worker.pid)
        assert len(set(pids)) == 2 and os.getpid() not in pids
        assert all(alive(pid) for pid in pids)
    assert not any(alive(pid) for pid in pids)
    assert no_worker_left(before)


def test_traces_are_the_frameworks_own_and_explained(traced_result):
    trace = traced_result.median_trace(inter=1, intra=1)
    assert trace.source == "onnxruntime"
    names = {e.name for e in trace.ops()}
    assert any(n.startswith("net1/") for n in names) and any(n.startswith("net2/") for n in names)
    report = traced_result.explain(inter=1, intra=1)
    assert report.source == "onnxruntime" and report.advice is not None
    # in ONNX Runtime's words, whichever cause the timings on this machine support
    assert "intra_op_num_threads" in report.suggestion or "make nodes bigger" in report.suggestion


def test_predictions_come_from_the_replay_of_the_baseline_trace(traced_result):
    rows = traced_result.rows()
    assert all(row.predicted_ms is not None and row.predicted_ms > 0 for row in rows)
    assert rows[0].predicted_ms == pytest.approx(rows[0].median_ms)


def test_verify_measures_the_advice_against_the_traced_setting(traced_result):
    before = children()
    advice = traced_result.explain().advice
    if advice.knob not in framework_named("onnxruntime").advice:  # ops too short on this machine
        with pytest.raises(ValueError, match=r"is not a ONNX Runtime thread setting"):
            traced_result.verify(repeats=3)
        advice = {"intra": 2}
    verification = traced_result.verify(advice, repeats=6)
    assert isinstance(verification, Verification)
    assert verification.before["intra"] == 1 and verification.after["intra"] == 2
    assert verification.read_back["intra"] == 2
    assert len(verification.before_ms) == len(verification.after_ms) == 6
    assert verification.verdict in {"faster", "slower", "within noise"}
    assert verification.predicted_speedup is not None
    text = str(verification)
    assert "intra 1 -> 2" in text and "speed-up" in text and "replay" in text
    assert no_worker_left(before)


def test_verify_a_given_setting_without_a_trace():
    result = ort_sweep(grid={"intra": [1], **SMALL}, repeats=2)
    verification = result.verify({"intra": 2}, repeats=2)
    assert verification.after["intra"] == 2 and verification.advice.startswith("the setting")
    with pytest.raises(ValueError, match="trace=True"):
        result.verify()
    with pytest.raises(ValueError, match="not knobs"):
        result.verify({"threads": 4})


def test_verify_refuses_advice_that_is_not_a_thread_setting(traced_result):
    from parallelgraph.explain.evidence import Advice

    with pytest.raises(ValueError, match="is not a ONNX Runtime thread setting"):
        traced_result.verify(Advice("make nodes bigger", "bigger_ops"))


def test_a_failing_build_names_the_setting_with_its_traceback():
    def build(setting):
        if setting.intra == 2:
            raise RuntimeError("no model for two threads")
        return lambda: None

    before = children()
    with pytest.raises(FrameworkError) as caught:
        pg.sweep(build, framework="onnxruntime", intra=[1, 2], progress=False, repeats=2)
    message = str(caught.value)
    assert "ONNX Runtime intra=2" in message and "building" in message
    assert "no model for two threads" in message and "in build" in caught.value.remote_traceback
    assert no_worker_left(before)


def test_a_failing_step_names_the_setting():
    def build(setting):
        calls = []

        def step():
            calls.append(1)
            if setting.inter == 2 and len(calls) > 3:
                raise ValueError("step 4 broke")

        return step

    before = children()
    with pytest.raises(FrameworkError, match=r"NumPy inter=2: a timed step failed .*step 4 broke"):
        pg.sweep(build, framework="numpy", inter=[1, 2], progress=False, repeats=5)
    assert no_worker_left(before)


def test_a_worker_that_dies_is_reported_and_the_rest_ended():
    def build(setting):
        def step():
            if setting.inter == 2:
                os._exit(9)

        return step

    before = children()
    with pytest.raises(
        WorkerLost, match=r"NumPy inter=2: the worker process ended .*exit status 9"
    ):
        pg.sweep(build, framework="numpy", inter=[1, 2], progress=False, repeats=2, warmup=0)
    assert no_worker_left(before)


def test_stop_keeps_what_was_measured_and_ends_every_worker():
    before = children()
    asked = itertools.count()  # the sweep asks before each measurement (and while it waits)
    result = framework_sweep(
        build_slow, "numpy", {"inter": [1, 2]}, repeats=50, progress=False, noise_check=False,
        stopped=lambda: next(asked) >= 4,
    )  # fmt: skip
    assert not result.complete and 0 < len(result.measurements) < 100
    assert no_worker_left(before)


def build_slow(setting):
    def step():
        time.sleep(0.05)

    return step


def test_ctrl_c_keeps_what_was_measured_and_ends_every_worker():
    """A real interrupt of the main thread (what Ctrl-C and a notebook's interrupt raise),
    sent once measuring has begun: the sweep returns what it measured, marked incomplete."""
    import _thread

    before = children()
    asked = itertools.count()

    def interrupt_on_the_sixth_ask() -> bool:
        if next(asked) == 5:
            _thread.interrupt_main()
        return False

    result = framework_sweep(
        build_slow, "numpy", {"inter": [1, 2]}, repeats=200, progress=False, noise_check=False,
        stopped=interrupt_on_the_sixth_ask,
    )  # fmt: skip
    assert not result.complete and 0 < len(result.measurements) < 400
    assert no_worker_left(before)


def test_a_stop_inside_a_long_step_does_not_wait_for_it():
    def build(setting):
        return lambda: time.sleep(30)

    before = children()
    started = time.monotonic()
    flag = threading.Event()
    threading.Timer(0.5, flag.set).start()
    result = framework_sweep(
        build, "numpy", {"inter": [1]}, repeats=3, warmup=0, progress=False, noise_check=False,
        stopped=flag.is_set,
    )  # fmt: skip
    assert not result.complete and not result.measurements
    assert time.monotonic() - started < 10
    assert no_worker_left(before)


@pytest.mark.parametrize(
    ("grid", "framework", "match"),
    [
        ({"inter": [0]}, "onnxruntime", r"ONNX Runtime inter=0: inter=0 must be a whole number"),
        ({"intra": [1.5]}, "pytorch", r"PyTorch intra=1.5: intra=1.5"),
        ({"mode": ["fast"]}, "onnxruntime", r"mode='fast', one of \['sequential', 'parallel'\]"),
        ({"cores": [4096]}, "numpy", r"cores=4096 but this machine"),
        ({"inter": [2]}, "jax", r"JAX has no inter-op thread setting: sweep devices"),
        ({"intra": [4]}, "jax", r"intra=1 \(off\) or leave it out"),
        ({"inter": [1]}, "caffe", r"framework='caffe': one of"),
        ({"inter": [1] * 40}, "numpy", r"more than 32"),
        (
            {"inter_op_parallelism_threads": [1, 2]},
            "tensorflow",
            r"'inter_op_parallelism_threads' is TensorFlow's knob 'inter' under another name",
        ),
    ],
)
def test_bad_settings_are_refused_before_any_worker_starts(grid, framework, match):
    before = children()
    with pytest.raises(ValueError, match=match):
        pg.sweep(build_numpy, grid, framework=framework, progress=False)
    assert children() == before


def test_a_build_that_cannot_travel_is_refused_before_any_worker_starts():
    lock = threading.Lock()

    def build(setting):
        return lambda: lock.acquire(blocking=False)

    with pytest.raises(TypeError, match=r"build function .*build cannot be sent to a worker"):
        pg.sweep(build, framework="numpy", inter=[1], progress=False)
    with pytest.raises(TypeError, match="build\\(setting\\) -> step, a function"):
        pg.sweep("two-networks", framework="numpy", inter=[1], progress=False)


def test_build_must_return_a_step():
    with pytest.raises(FrameworkError, match="must return the step to time"):
        pg.sweep(lambda setting: 42, framework="numpy", inter=[1], progress=False)


def test_numpy_threads_knobs_take_effect():
    result = pg.sweep(
        build_numpy, framework="numpy", inter=[1, 2], intra=[1], batch=[16], width=[32],
        repeats=2, progress=False, noise_check=False,
    )  # fmt: skip
    for index, cell in enumerate(result.cells):
        back = result.read_back[index]
        assert back["inter"] == cell["inter"] and back["intra"] == 1
    assert result.read_back[1]["os_threads"] > result.read_back[0]["os_threads"]


def test_a_function_defined_in_a_notebook_cell_travels_by_value():
    namespace = {"__name__": "__main__"}
    exec(
        "def build(setting):\n    offset = setting.width * 2\n    return lambda: offset + 1\n",
        namespace,
    )
    result = pg.sweep(
        namespace["build"], framework="numpy", width=[3], repeats=2, progress=False,
        noise_check=False,
    )  # fmt: skip
    assert result.complete and len(result.measurements) == 2


def test_cores_pins_the_worker():
    result = pg.sweep(
        build_numpy, framework="numpy", cores=[1], batch=[8], width=[8], repeats=1,
        progress=False, noise_check=False,
    )  # fmt: skip
    assert result.read_back[0]["cores"] == 1


def test_results_round_trip_through_json(traced_result, tmp_path):
    loaded = SweepResult.load(traced_result.to_json(tmp_path / "r.json"))
    assert loaded.framework == "onnxruntime"
    assert loaded.read_back[3]["intra"] == 2
    assert [r.median_ms for r in loaded.rows()] == [r.median_ms for r in traced_result.rows()]
    with pytest.raises(ValueError, match="needs the sweep that made this result"):
        loaded.verify({"intra": 2})


def test_a_worker_ends_when_its_parent_is_killed(tmp_path):
    """No process is left behind even when the parent dies without cleaning up."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from parallelgraph.frameworks.pool import Worker\n"
        "from parallelgraph.frameworks import framework\n"
        "w = Worker(framework('numpy'), {}, 'w')\n"
        "print(w.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        assert alive(pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid)
    finally:
        parent.kill()


def test_worker_close_is_idempotent():
    worker = Worker(framework_named("numpy"), {}, "w")
    worker.close()
    worker.close()
    assert not worker.alive


def test_a_busy_machine_is_said_out_loud():
    """Another process spinning on a core while the rounds run: the result says so, with the
    numbers; the workers' own CPU time is not counted as the neighbour's."""
    from helpers import neighbour

    with neighbour():
        result = pg.sweep(
            build_slow, framework="numpy", inter=[1, 2], repeats=4, progress=False,
            noise_check=False,
        )  # fmt: skip
    assert result.machine is not None and result.machine.other_cores >= 0.5
    text = str(result)
    assert "Busy machine: other processes used" in text and "not reliable" in text
    assert "Busy machine" in result._repr_html_()


def test_a_notebook_cells_function_brings_its_source():
    """torch.jit.script reads the source of what it compiles: a function defined in a notebook
    cell (its "file" exists only in the kernel's linecache) must find its source in the worker."""
    import linecache

    cell = "<ipython-input-7-cell>"
    source = (
        "def build(setting):\n"
        "    import inspect\n"
        "    def branch(x):\n"
        "        return x + 1\n"
        "    text = inspect.getsource(branch)\n"
        "    assert text.startswith('    def branch(x):'), text\n"
        "    return lambda: branch(1)\n"
    )
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    namespace = {"__name__": "__main__"}
    exec(compile(source, cell, "exec"), namespace)
    result = pg.sweep(
        namespace["build"], framework="numpy", inter=[1], repeats=1, progress=False,
        noise_check=False,
    )  # fmt: skip
    assert result.complete


@pytest.mark.parametrize(
    ("name", "kind", "before", "after"),
    [
        ("pytorch", "inter_op", {"inter": 1, "intra": 1}, {"inter": 2, "intra": 1}),
        ("pytorch", "critical_path", {"inter": 1, "intra": 1}, {"inter": 1, "intra": 2}),
        ("tensorflow", "intra_op", {"inter": 2, "intra": 2}, {"inter": 2, "intra": 2}),
        # ONNX Runtime's inter-op advice is in intra-op words: its CPU nodes run one at a time
        ("onnxruntime", "inter_op", {"inter": 1, "intra": 1}, {"inter": 1, "intra": 2}),
        ("jax", "inter_op", {"devices": 1}, {"devices": 2}),
    ],
)
def test_advice_kinds_become_settings_in_the_frameworks_terms(name, kind, before, after):
    # on 2 cores: twice the threads, at least 2, at most the cores
    assert framework_named(name).advice[kind](before, 2) == after


def build_by_inter(setting):
    """A step whose time the setting decides: 24 ms with one inter-op thread, 12 with two."""
    pause = 0.024 / setting.inter

    def step():
        time.sleep(pause)

    return step


def test_verdicts_match_an_independent_measurement_of_the_same_settings():
    """The sweep's numbers belong to the right settings: against the same steps timed here in
    a bare loop, each cell's median is within 20% and the speed-up's CI holds the bare
    loop's ratio (about 2)."""
    result = pg.sweep(
        build_by_inter, framework="numpy", inter=[1, 2], repeats=6, progress=False,
        noise_check=False,
    )  # fmt: skip
    rows = {row.params["inter"]: row for row in result.rows()}

    class Fake(dict):
        __getattr__ = dict.get

    bare = {}
    for inter in (1, 2):
        step = build_by_inter(Fake(inter=inter))
        times = []
        for _ in range(6):
            began = time.perf_counter()
            step()
            times.append((time.perf_counter() - began) * 1e3)
        bare[inter] = sorted(times)[3]
        assert rows[inter].median_ms == pytest.approx(bare[inter], rel=0.2)
    assert rows[2].verdict == "faster"
    low, high = rows[2].speedup_ci
    assert low <= bare[1] / bare[2] * 1.1 and bare[1] / bare[2] * 0.9 <= high


def test_a_step_that_cannot_be_traced_keeps_the_measurements_with_a_note():
    import importlib.util

    if importlib.util.find_spec("viztracer") is not None:
        pytest.skip("viztracer is installed: NumPy's steps can be traced here")
    result = pg.sweep(
        build_slow, framework="numpy", inter=[1], repeats=2, trace=True, progress=False,
        noise_check=False,
    )  # fmt: skip
    assert len(result.measurements) == 2 and not result.traces
    assert "not traced: NumPy inter=1: RuntimeError: NumPy has no profiler" in str(result)
