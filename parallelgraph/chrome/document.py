"""Trace-event JSON to slices: what every reader starts from.

A parsed document (object or bare-list form, or the documents a file holds one after another,
`files.Joined`, read as one with each one's pids kept apart) becomes a `Document`: its complete
slices ('X' events and matched 'B'/'E' pairs), its flow points ('s', 't', 'f'), and the process
and thread names of its 'M' events. Timestamps are always microseconds (`displayTimeUnit` only
changes what viewers display) and become integer nanoseconds. Every other phase (counters,
instants, async, object and sample events, and letters nobody knows) is skipped. 'B'/'E' pairs
are matched as a stack per thread, in timestamp order, as tolerantly as the viewers match them:
a slice that never ended (a streamed file cut while recording) ends at the trace's last
timestamp, and an 'E' whose 'B' is not in the file (a ring buffer overwrote it) is skipped; each
is said in `Document.notes`.

A malformed event raises ValueError naming the file, the event's index and the field.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .files import Joined

Thread = tuple[Any, Any]  # (pid, tid) as found in a file

TIMED_PHASES = frozenset("XBEstf")  # the phases whose timestamps we read (and check)


@dataclass(slots=True)
class Slice:
    """One complete slice of a thread: an 'X' event or a matched 'B'/'E' pair."""

    index: int  # of the ('X' or 'B') event in the file
    name: str
    cat: str
    thread: Thread
    start: int  # ns
    end: int  # ns
    args: dict[str, Any]


@dataclass(frozen=True)
class FlowPoint:
    """One step of a flow (an arrow between slices): 's' starts it, 't' continues, 'f' ends."""

    index: int
    phase: str  # 's', 't' or 'f'
    key: tuple[str, str]  # (cat, id)
    thread: Thread
    ts: int  # ns
    enclosing: bool  # binds to the enclosing slice; else to the next slice on the thread


@dataclass
class Document:
    """A file's slices, flows and names; `source` names the file in messages."""

    source: str
    slices: list[Slice]
    flows: list[FlowPoint]
    process_names: dict[Any, str]
    thread_names: dict[Thread, str]  # the last name given to each thread
    header: dict[str, Any]  # top-level keys of the object form, but traceEvents
    #: every name given to each thread, in file order (Kineto names a pool thread twice)
    thread_name_list: dict[Thread, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what was repaired while reading


def _describe(raw: dict[str, Any]) -> str:
    return f"ph {raw.get('ph')!r}, name {str(raw.get('name', ''))[:60]!r}"


def _problem(source: str, index: int, raw: dict[str, Any], message: str) -> ValueError:
    return ValueError(f"{source}: event {index} has no valid ts/dur: {message} ({_describe(raw)})")


#: The largest |ts| or dur in µs: 2**62 ns (146 years), so every time, difference and sum of
#: two stays an exact int64 and converts to a float (a ts of 1e306 µs would be inf ns).
MAX_US = (1 << 62) // 1000


def _nanoseconds(raw: dict[str, Any], key: str, source: str, index: int) -> int:
    """A µs field as integer ns: ints exactly, floats rounded to the nearest ns."""
    value = raw[key]
    kind = type(value)  # the common cases first: this runs for every event of a big file
    if kind is float and -MAX_US <= value <= MAX_US:  # (NaN fails both comparisons)
        return round(value * 1000)
    if kind is int and -MAX_US <= value <= MAX_US:
        return value * 1000
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise _problem(source, index, raw, f"{key!r} must be a number of µs, got {value!r:.40}")
    if not -MAX_US <= value <= MAX_US:  # an int or a float too large for a trace
        if isinstance(value, float) or value.bit_length() < 1000:
            shown = f"{float(value):.3g}"
        else:  # too large for a float (or for str(), beyond 4300 digits)
            shown = f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        raise _problem(
            source,
            index,
            raw,
            f"{key!r} is {shown} µs, beyond the ±{MAX_US:.3g} µs (146 years) a trace can span",
        )
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
    if type(value) is int:
        return value
    if value is None:
        return 0
    text = value.strip() if isinstance(value, str) else ""
    digits = text[1:] if text[:1] == "-" else text  # one sign at most: "--5" stays a name
    if digits.isascii() and digits.isdecimal():
        return int(text)
    return value if isinstance(value, int | str) else str(value)


def _thread(raw: dict[str, Any]) -> Thread:
    return (_identity(raw.get("pid")), _identity(raw.get("tid")))


def args_of(raw: dict[str, Any]) -> dict[str, Any]:
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


def _read_metadata(raw: dict[str, Any], document: Document) -> None:
    name, value = raw.get("name"), args_of(raw).get("name")
    if value is None:
        return
    if name == "process_name":
        document.process_names[_identity(raw.get("pid"))] = str(value)
    elif name == "thread_name":
        document.thread_names[_thread(raw)] = str(value)
        document.thread_name_list.setdefault(_thread(raw), []).append(str(value))


def _flow_point(raw: dict[str, Any], index: int, ts: int) -> FlowPoint | None:
    if raw.get("id") is None:
        return None
    phase = raw["ph"]
    return FlowPoint(
        index=index,
        phase=phase,
        key=(str(raw.get("cat", "")), str(raw["id"])),
        thread=_thread(raw),
        ts=ts,
        enclosing=phase != "f" or raw.get("bp") == "e",
    )


def _match_begin_end(
    durations: list[tuple[int, dict[str, Any], int]], last_ts: int, document: Document
) -> list[Slice]:
    """Pair 'B' and 'E' events per thread, innermost first, in timestamp order; an 'E' with no
    open 'B' is skipped, a 'B' never ended ends at `last_ts` (both said in `document.notes`)."""
    by_thread: dict[Thread, list[tuple[int, dict[str, Any], int]]] = defaultdict(list)
    for entry in durations:
        by_thread[_thread(entry[1])].append(entry)
    slices, orphans, unended = [], [], []
    for thread, entries in by_thread.items():
        stack: list[tuple[int, dict[str, Any], int]] = []
        for index, raw, ts in sorted(entries, key=lambda entry: (entry[2], entry[0])):
            if raw["ph"] == "B":
                stack.append((index, raw, ts))
                continue
            if not stack:
                orphans.append((index, raw, thread))
                continue
            begin_index, begin, start = stack.pop()
            slices.append(_paired(begin_index, begin, raw, thread, start, ts))
        for begin_index, begin, start in stack:
            unended.append(begin)
            slices.append(_paired(begin_index, begin, {}, thread, start, max(start, last_ts)))
    if orphans:
        index, raw, thread = orphans[0]
        document.notes.append(
            f"Skipped {len(orphans)} 'E' event(s) that end a slice no 'B' event began (the "
            f"first: event {index} at ts {raw['ts']} µs on pid {thread[0]} tid {thread[1]}); "
            "a ring buffer that overwrote the start, or a trace cut while recording."
        )
    if unended:
        names = ", ".join(sorted({repr(str(b.get("name", "?"))[:40]) for b in unended})[:3])
        document.notes.append(
            f"{len(unended)} slice(s) never ended ({names}; a file cut while recording): "
            "they end at the trace's last timestamp, as trace viewers draw them."
        )
    return slices


def _paired(
    index: int, begin: dict[str, Any], end: dict[str, Any], thread: Thread, start: int, stop: int
) -> Slice:
    args = {**args_of(begin), **args_of(end)}
    name = str(begin.get("name", end.get("name", "?")))
    return Slice(index, name, str(begin.get("cat", "")), thread, start, stop, args)


def _apart(raw: Any, renamed: set[Any], number: int) -> Any:
    """An event of the `number`-th joined document, its pids in `renamed` (and a tid that is
    its pid: a main thread) made "<pid>#<number>", its flow id kept to its own document."""
    if not isinstance(raw, dict):
        return raw  # refused, with its index, when read
    pid = _identity(raw.get("pid"))
    changed: dict[str, Any] = {}
    if pid in renamed:
        changed["pid"] = f"{pid}#{number}"
        if _identity(raw.get("tid")) == pid:
            changed["tid"] = changed["pid"]
    if raw.get("ph") in ("s", "t", "f") and raw.get("id") is not None:
        changed["id"] = f"{raw['id']}#{number}"
    return {**raw, **changed} if changed else raw


def _join(parts: Joined, source: str) -> tuple[list[Any], dict[str, Any], list[str]]:
    """The events of documents joined in one file, as one document's: each document's pids
    kept apart from those of the documents before it (renamed "<pid>#<n>" where they collide),
    its flows kept to itself; the header keys of the first document that has them."""
    events: list[Any] = []
    header: dict[str, Any] = {}
    taken: set[Any] = set()
    collided: list[str] = []
    for number, part in enumerate(parts, 1):
        raw_events, part_header = _split_document(part, f"{source} (document {number})")
        for key, value in part_header.items():
            header.setdefault(key, value)
        pids = {_identity(raw.get("pid")) for raw in raw_events if isinstance(raw, dict)}
        renamed = pids & taken
        taken |= pids
        if renamed:
            shown = sorted(renamed, key=str)[:4]
            as_new = ", ".join(f"{pid} as {pid}#{number}" for pid in shown)
            collided.append(f"document {number}: {as_new}")
        if number > 1:
            raw_events = [_apart(raw, renamed, number) for raw in raw_events]
        events.extend(raw_events)
    note = (
        f"The file holds {len(parts)} JSON documents one after another (files joined with "
        "`cat`): read as one trace of all their processes."
    )
    if collided:
        note += f" Pids an earlier document used are renamed: {'; '.join(collided)}."
    return events, header, [note]


def read_document(document: Any, source: str) -> Document:
    if isinstance(document, Joined):
        raw_events, header, notes = _join(document, source)
    else:
        (raw_events, header), notes = _split_document(document, source), []
    result = Document(source, [], [], {}, {}, header, notes=notes)
    durations: list[tuple[int, dict[str, Any], int]] = []
    last_ts = 0
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise ValueError(f"{source}: event {index} is not an object: {raw!r:.80}")
        phase = raw.get("ph")
        if not isinstance(phase, str):
            continue  # no phase a viewer knows (a list, a number): skipped like an unknown one
        if phase == "M":
            _read_metadata(raw, result)
        if phase not in TIMED_PHASES:
            continue  # metadata done; counters, instants, async, objects, samples: skipped
        ts = _timestamp(raw, source, index)
        last_ts = max(last_ts, ts)
        if phase == "X":
            end = ts + _duration(raw, source, index)
            last_ts = max(last_ts, end)
            name, cat = str(raw.get("name", "?")), str(raw.get("cat", ""))
            result.slices.append(Slice(index, name, cat, _thread(raw), ts, end, args_of(raw)))
        elif phase in ("B", "E"):
            durations.append((index, raw, ts))
        elif (point := _flow_point(raw, index, ts)) is not None:
            result.flows.append(point)
    result.slices.extend(_match_begin_end(durations, last_ts, result))
    result.slices.sort(key=lambda s: (s.start, -s.end, s.index))
    return result
