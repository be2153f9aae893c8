"""The pure function behind the dashboard: `run(settings) -> Result`, and the `Runner` that
keeps a graph and a session from one call to the next.

`Runner.run(settings) -> Result` builds the graph, opens a Session, runs it through
`experiments.measure` (the one measured-run loop) and keeps the graph and session for the next
call, rebuilding only what a change requires:

- a parameter or the device changed: a new graph (the build function runs in a fresh `pg.Graph`
  under `pg.device(...)`), hence a new session;
- a knob that is a `Config` setting changed (executor, threads, streams, stream policy): a new
  session on the same graph; the old session is closed (its pools joined) *before* the new one
  starts its own, so a dashboard never holds more than one session's threads;
- repeats, pins or "rerun on change": nothing.

A new session's first traced run comes after an untimed warm-up (compilation, first touch of
memory, plans) unless `warmup=False`; `Result.warmup_s` says how long the warm-up took, which is
the honest answer to "why was my first run slow". Each run is measured under a
`machine_load.LoadMonitor` (`Result.busy_note`).

One run, one set of numbers: `Result.trace` is the repeat the dashboard draws and explains, and
the overlap, utilization and bound are read off that same repeat (see `parallelgraph.widgets`).

Nothing here imports ipywidgets.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..experiments.machine_load import (
    LoadMonitor,
    MachineLoad,
    busy_note,
    dask_client_threads,
    load_note,
)
from ..experiments.measure import Measurement, Planned, Progress, StopSignal, run_schedule
from ..plan_notes import soft_placement_warning
from ..session import Session
from ..trace.model import Trace
from . import viewer
from .settings import Built, Knobs, Settings

#: The most scope pairs the summary's overlap row measures (32 scopes: 496 pairs).
MAX_SCOPE_PAIRS = 496


@dataclass(frozen=True)
class Result:
    """One run: its settings, the graph, every traced repeat, and how the run ended."""

    settings: Settings
    built: Built
    measurement: Measurement
    seconds: float = 0.0  # wall time of the whole run, rebuilds and warm-up included
    rebuilt: str = ""  # "graph", "session" or "" (same session as the previous run)
    load: MachineLoad | None = None  # what else used the CPUs during warm-up and repeats

    def busy_note(self) -> str | None:
        """`machine_load.busy_note` of this run: a sentence when other processes took cores
        the run needed (or a hypervisor its CPU time), None on a quiet machine, over a period
        too short to tell, or without procfs."""
        return busy_note(self.load, viewer.threads_used(self.knobs))

    def load_note(self) -> str | None:
        """`machine_load.load_note` of this run: the busy-machine line, or that the run was too
        short to tell."""
        return load_note(self.load, viewer.threads_used(self.knobs))

    @property
    def params(self) -> dict[str, Any]:
        """The build function's parameters of this run."""
        return self.settings.params_dict

    @property
    def knobs(self) -> Knobs:
        return self.settings.knobs

    @property
    def ending(self) -> str:
        """ "done", "stopped" or "interrupted" (a failed run makes no Result)."""
        return self.measurement.ending

    @property
    def runs(self) -> int:
        """Traced runs measured (fewer than `repeats` if the run was stopped)."""
        return len(self.measurement.traces)

    @property
    def warmup_s(self) -> float:
        return sum(self.measurement.warmup_ms) / 1e3

    @property
    def trace(self) -> Trace:
        """The repeat drawn and explained: the median run for an odd count, the lower of the two
        middle runs for an even one (`drawn_words` says which; see "One run, one set of
        numbers" in the module docstring)."""
        return self.measurement.median_trace()

    @property
    def median_ms(self) -> float:
        return self.measurement.median_ms

    def overlap(self) -> float | None:
        """Overlap of the graph's first two scopes in the median run (None for graphs without
        a pair): the run drawn and explained, so the table and `explain()` never disagree (the
        median of the repeats' overlaps could be 1.0 while the median run's is 0.0)."""
        scopes = self.built.scopes
        return self.trace.overlap(*scopes[:2]) if len(scopes) >= 2 else None

    def pair_overlaps(self) -> list[float]:
        """The overlap of every pair of the graph's scopes in the median run, at most
        `MAX_SCOPE_PAIRS` of them (the first scopes' pairs): many branches said as a group."""
        scopes = self.built.scopes
        pairs = [(a, b) for i, a in enumerate(scopes) for b in scopes[i + 1 :]]
        return [self.trace.overlap(a, b) for a, b in pairs[:MAX_SCOPE_PAIRS]]

    def utilization(self) -> float:
        """Mean busy fraction over the lanes of the median trace."""
        shares = self.trace.utilization()
        return sum(shares.values()) / len(shares) if shares else 0.0

    def bound_ms(self) -> float:
        """max(work / lanes, critical path) of the median trace: no schedule beats it."""
        return self.trace.lower_bound_s() * 1e3

    def size_text(self) -> str:
        """The graph's size: ops and the flops of one run."""
        gflop = sum(e.flops for e in self.trace.ops()) / 1e9
        return f"{self.built.description}, {gflop:.3g} GFLOP per run"

    def notes(self) -> tuple[str, ...]:
        """The plan's notes worth a user's attention (soft placement), read off the trace:
        `plan_notes.soft_placement_warning`, the one warning for moved ops."""
        if not self.runs:
            return ()
        warning = soft_placement_warning(self.trace.info.notes or ())
        return () if warning is None else (warning,)


