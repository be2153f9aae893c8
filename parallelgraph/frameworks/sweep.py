"""Sweep a framework's thread settings: one warm worker process per setting, rounds interleaved.

`framework_sweep` is what `pg.sweep(build, framework=..., inter=[...], ...)` runs. The steps,
each against a way such measurements go wrong by hand:

- **A fresh process per setting** (`pool.Worker`), its knobs set before the framework starts —
  TensorFlow's and PyTorch's pools cannot be changed once made, JAX's flags are read at import.
- **Checked before anything starts**: the grid's knob values, the build function (it must
  pickle: `travel` sends a notebook's function by value, with its source), the cell count.
- **Warm**: every worker calls `step()` `warmup` times before anything is timed (graph tracing,
  JIT compiles, allocator growth).
- **Interleaved, shuffled rounds** as in `pg.sweep`: round r times every setting once before
  round r + 1, so a slow phase of a shared machine hits every setting alike. Only one worker
  runs at a time; the others wait in a blocking read and use no CPU. After a worker's turn a
  short pause (`SETTLE_S`) lets its pool threads stop spinning (ONNX Runtime's, OpenMP's and
  Eigen's idle threads spin for a while before they sleep), so they do not slow the next.
- **Timed inside the worker**: `perf_counter_ns` around `step()` and nothing else, so a
  measurement costs the step what a bare loop costs it (benchmarks/framework_sweep.py).
- **Read back**: each worker reports the threads the framework says it uses; the result keeps
  them (`SweepResult.read_back`). A setting the framework did not confirm — not read back (a
  NumPy build that made no `setting.pool()`, an ONNX Runtime build that made its own session)
  or reported otherwise — is marked "not applied": said beside the table, and given no
  verdict, since its runs measured the framework's defaults.
- **Traced with the framework's profiler** (`trace=True`): after the rounds, one step per
  setting is profiled, loaded with `Trace.load`, kept in `result.traces` and explained in the
  framework's words; the replay of the baseline's trace predicts each setting (`predicted ms`).
- **Every ending ends the workers**: done, Ctrl-C (what was measured is kept, marked
  incomplete), a failure in the user's code (raised as FrameworkError naming the setting, with
  the worker's traceback), a worker that died (WorkerLost).
"""

from __future__ import annotations

import itertools
import shutil
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import MAX_THREADS, Config, cpu_count
from ..experiments import stats
from ..experiments.machine_load import LoadMonitor
from ..experiments.progress import progress_bar
from ..experiments.sweeps import (
    MAX_CELLS,
    SweepResult,
    SweepRun,
    checked_grid,
    noise_summary,
)
from ..trace.model import Trace
from .knobs import PROFILE_PREFIX, Framework, Setting, framework, unapplied_text
from .pool import FrameworkError, Stopped, Worker, Workers
from .travel import pack as pickled_build

#: Pause after a worker's turn before the next one starts (see the module docstring).
SETTLE_S = 0.02
#: Framework sweeps hold a process per cell (a framework import is 100-500 MB each).
MAX_FRAMEWORK_CELLS = 32
#: Runs of the baseline setting for the noise check.
NOISE_RUNS = 5
_WHOLE_KNOBS = ("inter", "intra", "cores", "blas", "devices")


def label_of(framework_: Framework, cell: Mapping[str, Any]) -> str:
    """'PyTorch inter=2 intra=1 batch=8': how errors and notes name a setting."""
    return " ".join([framework_.title, *(f"{k}={v}" for k, v in cell.items())])


#: The frameworks' own names of the two knobs: a grid key spelled so is the knob, misnamed.
KNOB_SPELLINGS = {
    **dict.fromkeys(
        ("inter_op_threads", "inter_op_parallelism_threads", "inter_op_num_threads",
         "num_interop_threads", "interop_threads"), "inter",
    ),
    **dict.fromkeys(
        ("intra_op_threads", "intra_op_parallelism_threads", "intra_op_num_threads",
         "num_threads", "intraop_threads"), "intra",
    ),
}  # fmt: skip


#: What `build(setting)` finds on its Setting besides the grid's values: a grid key so named
#: would be hidden behind it (`setting.profiling` is the profiler's folder, not the grid's value).
SETTING_ATTRIBUTES = frozenset(
    name for name in (*dir(Setting), "framework", "profiling") if not name.startswith("_")
)


