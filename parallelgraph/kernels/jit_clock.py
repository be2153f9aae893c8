"""How long Numba's compiler held a run up: kernels compiled, or loaded from Numba's cache.

A Numba kernel is compiled on its first call with new argument types, or, when `cache=True`
found machine code on disk, loaded from there. Either happens inside the op that calls it
first, so a first run shows that op many times slower than it is. Two costs hide there:

- **Numba's own start**, once per process: the first kernel call (a load or a compile) sets
  up Numba's CPU target (its typing and lowering registries, and the modules they import,
  SciPy's BLAS among them when SciPy is installed): about half a second on a small VM.
  `start_numba()` pays it on purpose; every Session calls it when it is created, so that a
  session's first run measures the graph, not Numba's start. It returns how long it took
  (0.0 once done; `Session.numba_start_s`).
- **Each kernel**, once per process and argument types: ~5-10 ms to load from the cache,
  seconds to compile on a machine that never ran it (or after an upgrade).

Numba announces both through its event API (`numba.core.event`): "numba:compiler_lock" spans
every load and every compile (and a wait for another thread's), "numba:compile" only real
compilations (cache misses). `CLOCK`, one listener registered on first use, keeps the outermost
span of each thread; `CLOCK.during(start_ns, end_ns)` says how much of a run's window Numba's
compiler was busy (the union of spans, so two threads waiting on one compile count once) and
how many kernels it compiled. Sessions put that in each run's trace metadata ("jit") and
`explain()` says it, instead of guessing from the run number.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..trace.intervals import length, merge

clock = time.perf_counter_ns

#: The kinds of Numba events the clock listens to.
BUSY, COMPILE = "numba:compiler_lock", "numba:compile"

#: Spans kept (per kind): enough for any run's window; the oldest go first.
KEPT_SPANS = 4096


@dataclass(frozen=True)
class JitActivity:
    """Numba's compiler within a window of time (a run)."""

    busy_ns: int  # wall time with Numba's compiler busy (loading, compiling or waiting)
    compiled: int  # kernels compiled (cache misses), counted where their compile began
    compile_ns: int  # wall time of those compilations

    def as_dict(self) -> dict[str, float | int]:
        return {
            "busy_s": self.busy_ns / 1e9,
            "compiled": self.compiled,
            "compile_s": self.compile_ns / 1e9,
        }


class JitClock:
    """Outermost spans of Numba's compile and compiler-lock events, per thread (see above)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[str, deque[tuple[int, int]]] = {
            kind: deque(maxlen=KEPT_SPANS) for kind in (BUSY, COMPILE)
        }
        self._open = threading.local()  # per thread: {kind: (depth, start_ns)}
        self._installed = False

    def install(self) -> None:
        """Register with Numba's event API (once; imports Numba)."""
        with self._lock:
            if self._installed:
                return
            from numba.core import event

            listener = _listener(self)
            for kind in (BUSY, COMPILE):
                event.register(kind, listener)
            self._installed = True

    def started(self, kind: str) -> None:
        depths = self._depths()
        depth, start = depths.get(kind, (0, 0))
        depths[kind] = (depth + 1, clock() if depth == 0 else start)

    def ended(self, kind: str) -> None:
        depths = self._depths()
        depth, start = depths.get(kind, (0, 0))
        if depth <= 1:
            depths.pop(kind, None)
            if depth == 1:
                with self._lock:
                    self._spans[kind].append((start, clock()))
        else:
            depths[kind] = (depth - 1, start)

    def during(self, start_ns: int, end_ns: int) -> JitActivity:
        """What Numba's compiler did between two `time.perf_counter_ns()` readings."""
        with self._lock:
            busy = [_clip(span, start_ns, end_ns) for span in self._spans[BUSY]]
            compiles = [span for span in self._spans[COMPILE] if start_ns <= span[0] < end_ns]
        busy_ns = length(merge(span for span in busy if span[1] > span[0]))
        compile_ns = length(merge((start, min(end, end_ns)) for start, end in compiles))
        return JitActivity(busy_ns, len(compiles), compile_ns)

    def _depths(self) -> dict[str, tuple[int, int]]:
        depths = getattr(self._open, "depths", None)
        if depths is None:
            depths = self._open.depths = {}
        return depths


def _clip(span: tuple[int, int], start_ns: int, end_ns: int) -> tuple[int, int]:
    return max(span[0], start_ns), min(span[1], end_ns)


def _listener(jit_clock: JitClock) -> Any:
    """A Numba event Listener that reports to `jit_clock` (Numba is imported only here)."""
    from numba.core.event import Listener

    class ClockListener(Listener):
        def on_start(self, event: Any) -> None:
            jit_clock.started(event.kind)

        def on_end(self, event: Any) -> None:
            jit_clock.ended(event.kind)

    return ClockListener()


CLOCK = JitClock()

_start_lock = threading.Lock()
_started = False


def start_numba() -> float:
    """Pay Numba's once-per-process start now (see the module docstring); seconds it took,
    0.0 when it was already done. Thread-safe; installs `CLOCK` first."""
    global _started
    if _started:
        return 0.0
    with _start_lock:
        if _started:
            return 0.0
        begin = time.perf_counter()
        CLOCK.install()
        import numpy as np

        from ..ops.broadcast import NO_MAP
        from . import elementwise

        one = np.ones((1, 1), np.float32)
        elementwise.add_rows(one, NO_MAP, one, NO_MAP, np.empty_like(one), 0, 1)
        _started = True
        return time.perf_counter() - begin
