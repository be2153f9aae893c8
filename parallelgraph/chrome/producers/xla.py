"""What XLA's profiler writes, whoever runs it: JAX and TensorFlow 2 both record through it and
export the trace viewer's JSON, so their files share these conventions (used by `jax` and
`tf_profiler`; not a producer of its own):

- device processes are named "/device:GPU:0" (and "/host:CPU" for the host);
- a GPU stream is a thread named "... Stream #14 ...";
- host threads carry a hash after a "/" ("tf_XLAEigen/-6483180353713786386").
"""

from __future__ import annotations

import re
from typing import Any

from ...trace.lanes import LaneKind
from ..document import Document, Slice
from .base import Converted

HASHED = re.compile(r"/-?\d+$")
DEVICE = re.compile(r"^/device:([A-Za-z]+):(\d+)")
STREAM = re.compile(r"Stream #(\d+)")


def device_processes(document: Document) -> dict[Any, re.Match[str]]:
    """pid -> the match of its "/device:KIND:N" process name, for the device processes."""
    return {
        pid: match for pid, name in document.process_names.items() if (match := DEVICE.match(name))
    }


def device_lane(
    document: Document, piece: Slice, device: re.Match[str], converted: Converted
) -> tuple[str, str]:
    """(device, lane) of an event of a device process: "gpu:0", "gpu:0/stream:14" (a stream,
    recorded as such in `converted.lane_kinds`) or "gpu:0/<thread>"."""
    name = f"{device.group(1).lower()}:{device.group(2)}"
    thread = document.thread_names.get(piece.thread, str(piece.thread[1]))
    stream = STREAM.search(thread)
    lane = f"{name}/stream:{stream.group(1)}" if stream else f"{name}/{thread}"
    if stream:
        converted.lane_kinds[lane] = LaneKind.STREAM
    return name, lane