def check_knobs(framework_: Framework, cells: Sequence[Mapping[str, Any]]) -> None:
    """Every knob value of every cell is one the framework takes; a ValueError naming it."""
    for key in cells[0] if cells else ():
        if key in SETTING_ATTRIBUTES:
            raise ValueError(
                f"grid key {key!r} is the name of the Setting's own {key!r}, which build(setting) "
                f"would see instead of the grid's values: name it otherwise (the Setting's "
                f"names: {', '.join(sorted(SETTING_ATTRIBUTES))})"
            )
        if key in KNOB_SPELLINGS:
            raise ValueError(
                f"grid key {key!r} is {framework_.title}'s knob {KNOB_SPELLINGS[key]!r} under "
                f"another name: write {KNOB_SPELLINGS[key]}=[...] (its knobs: "
                f"{', '.join(framework_.knobs)}; other keys go to build as parameters)"
            )
    for cell in cells:
        for key in _WHOLE_KNOBS:
            value = cell.get(key)
            if (
                key in cell
                and value is not None
                and (
                    isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1
                )
            ):
                raise ValueError(
                    f"{label_of(framework_, cell)}: {key}={value!r} must be a whole number >= 1 "
                    "(or None for the framework's default)"
                )
            if key != "cores" and key in cell and value is not None and value > MAX_THREADS:
                raise ValueError(
                    f"{label_of(framework_, cell)}: {key}={value} is over {MAX_THREADS}, the most "
                    f"parallelgraph sets anywhere (this machine has {cpu_count()} cores): a "
                    f"framework asked for that many threads crashes or never finishes starting"
                )
        if cell.get("cores") is not None and cell["cores"] > cpu_count():
            raise ValueError(
                f"{label_of(framework_, cell)}: cores={cell['cores']} but this machine lets "
                f"the process use {cpu_count()}"
            )
        for key, allowed in framework_.choices.items():
            if cell.get(key) is not None and cell[key] not in allowed:
                raise ValueError(
                    f"{label_of(framework_, cell)}: {key}={cell[key]!r}, one of {list(allowed)}"
                )
        refused = framework_.check(cell)
        if refused:
            raise ValueError(f"{label_of(framework_, cell)}: {refused}")


def setup_request(
    framework_: Framework,
    knobs: Mapping[str, Any],
    params: Mapping[str, Any],
    build: bytes,
    warmup: int,
) -> dict[str, Any]:
    """The "setup" request of the worker protocol (`worker`)."""
    return {
        "framework": framework_.name,
        "setting": dict(knobs),
        "params": dict(params),
        "build": build,
        "warmup": warmup,
    }


@dataclass
class Runner:
    """Everything needed to start a worker for any setting of one sweep (kept by the result,
    so that `verify` can start new ones)."""

    framework: Framework
    build: bytes
    warmup: int
    steps: int = 1
    settle_s: float = SETTLE_S
    repeats: int = 10
    seed: int = 0
    #: pids of workers alive now (a test checks that none is left)
    live: list[int] = field(default_factory=list)

    def start(
        self, workers: Workers, cells: Sequence[Mapping[str, Any]], is_knob: Callable[[str], bool]
    ) -> list[tuple[Worker, dict[str, Any]]]:
        """A worker per cell, set up (all start together, then each is waited for); returns
        (worker, what the setup replied) per cell."""
        started = []
        for cell in cells:
            knobs = {k: v for k, v in cell.items() if is_knob(k)}
            params = {k: v for k, v in cell.items() if not is_knob(k)}
            worker = workers.start(self.framework, knobs, label_of(self.framework, cell))
            worker.send(
                "setup", setup_request(self.framework, knobs, params, self.build, self.warmup)
            )
            started.append(worker)
        return [(worker, worker.receive()) for worker in started]

    def measure(
        self,
        workers: Sequence[Worker],
        repeats: int,
        keep: Callable[[SweepRun], None],
        stopped: Callable[[], bool] = lambda: False,
        progress: Any = None,
    ) -> bool:
        """Shuffled interleaved rounds over `workers` (index = cell); each measurement is the
        mean of `steps` back-to-back steps. False when interrupted or stopped (what was
        measured is kept)."""
        rng = np.random.default_rng(self.seed)
        last = None
        try:
            for round_index in range(repeats):
                for position, cell in enumerate(rng.permutation(len(workers))):
                    if stopped():
                        return False
                    if last is not None and last != cell and self.settle_s:
                        time.sleep(self.settle_s)
                    started = time.perf_counter_ns()
                    times = workers[cell].ask("time", stopped, steps=self.steps)
                    wall_ms = (time.perf_counter_ns() - started) / 1e6
                    keep(
                        SweepRun(
                            int(cell), round_index, position, float(np.mean(times)) / 1e6, wall_ms
                        )
                    )
                    last = cell
                    if progress is not None:
                        progress.update(1)
        except (KeyboardInterrupt, Stopped):
            return False
        return True


