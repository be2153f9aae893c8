"""JAX profiles: `jax.profiler.trace(dir)` writes `plugins/profile/<run>/<host>.trace.json.gz`.

The file is XLA's profiler converted to trace events: processes "/host:CPU" (and
"/device:GPU:0" and so on), threads named by XLA ("tf_XLAPjRtCpuClient/4952036884866407433",
"tf_XLAEigen/-6483180353713786386"; on a GPU "Stream #14(...)").

- **ops**: the XLA ops of compiled programs — events whose args carry `hlo_op` (on the CPU, the
  thunks that XLA's runtime executes) — and the kernels and copies on GPU device processes.
- **scopes**: the name stack of `jax.named_scope` where the file has it (`args.tf_op` or
  `args.name`, "jit(f)/jit(main)/net1/dot_general" -> "net1"); XLA on the CPU does not record
  it, and then ops have no scope and branches are told apart by thread or op name.
- **the profiler's and runtime's own events** are left out, and a note says how many: Python
  frames ("$contextlib.py:141 __exit__", `stop_trace`), the dispatch path (`PjitFunction(f)`,
  `ExecuteHelper...`), thread-pool markers (`ThreadpoolListener::*`, "end: ..." events).
- **lanes**: "cpu/<thread>" with XLA's hash cut off ("cpu/XLAPjRtCpuClient", "cpu/XLAEigen 2"),
  "cpu:<pid>/<thread>" when several host processes are in one file, "gpu:<n>/stream:<k>" for
  GPU streams.
- **devices**: a host op's `device` is "cpu:<n>" from its `args.device_ordinal` (with
  `XLA_FLAGS=--xla_force_host_platform_device_count=2` the host is two devices, and any
  XLAPjRtCpuClient thread runs the ops of either: a lane is a thread, not a device), so
  "device:cpu:1" selects a device's ops and a run on two devices compares them by default; a
  device process's ops are on "gpu:<n>".
- **program order**: none. The thunk executor runs a program's ops by their dependencies, and
  any client thread may pick up the next one; the file records no inputs.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ...trace.model import EventKind
from ..document import Document, Slice
from .base import (
    Converted,
    Draft,
    Producer,
    SettingWords,
    process_lanes,
    skipped_note,
    thread_labels,
)
from .xla import HASHED, device_lane, device_processes

KNOBS = SettingWords(
    tool="JAX",
    inter_op=(
        "XLA schedules a jitted program's ops itself; to run two branches side by side on the "
        "CPU give each its own device (XLA_FLAGS=--xla_force_host_platform_device_count=2 set "
        "before JAX starts, then each branch's inputs on its own device with jax.device_put, or "
        "jax.pmap or sharding over jax.devices()). XLA's own intra-op threads (XLAEigen, whose "
        "work this trace does not show as ops) may already keep the cores busy, so time the "
        "step both ways before keeping it."
    ),
    intra_op=(
        "bigger ops: XLA's CPU ops split themselves over its intra-op threads (the XLAEigen "
        "threads) only when they are big enough — batch the work (jax.vmap)."
    ),
    streams=(
        "XLA picks the GPU streams itself: independent work shares one GPU best as bigger "
        "fused kernels (jax.vmap), or runs side by side on several devices."
    ),
    one_at_a_time="one op at a time (XLA's CPU runtime ran this program's ops one after another)",
    bigger_ops=(
        "bigger ops (batch the work with jax.vmap): tiny ops cost more to dispatch than to run."
    ),
    experiment=(
        "run the step once with XLA_FLAGS=--xla_force_host_platform_device_count=2 set before "
        "JAX starts and each branch's inputs on its own device (jax.device_put to "
        "jax.devices()[0] and [1]), and compare the step time with the one-device run."
    ),
)


def detect(document: Document) -> bool:
    names = document.process_names.values()
    return any(name.startswith(("/host:", "/device:")) for name in names)


def _thread_name(name: str) -> str:
    """'tf_XLAEigen/-6483180353713786386' -> 'XLAEigen'."""
    return HASHED.sub("", name).removeprefix("tf_")


def _scope(piece: Slice) -> str:
    """The named scopes of an op, without the jit(...) wrappers."""
    path = str(piece.args.get("tf_op") or piece.args.get("name") or "")
    parts = [part for part in path.split("/") if part and not part.startswith(("jit(", "pjit("))]
    return "/".join(parts[:-1])


def convert(document: Document) -> Converted:
    converted = Converted()
    devices = device_processes(document)
    kept: list[Slice] = []
    skipped: dict[str, int] = defaultdict(int)
    for piece in document.slices:
        if "hlo_op" in piece.args or piece.thread[0] in devices:
            kept.append(piece)
        else:
            skipped[piece.name.split(" ", 1)[0].split("(", 1)[0][:40]] += 1
    if skipped:
        converted.notes.append(
            skipped_note(
                skipped,
                "the profiler's Python frames and the runtime's dispatch and thread-pool "
                "markers are not ops",
            )
        )
    host_threads = {p.thread for p in kept if p.thread[0] not in devices}
    lanes = process_lanes("cpu", thread_labels(document, host_threads, _thread_name))
    for piece in kept:
        device_match = devices.get(piece.thread[0])
        if device_match is None:
            ordinal = piece.args.get("device_ordinal")
            device = f"cpu:{ordinal}" if str(ordinal).isdigit() else "cpu"
            lane = lanes[piece.thread]
        else:
            device, lane = device_lane(document, piece, device_match, converted)
        name = str(piece.args.get("hlo_op", piece.name))
        converted.add(
            Draft(
                name=name,
                op_type=re.sub(r"\.\d+$", "", name),
                scope=_scope(piece),
                device=device,
                kind=EventKind.COPY if "memcpy" in piece.name.lower() else EventKind.OP,
                lane=lane,
                start=piece.start,
                end=piece.end,
            ),
            piece,
        )
    return converted


PRODUCER = Producer("jax", detect, convert, KNOBS)
