"""PaddlePaddle's profiler: `paddle.profiler.Profiler(..., on_trace_ready=
export_chrome_tracing(dir))` (`<host>_pid_<pid>_time_<when>.paddle_trace.json`).

What Paddle 3.3 writes on the CPU (tests/fixtures/real/README.md has the details): an object
with `traceEvents`, `ExtraInfo` (tid -> thread name, CPU utilisation), `span_index` and
`schemaVersion`; 'X' events whose names end with their own duration ("net1[2.120 ms]",
"matmul dygraph[1.059 ms]"); and **each OS thread written as two lanes**: tid "<tid>(Python)"
holds what Python recorded (the profiler's steps, each `nn.Layer`'s forward, the user's
`RecordEvent` labels) and tid "<tid>(C++)" what the runtime did (operators, their phases, the
Python API's C++ entries). Read as two threads, one thread's work looks twice as large and
"in parallel" with itself.

- **lanes**: a thread is its OS thread, so its Python and C++ lanes are one lane,
  "paddle/<thread name>" ("paddle/MainThread"; "paddle:<pid>/<thread>" with several
  processes);
- **names** lose the duration Paddle wrote into them and its " dygraph" and pybind suffixes
  ("matmul", "relu"); **times** come from each event's `args.start_time`/`end_time` (to the ns)
  rather than its `ts`, which Paddle rounds to a whole µs (`_precise`);
- **ops**: `Operator` events and the C++ entries that hold them (`UserDefined`, "relu
  pybind_imperative_func": an op nested in one counts once); an operator's own phases
  (`OperatorInner` "infer_meta", `DygraphKernelLaunch`) are part of it and left out;
- **scopes**: the `RecordEvent("net1")` label around an op (`PythonUserDefined`) and the
  labels and layers inside it (`Forward`: "net1/Branch/Linear"; the layers around the label
  are the model that holds the branches, and an op outside every label, the final add, is no
  branch); in a file without labels, the layers ("TwoBranch/Branch/Linear");
- **the profiler's own**: `ProfileStep#N` (Paddle's step, not a scope), left out with a note;
- **program order**: dygraph runs a thread's ops one after another, so every lane is a
  program-order lane.

Only CPU traces were tried; a GPU run's device events are read as ops of their own lanes.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections import defaultdict
from typing import Any

from ...trace.model import EventKind
from ..document import Document, Slice, Thread
from .base import (
    Converted,
    Draft,
    Producer,
    SettingWords,
    enclosing_names,
    process_lanes,
    skipped_note,
    thread_labels,
)

LABELS = "PythonUserDefined"  # paddle.profiler.RecordEvent from Python
LAYERS = "Forward"  # an nn.Layer's forward
STEPS = "ProfileStep"
PHASES = frozenset({"OperatorInner", "DygraphKernelLaunch"})  # an operator's own parts
CATEGORIES = frozenset({"Operator", "UserDefined", LABELS, LAYERS, STEPS, *PHASES})
_LANE = re.compile(r"^(\d+)\((?:Python|C\+\+)\)$")  # tid "2274(Python)", "2274(C++)"
_THREAD_NAME = re.compile(r"^thread \d+:(.*)\((?:Python|C\+\+)\)$")  # "thread 2274:MainThread(C++)"
_DURATION = re.compile(r"\[[\d.]+ ?(?:ns|us|ms|s)\]$")
_SUFFIXES = (" dygraph", " pybind_imperative_func", " pybind_patch_func")
_OFFSET = re.compile(r"^\s*([\d.]+) ?(ns|us|ms|s)\s*$")
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}

KNOBS = SettingWords(
    tool="PaddlePaddle",
    inter_op=(
        "run the branches concurrently: dygraph Paddle runs ops one after another on the "
        "calling thread, so branches overlap only when called from separate threads or "
        "processes — and small ops gain nothing from it: measure (two Python threads were "
        "slower than one for a small two-branch model on 2 cores)."
    ),
    intra_op=(
        "let each op use more threads: paddle.base.core.set_num_threads(N) (or "
        "OMP_NUM_THREADS=N before Paddle starts) sets the CPU math library's threads."
    ),
    streams=(
        "give each branch its own stream (paddle.device.Stream, under "
        "paddle.device.stream_guard(s)) and synchronise the streams before combining results."
    ),
    one_at_a_time=(
        "one thread at a time (dygraph Paddle runs ops one after another on the calling thread)"
    ),
    experiment=(
        "time a step with the default settings, with paddle.base.core.set_num_threads(2), and "
        "with the branches called from two threads, each in a fresh process, and compare."
    ),
)


def detect(document: Document) -> bool:
    return any(
        piece.cat in CATEGORIES and _LANE.match(str(piece.thread[1]))
        for piece in document.slices[:500]
    )


def os_thread(thread: Thread) -> Thread:
    """(pid, "2274(C++)") and (pid, "2274(Python)") -> (pid, 2274): the thread they both are."""
    lane = _LANE.match(str(thread[1]))
    return (thread[0], int(lane.group(1))) if lane else thread


def bare_name(name: str) -> str:
    """ "matmul dygraph[1.059 ms]" -> "matmul": without the duration Paddle wrote in."""
    name = _DURATION.sub("", name).strip()
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _offset_ns(value: Any) -> int | None:
    """ "68.323 us" (an event's `args.start_time`, from the first step's start) in ns."""
    found = _OFFSET.match(value) if isinstance(value, str) else None
    return round(float(found.group(1)) * _UNITS[found.group(2)]) if found else None


def _precise(pieces: list[Slice]) -> list[Slice]:
    """Slices timed by their `args.start_time`/`end_time` (ns) where they carry them: Paddle
    rounds `ts` to a whole µs, so an operator that began within a µs of the previous one's end
    seemed to overlap it, and the overlap counted twice as work. The offsets share one origin:
    the file's `ts` less its offset, the same for every event to within the rounding."""
    offsets = [
        (piece, start, end)
        for piece in pieces
        if (start := _offset_ns(piece.args.get("start_time"))) is not None
        and (end := _offset_ns(piece.args.get("end_time"))) is not None
        and start <= end
    ]
    if not offsets:
        return pieces
    origin = round(statistics.median(piece.start - start for piece, start, _ in offsets))
    timed = {piece.index: (origin + start, origin + end) for piece, start, end in offsets}
    return [
        dataclasses.replace(piece, start=timed[piece.index][0], end=timed[piece.index][1])
        if piece.index in timed
        else piece
        for piece in pieces
    ]


