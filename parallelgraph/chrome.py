"""Chrome trace-event JSON out and in: the format of chrome://tracing and Perfetto, written by
`Trace.save` and by TensorFlow 1.x's timeline and PyTorch's profiler.

**Export** (`to_chrome`, `dump`) is a pure function of a Trace, strict to the Trace Event
Format, in its object form `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`:

- one *process* per pool or device, one *thread* per lane: a lane "<pool>/<worker>" is split at
  its last "/" ("inter-op/3" -> pool "inter-op", thread 3; "worker-tcp://h:1234/0" -> pool
  "worker-tcp://h:1234", thread 0). Names and order travel as metadata ('M') events
  process_name, process_sort_index, thread_name and thread_sort_index, so viewers keep the order
  of `Trace.lanes`.
- every op, shard or copy is a complete ('X') event; `ts`/`dur` are microseconds from the start of
  the trace with nanosecond precision. `dur` is chosen so that `ts + dur` computed in double
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
- every field of a TraceEvent (op type, scope, device, lane, flops, bytes, shard, inputs) goes in
  the event's `args`, and `otherData` holds the format tag, the trace metadata and `origin_ns`
  (when the trace started, in the trace's own ns clock), which is what makes `load` an exact
  inverse of `save`, every field and time included.

**Import** (`from_chrome`, `load`) reads the object form and the bare-list form (whose closing
"]" may be missing, as the format allows for streamed writers). Timestamps are always
microseconds (`displayTimeUnit` only changes what viewers display). It takes complete ('X')
events, 'B'/'E' pairs (matched as a stack per pid/tid, in timestamp order), 'M' process and
thread names, and flow events ('s', 't', 'f'); it skips every other phase (counters, instants,
async, object and sample events, and letters it does not know). Then one of four readers turns
slices into events:

- **parallelgraph** (`otherData.format` is ours): every field comes back from `args`.
- **TensorFlow 1.x timeline** (processes "<device> Compute", events of category "Op" whose args
  hold the node `name` and `op` type): name = node name, scope = the part before its last "/",
  op_type = `op`, device "gpu:0" from "/job:localhost/replica:0/task:0/device:GPU:0", lane
  "<device path>/<tid>" ("gpu:0/0", "gpu:0/stream:14/0", "gpu:0/memcpy/0"; a job, replica or
  task other than localhost/0/0 stays in the path). When the GPU tracer recorded kernels
  ("/stream:N" and "/memcpy" devices) they *are* the op: its executor-side event (the launch) is
  dropped, its `inputN` args kept; a node with several kernels becomes an op spanning them with
  one shard per kernel; "/stream:all" is skipped when per-stream devices are present (it repeats
  them); memcpy devices and MEMCPY* ops are copies. "... Tensors" and "Allocators" processes
  (tensor lifetimes, memory counters) are skipped.
- **PyTorch profiler** (Kineto categories such as cpu_op, kernel, cuda_runtime, gpu_memcpy): CPU
  events on lanes "cpu/<tid>" ("cpu:<pid>/<tid>" when several processes), GPU events (kernel,
  gpu_memcpy, gpu_memset and whatever shares their pid) on "gpu:<device>/stream/<stream>";
  gpu_memcpy is a copy. record_function ranges (user_annotation, gpu_user_annotation; not
  ProfilerStep#N) become the *scope* of the events inside them, not events; a GPU event outside
  any annotation takes the scope of the runtime call that launched it (same `correlation`).
  Python-stack, overhead and iteration-span events are skipped.
- **generic**: name, category as op type, scope from the name, lane "<process name>/<thread
  name>" (pid or tid where a name is missing; a named thread of an unnamed process is just its
  name), "memcpy" in category or name makes a copy, and any of our `args` keys that are present
  (lane, scope, op_type, device, flops, bytes, shard, inputs) win.

Dependencies: `args.inputs` (ours), TensorFlow's `input0`.. args, PyTorch's launch ->
kernel `correlation`, and flows: each flow step links the slice it binds to (the deepest slice
enclosing its timestamp on its thread; an 'f' without `"bp": "e"` binds to the next slice that
begins there) to the next step's slice. Imported names that repeat ("aten::mm") get "#2", "#3"..
in start order so that `inputs` and the critical path can tell instances apart.

A malformed file raises ValueError naming the file, the event index and the field.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .trace import Trace, TraceEvent, lane_sort_key

FORMAT = "parallelgraph-trace/1"
FLOW_CATEGORY = "dependency"
KINDS = ("op", "shard", "copy")

Thread = tuple[Any, Any]  # (pid, tid) as found in a file


# =============================================================================================
# export
# =============================================================================================


def _event_order(event: TraceEvent) -> tuple[int, bool, int]:
    """Parents before children: by start, ops before shards, longer before shorter."""
    return (event.start, event.kind != "op", -event.end)


def _pool_of(lane: str) -> str:
    pool, _, _ = lane.rpartition("/")
    return pool or lane


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


def _lane_tids(lanes: Sequence[str], pids: dict[str, int]) -> dict[str, int]:
    """A tid per lane, unique in its process: the worker number when it is a free number."""
    taken: dict[int, set[int]] = defaultdict(set)
    tids: dict[str, int] = {}
    for lane in lanes:
        worker = lane.rpartition("/")[2]
        pid = pids[_pool_of(lane)]
        if lane != _pool_of(lane) and worker.isdigit() and int(worker) not in taken[pid]:
            tids[lane] = int(worker)
            taken[pid].add(int(worker))
    for lane in lanes:
        if lane not in tids:
            pid = pids[_pool_of(lane)]
            tids[lane] = max(taken[pid], default=-1) + 1
            taken[pid].add(tids[lane])
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


def _layout(lanes: Sequence[str], ordered: Sequence[TraceEvent]) -> _Threads:
    pids: dict[str, int] = {}
    for lane in lanes:
        pids.setdefault(_pool_of(lane), len(pids) + 1)
    tids = _lane_tids(lanes, pids)
    by_lane: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in ordered:
        by_lane[event.lane].append(event)
    metadata = []
    for pool, pid in pids.items():
        metadata.append(_metadata_event("process_name", pid, 0, {"name": _process_label(pool)}))
        metadata.append(_metadata_event("process_sort_index", pid, 0, {"sort_index": pid}))
    next_tid: dict[int, int] = defaultdict(int)
    for lane, tid in tids.items():
        pid = pids[_pool_of(lane)]
        next_tid[pid] = max(next_tid[pid], tid + 1)
    of_event: dict[int, tuple[int, int]] = {}
    sort_index = 0
    for lane in lanes:
        pid = pids[_pool_of(lane)]
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
    if event.inputs:
        args["inputs"] = list(event.inputs)
    ts, dur = _span(event.start, event.end, origin)
    return {
        "name": event.name if event.shard is None else f"{event.name}[{event.shard}]",
        "cat": event.kind,
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "pid": thread[0],
        "tid": thread[1],
        "args": args,
    }


def _producer(candidates: Sequence[TraceEvent], consumer: TraceEvent) -> TraceEvent:
    """The run of a producer that fed `consumer`: the last one to end before it started."""
    before = [event for event in candidates if event.end <= consumer.start]
    return max(before, key=lambda e: e.end) if before else candidates[0]


def _flow_events(
    ordered: Sequence[TraceEvent], threads: dict[int, tuple[int, int]], origin: int
) -> list[dict[str, Any]]:
    producers: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in ordered:
        if event.kind != "shard":
            producers[event.name].append(event)
    flows: list[dict[str, Any]] = []
    for consumer in ordered:
        if consumer.kind == "shard":
            continue
        for name in consumer.inputs:
            if name not in producers:
                continue
            producer = _producer(producers[name], consumer)
            if producer.lane == consumer.lane:
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


def to_chrome(trace: Trace) -> dict[str, Any]:
    """The trace as a JSON-ready dict in the trace-event format's object form."""
    ordered = sorted(trace.events, key=_event_order)
    threads = _layout(trace.lanes, ordered)
    origin = trace.start
    slices = [_complete_event(e, threads.of_event[id(e)], origin) for e in ordered]
    return {
        "traceEvents": threads.metadata + slices + _flow_events(ordered, threads.of_event, origin),
        "displayTimeUnit": "ms",
        "otherData": {"format": FORMAT, "metadata": trace.metadata, "origin_ns": origin},
    }