class Runner:
    """The graph and session of the last settings; rebuilds only what a change requires.

    See the module docstring for the rebuild and pool-closing rules. Not thread-safe: one
    caller at a time.

    >>> with Runner() as runner:                                            # doctest: +SKIP
    ...     first = runner.run(Settings.of(source, {"batch": 8}, Knobs(inter_op_threads=1)))
    """

    def __init__(self, warmup: bool = True) -> None:
        self.warmup = warmup
        #: Told (trace, repeat, repeats, wall_ms) after each traced repeat, outside its timing,
        #: in the caller's thread (the dashboard's live timeline).
        self.on_repeat: Callable[[Trace, int, int, float], None] | None = None
        self.built: Built | None = None
        self.session: Session | None = None
        self._graph_key: tuple[Any, ...] | None = None
        self._session_key: tuple[Any, ...] | None = None
        self._warm = False  # has this session run once?
        self.graph_builds = 0
        self.session_builds = 0

    def prepare(self, settings: Settings) -> str:
        """Make the graph and session match `settings`; say what was rebuilt ("graph",
        "session" or "")."""
        rebuilt = ""
        if settings.graph_key() != self._graph_key:
            self.close()  # the session belongs to the old graph
            self.built = settings.source.make(settings.params_dict, settings.knobs.device)
            self._graph_key = settings.graph_key()
            self.graph_builds += 1
            rebuilt = "graph"
        if settings.session_key() != self._session_key:
            self._close_session()  # join the old pools before starting new ones
            assert self.built is not None
            self.session = Session(self.built.graph, settings.knobs.config())
            self._session_key = settings.session_key()
            self._warm = False
            self.session_builds += 1
            rebuilt = rebuilt or "session"
        return rebuilt

    def run(
        self,
        settings: Settings,
        progress: Progress | None = None,
        stop: StopSignal | None = None,
    ) -> Result:
        """Rebuild what changed, warm a new session up once, then run `repeats` times traced,
        under a `LoadMonitor` (warm-up and repeats: what else used the CPUs meanwhile).

        The loop is `measure.run_schedule`, the one measured-run loop (`measure_interleaved`'s,
        for one session): `progress` and `on_repeat` are told after each run, outside its
        timing. A stop or an interrupt ends the measurement early (`Result.ending`); the runs
        measured so far are kept. Errors propagate.
        """
        start = time.perf_counter()
        rebuilt = self.prepare(settings)
        session, built = self.session, self.built
        assert session is not None and built is not None
        repeats = settings.knobs.repeats
        warmup = 1 if self.warmup and not self._warm else 0
        schedule = [Planned("", session, built.fetch, traced=False)] * warmup
        schedule += [Planned("", session, built.fetch)] * repeats
        traces: list[Trace] = []
        walls: list[float] = []
        warm: list[float] = []
        on_repeat = self.on_repeat

        def keep(planned: Planned, trace: Trace | None, wall_ms: float) -> None:
            if trace is None:
                warm.append(wall_ms)
            else:
                traces.append(trace)
                walls.append(wall_ms)
            if progress is not None:
                progress(len(warm) + len(traces), len(schedule))
            if trace is not None and on_repeat is not None:
                on_repeat(trace, len(traces), repeats, wall_ms)

        # a Dask executor's Client threads (its IO loop runs a LocalCluster's scheduler) work
        # for the runs: not "threads of this process outside parallelgraph"
        dask = getattr(getattr(session, "_executor", None), "client", None) is not None
        with LoadMonitor(
            own_pids=lambda: viewer.worker_pids(session),
            own_threads=dask_client_threads if dask else None,
        ) as monitor:
            ending = run_schedule(schedule, keep, stop, keep_interrupted=True)
        measured = Measurement(tuple(traces), tuple(walls), tuple(warm), ending)
        self._warm = self._warm or bool(measured.warmup_ms or measured.traces)
        seconds = time.perf_counter() - start
        return Result(settings, built, measured, seconds, rebuilt, monitor.load)

    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session, self._session_key = None, None

    def close(self) -> None:
        """Close the session (joining its threads) and forget the graph. Idempotent."""
        self._close_session()
        self.built, self._graph_key = None, None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run(settings: Settings, progress: Progress | None = None) -> Result:
    """Build the graph, run it `repeats` times traced in a fresh session, close it.

    The pure function behind the dashboard: same settings, same kind of result, no widgets.

    >>> from parallelgraph.widgets import GraphSource, preset_graph
    >>> settings = Settings.of(GraphSource(preset_graph), {"batch": 8, "hidden": 16}, Knobs())
    >>> run(settings).trace.scopes()[:2]
    ['net1', 'net2']
    """
    with Runner() as runner:
        return runner.run(settings, progress)


__all__ = ["Result", "Runner", "run"]
