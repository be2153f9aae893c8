"""Trace-event JSON in: a file or a parsed document to a Trace, whoever wrote it.

`load(path)` reads the file (`files`: gzip, folders, encodings, clear errors), `read_document`
turns its events into slices (`document`), and the first producer module whose `detect` says
yes converts them (`producers`: parallelgraph, TensorFlow, PyTorch, JAX, Python tracers, then
any trace-event file). What is common to all of them happens here:

- **dependencies from flows**: each flow step links the slice it binds to (the deepest slice
  enclosing its timestamp on its thread; an 'f' without `"bp": "e"` binds to the next slice that
  begins there) to the next step's slice;
- **unique names**: imported names that repeat ("aten::mm") get "#2", "#3".. in start order so
  that `inputs` and the critical path can tell instances apart;
- **roles**: for a producer that cannot name its waiting events, the enclosing events that wait
  for work on other lanes are found by their timing (`roles.infer_waiting`);
- **program order**: on the lanes the producer says ran in program order, each outermost work
  op comes `after` the one before it;
- **metadata**: `source` (the producer), `lane_kinds` (the kind of every lane, as the producer
  decided it: our lane-naming rules are for our own files only), `notes` (what was left out or
  repaired, and why), and `imported` (the file and its header, e.g. PyTorch's
  deviceProperties).
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..trace.model import WORK, EventKind, Trace, role_nesting
from ..trace.run_info import Metadata, RunInfo
from .document import Document, FlowPoint, Slice, Thread, read_document
from .files import paused_gc, read_json
from .producers import detect_producer
from .producers.base import Converted, Draft
from .roles import infer_waiting


class _ThreadIndex:
    """Slices of one thread sorted by start, each with its enclosing slice, for flow binding."""

    def __init__(self, pieces: Iterable[Slice]):
        self.pieces = sorted(pieces, key=lambda p: (p.start, -p.end, p.index))
        self.starts = [piece.start for piece in self.pieces]
        self.parent: list[int] = []
        stack: list[int] = []
        for position, piece in enumerate(self.pieces):
            while stack and not piece.end <= self.pieces[stack[-1]].end:
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(position)

    def enclosing(self, ts: int) -> Slice | None:
        """The deepest slice with start <= ts <= end."""
        position = bisect.bisect_right(self.starts, ts) - 1
        while position >= 0 and self.pieces[position].end < ts:
            position = self.parent[position]
        return self.pieces[position] if position >= 0 else None

    def next_from(self, ts: int) -> Slice | None:
        """The first slice that begins at or after ts (the outermost one at that time)."""
        position = bisect.bisect_left(self.starts, ts)
        return self.pieces[position] if position < len(self.pieces) else self.enclosing(ts)


def _flow_chains(points: Iterable[FlowPoint]) -> list[list[FlowPoint]]:
    """Flows as ordered steps: an 's' starts one, 't' continues it, 'f' ends it."""
    by_key: dict[tuple[str, str], list[FlowPoint]] = defaultdict(list)
    for point in points:
        by_key[point.key].append(point)
    chains: list[list[FlowPoint]] = []
    for steps in by_key.values():
        current: list[FlowPoint] = []
        for point in sorted(steps, key=lambda p: (p.ts, p.index)):
            if point.phase == "s" and current:
                chains.append(current)
                current = []
            current.append(point)
            if point.phase == "f":
                chains.append(current)
                current = []
        if current:
            chains.append(current)
    return [chain for chain in chains if len(chain) > 1]


def _flow_edges(document: Document, owner: dict[int, Draft]) -> list[tuple[Draft, Draft]]:
    if not document.flows:
        return []
    owned: dict[Thread, list[Slice]] = defaultdict(list)
    for piece in document.slices:
        if piece.index in owner:
            owned[piece.thread].append(piece)
    indexes = {thread: _ThreadIndex(pieces) for thread, pieces in owned.items()}

    def bind(point: FlowPoint) -> Draft | None:
        index = indexes.get(point.thread)
        if index is None:
            return None
        piece = index.enclosing(point.ts) if point.enclosing else index.next_from(point.ts)
        return owner[piece.index] if piece is not None else None

    edges = []
    for chain in _flow_chains(document.flows):
        bound = [bind(point) for point in chain]
        edges.extend(
            (producer, consumer)
            for producer, consumer in itertools.pairwise(bound)
            if producer is not None and consumer is not None
        )
    return edges


def _make_names_unique(drafts: Sequence[Draft]) -> None:
    """Repeated names of ops and copies get '#2', '#3'.. in start order (shards follow)."""
    seen: Counter[str] = Counter()
    ops = [draft for draft in drafts if draft.parent is None]
    for draft in sorted(ops, key=lambda d: (d.start, -d.end, d.lane)):
        seen[draft.name] += 1
        if seen[draft.name] > 1:
            draft.name = f"{draft.name}#{seen[draft.name]}"


def _attach_inputs(edges: Iterable[tuple[Draft, Draft]]) -> None:
    """Each edge as an input of its consumer (of the op, for a shard's edge); two events with
    flows both ways are messages, not an order, and neither becomes the other's input."""
    pairs = [
        (producer.parent or producer, consumer.parent or consumer) for producer, consumer in edges
    ]
    ids = {(id(producer), id(consumer)) for producer, consumer in pairs}
    for producer, consumer in pairs:  # in the order the producer gave them
        if consumer.kind == EventKind.SHARD or producer is consumer:
            continue  # a shard without its op (generic files) keeps no inputs
        if (id(consumer), id(producer)) in ids:
            continue
        if producer.name not in consumer.inputs:
            consumer.inputs.append(producer.name)


def _program_order(
    drafts: Sequence[Draft], placed: Sequence[tuple[int, int]], converted: Converted
) -> None:
    """On each program-order lane, every outermost work op comes after the one before it."""
    if not converted.program_order:
        return
    previous: dict[str, Draft] = {}
    for draft, (_, parent) in zip(drafts, placed):  # drafts are in start order
        if draft.lane not in converted.program_order or parent >= 0:
            continue
        if draft.kind != EventKind.OP or draft.role is not WORK or draft.parent is not None:
            continue
        before = previous.get(draft.lane)
        if before is not None and before.end <= draft.start:
            draft.after = before.name
        previous[draft.lane] = draft


def _info(document: Document, source: str, converted: Any) -> RunInfo | Metadata:
    """Ours: the file's metadata, checked, in its own key order; another tool's: built."""
    if source == "parallelgraph":
        metadata = document.header["otherData"].get("metadata", {})
        return Metadata.of(metadata, document.source, file=True)
    imported: dict[str, Any] = {"source": document.source}
    if document.header:
        imported["header"] = document.header  # e.g. PyTorch's schemaVersion, deviceProperties
    kinds = converted.every_lane_kind()  # a foreign file's lane names are not ours to parse
    notes = (*document.notes, *converted.notes)
    return RunInfo(
        source=source,
        imported=imported,
        lane_kinds={lane: kind.value for lane, kind in kinds.items()} if kinds else None,
        notes=notes or None,
        cores=converted.cores or _recorded_cores(document.header),
        recorded=converted.settings or None,
    )


def _recorded_cores(header: dict[str, Any]) -> int | None:
    """The CPUs a file's header says its machine had: Chrome's `metadata["num-cpus"]`."""
    metadata = header.get("metadata") if isinstance(header, dict) else None
    cores = metadata.get("num-cpus") if isinstance(metadata, dict) else None
    return cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None


def from_chrome(document: Any, source: str = "<trace>") -> Trace:
    """A Trace from a parsed trace-event document (object or bare-list form).

    Reads our own files and those of TensorFlow, PyTorch, JAX, viztracer and other Python
    tracers, and any trace-event JSON; see `parallelgraph.chrome.producers` for what each
    becomes. `source` names the document in error messages. Raises ValueError for a malformed
    document.
    """
    parsed = read_document(document, source)
    producer = detect_producer(parsed)
    converted = producer.convert(parsed)
    if producer.name != "parallelgraph":
        _make_names_unique(converted.drafts)
        converted.edges.extend(_flow_edges(parsed, converted.owner))
    _attach_inputs(converted.edges)
    drafts = sorted(converted.drafts, key=lambda d: (d.start, d.kind != EventKind.OP, -d.end))
    if converted.infer_waiting:
        infer_waiting(drafts, converted)
    placed = role_nesting(drafts)  # as the Trace would nest them, so it has nothing to redo
    _program_order(drafts, placed, converted)
    events = [
        draft.freeze(depth, drafts[parent].event_name if parent >= 0 else None)
        for draft, (depth, parent) in zip(drafts, placed)
    ]
    return Trace(events, _info(parsed, producer.name, converted), nested=True)


def load(path: str | Path, max_bytes: int | None = None) -> Trace:
    """Read a trace file — `.json` or gzip, or the one trace file in a folder — written by
    parallelgraph, TensorFlow, PyTorch, JAX, viztracer or another tool. A ValueError naming
    the file says what is wrong with a malformed one; `max_bytes` raises the budget for the
    decompressed text (`files.read_json`). The collector is paused while the events are built:
    they are many small objects, and its passes made loading quadratic."""
    document, source = read_json(path, max_bytes)
    with paused_gc():
        return from_chrome(document, source)
