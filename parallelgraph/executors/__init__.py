"""Executors run a Plan. One interface, several ways to schedule it:

- `sequential` (the reference) and `threads` (inter-op and intra-op pools): `cpu.py`, around the
  one scheduling loop of `scheduler.py`; GPU steps of their plans go through `cuda.py`;
- `dask` (tasks on a `dask.distributed` cluster): the `dask/` package, the executor in its
  `__init__` and its parts beside it (`worker`, `chains`, `clocks`, `connect`, `failures`),
  imported only when asked for.

Every executor runs a step with `step.execute_step` (so outputs are bit-identical), owns the
threads or cluster it started and releases them in `close()`, and serves one run at a time (the
Session serializes runs). `make_executor(config)` is the one place that picks one, by the
executor's record in `registry.py` (its capabilities too: other stages ask those, never names).

This package's `__init__` imports nothing of ours at module level, so `config.py` can read
`executors.registry` without a cycle; the executor classes load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .registry import EXECUTOR_NAMES, ExecutorSpec, executor_spec

if TYPE_CHECKING:
    from ..config import Config
    from ..plan import Plan, Step
    from .cpu import SequentialExecutor, ThreadsExecutor


class RunOutcome(Protocol):
    """What `Executor.run` returns: `failure` is None, or (step, exception) for the first step
    that raised, or (None, exception) when the run was stopped from outside (an interrupt)."""

    failure: tuple[Step | None, BaseException] | None


class Executor(Protocol):
    """Runs plans: fills `values[slot]` for every fetch slot of `plan`, reading the sources'
    slots, and records trace events through `record` (None: no tracing). Not re-entrant."""

    name: str

    def run(self, plan: Plan, values: list[Any], record: Any) -> RunOutcome: ...

    def close(self) -> None:
        """Release every thread, pool or cluster this executor started. Idempotent."""
        ...


def make_executor(config: Config) -> Executor:
    """The executor named by `config.executor` (thread counts already resolved); its module
    is imported now, so dask.distributed only when a dask executor is asked for."""
    return executor_spec(config.executor).create(config)


def __getattr__(name: str) -> Any:
    # The CPU executors, importable from here as before, load on first use (see the docstring).
    if name in ("SequentialExecutor", "ThreadsExecutor"):
        from . import cpu

        return getattr(cpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXECUTOR_NAMES",
    "Executor",
    "ExecutorSpec",
    "RunOutcome",
    "SequentialExecutor",
    "ThreadsExecutor",
    "executor_spec",
    "make_executor",
]
