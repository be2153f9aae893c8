"""PyTorch profiler traces (Kineto): `prof.export_chrome_trace(...)` and
`tensorboard_trace_handler` (`*.pt.trace.json`, gzip with `use_gzip=True`).

- **ops**: `cpu_op` events (ATen ops: `aten::linear`, holding its `aten::addmm`, which the trace
  model nests), GPU `kernel`s, `gpu_memcpy` (a copy) and `gpu_memset`, and CUDA runtime calls
  (the launches; they tie a kernel to the CPU op that launched it through `correlation`).
- **scopes**: `record_function("net1")` ranges (`user_annotation`, but PyTorch's own labels:
  `ProfilerStep#N`, `Optimizer.step#SGD.step`, the DataLoader iterator's) and the `nn.Module`
  hierarchy ("nn.Module: Linear_0" events, written with `with_stack=True`) around an op: the
  labels the user wrote come first, then the modules, so its scope is
  "net1/Sequential_0/Linear_0" even when a module encloses the label. A GPU event outside any
  range takes the scope of the runtime call that launched it.
  `torch.compile`'s "## Call CompiledFxGraph <hash> ##" range is a scope named by the compiled
  region that holds it ("Torch-Compiled Region: 0/0" -> "compiled_0_0"), never by the hash.
  A `torch.jit.fork` task without a label inside (`<forked function>` on a pool thread) is
  scope "fork1", "fork2".. in the order its caller's forks started.
- **roles**: the caller of `torch.jit.fork` — the outermost op on a thread while `<forked
  function>` tasks it launched start on other threads (the TorchScript function, e.g.
  "forked_two_branch"), and `aten::wait` — is *waiting*: its thread holds the span while the
  pool does the work (ops nested in it on its own thread stay work); so is the DataLoader
  iterator's next batch from worker processes
  (`enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`: the worker processes are
  not in the file; with `num_workers=0` the calling thread loads the batch itself: work).
  `torch.compile`'s compilation (the "dynamo" event, "entire_frame_compile", "...
  (dynamo_timed)" and everything inside them, fake-tensor ops of tracing included) is *setup*.
- **the profiler's own events** are left out, and a note says how many: `ProfilerStep#N` ranges
  and the optimizer's `Optimizer.step#...` labels (its ops stay), Python frames
  (`python_function`, from `with_stack=True`), `overhead`, the profiler's "Trace" spans,
  dynamo's "<event>_data: ..." markers and instant events (`[memory]` from `profile_memory=True`
  among them).
- **lanes**: "cpu/<thread>" named from the file's thread names ("python", "PTThreadPool" for
  the inter-op pool that runs `torch.jit.fork` tasks; the tid is added where names repeat),
  "cpu:<pid>/<thread>" with several processes; GPU events on "gpu:<device>/stream/<stream>".
  Kineto names a pool thread twice ("PTThreadPool", then "python"): the specific name wins.
- **program order**: the threads named "python" (the calling threads of eager PyTorch) ran
  their ops in program order; the pool threads run independent tasks.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Slice, Thread
from ..metadata import event_id
from .base import (
    Converted,
    Draft,
    Producer,
    Setting,
    SettingWords,
    enclosing_names,
    innermost_range,
    integer,
    process_lanes,
    skipped_note,
    thread_labels,
)

GPU = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
SCOPES = frozenset({"user_annotation", "gpu_user_annotation"})
OWN = frozenset({"python_function", "overhead", "Trace", "cuda_profiler_range"})
LAUNCHES = frozenset({"cuda_runtime", "cuda_driver"})
CATEGORIES = GPU | SCOPES | LAUNCHES | {"cpu_op"}
MODULE_PREFIX = "nn.Module: "
FORKED = "<forked function>"  # a torch.jit.fork task, on an inter-op pool thread
WAITS = frozenset({"aten::wait", "prim::wait"})  # torch.jit.wait, where it is recorded
_COMPILED_GRAPH = re.compile(r"^## Call CompiledFxGraph (\S+) ##$")
_COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")
_DYNAMO_DATA = re.compile(r"^\S+_data: ")  # dynamo's metadata markers ("dynamo_data: ...")
#: PyTorch's own record_function labels, never scopes: the profiler's steps, the optimizer's
#: step and zero_grad, and the DataLoader iterator's next batch (kept as an event: `_LOADER`)
_TORCH_LABEL = re.compile(r"^(ProfilerStep#\d+$|Optimizer\.\w+#|enumerate\(DataLoader\)#)")
_LOADER = re.compile(r"^enumerate\(DataLoader\)#(\w+)\.__next__$")
#: the iterator of `DataLoader(num_workers=N)`: its next batch comes from worker processes
_WORKERS_ITERATOR = "_MultiProcessingDataLoaderIter"
#: torch.compile's compilation, as dynamo records it (dynamo_timed and its outer events)
COMPILE_EVENTS = frozenset({"dynamo", "entire_frame_compile"})
_GENERIC_THREAD = "python"
_GENERATED_THREAD = re.compile(r"^thread (\d+) \((.+)\)$")  # Kineto: "thread 5141 (python)"

KNOBS = SettingWords(
    tool="PyTorch",
    inter_op=(
        "run the branches concurrently: torch.jit.fork each one (a TorchScript function) and "
        "torch.jit.wait for them, with torch.set_num_interop_threads(2) called first, before "
        "any parallel work — or call them from two Python threads (ATen ops release the GIL). "
        "Eager mode runs ops one after another on the calling thread."
    ),
    intra_op="torch.set_num_threads {change}: one op (a matmul) then uses that many threads.",
    intra_op_setting=Setting("num_threads", "torch.set_num_threads", to_cores=True),
    streams=(
        "give each branch its own torch.cuda.Stream (with torch.cuda.stream(s): ...) and "
        "join them with torch.cuda.current_stream().wait_stream(s) before combining results."
    ),
    one_at_a_time=(
        "one thread at a time (eager PyTorch runs ops one after another on the calling "
        "thread; torch.jit.fork tasks queue for the inter-op pool, "
        "torch.get_num_interop_threads() threads)"
    ),
    bigger_ops=(
        "make ops bigger (batch the work) or fuse them (torch.compile): tiny ops cost more "
        "to dispatch than to run."
    ),
    experiment=(
        "run the step once with torch.set_num_interop_threads(2) called first (the branches "
        "forked with torch.jit.fork) and once with torch.set_num_threads(2), each in its own "
        "process, and compare the step times."
    ),
)


def detect(document: Document) -> bool:
    return any(piece.cat in CATEGORIES for piece in document.slices)


def _is_scope(piece: Slice) -> bool:
    if _COMPILED_GRAPH.match(piece.name):  # a user_annotation or a cpu_op, by version
        return True
    if piece.cat in SCOPES:
        return not _TORCH_LABEL.match(piece.name) and not _DYNAMO_DATA.match(piece.name)
    return piece.cat == "python_function" and piece.name.startswith(MODULE_PREFIX)


def _label(name: str) -> str:
    """Kineto's generated "thread 5141 (PTThreadPool)" -> "PTThreadPool"."""
    generated = _GENERATED_THREAD.match(name)
    return (generated.group(2) if generated else name).strip()