def dump(trace: Trace, path: str | Path) -> Path:
    """Write `trace` as Chrome trace-event JSON to `path` (parents created) and return it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_chrome(trace), default=str))
    return path


# =============================================================================================
# import: raw events -> slices, names and flow points
# =============================================================================================

TIMED_PHASES = frozenset("XBEstf")  # the phases whose timestamps we read (and check)


@dataclass
class _Slice:
    """One complete slice of a thread: an 'X' event or a matched 'B'/'E' pair."""

    index: int  # of the ('X' or 'B') event in the file
    name: str
    cat: str
    thread: Thread
    start: int  # ns
    end: int  # ns
    args: dict[str, Any]


@dataclass(frozen=True)
class _FlowPoint:
    index: int
    phase: str  # 's', 't' or 'f'
    key: tuple[str, str]  # (cat, id)
    thread: Thread
    ts: int  # ns
    enclosing: bool  # binds to the enclosing slice; else to the next slice on the thread


@dataclass
class _Document:
    source: str
    slices: list[_Slice]
    flows: list[_FlowPoint]
    process_names: dict[Any, str]
    thread_names: dict[Thread, str]
    header: dict[str, Any]  # top-level keys of the object form, but traceEvents


def _describe(raw: dict[str, Any]) -> str:
    return f"ph {raw.get('ph')!r}, name {str(raw.get('name', ''))[:60]!r}"


def _problem(source: str, index: int, raw: dict[str, Any], message: str) -> ValueError:
    return ValueError(f"{source}: event {index} has no valid ts/dur: {message} ({_describe(raw)})")


def _nanoseconds(raw: dict[str, Any], key: str, source: str, index: int) -> int:
    """A µs field as integer ns: ints exactly, floats rounded to the nearest ns."""
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _problem(source, index, raw, f"{key!r} must be a number of µs, got {value!r:.40}")
    return value * 1000 if isinstance(value, int) else round(value * 1000)


def _timestamp(raw: dict[str, Any], source: str, index: int) -> int:
    if "ts" not in raw:
        raise _problem(source, index, raw, "'ts' is missing")
    return _nanoseconds(raw, "ts", source, index)


def _duration(raw: dict[str, Any], source: str, index: int) -> int:
    if "dur" not in raw:
        return 0
    dur = _nanoseconds(raw, "dur", source, index)
    if dur < 0:
        raise _problem(source, index, raw, f"'dur' is negative ({raw['dur']})")
    return dur


def _identity(value: Any) -> Any:
    """pid/tid as a dict key: numbers and numeric strings alike, 0 when missing."""
    if value is None:
        return 0
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value if isinstance(value, int | str) else str(value)


def _thread(raw: dict[str, Any]) -> Thread:
    return (_identity(raw.get("pid")), _identity(raw.get("tid")))


def _args(raw: dict[str, Any]) -> dict[str, Any]:
    args = raw.get("args")
    return args if isinstance(args, dict) else {}


def _split_document(document: Any, source: str) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(document, dict):
        if "traceEvents" not in document:
            raise ValueError(
                f"{source}: a trace object needs a 'traceEvents' list; it has keys "
                f"{sorted(document)[:8]}"
            )
        raw_events = document["traceEvents"]
        header = {key: value for key, value in document.items() if key != "traceEvents"}
    elif isinstance(document, list):
        raw_events, header = document, {}
    else:
        raise ValueError(f"{source}: expected a JSON object or list, got {type(document).__name__}")
    if not isinstance(raw_events, list):
        raise ValueError(f"{source}: 'traceEvents' must be a list, got {type(raw_events).__name__}")
    return raw_events, header


def _read_metadata(raw: dict[str, Any], document: _Document) -> None:
    name, value = raw.get("name"), _args(raw).get("name")
    if value is None:
        return
    if name == "process_name":
        document.process_names[_identity(raw.get("pid"))] = str(value)
    elif name == "thread_name":
        document.thread_names[_thread(raw)] = str(value)


def _flow_point(raw: dict[str, Any], index: int, ts: int) -> _FlowPoint | None:
    if raw.get("id") is None:
        return None
    phase = raw["ph"]
    return _FlowPoint(
        index=index,
        phase=phase,
        key=(str(raw.get("cat", "")), str(raw["id"])),
        thread=_thread(raw),
        ts=ts,
        enclosing=phase != "f" or raw.get("bp") == "e",
    )


def _match_begin_end(durations: list[tuple[int, dict[str, Any], int]], source: str) -> list[_Slice]:
    """Pair 'B' and 'E' events per thread, innermost first, in timestamp order."""
    by_thread: dict[Thread, list[tuple[int, dict[str, Any], int]]] = defaultdict(list)
    for entry in durations:
        by_thread[_thread(entry[1])].append(entry)
    slices = []
    for thread, entries in by_thread.items():
        stack: list[tuple[int, dict[str, Any], int]] = []
        for index, raw, ts in sorted(entries, key=lambda entry: (entry[2], entry[0])):
            if raw["ph"] == "B":
                stack.append((index, raw, ts))
                continue
            if not stack:
                raise ValueError(
                    f"{source}: event {index} ('E' at ts {raw['ts']} µs on pid {thread[0]} tid "
                    f"{thread[1]}) ends a slice that no 'B' event began"
                )
            begin_index, begin, start = stack.pop()
            args = {**_args(begin), **_args(raw)}
            name = str(begin.get("name", raw.get("name", "?")))
            slices.append(
                _Slice(begin_index, name, str(begin.get("cat", "")), thread, start, ts, args)
            )
        if stack:
            index, raw, _ = stack[-1]
            raise ValueError(
                f"{source}: event {index} ('B' {str(raw.get('name', ''))!r} at ts {raw['ts']} µs "
                f"on pid {thread[0]} tid {thread[1]}) has no 'E' event; is the file truncated?"
            )
    return slices


def _read_document(document: Any, source: str) -> _Document:
    raw_events, header = _split_document(document, source)
    result = _Document(source, [], [], {}, {}, header)
    durations: list[tuple[int, dict[str, Any], int]] = []
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise ValueError(f"{source}: event {index} is not an object: {raw!r:.80}")
        phase = raw.get("ph")
        if phase == "M":
            _read_metadata(raw, result)
        if phase not in TIMED_PHASES:
            continue  # metadata done; counters, instants, async, objects, samples: skipped
        ts = _timestamp(raw, source, index)
        if phase == "X":
            end = ts + _duration(raw, source, index)
            name, cat = str(raw.get("name", "?")), str(raw.get("cat", ""))
            result.slices.append(_Slice(index, name, cat, _thread(raw), ts, end, _args(raw)))
        elif phase in ("B", "E"):
            durations.append((index, raw, ts))
        elif (point := _flow_point(raw, index, ts)) is not None:
            result.flows.append(point)
    result.slices.extend(_match_begin_end(durations, source))
    result.slices.sort(key=lambda s: (s.start, -s.end, s.index))
    return result


# =============================================================================================
# import: slices -> events, per producer
# =============================================================================================


@dataclass(eq=False)
class _Draft:
    """A TraceEvent under construction (names may still change, inputs still grow)."""

    name: str
    op_type: str
    scope: str
    device: str
    kind: str
    lane: str
    start: int
    end: int
    flops: int = 0
    bytes: int = 0
    shard: int | None = None
    inputs: list[str] = field(default_factory=list)
    parent: _Draft | None = None  # the op a shard belongs to

    def freeze(self) -> TraceEvent:
        return TraceEvent(
            name=self.parent.name if self.parent else self.name,
            op_type=self.op_type,
            scope=self.scope,
            device=self.device,
            kind=self.kind,
            lane=self.lane,
            start=self.start,
            end=self.end,
            flops=self.flops,
            bytes=self.bytes,
            shard=self.shard,
            inputs=tuple(self.inputs),
        )


@dataclass
class _Converted:
    drafts: list[_Draft] = field(default_factory=list)
    owner: dict[int, _Draft] = field(default_factory=dict)  # slice index -> op-level draft
    edges: list[tuple[_Draft, _Draft]] = field(default_factory=list)  # (producer, consumer)

    def add(self, draft: _Draft, *slices: _Slice) -> _Draft:
        self.drafts.append(draft)
        for piece in slices:
            self.owner[piece.index] = draft.parent or draft
        return draft


def _integer(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _scope_of(name: str) -> str:
    return name.rpartition("/")[0]


# --- generic and our own files -----------------------------------------------------------------


def _generic_lanes(document: _Document) -> dict[Thread, str]:
    """'<process name>/<thread name>', with the pid or tid standing in for a missing name; a
    named thread of an unnamed process is just its name when no other thread has it."""
    threads = {piece.thread for piece in document.slices}
    names = Counter(document.thread_names[t] for t in threads if t in document.thread_names)
    lanes = {}
    for thread in threads:
        pid, tid = thread
        process = document.process_names.get(pid)
        named = document.thread_names.get(thread)
        if process is None and named is not None and names[named] == 1:
            lanes[thread] = named
        else:
            lanes[thread] = f"{process if process is not None else pid}/{named or tid}"
    return lanes


def _convert_generic(document: _Document) -> _Converted:
    """Slices with whatever of our `args` they carry; derive the rest from name and thread."""
    lanes = _generic_lanes(document)
    converted = _Converted()
    for piece in document.slices:
        args, name = piece.args, piece.name
        shard = args.get("shard")
        kind = piece.cat if piece.cat in KINDS else "op"
        if "memcpy" in f"{piece.cat} {name}".lower() and piece.cat not in KINDS:
            kind = "copy"
        if kind == "shard" and not isinstance(shard, int):
            kind, shard = "op", None
        if shard is not None and name.endswith(f"[{shard}]"):
            name = name[: -len(f"[{shard}]")]
        inputs = args.get("inputs")
        converted.add(
            _Draft(
                name=name,
                op_type=str(args.get("op_type") or piece.cat or name),
                scope=str(args.get("scope", _scope_of(name))),
                device=str(args.get("device", document.process_names.get(piece.thread[0], ""))),
                kind=kind,
                lane=str(args.get("lane") or lanes[piece.thread]),
                start=piece.start,
                end=piece.end,
                flops=_integer(args.get("flops")),
                bytes=_integer(args.get("bytes")),
                shard=shard if kind == "shard" else None,
                inputs=[str(x) for x in inputs] if isinstance(inputs, list) else [],
            ),
            piece,
        )
    return converted


# --- TensorFlow 1.x timeline ---------------------------------------------------------------------

_TF_DEVICE = re.compile(r"(?:device:)?([A-Za-z_]+):(\d+)$")


@dataclass(frozen=True)
class _TfDevice:
    device: str  # "gpu:0"
    path: str  # "gpu:0/stream:14": the lane's pool
    gputrace: bool  # a GPU tracer device (kernels on a stream, or memcpys)
    stream_all: bool


def _tf_device(process_name: str) -> _TfDevice:
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
        return _TfDevice(device, device, gputrace, "stream:all" in extras)
    path = "/".join([*prefix, device, *extras])
    return _TfDevice(device, path, gputrace, "stream:all" in extras)


def _tf_devices(document: _Document) -> dict[Any, _TfDevice]:
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
    converted: _Converted, node: str, op_type: str, kernels: list[tuple[_Slice, _TfDevice]]
) -> _Draft:
    """The op of a node that ran GPU kernels: the kernel, or a span of them with shards."""

    def draft(piece: _Slice, device: _TfDevice, kind: str, **extra: Any) -> _Draft:
        return _Draft(
            name=node,
            op_type=op_type,
            scope=_scope_of(node),
            device=device.device,
            kind=kind,
            lane=f"{device.path}/{piece.thread[1]}",
            start=piece.start,
            end=piece.end,
            **extra,
        )

    first, device = kernels[0]
    copy = device.path.endswith("/memcpy") or op_type.upper().startswith("MEMCPY")
    op = draft(first, device, "copy" if copy else "op")
    if len(kernels) == 1:
        return converted.add(op, first)
    op.end = max(piece.end for piece, _ in kernels)
    converted.add(op)
    for number, (piece, where) in enumerate(kernels):
        converted.add(draft(piece, where, "shard", shard=number, parent=op), piece)
    return op


def _convert_tensorflow(document: _Document) -> _Converted:
    devices = _tf_devices(document)
    converted = _Converted()
    kernels: dict[str, list[tuple[_Slice, _TfDevice]]] = defaultdict(list)
    launches: list[tuple[_Slice, _TfDevice]] = []
    for piece in document.slices:
        device = devices.get(piece.thread[0])
        if device is not None:
            node = str(piece.args.get("name", piece.name))
            (kernels[node] if device.gputrace else launches).append((piece, device))
    ops: dict[str, _Draft] = {}
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
            _Draft(
                name=node,
                op_type=str(piece.args.get("op", piece.name)),
                scope=_scope_of(node),
                device=device.device,
                kind="op",
                lane=f"{device.path}/{piece.thread[1]}",
                start=piece.start,
                end=piece.end,
            ),
            piece,
        )
    for node, inputs in wanted:
        converted.edges.extend((ops[name], ops[node]) for name in inputs if name in ops)
    return converted


# --- PyTorch profiler (Kineto) -------------------------------------------------------------------

PYTORCH_GPU = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
PYTORCH_SCOPES = frozenset({"user_annotation", "gpu_user_annotation"})
PYTORCH_SKIPPED = frozenset({"python_function", "overhead", "Trace", "cuda_profiler_range"})
PYTORCH_LAUNCHES = frozenset({"cuda_runtime", "cuda_driver"})
PYTORCH_CATEGORIES = PYTORCH_GPU | PYTORCH_SCOPES | PYTORCH_LAUNCHES | {"cpu_op"}


def _enclosing_scopes(pieces: Sequence[_Slice], ranges: Sequence[_Slice]) -> dict[int, str]:
    """Slice index -> the names of the ranges around it on its thread, outermost first."""
    by_thread: dict[Thread, list[_Slice]] = defaultdict(list)
    for piece in sorted(ranges, key=lambda r: (r.start, -r.end)):
        by_thread[piece.thread].append(piece)
    scopes = {}
    for piece in pieces:
        around = by_thread.get(piece.thread, ())
        names = [r.name for r in around if r.start <= piece.start and piece.end <= r.end]
        scopes[piece.index] = "/".join(names)
    return scopes


def _convert_pytorch(document: _Document) -> _Converted:
    gpu_pids = {piece.thread[0] for piece in document.slices if piece.cat in PYTORCH_GPU}
    ranges = [
        piece
        for piece in document.slices
        if piece.cat in PYTORCH_SCOPES and not piece.name.startswith("ProfilerStep#")
    ]
    kept = [p for p in document.slices if p.cat not in PYTORCH_SCOPES | PYTORCH_SKIPPED]
    cpu_pids = {piece.thread[0] for piece in kept} - gpu_pids
    scopes = _enclosing_scopes(kept, ranges)
    converted = _Converted()
    launches: dict[Any, _Draft] = {}
    on_gpu: list[tuple[_Draft, Any]] = []
    for piece in kept:
        pid, tid = piece.thread
        if pid in gpu_pids:
            device = f"gpu:{piece.args.get('device', pid)}"
            lane = f"{device}/stream/{piece.args.get('stream', tid)}"
        else:
            device = "cpu"
            lane = f"cpu/{tid}" if len(cpu_pids) == 1 else f"cpu:{pid}/{tid}"
        draft = converted.add(
            _Draft(
                name=piece.name,
                op_type=piece.name if piece.cat in ("cpu_op", "") else piece.cat,
                scope=scopes[piece.index],
                device=device,
                kind="copy" if piece.cat == "gpu_memcpy" else "op",
                lane=lane,
                start=piece.start,
                end=piece.end,
                bytes=_integer(piece.args.get("bytes")),
            ),
            piece,
        )
        correlation = piece.args.get("correlation")
        if piece.cat in PYTORCH_LAUNCHES and correlation is not None:
            launches[correlation] = draft
        elif pid in gpu_pids and correlation is not None:
            on_gpu.append((draft, correlation))
    for draft, correlation in on_gpu:
        launch = launches.get(correlation)
        if launch is not None:
            converted.edges.append((launch, draft))
            draft.scope = draft.scope or launch.scope
    return converted


# --- choosing a reader ---------------------------------------------------------------------------

_Converter = Callable[[_Document], _Converted]
_READERS: dict[str, _Converter] = {
    "parallelgraph": _convert_generic,
    "tensorflow-timeline": _convert_tensorflow,
    "pytorch-profiler": _convert_pytorch,
    "trace-event": _convert_generic,
}


def _dialect(document: _Document) -> str:
    other = document.header.get("otherData")
    if isinstance(other, dict) and other.get("format") == FORMAT:
        return "parallelgraph"
    names = document.process_names.values()
    if any(name.endswith(" Compute") for name in names) and any(
        piece.cat == "Op" for piece in document.slices
    ):
        return "tensorflow-timeline"
    if any(piece.cat in PYTORCH_CATEGORIES for piece in document.slices):
        return "pytorch-profiler"
    return "trace-event"


# =============================================================================================
# import: dependencies from flows, unique names, the Trace
# =============================================================================================


class _ThreadIndex:
    """Slices of one thread sorted by start, each with its enclosing slice, for flow binding."""

    def __init__(self, pieces: Iterable[_Slice]):
        self.pieces = sorted(pieces, key=lambda p: (p.start, -p.end, p.index))
        self.starts = [piece.start for piece in self.pieces]
        self.parent: list[int] = []
        stack: list[int] = []
        for position, piece in enumerate(self.pieces):
            while stack and not piece.end <= self.pieces[stack[-1]].end:
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(position)

    def enclosing(self, ts: int) -> _Slice | None:
        """The deepest slice with start <= ts <= end."""
        position = bisect.bisect_right(self.starts, ts) - 1
        while position >= 0 and self.pieces[position].end < ts:
            position = self.parent[position]
        return self.pieces[position] if position >= 0 else None

    def next_from(self, ts: int) -> _Slice | None:
        """The first slice that begins at or after ts (the outermost one at that time)."""
        position = bisect.bisect_left(self.starts, ts)
        return self.pieces[position] if position < len(self.pieces) else self.enclosing(ts)


def _flow_chains(points: Iterable[_FlowPoint]) -> list[list[_FlowPoint]]:
    """Flows as ordered steps: an 's' starts one, 't' continues it, 'f' ends it."""
    by_key: dict[tuple[str, str], list[_FlowPoint]] = defaultdict(list)
    for point in points:
        by_key[point.key].append(point)
    chains: list[list[_FlowPoint]] = []
    for steps in by_key.values():
        current: list[_FlowPoint] = []
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


def _flow_edges(document: _Document, owner: dict[int, _Draft]) -> list[tuple[_Draft, _Draft]]:
    owned: dict[Thread, list[_Slice]] = defaultdict(list)
    for piece in document.slices:
        if piece.index in owner:
            owned[piece.thread].append(piece)
    indexes = {thread: _ThreadIndex(pieces) for thread, pieces in owned.items()}

    def bind(point: _FlowPoint) -> _Draft | None:
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


def _make_names_unique(drafts: Sequence[_Draft]) -> None:
    """Repeated names of ops and copies get '#2', '#3'.. in start order (shards follow)."""
    seen: Counter[str] = Counter()
    ops = [draft for draft in drafts if draft.parent is None]
    for draft in sorted(ops, key=lambda d: (d.start, -d.end, lane_sort_key(d.lane))):
        seen[draft.name] += 1
        if seen[draft.name] > 1:
            draft.name = f"{draft.name}#{seen[draft.name]}"


def _attach_inputs(edges: Iterable[tuple[_Draft, _Draft]]) -> None:
    for producer, consumer in edges:
        producer, consumer = producer.parent or producer, consumer.parent or consumer
        if consumer.kind == "shard" or producer is consumer:
            continue  # a shard without its op (generic files) keeps no inputs
        if producer.name not in consumer.inputs:
            consumer.inputs.append(producer.name)


def _shift(drafts: Iterable[_Draft], origin: Any) -> None:
    """Our files count time from the trace's start; `otherData.origin_ns` says when that was."""
    if isinstance(origin, int) and not isinstance(origin, bool):
        for draft in drafts:
            draft.start, draft.end = draft.start + origin, draft.end + origin


