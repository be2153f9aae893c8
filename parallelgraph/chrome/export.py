"""Chrome trace-event JSON out: `to_chrome` (a pure function of a Trace) and `dump`.

Strict to the Trace Event Format, in its object form `{"traceEvents": [...], "displayTimeUnit":
"ms", "otherData": {...}}`:

- one *process* per pool, one *thread* per lane (pools and lanes as `parallelgraph.trace.lanes`
  parses them: "inter-op/3" -> pool "inter-op", thread 3). Names and order travel as metadata
  ('M') events process_name, process_sort_index, thread_name and thread_sort_index, so viewers
  keep the order of `Trace.lanes`.
- every op, shard or copy is a complete ('X') event; `ts`/`dur` are microseconds from the start
  of the trace with nanosecond precision. `dur` is chosen so that `ts + dur` computed in double
  precision (what viewers do) is exactly the event's end, so an event that nests in another in
  nanoseconds still nests after rounding. Complete events come parents first (by start, ops
  before shards, longer before shorter). Should two events on one lane overlap without nesting
  (possible only in imported traces), the later one moves to an extra thread of the same process
  named "<lane> (overlap N)", so every thread holds properly nested slices.
- a dependency between two ops on different lanes (the consumer's `inputs` name the producer)
  becomes a flow: an 's' event on the producer's thread 1 ns before the producer ends (Perfetto
  closes a slice at its end timestamp before it binds a flow there) and an 'f' event with
  binding point "e" at the consumer's start on its thread, sharing `id`, `cat` ("dependency")
  and `name` (the producer's name). Flow events follow all complete events in the file.
- every field of a TraceEvent (op type, scope, device, lane, flops, bytes, shard, inputs, and
  role and program-order predecessor when they are not the defaults) goes in the event's `args`,
  and `otherData` holds the format tag, the trace metadata (its source and lane kinds included)
  and `origin_ns` (when the first event started, in the trace's own ns clock), which is what
  makes `load` an exact inverse of `save`, every field and time included.
- with `memory=True`, the live bytes of `trace.memory` (op outputs, a model) as counter
  ('C') events named "live bytes" in a process of their own, "memory (model)", sorted after
  the pools: one event at each time the live bytes change, its `args` the bytes of every
  device from then on ({"cpu:0": 1048576}), so Perfetto draws one counter track per device
  ("live bytes cpu:0"). They come after the complete events and before the flows; a trace
  without output sizes gets none. Readers skip counters (`load` recomputes the memory from the
  events, which are unchanged), so the round trip stays exact.

`dump` never destroys what it writes over (`parallelgraph.saving.write_file`): a regular file is
written atomically (a temporary file beside the target, then `os.replace`, so a failed write -- a
full disk -- never leaves a truncated file where a good one was), through a symlink to its
target, keeping an existing file's mode and giving a new one the umask's; a FIFO or character
device is written as a stream; a folder is refused. A name ending in ".gz" is written
gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..saving import write_bytes
from ..trace.analysis import producer_run
from ..trace.lanes import Lane
from ..trace.model import WORK, EventKind, Trace, TraceEvent

FORMAT = "parallelgraph-trace/1"
FLOW_CATEGORY = "dependency"


def _event_order(event: TraceEvent) -> tuple[int, bool, int]:
    """Parents before children: by start, ops before shards, longer before shorter."""
    return (event.start, event.kind != EventKind.OP, -event.end)


def _process_label(pool: str) -> str:
    return f"{pool} pool" if pool in ("inter-op", "intra-op") else pool


def _microseconds(ns: int, origin: int) -> float:
    return (ns - origin) / 1000


def _span(start: int, end: int, origin: int) -> tuple[float, float]:
    """(ts, dur) in µs such that ts + dur, added in double precision, is exactly end in µs.

    Both ts and ts + dur then grow monotonically with the nanosecond times, so rounding can
    never make a child stick out of its parent.
    """
    ts, end_us = _microseconds(start, origin), _microseconds(end, origin)
    dur = (end - start) / 1000  # the plain value, when it adds up exactly
    if ts + dur != end_us:
        dur = end_us - ts  # exact when ts >= end_us / 2 (Sterbenz), else within an ulp of dur
        for _ in range(8):  # and then an ulp of dur moves the sum by at most one of its ulps
            total = ts + dur
            if total == end_us:
                break
            dur = math.nextafter(dur, math.inf if total < end_us else -math.inf)
        while dur > 0 and ts + dur > end_us:
            dur = math.nextafter(dur, -math.inf)
    return ts, max(dur, 0.0)


@dataclass
class _Threads:
    """Where each event goes: pid per pool, (pid, tid) per event, and the metadata events."""

    metadata: list[dict[str, Any]]
    of_event: dict[int, tuple[int, int]]  # id(event) -> (pid, tid)


def _lane_tids(lanes: Sequence[Lane], pids: dict[str, int]) -> dict[str, int]:
    """A tid per lane, unique in its process: the worker number when it is a free number."""
    taken: dict[int, set[int]] = defaultdict(set)
    tids: dict[str, int] = {}
    for lane in lanes:
        pid = pids[lane.pool]
        if lane.index is not None and lane.index not in taken[pid]:
            tids[lane.name] = lane.index
            taken[pid].add(lane.index)
    for lane in lanes:
        if lane.name not in tids:
            pid = pids[lane.pool]
            tids[lane.name] = max(taken[pid], default=-1) + 1
            taken[pid].add(tids[lane.name])
    return tids


def _nest_or_spill(events: Sequence[TraceEvent]) -> list[int]:
    """For one lane's events (in export order): 0 for the lane's own thread, k > 0 for the k-th
    overflow thread, so that the slices on every thread nest or are disjoint."""
    stacks: list[list[TraceEvent]] = []
    placement = []
    for event in events:
        for stack in stacks:
            while stack and stack[-1].end <= event.start and stack[-1].end < event.end:
                stack.pop()  # the top ended before this event: they are disjoint
        fits = (i for i, stack in enumerate(stacks) if not stack or event.end <= stack[-1].end)
        chosen = next(fits, len(stacks))
        if chosen == len(stacks):
            stacks.append([])
        stacks[chosen].append(event)
        placement.append(chosen)
    return placement


def _metadata_event(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _layout(parsed: Sequence[Lane], ordered: Sequence[TraceEvent]) -> _Threads:
    pids: dict[str, int] = {}
    for lane in parsed:
        pids.setdefault(lane.pool, len(pids) + 1)
    pools = {lane.name: lane.pool for lane in parsed}
    lanes = [lane.name for lane in parsed]
    tids = _lane_tids(parsed, pids)
    by_lane: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in ordered:
        by_lane[event.lane].append(event)
    metadata = []
    for pool, pid in pids.items():
        metadata.append(_metadata_event("process_name", pid, 0, {"name": _process_label(pool)}))
        metadata.append(_metadata_event("process_sort_index", pid, 0, {"sort_index": pid}))
    next_tid: dict[int, int] = defaultdict(int)
    for lane, tid in tids.items():
        pid = pids[pools[lane]]
        next_tid[pid] = max(next_tid[pid], tid + 1)
    of_event: dict[int, tuple[int, int]] = {}
    sort_index = 0
    for lane in lanes:
        pid = pids[pools[lane]]
        threads = {0: tids[lane]}
        placement = _nest_or_spill(by_lane[lane])
        for overflow in sorted(set(placement) - {0}):
            threads[overflow], next_tid[pid] = next_tid[pid], next_tid[pid] + 1
        for overflow, tid in sorted(threads.items()):
            name = lane if overflow == 0 else f"{lane} (overlap {overflow})"
            metadata.append(_metadata_event("thread_name", pid, tid, {"name": name}))
            order = {"sort_index": sort_index}
            metadata.append(_metadata_event("thread_sort_index", pid, tid, order))
            sort_index += 1
        for event, overflow in zip(by_lane[lane], placement):
            of_event[id(event)] = (pid, threads[overflow])
    return _Threads(metadata, of_event)


def _complete_event(event: TraceEvent, thread: tuple[int, int], origin: int) -> dict[str, Any]:
    args: dict[str, Any] = {
        "op_type": event.op_type,
        "scope": event.scope,
        "device": event.device,
        "lane": event.lane,
        "flops": event.flops,
        "bytes": event.bytes,
    }
    if event.shard is not None:
        args["shard"] = event.shard
    if event.shards > 1:
        args["shards"] = event.shards
    if event.inputs:
        args["inputs"] = list(event.inputs)
    if event.shapes:
        args["shapes"] = event.shapes
    if event.role is not WORK:
        args["role"] = event.role.value
    if event.after is not None:
        args["after"] = event.after
    ts, dur = _span(event.start, event.end, origin)
    return {
        "name": event.name if event.shard is None else f"{event.name}[{event.shard}]",
        "cat": str(event.kind),
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "pid": thread[0],
        "tid": thread[1],
        "args": args,
    }


def _flow_events(
    ordered: Sequence[TraceEvent], threads: dict[int, tuple[int, int]], origin: int
) -> list[dict[str, Any]]:
    producers: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in ordered:
        if event.kind != EventKind.SHARD:
            producers[event.name].append(event)
    flows: list[dict[str, Any]] = []
    for consumer in ordered:
        if consumer.kind == EventKind.SHARD:
            continue
        for name in consumer.inputs:
            if name not in producers:
                continue
            producer = producer_run(producers[name], consumer)
            if producer is None or producer.lane == consumer.lane:
                continue
            flow_id = len(flows) // 2 + 1
            leave = max(producer.start, producer.end - 1)
            common = {"name": producer.name, "cat": FLOW_CATEGORY, "id": flow_id}
            (pid_out, tid_out), (pid_in, tid_in) = threads[id(producer)], threads[id(consumer)]
            ts_out, ts_in = _microseconds(leave, origin), _microseconds(consumer.start, origin)
            flows.append({**common, "ph": "s", "ts": ts_out, "pid": pid_out, "tid": tid_out})
            flows.append(
                {**common, "ph": "f", "bp": "e", "ts": ts_in, "pid": pid_in, "tid": tid_in}
            )
    return flows


MEMORY_PROCESS = "memory (model)"
MEMORY_COUNTER = "live bytes"


def _memory_events(trace: Trace, pid: int, origin: int) -> list[dict[str, Any]]:
    """The memory track: a process "memory (model)" and one counter event per change of the
    live bytes (`parallelgraph.trace.memory`), or nothing when no output size is known."""
    from ..trace.memory import memory_profile

    counters = memory_profile(trace).counters()
    if not counters:
        return []
    events = [
        _metadata_event("process_name", pid, 0, {"name": MEMORY_PROCESS}),
        _metadata_event("process_sort_index", pid, 0, {"sort_index": pid}),
    ]
    for t, values in counters:
        events.append(
            {
                "name": MEMORY_COUNTER,
                "cat": "memory",
                "ph": "C",
                "ts": _microseconds(t, origin),
                "pid": pid,
                "tid": 0,
                "args": values,
            }
        )
    return events


def to_chrome(trace: Trace, memory: bool = False) -> dict[str, Any]:
    """The trace as a JSON-ready dict in the trace-event format's object form; `memory=True`
    adds the memory track (counter events, see the module docstring)."""
    ordered = sorted(trace.events, key=_event_order)
    threads = _layout([trace.lane(name) for name in trace.all_lanes], ordered)
    origin = min((event.start for event in ordered), default=0)
    slices = [_complete_event(e, threads.of_event[id(e)], origin) for e in ordered]
    if memory:
        pids = [item["pid"] for item in threads.metadata]
        slices += _memory_events(trace, max(pids, default=0) + 1, origin)
    return {
        "traceEvents": threads.metadata + slices + _flow_events(ordered, threads.of_event, origin),
        "displayTimeUnit": "ms",
        "otherData": {"format": FORMAT, "metadata": trace.metadata, "origin_ns": origin},
    }


def dump(trace: Trace, path: str | Path, memory: bool = False) -> Path:
    """Write `trace` as Chrome trace-event JSON to `path` (parents created; gzip when the name
    ends in ".gz") and return it. Atomic for a regular file: the old file stays whole if the
    write fails; a FIFO or device is written as a stream, a folder refused (OSError).
    `memory=True` adds the memory track (counter events)."""
    path = Path(path)
    data = json.dumps(to_chrome(trace, memory=memory), default=str).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return write_bytes(path, data)
