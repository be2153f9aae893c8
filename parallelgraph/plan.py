"""What a Session decides once per (graph, fetches, feeds, config): the Plan.

- **Pruning**: only ops that some fetch needs run; a fed tensor cuts the graph there.
- **Fusion** (`Config(fuse=True)`): a matmul with its bias add and activation becomes one step
  where nothing else needs the values in between (`ops/fused.py`), and so does a group of
  elementwise ops, run by one small program (`ops/fused_elementwise.py`); not under the dask
  executor, whose tasks already run a chain of ops on one worker.
- **Order and dependencies**: the graph's op order is topological, so steps keep it, and each
  step knows its consumers and how many producing steps it waits for (its dependency count).
- **Placement**: each op's device. Ops placed on gpu:0 run there when a GPU is usable (a real
  one, or Numba's simulator); otherwise — and for any other missing device — they run on cpu:0
  when `soft_placement` is on, and the plan records why; without it the session refuses the
  graph before anything runs. Under the dask executor "worker:N" pins an op to a Dask worker.
- **Streams**: each GPU op's CUDA stream, from the `stream_policy` (see `streams.py`), and the
  producers on other streams it must wait for.
- **Priority**: which ready step a worker takes first. Graph order (depth-first along a chain,
  which keeps few intermediate values alive) — except when GPU steps use several streams: then
  breadth-first, by depth then graph order, so every stream gets its first kernel before any
  gets its second. Launching one chain to its end first would leave the other streams idle for
  as long as the host takes to launch it (tens of microseconds per kernel).
- **Shards**: how many row ranges each op's work is cut into. The count follows the op's
  estimated time (an op too small to pay for a hand-off between threads is not split), and the
  boundaries depend only on the op's shapes, never on the thread counts. That is what makes every
  executor and thread setting compute exactly the same floating-point operations in the same
  order for every output element: bit-identical results.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .config import Config
from .costs import inexpensive_ns
from .devices import CPU0, Device
from .errors import GraphError, describe
from .executors.registry import executor_spec
from .graph import Graph, Op
from .ops.fused import fuse_epilogues
from .ops.fused_elementwise import fuse_elementwise
from .ops.registry import Cost, OpDef, opdef
from .plan_notes import NoteKind, PlanNote
from .scopes import branch_level, branch_of
from .streams import POLICIES, breadth_first, ready_walk

#: A shard should carry at least this much estimated work: a hand-off to another thread costs
#: 15-40 us on this kind of machine, and ~50 us shards gained nothing in measurements.
MIN_SHARD_NS = 250_000
#: More shards than this adds hand-offs without adding balance on the machines we target.
MAX_SHARDS = 16
#: Cost-model throughput of memory traffic (one core), measured: an add of two 256x1024 float32
#: arrays moves its 3 MB in ~170 us (benchmarks/RESULTS.md, "Cost model"); each op's
#: arithmetic speed is its OpDef's `flops_per_ns`.
BYTES_PER_NS = 20.0


@dataclass(frozen=True)
class Step:
    """One op to execute: where its inputs are, who waits for it, how it is sharded."""

    index: int
    op: Op
    definition: OpDef
    slot: int
    input_slots: tuple[int, ...]
    consumers: tuple[int, ...]
    shards: tuple[tuple[int, int], ...]
    device: Device
    cost: Cost
    #: CUDA stream index of a GPU step (None on the CPU).
    stream: int | None = None
    #: GPU producer steps on *other* streams that this GPU step must wait for (CUDA events).
    waits: tuple[int, ...] = ()
    #: The op in one call of its inputs, for a one-shard CPU step whose op type offers it
    #: (`OpDef.whole`); None: prepare, compute the shards, finish.
    whole: Callable[[list[Any]], Any] | None = None

    @property
    def on_gpu(self) -> bool:
        return self.stream is not None


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs to run a pruned graph; values live in numbered slots."""

    graph: Graph
    steps: tuple[Step, ...]
    #: (slot, op) of every source whose value the session supplies before the run.
    sources: tuple[tuple[int, Op], ...]
    fetch_slots: tuple[int, ...]
    num_slots: int
    initial_pending: tuple[int, ...]
    initial_ready: tuple[int, ...]
    #: How many steps read each slot; an intermediate value is dropped after its last reader.
    slot_uses: tuple[int, ...]
    #: Slots that must survive the run (fetches and sources).
    kept_slots: frozenset[int]
    #: What the planner decided that a user should know (soft placement moving an op, ...):
    #: `PlanNote`s, each a sentence with its kind, op and device (`plan_notes.py`).
    notes: tuple[PlanNote, ...]
    #: How many CUDA streams GPU steps use (0: no GPU step).
    streams: int = 0
    #: priority[i]: rank of step i among ready steps (lower first; see the module docstring).
    priority: tuple[int, ...] = ()
    #: The inverse: by_priority[rank] is the step index.
    by_priority: tuple[int, ...] = ()
    #: Whether a CPU step may call BLAS (`OpDef.calls_blas`): only then does a run hold BLAS
    #: to one thread (`executors.blas_threads`: a few us a run).
    calls_blas: bool = True

    @property
    def uses_gpu(self) -> bool:
        return self.streams > 0

    def useful_workers(self, threads: int) -> int:
        """How many of `threads` inter-op workers can have work: at most one per CPU step, and
        one for all GPU steps (launching a kernel takes microseconds; every extra woken thread
        only contends for the GIL with the one launching, which on a GPU-only graph measurably
        delays the launches: benchmarks/RESULTS.md, GPU streams); and never more than
        `max_concurrent_steps`, so a chain runs on one thread whatever `inter_op_threads` is;
        and one when every CPU step is inexpensive (`inexpensive_ns`)."""
        if threads <= 1:
            return 1
        cpu = self.cpu_steps if any(self.expensive) else min(self.cpu_steps, 1)
        workers = min(cpu + (1 if self.uses_gpu else 0), self.max_concurrent_steps)
        return max(1, min(threads, workers))

    @functools.cached_property
    def expensive(self) -> tuple[bool, ...]:
        """expensive[i]: whether CPU step i is worth waking a worker for (`inexpensive_ns`:
        the hand-off cost measured on this machine; timing only, never results)."""
        bar = inexpensive_ns()
        return tuple(
            not step.on_gpu and estimated_ns(step.definition, step.cost) >= bar
            for step in self.steps
        )

    @functools.cached_property
    def source_slots(self) -> frozenset[int]:
        """The slots of `sources` (a fetched source is copied out of the run, not handed out)."""
        return frozenset(slot for slot, _ in self.sources)

    @functools.cached_property
    def cpu_steps(self) -> int:
        """How many steps run on the CPU (counted once per plan)."""
        return sum(1 for step in self.steps if not step.on_gpu)

    @functools.cached_property
    def max_concurrent_steps(self) -> int:
        """A bound on how many steps can ever be ready or running at the same time.

        At the start that is the initially ready steps; a step's completion takes one away and
        releases at most its consumers. So no run ever has more than the initially ready steps
        plus, for every step, its consumers but one. A chain: 1; two independent chains: 2.
        """
        fan_out = sum(max(0, len(step.consumers) - 1) for step in self.steps)
        return len(self.initial_ready) + fan_out

    @functools.cached_property
    def serial_order(self) -> tuple[int, ...]:
        """The order in which one worker runs the steps: it always takes the ready step of
        lowest priority (`scheduler.Run`), so the order is a property of the plan."""
        consumers = [step.consumers for step in self.steps]
        return tuple(ready_walk(consumers, self.priority, self.initial_pending))

    @functools.cached_property
    def serial_frees(self) -> tuple[tuple[int, ...], ...]:
        """serial_frees[k]: the slots no step after the k-th of `serial_order` reads (and no
        fetch or source keeps), to drop once it has run; so a one-worker run frees
        intermediates as early as counting readers would, without counting."""
        last_reader: dict[int, int] = {}
        for position, index in enumerate(self.serial_order):
            for slot in self.steps[index].input_slots:
                last_reader[slot] = position
        frees: list[list[int]] = [[] for _ in self.serial_order]
        for slot, position in last_reader.items():
            if slot not in self.kept_slots:
                frees[position].append(slot)
        return tuple(tuple(slots) for slots in frees)


