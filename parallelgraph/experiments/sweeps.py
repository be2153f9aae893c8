"""Sweeps: measure a grid of graph sizes and configs so that conclusions survive noise.

`sweep(build, grid, repeats, warmup, seed)` runs every cell of the grid (the product of its
lists) `repeats` times. The design choices, each against a way "inconsistent results" happen:

- **Interleaved, shuffled rounds**: round r runs every cell once, in an order shuffled by `seed`,
  before round r + 1 starts — a machine that slows down (thermal, a neighbour) hurts all cells
  alike instead of whichever came last.
- **Everything kept**: every measurement (a `SweepRun`: makespan from the trace, wall time,
  round, position) is in the result, and goes to CSV/JSON beside each cell's median, CI,
  speed-up and verdict (`sweep_files`: written safely, read back checked).
- **The user's keys stay the user's**: a cell's summary (`SweepRow`) holds the grid values in
  `params`, exactly as named, and the statistics as fields. In `table()` and `to_csv()` a grid
  key spelled like a statistic's column ("n", "verdict", "round", ...) keeps its values and is
  headed "param:<key>" (`param_columns`), so a column name always means one thing.
- **Medians with bootstrap CIs**, speed-ups against a baseline cell with their own CIs, and a
  verdict only when the CI excludes 1.0 (see `stats`).
- **A noise check first**: a few runs of the baseline estimate the spread; when the requested
  precision needs more repeats than asked for, a warning says how many.
- **Predicted next to measured**: `simulate` replays the baseline's median trace under each
  cell's config; the table shows both, so a surprising measurement stands out.
- **Interruptible**: Ctrl-C (or a notebook's interrupt) stops the sweep between runs and returns
  what was measured, marked incomplete.

Grid keys that name Config settings (`inter`/`intra` are short for the thread counts; TensorFlow's
names work too) configure sessions; the others are passed to `build(**params)`, called in a fresh
graph, which returns what to fetch as `pg.dashboard`'s build functions do (a Tensor, or a list,
tuple or dict of them), or a Preset, a (graph, fetch) pair or a Graph (then its sink ops are
fetched) — or `build` is a preset name ("two-networks", ...) and the other keys are its
`size`/`dtype`.

With `framework="tensorflow"` (or "pytorch", "onnxruntime", "jax", "numpy") the sweep measures
the user's own program instead: `build(setting)` returns the step to time, and every cell runs
in a worker process of its own with the framework's knobs set before it starts
(`parallelgraph.frameworks`). The result is the same SweepResult, with what each framework
reported it used (`read_back`) and `verify()` to measure explain()'s advice.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ALIASES, Config
from ..graph import Graph
from ..session import Session
from ..trace.model import Trace
from . import stats
from .machine_load import LoadMonitor, MachineLoad, dask_client_threads, load_note
from .measure import Planned, median_trace, run_schedule
from .number_text import number_text, range_places, range_text
from .preset_record import graph_and_fetches
from .progress import progress_bar

SHORT_NAMES = {"inter": "inter_op_threads", "intra": "intra_op_threads"}
CONFIG_KEYS = {f.name for f in fields(Config)}


def _config_key(key: str) -> str | None:
    name = SHORT_NAMES.get(key, ALIASES.get(key, key))
    return name if name in CONFIG_KEYS else None


@dataclass(frozen=True)
class SweepRun:
    """One run of one cell: which cell, in which round and at which position of that round's
    shuffled order, with the trace's makespan and the wall time around the run."""

    cell: int
    round: int
    position: int
    makespan_ms: float
    wall_ms: float


#: The statistics columns of `SweepResult.table()` and the per-run columns of `to_csv()`. A
#: grid key spelled like one of them keeps its values and is shown as "param:<key>"
#: (`param_columns`), so a column name always means one thing: "n" is the runs measured.
TABLE_COLUMNS = (
    "n",
    "median ms",
    "IQR ms",
    "95% CI ms",
    "speed-up (95% CI)",
    "verdict",
    "predicted ms",
)
#: In `to_csv`, a run's own columns come first, then its cell's summary (empty where a number
#: does not exist, such as the CI of too few runs).
CSV_COLUMNS = (
    "round",
    "position",
    "makespan_ms",
    "wall_ms",
    "cell_median_ms",
    "cell_ci_low_ms",
    "cell_ci_high_ms",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "verdict",
)


