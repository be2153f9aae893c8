"""TensorFlow 2's profiler (`tf.profiler.experimental.start(logdir)` / `stop()`), read through
the JSON TensorBoard's trace viewer gets: xprof (tensorboard-plugin-profile) converts the
`<host>.xplane.pb` the profiler wrote (`xprof.convert.raw_to_tool_data.xspace_to_tool_data(
[path], "trace_viewer", {})`).

The file looks like JAX's (both are XLA's profiler): one process "/host:CPU" (pid 701, not an
OS pid), hashed tids, threads named "python", "tf_Compute/<hash>" (the inter-op pool) and
"tf_numa_-1_Eigen/<hash>" (the intra-op pool), no `cat`, `ts` in µs from the trace's start. What
is TensorFlow's:

- **ops**: the TF op events — `args.long_name` is "<node>:<type>" ("net1/MatMul:MatMul"); the
  event's name is the type. Name = the node, scope = the node's name scope ("net1"), op_type
  = the type. A GPU device process's events (kernels on "Stream #N" threads, named to their
  TF op by `args.tf_op`) are ops too (not checked against a real GPU trace yet).
- **shards**: on intra-op (Eigen) threads, a `ThreadpoolListener::Region` is pool work for the
  op the inter-op thread is running at that time (a MatMul split over the pool): a shard of
  that op, on an intra-op helper lane, cut where that op ends (an op waits for its pieces, so a
  region outlasting it went on to the next op's); a region's time while no op runs is left
  out. A split op's work is then its shards' time: the file does not say how much of the op
  its own thread computed rather than waited.
- **waiting**: `EagerExecute` on the Python thread ("EagerExecute: __inference_two_branch_124",
  from `args.eager_op`): the caller holds it while the executor's threads run the function's
  ops. Ops run eagerly from Python nest inside it and are work. The tf.function call around
  it (the event named after the function, with `args.tf_function_call`) also holds the first
  call's graph building, so it is left out rather than called waiting.
- **setup**: `tf.function-graph_building` (tracing the Python function into a graph, on the
  first call; the graph's optimisation and instantiation that follow have no event of their
  own and are inside the waiting).
- **left out**, with a note saying how many: the runtime's own events — the executor
  (`ExecutorState::Process`, `ExecutorDoneCallback`), the eager path (`TFE_Py_Execute*`,
  `EagerLocalExecute`, `EagerKernelExecute`, `KernelAndDeviceFunc::Run`, `FunctionRun`, ...),
  thread-pool markers (`ThreadpoolListener::*` outside the intra-op pool), Python frames and
  step markers.
- **dependencies**: the file records no inputs. The executor runs a node that an op made ready
  inline, in the same `ExecutorState::Process` call, so ops one after another in one Process
  call are taken as a chain (each after the one before) — what the critical path and the
  replay follow, and a note says so. (Each op of the call was made ready by one before it,
  not necessarily the one just before: where an op readies several at once the chain is
  longer than the graph's.) Ops in different calls get no dependency.
- **lanes**: "tf/inter_op 1", "tf/inter_op 2".. (tf_Compute threads, numbered by their first
  op), "tf/intra_op 1".. (Eigen threads, helpers), "tf/python"; GPU streams
  "gpu:<n>/stream:<k>". The Python thread runs ops in program order when it runs any (eager).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from typing import Any

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Slice, Thread
from .base import Converted, Draft, Producer, SettingWords, innermost_range, scope_of, skipped_note
from .xla import HASHED, device_lane, device_processes

KNOBS = SettingWords(
    tool="TensorFlow",
    inter_op=(
        "tf.config.threading.set_inter_op_parallelism_threads(2) at the start of the program, "
        "before TensorFlow runs any op (the pool is made once per process): the executor then "
        "runs a tf.function's independent ops, such as two branches, at the same time."
    ),
    intra_op=(
        "tf.config.threading.set_intra_op_parallelism_threads(2) at the start of the program, "
        "before TensorFlow runs any op: one MatMul then splits over that many threads."
    ),
    streams=(
        "TensorFlow runs one GPU's kernels on one compute stream, so independent ops on it take "
        "turns: batch them into bigger kernels, or place them on two GPUs "
        "(with tf.device('/GPU:1'))."
    ),
    one_at_a_time=(
        "one inter-op thread (what tf.config.threading.set_inter_op_parallelism_threads(1) "
        "gives: the function's ops ran one at a time on one tf_Compute thread)"
    ),
    bigger_ops=(
        "make ops bigger (batch the work) or compile the function with XLA "
        "(tf.function(jit_compile=True)): tiny ops cost more to dispatch than to run."
    ),
    experiment=(
        "run the program once with tf.config.threading.set_inter_op_parallelism_threads(2) and "
        "once with set_intra_op_parallelism_threads(2) — each in a fresh process, as the "
        "setting is fixed once TensorFlow has run an op — and compare their step times."
    ),
)

_LONG_NAME = re.compile(r"^(?P<node>[^:]+):(?P<type>[A-Za-z0-9_]+)$")
#: events only TensorFlow's runtime writes (the eager path, the executor, tf.function)
_TF_RUNTIME = frozenset(
    {
        "EagerExecute",
        "EagerKernelExecute",
        "KernelAndDeviceFunc::Run",
        "FunctionRun",
        "ExecutorState::Process",
        "ExecutorDoneCallback",
        "tf.function-graph_building",
        "TFE_Py_ExecuteCancelable",
        "TFE_Py_FastPathExecute_C",
    }
)
GRAPH_BUILDING = "tf.function-graph_building"
REGION = "ThreadpoolListener::Region"
PROCESS = "ExecutorState::Process"


def _op(piece: Slice) -> re.Match[str] | None:
    long_name = piece.args.get("long_name")
    return _LONG_NAME.match(long_name) if isinstance(long_name, str) else None


def detect(document: Document) -> bool:
    if not any(name.startswith(("/host:", "/device:")) for name in document.process_names.values()):
        return False
    return any(
        piece.name in _TF_RUNTIME or "tf_function_call" in piece.args or _op(piece) is not None
        for piece in document.slices
    )


def _pool(name: str) -> str:
    """'tf_Compute/6181338563225358012' -> 'inter_op', 'tf_numa_-1_Eigen/-66..' -> 'intra_op'."""
    bare = HASHED.sub("", name).removeprefix("tf_")
    if bare == "Compute":
        return "inter_op"
    if bare.endswith("Eigen"):
        return "intra_op"
    return bare or "thread"


def _lanes(document: Document, first_use: list[Thread]) -> dict[Thread, str]:
    """One readable lane per thread: pool threads numbered in the order they first worked."""
    lanes: dict[Thread, str] = {}
    numbers: dict[str, int] = defaultdict(int)
    for thread in first_use:
        if thread in lanes:
            continue
        pool = _pool(document.thread_names.get(thread, ""))
        if pool in ("inter_op", "intra_op"):
            numbers[pool] += 1
            lanes[thread] = f"tf/{pool} {numbers[pool]}"
        else:
            numbers[pool] += 1
            lanes[thread] = f"tf/{pool}" if numbers[pool] == 1 else f"tf/{pool} {numbers[pool]}"
    return lanes


def _segments(spans: list[tuple[int, int, Draft]]) -> list[tuple[int, int, Draft]]:
    """The time the ops cover, cut where the running op changes: (start, end, op), the op
    being the one that started last among those running (ops of the non-helper threads)."""
    changes: dict[int, list[tuple[int, int, Draft]]] = defaultdict(list)
    for start, end, draft in spans:
        if end > start:
            changes[start].append((1, start, draft))
            changes[end].append((-1, start, draft))
    running: dict[int, tuple[int, Draft]] = {}  # id(draft) -> (start, draft)
    out: list[tuple[int, int, Draft]] = []
    points = sorted(changes)
    for left, right in itertools.pairwise(points):
        for delta, start, draft in changes[left]:
            if delta > 0:
                running[id(draft)] = (start, draft)
            else:
                running.pop(id(draft), None)
        if not running:
            continue
        op = max(running.values(), key=lambda item: item[0])[1]
        if out and out[-1][2] is op and out[-1][1] == left:
            out[-1] = (out[-1][0], right, op)
        else:
            out.append((left, right, op))
    return out


def convert(document: Document) -> Converted:
    converted = Converted()
    devices = device_processes(document)
    ops: list[tuple[Slice, re.Match[str] | None]] = []
    waiting: list[Slice] = []
    setup: list[Slice] = []
    regions: list[Slice] = []
    processes: list[Slice] = []
    skipped: dict[str, int] = defaultdict(int)
    for piece in document.slices:
        match = _op(piece)
        pool = _pool(document.thread_names.get(piece.thread, ""))
        if match is not None or piece.thread[0] in devices:
            ops.append((piece, match))
        elif piece.name == "EagerExecute":
            waiting.append(piece)
        elif piece.name == GRAPH_BUILDING:
            setup.append(piece)
        elif piece.name == REGION and pool == "intra_op":
            regions.append(piece)
        else:
            if piece.name == PROCESS:
                processes.append(piece)
            skipped[piece.name.split(" ", 1)[0].split("(", 1)[0][:40]] += 1
    if skipped:
        converted.notes.append(
            skipped_note(
                skipped,
                "TensorFlow's runtime (the eager path, the executor, thread-pool markers) and "
                "the profiler's Python frames are not ops",
            )
        )
    host = [piece for piece, _ in ops if piece.thread[0] not in devices]
    order = sorted([*host, *regions, *waiting, *setup], key=lambda p: (p.start, p.index))
    lanes = _lanes(document, [p.thread for p in order if p.thread[0] not in devices])
    for lane in lanes.values():
        if lane.startswith("tf/intra_op"):
            converted.lane_kinds[lane] = LaneKind.HELPER
    drafts: dict[int, Draft] = {}
    for piece, match in ops:
        device_match = devices.get(piece.thread[0])
        if match is None:  # a GPU kernel: args.tf_op names the TF op that launched it
            match = _LONG_NAME.match(str(piece.args.get("tf_op", "")))
        node = match.group("node") if match else piece.name
        op_type = match.group("type") if match else piece.name
        if device_match is None:
            device, lane = "cpu", lanes[piece.thread]
        else:
            device, lane = device_lane(document, piece, device_match, converted)
        kind = EventKind.COPY if "memcpy" in piece.name.lower() else EventKind.OP
        drafts[piece.index] = converted.add(
            Draft(node, op_type, scope_of(node), device, kind, lane, piece.start, piece.end),
            piece,
        )
    for piece, role in [*((p, EventRole.WAITING) for p in waiting),
                        *((p, EventRole.SETUP) for p in setup)]:  # fmt: skip
        name = piece.name
        if piece.name == "EagerExecute" and piece.args.get("eager_op"):
            name = f"EagerExecute: {piece.args['eager_op']}"
        lane = lanes[piece.thread]
        draft = Draft(
            name, piece.name, "", "cpu", EventKind.OP, lane, piece.start, piece.end, role=role
        )
        converted.add(draft, piece)
    _shards(converted, regions, drafts, lanes, ops)
    _chains(converted, processes, [piece for piece, _ in ops], drafts)
    python = {lanes[piece.thread] for piece in host if lanes[piece.thread].startswith("tf/python")}
    converted.program_order |= python
    return converted


def _shards(
    converted: Converted,
    regions: list[Slice],
    drafts: dict[int, Draft],
    lanes: dict[Thread, str],
    ops: list[tuple[Slice, Any]],
) -> None:
    """Intra-op regions as shards of the ops running meanwhile: a region's time is cut at the
    ops' ends (an op waits for its shards, so a region that outlasts it went on to other work);
    its time while no op ran is left out."""
    if not regions:
        return
    helpers = {piece.thread for piece in regions}
    spans = [
        (piece.start, piece.end, drafts[piece.index])
        for piece, _ in ops
        if piece.thread not in helpers and drafts[piece.index].device == "cpu"
    ]
    segments = _segments(spans)
    starts = [segment[0] for segment in segments]
    numbers: dict[str, int] = defaultdict(int)
    outside = 0
    for piece in sorted(regions, key=lambda p: (p.start, p.index)):
        covered = 0
        first = max(0, bisect.bisect_right(starts, piece.start) - 1)
        for left, right, op in segments[first:]:
            if left >= piece.end:
                break
            start, end = max(left, piece.start), min(right, piece.end)
            if end <= start:
                continue
            covered += end - start
            shard = Draft(
                op.name,
                op.op_type,
                op.scope,
                op.device,
                EventKind.SHARD,
                lanes[piece.thread],
                start,
                end,
                shard=numbers[op.name],
                parent=op,
            )
            converted.add(shard, piece)
            numbers[op.name] += 1
        outside += covered < piece.end - piece.start
    if outside:
        converted.notes.append(
            f"{outside} intra-op thread-pool region(s) ran partly or wholly while no TF op "
            "was running: that time is left out (the pool's own work, or the thread going on "
            "to the next task)."
        )


def _chains(
    converted: Converted, processes: list[Slice], op_pieces: list[Slice], drafts: dict[int, Draft]
) -> None:
    """Ops one after another inside one ExecutorState::Process: each after the one before."""
    inside = innermost_range(
        [p for p in op_pieces if drafts[p.index].kind == EventKind.OP], processes
    )
    calls: dict[int, list[Slice]] = defaultdict(list)
    for piece in op_pieces:
        call = inside.get(piece.index)
        if call is not None:
            calls[call.index].append(piece)
    linked = 0
    for pieces in calls.values():
        pieces.sort(key=lambda p: (p.start, -p.end, p.index))
        before: Slice | None = None
        for piece in pieces:  # the outermost ops of the call, one after another
            if before is None or before.end <= piece.start:
                if before is not None:
                    converted.edges.append((drafts[before.index], drafts[piece.index]))
                    linked += 1
                before = piece
    if linked:
        converted.notes.append(
            f"Dependencies inferred, not recorded: {linked} pair(s) of ops ran one after the "
            "other inside one executor call (ExecutorState::Process runs the ops that the "
            "ones before it made ready)."
        )


PRODUCER = Producer("tf_profiler", detect, convert, KNOBS)
