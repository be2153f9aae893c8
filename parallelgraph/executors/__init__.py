"""Executors run a Plan. One interface, several ways to schedule it:

- `sequential` (the reference) and `threads` (inter-op and intra-op pools): `cpu.py`, around the
  one scheduling loop of `scheduler.py`; GPU steps of their plans go through `cuda.py`;
- `dask` (tasks on a `dask.distributed` cluster): the `dask/` package, the executor in its
  `__init__` and its parts beside it (`worker`, `chains`, `clocks`, `connect`, `failures`),
  imported only when asked for.

Every executor runs a step with `step.execute_step` (so outputs are bit-identical), owns the
threads or cluster it started and releases them in `close()`, and serves one run at a time (the
Session serializes runs). `make_executor(config)` is the one place that picks one.
"""

from __future__ import annotations

from typing import Any, Protocol

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
    """The executor named by `config.executor` (thread counts already resolved)."""
    if config.executor == "sequential":
        return SequentialExecutor(config)
    if config.executor == "dask":
        from .dask import DaskExecutor  # imports dask.distributed only when asked for

        return DaskExecutor(config)
    return ThreadsExecutor(config)


__all__ = [
    "Executor",
    "RunOutcome",
    "SequentialExecutor",
    "ThreadsExecutor",
    "make_executor",
]