def param_columns(keys: Sequence[str], taken: Sequence[str]) -> list[str]:
    """The column names of grid keys beside the columns `taken`: the key itself, or "param:<key>"
    where it would collide with a statistic's column.

    >>> param_columns(["n", "inter"], TABLE_COLUMNS)
    ['param:n', 'inter']
    """
    return [f"param:{key}" if key in taken else key for key in keys]


@dataclass(frozen=True)
class SweepRow:
    """The summary of one cell: its grid values (`params`, exactly as the grid named them: a
    grid key called "n" or "verdict" stays the user's) and its statistics, in ms."""

    cell: int  # its index in `SweepResult.cells`
    params: dict[str, Any]
    n: int  # runs measured
    median_ms: float
    iqr_ms: tuple[float, float]
    ci_ms: tuple[float, float]  # 95% bootstrap interval of the median
    speedup: float  # against `SweepResult.baseline_of` this cell
    speedup_ci: tuple[float, float]
    verdict: str  # "baseline", "faster", "slower", "within noise", too few runs, "not applied"
    predicted_ms: float | None


@dataclass(repr=False)
class SweepResult:
    """Every measurement of a sweep, with tables and plots; see the module docstring."""

    grid: dict[str, list[Any]]
    cells: list[dict[str, Any]]
    measurements: list[SweepRun]
    baseline: int = 0
    complete: bool = True
    seed: int = 0
    noise: dict[str, Any] = field(default_factory=dict)
    predicted_ms: dict[int, float] = field(default_factory=dict)
    traces: dict[int, list[Trace]] = field(default_factory=dict, repr=False)
    #: The framework a framework sweep measured (None: parallelgraph's own engine).
    framework: str | None = None
    #: Per cell, what the framework reported it used, read back in the worker.
    read_back: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: What the sweep could not do and says beside its table (a setting that was not traced).
    notes: list[str] = field(default_factory=list)
    #: What else used the CPUs while the rounds ran (None where /proc cannot tell).
    machine: MachineLoad | None = None
    #: What `verify` needs to start workers again (framework sweeps; None once loaded).
    runner: Any = field(default=None, repr=False, compare=False)

    def is_knob(self, key: str) -> bool:
        """Whether grid key `key` is a setting (a Config field, or the framework's knob) rather
        than a parameter of the build function."""
        if self.framework is not None:
            from ..frameworks.knobs import framework

            return key in framework(self.framework).knobs
        return _config_key(key) is not None

    def split(self, cell: Mapping[str, Any]) -> tuple[tuple, dict[str, Any]]:
        """(the build's parameters as a key, the settings) of a cell."""
        graph = tuple(sorted((k, v) for k, v in cell.items() if not self.is_knob(k)))
        return graph, {k: v for k, v in cell.items() if self.is_knob(k)}

    # -- numbers --------------------------------------------------------------------------------
    def values_ms(self, cell: int) -> list[float]:
        """The makespans (ms) measured for cell index `cell`, in the order they ran."""
        return [m.makespan_ms for m in self.measurements if m.cell == cell]

    def rows(self) -> list[SweepRow]:
        """One summary row per cell (cells without measurements are left out)."""
        rng = np.random.default_rng(self.seed)
        rows = []
        for index, params in enumerate(self.cells):
            values = self.values_ms(index)
            if not values:
                continue
            base_index = self.baseline_of(index)
            base = self.values_ms(base_index)
            low, high = stats.bootstrap_median_ci(values, rng)
            q1, q3 = stats.quartiles(values)
            if base and index != base_index:
                speedup, s_low, s_high = stats.bootstrap_ratio_ci(base, values, rng)
                verdict = stats.verdict(s_low, s_high)
                if self.not_applied(index) or self.not_applied(base_index):
                    verdict = "not applied"  # the runs did not measure the setting
            else:
                speedup, s_low, s_high, verdict = 1.0, 1.0, 1.0, "baseline"
            rows.append(
                SweepRow(
                    cell=index,
                    params=dict(params),
                    n=len(values),
                    median_ms=stats.median(values),
                    iqr_ms=(q1, q3),
                    ci_ms=(low, high),
                    speedup=speedup,
                    speedup_ci=(s_low, s_high),
                    verdict=verdict,
                    predicted_ms=self.predicted_ms.get(index),
                )
            )
        return rows

    def not_applied(self, index: int) -> str:
        """The knobs of cell `index` its framework did not confirm ('inter=2 (not read back)'),
        or '' (see `frameworks.sweep.note_unapplied`)."""
        return str(self.read_back.get(index, {}).get("not_applied", ""))

    def baseline_of(self, index: int) -> int:
        """The cell a cell is compared with: the same graph parameters with the baseline's
        config settings (so sizes are never compared with each other), else the baseline."""
        graph, _ = self.split(self.cells[index])
        _, base_settings = self.split(self.cells[self.baseline])
        for candidate, cell in enumerate(self.cells):
            if self.split(cell) == (graph, base_settings):
                return candidate
        return self.baseline

    def median_trace(self, **params: Any) -> Trace:
        """The trace of the median run (`measure.median_trace`) of the cell matching `params`."""
        index = self._cell_index(params)
        traces = self.traces.get(index, [])
        if not traces:
            raise ValueError(
                f"no traces kept for cell {self.cells[index]} (loaded results keep none)"
            )
        return median_trace(traces)

    def _cell_index(self, params: Mapping[str, Any]) -> int:
        matches = [
            i
            for i, cell in enumerate(self.cells)
            if all(cell.get(k) == v for k, v in params.items())
        ]
        if len(matches) != 1:
            raise ValueError(
                f"{params} matches {len(matches)} cells; name one cell of {self.cells}"
            )
        return matches[0]

    # -- text -----------------------------------------------------------------------------------
    def table(self) -> tuple[list[str], list[list[str]]]:
        """(header, lines): a column per grid key (named by `param_columns`), then
        TABLE_COLUMNS; one line per measured cell, as text."""
        keys = list(self.grid)
        header = [*param_columns(keys, TABLE_COLUMNS), *TABLE_COLUMNS]
        lines = []
        for row in self.rows():
            lines.append(
                [
                    *(str(row.params[k]) for k in keys),
                    str(row.n),
                    number_text(row.median_ms, at_least=range_places(*row.ci_ms)),
                    range_text(*row.iqr_ms),
                    range_text(*row.ci_ms),
                    f"{number_text(row.speedup)} ({range_text(*row.speedup_ci)})",
                    row.verdict,
                    "-" if row.predicted_ms is None else number_text(row.predicted_ms),
                ]
            )
        return header, lines

    def __str__(self) -> str:
        header, lines = self.table()
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
        text = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
        text += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
        text.append(self._legend() + ("" if self.complete else "; INCOMPLETE (interrupted)"))
        text.extend(self.warnings())
        return "\n".join(text)

    def warnings(self) -> list[str]:
        """What could change the conclusions: a noisy baseline, what could not be done, a busy
        machine."""
        found = [self.noise["warning"]] if self.noise.get("warning") else []
        found += self.notes
        said = load_note(self.machine)
        return [*found, said] if said else found

    def __repr__(self) -> str:
        state = "complete" if self.complete else "interrupted"
        return (
            f"<SweepResult {len(self.cells)} cells, {len(self.measurements)} measurements, "
            f"{state}>\n{self}"
        )

    def _legend(self) -> str:
        base = self.cells[self.baseline]
        settings = ", ".join(f"{k}={v}" for k, v in base.items() if self.is_knob(k))
        return (
            f"speed-up against {settings or 'the first cell'} on the same graph; a verdict is "
            "given only when its 95% CI excludes 1.0"
        )

    def _repr_html_(self) -> str:
        import html

        header, lines = self.table()
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in line) + "</tr>" for line in lines
        )
        note = f"<p>{html.escape(self._legend())}</p>"
        note += "" if self.complete else "<p><b>Incomplete: interrupted.</b></p>"
        note += "".join(f"<p>{html.escape(line)}</p>" for line in self.warnings())
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"

    # -- files ----------------------------------------------------------------------------------
    def to_document(self) -> dict[str, Any]:
        """Everything but the traces, as JSON-ready values, with each cell's summary beside the
        measurements (`sweep_files.document`; `to_json` writes it)."""
        from .sweep_files import document

        return document(self)

    def to_json(self, path: str | Path) -> Path:
        """Write `to_document()` as JSON to `path` (see `sweep_files`: atomic for a regular
        file, a FIFO streamed, every error naming the path); returns it as a Path."""
        from .sweep_files import write_json

        return write_json(self, path)

    @classmethod
    def load(cls, path: str | Path) -> SweepResult:
        """Read a result written by `to_json`, now or by an older version (traces are not
        stored, so none come back); a ValueError starting with the path for a damaged file."""
        from .sweep_files import read_document

        document, source = read_document(path)
        return cls.from_document(document, source)

    @classmethod
    def from_document(cls, document: Mapping[str, Any], source: str = "sweep") -> SweepResult:
        """The result `to_document` described, every field checked (`sweep_files`); a
        ValueError starting with `source` says what is wrong."""
        from .sweep_files import result_fields

        found = result_fields(document, source)
        found["measurements"] = [SweepRun(**m) for m in found["measurements"]]
        return cls(**found)

    def to_csv(self, path: str | Path) -> Path:
        """Every measurement, one row each, with its cell's parameters (columns named by
        `param_columns`), then CSV_COLUMNS: the run's numbers, then its cell's median, CI,
        speed-up and verdict; written as `to_json` is."""
        from .sweep_files import write_csv

        return write_csv(self, path)

    # -- pictures -------------------------------------------------------------------------------
    def heatmap(self, x: str = "inter", y: str = "intra", **fixed: Any) -> Any:
        from ..plot.sweeps import heatmap

        return heatmap(self, x, y, **fixed)

    def speedup_curve(self, x: str, hue: str | None = None, **fixed: Any) -> Any:
        from ..plot.sweeps import speedup_curve

        return speedup_curve(self, x, hue, **fixed)

    def gantt(self, **params: Any) -> Any:
        """The Gantt chart of the median run of one cell."""
        return self.median_trace(**params).plot()

    # -- framework sweeps -----------------------------------------------------------------------
    def explain(self, **params: Any) -> Any:
        """explain() of the median traced run of the cell matching `params`, the baseline by
        default (a framework sweep with trace=True keeps one profiled step per cell)."""
        return self.median_trace(**(params or self.cells[self.baseline])).explain()

    def verify(self, advice: Any = None, repeats: int | None = None, **params: Any) -> Any:
        """Measure explain()'s advice on a framework sweep: the cell matching `params` (the
        baseline by default) against the setting the advice asks for, in fresh workers,
        interleaved; see `parallelgraph.frameworks.verify`. `advice`: an Advice, an
        explain() report, a setting such as {"intra": 2}, or None (explain the cell's trace)."""
        from ..frameworks.verify import verify

        index = self._cell_index(params) if params else self.baseline
        return verify(self, index, advice, repeats)