def framework_sweep(
    build: Callable[..., Any],
    framework_name: str,
    grid: Mapping[str, Sequence[Any]],
    repeats: int = 10,
    warmup: int = 1,
    seed: int = 0,
    baseline: Mapping[str, Any] | None = None,
    precision: float = 0.05,
    noise_check: bool = True,
    trace: bool = False,
    predict: bool = True,
    progress: bool = True,
    steps: int = 1,
    settle_s: float = SETTLE_S,
    stopped: Callable[[], bool] = lambda: False,
) -> SweepResult:
    """Measure `build`'s step under every cell of `grid` (see the module docstring)."""
    chosen = framework(framework_name)
    grid = checked_grid(build, grid, repeats, warmup, seed, precision)
    cells = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    if len(cells) > min(MAX_CELLS, MAX_FRAMEWORK_CELLS):
        raise ValueError(
            f"the grid has {len(cells)} cells, more than {MAX_FRAMEWORK_CELLS} (each is a "
            f"{chosen.title} process for the whole sweep): sweep fewer values at a time"
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"sweep(steps={steps!r}): need a whole number >= 1")
    check_knobs(chosen, cells)
    runner = Runner(chosen, pickled_build(build), warmup, steps, settle_s, repeats, seed)
    result = SweepResult(grid, cells, [], seed=seed, framework=chosen.name, runner=runner)
    if baseline:
        result.baseline = result._cell_index(baseline)
    with Workers() as workers:
        started = runner.start(workers, cells, result.is_knob)
        runner.live = workers.pids()
        result.read_back = {i: reply["read_back"] for i, (_, reply) in enumerate(started)}
        note_unapplied(result)
        ordered = [worker for worker, _ in started]
        if noise_check:
            base = ordered[result.baseline]
            samples = [t / 1e6 for t in base.ask("time", stopped, steps=NOISE_RUNS * steps)]
            samples = [
                float(np.mean(samples[i : i + steps])) for i in range(0, len(samples), steps)
            ]
            result.noise = noise_summary(samples, repeats, precision)
            if result.noise.get("warning"):
                warnings.warn(result.noise["warning"], RuntimeWarning, stacklevel=3)
        bar = progress_bar(len(cells) * repeats, progress)
        try:
            with LoadMonitor(own_pids=workers.pids) as monitor:
                result.complete = runner.measure(
                    ordered, repeats, result.measurements.append, stopped, bar
                )
            result.machine = monitor.load
        finally:
            if bar is not None:
                bar.close()
        if trace and result.complete:
            result.traces = traced(ordered, result.notes)
    runner.live = []
    if trace and result.complete and predict:
        predict_from_traces(result)
    return result


def note_unapplied(result: SweepResult) -> None:
    """Mark each cell whose knobs the framework did not confirm (`knobs.unapplied`) in its
    read-back, which keeps it out of the verdicts, and say so beside the table."""
    chosen = framework(result.framework or "")
    for index, cell in enumerate(result.cells):
        _, knobs = result.split(cell)
        read_back = result.read_back.get(index, {})
        missing = unapplied_text(knobs, read_back)
        if missing:
            read_back["not_applied"] = missing
            result.notes.append(
                f"not applied: {label_of(chosen, cell)}: {missing}; the framework did not "
                "confirm the setting, so its runs did not measure it (no verdict)"
            )


def traced(workers: Sequence[Worker], notes: list[str]) -> dict[int, list[Trace]]:
    """One profiled step per worker, loaded (the profiler's folder removed afterwards). A
    setting whose step cannot be traced (no profiler installed, a profiler that failed) gets
    a note instead: the measurements stand without it."""
    traces = {}
    for index, worker in enumerate(workers):
        try:
            path = Path(worker.ask("trace"))
        except FrameworkError as failed:
            notes.append(f"not traced: {failed.label}: {failed.remote_type}: {failed.message}")
            continue
        try:
            traces[index] = [Trace.load(path)]
        finally:
            folders = [p for p in path.parents if p.name.startswith(PROFILE_PREFIX)]
            shutil.rmtree(folders[0] if folders else path, ignore_errors=True)
    return traces


def replay_config(knobs: Mapping[str, Any], read_back: Mapping[str, Any]) -> Config:
    """The Config the replay models a setting with: its inter and intra (what the framework
    read back where the sweep left them to it)."""

    def count(key: str) -> int:
        for value in (knobs.get(key), read_back.get(key)):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                return value
        return 1

    return Config(inter_op_threads=count("inter"), intra_op_threads=count("intra"))


def predicted_ratio(trace: Trace, before: Config, after: Config) -> float | None:
    """Replayed makespan under `after` over that under `before` (None where the replay
    cannot model the trace)."""
    from ..trace.replay import simulate

    try:
        return simulate(trace, after).makespan_ms / simulate(trace, before).makespan_ms
    except (ValueError, ZeroDivisionError):
        return None


def predict_from_traces(result: SweepResult) -> None:
    """Each cell's predicted time: the baseline-setting cell's measured median times the
    replay's ratio (this setting over the baseline's) on that cell's trace. Measured and
    replayed times differ by the profiler's overhead; their ratio does not carry it."""
    for index, cell in enumerate(result.cells):
        base = result.baseline_of(index)
        traces, values = result.traces.get(base), result.values_ms(base)
        if not traces or not values:
            continue
        _, base_knobs = result.split(result.cells[base])
        _, knobs = result.split(cell)
        ratio = predicted_ratio(
            traces[0],
            replay_config(base_knobs, result.read_back.get(base, {})),
            replay_config(knobs, result.read_back.get(index, {})),
        )
        if ratio is not None:
            result.predicted_ms[index] = stats.median(values) * ratio
