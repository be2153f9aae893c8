"""Measured runs, written once: the loop the CLI, the dashboard, sweeps and benchmarks share.

`run_schedule(schedule, on_run, stop)` is the loop. A schedule is any iterable of `Planned`
runs (a key, a session, what to fetch, traced or not); the loop times each run, hands
`(planned, trace, wall_ms)` to `on_run`, and says how it ended (`Ending`). Callers differ only in
the schedule they pass: `measure_interleaved` makes round-robin rounds after the warm-ups, a
sweep makes shuffled rounds, the dashboard adds a progress callback and a Stop button. What was
measured before the end is kept, whatever the ending.

Endings, and how each is reached:

- **done** — every planned run ran.
- **stopped** — `StopSignal.stop()` was called (from any thread: the dashboard's Stop button).
  Between runs the loop sees the request at once. Inside a run it raises `StopRun` in the
  measuring thread, exactly as a Ctrl-C raises KeyboardInterrupt in the main thread: the
  exception lands on the next Python bytecode of that thread, which is between ops (a Numba
  kernel releases the GIL and is never cut short), and the executor aborts the run the way it
  aborts an interrupted one (its pool threads finish their current op, the run is thrown away,
  the session stays usable). So a stop takes as long as the longest op running.
- **interrupted** — a KeyboardInterrupt (Ctrl-C, a notebook's interrupt) arrived in the loop's
  thread. With `keep_interrupted=False` (the CLI) it propagates instead.
- A failure (an OpError, a bad graph) propagates: it is the caller's to show.

Timing: `wall_ms` is `perf_counter_ns` around `Session.run`, trace building included; a trace's
own `makespan_ms` is the time from its first event to its last.

Thread safety: one loop per thread; a `StopSignal` may be stopped from any thread, and serves
one loop at a time.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from ..session import Session
from ..trace.model import Trace
from . import stats

Ending = Literal["done", "stopped", "interrupted"]


class StopRun(BaseException):
    """Raised inside a measuring thread by `StopSignal.stop()` to end a run between ops.

    A BaseException, like KeyboardInterrupt, so that executors treat it as an interruption of
    the run and not as the failure of the op that happened to be running.
    """


class StopSignal:
    """A Stop button for `run_schedule`: `stop()` ends the loop between runs, or the current
    run between ops (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._requested = threading.Event()
        self._lock = threading.Lock()
        self._running_in: int | None = None  # thread id while inside Session.run
        self._sent = False  # a StopRun was sent into that thread

    @property
    def requested(self) -> bool:
        return self._requested.is_set()

    def stop(self) -> None:
        """Ask the loop to stop; returns at once (the loop ends within one op)."""
        with self._lock:
            self._requested.set()
            if self._running_in is not None and not self._sent:
                _raise_in_thread(self._running_in, StopRun)
                self._sent = True

    @contextmanager
    def guarding(self) -> Iterator[None]:
        """The window in which `stop()` may raise StopRun in this thread: one Session.run."""
        me = threading.get_ident()
        with self._lock:
            if self._requested.is_set():
                raise StopRun
            self._running_in, self._sent = me, False
        try:
            yield
        finally:
            self._leave()

    def _leave(self) -> None:
        """Close the window. A StopRun sent a moment ago may still be pending (not yet raised):
        it is raised and swallowed here, where it is expected — the request itself is seen by
        the loop before the next run. (Cancelling it with SetAsyncExc(NULL) instead would leave
        CPython's eval breaker set for good: every later bytecode on the slow path, and a
        profiled call spinning forever.)"""
        while True:
            try:
                with self._lock:
                    self._running_in = None
                    sent, self._sent = self._sent, False
                if sent:
                    _take_pending(StopRun)
                return
            except StopRun:
                continue  # it arrived during the bookkeeping: finish it


def _take_pending(exception: type[BaseException]) -> None:
    """Run a few backward jumps (where CPython delivers asynchronous exceptions) and swallow
    `exception` if it arrives."""
    try:
        for _ in range(16):
            pass
    except exception:
        pass


def _raise_in_thread(thread_id: int, exception: type[BaseException]) -> None:
    """Raise `exception` in another thread at its next bytecode check.

    CPython's PyThreadState_SetAsyncExc, the mechanism behind signal delivery to the main thread
    applied to any thread."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception)
    )


@dataclass(frozen=True)
class Planned:
    """One run of a schedule: `key` says what it is to the caller (a cell, a round)."""

    key: Hashable
    session: Session
    fetch: Any
    traced: bool = True


#: on_run(planned, trace or None for an untraced run, wall_ms)
OnRun = Callable[[Planned, Trace | None, float], None]


def run_schedule(
    schedule: Iterable[Planned],
    on_run: OnRun,
    stop: StopSignal | None = None,
    keep_interrupted: bool = True,
) -> Ending:
    """Run every planned run in order, timing each; see the module docstring for endings."""
    try:
        for planned in schedule:
            if stop is not None and stop.requested:
                return "stopped"
            started = time.perf_counter_ns()
            if stop is None:
                output = planned.session.run(planned.fetch, trace=planned.traced)
            else:
                with stop.guarding():
                    output = planned.session.run(planned.fetch, trace=planned.traced)
            wall_ms = (time.perf_counter_ns() - started) / 1e6
            on_run(planned, output[1] if planned.traced else None, wall_ms)
    except StopRun:
        return "stopped"
    except KeyboardInterrupt:
        if not keep_interrupted:
            raise
        return "interrupted"
    return "stopped" if stop is not None and stop.requested else "done"


def median_trace(traces: Iterable[Trace]) -> Trace:
    """The run nearest the median makespan, the one every place draws and explains: the median
    run of an odd count, the lower of the two middle runs of an even count (the median itself
    lies between them, and no run has it). The CLI, the dashboard, sweeps and the sweep's
    prediction all pick their run here, so they show the same one. A ValueError for no traces.
    """
    ordered = sorted(traces, key=lambda trace: trace.makespan_ms)
    if not ordered:
        raise ValueError("no traces: a median run needs at least one")
    return ordered[(len(ordered) - 1) // 2]


@dataclass(frozen=True)
class Measurement:
    """Every repeat's trace and wall time, the warm-ups' wall times, and how it ended."""

    traces: tuple[Trace, ...]
    wall_ms: tuple[float, ...]
    warmup_ms: tuple[float, ...] = ()
    ending: Ending = "done"

    @property
    def complete(self) -> bool:
        return self.ending == "done"

    @property
    def makespans_ms(self) -> list[float]:
        return [trace.makespan_ms for trace in self.traces]

    @property
    def median_ms(self) -> float:
        return stats.median(self.makespans_ms)

    def quartiles_ms(self) -> tuple[float, float]:
        """The first and third quartiles of the makespans (the middle half of the runs)."""
        return stats.quartiles(self.makespans_ms)

    @property
    def median_wall_ms(self) -> float:
        return stats.median(self.wall_ms)

    def median_trace(self) -> Trace:
        """The run drawn and explained: `median_trace(self.traces)`."""
        return median_trace(self.traces)

    def median_overlap(self, scope_a: str, scope_b: str) -> float:
        return stats.median([t.overlap(scope_a, scope_b) for t in self.traces])


#: progress(runs done, runs planned), warm-ups included
Progress = Callable[[int, int], None]


def measure(session: Session, fetch: Any, repeats: int = 5, warmup: int = 1) -> Measurement:
    """Run `fetch` `warmup` times untimed, then `repeats` times traced."""
    return measure_interleaved({"": session}, fetch, repeats, warmup)[""]


def measure_interleaved(
    sessions: dict[str, Session],
    fetch: Any,
    repeats: int = 5,
    warmup: int = 1,
    *,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    keep_interrupted: bool = False,
) -> dict[str, Measurement]:
    """Measure several sessions round-robin: repeat r of every session runs before repeat
    r + 1 of any, so a machine that slows down or speeds up during the measurement affects
    every session alike instead of biasing whichever ran last.

    `progress` is told after every run; `stop` and `keep_interrupted` (see `run_schedule`) end
    the measurement early, keeping what was measured (a session may then have no trace).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
    warmups = [Planned(name, s, fetch, traced=False) for name, s in sessions.items()] * warmup
    rounds = [Planned(name, s, fetch) for name, s in sessions.items()] * repeats
    traces: dict[Hashable, list[Trace]] = {name: [] for name in sessions}
    walls: dict[Hashable, list[float]] = {name: [] for name in sessions}
    warm: dict[Hashable, list[float]] = {name: [] for name in sessions}
    total, done = len(warmups) + len(rounds), 0

    def keep(planned: Planned, trace: Trace | None, wall_ms: float) -> None:
        nonlocal done
        if trace is None:
            warm[planned.key].append(wall_ms)
        else:
            traces[planned.key].append(trace)
            walls[planned.key].append(wall_ms)
        done += 1
        if progress is not None:
            progress(done, total)

    ending = run_schedule(warmups + rounds, keep, stop, keep_interrupted)
    return {
        name: Measurement(tuple(traces[name]), tuple(walls[name]), tuple(warm[name]), ending)
        for name in sessions
    }
