"""Numba's compiler, timed from its own events (`kernels.jit_clock`): what a run's trace
says about kernels compiled or loaded, and a session's first run without Numba's start in it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np
from numba import njit

from parallelgraph.kernels.jit_clock import CLOCK, start_numba

clock = time.perf_counter_ns


def test_a_compile_in_the_window_is_counted_and_timed():
    start_numba()

    @njit(cache=False)
    def fresh(x):  # a new function: a real compile, nothing cached
        return x * 2.0 + 1.0

    before = clock()
    fresh(np.ones(3))
    after = clock()
    activity = CLOCK.during(before, after)
    assert activity.compiled == 1  # nested compiles of callees count once
    assert 0 < activity.compile_ns <= activity.busy_ns <= after - before
    assert CLOCK.during(after, clock()).busy_ns == 0
    assert CLOCK.during(before - 10**9, before).compiled == 0


def test_two_threads_compiling_at_once_count_the_window_once():
    start_numba()

    def compile_one(scale):
        @njit(cache=False)
        def fresh(x):
            return x * scale

        fresh(np.ones(2))

    before = clock()
    threads = [threading.Thread(target=compile_one, args=(k,)) for k in (2.0, 3.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = clock()
    activity = CLOCK.during(before, after)
    assert activity.compiled == 2
    assert activity.busy_ns <= after - before  # a union, not a sum over threads


def test_start_numba_is_paid_once():
    start_numba()
    assert start_numba() == 0.0


FRESH_PROCESS = """
import json, time
import parallelgraph as pg
preset = pg.presets.two_networks("small")
session = pg.Session(preset.graph, pg.Config(inter_op_threads=2))
start = time.perf_counter(); _, first = session.run(preset.fetch, trace=True)
first_s = time.perf_counter() - start
steady = []
for _ in range(5):
    start = time.perf_counter()
    session.run(preset.fetch)
    steady.append(time.perf_counter() - start)
print(json.dumps({"start_s": session.numba_start_s, "first_s": first_s,
                  "steady_s": sorted(steady)[2], "jit": first.metadata["jit"]}))
"""


def test_a_fresh_process_pays_numbas_start_in_the_session_not_in_the_first_run():
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["start_s"] > 0  # this process's first session started Numba
    # The first run still loads its own kernels from the cache (ms each), but not Numba's start
    # (~0.5 s); the bound leaves room for a loaded VM.
    assert facts["first_s"] < facts["steady_s"] + 0.4, facts
    assert facts["jit"]["busy_s"] < 0.4, facts