def _specific_names(document: Document) -> dict[Thread, str]:
    """Each thread's name, the specific one where the file gives several: Kineto names a pool
    thread "PTThreadPool" and later "python" — the pool's name is the one that says what it
    is."""
    names = dict(document.thread_names)
    for thread, given in document.thread_name_list.items():
        specific = [name for name in given if _label(name) not in ("", _GENERIC_THREAD)]
        if specific:
            names[thread] = specific[-1]
    return names


def _outermost(pieces: Iterable[Slice]) -> list[Slice]:
    """The pieces not inside another one on their thread."""
    out: list[Slice] = []
    ends: dict[Thread, int] = {}
    for piece in sorted(pieces, key=lambda p: (p.start, -p.end)):
        if piece.start < ends.get(piece.thread, -1) or (
            piece.start == ends.get(piece.thread, -1) and piece.end == piece.start
        ):
            continue
        out.append(piece)
        ends[piece.thread] = max(ends.get(piece.thread, -1), piece.end)
    return out


def _fork_callers(kept: list[Slice]) -> dict[int, list[Slice]]:
    """The callers of torch.jit.fork: slice index of the outermost op on a thread during which
    `<forked function>` tasks started on other threads of its process -> those tasks, in the
    order they started."""
    tasks = sorted((p for p in kept if p.name == FORKED), key=lambda p: p.start)
    if not tasks:
        return {}
    callers: dict[int, list[Slice]] = {}
    for piece in _outermost(kept):
        if piece.name == FORKED:
            continue
        launched = [
            task
            for task in tasks
            if task.thread[0] == piece.thread[0]
            and task.thread != piece.thread
            and piece.start <= task.start < piece.end
        ]
        if launched:
            callers[piece.index] = launched
    return callers


