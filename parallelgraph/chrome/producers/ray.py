"""Ray timelines: `ray.timeline(filename=...)` (Ray 2.x's `chrome_tracing_dump`), with or
without `RAY_PROFILING=1`.

What Ray 2.60 writes (tests/fixtures/real/README.md has the details): a bare list of 'X'
events; pid is the node's IP address ("192.0.2.2"), tid is "worker:<56 hex digits>" or
"driver:<56 hex digits>" (one per worker process and per driver), `cname` names a colour, and
the category is what the event is:

- **ops**: each task is one event with cat "task::net1" (a remote function) or
  "task::Net1.forward" (an actor method), named "__main__.net1" and carrying `args.task_id`;
  the op is named after the category ("net1", "Net1.forward") and its scope is the function or
  the actor's class ("net1", "Net1"). Inside it, on the same worker, are the task's phases
  `task:deserialize_arguments`, `task:execute` (the function body) and `task:store_outputs`
  (serializing the result): they stay as nested work events, because the worker is held by the
  task for all of them — a second task cannot start on that worker while the first one stores
  its result, and a replay that counted only `task:execute` would be too fast. Events a program
  adds with `ray.util.profiling` nest the same way.
- **waiting** (`RAY_PROFILING=1` only): the driver's `ray.get` and `ray.wait` — it holds them
  while the tasks run on the workers.
- **setup**: the worker's `wait_for_function`, `fetch_and_run_function` and
  `register_remote_function` (a fresh worker loading a function or actor class before its
  first task: 80-110 ms in the cold round of the fixture) and the driver's `submit_task`
  (handing a task to the scheduler and asking for a worker lease: Ray's own bookkeeping,
  0.1-1.6 ms there, before the task can start; it is not the program's work, but it is kept so
  that the driver's lane shows when each task was asked for). `ray.put` is the driver's own
  work (serializing an object into the object store) and stays work.
- **left out**: `worker_idle` (older Ray: a worker with nothing to do), said in a note.
- **lanes**: "ray/driver" and "ray/worker 1", "ray/worker 2".. numbered by first event, with
  the unique start of the worker id ("ray/worker 1 (3cf29e7a)"); a worker that ran only one
  actor's methods is "ray/actor Net1 (3cf29e7a)". With several nodes the node's address
  prefixes the lane ("ray:192.0.2.3/worker 1 (...)").
- **program order**: an actor runs its calls one after another, in the order they were
  submitted, on its own state, so an actor's lane is in program order; so is the driver (a
  Python program). A task worker is not: it runs independent tasks one after another, as any
  worker of a pool does.
- **dependencies**: none recorded (no flows, and `submit_task` carries no task id), so a task
  waiting for another task's result is not seen as a dependency — say so when it matters.

The worker processes' own start is not in the file: in a cold session the first tasks start
seconds after they were submitted (3.7 s in the fixture), a gap that only the driver's
`ray.get` (waiting) covers, and only with RAY_PROFILING=1.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Slice, Thread
from .base import Converted, Draft, Producer, SettingWords, skipped_note

#: "worker:<hex>" / "driver:<hex>" (Ray's component type and id)
_COMPONENT = re.compile(r"^(worker|driver):([0-9a-f]{8,})$")
TASK_PREFIX = "task::"
PHASES = frozenset({"task:deserialize_arguments", "task:execute", "task:store_outputs", "task"})
WAITING = frozenset({"ray.get", "ray.wait", "ray._wait_generators_bulk"})
SETUP = frozenset(
    {"wait_for_function", "fetch_and_run_function", "register_remote_function", "submit_task"}
)
OWN = frozenset({"worker_idle"})
KNOWN = PHASES | WAITING | SETUP | OWN | {"ray.put"}

KNOBS = SettingWords(
    tool="Ray",
    inter_op=(
        "give Ray a CPU for each task that should run at the same time: ray.init(num_cpus=N) "
        "on a machine with N cores (a task asks for 1 CPU unless @ray.remote(num_cpus=...) "
        "says otherwise; lower it, e.g. num_cpus=0.5, to pack more tasks per core), and "
        "submit them all before the first ray.get (ray.get([a, b])). Actors need no CPU "
        "while they run (Ray's default), so calls on different actors already run at once "
        "when they are submitted together."
    ),
    intra_op=(
        "let the long task use more cores: @ray.remote(num_cpus=k) and the library's threads "
        "to match (Ray sets OMP_NUM_THREADS to a task's whole CPUs when it is unset; "
        "OpenBLAS reads OPENBLAS_NUM_THREADS, which runtime_env={'env_vars': {...}} sets)."
    ),
    streams=(
        "give each GPU task its own GPU or a share of one (@ray.remote(num_gpus=0.5)), so "
        "that two run at once; within a task, its framework's CUDA streams."
    ),
    one_at_a_time=(
        "one CPU for the tasks (ray.init(num_cpus=1), or each task asked for all of the "
        "node's CPUs with @ray.remote(num_cpus=...))"
    ),
    bigger_ops=(
        "make tasks bigger (more work per task, or several items per call): each task costs "
        "a scheduling round trip (submit, lease a worker, store the result) that can take "
        "longer than a tiny task's work."
    ),
    experiment=(
        "time the same round with ray.init(num_cpus=1) and with ray.init(num_cpus=2), each "
        "in a fresh process, both tasks submitted before ray.get, and compare the medians of "
        "a few warm rounds (the first round of a session starts the workers)."
    ),
)


def _component(thread: Thread) -> tuple[str, str] | None:
    tid = thread[1]
    match = _COMPONENT.match(tid) if isinstance(tid, str) else None
    return (match.group(1), match.group(2)) if match else None


def detect(document: Document) -> bool:
    ray_lanes = sum(_component(piece.thread) is not None for piece in document.slices[:200])
    if not ray_lanes:
        return False
    return any(piece.cat.startswith(TASK_PREFIX) or piece.cat in KNOWN for piece in document.slices)


def _unique_prefixes(ids: list[str], least: int = 8) -> dict[str, str]:
    """Each id's shortest start (at least `least` digits) that no other id shares."""
    out = {}
    for ident in ids:
        size = least
        while size < len(ident) and any(o != ident and o[:size] == ident[:size] for o in ids):
            size += 1
        out[ident] = ident[:size]
    return out


