"""Chrome trace-event JSON out and in (the format of chrome://tracing, Perfetto, TensorFlow's
timeline and PyTorch's profiler).

Export is a pure function of a Trace: one process per pool or device ("inter-op", "intra-op"),
one thread per worker, both named by metadata ('M') events; each op or shard is a complete ('X')
event with `ts`/`dur` in microseconds from the start of the run; the event's details (op type,
scope, device, lane, flops, bytes, shard, inputs) go into `args`, which is what makes `load`
an exact inverse of `save` up to nanosecond rounding.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .trace import Trace, TraceEvent, lane_sort_key

FORMAT = "parallelgraph-trace/1"


def _pools(trace: Trace) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
    """pid per pool and (pid, tid) per lane, in display order."""
    pools: dict[str, int] = {}
    lanes: dict[str, tuple[int, int]] = {}
    for lane in trace.lanes:
        pool, _, worker = lane.rpartition("/")
        pid = pools.setdefault(pool or lane, len(pools) + 1)
        lanes[lane] = (pid, int(worker) if worker.isdigit() else 0)
    return pools, lanes


def to_chrome(trace: Trace) -> dict[str, Any]:
    """The trace as a JSON-ready dict in the trace-event format's object form."""
    pools, lanes = _pools(trace)
    origin = trace.start
    events: list[dict[str, Any]] = []
    for pool, pid in pools.items():
        events.append(
            {
                "name": "process_name",
                "ph": "M",
                "pid": pid,
                "tid": 0,
                "args": {"name": f"{pool} pool" if "-op" in pool else pool},
            }
        )
        events.append(
            {
                "name": "process_sort_index",
                "ph": "M",
                "pid": pid,
                "tid": 0,
                "args": {"sort_index": pid},
            }
        )
    for lane, (pid, tid) in lanes.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": lane}}
        )
    for event in trace.events:
        pid, tid = lanes[event.lane]
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
        events.append(
            {
                "name": event.name if event.shard is None else f"{event.name}[{event.shard}]",
                "cat": event.kind,
                "ph": "X",
                "ts": (event.start - origin) / 1000.0,
                "dur": event.duration / 1000.0,
                "pid": pid,
                "tid": tid,
                "args": args,
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"format": FORMAT, "metadata": trace.metadata},
    }


def dump(trace: Trace, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_chrome(trace), default=str))
    return path


def from_chrome(document: Any, source: str = "<trace>") -> Trace:
    """A Trace from a trace-event document (object or bare-list form) of complete events."""
    if isinstance(document, dict):
        if "traceEvents" not in document:
            raise ValueError(f"{source}: a trace object needs a 'traceEvents' list")
        raw_events, other = document["traceEvents"], document.get("otherData", {})
    elif isinstance(document, list):
        raw_events, other = document, {}
    else:
        raise ValueError(f"{source}: expected a JSON object or list, got {type(document).__name__}")
    if not isinstance(raw_events, list):
        raise ValueError(f"{source}: 'traceEvents' must be a list")
    thread_names: dict[tuple[Any, Any], str] = {}
    for raw in raw_events:
        if isinstance(raw, dict) and raw.get("ph") == "M" and raw.get("name") == "thread_name":
            thread_names[(raw.get("pid"), raw.get("tid"))] = str(raw.get("args", {}).get("name"))
    events = []
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise ValueError(f"{source}: event {index} is not an object: {raw!r:.80}")
        if raw.get("ph") != "X":
            continue
        try:
            start_ns = round(float(raw["ts"]) * 1000)
            end_ns = start_ns + round(float(raw.get("dur", 0)) * 1000)
        except (KeyError, TypeError, ValueError) as problem:
            raise ValueError(f"{source}: event {index} has no valid ts/dur: {problem}") from None
        args = raw.get("args") or {}
        key = (raw.get("pid"), raw.get("tid"))
        lane = args.get("lane") or thread_names.get(key) or f"{key[0]}/{key[1]}"
        shard = args.get("shard")
        name = str(raw.get("name", "?"))
        if shard is not None and name.endswith(f"[{shard}]"):
            name = name[: -len(f"[{shard}]")]
        events.append(
            TraceEvent(
                name=name,
                op_type=str(args.get("op_type", raw.get("cat", ""))),
                scope=str(args.get("scope", name.rpartition("/")[0])),
                device=str(args.get("device", "")),
                kind=str(raw.get("cat", "op"))
                if raw.get("cat") in ("op", "shard", "copy")
                else "op",
                lane=lane,
                start=start_ns,
                end=end_ns,
                flops=int(args.get("flops", 0)),
                bytes=int(args.get("bytes", 0)),
                shard=None if shard is None else int(shard),
                inputs=tuple(args.get("inputs", ())),
            )
        )
    events.sort(key=lambda e: (e.start, e.kind != "op", lane_sort_key(e.lane)))
    metadata = other.get("metadata", {}) if isinstance(other, dict) else {}
    return Trace(tuple(events), dict(metadata))


def load(path: str | Path) -> Trace:
    """Read a trace file; a clear ValueError says what is wrong with a malformed one."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as problem:
        raise ValueError(
            f"{path}: not valid JSON at line {problem.lineno}, column {problem.colno} "
            f"({problem.msg}); is the file truncated?"
        ) from None
    return from_chrome(document, str(path))
