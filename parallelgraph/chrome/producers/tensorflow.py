"""TensorFlow timelines: `timeline.Timeline(step_stats).generate_chrome_trace_format()`.

The file the seed's question was asked about (`trace.ctf.json`). Its processes are devices
("/job:localhost/replica:0/task:0/device:CPU:0 Compute"), its events of category "Op" are graph
nodes: the event's name is the op *type*, `args.name` the node (with its name scope) and
`args.op` the type, `args.input0`.. the node's inputs. So: name = node name, scope = the part
before its last "/", op_type = `op`, device "cpu:0"/"gpu:0" from the device path, lane
"<device path>/<tid>" ("cpu:0/0", "gpu:0/stream:14/0", "gpu:0/memcpy/0"; a job, replica or task
other than localhost/0/0 stays in the path).

Timeline's `tid` is not a thread: Timeline packs ops into rows so that ops on one row never
overlap. A run with `inter_op_parallelism_threads=1` therefore has one row per device, and the
number of rows says how many ops ran at once, not how many threads there were.

When the GPU tracer recorded kernels ("/stream:N" and "/memcpy" devices) they *are* the op: the
node's executor-side event (the launch) is dropped, its `inputN` args kept; a node with several
kernels becomes an op spanning them with one shard per kernel; "/stream:all" is skipped when
per-stream devices are present (it repeats them); memcpy devices and MEMCPY* ops are copies; GPU
lanes are streams (TensorFlow 1.x ran a GPU's kernels on one compute stream). "... Tensors" and
"Allocators" processes (tensor lifetimes, memory counters) are skipped, and so are the
executor's own `_SOURCE` and `_Retval` nodes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ...devices import DeviceKind, device_kind
from ...trace.lanes import LaneKind
from ...trace.model import EventKind
from ..document import Document, Slice
from .base import Converted, Draft, Producer, SettingWords, scope_of, skipped_note

KNOBS = SettingWords(
    tool="TensorFlow",
    inter_op=(
        "inter_op_parallelism_threads=2 or more — tf.compat.v1.ConfigProto("
        "inter_op_parallelism_threads=2) for a Session, or "
        "tf.config.threading.set_inter_op_parallelism_threads(2) in TF2 (before any op runs): "
        "independent ops, such as two branches, then run at the same time."
    ),
    intra_op=(
        "intra_op_parallelism_threads (ConfigProto, or "
        "tf.config.threading.set_intra_op_parallelism_threads in TF2): one MatMul then runs on "
        "several threads."
    ),
    streams=(
        "TensorFlow runs one GPU's kernels on one compute stream, so independent subgraphs on "
        "it take turns: batch them into bigger kernels, or place them on two GPUs "
        "(tf.device('/gpu:1')); on the CPU, inter_op_parallelism_threads=2 overlaps them."
    ),
    one_at_a_time=(
        "one inter-op thread (what inter_op_parallelism_threads=1 does; Timeline put every op "
        "on one row)"
    ),
)

EXECUTOR_NODES = ("_SOURCE", "_SINK")
EXECUTOR_OPS = ("_Retval", "_Arg")


def detect(document: Document) -> bool:
    names = document.process_names.values()
    return any(name.endswith(" Compute") for name in names) and any(
        piece.cat == "Op" for piece in document.slices
    )


_TF_DEVICE = re.compile(r"(?:device:)?([A-Za-z_]+):(\d+)$")


@dataclass(frozen=True)
class TfDevice:
    """A TensorFlow device, from a process name of the timeline."""

    device: str  # "gpu:0"
    path: str  # "gpu:0/stream:14": the lane's pool
    gputrace: bool  # a GPU tracer device (kernels on a stream, or memcpys)
    stream_all: bool


def _tf_device(process_name: str) -> TfDevice:
    """'/job:localhost/replica:0/task:0/device:GPU:0' -> gpu:0; keep non-default job/task."""
    parts = [part for part in process_name.strip("/").split("/") if part]
    job = next((p for p in parts if p.startswith("job:")), "job:localhost")
    prefix, device, extras = [], "", []
    for part in parts:
        match = _TF_DEVICE.match(part)
        if part.startswith("job:") and part != "job:localhost":
            prefix.append(part)
        elif part.startswith(("replica:", "task:")):
            if job != "job:localhost" or part.rpartition(":")[2] != "0":
                prefix.append(part)
        elif match and not device and not part.startswith(("stream:", "job:")):
            device = f"{match.group(1).lower()}:{match.group(2)}"
        elif not part.startswith("job:"):
            extras.append(part)
    gputrace = any(p.startswith("stream:") or p == "memcpy" for p in extras)
    if not device:  # no device in the name: the name is the device
        device = "/".join(parts) or process_name
        return TfDevice(device, device, gputrace, "stream:all" in extras)
    path = "/".join([*prefix, device, *extras])
    return TfDevice(device, path, gputrace, "stream:all" in extras)


def _tf_devices(document: Document) -> dict[Any, TfDevice]:
    """Compute processes by pid, without /stream:all when per-stream devices exist."""
    devices = {
        pid: _tf_device(name.removesuffix(" Compute"))
        for pid, name in document.process_names.items()
        if name.endswith(" Compute")
    }
    per_stream = {d.device for d in devices.values() if d.gputrace and not d.stream_all}
    return {pid: d for pid, d in devices.items() if not (d.stream_all and d.device in per_stream)}


def _tf_inputs(args: dict[str, Any]) -> list[str]:
    """Node names from args input0, input1..: '^ctrl' and 'node:1' name the node."""
    numbered = sorted(
        (int(key[5:]), value)
        for key, value in args.items()
        if key.startswith("input") and key[5:].isdigit()
    )
    names = (str(value).lstrip("^") for _, value in numbered)
    return [re.sub(r":\d+$", "", name) for name in names]


def _tf_kernels(
    converted: Converted, node: str, op_type: str, kernels: list[tuple[Slice, TfDevice]]
) -> Draft:
    """The op of a node that ran GPU kernels: the kernel, or a span of them with shards."""

    def draft(piece: Slice, device: TfDevice, kind: EventKind, **extra: Any) -> Draft:
        lane = f"{device.path}/{piece.thread[1]}"
        if device.path.endswith("/memcpy"):  # GPU work on it makes it a stream (`convert`)
            converted.lane_kinds.setdefault(lane, LaneKind.COPY)
        return Draft(
            name=node,
            op_type=op_type,
            scope=scope_of(node),
            device=device.device,
            kind=kind,
            lane=lane,
            start=piece.start,
            end=piece.end,
            **extra,
        )

    first, device = kernels[0]
    copy = device.path.endswith("/memcpy") or op_type.upper().startswith("MEMCPY")
    op = draft(first, device, EventKind.COPY if copy else EventKind.OP)
    if len(kernels) == 1:
        return converted.add(op, first)
    op.end = max(piece.end for piece, _ in kernels)
    converted.add(op)
    for number, (piece, where) in enumerate(kernels):
        converted.add(draft(piece, where, EventKind.SHARD, shard=number, parent=op), piece)
    return op


def convert(document: Document) -> Converted:
    devices = _tf_devices(document)
    converted = Converted()
    kernels: dict[str, list[tuple[Slice, TfDevice]]] = defaultdict(list)
    launches: list[tuple[Slice, TfDevice]] = []
    skipped: dict[str, int] = defaultdict(int)
    for piece in document.slices:
        device = devices.get(piece.thread[0])
        if device is None:
            continue
        node = str(piece.args.get("name", piece.name))
        if node in EXECUTOR_NODES or str(piece.args.get("op")) in EXECUTOR_OPS:
            skipped[str(piece.args.get("op", piece.name))] += 1
            continue
        (kernels[node] if device.gputrace else launches).append((piece, device))
    if skipped:
        converted.notes.append(skipped_note(skipped, "the executor's own nodes, not the graph's"))
    ops: dict[str, Draft] = {}
    for node, pieces in kernels.items():
        op_type = str(pieces[0][0].args.get("op", pieces[0][0].name))
        ops[node] = _tf_kernels(converted, node, op_type, pieces)
    wanted: list[tuple[str, list[str]]] = []
    for piece, device in launches:
        node = str(piece.args.get("name", piece.name))
        wanted.append((node, _tf_inputs(piece.args)))
        if node in kernels:
            converted.owner[piece.index] = ops[node]
            continue
        ops[node] = converted.add(
            Draft(
                name=node,
                op_type=str(piece.args.get("op", piece.name)),
                scope=scope_of(node),
                device=device.device,
                kind=EventKind.OP,
                lane=f"{device.path}/{piece.thread[1]}",
                start=piece.start,
                end=piece.end,
            ),
            piece,
        )
    for node, inputs in wanted:
        converted.edges.extend((ops[name], ops[node]) for name in inputs if name in ops)
    for draft in converted.drafts:
        if device_kind(draft.device) is DeviceKind.GPU and draft.kind != EventKind.COPY:
            converted.lane_kinds[draft.lane] = LaneKind.STREAM
    return converted


PRODUCER = Producer("tensorflow", detect, convert, KNOBS)