def _lanes(document: Document, pieces: list[Slice]) -> dict[Thread, str]:
    """'ray/driver', 'ray/worker 1 (3cf29e7a)', 'ray/actor Net1 (...)' (see the docstring)."""
    first: dict[Thread, int] = {}
    tasks: dict[Thread, set[str]] = defaultdict(set)
    for piece in pieces:
        first.setdefault(piece.thread, piece.start)
        if piece.cat.startswith(TASK_PREFIX):
            tasks[piece.thread].add(piece.cat.removeprefix(TASK_PREFIX))
    nodes = {thread[0] for thread in first}
    threads = sorted(first, key=lambda t: (first[t], str(t)))
    workers = [t for t in threads if (_component(t) or ("", ""))[0] == "worker"]
    drivers = [t for t in threads if (_component(t) or ("", ""))[0] == "driver"]
    short = _unique_prefixes([(_component(t) or ("", str(t[1])))[1] for t in workers])
    lanes = {}
    for number, thread in enumerate(workers, start=1):
        ident = short[_component(thread)[1]]  # type: ignore[index]
        classes = {name.partition(".")[0] for name in tasks[thread] if "." in name}
        methods_only = tasks[thread] and all("." in name for name in tasks[thread])
        if methods_only and len(classes) == 1:
            lanes[thread] = f"actor {classes.pop()} ({ident})"
        else:
            lanes[thread] = f"worker {number} ({ident})"
    for number, thread in enumerate(drivers, start=1):
        lanes[thread] = "driver" if len(drivers) == 1 else f"driver {number}"
    for thread in threads:
        lanes.setdefault(thread, str(thread[1]))
    prefix = {node: "ray" if len(nodes) == 1 else f"ray:{node}" for node in nodes}
    return {thread: f"{prefix[thread[0]]}/{lane}" for thread, lane in lanes.items()}


def _task_name(piece: Slice) -> str:
    return piece.cat.removeprefix(TASK_PREFIX) or str(piece.args.get("name", piece.name))


def _role(cat: str) -> EventRole:
    if cat in WAITING:
        return EventRole.WAITING
    if cat in SETUP:
        return EventRole.SETUP
    return EventRole.WORK


def _enclosing_task(pieces: list[Slice]) -> dict[int, Slice]:
    """Slice index -> the task event around it on its worker (the phases and user events)."""
    around: dict[int, Slice] = {}
    by_thread: dict[Any, list[Slice]] = defaultdict(list)
    for piece in pieces:
        by_thread[piece.thread].append(piece)
    for thread_pieces in by_thread.values():
        current: Slice | None = None
        for piece in sorted(thread_pieces, key=lambda p: (p.start, -p.end, p.index)):
            if piece.cat.startswith(TASK_PREFIX):
                current = piece
            elif current is not None and piece.end <= current.end:
                around[piece.index] = current
    return around


def convert(document: Document) -> Converted:
    converted = Converted()
    skipped: Counter[str] = Counter()
    kept = []
    for piece in document.slices:
        if piece.cat in OWN:
            skipped[piece.cat] += 1
        else:
            kept.append(piece)
    if skipped:
        converted.notes.append(
            skipped_note(skipped, "Ray's own records of idle workers are not work")
        )
    lanes = _lanes(document, kept)
    around = _enclosing_task(kept)
    for piece in kept:
        lane = lanes[piece.thread]
        if piece.cat.startswith(TASK_PREFIX):
            name = _task_name(piece)
            scope, op_type = name.partition(".")[0], "task" if "." not in name else "actor task"
        else:
            task = around.get(piece.index)
            scope = _task_name(task).partition(".")[0] if task is not None else ""
            name = op_type = piece.cat or piece.name
        converted.add(
            Draft(
                name=name,
                op_type=op_type,
                scope=scope,
                device="cpu",
                kind=EventKind.OP,
                lane=lane,
                start=piece.start,
                end=piece.end,
                role=_role(piece.cat),
            ),
            piece,
        )
    for lane in set(lanes.values()):
        converted.lane_kinds[lane] = LaneKind.WORKER
        if "/actor " in lane or lane.endswith("/driver") or "/driver " in lane:
            converted.program_order.add(lane)
    converted.notes.append(
        "Ray's timeline records no dependencies between tasks (no flows; submit_task has no "
        "task id): a task that waited for another's result is not seen as depending on it."
    )
    if not any((_component(piece.thread) or ("",))[0] == "driver" for piece in kept):
        converted.notes.append(
            "The driver's ray.get/ray.put/submit_task events are not in this file (set "
            "RAY_PROFILING=1 before ray.init to record them)."
        )
    return converted


PRODUCER = Producer("ray", detect, convert, KNOBS)
