"""PyTorch profiler traces (Kineto): `prof.export_chrome_trace(...)` and
`tensorboard_trace_handler` (`*.pt.trace.json`, gzip with `use_gzip=True`).

- **ops**: `cpu_op` events (ATen ops: `aten::linear`, holding its `aten::addmm`, which the trace
  model nests), GPU `kernel`s, `gpu_memcpy` (a copy) and `gpu_memset`, and CUDA runtime calls
  (the launches; they tie a kernel to the CPU op that launched it through `correlation`).
- **scopes**: `record_function("net1")` ranges (`user_annotation`) and the `nn.Module`
  hierarchy ("nn.Module: Linear_0" events, written with `with_stack=True`) around an op: the
  labels the user wrote come first, then the modules, so its scope is
  "net1/Sequential_0/Linear_0" even when a module encloses the label. A GPU event outside any
  range takes the scope of the runtime call that launched it.
- **the profiler's own events** are left out, and a note says how many: `ProfilerStep#N`
  ranges, Python frames (`python_function`, from `with_stack=True`), `overhead`, the profiler's
  "Trace" spans and instant events.
- **lanes**: "cpu/<thread>" named from the file's thread names ("python", "PTThreadPool" for
  the inter-op pool that runs `torch.jit.fork` tasks; the tid is added where names repeat),
  "cpu:<pid>/<thread>" with several processes; GPU events on "gpu:<device>/stream/<stream>".
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

from ..document import Document, Slice
from .base import (
    Converted,
    Draft,
    Knobs,
    Producer,
    enclosing_names,
    integer,
    skipped_note,
    thread_labels,
)

GPU = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
SCOPES = frozenset({"user_annotation", "gpu_user_annotation"})
OWN = frozenset({"python_function", "overhead", "Trace", "cuda_profiler_range"})
LAUNCHES = frozenset({"cuda_runtime", "cuda_driver"})
CATEGORIES = GPU | SCOPES | LAUNCHES | {"cpu_op"}
MODULE_PREFIX = "nn.Module: "

KNOBS = Knobs(
    tool="PyTorch",
    inter_op=(
        "run the branches concurrently: torch.jit.fork each one (a TorchScript function) and "
        "torch.jit.wait for them, with torch.set_num_interop_threads(2) called first, before "
        "any parallel work — or call them from two Python threads (ATen ops release the GIL). "
        "Eager mode runs ops one after another on the calling thread."
    ),
    intra_op="torch.set_num_threads(N): one op (a matmul) then uses N threads.",
    streams=(
        "give each branch its own torch.cuda.Stream (with torch.cuda.stream(s): ...) and "
        "join them with torch.cuda.current_stream().wait_stream(s) before combining results."
    ),
    one_at_a_time="one thread (eager PyTorch runs ops one after another on the calling thread)",
    bigger_ops=(
        "make ops bigger (batch the work) or fuse them (torch.compile): tiny ops cost more "
        "to dispatch than to run."
    ),
)


def detect(document: Document) -> bool:
    return any(piece.cat in CATEGORIES for piece in document.slices)


def _is_scope(piece: Slice) -> bool:
    if piece.cat in SCOPES:
        return not piece.name.startswith("ProfilerStep#")
    return piece.cat == "python_function" and piece.name.startswith(MODULE_PREFIX)


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
        elif piece.cat in OWN or piece.cat in SCOPES:
            skipped[piece.name if piece.cat in SCOPES else piece.cat] += 1
        else:
            kept.append(piece)
    if skipped:
        converted.notes.append(
            skipped_note(skipped, "the profiler's own steps, Python frames and spans are not ops")
        )
    scopes = enclosing_names(kept, ranges)
    cpu_threads = {piece.thread for piece in kept if piece.thread[0] not in gpu_pids}
    labels = thread_labels(document, cpu_threads)
    several = len({pid for pid, _ in cpu_threads}) > 1
    lanes = {
        thread: f"cpu:{thread[0]}/{label}" if several else f"cpu/{label}"
        for thread, label in labels.items()
    }
    launches: dict[Any, Draft] = {}
    on_gpu: list[tuple[Draft, Any]] = []
    for piece in kept:
        pid, tid = piece.thread
        if pid in gpu_pids:
            device = f"gpu:{piece.args.get('device', pid)}"
            lane = f"{device}/stream/{piece.args.get('stream', tid)}"
        else:
            device, lane = "cpu", lanes[piece.thread]
        cat = piece.cat
        draft = converted.add(
            Draft(
                piece.name,
                piece.name if cat in ("cpu_op", "") else cat,
                _scope(tuple(scopes[piece.index])),
                device,
                "copy" if cat == "gpu_memcpy" else "op",
                lane,
                piece.start,
                piece.end,
                0,
                integer(piece.args.get("bytes")),
                shapes=_shapes(piece.args.get("Input Dims")),
            ),
            piece,
        )
        correlation = piece.args.get("correlation")
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


PRODUCER = Producer("pytorch", detect, convert, KNOBS)
