"""Any trace-event file: a slice is an op, its name says its scope, its thread is its lane.

The fallback for files no other producer module recognises (and the base of our own files'
reader): name and category as the op type; the scope is the name up to its last "/" (the
convention of TensorFlow and parallelgraph); the lane is "<process name>/<thread name>" — a thread
is its (pid, tid), the names only label it: the pid or tid stands in for a missing name and is
added to a name that repeats (two "Renderer" processes, Chromium's many
"ThreadPoolForegroundWorker" threads), so every thread is a lane of its own and each process's
lanes are drawn together; a named thread is just its name when the file has one unnamed process
and no other thread has that name; "memcpy" in the category or name makes a copy; and any of our own
`args` keys that are present (lane, scope, op_type, device, flops, bytes, shard, inputs, role,
after) win. Lanes are named, not parsed: a thread called "transfer" or "memcpy" is a thread that
computed, unless the file's own `lane` args say otherwise (our files). Waiting is found by its
timing (`parallelgraph.chrome.roles`): a producer we do not know cannot name it.
"""

from __future__ import annotations

from collections import Counter

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, EventRole
from ..document import Document, Thread
from .base import (
    Converted,
    Draft,
    Producer,
    SettingWords,
    integer,
    process_labels,
    scope_of,
    thread_labels,
)

ROLES = {role.value: role for role in EventRole}

#: An event's kind by its category: our own files write it there.
KINDS = {kind.value: kind for kind in EventKind}

KNOBS = SettingWords(
    tool="the traced program",
    inter_op=(
        "run the independent parts concurrently: a setting of the framework that lets "
        "independent ops run at the same time, or separate threads or processes."
    ),
    intra_op="let the longest ops use more threads (the library's or framework's thread count).",
    streams="put independent GPU work on separate CUDA streams.",
    one_at_a_time="one op at a time",
)


def lanes_by_thread(document: Document) -> dict[Thread, str]:
    """'<process>/<thread>' per thread (see the module docstring)."""
    threads = {piece.thread for piece in document.slices}
    pids = {pid for pid, _ in threads}
    labels = thread_labels(document, threads)
    processes = process_labels(document, pids)
    names = Counter(document.thread_names[t] for t in threads if t in document.thread_names)
    lanes = {}
    for thread in threads:
        named = document.thread_names.get(thread)
        alone = len(pids) == 1 and document.process_names.get(thread[0]) is None
        if alone and named and names[named] == 1 and "/" not in named:
            lanes[thread] = named
        else:
            lanes[thread] = f"{processes[thread[0]]}/{labels[thread]}"
    return lanes


def convert(document: Document, ours: bool = False) -> Converted:
    """Slices with whatever of our `args` they carry; derive the rest from name and thread.
    `ours`: the file is parallelgraph's, whose lane names follow our rules."""
    lanes = lanes_by_thread(document)
    converted = Converted(infer_waiting=not ours)
    for piece in document.slices:
        args, name = piece.args, piece.name
        shard = args.get("shard")
        kind = KINDS.get(piece.cat, EventKind.OP)
        if "memcpy" in f"{piece.cat} {name}".lower() and piece.cat not in KINDS:
            kind = EventKind.COPY
        if kind is EventKind.SHARD and not isinstance(shard, int):
            kind, shard = EventKind.OP, None
        if shard is not None and name.endswith(f"[{shard}]"):
            name = name[: -len(f"[{shard}]")]
        inputs = args.get("inputs")
        converted.add(
            Draft(
                name=name,
                op_type=str(args.get("op_type") or piece.cat or name),
                scope=str(args.get("scope", scope_of(name))),
                device=str(args.get("device", document.process_names.get(piece.thread[0], ""))),
                kind=kind,
                lane=str(args.get("lane") or lanes[piece.thread]),
                start=piece.start,
                end=piece.end,
                flops=integer(args.get("flops")),
                bytes=integer(args.get("bytes")),
                shard=shard if kind is EventKind.SHARD else None,
                shards=max(1, integer(args.get("shards"))) if kind is EventKind.SHARD else 1,
                inputs=[str(x) for x in inputs] if isinstance(inputs, list) else [],
                shapes=str(args.get("shapes", "")),
                role=ROLES.get(str(args.get("role", "work")), EventRole.WORK),
                after=str(args["after"]) if isinstance(args.get("after"), str) else None,
            ),
            piece,
        )
    if not ours:  # a foreign file's thread names say nothing about what a lane is
        copies: dict[str, bool] = {}  # one pass: a lane per thread made this quadratic
        for draft in converted.drafts:
            copies[draft.lane] = copies.get(draft.lane, True) and draft.kind is EventKind.COPY
        for lane, only_copies in copies.items():
            converted.lane_kinds[lane] = LaneKind.COPY if only_copies else LaneKind.WORKER
    return converted


PRODUCER = Producer("trace-event", lambda document: True, convert, KNOBS)
