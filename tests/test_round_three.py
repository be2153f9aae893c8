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
