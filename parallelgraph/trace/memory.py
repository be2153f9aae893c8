"""Memory of a run, from its trace: each op's output bytes and the bytes live over time.

A trace records when ops ran, not what the allocator did, so this is a *model* of the memory
that the run's values (op outputs) took, computed from what the trace holds:

- **Sizes.** An op's output size is its output shape times its dtype's item size, read from the
  event's `shapes` text, which parallelgraph's own runs (and the files they save) record as
  "(512, 1024) x (1024, 1024) -> (512, 1024) float32": the shape and dtype after "->". Events
  without that part (imported traces: PyTorch records input dims only, TensorFlow and JAX no
  shapes) have an unknown size; they are listed in `MemoryProfile.unknown` and count nowhere,
  as is a size no array can have (over `MAX_OUTPUT_BYTES`: an edited or damaged file).
- **Lifetimes.** An output is *live* from its op's end (when the value exists whole) until the
  last of its consumers ends: every op event whose `inputs` name it, and every copy event named
  after it (a copy moves that op's value). A *fetched* output (the session returns it) stays
  live until the run ends (`trace.end`, the last work's end) and after it: the caller holds
  it, so the live bytes at the run's end are the bytes the run returns. Fetches are the names in
  `trace.info.fetches` (what `Trace.from_records` writes for a run), and any output no
  traced op consumes (in a pruned plan an op nobody consumes runs only because it is fetched).
- **Live bytes** at time t: the sum of the buffers with start <= t < end (a fetched buffer:
  start <= t), as a step function that changes only at buffer starts and ends
  (`MemoryProfile.series`, per device or in all);
  at an instant where one buffer is freed and another made, the value after both is the one
  recorded. Devices are the producing events' `device` ("cpu:0", "gpu:0").

What the model leaves out, so its peak is a lower bound of what the process held for the run's
values: variables, constants and feeds (the session holds them for the whole run, whatever the
schedule); an output while its op is still computing it (it is counted from the op's end, so
during an op its inputs are live but its output not yet); shards' and kernels' scratch space;
the device-side buffer of a host-device copy; the allocator's rounding, caching and
fragmentation; values an executor frees later than their last reader (the threads executor
drops a value once its last reader finished, which is this model; the Dask executor's workers
keep results by their own rules).

`memory_profile(trace)` (`trace.memory()`) computes it; `parallelgraph.chrome.to_chrome(trace,
memory=True)` exports the live bytes as counter events (a memory track in Perfetto), and
`trace.plot(memory=True)` draws them under the timeline.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .analysis import collector_paused, producer_run, runs_named
from .model import WORK, EventKind, TraceEvent

if TYPE_CHECKING:
    from .model import Trace

_OUTPUT = re.compile(r"->\s*\(([0-9,\s]*)\)\s*([A-Za-z][A-Za-z0-9_]*)\s*$")
#: Item sizes of the dtypes a shapes text can name (parallelgraph's, and the common others).
ITEM_BYTES = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
    "int16": 2, "int32": 4, "int64": 8, "bool": 1, "complex64": 8, "complex128": 16,
}  # fmt: skip


#: The most bytes an array can hold (NumPy's sizes are signed 64-bit): a larger output size read
#: from a file is no real size, and would overflow the sums drawn and exported.
MAX_OUTPUT_BYTES = 2**63 - 1


def output_bytes(event: TraceEvent) -> int | None:
    """The bytes of the event's output from its `shapes` text ("... -> (64, 128) float32" is
    64 * 128 * 4), or None when the text does not give an output shape and a known dtype, or
    gives one larger than any array (`MAX_OUTPUT_BYTES`)."""
    match = _OUTPUT.search(event.shapes) if "->" in event.shapes else None
    if match is None or match.group(2) not in ITEM_BYTES:
        return None
    dims = [part.strip() for part in match.group(1).split(",") if part.strip()]
    size = ITEM_BYTES[match.group(2)]
    for dim in dims:
        if len(dim) > 19:  # more digits than MAX_OUTPUT_BYTES: not parsed, never a real size
            return None
        size *= int(dim)
    return size if size <= MAX_OUTPUT_BYTES else None


@dataclass(frozen=True)
class Buffer:
    """One op's output: `nbytes` on `device`, live over [start, end) ns (see the module
    docstring); `consumers` are the events that read it, `fetched` whether the run returns it."""

    op: str
    device: str
    nbytes: int
    start: int
    end: int
    fetched: bool
    consumers: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryProfile:
    """The op outputs of a trace and the bytes live over time (module docstring: the model)."""

    buffers: tuple[Buffer, ...]
    unknown: tuple[str, ...]  # op events whose output size the trace does not say
    run_start: int  # ns: when the run's first work began (`Trace.start`)
    run_end: int  # ns: when the run ended (fetched outputs are live until then, and after)
    _steps: dict[str | None, tuple[list[int], list[int]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def known(self) -> bool:
        """Whether any output size is known (else there is no memory to show)."""
        return bool(self.buffers)

    @cached_property
    def devices(self) -> list[str]:
        """The devices that held outputs, in order of first output."""
        return list(dict.fromkeys(buffer.device for buffer in self.buffers))

    @property
    def returned_bytes(self) -> int:
        """The bytes of the fetched outputs: live at the run's end and after it."""
        return sum(buffer.nbytes for buffer in self.buffers if buffer.fetched)

    @property
    def output_bytes(self) -> dict[str, int]:
        """Each op's output bytes, by op name (ops whose size is known)."""
        return {buffer.op: buffer.nbytes for buffer in self.buffers}

    def series(self, device: str | None = None) -> tuple[list[int], list[int]]:
        """(times ns, live bytes from each time on): the step function of `device`'s live
        bytes (None: of all devices), one point per change, from the first buffer's start to
        the last change; the last value is what the run returns (0 if it fetches nothing
        there)."""
        if device not in self._steps:
            self._steps[device] = _steps(
                b for b in self.buffers if device is None or b.device == device
            )
        times, values = self._steps[device]
        return list(times), list(values)

    def live_at(self, t_ns: int, device: str | None = None) -> int:
        """The bytes live at `t_ns` (of `device`, or of all devices)."""
        times, values = self.series(device)
        position = bisect.bisect_right(times, t_ns) - 1
        return values[position] if position >= 0 else 0

    def peak(self, device: str | None = None) -> tuple[int, int]:
        """(bytes, ns): the most bytes live at once and the first time they were."""
        times, values = self.series(device)
        if not values:
            return 0, self.run_end
        best = max(range(len(values)), key=lambda i: (values[i], -i))
        return values[best], times[best]

    def counters(self) -> list[tuple[int, dict[str, int]]]:
        """At each time where some device's live bytes change, every device's bytes from then
        on: what a trace viewer's counter track needs."""
        times = sorted({t for device in self.devices for t in self.series(device)[0]})
        columns = {device: self.series(device) for device in self.devices}
        return [
            (t, {device: _value_at(*columns[device], t) for device in self.devices}) for t in times
        ]

    def __str__(self) -> str:
        if not self.known:
            return (
                f"memory: no output sizes in this trace ({len(self.unknown)} op event(s) "
                "without an output shape and dtype)"
            )
        top, when = self.peak()
        lines = [
            f"memory (op outputs, model): {len(self.buffers)} outputs, "
            f"{format_bytes(sum(b.nbytes for b in self.buffers))} in all; peak "
            f"{format_bytes(top)} live at {self._ms(when)} ms from the run's start; "
            f"{format_bytes(self.returned_bytes)} returned"
        ]
        for device in self.devices if len(self.devices) > 1 else ():
            value, at = self.peak(device)
            lines.append(f"  {device}: peak {format_bytes(value)} at {self._ms(at)} ms")
        if self.unknown:
            lines.append(f"  {len(self.unknown)} op event(s) of unknown output size not counted")
        return "\n".join(lines)

    def _ms(self, t_ns: int) -> str:
        return f"{(t_ns - self.run_start) / 1e6:.3f}"