def _threads_merged(document: Document) -> Document:
    """The document with each OS thread's two lanes as one thread, names without durations,
    times to the ns (`_precise`)."""
    names: dict[Thread, str] = {}
    for thread, name in document.thread_names.items():
        given = _THREAD_NAME.match(name)
        names[os_thread(thread)] = given.group(1) if given else name
    extra: Any = document.header.get("ExtraInfo")
    if isinstance(extra, dict):  # tid -> name, where no metadata event named it
        for piece in document.slices:
            thread = os_thread(piece.thread)
            if thread not in names and isinstance(extra.get(str(thread[1])), str):
                names[thread] = extra[str(thread[1])]
    slices = [
        dataclasses.replace(piece, thread=os_thread(piece.thread), name=bare_name(piece.name))
        for piece in _precise(document.slices)
    ]
    return dataclasses.replace(document, slices=slices, thread_names=names)


def _scopes(kept: list[Slice], labels: list[Slice], layers: list[Slice]) -> dict[int, str]:
    """Slice index -> its scope: from the outermost label around it, that label and the labels
    and layers inside it ("net1/Branch/Linear": the layers around the label are the model
    that holds the branches, not a branch); an op outside every label has none. Without
    labels in the file, the layers alone ("TwoBranch/Branch/Linear")."""
    around = enclosing_names(kept, labels + layers)
    label_names = {label.name for label in labels}
    scopes = {}
    for piece in kept:
        names = around.get(piece.index, [])
        first = next((i for i, name in enumerate(names) if name in label_names), None)
        if first is not None:
            scopes[piece.index] = "/".join(names[first:])
        else:
            scopes[piece.index] = "" if labels else "/".join(names)
    return scopes


def convert(document: Document) -> Converted:
    converted = Converted()
    merged = _threads_merged(document)
    labels: list[Slice] = []
    layers: list[Slice] = []
    kept: list[Slice] = []
    skipped: dict[str, int] = defaultdict(int)
    for piece in merged.slices:
        if piece.cat == LABELS:
            labels.append(piece)
        elif piece.cat == LAYERS:
            layers.append(piece)
        elif piece.cat == STEPS:
            skipped["ProfileStep#N"] += 1
        elif piece.cat in PHASES:
            skipped[piece.name.partition(" ")[2] or piece.name] += 1  # "kernel launch"
        else:
            kept.append(piece)
    if skipped:
        converted.notes.append(
            skipped_note(
                skipped,
                "the profiler's own steps, and an operator's own phases (part of the operator)",
            )
        )
    scopes = _scopes(kept, labels, layers)
    lanes = process_lanes("paddle", thread_labels(merged, {piece.thread for piece in kept}))
    for piece in kept:
        converted.add(
            Draft(
                name=piece.name,
                op_type=piece.name,
                scope=scopes[piece.index],
                device="cpu",
                kind=EventKind.OP,
                lane=lanes[piece.thread],
                start=piece.start,
                end=piece.end,
            ),
            piece,
        )
    converted.program_order = set(lanes.values())
    return converted


PRODUCER = Producer("paddle", detect, convert, KNOBS)