def _compiled_names(ranges: list[Slice], kept: list[Slice]) -> dict[str, str]:
    """ "## Call CompiledFxGraph <hash> ##" -> a readable scope: the compiled region around it
    ("Torch-Compiled Region: 0/0" -> "compiled_0_0"), else "compiled_<n>" by first call."""
    graphs = [r for r in ranges if _COMPILED_GRAPH.match(r.name)]
    if not graphs:
        return {}
    regions = [p for p in kept if _COMPILED_REGION.match(p.name)]
    around = innermost_range(graphs, regions)
    names: dict[str, str] = {}
    for graph in sorted(graphs, key=lambda g: g.start):
        if graph.name in names:
            continue
        region = around.get(graph.index)
        match = _COMPILED_REGION.match(region.name) if region is not None else None
        if match:
            names[graph.name] = f"compiled_{match.group(1)}_{match.group(2)}"
        else:
            names[graph.name] = f"compiled_{len(names) + 1}"
    return names


@functools.lru_cache(maxsize=65536)
def _scope(around: tuple[str, ...]) -> str:
    """record_function labels first (what the user named), then the module hierarchy:
    "net1/Branch_0/Linear_0" even when a module "TwoBranch_0" encloses the label."""
    labels = [name for name in around if not name.startswith(MODULE_PREFIX)]
    modules = [
        name.removeprefix(MODULE_PREFIX) for name in around if name.startswith(MODULE_PREFIX)
    ]
    return "/".join(labels + modules)


def _shapes(dims: Any) -> str:
    """`record_shapes=True`'s "Input Dims" ([[256, 512], [512], []]) as "(256, 512) x (512,)"."""
    if not isinstance(dims, list):
        return ""
    return " x ".join(str(tuple(d)) for d in dims if isinstance(d, list) and d)


