"""What a producer module is given and gives back, and what it knows about its tool.

A producer module (one per tool that writes traces) defines `PRODUCER = Producer(...)`:

- `detect(document)`: whether the document was written by that tool;
- `convert(document)`: its slices as `Draft` events in a `Converted` — which slices are ops and
  which are the profiler's own (left out, and said so in `notes`), what an op's scope is, which
  lane (thread or stream) it ran on and what kind of lane that is, and the dependencies the
  file records;
- `knobs`: what the tool calls the settings `explain()` advises on (`SettingWords`), so the advice
  reads in the user's own terms.

A producer also says what each event's time was (`Draft.role`: work, or a caller *waiting* for
work it launched elsewhere, or *setup* such as model loading; the innermost event decides, see
`parallelgraph.trace`), and which lanes ran their ops in program order
(`Converted.program_order`: eager PyTorch's calling thread, a Python thread, a sequential
executor's thread — never a pool thread that runs independent tasks one after another, and never
a lane whose file records the real inputs). A producer that cannot vouch for waiting by name
sets `Converted.infer_waiting` and the reader finds the enclosing events that wait by their
timing (`parallelgraph.chrome.roles`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...trace.lanes import LaneKind
from ...trace.model import EventKind, TraceEvent
from ..document import Document, Slice, Thread

#: TraceEvent's fields that the Trace decides when it nests the events, not the producer.
NESTING_FIELDS = frozenset({"depth", "parent", "idle_ns"})


class _DraftMethods:
    """What a `Draft` does besides holding fields (its base class)."""

    __slots__ = ()
    name: str
    kind: EventKind
    inputs: list[str]
    parent: Draft | None

    @property
    def event_name(self) -> str:
        """The name its event gets (a shard's is its op's)."""
        return self.parent.name if self.parent else self.name

    def freeze(self, depth: int = 0, parent: str | None = None) -> TraceEvent:
        """The event: the draft's fields, its kind as an `EventKind` (a producer may have
        given its value), and the nesting the reader found."""
        return _freeze(self, depth, parent)


def _draft_field(event_field: dataclasses.Field[Any]) -> tuple[Any, ...]:
    if event_field.name == "inputs":  # still growing while flows are bound
        return ("inputs", "list[str]", field(default_factory=list))
    if event_field.default is dataclasses.MISSING:
        return (event_field.name, event_field.type)
    return (event_field.name, event_field.type, field(default=event_field.default))


#: A TraceEvent under construction (names may still change, inputs still grow). Its fields are
#: TraceEvent's, in TraceEvent's order, less the nesting that the reader finds
#: (`NESTING_FIELDS`), plus `parent`: the op-level Draft a shard belongs to. They are derived
#: from `TraceEvent`, so a new event field is written once.
Draft = dataclasses.make_dataclass(
    "Draft",
    [
        *(_draft_field(f) for f in dataclasses.fields(TraceEvent) if f.name not in NESTING_FIELDS),
        ("parent", "Draft | None", field(default=None)),
    ],
    bases=(_DraftMethods,),
    namespace={
        "__module__": __name__,
        "__doc__": "A TraceEvent under construction (see `NESTING_FIELDS` and the note above).",
    },
    eq=False,
    slots=True,
)


def _freezer() -> Callable[[Any, int, str | None], TraceEvent]:
    """`Draft.freeze`'s body, written out from TraceEvent's fields once (as `dataclasses`
    writes `__init__`): one keyword per field, no dict per event, since a big file freezes
    millions of drafts."""
    special = {
        "name": "draft.event_name",
        "kind": "KIND[draft.kind]",  # EventKind(draft.kind), by a dict lookup
        "inputs": "tuple(draft.inputs)",
        "depth": "depth",
        "parent": "parent",
    }
    arguments = ", ".join(
        f"{f.name}={special.get(f.name, f'draft.{f.name}')}"
        for f in dataclasses.fields(TraceEvent)
        if f.name not in NESTING_FIELDS or f.name in special
    )
    source = f"def freeze(draft, depth, parent):\n    return TraceEvent({arguments})\n"
    kinds = {kind.value: kind for kind in EventKind}
    namespace: dict[str, Any] = {"TraceEvent": TraceEvent, "KIND": kinds}
    exec(source, namespace)  # our own field names, nothing read from a file
    return namespace["freeze"]


_freeze = _freezer()


@dataclass
class Converted:
    """A producer's result: the events, which slice became which op, the dependencies, the
    kinds of its lanes, and notes on what was left out.

    `lane_kinds` is the producer's word on what its lanes are: our lane-naming rules
    (`parallelgraph.trace.lanes.parse_lane`) are for our own traces, and a foreign file's thread
    called "transfer" or "memcpy" is a thread that computed. A producer lists its streams, copy
    lanes and helpers; every lane it does not list is a thread that runs ops (`every_lane_kind`),
    and the reader records that kind for every lane of the trace.
    """

    drafts: list[Draft] = field(default_factory=list)
    owner: dict[int, Draft] = field(default_factory=dict)  # slice index -> op-level draft
    edges: list[tuple[Draft, Draft]] = field(default_factory=list)  # (producer, consumer)
    lane_kinds: dict[str, LaneKind] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: lanes whose consecutive outermost work ops ran in program order (see the docstring)
    program_order: set[str] = field(default_factory=set)
    #: find waiting events by their timing (`parallelgraph.chrome.roles`)
    infer_waiting: bool = False
    #: the settings the file says the run had, by the tool's own names
    #: ({"intra_op_num_threads": 2}); nothing the file does not say
    settings: dict[str, int] = field(default_factory=dict)
    #: the CPUs of the machine that ran it, when the file says
    cores: int | None = None

    def add(self, draft: Draft, *slices: Slice) -> Draft:
        self.drafts.append(draft)
        for piece in slices:
            self.owner[piece.index] = draft.parent or draft
        return draft

    def every_lane_kind(self) -> dict[str, LaneKind]:
        """The kind of every lane with an event: the producer's record (`lane_kinds`), else a
        worker thread (see the class docstring)."""
        kinds: dict[str, LaneKind] = {}
        for draft in self.drafts:
            if draft.lane not in kinds:
                kinds[draft.lane] = self.lane_kinds.get(draft.lane, LaneKind.WORKER)
        return kinds


@dataclass(frozen=True)
class Setting:
    """The number a piece of advice changes: its name in the run's record (a key of
    `RunInfo.recorded`, or our Config's field) and what the advice raises it to."""

    name: str  # "intra_op_num_threads", "inter_op_threads"
    said: str  # how its users write it: "SessionOptions.intra_op_num_threads"
    to_cores: bool = False  # raised to the cores the run had; else to 2 (two branches at once)