def _builder(build: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(build):
        return build
    from .presets import build_preset

    return lambda **params: build_preset(build, **params)


def sweep(
    build: str | Callable[..., Any],
    grid: Mapping[str, Sequence[Any]] | None = None,
    repeats: int = 10,
    warmup: int = 1,
    seed: int = 0,
    baseline: Mapping[str, Any] | None = None,
    precision: float = 0.05,
    noise_check: bool = True,
    predict: bool = True,
    progress: bool = True,
    framework: str | None = None,
    trace: bool = False,
    **grid_values: Sequence[Any],
) -> SweepResult:
    """Measure every cell of `grid` `repeats` times, interleaved (see the module docstring).
    Grid values may also be given as keywords (`inter=[1, 2]`), merged into `grid`; a key given
    both ways (or one Config setting under two names) is refused, never dropped.

    >>> result = pg.sweep("two-networks", {"size": ["small"], "inter": [1, 2], "intra": [1, 2]},
    ...                   repeats=20)                                     # doctest: +SKIP
    >>> print(result); result.heatmap()                                  # doctest: +SKIP
    >>> pg.sweep(build, framework="pytorch", inter=[1, 2], intra=[1, 2])  # doctest: +SKIP
    """
    grid = merged_grid(grid, grid_values)
    if framework is not None:
        from ..frameworks.sweep import framework_sweep

        return framework_sweep(
            build, framework, grid, repeats=repeats, warmup=warmup, seed=seed,
            baseline=baseline, precision=precision, noise_check=noise_check, trace=trace,
            predict=predict, progress=progress,
        )  # fmt: skip
    if trace:
        raise ValueError("sweep(trace=True) is for framework sweeps: every run here is traced")
    grid = checked_grid(build, grid, repeats, warmup, seed, precision)
    _one_name_per_setting(grid)
    cells = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    base_index = 0
    if baseline:
        base_index = SweepResult(grid, cells, [])._cell_index(baseline)
    result = SweepResult(grid, cells, [], baseline=base_index, seed=seed)
    sessions = _open_sessions(_builder(build), cells)
    try:
        warmups = [Planned(i, *pair, traced=False) for i, pair in enumerate(sessions)] * warmup
        run_schedule(warmups, lambda *_: None, keep_interrupted=False)
        if noise_check:
            result.noise = _noise_check(sessions[base_index], repeats, precision)
            if result.noise.get("warning"):
                warnings.warn(result.noise["warning"], RuntimeWarning, stacklevel=2)
        with LoadMonitor(own_threads=dask_client_threads) as monitor:  # a dask cell's Client
            result.complete = _measure_rounds(sessions, result, repeats, seed, progress)
        result.machine = monitor.load
    finally:
        for session, _ in sessions:
            session.close()
    if predict:
        _predict(result)
    return result


#: The most cells a sweep may have: each holds a session (its threads) for the whole sweep.
MAX_CELLS = 1024
#: What a preset's build takes besides the Config keys (see `presets.build_preset`).
PRESET_PARAMETERS = ("size", "dtype", "device_name")


def merged_grid(grid: Any, keywords: Mapping[str, Any]) -> Any:
    """`grid` with the values given as keywords added; a ValueError naming a key given both in
    the grid and as a keyword (one of the two would be dropped). A `grid` that is no mapping
    comes back as it is, for `checked_grid` to refuse."""
    if grid is not None and not isinstance(grid, Mapping):
        return grid
    grid = dict(grid or {})
    twice = [key for key in grid if key in keywords]
    if twice:
        key = twice[0]
        raise ValueError(
            f"sweep: grid key {key!r} is given twice, in the grid ({key!r}: "
            f"{grid[key]!r:.40}) and as the keyword {key}={keywords[key]!r:.40}; give it once"
        )
    return {**grid, **keywords}


def _one_name_per_setting(grid: Mapping[str, Any]) -> None:
    """A ValueError when two grid keys name one Config setting ("inter" and
    "inter_op_threads"): a session takes one value, so the other key's would be dropped."""
    named: dict[str, str] = {}
    for key in grid:
        setting = _config_key(key)
        if setting is not None and setting in named:
            raise ValueError(
                f"sweep: grid keys {named[setting]!r} and {key!r} both set the Config setting "
                f"{setting!r}; give it once"
            )
        if setting is not None:
            named[setting] = key


def _arguments() -> list[str]:
    """The arguments of `sweep` that are not grid keys (what a typo'd keyword may have meant)."""
    skipped = {"build", "grid", "grid_values"}
    return [name for name in inspect.signature(sweep).parameters if name not in skipped]


def _did_you_mean(key: str, names: Sequence[str]) -> str | None:
    """The name in `names` closest to `key` (a likely typo), or None."""
    close = difflib.get_close_matches(key, names, n=1)
    return close[0] if close else None


def _whole(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"sweep({name}={value!r}): need {name} >= {minimum}, a whole number")


def checked_grid(
    build: Any, grid: Any, repeats: Any, warmup: Any, seed: Any, precision: Any
) -> dict[str, list[Any]]:
    """The grid as lists, or a ValueError/TypeError naming the argument that is wrong."""
    _whole("repeats", repeats, 1)
    _whole("warmup", warmup, 0)
    _whole("seed", seed, 0)
    if not isinstance(precision, (int, float)) or not 0 < precision < 1:
        raise ValueError(f"sweep(precision={precision!r}): a fraction between 0 and 1 (0.05)")
    if not isinstance(grid, Mapping):
        raise TypeError(f"sweep's grid maps names to lists of values, got {type(grid).__name__}")
    checked: dict[str, list[Any]] = {}
    for key, values in grid.items():
        if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
            meant = _did_you_mean(key, _arguments())
            if meant is not None:  # repeat=5: a typo of an argument, not a grid key
                raise TypeError(
                    f"sweep() has no argument {key!r}; did you mean {meant}={values!r:.40}? "
                    f"(a grid key takes a list of values: {key}=[...])"
                )
            raise TypeError(f"grid[{key!r}] must be a list of values, got {values!r:.60}")
        if not values:
            raise ValueError(f"grid[{key!r}] is empty")
        if isinstance(build, str) and _config_key(key) is None and key not in PRESET_PARAMETERS:
            known = sorted({*SHORT_NAMES, *CONFIG_KEYS, *PRESET_PARAMETERS})
            meant = _did_you_mean(key, [*known, *_arguments()])
            hint = f"; did you mean {meant!r}?" if meant else ""
            raise ValueError(
                f"grid key {key!r} is no preset parameter or Config setting{hint} (grid keys: "
                f"{known}; sweep's own arguments: {_arguments()})"
            )
        checked[key] = list(values)
    cells = int(np.prod([len(v) for v in checked.values()], dtype=object))
    if cells > MAX_CELLS:
        raise ValueError(
            f"the grid has {cells:,} cells, more than {MAX_CELLS:,} (each holds a session "
            "for the whole sweep): sweep fewer values at a time"
        )
    return checked


def _open_sessions(
    build: Callable[..., Any], cells: list[dict[str, Any]]
) -> list[tuple[Session, Any]]:
    graphs: dict[tuple, tuple[Graph, Any]] = {}
    sessions = []
    try:
        for cell in cells:
            graph_params = {k: v for k, v in cell.items() if _config_key(k) is None}
            settings = {_config_key(k): v for k, v in cell.items() if _config_key(k) is not None}
            key = tuple(sorted(graph_params.items()))
            if key not in graphs:
                with Graph("sweep").as_default():  # a build that returns tensors builds here
                    graphs[key] = graph_and_fetches(build(**graph_params))
            graph, fetch = graphs[key]
            sessions.append((Session(graph, Config(**settings)), fetch))
    except BaseException:
        for session, _ in sessions:
            session.close()
        raise
    return sessions


def _noise_check(session_fetch: tuple[Session, Any], repeats: int, precision: float) -> dict:
    samples: list[float] = []
    run_schedule(
        [Planned("noise", *session_fetch)] * 5,
        lambda planned, trace, wall_ms: samples.append(trace.makespan_ms),
        keep_interrupted=False,
    )
    return noise_summary(samples, repeats, precision)


def noise_summary(samples: Sequence[float], repeats: int, precision: float) -> dict[str, Any]:
    """The noise check's record from a few runs of the baseline: their spread, the repeats a
    +-`precision` CI of a median needs, and a warning when that is more than `repeats`."""
    needed = stats.repeats_for_precision(samples, precision)
    noise = {
        "relative_iqr": stats.relative_iqr(samples),
        "repeats_needed": needed,
        "precision": precision,
    }
    if needed > repeats:
        noise["warning"] = (
            f"noisy machine: the baseline's runs spread {noise['relative_iqr']:.0%} (IQR/median); "
            f"a +-{precision:.0%} CI of a median needs about {needed} repeats, not {repeats}"
        )
    return noise


def _measure_rounds(
    sessions: list[tuple[Session, Any]],
    result: SweepResult,
    repeats: int,
    seed: int,
    progress: bool,
) -> bool:
    """Shuffled interleaved rounds through the shared measured-run loop
    (`measure.run_schedule`); False if interrupted (what was measured is kept)."""
    rng = np.random.default_rng(seed)
    schedule = [
        Planned((round_index, position, int(cell)), *sessions[cell])
        for round_index in range(repeats)
        for position, cell in enumerate(rng.permutation(len(sessions)))
    ]
    bar = progress_bar(len(schedule), progress)

    def keep(planned: Planned, trace: Trace | None, wall_ms: float) -> None:
        round_index, position, cell = planned.key
        assert trace is not None
        result.measurements.append(
            SweepRun(cell, round_index, position, trace.makespan_ms, wall_ms)
        )
        result.traces.setdefault(cell, []).append(trace)
        if bar is not None:
            bar.update(1)

    try:
        return run_schedule(schedule, keep) == "done"
    finally:
        if bar is not None:
            bar.close()


def _predict(result: SweepResult) -> None:
    """Predicted makespan of each cell: the median trace of the cell with the same graph and
    the baseline's config, replayed (`simulate`) under the cell's config."""
    from ..trace.replay import simulate

    _, base_settings = result.split(result.cells[result.baseline])
    references: dict[tuple, Trace] = {}
    for index, cell in enumerate(result.cells):
        graph, settings = result.split(cell)
        traces = result.traces.get(index)
        if settings == base_settings and traces:
            references[graph] = median_trace(traces)
    for index, cell in enumerate(result.cells):
        graph, settings = result.split(cell)
        if graph not in references:
            continue
        config = Config(**{_config_key(k): v for k, v in settings.items()})
        try:
            result.predicted_ms[index] = simulate(references[graph], config).makespan_ms
        except ValueError:
            return  # e.g. GPU traces: not simulated


__all__ = ["SweepResult", "SweepRow", "SweepRun", "param_columns", "sweep"]