def convert(document: Document) -> Converted:
    converted = Converted()
    gpu_pids = {piece.thread[0] for piece in document.slices if piece.cat in GPU}
    ranges, kept = [], []
    skipped: dict[str, int] = defaultdict(int)
    for piece in document.slices:
        if _is_scope(piece):
            ranges.append(piece)
        elif piece.cat in SCOPES and _LOADER.match(piece.name):
            kept.append(piece)  # the calling thread's wait (or load) for the next batch
        elif piece.cat in OWN or piece.cat in SCOPES:
            key = piece.name if piece.cat in SCOPES else piece.cat
            skipped[key.split(":", 1)[0] + ": ..." if _DYNAMO_DATA.match(key) else key] += 1
        else:
            kept.append(piece)
    if skipped:
        converted.notes.append(
            skipped_note(skipped, "the profiler's own steps, Python frames and spans are not ops")
        )
    scopes = enclosing_names(kept, ranges)
    readable = _compiled_names(ranges, kept)
    compiling = innermost_range(
        kept,
        [p for p in kept if p.name in COMPILE_EVENTS or p.name.endswith(" (dynamo_timed)")],
    )
    callers = _fork_callers(kept)
    fork_scope = _fork_scopes(kept, ranges, callers)
    cpu_threads = {piece.thread for piece in kept if piece.thread[0] not in gpu_pids}
    named = dataclasses.replace(document, thread_names=_specific_names(document))
    lanes = process_lanes("cpu", thread_labels(named, cpu_threads))
    generic = {
        thread
        for thread in cpu_threads
        if _label(named.thread_names.get(thread, _GENERIC_THREAD)) == _GENERIC_THREAD
    }
    converted.program_order = {lanes[thread] for thread in generic}
    launches: dict[Any, Draft] = {}
    on_gpu: list[tuple[Draft, Any]] = []
    for piece in kept:
        pid, tid = piece.thread
        if pid in gpu_pids:
            device = f"gpu:{piece.args.get('device', pid)}"
            lane = f"{device}/stream/{piece.args.get('stream', tid)}"
            converted.lane_kinds[lane] = LaneKind.STREAM
        else:
            device, lane = "cpu", lanes[piece.thread]
        cat = piece.cat
        around = tuple(readable.get(name, name) for name in scopes[piece.index])
        scope = _scope(around) or fork_scope.get(piece.index, "")
        draft = converted.add(
            Draft(
                piece.name,
                piece.name if cat in ("cpu_op", "") else cat,
                scope,
                device,
                EventKind.COPY if cat == "gpu_memcpy" else EventKind.OP,
                lane,
                piece.start,
                piece.end,
                0,
                integer(piece.args.get("bytes")),
                shapes=_shapes(piece.args.get("Input Dims")),
                role=_role(piece, callers, compiling),
            ),
            piece,
        )
        correlation = event_id(
            piece.args.get("correlation"), document.source, piece.index, "correlation"
        )
        if piece.cat in LAUNCHES and correlation is not None:
            launches[correlation] = draft
        elif pid in gpu_pids and correlation is not None:
            on_gpu.append((draft, correlation))
    for draft, correlation in on_gpu:
        launch = launches.get(correlation)
        if launch is not None:
            converted.edges.append((launch, draft))
            draft.scope = draft.scope or launch.scope
    return converted


def _role(piece: Slice, callers: dict[int, list[Slice]], compiling: dict[int, Slice]) -> EventRole:
    if piece.index in compiling:
        return EventRole.SETUP
    if piece.index in callers or piece.name in WAITS or _waits_for_workers(piece):
        return EventRole.WAITING
    return EventRole.WORK


def _waits_for_workers(piece: Slice) -> bool:
    """The DataLoader iterator's next batch, when worker processes load the batches: the
    calling thread waits for them (a single-process iterator loads the batch itself: work)."""
    loader = _LOADER.match(piece.name) if piece.cat in SCOPES else None
    return loader is not None and loader.group(1) == _WORKERS_ITERATOR


def _fork_scopes(
    kept: list[Slice], ranges: list[Slice], callers: dict[int, list[Slice]]
) -> dict[int, str]:
    """Slice index -> "fork1", "fork2".. for the forked tasks (and the ops inside them) that
    hold no label of their own: the n-th task its caller's forks started."""
    tasks = {task.index: task for launched in callers.values() for task in launched}
    if not tasks:
        return {}
    labels = [r for r in ranges if r.cat in SCOPES]
    labelled = {task.index for task in innermost_range(labels, tasks.values()).values()}
    order = {
        task.index: f"fork{n}"
        for launched in callers.values()
        for n, task in enumerate(launched, 1)
        if task.index not in labelled
    }
    inside = innermost_range(kept, [tasks[i] for i in order])
    return {index: order[task.index] for index, task in inside.items()}


PRODUCER = Producer("pytorch", detect, convert, KNOBS)