@dataclass(frozen=True)
class SettingWords:
    """How a tool's users change what `explain()` advises on, in that tool's words.

    Each text completes "Most likely to help: ...". Where `inter_op` or `intra_op` changes a
    number the run records (`inter_op_setting`, `intra_op_setting`), its "{change}" is filled
    with the change from the run's own value ("from 1 to 2"), or the target and that the
    trace does not say the current value; advice never raises it to what the run had.
    """

    tool: str  # "TensorFlow", "PyTorch"...
    inter_op: str  # let independent ops run at the same time on the CPU
    intra_op: str  # let one op use several threads
    streams: str  # run independent GPU work side by side
    one_at_a_time: str  # what made a CPU run do one op at a time ("Cause: <this> — ...")
    bigger_ops: str = (
        "make ops bigger (batch the work): tiny ops cost more to hand off than to run."
    )
    #: `bigger_ops` for a run that had the tool's fusion on already (None: the same words)
    bigger_ops_fused: str | None = None
    #: completes "Not determined from this trace; to settle it, ...": the run that would tell
    experiment: str = (
        "run the program once with the setting that lets independent parts run at the same "
        "time (and once with more threads per op), trace both, and compare their makespans."
    )
    #: the number `inter_op` changes, and `intra_op`'s (None: they name no number)
    inter_op_setting: Setting | None = None
    intra_op_setting: Setting | None = None


@dataclass(frozen=True)
class Producer:
    """A tool that writes traces (see the module docstring)."""

    name: str  # Trace.source
    detect: Callable[[Document], bool]
    convert: Callable[[Document], Converted]
    knobs: SettingWords


def integer(value: Any) -> int:
    """An integer field of a file, 0 when it is missing or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def scope_of(name: str) -> str:
    """TensorFlow's and our convention: the scope is the name up to its last '/'."""
    return name.rpartition("/")[0]


def skipped_note(counts: dict[str, int], why: str) -> str:
    """'Left out 12 event(s) (ProfilerStep#1 x3, ...): why.', most frequent names first."""
    total = sum(counts.values())
    common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:4]
    listed = ", ".join(f"{name} x{count}" for name, count in common)
    more = ", ..." if len(counts) > 4 else ""
    return f"Left out {total} event(s) ({listed}{more}): {why}."


def enclosing_names(pieces: Iterable[Slice], ranges: Iterable[Slice]) -> dict[int, list[str]]:
    """Slice index -> the names of the `ranges` around it on its thread, outermost first.

    One sweep per thread in start order with a stack of open ranges: O(n log n), so that a
    file of a million events with thousands of ranges (module hierarchies) reads in seconds.
    """
    RANGE, PIECE = 0, 1  # at one start, ranges open before the pieces they hold
    by_thread: dict[Thread, list[tuple[int, int, int, Slice]]] = defaultdict(list)
    for kind, slices in ((RANGE, ranges), (PIECE, pieces)):
        for piece in slices:
            by_thread[piece.thread].append((piece.start, -piece.end, kind, piece))
    names: dict[int, list[str]] = {}
    for entries in by_thread.values():
        entries.sort(key=lambda entry: entry[:3])
        stack: list[Slice] = []
        for start, _, kind, piece in entries:
            while stack and stack[-1].end <= start and stack[-1].end < piece.end:
                stack.pop()
            if kind == RANGE:
                stack.append(piece)
            else:
                names[piece.index] = [r.name for r in stack if piece.end <= r.end]
    return names