def _metadata(document: _Document, dialect: str) -> dict[str, Any]:
    if dialect == "parallelgraph":
        metadata = document.header["otherData"].get("metadata", {})
        return dict(metadata) if isinstance(metadata, dict) else {}
    imported = {"format": dialect, "source": document.source}
    if document.header:
        imported["header"] = document.header  # e.g. PyTorch's schemaVersion, deviceProperties
    return {"imported": imported}


def from_chrome(document: Any, source: str = "<trace>") -> Trace:
    """A Trace from a parsed trace-event document (object or bare-list form).

    Reads our own files, TensorFlow 1.x timelines, PyTorch profiler traces and generic
    trace-event JSON; see the module docstring for what each becomes. `source` names the
    document in error messages. Raises ValueError for a malformed document.
    """
    parsed = _read_document(document, source)
    dialect = _dialect(parsed)
    converted = _READERS[dialect](parsed)
    if dialect == "parallelgraph":
        _shift(converted.drafts, parsed.header["otherData"].get("origin_ns", 0))
    else:
        _make_names_unique(converted.drafts)
        converted.edges.extend(_flow_edges(parsed, converted.owner))
    _attach_inputs(converted.edges)
    events = sorted((draft.freeze() for draft in converted.drafts), key=_event_order)
    return Trace(events, _metadata(parsed, dialect))


def load(path: str | Path) -> Trace:
    """Read a trace file; a clear ValueError says what is wrong with a malformed one."""
    path = Path(path)
    return from_chrome(_parse_json(path.read_text(), str(path)), str(path))


def _parse_json(text: str, source: str) -> Any:
    """JSON text; the JSON Array Format may lack its closing ']' (streamed writers)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as problem:
        if text.lstrip().startswith("["):
            try:
                return json.loads(text.rstrip().rstrip(",") + "]")
            except json.JSONDecodeError:
                pass
        raise ValueError(
            f"{source}: not valid JSON at line {problem.lineno}, column {problem.colno} "
            f"({problem.msg}); is the file truncated?"
        ) from None
