"""ONNX Runtime profiler files (`SessionOptions.enable_profiling = True`; the path
`InferenceSession.end_profiling()` returns, `onnxruntime_profile__<date>.json`).

The file is a bare JSON list of 'X' events in µs, with no metadata events; pid is the OS
process id and tid the OS thread id (`tid == pid` is the process's main thread).

- **ops**: the `Node` events named "<node>_kernel_time" (one per node run), named after the
  node without the suffix and without the leading "/" of torch-exported names ("/net1/fc1/Gemm"
  becomes "net1/fc1/Gemm"; a node the optimiser fused, "fused /net1/fc1/Gemm", is named the same
  and its `op_type` says "FusedGemm"). `op_type` is `args.op_name`, shapes come from
  `args.input_type_shape`.
- **scopes**: the node name up to its last "/" ("net1/fc1"; torch's exporter writes the module
  path), so "net1" selects a branch. The file records no inputs (only shapes).
- **roles**: the `Session` events `model_loading_uri` and `session_initialization` are *setup*
  (profiling starts when the session is created); `model_run` and the executor's span
  (`SequentialExecutor::Execute`) are *waiting*: the calling thread holds them while the nodes
  run — on the same thread with the sequential executor (the nodes nest inside and are still
  work: the innermost event decides), on an inter-op pool thread with ORT_PARALLEL.
- **the runtime's own events** are left out with a note: the `*_fence_before`/`*_fence_after`
  node events (waiting for inputs' fences), and other `Session` spans.
- **lanes**: "ort/main" (the main thread), "ort/pool 1".. the other threads in order of their
  first event ("ort:<pid>/..." when several processes are in one file). An intra-op pool's
  helper threads record no events: `args.thread_scheduling_stats` names them, and a note says
  how many there were (their work is inside the node's time).
- **program order**: where every `model_run` ran all of its nodes on one thread, that thread
  ran them one after another in the execution plan's order (ONNX Runtime 1.14 and later do
  this for CPU nodes even with ExecutionMode.ORT_PARALLEL: one logical stream per execution
  provider), and since the file records no inputs, the lane is in `program_order`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Slice, Thread
from .base import Converted, Draft, Producer, Setting, SettingWords, scope_of, skipped_note

KERNEL = "_kernel_time"
FENCES = ("_fence_before", "_fence_after")
SETUP = frozenset({"model_loading_uri", "model_loading_array", "session_initialization"})
WAITING = frozenset({"model_run", "SequentialExecutor::Execute", "ParallelExecutor::Execute"})
FUSED = "fused "

#: the one thread setting the file tells (`_intra_op_threads`), and the one worth changing
INTRA_OP = Setting("intra_op_num_threads", "SessionOptions.intra_op_num_threads", to_cores=True)

KNOBS = SettingWords(
    tool="ONNX Runtime",
    inter_op=(
        "raise SessionOptions.intra_op_num_threads {change}, the cores the run can have to "
        "itself: each node then splits its work over that many threads. Running "
        "independent CPU nodes side by side is not on offer: ONNX Runtime 1.14 and later run a "
        "CPU model's nodes one at a time even with ExecutionMode.ORT_PARALLEL (measured on "
        "1.32, 2 cores: ORT_PARALLEL with two inter-op threads was never faster; "
        "intra_op_num_threads=2 took about 2/3 of the time when both cores were free, but "
        "longer when another process kept one of them busy)."
    ),
    intra_op=(
        "SessionOptions.intra_op_num_threads {change}: one node (a Gemm, a MatMul) then uses "
        "that many threads (0, the default, means one per physical core); it pays only with "
        "that many idle cores."
    ),
    streams=(
        "run independent parts as separate InferenceSessions, each on its own CUDA stream "
        "(the CUDAExecutionProvider option user_compute_stream), called from separate threads."
    ),
    one_at_a_time=(
        "one node at a time (ONNX Runtime runs a CPU model's nodes one after another, in the "
        "execution plan's order, with ORT_SEQUENTIAL and, since 1.14, with ORT_PARALLEL too)"
    ),
    bigger_ops=(
        "make nodes bigger (batch more rows per run): nodes this short cost more to hand to "
        "another thread than to run."
    ),
    experiment=(
        "time sess.run with SessionOptions.intra_op_num_threads=2 and with 1 (a fresh session "
        "each, many interleaved runs, medians, on otherwise idle cores), and compare."
    ),
    inter_op_setting=INTRA_OP,
    intra_op_setting=INTRA_OP,
)


def detect(document: Document) -> bool:
    for piece in document.slices[:500]:
        if piece.cat == "Session" and (piece.name in SETUP or piece.name in WAITING):
            return True
        if piece.cat == "Node" and piece.name.endswith((KERNEL, *FENCES)):
            return True
    return False


def node_name(event_name: str) -> str:
    """ "fused /net1/fc1/Gemm_kernel_time" -> "net1/fc1/Gemm"."""
    name = event_name.removesuffix(KERNEL).removeprefix(FUSED)
    return name.removeprefix("/") if name.startswith("/") else name


def _shapes(value: Any) -> str:
    """[{"float": [256, 512]}, {"float": [512]}] -> "(256, 512) x (512,)"."""
    if not isinstance(value, list):
        return ""
    shapes = []
    for entry in value:
        if isinstance(entry, dict):
            shapes += [tuple(dims) for dims in entry.values() if isinstance(dims, list)]
    return " x ".join(str(shape) for shape in shapes)


def _lanes(document: Document, threads: set[Thread]) -> dict[Thread, str]:
    order: dict[Thread, int] = {}
    for piece in document.slices:
        order.setdefault(piece.thread, piece.index)
    several = len({pid for pid, _ in threads}) > 1
    numbers: Counter[Any] = Counter()
    lanes = {}
    for thread in sorted(threads, key=lambda t: order.get(t, 0)):
        pid, tid = thread
        if tid == pid:
            label = "main"
        else:
            numbers[pid] += 1
            label = f"pool {numbers[pid]}"
        lanes[thread] = f"ort:{pid}/{label}" if several else f"ort/{label}"
    return lanes


def _intra_op_note(nodes: list[Slice]) -> str | None:
    """What `thread_scheduling_stats` says about the intra-op pools (helpers record no events)."""
    pools: dict[str, set[str]] = defaultdict(set)
    for piece in nodes:
        stats = piece.args.get("thread_scheduling_stats")
        if not isinstance(stats, dict):
            continue
        main = stats.get("main_thread")
        pool = main.get("thread_pool_name", "?") if isinstance(main, dict) else "?"
        helpers = stats.get("sub_threads")
        pools[str(pool)] |= set(helpers) if isinstance(helpers, dict) else set()
    if not pools:
        return None
    listed = ", ".join(
        f"{pool} (the node's thread + {len(h)} helper(s))" for pool, h in pools.items()
    )
    return (
        f"Intra-op pools from thread_scheduling_stats: {listed}. Their helper threads record no "
        "events: their work is inside the nodes' times."
    )


def _intra_op_threads(nodes: list[Slice]) -> int | None:
    """The intra-op threads a node ran on, as `thread_scheduling_stats` tells: the node's own
    thread and the helpers listed, at most; 1 where every node's stats are empty (the session
    had no intra-op pool); None where the file has no stats."""
    stats = [piece.args.get("thread_scheduling_stats") for piece in nodes]
    stats = [entry for entry in stats if entry is not None]
    if not stats:
        return None
    helpers = [entry.get("sub_threads") for entry in stats if isinstance(entry, dict)]
    counts = [len(entry) for entry in helpers if isinstance(entry, dict)]
    if not counts and all(entry == "" for entry in stats):
        return 1
    return 1 + max(counts) if counts else None


def _program_order(nodes: list[Draft], waits: list[Draft]) -> set[str]:
    """The lanes that ran all nodes of every model_run (or of the whole file, without one)."""
    runs = [w for w in waits if w.name == "model_run"]
    groups: list[set[str]] = []
    if runs:
        for run in runs:
            groups.append({n.lane for n in nodes if run.start <= n.start and n.end <= run.end})
    else:
        groups.append({n.lane for n in nodes})
    if any(len(lanes) > 1 for lanes in groups):
        return set()
    return set().union(*groups)


def convert(document: Document) -> Converted:
    converted = Converted()
    skipped: dict[str, int] = defaultdict(int)
    nodes: list[Slice] = []
    session: list[Slice] = []
    for piece in document.slices:
        if piece.cat == "Node" and piece.name.endswith(FENCES):
            skipped["*" + piece.name[piece.name.rindex("_fence_") :]] += 1
        elif piece.cat == "Node":
            nodes.append(piece)
        elif piece.name in SETUP or piece.name in WAITING:
            session.append(piece)
        else:
            skipped[piece.name] += 1
    if skipped:
        converted.notes.append(
            skipped_note(skipped, "the runtime's own fences and spans are not ops")
        )
    lanes = _lanes(document, {piece.thread for piece in nodes + session})
    for lane in lanes.values():
        converted.lane_kinds[lane] = LaneKind.WORKER
    providers = Counter(str(p.args.get("provider", "")) for p in nodes)
    ops: list[Draft] = []
    for piece in nodes:
        name = node_name(piece.name)
        op_type = piece.args.get("op_name")
        ops.append(
            converted.add(
                Draft(
                    name,
                    op_type if isinstance(op_type, str) and op_type else name.rpartition("/")[2],
                    scope_of(name),
                    "cpu",
                    EventKind.OP,
                    lanes[piece.thread],
                    piece.start,
                    piece.end,
                    shapes=_shapes(piece.args.get("input_type_shape")),
                ),
                piece,
            )
        )
    waits: list[Draft] = []
    for piece in session:
        role = EventRole.SETUP if piece.name in SETUP else EventRole.WAITING
        draft = converted.add(
            Draft(
                piece.name,
                piece.name,
                "",
                "cpu",
                EventKind.OP,
                lanes[piece.thread],
                piece.start,
                piece.end,
            ),
            piece,
        )
        draft.role = role
        if role is EventRole.WAITING:
            waits.append(draft)
    converted.program_order = _program_order(ops, waits)
    threads = _intra_op_threads(nodes)
    if threads is not None:
        converted.settings[INTRA_OP.name] = threads
    note = _intra_op_note(nodes)
    if note:
        converted.notes.append(note)
    others = sorted(p for p in providers if p and p != "CPUExecutionProvider")
    if others:
        converted.notes.append(
            f"Nodes of {', '.join(others)} are timed on the host thread that ran them, as ONNX "
            "Runtime records them; they are shown on that thread."
        )
    return converted


PRODUCER = Producer("onnxruntime", detect, convert, KNOBS)