def innermost_range(pieces: Iterable[Slice], ranges: Iterable[Slice]) -> dict[int, Slice]:
    """Slice index -> the innermost of `ranges` around it on its thread (a slice that is itself
    one of the ranges counts as around itself). One sweep per thread: O(n log n)."""
    RANGE, PIECE = 0, 1  # at one start, ranges open before the pieces they hold
    by_thread: dict[Thread, list[tuple[int, int, int, Slice]]] = defaultdict(list)
    for kind, slices in ((RANGE, ranges), (PIECE, pieces)):
        for piece in slices:
            by_thread[piece.thread].append((piece.start, -piece.end, kind, piece))
    found: dict[int, Slice] = {}
    for entries in by_thread.values():
        entries.sort(key=lambda entry: entry[:3])
        stack: list[Slice] = []
        for _, _, kind, piece in entries:
            while stack and stack[-1].end < piece.end:
                stack.pop()
            if kind == RANGE:
                stack.append(piece)
            elif stack:
                found[piece.index] = stack[-1]
    return found


_GENERATED_THREAD = re.compile(r"^thread (\d+) \((.+)\)$")  # Kineto: "thread 5141 (python)"


def unique_labels(
    base: dict[Any, str], group: Callable[[Any], Any], number: Callable[[Any], Any]
) -> dict[Any, str]:
    """Each key's `base` name, its `number` added where the name repeats within its `group`
    or is empty (and again, should that still repeat: "worker 2" beside worker 2)."""
    repeats = Counter((group(key), name) for key, name in base.items())
    labels = {
        key: name if name and repeats[(group(key), name)] == 1 else f"{name} {number(key)}".strip()
        for key, name in base.items()
    }
    taken = Counter((group(key), label) for key, label in labels.items())
    for key in sorted(labels, key=str):
        while taken[(group(key), labels[key])] > 1:
            taken[(group(key), labels[key])] -= 1
            labels[key] = f"{labels[key]} ({number(key)})"
            taken[(group(key), labels[key])] += 1
    return labels


def thread_labels(
    document: Document, threads: Iterable[Thread], clean: Callable[[str], str] = str.strip
) -> dict[Thread, str]:
    """A short name per thread, unique within its process: its name from the file's metadata
    (Kineto's "thread 5141 (python)" read as "python"), tidied by `clean`, with the tid added
    where names repeat in the process (Chromium's many "ThreadPoolForegroundWorker"s) or none
    is given. A "/" in a name becomes "∕": the part of a lane before its last "/" is the group
    it is drawn in. Threads of different processes may share a label: `process_lanes` keeps
    them apart."""
    base = {}
    for thread in set(threads):
        name = document.thread_names.get(thread, "")
        generated = _GENERATED_THREAD.match(name)
        base[thread] = clean(generated.group(2) if generated else name).strip().replace("/", "∕")
    return unique_labels(base, lambda thread: thread[0], lambda thread: thread[1])


def process_labels(document: Document, pids: Iterable[Any]) -> dict[Any, str]:
    """A short, unique name per process: its name from the file's metadata ("MainProcess",
    "net1" for viztracer's multiprocessing children), the pid added where names repeat (two
    "Renderer"s) or none is given."""
    base = {pid: document.process_names.get(pid, "").strip().replace("/", "∕") for pid in pids}
    return unique_labels(base, lambda pid: None, lambda pid: pid)


def process_lanes(
    tool: str, labels: dict[Thread, str], processes: dict[Any, str] | None = None
) -> dict[Thread, str]:
    """A lane per thread — a thread is its (pid, tid), its name only labels it: "<tool>/<thread
    label>", or "<tool>:<process>/<thread label>" when the threads belong to several processes
    (<process> is `processes`' label of the pid, else the pid), so a forked child is a lane of
    its own although it keeps its parent's thread names (and, in viztracer's files, its tids),
    and each process's lanes are drawn together (a lane's pool is the part before its last
    "/"). `labels`: unique within each process (`thread_labels`)."""
    several = len({pid for pid, _ in labels}) > 1
    return {
        thread: (
            f"{tool}:{(processes or {}).get(thread[0], thread[0])}/{label}"
            if several
            else f"{tool}/{label}"
        )
        for thread, label in labels.items()
    }
