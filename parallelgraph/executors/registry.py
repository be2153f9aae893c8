"""The executor registry: every executor once, with what it can do.

Code outside `executors/` never branches on an executor's *name*: it looks the name up here and
asks the record (`spec.runs_gpu_steps`, `spec.fuses_chains`, ...). Adding an executor is its
module and one `ExecutorSpec` in `REGISTRY`; the planner, the session, explain, the plots, the
dashboard and the CLI follow from the capabilities, and `Config` and the CLI's `--executor`
choices from `EXECUTOR_NAMES`.

This module is a leaf: it imports nothing from parallelgraph at module level (the factory is a
dotted path imported on `create`), so `config.py` and trace analysis may read it without
importing the planner, the op registry or dask.

>>> executor_spec("dask").fuses_chains, executor_spec("sequential").has_thread_pools
(True, False)
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExecutorSpec:
    """One executor: its name (the `Config.executor` value), a label for menus, what it can
    do, and where its class lives.

    Capabilities (each a question another stage asks):
    - `runs_gpu_steps`: GPU-placed ops run on gpu:0 when one is usable (otherwise the planner
      soft-places them on cpu:0 and says why);
    - `cpu_only`: the CPU reference: every GPU-placed op runs on cpu:0, whatever
      `soft_placement` says (the planner notes it, it never refuses the graph for it);
    - `has_thread_pools`: `inter_op_threads` / `intra_op_threads` change how it runs (the
      sequential reference ignores them);
    - `pins_workers`: "worker:N" devices and `Config.dask_placement` pin ops to workers;
    - `fuses_chains`: it already runs a chain of ops as one task, so the planner does not fuse
      epilogues for it;
    - `distributed`: steps run in other processes (values travel, clocks are the workers');
    - `needs`: a module that must be importable for it to work ("distributed"), or None.
    """

    name: str
    label: str
    factory: str  # "package.module:Class", imported on `create`
    runs_gpu_steps: bool = False
    cpu_only: bool = False
    has_thread_pools: bool = True
    pins_workers: bool = False
    fuses_chains: bool = False
    distributed: bool = False
    needs: str | None = None
    #: How explain() names what hands ready ops to workers ("the Dask scheduler").
    scheduler: str = "the scheduler"

    def usable(self) -> bool:
        """Whether this executor can be made here (its `needs` is importable)."""
        return self.needs is None or importlib.util.find_spec(self.needs) is not None

    def create(self, config: Any) -> Any:
        """A new executor for `config` (thread counts already resolved); imports its module
        only now, so dask is imported only when a dask executor is made."""
        module, _, cls = self.factory.partition(":")
        return getattr(importlib.import_module(module), cls)(config)


REGISTRY: dict[str, ExecutorSpec] = {
    spec.name: spec
    for spec in (
        ExecutorSpec(
            "sequential",
            "sequential (the reference, CPU only)",
            "parallelgraph.executors.cpu:SequentialExecutor",
            cpu_only=True,
            has_thread_pools=False,
        ),
        ExecutorSpec(
            "threads",
            "threads (inter-op and intra-op pools)",
            "parallelgraph.executors.cpu:ThreadsExecutor",
            runs_gpu_steps=True,
        ),
        ExecutorSpec(
            "dask",
            "dask (tasks on a dask.distributed cluster)",
            "parallelgraph.executors.dask:DaskExecutor",
            pins_workers=True,
            fuses_chains=True,
            distributed=True,
            needs="distributed",
            scheduler="the Dask scheduler",
        ),
    )
}

#: Every `Config.executor` value, in menu order.
EXECUTOR_NAMES: tuple[str, ...] = tuple(REGISTRY)


def executor_spec(name: str) -> ExecutorSpec:
    """The record of the executor called `name`; ValueError naming the choices otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}: one of {EXECUTOR_NAMES}") from None


def find_executor(name: object) -> ExecutorSpec | None:
    """The record for `name`, or None (a trace from another tool names no executor of ours)."""
    return REGISTRY.get(name) if isinstance(name, str) else None


def usable_executors() -> tuple[str, ...]:
    """The names of the executors that can be made here (for menus)."""
    return tuple(name for name, spec in REGISTRY.items() if spec.usable())


__all__ = [
    "EXECUTOR_NAMES",
    "REGISTRY",
    "ExecutorSpec",
    "executor_spec",
    "find_executor",
    "usable_executors",
]
