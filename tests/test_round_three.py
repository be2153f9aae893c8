"""Reliability, round three (issue 22): wrong Dask addresses, stream caps, re-entry, the plan
cache under threads, NaN bits on every path, read-only installs and cyclic traces."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import parallelgraph as pg

ROOT = Path(__file__).resolve().parents[1]

# -- wrong Dask addresses -----------------------------------------------------------------------

WRONG_ADDRESS = textwrap.dedent(
    """
    import http.server, sys, threading, time
    import parallelgraph as pg

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = sys.argv[1].replace("HTTP", f"127.0.0.1:{server.server_port}")
    graph = pg.Graph()
    with graph.as_default():
        pg.constant([1.0, 2.0], name="x")
    start = time.perf_counter()
    try:
        pg.Session(graph, pg.Config(executor="dask", dask_address=address))
    except (ValueError, ConnectionError) as problem:
        print(f"{type(problem).__name__}: {problem}")
    print(f"took {time.perf_counter() - start:.1f}")
    server.shutdown()
    """
)


@pytest.mark.parametrize(
    "address, message",
    [
        ("tcp://HTTP", r"ConnectionError: Config.dask_address 'tcp://127.0.0.1:\d+'"),
        ("tcp://nonsense:::", r"ValueError: Config.dask_address 'tcp://nonsense:::' is not a"),
    ],
    ids=["http-server", "malformed"],
)
def test_a_wrong_dask_address_errors_fast_naming_it_and_the_process_exits(address, message):
    pytest.importorskip("distributed")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRONG_ADDRESS, address],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    import re

    assert re.search(message, done.stdout), done.stdout
    took = float(done.stdout.split("took ")[-1])
    assert took < 10, done.stdout
    assert elapsed < took + 15, f"the process took {elapsed:.1f} s to exit"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr


def test_blank_dask_address_is_refused_by_the_config():
    with pytest.raises(ValueError, match="dask_address must be a scheduler address"):
        pg.Config(executor="dask", dask_address=" ")


# -- streams are capped like thread counts ------------------------------------------------------


def test_streams_are_capped_like_thread_counts():
    from parallelgraph.config import MAX_STREAMS

    assert pg.Config(streams=MAX_STREAMS).streams == MAX_STREAMS
    with pytest.raises(ValueError, match=r"Config.streams must be at most 1024"):
        pg.Config(streams=10**8)


# -- re-entering run ----------------------------------------------------------------------------

REENTRY = textwrap.dedent(
    """
    import signal, sys
    import parallelgraph as pg

    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((384, 384), seed=1)
        y = x
        for _ in range(6):
            y = pg.tanh(pg.matmul(y, x))
    session = pg.Session(graph, pg.Config(inter_op_threads=2, intra_op_threads=1))
    session.run(y)
    seen = {"inside": None, "outside": 0}

    def handler(signum, frame):
        try:
            session.run(x)
            seen["outside"] += 1
        except RuntimeError as problem:
            seen["inside"] = str(problem)

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.003, 0.003)
    for _ in range(400):
        session.run(y)
        if seen["inside"]:
            break
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("inside:", seen["inside"])
    session.run(y)  # the session still works
    session.close()
    """
)


def test_run_reentered_from_a_signal_handler_raises_instead_of_deadlocking():
    done = subprocess.run(
        [sys.executable, "-c", REENTRY], capture_output=True, text=True, timeout=90, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "inside: Session.run was called from inside a run of the same session" in done.stdout


def test_close_from_inside_a_run_raises_and_keeps_the_session():
    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant([1.0, 2.0], name="x")
    session = pg.Session(graph, pg.Config(executor="sequential"))
    session._running = True  # as a handler running inside a run sees it
    with pytest.raises(RuntimeError, match="inside this session's own run"):
        session.close()
    session._running = False
    assert list(session.run(x)) == [1.0, 2.0]
    session.close()


# -- the plan cache from many threads -----------------------------------------------------------


def test_plan_for_from_many_threads_never_raises():
    import threading

    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((8, 8), seed=0)
        outs = [pg.tanh(x) for _ in range(4)]
    session = pg.Session(graph, pg.Config(inter_op_threads=2, intra_op_threads=1))
    session.plan_cache_size = 3  # four keys, three places: hits and evictions all the time
    errors: list[BaseException] = []
    stop = time.perf_counter() + 3.0
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible

    def hammer(seed: int) -> None:
        import random

        chooser = random.Random(seed)
        while time.perf_counter() < stop and not errors:
            try:
                fetch = chooser.choice(outs)
                if chooser.random() < 0.05:
                    session.run(fetch)
                else:
                    session.plan_for(fetch)
            except BaseException as problem:  # noqa: BLE001 - what the test looks for
                errors.append(problem)

    threads = [threading.Thread(target=hammer, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    session.close()
    assert not errors, repr(errors[:3])


# -- NaN bits: every executor and fusion path gives the sequential reference's ------------------


def _nan_graph(dtype):
    """Matmuls whose sums meet inf - inf, biases and tensors full of NaNs with payloads and both
    signs (and a signalling one), through add, multiply, add_n, relu, tanh and reductions."""
    import numpy as np

    rng = np.random.default_rng(0)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    m, k, n = 300, 70, 129
    graph = pg.Graph()
    with graph.as_default():
        a = pg.placeholder((m, k), dtype, name="a")
        w = pg.placeholder((k, n), dtype, name="w")
        b = pg.placeholder((n,), dtype, name="b")
        c = pg.placeholder((m, n), dtype, name="c")
        fetches = [
            pg.relu(pg.add(pg.matmul(a, w), b)),
            pg.tanh(pg.add(b, pg.matmul(a, w))),
            pg.add(pg.matmul(a, w), b),
            pg.add(c, b),
            pg.multiply(b, c),
            pg.add_n([c, pg.relu(c), pg.tanh(c)]),
            pg.reduce_sum(c, axis=0),
        ]

    def nan(pattern: int):
        return np.array([pattern], bits).view(dtype)[0]

    if dtype == np.float32:
        plus, minus, signalling = 0x7FC01234, 0xFFC00077, 0x7F800001
    else:
        plus, minus, signalling = 0x7FF8000000001234, 0xFFF8000000000077, 0x7FF0000000000001
    a_value = rng.standard_normal((m, k)).astype(dtype)
    a_value[rng.random((m, k)) < 0.1] = np.inf
    a_value[rng.random((m, k)) < 0.1] = -np.inf
    b_value = rng.standard_normal(n).astype(dtype)
    b_value[rng.random(n) < 0.4] = nan(plus)
    b_value[rng.random(n) < 0.2] = nan(minus)
    c_value = rng.standard_normal((m, n)).astype(dtype)
    for pattern, share in ((plus, 0.2), (minus, 0.2), (signalling, 0.05)):
        c_value[rng.random((m, n)) < share] = nan(pattern)
    c_value[rng.random((m, n)) < 0.05] = np.inf
    feeds = {a: a_value, w: rng.standard_normal((k, n)).astype(dtype), b: b_value, c: c_value}
    return graph, fetches, feeds, bits


def _bits_of(graph, fetches, feeds, bits, **config):
    with pg.Session(graph, pg.Config(**config)) as session:
        return [value.view(bits) for value in session.run(fetches, feeds)]


NAN_PATHS = {
    "fused-sequential": {"executor": "sequential", "fuse": True},
    "threads": {"inter_op_threads": 2, "intra_op_threads": 2},
    "fused-threads": {"inter_op_threads": 2, "intra_op_threads": 2, "fuse": True},
    "fused-numba-matmul": {
        "inter_op_threads": 2,
        "intra_op_threads": 2,
        "fuse": True,
        "matmul_kernel": "numba",
    },
}


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_nan_bits_are_the_sequential_references_on_every_cpu_path(dtype_name):
    import warnings

    import numpy as np

    dtype = np.dtype(dtype_name).type
    graph, fetches, feeds, bits = _nan_graph(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = _bits_of(graph, fetches, feeds, bits, executor="sequential")
        for name, config in NAN_PATHS.items():
            got = _bits_of(graph, fetches, feeds, bits, **config)
            for index, (want, have) in enumerate(zip(reference, got)):
                differ = np.flatnonzero(want != have)
                assert differ.size == 0, (
                    f"{name}, fetch {index}: {differ.size} values differ, e.g. "
                    f"{hex(want.ravel()[differ[0]])} != {hex(have.ravel()[differ[0]])}"
                )


def test_nan_bits_under_the_dask_executor_are_the_references():
    import warnings

    import numpy as np

    pytest.importorskip("distributed")
    graph, fetches, feeds, bits = _nan_graph(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = _bits_of(graph, fetches, feeds, bits, executor="sequential")
        got = _bits_of(
            graph, fetches, feeds, bits, executor="dask", inter_op_threads=2, intra_op_threads=1
        )
    for index, (want, have) in enumerate(zip(reference, got)):
        assert np.array_equal(want, have), f"fetch {index}: NaN bits differ under Dask"


# -- dependency cycles --------------------------------------------------------------------------


def _cyclic_trace():
    from parallelgraph.trace import Trace, TraceEvent

    def op(name, lane, start, inputs):
        return TraceEvent(name, "x", "", "cpu:0", "op", lane, start, start + 10, inputs=inputs)

    return Trace(
        [
            op("a", "inter-op/0", 0, ("c",)),
            op("b", "inter-op/1", 10, ("a",)),
            op("c", "inter-op/0", 20, ("b",)),
            op("d", "inter-op/1", 30, ("c",)),
        ]
    )


def test_find_cycle_names_the_ops_of_a_cycle_in_dependency_order():
    from parallelgraph.trace.analysis import outermost_inputs
    from parallelgraph.trace.cycles import find_cycle, require_acyclic

    trace = _cyclic_trace()
    for ops in (trace.ops(), outermost_inputs(trace, program_order=True)):
        cycle = find_cycle(ops)
        assert cycle is not None and sorted(cycle) == ["a", "b", "c"]
        # each consumes the one before it, the first the last
        inputs = {e.name: e.inputs for e in trace.ops()}
        assert all(cycle[i - 1] in inputs[cycle[i]] for i in range(len(cycle)))
    assert find_cycle({"x": ["x"]}) == ["x"]
    assert find_cycle({"x": ["y", "not-an-op"], "y": []}) is None
    with pytest.raises(ValueError, match=r"simulate\(\): .* cycle of 3 op\(s\): (\w -> ){3}\w"):
        require_acyclic(trace.ops())


def test_find_cycle_is_linear_and_needs_no_recursion_on_a_long_chain():
    from parallelgraph.trace.cycles import describe_cycle, find_cycle

    n = 200_000
    chain = {f"op{i}": [f"op{i - 1}"] if i else [] for i in range(n)}
    start = time.perf_counter()
    assert find_cycle(chain) is None
    chain["op0"] = [f"op{n - 1}"]
    cycle = find_cycle(chain)
    assert time.perf_counter() - start < 10
    assert cycle is not None and len(cycle) == n
    assert describe_cycle(cycle).count("->") == 9  # 8 names, "...", back to the first


def test_simulate_of_a_cyclic_trace_is_a_clear_error():
    with pytest.raises(ValueError, match=r"cycle of 3 op\(s\)"):
        pg.simulate(_cyclic_trace())


# -- a read-only install --------------------------------------------------------------------------

READ_ONLY_RUN = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("always")
    import numpy as np
    import parallelgraph as pg
    from parallelgraph.kernels import numba_cache

    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant(np.ones((4, 4), np.float32))
        y = pg.tanh(pg.add(pg.matmul(x, x), x))
    with pg.Session(graph, pg.Config(inter_op_threads=2)) as session:
        value = session.run(y)
    print("file", pg.__file__)
    print("mode", numba_cache.state["mode"], numba_cache.state["folder"])
    print("value", float(value[0, 0]))
    """
)