def estimated_ns(definition: OpDef, cost: Cost) -> float:
    """A rough single-core time for an op, used only to decide how many shards pay."""
    return cost.flops / definition.flops_per_ns + cost.bytes / BYTES_PER_NS


def _own_step(config: Config) -> Callable[[list[Op]], bool] | None:
    """For fusion: whether a branch of ops is worth an inter-op worker of its own (estimated
    at the hand-off bar, `inexpensive_ns`, or more), where branches can only run side by side
    on inter-op workers (more than one, and one thread an op); None elsewhere: a fused group's
    rows then split over intra-op helpers."""
    resolved = config.resolved()
    if resolved.inter_op_threads < 2 or resolved.intra_op_threads > 1:
        return None
    bar = inexpensive_ns()

    def own_step(ops: list[Op]) -> bool:
        return sum(estimated_ns(opdef(op.type), opdef(op.type).cost(op)) for op in ops) >= bar

    return own_step


def shard_bounds(definition: OpDef, op: Op) -> tuple[tuple[int, int], ...]:
    """Row ranges for the op's shards: a function of the op's shapes (and so of its cost) only."""
    cost = definition.cost(op)
    rows = definition.rows(op)
    blocks = max(1, -(-rows // definition.row_align))
    wanted = int(estimated_ns(definition, cost) // MIN_SHARD_NS)
    count = max(1, min(wanted, MAX_SHARDS, blocks, rows // definition.min_shard_rows))
    bounds = []
    for shard in range(count):
        start = min(rows, (shard * blocks // count) * definition.row_align)
        stop = min(rows, ((shard + 1) * blocks // count) * definition.row_align)
        bounds.append((start, stop))
    return tuple(bounds)


def place(op: Op, config: Config, gpu_available: bool = False) -> tuple[Device, PlanNote | None]:
    """The device an op runs on, and a note when soft placement moved it.

    "worker:N" pins an op to the N-th worker (sorted by address) under an executor that pins
    workers (dask); elsewhere it is soft-placed on cpu:0. GPU ops run on cpu:0 under an executor
    that runs no GPU steps: always under the CPU reference (`cpu_only`: sequential), by soft
    placement elsewhere (dask: its workers run CPU kernels only).
    """
    spec = executor_spec(config.executor)
    device = Device(op.device)
    if spec.pins_workers and device.is_worker:
        return device, None
    usable_gpu = gpu_available and spec.runs_gpu_steps
    if device == CPU0 or (device == "gpu:0" and usable_gpu):
        return device, None
    if device.is_gpu and spec.cpu_only:
        why = f"{spec.name}: CPU only"
        return CPU0, PlanNote.moved(op.name, device, NoteKind.CPU_ONLY, why)
    if not config.soft_placement:
        raise GraphError(
            f"op {describe(op)} is placed on {device}, which this session cannot use "
            f"(executor {config.executor!r}, no such device); set "
            "Config(soft_placement=True) to run it on cpu:0 instead"
        )
    return CPU0, PlanNote.moved(op.name, device, NoteKind.SOFT_PLACEMENT)


def build_plan(
    graph: Graph,
    fetches: Iterable[Op],
    fed: Iterable[Op],
    config: Config,
    gpu_available: bool = False,
) -> Plan:
    """Prune, order, place and shard. Raises GraphError for anything that cannot run."""
    fetches, fed_ids = tuple(fetches), {op.id for op in fed}
    needed = _needed_ops(fetches, fed_ids)
    if config.fuse and not executor_spec(config.executor).fuses_chains:  # it would do it again
        placed = {
            op.id: place(op, config, gpu_available)[0]
            for op in needed
            if op.id not in fed_ids and not opdef(op.type).is_source
        }
        fetched_ids = {op.id for op in fetches}
        needed = fuse_epilogues(needed, fetched_ids, fed_ids, placed)
        needed = fuse_elementwise(needed, fetched_ids, fed_ids, placed, _own_step(config))
    slot_of = {op.id: slot for slot, op in enumerate(needed)}
    step_of: dict[int, int] = {}
    sources, notes = [], []
    for op in needed:
        if op.id in fed_ids or opdef(op.type).is_source:
            sources.append((slot_of[op.id], op))
        else:
            step_of[op.id] = len(step_of)

    consumers: dict[int, list[int]] = {index: [] for index in step_of.values()}
    pending, uses = [], [0] * len(needed)
    steps_ops = [op for op in needed if op.id in step_of]
    for op in steps_ops:
        producers = {step_of[t.op.id] for t in op.inputs if t.op.id in step_of}
        for producer in sorted(producers):
            consumers[producer].append(step_of[op.id])
        pending.append(len(producers))
        for tensor in op.inputs:
            uses[slot_of[tensor.op.id]] += 1

    devices: dict[int, Device] = {}
    for op in steps_ops:
        devices[op.id], note = place(op, config, gpu_available)
        if note is not None:
            notes.append(note)
    streams, waits = _assign_streams(steps_ops, step_of, devices, config)
    notes.extend(_gpu_kernel_notes(steps_ops, devices, config))
    notes.extend(_cuda_graph_notes(steps_ops, devices, config))

    steps = []
    for op in steps_ops:
        definition = opdef(op.type)
        cost = definition.cost(op)
        shards = shard_bounds(*definition.sharding(op))
        on_cpu = not devices[op.id].is_gpu
        steps.append(
            Step(
                index=step_of[op.id],
                op=op,
                definition=definition,
                slot=slot_of[op.id],
                input_slots=tuple(slot_of[t.op.id] for t in op.inputs),
                consumers=tuple(consumers[step_of[op.id]]),
                shards=shards,
                device=devices[op.id],
                cost=cost,
                stream=streams.get(step_of[op.id]),
                waits=waits.get(step_of[op.id], ()),
                whole=definition.whole(op, config) if on_cpu and len(shards) == 1 else None,
            )
        )
    fetch_slots = tuple(slot_of[op.id] for op in fetches)
    calls_blas = any(s.definition.calls_blas(s.op, config) for s in steps if not s.on_gpu)
    several_streams = len(set(streams.values())) > 1
    order = breadth_first([s.consumers for s in steps]) if several_streams else [*range(len(steps))]
    return Plan(
        graph=graph,
        steps=tuple(steps),
        sources=tuple(sources),
        fetch_slots=fetch_slots,
        num_slots=len(needed),
        initial_pending=tuple(pending),
        initial_ready=tuple(i for i, count in enumerate(pending) if count == 0),
        slot_uses=tuple(uses),
        kept_slots=frozenset(fetch_slots) | {slot for slot, _ in sources},
        notes=tuple(notes),
        streams=(max(streams.values()) + 1) if streams else 0,
        priority=tuple(sorted(range(len(order)), key=order.__getitem__)),
        by_priority=tuple(order),
        calls_blas=calls_blas,
    )


def _gpu_kernel_notes(
    steps_ops: list[Op], devices: dict[int, Device], config: Config
) -> list[PlanNote]:
    """Why GPU matmuls run the numba kernel although `matmul_kernel="blas"` asked for cuBLAS
    (`kernels.gpu.cublas.cublas_problem`); nothing when they run what was asked."""
    if config.matmul_kernel != "blas":
        return []
    on_gpu = [op for op in steps_ops if op.type == "matmul" and devices[op.id].is_gpu]
    if not on_gpu:
        return []
    from .kernels.gpu.cublas import cublas_problem

    problem = cublas_problem()
    if problem is None:
        return []
    text = (
        f"matmul_kernel='blas' on the GPU needs cuBLAS through CuPy, and {problem}: the "
        f"{len(on_gpu)} GPU matmul(s) ran the numba kernel"
    )
    return [PlanNote.about(NoteKind.GPU_KERNEL, text)]


def _cuda_graph_notes(
    steps_ops: list[Op], devices: dict[int, Device], config: Config
) -> list[PlanNote]:
    """What `cuda_graph=True` does for this plan (`executors.cuda_graphs`), or why nothing."""
    if not config.cuda_graph:
        return []
    return [PlanNote.about(NoteKind.CUDA_GRAPH, _cuda_graph_text(steps_ops, devices))]


def _cuda_graph_text(steps_ops: list[Op], devices: dict[int, Device]) -> str:
    on_gpu = sum(1 for op in steps_ops if devices[op.id].is_gpu)
    if not on_gpu:
        return "cuda_graph=True: no op of this plan runs on a GPU: nothing to capture"
    from numba import config as numba_config

    if numba_config.ENABLE_CUDASIM:
        return (
            "cuda_graph=True: the CUDA simulator cannot capture graphs: kernels launch one by one"
        )
    on_cpu = len(steps_ops) - on_gpu
    if on_cpu:
        return (
            f"cuda_graph=True: this plan also runs {on_cpu} op(s) on the CPU, so its runs launch "
            "kernel by kernel (a CUDA graph holds GPU work only)"
        )
    return (
        "cuda_graph=True: untraced runs after the first replay the GPU work as one CUDA graph; "
        "traced runs launch kernel by kernel (each kernel's start and end need their own events)"
    )


def _assign_streams(
    steps_ops: list[Op], step_of: dict[int, int], devices: dict[int, Device], config: Config
) -> tuple[dict[int, int], dict[int, tuple[int, ...]]]:
    """Stream of each GPU step (by the configured policy) and its cross-stream waits."""
    gpu_steps = [step_of[op.id] for op in steps_ops if devices[op.id].is_gpu]
    if not gpu_steps:
        return {}, {}
    gpu_set = set(gpu_steps)
    producers = {
        step_of[op.id]: sorted(
            {step_of[t.op.id] for t in op.inputs if step_of.get(t.op.id) in gpu_set}
        )
        for op in steps_ops
        if step_of[op.id] in gpu_set
    }
    branches = branch_level(op.scope for op in steps_ops)
    groups = {
        step_of[op.id]: group
        for op in steps_ops
        if step_of[op.id] in gpu_set and (group := branch_of(op.scope, branches)) is not None
    }
    policy = POLICIES[config.stream_policy]
    stream_of = policy.assign(gpu_steps, producers, config.streams, groups)
    waits = {
        step: tuple(p for p in producers[step] if stream_of[p] != stream_of[step])
        for step in gpu_steps
    }
    return stream_of, waits


def _needed_ops(fetches: tuple[Op, ...], fed_ids: set[int]) -> list[Op]:
    """Ancestors of the fetches (stopping at fed ops), in graph order."""
    seen: dict[int, Op] = {}
    stack = list(fetches)
    while stack:
        op = stack.pop()
        if op.id in seen:
            continue
        seen[op.id] = op
        if op.id not in fed_ids:
            for tensor in op.inputs:
                if tensor.op.id >= op.id:  # builders cannot do this: the graph was edited
                    raise GraphError(
                        f"op {describe(op)} consumes {tensor.name!r}, which comes after it in "
                        "the graph: the graph was edited into a cycle or out of order"
                    )
                stack.append(tensor.op)
    return [seen[i] for i in sorted(seen)]
