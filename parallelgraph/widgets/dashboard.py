"""An ipywidgets dashboard for your own graph: controls, runs you can stop, the timeline and why.

    def build(batch=64, hidden=512, dtype="float32"):      # builds into a fresh pg.Graph
        with pg.scope("net1"): ...
        return out                                         # what to fetch

    dash = pg.dashboard(build, batch=(8, 2048), hidden=[256, 512, 1024], dtype=["float32"])
    dash                      # the last expression of a cell shows it; press Run
    dash.run(); dash.wait()   # the same from code (tests, scripts)

The design is ipywidgets' `interact_manual` pattern, in three layers:

1. **Controls.** The parameters of `build` become widgets by the abbreviations `interact` uses
   (its own `widget_from_abbrev`: a (min, max) tuple is a slider, a list a dropdown, a bool a
   checkbox, a widget itself; the signature's default is the starting value). The run knobs
   (device, executor, inter-op and intra-op threads, CUDA streams and policy, repeats) are
   always there. `dash.controls[name]` is the widget of a parameter or knob. `pg.dashboard(graph,
   fetches)` takes a graph already built (knobs only). The built-in graphs are one more build
   function, `preset_graph(preset, batch, hidden, dtype)`: `pg.dashboard(preset="wide")`.
2. **A pure function of the settings.** `Settings` (the graph source, its parameters, the
   `Knobs`) is a frozen value; `Runner.run(settings) -> Result` builds the graph, opens a
   Session, runs it through `experiments.measure` (the one measured-run loop) and keeps the
   graph and session for the next call, rebuilding only what a change requires:
   - a parameter or the device changed: a new graph (the build function runs in a fresh
     `pg.Graph` under `pg.device(...)`), hence a new session;
   - executor, threads, streams or stream policy changed: a new session on the same graph; the
     old session is closed (its pools joined) *before* the new one starts its own, so a dashboard
     never holds more than one session's threads;
   - repeats, pins or "rerun on change": nothing.
   A new session's first traced run comes after an untimed warm-up (compilation, first touch of
   memory, plans) unless `warmup=False`; the status says how long the warm-up took, which is the
   honest answer to "why was my first run slow". Nothing in this layer imports ipywidgets.
3. **An output area.** A status line (`dash.status`: what ran, how it ended), a progress bar,
   a message line (errors with their traceback folded, stops, soft placement, what Pin did),
   the timeline, the summary table and `explain()`. While a run goes, what is still on screen
   is the previous run's: a grey note says so and its table and explanation are greyed; the
   message line is cleared when a run starts.

One run, one set of numbers. The timeline draws one repeat, `Result.trace`, and `explain()`,
the overlap, utilization and bound in the table are read off that same repeat. The median of an
odd count of repeats is the makespan of such a repeat, and that repeat is the one drawn. The
median of an even count lies between the two middle repeats; the dashboard draws the lower one
and, wherever it gives the median (status, table, timeline title, the line above `explain()`),
gives the drawn run's makespan beside it, and wherever it gives that makespan, the median:
"median 1090.37 ms of 4 runs; drawn: the lower middle run, makespan 1019.36 ms". Speed-ups are
ratios of medians with their uncertainty, by the package's one rule (`stats.speedup_text`:
"×0.97 (95% CI 0.81-1.12, within noise)", or "×0.65 (one run: not a conclusion)" when the pin
or the current run has a single run), in the status, the table and on the timeline alike: the
bootstrap is seeded, so the same runs give the same words in all three.

Runs in the background. `dash.run()` (the Run button) starts a run in a thread and returns: the
kernel stays free, so the **Stop** button works (`dash.stop()`); a change made during a run is
run after it. `dash.wait(timeout)` blocks until the run ends; a kernel interrupt (Ctrl-C,
Kernel ▸ Interrupt) arriving while a cell waits (a *foreground* run) stops the run, waits for it
to end, and is raised again, so the cell fails and a Run All stops there. A kernel interrupt
while a run goes with the kernel idle (after the Run button) stops the run too: SIGINT reaches
only the main thread, and ipykernel ignores it between messages, so while a background run
started on the main thread goes, a relay (`parallelgraph.interrupts`) wraps the SIGINT handlers and
passes the interrupt to the run. While *another* cell runs, an interrupt interrupts that cell
(ipykernel installs Python's own handler for each message); Stop ends the run. Stop ends a run
between ops (`measure.StopSignal`: as fast as the longest op) and keeps the traced runs
measured so far. Every ending — done, stopped, interrupted, failed — leaves a true status line,
a message, the Run and Pin buttons enabled and Stop disabled; a failure keeps the previous
timeline and says so. The progress counts traced runs ("running 3/50 runs"), not the warm-up.

Results remember what they ran: the build function and its parameters, the graph's size, the
knobs. **Pin** keeps the current result (up to `MAX_PINNED`, oldest dropped) and says so in the
message line, with its number and median; the table shows a column per pinned run, and a
speed-up only against pins of the same graph and parameters — a pin of another graph says so
and shows its own absolute time. The status gives the speed-up against the latest such pin.
The timeline draws the pins of the same graph above the current run, on one time axis.

The timeline is interactive where the front end allows it: under a Jupyter kernel with ipympl
installed, the figure gets an ipympl canvas (pan, zoom, and the hover tooltip `plot.gantt`
attaches); elsewhere (scripts, tests, no ipympl) it is a PNG in one `Image` widget whose bytes
are replaced, so the page never jumps. `timeline="png"` or `"interactive"` chooses explicitly.

Reruns. Sliders have `continuous_update=False` (a drag sends one change). Changes rerun by
themselves only after the first run and while "rerun on change" is ticked; a change that leaves
the settings equal to the last run's does not rerun. Progress updates at most four times a
second (each makes the browser redraw, which competes with the measurement on 2 cores).

The viewer (`parallelgraph.widgets.viewer` has the rules): a **search** box highlights the ops
whose names match its fnmatch patterns (comma-separated) in the timeline and says how many
matched, redrawing without rerunning; a **top-ops** table (`trace.top_ops()`, first 10 rows) of
the run drawn; **Save trace** writes the run drawn with its memory track to a file in the
current directory, named after the settings and the time, for Perfetto or chrome://tracing; a
**live timeline** redraws the latest repeat of a long run between repeats ("running: repeat k
of n"), paced so that drawing takes a small share of the run (`LivePacer`); and each run is
measured under a `LoadMonitor`, whose `busy_note` the message line gives, and the status
mentions, when other processes took the cores the run needed.

Thread safety. Handlers run on the kernel's main thread; a run's work and its widget updates run
in the run's thread, one run at a time (a `threading.Lock` guards the busy/pending state).
`stop()` may be called from any thread. Drive the other methods from one thread.
"""

from __future__ import annotations

import html
import inspect
import io
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from ..config import EXECUTORS, STREAM_POLICIES, Config
from ..dtypes import FLOAT_DTYPES
from ..experiments import stats
from ..experiments.machine_load import LoadMonitor, MachineLoad, busy_note
from ..experiments.measure import Measurement, Planned, Progress, StopSignal, run_schedule
from ..experiments.presets import PRESETS, Preset, build_preset
from ..graph import Graph, Tensor
from ..interrupts import RELAY, end_listener
from ..session import Session
from ..trace.model import Trace
from . import viewer

BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
HIDDENS = (16, 32, 64, 128, 256, 512, 1024, 2048)
DEVICES = ("cpu", "gpu:0")
MAX_THREADS = 8
MAX_STREAMS = 8
MAX_REPEATS = 50
MAX_PINNED = 4
PNG_DPI = 100
#: The interactive canvas has a fixed size in pixels (a PNG scales down with the panel, a
#: canvas does not): draw it at a resolution that fits a notebook cell of JupyterLab.
CANVAS_WIDTH_PX = 840
#: Room to the right of the canvas for ipympl's toolbar, which floats over the figure's right
#: edge (where the legend is) unless the widget leaves it a margin of its own.
TOOLBAR_ROOM = "0 44px 0 0"
PROGRESS_EVERY_S = 0.25
WAIT_SLICE_S = 0.05  # dash.wait() looks for a pending interrupt this often

#: How the dashboard's last run ended ("not run" before the first).
Ending = Literal["not run", "done", "stopped", "interrupted", "failed"]


# -- the knobs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Knobs:
    """The run knobs: where and how the graph runs, and how often.

    >>> Knobs(inter_op_threads=1).config().inter_op_threads
    1
    """

    device: str = "cpu"
    executor: str = "threads"
    inter_op_threads: int = 2
    intra_op_threads: int = 1
    streams: int = 1
    stream_policy: str = "branches"
    repeats: int = 5

    def __post_init__(self) -> None:
        choices = {"device": DEVICES, "executor": EXECUTORS, "stream_policy": STREAM_POLICIES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise ValueError(f"repeats must be an int >= 1, got {self.repeats!r}")
        self.config()  # Config checks the thread and stream counts

    def config(self) -> Config:
        return Config(
            executor=self.executor,
            inter_op_threads=self.inter_op_threads,
            intra_op_threads=self.intra_op_threads,
            streams=self.streams,
            stream_policy=self.stream_policy,
        )

    def label(self) -> str:
        """The thread (and stream) settings in a few words."""
        if self.executor == "sequential":
            return "one thread (reference)"
        text = f"inter {self.inter_op_threads}, intra {self.intra_op_threads}"
        if self.device != "cpu":
            text += f", {self.streams} stream(s) {self.stream_policy}"
        return text


KNOB_NAMES = tuple(f.name for f in fields(Knobs))


# -- the graph ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    """A built graph: what to fetch, its top-level scopes (the first two are compared for
    overlap; none for graphs without independent parts) and its size in words."""

    graph: Graph
    fetch: Any
    scopes: tuple[str, ...]
    description: str


class GraphSource:
    """What makes the graph: a build function (called with the parameters in a fresh
    `pg.Graph` under `pg.device(...)`) or a graph already built with its fetches.

    Two sources are the same graph only if they are the same function or the same Graph object:
    a result is compared with a pinned one only then (and with equal parameters).
    """

    def __init__(
        self,
        build: Callable[..., Any] | None = None,
        graph: Graph | None = None,
        fetches: Any = None,
    ):
        if (build is None) == (graph is None):
            raise TypeError("give a build function or a built graph, not both")
        self.build, self.graph, self.fetches = build, graph, fetches
        self.name = getattr(build, "__name__", "build") if build else f"graph {graph.name!r}"

    def _identity(self) -> object:
        return self.build if self.build is not None else self.graph

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GraphSource) and self._identity() is other._identity()

    def __hash__(self) -> int:
        return id(self._identity())

    def __repr__(self) -> str:
        return f"<GraphSource {self.name}>"

    def make(self, params: Mapping[str, Any], device: str) -> Built:
        """Build (or take) the graph for `params`, its ops placed on `device`."""
        from ..graph import device as device_scope

        if self.graph is not None:
            return _built(self.graph, self.fetches)
        with Graph(self.name).as_default(), device_scope(None if device == "cpu" else device):
            output = self.build(**params)
        if isinstance(output, Preset):  # it built its own graph
            return Built(output.graph, output.fetch, output.scopes, output.description)
        return _built(None, output)  # into the fresh graph, or one of its own


def _built(graph: Graph | None, fetches: Any) -> Built:
    """A Built for `fetches`: tensors of one graph (of `graph`, when given)."""
    tensors = _tensors(fetches)
    if not tensors:
        raise TypeError(
            f"nothing to fetch in {fetches!r}: a build function returns what to fetch (a Tensor, "
            "or a list, tuple or dict of them)"
        )
    graphs = {id(t.graph): t.graph for t in tensors}
    if len(graphs) > 1 or (graph is not None and id(graph) not in graphs):
        raise ValueError("the fetches must be tensors of the one graph the dashboard runs")
    graph = tensors[0].graph
    scopes = tuple(dict.fromkeys(op.scope.split("/", 1)[0] for op in graph.ops if op.scope))
    return Built(graph, fetches, scopes, f"{len(graph.ops)} ops")


def _tensors(fetches: Any) -> list[Tensor]:
    if isinstance(fetches, Tensor):
        return [fetches]
    if isinstance(fetches, Mapping):
        fetches = list(fetches.values())
    if isinstance(fetches, (list, tuple)):
        return [t for item in fetches for t in _tensors(item)]
    return []


def preset_graph(
    preset: str = "two-networks", batch: int = 64, hidden: int = 256, dtype: str = "float32"
) -> Preset:
    """The built-in graphs as one build function (`experiments.presets` at explicit sizes:
    two-networks "small" is batch 64, hidden 256; wide/chain/random "small" is 64, 128).

    Ops go on the device of the surrounding `pg.device(...)` block, as any build function's.
    """
    size = (batch, hidden, hidden, batch) if preset == "two-networks" else (batch, hidden)
    return build_preset(preset, size, dtype, _current_device())


def _current_device() -> str | None:
    """The device of the innermost `pg.device` block of this thread (None: the default)."""
    from ..graph import _context

    devices = _context().devices
    return devices[-1] if devices and devices[-1] != "cpu:0" else None


def _preset_controls() -> dict[str, Any]:
    """The built-in graphs' controls: sizes on a power-of-two scale, as before."""
    import ipywidgets as w

    return {
        "preset": list(PRESETS),
        "batch": w.SelectionSlider(options=BATCHES, value=64),
        "hidden": w.SelectionSlider(options=HIDDENS, value=256),
        "dtype": list(FLOAT_DTYPES),
    }


