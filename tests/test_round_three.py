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