def _steps(buffers: Iterable[Buffer]) -> tuple[list[int], list[int]]:
    deltas: dict[int, int] = {}
    for buffer in buffers:
        if buffer.nbytes and (buffer.fetched or buffer.end > buffer.start):
            deltas[buffer.start] = deltas.get(buffer.start, 0) + buffer.nbytes
            if not buffer.fetched:  # a fetched output stays with the caller
                deltas[buffer.end] = deltas.get(buffer.end, 0) - buffer.nbytes
    times, values, live = [], [], 0
    for t in sorted(deltas):
        live += deltas[t]
        if values and values[-1] == live:
            continue  # a free and a make of the same size at one instant: no change
        times.append(t)
        values.append(live)
    return times, values


def _value_at(times: Sequence[int], values: Sequence[int], t: int) -> int:
    position = bisect.bisect_right(times, t) - 1
    return values[position] if position >= 0 else 0


def format_bytes(count: float) -> str:
    """Bytes in binary units: "512 B", "1.50 KiB", "3.00 MiB"."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= size:
            return f"{count / size:.2f} {unit}"
    return f"{count:.0f} B"


def fetched_names(trace: Trace) -> set[str]:
    """The names `trace.info.fetches` lists (an ill-typed list in a file is not read)."""
    return set(trace.info.fetches or ())


@collector_paused
def memory_profile(trace: Trace) -> MemoryProfile:
    """The outputs of `trace`'s work op events and their lifetimes (see the module docstring).

    O(n log n) in the events: producers by name, each consumer's inputs looked up once.
    """
    producers: dict[str, list[TraceEvent]] = {}
    unknown: list[str] = []
    sizes: dict[int, int] = {}  # id(event) -> output bytes
    for event in trace.events:
        if event.kind != EventKind.OP or event.role is not WORK:
            continue
        size = output_bytes(event)
        if size is None:
            unknown.append(event.name)
            continue
        sizes[id(event)] = size
        producers.setdefault(event.name, []).append(event)
    readers: dict[int, list[TraceEvent]] = {}
    for consumer in trace.events:
        if consumer.kind == EventKind.SHARD:
            continue
        names = (
            consumer.inputs
            if consumer.kind != EventKind.COPY
            else (*consumer.inputs, consumer.name)
        )
        until = consumer.end if consumer.kind == EventKind.COPY else None  # a copy reads as it runs
        for name in dict.fromkeys(names):
            producer = producer_run(runs_named(producers, name), consumer, until)
            if producer is not None:
                readers.setdefault(id(producer), []).append(consumer)
    fetches = fetched_names(trace)
    run_end = trace.end
    buffers = []
    for name, events in producers.items():
        for producer in events:
            consumers = readers.get(id(producer), [])
            fetched = name in fetches or not consumers
            end = max((c.end for c in consumers), default=producer.end)
            if fetched:
                end = max(end, run_end)
            buffers.append(
                Buffer(
                    producer.name,
                    producer.device,
                    sizes[id(producer)],
                    producer.end,
                    max(end, producer.end),
                    fetched,
                    tuple(dict.fromkeys(c.name for c in consumers)),
                )
            )
    buffers.sort(key=lambda b: (b.start, b.op))
    return MemoryProfile(tuple(buffers), tuple(unknown), trace.start, run_end)