# -- settings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Everything one run depends on: the graph source, its parameters, the knobs.

    Frozen and compared to decide rebuilds (`graph_key`, `session_key`) and comparisons
    (`same_graph`).
    """

    source: GraphSource
    params: tuple[tuple[str, Any], ...] = ()
    knobs: Knobs = field(default_factory=Knobs)

    @classmethod
    def of(cls, source: GraphSource, params: Mapping[str, Any], knobs: Knobs) -> Settings:
        return cls(source, tuple(params.items()), knobs)

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def graph_key(self) -> tuple[Any, ...]:
        """What the graph depends on: a change rebuilds the graph (and the session)."""
        return (self.source, self.params, self.knobs.device)

    def session_key(self) -> tuple[Any, ...]:
        """What the session depends on: a change rebuilds the session (closing the old one)."""
        return (*self.graph_key(), *sorted(self.knobs.config().as_dict().items()))

    def same_graph(self, other: Settings) -> bool:
        """Same build function (or graph) and parameters: runs that may be compared."""
        return (self.source, self.params) == (other.source, other.params)

    def graph_label(self) -> str:
        """`build(batch=64, hidden=512)`, or `graph 'g'`."""
        if self.source.build is None:
            return self.source.name
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.params)
        return f"{self.source.name}({arguments})"

    def label(self) -> str:
        """A short line naming the run: graph and parameters, placement, executor, knobs."""
        k = self.knobs
        return f"{self.graph_label()} on {k.device}, {k.executor}: {k.label()}"


# -- running --------------------------------------------------------------------------------
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

    def utilization(self) -> float:
        """Mean busy fraction over the lanes of the median trace."""
        shares = self.trace.utilization()
        return sum(shares.values()) / len(shares) if shares else 0.0

    def bound_ms(self) -> float:
        """max(work / lanes, critical path) of the median trace: no schedule beats it."""
        return self.trace.lower_bound() * 1e3

    def size_text(self) -> str:
        """The graph's size: ops and the flops of one run."""
        gflop = sum(e.flops for e in self.trace.ops()) / 1e9
        return f"{self.built.description}, {gflop:.3g} GFLOP per run"

    def notes(self) -> tuple[str, ...]:
        """The plan's notes worth a user's attention (soft placement), read off the trace."""
        notes = self.trace.metadata.get("notes", []) if self.runs else []
        moved = [note for note in notes if "soft placement" in note]
        if not moved:
            return ()
        return (
            f"soft placement: {len(moved)} op(s) placed on a device this session cannot use "
            f"ran on cpu:0 (first: {moved[0]})",
        )


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

        with LoadMonitor(own_pids=lambda: viewer.worker_pids(session)) as monitor:
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

    >>> settings = Settings.of(GraphSource(preset_graph), {"batch": 8, "hidden": 16}, Knobs())
    >>> run(settings).trace.scopes()[:2]
    ['net1', 'net2']
    """
    with Runner() as runner:
        return runner.run(settings, progress)


# -- what the output area shows -------------------------------------------------------------
def comparable(result: Result, pinned: Sequence[Result]) -> list[Result]:
    """The pinned runs of the same graph and parameters (the others are not compared)."""
    return [pin for pin in pinned if pin.settings.same_graph(result.settings) and pin.runs]


def figure_for(result: Result, pinned: Sequence[Result] = (), highlight: Sequence[str] = ()) -> Any:
    """The Gantt of the run drawn (`Result.trace`); with pins of the same graph, all on one time
    axis (pins first, oldest on top). `highlight`: op-name patterns (the search box's) drawn as
    usual, the other ops faded, each panel's title ending with how many matched.

    Every title names the run it draws and its makespan (and, for an even count, the median
    beside it); the speed-ups on top are those of the table (ratios of medians with their CIs,
    `speedup_text`), not ratios of the drawn runs' makespans, which `plot.compare` would print
    and which could contradict them. One line per pin.
    """
    from ..plot import compare, gantt

    patterns = tuple(highlight) or None
    pins = comparable(result, pinned)
    if not pins:
        figure = gantt(result.trace, highlight=patterns)
        ax = figure.axes[0]
        head, note = _title_and_note(ax)
        ax.set_title(f"{head} ({drawn_words(result)}){note}", loc="left")
        return figure
    runs = [*pins, result]
    labels = [f"pin {_pin_number(pinned, p)} ({p.knobs.label()})" for p in pins]
    labels.append(f"current ({result.knobs.label()})")
    speedups = "\n".join(f"{speedup_text(result, p)} vs pin {_pin_number(pinned, p)}" for p in pins)
    figure = compare(
        [r.trace for r in runs],
        labels=labels,
        title=f"current's speed-up (ratio of medians, as in the table):\n{speedups}",
        highlight=patterns,
    )
    panels = [ax for ax in figure.axes if hasattr(ax, "parallelgraph_bars")]
    for ax, run, label in zip(panels, runs, labels):
        note = _title_and_note(ax)[1]
        ax.set_title(
            f"{label}: makespan {run.trace.makespan_ms:.2f} ms ({drawn_words(run)}){note}",
            loc="left",
        )
    return figure


def _title_and_note(ax: Any) -> tuple[str, str]:
    """A timeline panel's title without the highlight's line, and that line ("\n..."; "" when
    drawn without a highlight)."""
    title = ax.get_title(loc="left")
    found = getattr(ax, "parallelgraph_highlight", None)
    if found is not None and title.endswith(found.note):
        return title[: -len(found.note)].rstrip("\n"), f"\n{found.note}"
    return title, ""


def _pin_number(pinned: Sequence[Result], pin: Result) -> int:
    return next(i for i, p in enumerate(pinned, 1) if p is pin)


def figure_png(figure: Any, dpi: int = PNG_DPI) -> bytes:
    """Render a figure once and encode it as PNG (fast compression: it is sent, not archived).

    One `canvas.draw()` runs the layout engine and draws; `savefig` would draw a second time.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    figure.set_dpi(dpi)
    # A plain Agg canvas (not an interactive one, which would also send the picture).
    canvas = figure.canvas if type(figure.canvas) is FigureCanvasAgg else FigureCanvasAgg(figure)
    canvas.draw()
    image = Image.frombuffer(
        "RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
    )
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def summary_rows(result: Result, pinned: Sequence[Result] = ()) -> list[tuple[str, ...]]:
    """(metric, current, pin 1, ...) rows of the summary table, as text."""
    runs = [result, *pinned]
    rows: list[tuple[str, ...]] = [
        ("graph", *(r.settings.graph_label() for r in runs)),
        ("size", *(r.size_text() for r in runs)),
        ("run", *(_run_text(r) for r in runs)),
        ("median makespan", *(_median_text(r) for r in runs)),
        ("drawn and explained", *(_drawn_text(r) for r in runs)),
        ("current's speed-up vs this", "—", *(speedup_text(result, p) for p in pinned)),
        ("overlap, first two scopes", *(_overlap_text(r) for r in runs)),
        ("utilization (mean of lanes)", *(_utilization_text(r) for r in runs)),
        ("critical-path bound", *(_bound_text(r) for r in runs)),
        ("repeats, wall per run", *(_wall_text(r) for r in runs)),
    ]
    return rows


def summary_html(result: Result, pinned: Sequence[Result] = ()) -> str:
    """The summary table as HTML (inline styles: widget HTML gets no notebook styling)."""
    header = ["", "current"] + [f"pin {i}" for i in range(1, len(pinned) + 1)]
    cell = "padding:2px 10px;text-align:left;border-bottom:1px solid #ddd;white-space:nowrap"
    head = "".join(f"<th style='{cell}'>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='{cell}'>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(result, pinned)
    )
    return (
        "<table class='pg-summary-table' style='border-collapse:collapse;font-size:13px'>"
        f"<tr>{head}</tr>{body}</table>"
    )


def _run_text(result: Result) -> str:
    k = result.knobs
    text = f"{k.executor} on {k.device}: {k.label()}"
    return text if result.ending == "done" else f"{text} ({result.ending})"


def _median_text(result: Result) -> str:
    q1, q3 = result.measurement.quartiles_ms()
    return f"{result.median_ms:.2f} ms (IQR {q1:.2f}-{q3:.2f})"


def drawn_words(result: Result) -> str:
    """Which repeat the timeline and explain() show, in a few words: "the only run", "the median
    of 5 runs", or (an even count, whose median lies between two runs) "the lower middle of 4
    runs; median 1090.37 ms"."""
    runs = result.runs
    if runs == 1:
        return "the only run"
    if runs % 2:
        return f"the median of {runs} runs"
    return f"the lower middle of {runs} runs; median {result.median_ms:.2f} ms"


def median_words(result: Result) -> str:
    """The median for the status line, with the run drawn where the two differ: "median
    1019.36 ms of 5 runs, the run drawn", or "median 1090.37 ms of 4 runs; drawn: the lower
    middle run, makespan 1019.36 ms"."""
    runs = result.runs
    text = f"median {result.median_ms:.2f} ms of {runs} run{'s' if runs != 1 else ''}"
    if runs % 2:
        return f"{text}, the run drawn"
    return f"{text}; drawn: the lower middle run, makespan {result.trace.makespan_ms:.2f} ms"


def _drawn_text(result: Result) -> str:
    return f"makespan {result.trace.makespan_ms:.2f} ms, {drawn_words(result)}"


def speedup_text(result: Result, pin: Result) -> str:
    """The current run's speed-up against a pin, as the status, the table and the timeline
    give it: `stats.speedup_text` of their makespans ("×1.89 (95% CI 1.80-1.97, faster)",
    "×0.65 (one run: not a conclusion)"); a pin of another graph is not compared."""
    if not pin.settings.same_graph(result.settings):
        return "another graph: not compared"
    if not pin.runs or not result.runs:
        return "—"
    return stats.speedup_text(pin.measurement.makespans_ms, result.measurement.makespans_ms)


def _overlap_text(result: Result) -> str:
    overlap = result.overlap()
    if overlap is None:
        return "— (no independent scopes)"
    first, second = result.built.scopes[:2]
    return f"{first}/{second} {overlap:.2f}"


def _utilization_text(result: Result) -> str:
    return f"{100 * result.utilization():.0f}% of {len(result.trace.lanes)} lane(s)"


def _bound_text(result: Result) -> str:
    bound = result.bound_ms()
    ratio = f", makespan {result.trace.makespan_ms / bound:.2f}x it" if bound else ""
    return f"{bound:.2f} ms{ratio}"


def _wall_text(result: Result) -> str:
    return f"{result.runs}, {result.measurement.median_wall_ms:.2f} ms"


def error_html(error: BaseException) -> str:
    """An exception for the message line: one line in red, the traceback folded away."""
    summary = html.escape(f"{type(error).__name__}: {error}")
    details = html.escape("".join(traceback.format_exception(error)))
    return (
        f"<div class='pg-error' style='color:#b00020'><b>Run failed:</b> {summary}"
        f"<details><summary>traceback</summary><pre style='font-size:11px'>{details}</pre>"
        "</details></div>"
    )


def explained_html(result: Result) -> str:
    """`explain()` of the run drawn, headed by which run that is, so that its makespan is read
    beside the median the status and the table give."""
    head = (
        "<div class='pg-explained-run' style='color:#555'>Explaining the run drawn: makespan "
        f"{result.trace.makespan_ms:.2f} ms, {html.escape(drawn_words(result))}.</div>"
    )
    return head + result.trace.explain()._repr_html_()


def info_html(text: str) -> str:
    """A plain answer for the message line (what Pin did)."""
    return f"<div class='pg-info' style='color:#2a5d8a'>{html.escape(text)}</div>"


def notes_html(lines: Sequence[str]) -> str:
    """Notes for the message line (soft placement, a stop); empty if none."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<div class='pg-notes' style='color:#8a5a00'><ul>{items}</ul></div>" if items else ""


def ending_text(result: Result, how: str) -> str:
    """How a run ended, in words, for the status and message lines."""
    planned = result.knobs.repeats
    if how == "done":
        return f"done: {result.runs} of {planned} runs"
    cause = {"stopped": "stopped (Stop)", "interrupted": "interrupted (kernel interrupt)"}[how]
    if not result.runs:
        return f"{cause} before a traced run ended: nothing measured"
    return f"{cause} after {result.runs} of {planned} runs, kept"


# -- kernel interrupts ----------------------------------------------------------------------
# -- the widget -----------------------------------------------------------------------------
def _widget_front_end() -> bool:
    """Whether figures can be live ipympl canvases: a Jupyter kernel and ipympl installed."""
    import importlib.util
    import sys

    if "IPython" not in sys.modules or importlib.util.find_spec("ipympl") is None:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class Dashboard(viewer.ViewerControls):
    """Controls, Run / Stop / Pin buttons and an output area for one graph source.

    `Dashboard(build, **abbreviations_and_knobs)`, `Dashboard(graph, fetches, **knobs)`, or
    `Dashboard(**preset_values_and_knobs)` for the built-in graphs (see the module docstring).
    Options: `auto_run` (rerun when a control is released, after the first run; default True),
    `warmup` (warm a new session up before its first traced run; default True), `timeline`
    ("auto", "png" or "interactive"), `live` (the live timeline of a long run; default True, the
    "live timeline" checkbox).

    Scripting: `controls[name]`, `run()`, `wait(timeout)`, `stop()`, `result` (`.trace`,
    `.params`), `status` (the status line's text), `ending`, `pin()`, `clear_pins()`, `close()`;
    the viewer: `search` (its `.value`, the patterns), `search_words`, `top_ops`, `save_trace()`
    (the Save trace button), `live`.

    >>> dash = Dashboard(preset="two-networks", batch=64, hidden=256)  # doctest: +SKIP
    >>> dash.run(); dash.wait(); dash.result.trace                     # doctest: +SKIP
    """

    def __init__(
        self,
        build: Callable[..., Any] | Graph | None = None,
        fetches: Any = None,
        /,
        *,
        auto_run: bool = True,
        warmup: bool = True,
        timeline: str = "auto",
        live: bool = True,
        **options: Any,
    ):
        import ipywidgets

        self._widgets = ipywidgets
        if timeline not in ("auto", "png", "interactive"):
            raise ValueError(f"timeline must be 'auto', 'png' or 'interactive', not {timeline!r}")
        self.interactive = timeline == "interactive" or (timeline == "auto" and _widget_front_end())
        knob_values = {name: options.pop(name) for name in KNOB_NAMES if name in options}
        self.source, params = self._source_and_params(build, fetches, options)
        start_knobs = Knobs(**knob_values)
        self.runner = Runner(warmup=warmup)
        self.result: Result | None = None
        self.pinned: list[Result] = []
        self.error: BaseException | None = None
        self.ending: Ending = "not run"
        self.runs = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._busy = False
        self._pending = False
        self.closed = False
        self._stop_signal: StopSignal | None = None
        self._stop_reason = "stopped"
        self._planned = 0  # traced runs the current run plans (the progress text counts them)
        self._last_progress = 0.0
        self._run_notes = ""  # the message line's text about the last run (pin adds to it)
        self._figure: Any = None
        self._canvas: Any = None  # the ipympl canvas, once there is an interactive figure
        self._patterns: tuple[str, ...] = ()  # the search box's patterns (the timeline's)
        self._draw_times: list[float] = []  # what the last drawings took (paces live ones)
        self._pacer = viewer.LivePacer()
        self._live_shown = False  # is the timeline a live drawing of the current run?
        self.runner.on_repeat = self._on_repeat
        self.param_controls = params
        self.knob_controls = self._make_knob_controls(start_knobs)
        self.controls = _Controls({**self.param_controls, **self.knob_controls})
        self._make_buttons(auto_run, live)
        self._make_output_area()
        self.widget = self._layout()
        self._watch_controls()

    # -- the graph source and its parameters ------------------------------------------------
    def _source_and_params(
        self, build: Any, fetches: Any, options: dict[str, Any]
    ) -> tuple[GraphSource, dict[str, Any]]:
        """The graph source and one control per parameter (see the module docstring)."""
        if isinstance(build, Graph):
            if options:
                raise TypeError(
                    f"Dashboard got unknown options {sorted(options)} for a built graph; "
                    f"knobs: {list(KNOB_NAMES)}"
                )
            _built(build, fetches)  # fails now if the fetches are not the graph's tensors
            return GraphSource(graph=build, fetches=fetches), {}
        if fetches is not None:
            raise TypeError("fetches go with a built graph: Dashboard(graph, fetches)")
        if build is None:  # the built-in graphs: options are starting values
            abbreviations = _preset_controls()
            unknown = sorted(set(options) - set(abbreviations))
            if unknown:
                raise TypeError(
                    f"Dashboard got unknown options {unknown}; known: "
                    f"{sorted([*abbreviations, *KNOB_NAMES])}"
                )
            controls = self._param_controls(preset_graph, abbreviations, options)
            return GraphSource(preset_graph), controls
        if not callable(build):
            raise TypeError(
                f"Dashboard(build, ...) takes a function that builds the graph, or a pg.Graph, "
                f"not {type(build).__name__}"
            )
        return GraphSource(build), self._param_controls(build, options, {})

    def _param_controls(
        self, build: Callable[..., Any], abbreviations: dict[str, Any], values: dict[str, Any]
    ) -> dict[str, Any]:
        """A widget per parameter of `build`, by interact's abbreviations; `values` start them."""
        from ipywidgets.widgets.interaction import fixed, interactive

        signature = inspect.signature(build)
        named = {
            name: p.default
            for name, p in signature.parameters.items()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
        extra = sorted(set(abbreviations) - set(named))
        if extra and not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
            raise TypeError(f"{build.__name__}() has no parameter(s) {extra}")
        controls: dict[str, Any] = {}
        for name, default in {**named, **{e: inspect.Parameter.empty for e in extra}}.items():
            if name in KNOB_NAMES:
                raise TypeError(f"{build.__name__}() parameter {name!r} is a run knob's name")
            abbrev = abbreviations.get(name, default)
            if abbrev is inspect.Parameter.empty:
                raise TypeError(
                    f"{build.__name__}() parameter {name!r} needs a control or a default: "
                    f"pg.dashboard({build.__name__}, {name}=(low, high))"
                )
            if isinstance(abbrev, (list, tuple, dict)) and not abbrev:
                raise ValueError(f"{build.__name__}() parameter {name}={abbrev!r}: no values")
            try:
                widget = interactive.widget_from_abbrev(abbrev, default)
            except ValueError as problem:  # (64, 8), (nan, nan): interact's words, our name
                raise ValueError(
                    f"{build.__name__}() parameter {name}={abbrev!r}: {problem}"
                ) from None
            if widget is None or isinstance(widget, fixed):  # a value to pass as it is
                controls[name] = fixed(abbrev.value if isinstance(abbrev, fixed) else abbrev)
                continue
            widget.description = widget.description or name
            if name in values:
                widget.value = values[name]
            if hasattr(widget, "continuous_update"):
                widget.continuous_update = False
            widget.style = {"description_width": "initial"}
            widget.add_class(f"pg-param-{name.replace('_', '-')}")
            controls[name] = widget
        return controls

    # -- building the widgets ---------------------------------------------------------------
    def _make_knob_controls(self, start: Knobs) -> dict[str, Any]:
        w = self._widgets
        wide = {"description_width": "initial"}

        def slider(name: str, label: str, low: int, high: int, tip: str) -> Any:
            return w.IntSlider(
                value=getattr(start, name),
                min=min(low, getattr(start, name)),  # 0 threads (one per core) if asked for
                max=max(high, getattr(start, name)),
                description=label,
                continuous_update=False,
                style=wide,
                tooltip=tip,
            )

        def choice(name: str, label: str, options: tuple, tip: str) -> Any:
            return w.Dropdown(
                options=options,
                value=getattr(start, name),
                description=label,
                style=wide,
                tooltip=tip,
                layout=w.Layout(width="200px"),
            )

        executors = tuple(e for e in EXECUTORS if e != "dask" or _dask_usable())
        controls = {
            "device": choice("device", "device", DEVICES, "where ops are placed"),
            "executor": choice("executor", "executor", executors, "what runs the plan"),
            "repeats": slider("repeats", "repeats", 1, MAX_REPEATS, "traced runs per Run"),
            "inter_op_threads": slider(
                "inter_op_threads", "inter-op", 1, MAX_THREADS, "ops running at the same time"
            ),
            "intra_op_threads": slider(
                "intra_op_threads", "intra-op", 1, MAX_THREADS, "threads working on one op"
            ),
            "streams": slider("streams", "streams", 1, MAX_STREAMS, "CUDA streams (GPU ops)"),
            "stream_policy": choice(
                "stream_policy", "policy", STREAM_POLICIES, "which GPU op goes on which stream"
            ),
        }
        for name, control in controls.items():
            control.add_class(f"pg-{name.replace('_', '-')}")
        return controls

    def _make_buttons(self, auto_run: bool, live: bool) -> None:
        w = self._widgets
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.pin_button = w.Button(description="Pin", icon="thumb-tack", tooltip="keep this run")
        self.clear_button = w.Button(description="Clear pins", disabled=True)
        self.auto_run = w.Checkbox(value=auto_run, description="rerun on change", indent=False)
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="160px"))
        self.status_line = w.HTML("")
        self._say("not run yet: press Run")
        for name, widget in (
            ("run", self.run_button),
            ("stop", self.stop_button),
            ("pin", self.pin_button),
            ("clear-pins", self.clear_button),
            ("auto-run", self.auto_run),
            ("progress", self.progress),
            ("status", self.status_line),
        ):
            widget.add_class(f"pg-{name}")
        self.run_button.on_click(lambda _button: self.run())
        self.stop_button.on_click(lambda _button: self.stop())
        self.pin_button.on_click(lambda _button: self.pin())
        self.clear_button.on_click(lambda _button: self.clear_pins())
        self._make_viewer_widgets(live)

    def _make_output_area(self) -> None:
        w = self._widgets
        self.message = w.HTML("")
        self.previous_note = w.HTML("")  # "Previous run, ...": what is shown is not the latest
        self._table_html = self._explain_html = ""  # unmarked (not greyed) contents
        self._previous_html = ""  # the "Previous run, ..." note (a live drawing keeps it)
        self._previous_why: str | None = None  # why the output area is marked "previous run"
        self.gantt = w.Image(  # hidden until there is a picture (no broken-image icon)
            format="png", layout=w.Layout(max_width="100%", height="auto", display="none")
        )
        self.timeline = w.Box([self.gantt])
        self._canvas_area = w.Output()  # holds the ipympl canvas (interactive timelines)
        self.table = w.HTML("", layout=w.Layout(flex="0 0 auto"))
        self.explanation = w.HTML(
            "", layout=w.Layout(flex="1 1 360px", min_width="360px", margin="0 0 0 16px")
        )
        for name, widget in (
            ("message", self.message),
            ("previous", self.previous_note),
            ("gantt", self.gantt),
            ("timeline", self.timeline),
            ("summary", self.table),
            ("explain", self.explanation),
        ):
            widget.add_class(f"pg-{name}")
        self.output = w.VBox(
            [
                self.message,
                w.HBox([self.search, self.search_words], layout=w.Layout(align_items="center")),
                self.previous_note,
                self.timeline,
                w.HBox([self.table, self.explanation], layout=w.Layout(flex_flow="row wrap")),
                self.top_ops,
            ],
            layout=w.Layout(border="1px solid #ddd", padding="4px"),
        )
        self.output.add_class("pg-output")

    def _layout(self) -> Any:
        w, c = self._widgets, self.knob_controls
        shown = [p for p in self.param_controls.values() if isinstance(p, w.Widget)]
        rows = [
            w.HBox(shown, layout=w.Layout(flex_flow="row wrap")),
            w.HBox([c["device"], c["executor"], c["repeats"]]),
            w.HBox(
                [c["inter_op_threads"], c["intra_op_threads"], c["streams"], c["stream_policy"]]
            ),
            w.HBox(
                [
                    self.run_button,
                    self.stop_button,
                    self.pin_button,
                    self.clear_button,
                    self.save_button,
                    self.auto_run,
                    self.live,
                    self.progress,
                ],
                layout=w.Layout(flex_flow="row wrap", align_items="center"),
            ),
            self.status_line,
            self.output,
        ]
        box = w.VBox(rows)
        box.add_class("pg-dashboard")
        self._update_gpu_controls()
        return box

    def _watch_controls(self) -> None:
        for control in self.controls.values():
            if isinstance(control, self._widgets.Widget):
                control.observe(self._on_change, names="value")

    def _update_gpu_controls(self) -> None:
        """Streams and stream policy only matter for ops that run on a GPU: grey them out on
        the CPU, and on gpu:0 where no GPU is usable (soft placement runs the ops on the CPU)."""
        on_gpu = self.knob_controls["device"].value != "cpu" and _gpu_usable()
        for name in ("streams", "stream_policy"):
            self.knob_controls[name].disabled = not on_gpu
        no_gpu = self.knob_controls["device"].value != "cpu" and not on_gpu
        self.knob_controls["streams"].description = "streams (no GPU)" if no_gpu else "streams"

    # -- behaviour --------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """The status line's text: what ran and how it ended."""
        return self._status_text

    def _say(self, text: str) -> None:
        """Set the status line (an HTML widget, so that a long line wraps instead of being
        cut off at the panel's edge)."""
        self._status_text = text
        self.status_line.value = html.escape(text)

    @property
    def baseline(self) -> Result | None:
        """The most recently pinned run, if any."""
        return self.pinned[-1] if self.pinned else None

    @property
    def busy(self) -> bool:
        return self._busy

    def params(self) -> dict[str, Any]:
        """The build function's parameters as the controls hold them."""
        return {name: control.value for name, control in self.param_controls.items()}

    def knobs(self) -> Knobs:
        return Knobs(**{name: control.value for name, control in self.knob_controls.items()})

    def settings(self) -> Settings:
        """The controls' current values."""
        return Settings.of(self.source, self.params(), self.knobs())

    def _on_change(self, change: dict[str, Any]) -> None:
        if change.get("owner") is self.knob_controls["device"]:
            self._update_gpu_controls()
        if not self.auto_run.value or self.runs == 0 or self.closed:
            return
        try:
            unchanged = self.result is not None and self.settings() == self.result.settings
        except (TypeError, ValueError):
            unchanged = False  # settings the controls cannot hold: let run() report it
        if not unchanged or self._busy:
            self.run()

    def run(self) -> None:
        """Start a run with the controls' settings in a background thread and return; if a
        run is going, run once more after it (with the controls' values then).

        Called on the main thread (a button click, a cell), it also makes a SIGINT — Ctrl-C,
        Kernel ▸ Interrupt — end the run "interrupted" while it goes (`interrupts.RELAY`): a
        listener thread waits for the relay's word and stops the run, as Stop does."""
        if self.closed:  # its session would reopen with nothing left to close it
            raise RuntimeError("this dashboard is closed; make a new one (pg.dashboard(...))")
        with self._lock:
            self.runs += 1
            if self._busy:
                self._pending = True
                return
            self._busy, self._pending = True, False
            self._stop_signal, self._stop_reason = StopSignal(), "stopped"
            self._idle.clear()
        self._set_buttons(busy=True)
        words: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        listener = None
        if RELAY.attach(words):
            listener = threading.Thread(
                target=self._listen, args=(words,), name="pg-dashboard-interrupt", daemon=True
            )
            listener.start()
        thread = threading.Thread(
            target=self._run_loop, args=(words, listener), name="pg-dashboard-run", daemon=True
        )
        thread.start()

    def _listen(self, words: queue.SimpleQueue[str | None]) -> None:
        """The listener thread: stop the run at each SIGINT the relay passes on, until the run
        loop says None (it has ended)."""
        while (word := words.get()) is not None:
            self._stop(word)

    def wait(self, timeout: float | None = None) -> Result | None:
        """Block until no run is going; return the latest result (None if nothing ran well).

        A KeyboardInterrupt (a kernel interrupt, Ctrl-C) while waiting stops the run, waits
        for it to end "interrupted" with what it measured (within one op), and is raised again:
        the cell fails, so a Run All stops there. Raises TimeoutError after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # In slices: an interrupt that is only flagged (`_thread.interrupt_main`, a SIGINT
            # taken by another thread) is handled at the main thread's next bytecode, which a
            # long lock wait would put off until the run ends.
            while not self._idle.wait(WAIT_SLICE_S):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"the dashboard's run did not end in {timeout} s")
        except KeyboardInterrupt:
            self._stop("interrupted")
            self._idle.wait()
            raise
        finally:
            RELAY.restore()
        return self.result

    def stop(self) -> None:
        """End the run between ops, keeping what was measured (the Stop button). Thread-safe;
        a no-op when nothing runs."""
        self._stop("stopped")

    def _stop(self, reason: str) -> None:
        with self._lock:
            self._pending = False
            stop_signal = self._stop_signal if self._busy else None
            if stop_signal is not None:
                self._stop_reason = reason
        if stop_signal is not None:
            stop_signal.stop()

    def _run_loop(
        self, words: queue.SimpleQueue[str | None], listener: threading.Thread | None
    ) -> None:
        """The run thread: run, show, and run again while a change came in meanwhile.

        Then the hand-over, in this order: the interrupt listener is told to end and joined
        (outside the lock: it may be waiting for it in `_stop`), so no thread of the run outlives
        `wait()`; then, under the lock, the buttons, `busy` and the idle event. A `run()` from
        another thread meanwhile finds the dashboard busy and is run here (a change that came in
        during the hand-over: Stop reaches it, the interrupt relay no longer does)."""
        ended = False
        try:
            while True:
                self._run_once()
                with self._lock:
                    if self._renew_if_pending():
                        continue
                if listener is not None:
                    end_listener(words, listener)
                    listener = None
                with self._lock:
                    if self._renew_if_pending():
                        continue
                    self._end_run()
                    ended = True
                    return
        finally:  # also after a stray asynchronous exception: never stay busy for good
            if listener is not None:
                end_listener(words, listener)
            if not ended:
                with self._lock:
                    self._end_run()

    def _renew_if_pending(self) -> bool:
        """Under the lock: if a run was asked for meanwhile, make it the next (True)."""
        if not self._pending:
            return False
        self._pending = False
        self._stop_signal, self._stop_reason = StopSignal(), "stopped"
        return True

    def _end_run(self) -> None:
        """Under the lock: Run and Pin usable, Stop greyed, not busy, `wait()` returns."""
        self._set_buttons(busy=False)
        self._busy = False
        self._idle.set()

    def _run_once(self) -> None:
        """One run; whatever happens, the status, the message and the buttons end true.

        The message line is cleared (it spoke of the last run) and what is still on screen is
        marked as the previous run's until this one replaces it."""
        self._last_progress = time.monotonic()
        self.progress.bar_style, self.progress.value = "info", 0
        self.message.value = self._run_notes = ""
        self._mark_previous("shown until this run ends")
        self._say(f"running {self.settings_text()} ...")
        self._pacer, self._live_shown = viewer.LivePacer(history=self._draw_times), False
        try:
            settings = self.settings()
            self._planned = settings.knobs.repeats
            result = self.runner.run(settings, self._progress, self._stop_signal)
            how = self._stop_reason if result.ending != "done" else "done"
            if how != result.ending:  # the loop was stopped because the kernel was interrupted
                result = replace(result, measurement=replace(result.measurement, ending=how))
            result.measurement.makespans_ms  # noqa: B018 - read each trace once, before timing
            drawing = time.monotonic()
            figure = figure_for(result, self.pinned, self._patterns) if result.runs else None
            # what a drawing of one timeline takes paces the live ones (pins add panels)
            built_s = time.monotonic() - drawing if not comparable(result, self.pinned) else None
            self._show(result, how, figure, built_s)
        except BaseException as error:  # noqa: BLE001 - every failure goes to the output area
            self._show_error(error)

    def pin(self) -> None:
        """Keep the current result for comparison (at most MAX_PINNED, the oldest dropped);
        the message line says what was pinned, under which number, and what it is for."""
        if self._busy:  # the run thread owns the output area until the run ends
            self.message.value = "<i>A run is going: pin when it has ended.</i>"
            return
        if self.result is None:
            self.message.value = "<i>Run first: there is nothing to pin yet.</i>"
            return
        result = self.result
        if result in self.pinned:
            said = f"This run is pin {self.pinned.index(result) + 1} already."
        else:
            dropped = len(self.pinned) == MAX_PINNED
            self.pinned = [*self.pinned, result][-MAX_PINNED:]
            said = (
                f"Pinned as pin {len(self.pinned)}: {result.settings.label()}, "
                f"{median_words(result)}. The table compares the next runs with it, and the "
                "timeline draws it above those of the same graph."
                + (f" (The oldest pin was dropped: at most {MAX_PINNED}.)" if dropped else "")
                + (
                    f' It has one run: a speed-up against it will say "{stats.ONE_RUN}" '
                    "(more repeats give it a confidence interval)."
                    if result.runs == 1
                    else ""
                )
            )
        self._redraw()
        self._tell(said)

    def clear_pins(self) -> None:
        """Forget the pinned runs (ignored while a run is going, like the greyed button)."""
        if self._busy:
            return
        count, self.pinned = len(self.pinned), []
        self._redraw()
        if count:
            self._tell(f"{count} pin(s) cleared.")

    def _tell(self, text: str) -> None:
        """An answer to a button (Pin, Clear pins) under the last run's notes."""
        self.message.value = self._run_notes + info_html(text)

    def _mark_previous(self, why: str | None) -> None:
        """Mark the output area as the previous run's (`why`: until when, or what happened to
        the newer run), greying its tables and explanation; None unmarks it."""
        self._previous_why = why
        if why is None or self.result is None:
            self.previous_note.value = self._previous_html = ""
            self.table.value, self.explanation.value = self._table_html, self._explain_html
            self.top_ops.value = self._top_ops_html
            return
        self.previous_note.value = self._previous_html = (
            "<div class='pg-previous-run-note' style='color:#777'><i>"
            f"{html.escape(f'Previous run, {why}: {self.result.settings.label()}')}, "
            f"{html.escape(median_words(self.result))}.</i></div>"
        )
        grey = "<div class='pg-previous-run' style='opacity:0.5'>{}</div>"
        self.table.value = grey.format(self._table_html)
        self.explanation.value = grey.format(self._explain_html)
        self.top_ops.value = grey.format(self._top_ops_html)

    def _redraw(self) -> None:
        """Redraw the table and timeline of the current result (after the pins changed)."""
        self.clear_button.disabled = not self.pinned
        if self.result is None:
            return
        marked = self._previous_why  # a redraw keeps the mark of a failed or empty run
        try:
            self._show_result(self.result, figure_for(self.result, self.pinned, self._patterns))
        except Exception as error:  # noqa: BLE001
            self._show_error(error)
            return
        self._mark_previous(marked)

    def _set_buttons(self, busy: bool) -> None:
        self.run_button.disabled = busy
        self.pin_button.disabled = busy
        self.stop_button.disabled = not busy
        self.stop_button.button_style = "warning" if busy else ""
        self.clear_button.disabled = busy or not self.pinned
        self.save_button.disabled = busy or self.result is None

    def settings_text(self) -> str:
        try:
            return self.settings().label()
        except (TypeError, ValueError) as error:
            return f"(invalid settings: {error})"

    def _progress(self, done: int, total: int) -> None:
        """Count the runs on the progress bar, at most every PROGRESS_EVERY_S: each update
        makes the browser redraw, which on a small machine competes with the run measured."""
        now = time.monotonic()
        if done < total and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        self.progress.max = total + 1  # the last step is drawing
        self.progress.value = done
        warmups = total - self._planned  # the bar counts them; the words count traced runs
        traced = max(0, done - warmups)
        self._say(
            f"running {traced}/{self._planned} runs"
            + (" (warmed up)" if warmups and not traced else "")
            + " ..."
        )

    def _show(self, result: Result, how: str, figure: Any, built_s: float | None = None) -> None:
        """Show a finished run (done, stopped or interrupted) and say how it ended."""
        self.ending = how
        said = ending_text(result, how)
        if figure is None:  # stopped before any traced run: keep the previous output
            stale = "; the timeline below is from the previous run" if self.result else ""
            self.message.value = self._run_notes = notes_html([f"{said}{stale}."])
            self._mark_previous(f"kept: the last run ({how}) measured nothing")
            self.progress.bar_style = "warning"
            self._say(f"{said}: {result.settings.label()}")
            return
        self._show_result(result, figure, built_s)
        notes = list(result.notes())
        if how != "done":
            notes.insert(0, f"{said}: the table and timeline show the runs measured.")
        busy = result.busy_note()
        if busy is not None:
            notes.append(f"Busy machine: {busy}.")
        self.message.value = self._run_notes = notes_html(notes)
        self.progress.value = self.progress.max
        self.progress.bar_style = "success" if how == "done" else "warning"
        self._say(self._status_of(result, said))

    def _status_of(self, result: Result, said: str) -> str:
        rebuilt = f" (new {result.rebuilt})" if result.rebuilt else ""
        if result.measurement.warmup_ms:
            warm = f"; warm-up {result.warmup_s:.2f} s"
            if result.warmup_s > max(0.1, 3 * result.measurement.median_wall_ms / 1e3):
                warm += " (compiling, first touch: not in the timings)"
        elif result.rebuilt and not self.runner.warmup:
            warm = "; no warm-up: the first run includes compilation"
        else:
            warm = ""
        pins = comparable(result, self.pinned)
        against = (
            f"; {speedup_text(result, pins[-1])} against pin {_pin_number(self.pinned, pins[-1])}"
            if pins
            else ""
        )
        busy = "; busy machine: timings not reliable (see below)" if result.busy_note() else ""
        return (
            f"{result.settings.label()}: {median_words(result)}{against}; {said}{warm}; "
            f"{result.seconds:.2f} s{rebuilt}{busy}"
        )

    def _show_result(self, result: Result, figure: Any, built_s: float | None = None) -> None:
        """Timeline, table and explanation of `result` (it becomes `self.result`); `built_s`:
        what making the figure took (kept, with the showing, to pace live drawings)."""
        self.result, self.error = result, None
        self._show_figure(figure, built_s)
        self._live_shown = False
        self._table_html = summary_html(result, self.pinned)
        self._explain_html = explained_html(result)
        self._top_ops_html = viewer.top_ops_html(result.trace, self._patterns)
        self._mark_previous(None)
        self.clear_button.disabled = not self.pinned or self._busy

    def _show_figure(self, figure: Any, built_s: float | None = None) -> None:
        """The figure as PNG bytes in the Image widget, or (interactive) on a new ipympl canvas
        that replaces the previous one in an Output widget, whose output area disposes of the
        old view (a canvas swapped in a Box left its old view in the page; one canvas given
        each new figure in turn froze in the browser, which waits for an image per request).

        `built_s` (what making the figure took) is kept with the time showing it took among
        the recent drawing times that pace the live timeline."""
        started = time.monotonic()
        self._figure = figure
        _leave_pyplot(figure)
        found = viewer.drawn_highlight(figure) if self._patterns else None
        words = viewer.search_words(self._patterns, found)
        self.search_words.value = viewer.search_html(words) if words else ""
        if not self.interactive:
            self.gantt.value = figure_png(figure)
            self.gantt.layout.display = None
        else:
            figure.set_dpi(min(PNG_DPI, CANVAS_WIDTH_PX / figure.get_figwidth()))
            old, self._canvas = self._canvas, _ipympl_canvas(figure)
            if not self.timeline.children or self.timeline.children[0] is not self._canvas_area:
                self.timeline.children = (self._canvas_area,)
            self._canvas_area.outputs = (_widget_output(self._canvas),)
            if old is not None:
                _close_canvas(old)
        if built_s is not None:
            viewer.keep_drawing_time(self._draw_times, built_s + time.monotonic() - started)

    def _show_error(self, error: BaseException) -> None:
        self.ending, self.error = "failed", error
        if self._live_shown:  # the timeline is a live drawing of the run that failed
            self._live_shown = False
            self._restore_timeline()
        self.message.value = self._run_notes = error_html(error)
        self._mark_previous("kept: the last run failed")
        self.progress.bar_style = "danger"
        stale = " (the timeline below is from the previous run)" if self.result else ""
        self._say(f"failed: {type(error).__name__}: {error}{stale}")

    def close(self) -> None:
        """Stop a run, close the session (joining its threads) and every widget."""
        self.closed = True
        self.stop()
        self._idle.wait(30)
        RELAY.restore()
        self.runner.close()
        if self._canvas is not None:
            _close_canvas(self._canvas)
        for widget in _descendants(self.widget):
            widget.close()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        last = f"last {self.result.median_ms:.2f} ms" if self.result else "not run"
        return f"<Dashboard {self.settings_text()}; {last}>"


class _Controls(dict):
    """The dashboard's widgets by name; a wrong name says which names there are."""

    def __missing__(self, name: Any) -> Any:
        raise KeyError(f"no control {name!r}; the controls: {sorted(self)}")


def _ipympl_canvas(figure: Any) -> Any:
    """An ipympl canvas (with its toolbar) for a figure made without pyplot."""
    from ipympl.backend_nbagg import Canvas, FigureManager

    canvas = Canvas(figure)
    FigureManager(canvas, 0)
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.resizable = False
    canvas.toolbar_position = "right"  # beside the figure, never over the lane names
    canvas.layout.padding = TOOLBAR_ROOM  # ... nor over the legend
    canvas.add_class("pg-canvas")
    return canvas


def _leave_pyplot(figure: Any) -> None:
    """Under `%matplotlib widget` the timeline's figure is made by pyplot, which would keep it
    (one more open figure per run) and show it again below the cell; the dashboard shows it
    itself, so pyplot lets it go (the figure stays usable)."""
    import sys

    manager = getattr(figure.canvas, "manager", None)
    if manager is None or "matplotlib.pyplot" not in sys.modules:
        return
    from matplotlib._pylab_helpers import Gcf

    if Gcf.get_fig_manager(manager.num) is manager:
        Gcf.figs.pop(manager.num, None)  # not plt.close: that would close the canvas widget
        if hasattr(figure.canvas, "close"):
            figure.canvas.close()


def _widget_output(widget: Any) -> dict[str, Any]:
    """An output-area entry that shows `widget` (what `display(widget)` would append)."""
    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    return {
        "output_type": "display_data",
        "data": {"text/plain": repr(widget), "application/vnd.jupyter.widget-view+json": view},
        "metadata": {},
    }


def _close_canvas(canvas: Any) -> None:
    toolbar = getattr(canvas, "toolbar", None)
    for widget in (toolbar, canvas):
        if hasattr(widget, "close"):
            widget.close()


def _descendants(widget: Any) -> list[Any]:
    children = list(getattr(widget, "children", ()))
    return [widget, *(d for child in children for d in _descendants(child))]


def _dask_usable() -> bool:
    """Offer the dask executor only where both dask.distributed and our adapter exist."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("distributed", "parallelgraph.executors.dask")
    )


def _gpu_usable() -> bool:
    """Whether ops placed on gpu:0 run there (imports numba.cuda: only asked on gpu:0)."""
    from ..executors.cuda import gpu_available

    return gpu_available()


__all__ = [
    "Built",
    "Dashboard",
    "GraphSource",
    "Knobs",
    "Result",
    "Runner",
    "Settings",
    "figure_for",
    "figure_png",
    "preset_graph",
    "run",
    "summary_html",
    "summary_rows",
]
