"""Fusing a plan into Dask tasks: chains of steps, how each is wired, and where each is pinned.

Made once per plan (`prepare_plan`; the executor caches the result) and keyed once per run
(`run_keys`).

**Chains.** Each *chain* of steps is one task `run_chain(chain, trace_token, *inputs)`
(`worker.py`): a chain is a maximal run of steps in which each step's value goes only to the
next, which reads no other step (its other inputs are sources); every other step is a chain of
one. Fusing such a chain loses no parallelism (the next step could not start earlier anyway) and
saves a round trip through the scheduler per link, the dominant cost of a Dask task
(milliseconds). A fetched value ends a chain, and so does a change of worker pin. `chain`
(`ChainSpec`) holds a picklable stand-in of each step (`StepSpec`), made once per plan; each
input is a reference to the producing task or to a source's future, so Dask moves values between
workers and starts a task when its inputs exist. With fusing off (`dask.FUSE_CHAINS = False`,
read by each new executor) every step is its own task (benchmarks/dask_overhead.py compares the
two).

**Pins.** A step on `pg.device("worker:N")`, or in a scope that the executor's `placement` maps
to N ({"net1": 0, "net2": 1}; the innermost listed scope wins), is pinned to the N-th worker
(addresses sorted); other steps are left to Dask's scheduler (usually where their inputs are). A
source whose consumers are all pinned to one worker is scattered to that worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import Config
from ...devices import Device
from ...plan import Plan, Step
from .worker import ChainSpec, OpSpec, StepSpec


@dataclass(frozen=True)
class ChainTask:
    """One Dask task of a plan: a chain of steps, the slots it reads from outside the chain
    (its arguments, in order), and its worker pin."""

    spec: ChainSpec
    steps: tuple[Step, ...]
    reads: tuple[int, ...]
    pin: int | None  # worker index; None: Dask decides


@dataclass(frozen=True)
class PreparedPlan:
    """Made once per plan: the tasks, and where each source should go."""

    tasks: tuple[ChainTask, ...]
    source_pins: dict[int, int | None]  # source slot -> worker index
    source_names: dict[int, str]  # source slot -> op name


@dataclass
class RunKeys:
    """The Dask keys of one run: the task key of each step's slot; per key the name of the op
    whose value it holds, the task's first step, and the names of all the steps it runs."""

    task: dict[int, str]
    names: dict[str, str]
    steps: dict[str, Step]
    chains: dict[str, tuple[str, ...]]


def prepare_plan(plan: Plan, config: Config, placement: dict[str, int], fuse: bool) -> PreparedPlan:
    """The plan's tasks (chains fused when `fuse`) and where each source should go. `config`
    is the session's Config without the Dask client (it travels with every step)."""
    specs = tuple(
        StepSpec(s.index, OpSpec.of(s.op), s.definition, s.shards, config) for s in plan.steps
    )
    pins = tuple(pin_of(step.op, placement) for step in plan.steps)
    tasks = tuple(
        chain_task(plan, chain, specs, pins[chain[0]]) for chain in chains(plan, pins, fuse)
    )
    readers: dict[int, set[int | None]] = {}
    for step, pin in zip(plan.steps, pins):
        for slot in step.input_slots:
            readers.setdefault(slot, set()).add(pin)
    source_pins: dict[int, int | None] = {}
    for slot, op in plan.sources:
        pinned = readers.get(slot, set())
        own = pin_of(op, placement)
        source_pins[slot] = (
            own if own is not None else (next(iter(pinned)) if len(pinned) == 1 else None)
        )
    names = {slot: op.name for slot, op in plan.sources}
    return PreparedPlan(tasks, source_pins, names)


def run_keys(prepared: PreparedPlan, token: str) -> RunKeys:
    """The keys of the plan's tasks in the run named by `token` (a task is named after its last
    step, whose value it returns)."""
    keys = RunKeys({}, {}, {}, {})
    for task in prepared.tasks:
        last = task.steps[-1]
        key = f"pg-{last.op.name}-{token}"
        keys.task.update((step.slot, key) for step in task.steps)
        keys.names[key], keys.steps[key] = last.op.name, task.steps[0]
        keys.chains[key] = tuple(step.op.name for step in task.steps)
    return keys


def chains(plan: Plan, pins: tuple[int | None, ...], fuse: bool) -> list[list[int]]:
    """The plan's steps grouped into chains (module docstring), each in step order."""
    producer = {step.slot: step.index for step in plan.steps}
    fetched = set(plan.fetch_slots)
    found: list[list[int]] = []
    chain_of: dict[int, list[int]] = {}
    for step in plan.steps:  # topological order: a producer's chain exists already
        producers = {producer[slot] for slot in step.input_slots if slot in producer}
        if fuse and len(producers) == 1:
            (previous,) = producers
            chain, before = chain_of[previous], plan.steps[previous]
            if (
                chain[-1] == previous
                and len(before.consumers) == 1
                and before.slot not in fetched
                and pins[previous] == pins[step.index]
            ):
                chain.append(step.index)
                chain_of[step.index] = chain
                continue
        chain_of[step.index] = [step.index]
        found.append(chain_of[step.index])
    return found


def chain_task(
    plan: Plan, chain: list[int], specs: tuple[StepSpec, ...], pin: int | None
) -> ChainTask:
    """A chain as a task: the slots it reads from outside, and how each step is wired."""
    reads: dict[int, int] = {}  # slot -> argument position
    wiring = []
    for position, index in enumerate(chain):
        step = plan.steps[index]
        inside = plan.steps[chain[position - 1]].slot if position else None
        wiring.append(
            tuple(
                -1 if slot == inside else reads.setdefault(slot, len(reads))
                for slot in step.input_slots
            )
        )
    steps = tuple(plan.steps[index] for index in chain)
    spec = ChainSpec(tuple(specs[index] for index in chain), tuple(wiring))
    return ChainTask(spec, steps, tuple(reads), pin)


def pin_of(op: Any, placement: dict[str, int]) -> int | None:
    """The worker index an op is pinned to: its "worker:N" device, else the placement of
    its innermost listed scope, else None (Dask decides)."""
    index = worker_index(op.device)
    if index is not None or not placement:
        return index
    scopes = [s for s in placement if op.scope == s or op.scope.startswith(s + "/")]
    return placement[max(scopes, key=len)] if scopes else None


def worker_index(device: Device) -> int | None:
    """N for "worker:N", else None."""
    device = Device(device)
    return device.index if device.is_worker else None