def _read_only_copy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the package that nobody can write into, and an environment whose home has no
    writable cache: for root too, whom permissions do not stop, every `__pycache__` is a file
    and the home is below a file."""
    import os
    import shutil
    import stat

    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "parallelgraph", site / "parallelgraph", ignore=shutil.ignore_patterns("__pycache__")
    )
    for folder, _, _ in os.walk(site / "parallelgraph"):
        (Path(folder) / "__pycache__").write_text("not a folder")
    for path in sorted(site.rglob("*"), reverse=True):
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")},
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(blocker / "home"),
        "XDG_CACHE_HOME": str(blocker / "cache"),
        "TMPDIR": str(temporary),
    }
    return site, environment


def _restore_writable(site: Path) -> None:
    for path in site.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    site.chmod(site.stat().st_mode | 0o200)


@pytest.mark.parametrize("numba_cache_dir", [None, "unwritable"], ids=["user-folder", "uncached"])
def test_a_read_only_install_caches_in_a_user_folder_or_runs_uncached(tmp_path, numba_cache_dir):
    site, environment = _read_only_copy(tmp_path)
    if numba_cache_dir:
        environment["NUMBA_CACHE_DIR"] = str(tmp_path / "home-is-a-file" / "numba")
    try:
        done = subprocess.run(
            [sys.executable, "-c", READ_ONLY_RUN],
            capture_output=True,
            text=True,
            timeout=400,
            cwd=tmp_path,
            env=environment,
        )
    finally:
        _restore_writable(site)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"file {site}" in done.stdout
    assert "no locator available" not in done.stderr
    said = [line for line in done.stderr.splitlines() if "parallelgraph: " in line]
    assert len(said) == 1, done.stderr[-3000:]
    if numba_cache_dir:
        assert "mode uncached" in done.stdout and "run uncached" in said[0]
    else:
        folder = tmp_path / "tmp" / f"parallelgraph-numba-{__import__('os').getuid()}"
        assert f"mode user {folder}" in done.stdout and f"cached in {folder}" in said[0]
        assert any(folder.rglob("*.nbi")), "nothing was cached in the user folder"
