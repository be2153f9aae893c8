"""The top ops of a trace: which op names took the time, as TensorBoard's profiler tabulates them.

`top_ops(trace)` (or `trace.top_ops()`) groups the trace's op events by name and gives each
name a row (`TopOp`): how many events it has, their total time, their self time and their share
of the work; `TopOps` holds the rows, prints as a fixed-width table and renders as HTML in a
notebook.

What is counted, and how:

- **work only**: op events whose role is work (`EventRole.WORK`); waiting and setup events
  (a `torch.jit.fork` caller, ONNX Runtime's `model_run`, session start) are not ops of the
  run and appear nowhere, and shards and copies are not ops (a sharded op's time is its op
  event's). Nested op events (a profiler's `aten::addmm` inside `aten::linear`) each have
  their own row.
- **total** time of an event: its working time (`TraceEvent.work_ns`, the duration less the
  waiting or setup its lane spent nested in it), so a span that mostly waited does not look
  busy.
- **self** time of an event: its total time less the part covered by the op events nested in
  it on the same lane (the union of those children's spans, less their own waiting): the time
  the op spent in its own code. A profiler's `aten::linear` holding an `aten::addmm` has a
  small self time and a large total time; for an outermost op without nested ops, self time
  is total time.
- **share** of a name: its self time over the self time of all ops. Self times do not count
  nested time twice, so the shares of all names add up to 1 (100 % of the op work).
- **names**: events are grouped by name less the "#2", "#3".. that trace readers append to tell
  repeated imported names apart ("aten::mm#3" is "aten::mm"), so a PyTorch op called twelve
  times is one row with count 12; `group="type"` groups by op type instead.

Self times are computed in one pass: the op events are nested per lane (`trace.nesting`, among
ops only), each child's span goes to its parent, and each parent subtracts the union of its
children's spans measured against its lane's work intervals. O(n log n).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import intervals
from .analysis import collector_paused
from .model import WORK, EventKind, TraceEvent, covered, nesting

if TYPE_CHECKING:
    from .model import Trace

#: What a table can be sorted by (largest first; "name" alphabetically).
ORDERS = ("total", "self", "count", "mean", "share", "name")
#: What rows can group events by.
GROUPS = ("name", "type")
_REPEAT = re.compile(r"#\d+$")


@dataclass(frozen=True)
class TopOp:
    """One op name's row: its events' count, total and self time (ns), share of the work."""

    name: str
    count: int
    total_ns: int
    self_ns: int
    share: float  # self_ns over all ops' self time (0..1)

    @property
    def total_ms(self) -> float:
        return self.total_ns / 1e6

    @property
    def self_ms(self) -> float:
        return self.self_ns / 1e6

    @property
    def mean_ms(self) -> float:
        """Total ms per event."""
        return self.total_ns / self.count / 1e6 if self.count else 0.0


@dataclass(frozen=True)
class TopOps:
    """The rows of `top_ops`, largest first by `by`; `names` op names in all (`limit` may have
    left some out) and `work_ns` all ops' self time, the denominator of every share."""

    rows: tuple[TopOp, ...]
    by: str
    group: str
    names: int
    work_ns: int

    def __iter__(self) -> Iterator[TopOp]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> TopOp:
        return self.rows[index]

    def row(self, name: str) -> TopOp:
        """The row of `name` (KeyError naming the rows there are when it is not one)."""
        for row in self.rows:
            if row.name == name:
                return row
        shown = ", ".join(repr(row.name) for row in self.rows[:8])
        raise KeyError(f"no op named {name!r} in this table; its rows: {shown}")

    @property
    def left_out(self) -> int:
        """How many op names `limit` left out."""
        return self.names - len(self.rows)

    def heading(self) -> str:
        what = "op names" if self.group == "name" else "op types"
        shown = f"top {len(self.rows)} of {self.names}" if self.left_out else f"all {self.names}"
        return (
            f"{shown} {what} by {self.by} (work only; self = total less nested ops; "
            f"share of {self.work_ns / 1e6:.3f} ms of op work)"
        )

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The header and the cells, as text."""
        header = ["name" if self.group == "name" else "type", "count", "total ms", "self ms"]
        header += ["mean ms", "share"]
        lines = [
            [
                row.name,
                str(row.count),
                f"{row.total_ms:.3f}",
                f"{row.self_ms:.3f}",
                f"{row.mean_ms:.3f}",
                f"{100 * row.share:.1f}%",
            ]
            for row in self.rows
        ]
        return header, lines

    def _footer(self) -> str:
        if not self.left_out:
            return ""
        rest = 1.0 - sum(row.share for row in self.rows) if self.work_ns else 0.0
        return f"(+{self.left_out} more, {100 * max(rest, 0.0):.1f}% of the op work)"

    def __str__(self) -> str:
        header, lines = self.table()
        if not lines:
            return self.heading() + "\n(no work op events in this trace)"
        widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(len(header))]
        widths[0] = min(widths[0], 60)

        def line(cells: list[str]) -> str:
            name = cells[0] if len(cells[0]) <= widths[0] else cells[0][: widths[0] - 1] + "…"
            rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])]
            return "  ".join([name.ljust(widths[0]), *rest])

        text = [self.heading(), line(header), *(line(cells) for cells in lines)]
        if self._footer():
            text.append(self._footer())
        return "\n".join(text)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        header, lines = self.table()
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
        body = "".join(
            "<tr>"
            + f"<td style='text-align:left'>{html.escape(cells[0])}</td>"
            + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells[1:])
            + "</tr>"
            for cells in lines
        )
        note = f"<p>{html.escape(self._footer())}</p>" if self._footer() else ""
        return (
            f"<div class='parallelgraph-top-ops'><p><b>{html.escape(self.heading())}</b></p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}</div>"
        )


def base_name(name: str) -> str:
    """An event name without the "#N" a trace reader appended to a repeated name."""
    return _REPEAT.sub("", name)


def self_times(trace: Trace, ops: list[TraceEvent]) -> list[int]:
    """Each op event's self time in ns: its working time less what the op events nested in it
    on its lane cover (see the module docstring); `ops` in the trace's event order."""
    work = trace.work_intervals
    children: dict[int, list[tuple[int, int]]] = {}
    for position, (_, parent) in enumerate(nesting(ops)):
        if parent >= 0:
            children.setdefault(parent, []).append((ops[position].start, ops[position].end))
    result = []
    for position, event in enumerate(ops):
        own = event.work_ns
        if position in children:
            lane = work.get(event.lane, [])
            own -= sum(covered(lane, s, e) for s, e in intervals.merge(children[position]))
        result.append(max(own, 0))
    return result


@collector_paused
def top_ops(trace: Trace, by: str = "total", limit: int | None = 20, group: str = "name") -> TopOps:
    """The op names that took the time, largest first (see the module docstring).

    by: "total", "self", "count", "mean", "share" (largest first) or "name"; limit: how many
    rows (None: all); group: "name" (repeated imported names together) or "type" (op type).

    >>> print(trace.top_ops(by="self", limit=10))  # doctest: +SKIP
    """
    if by not in ORDERS:
        raise ValueError(f"top_ops(by={by!r}): sort by one of {', '.join(ORDERS)}")
    if group not in GROUPS:
        raise ValueError(f"top_ops(group={group!r}): group by one of {', '.join(GROUPS)}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"top_ops(limit={limit!r}): a number of rows >= 0, or None for all")
    ops = [event for event in trace.events if event.kind == EventKind.OP and event.role is WORK]
    own = self_times(trace, ops)
    sums: dict[str, list[int]] = {}  # name -> [count, total, self]
    for event, self_ns in zip(ops, own):
        key = base_name(event.name) if group == "name" else (event.op_type or event.name)
        row = sums.setdefault(key, [0, 0, 0])
        row[0] += 1
        row[1] += event.work_ns
        row[2] += self_ns
    work_ns = sum(own)
    rows = [
        TopOp(name, count, total, self_ns, self_ns / work_ns if work_ns else 0.0)
        for name, (count, total, self_ns) in sums.items()
    ]
    if by == "name":
        rows.sort(key=lambda row: row.name)
    else:
        value = {
            "total": lambda row: row.total_ns,
            "self": lambda row: row.self_ns,
            "share": lambda row: row.self_ns,
            "count": lambda row: row.count,
            "mean": lambda row: row.total_ns / row.count,
        }[by]
        rows.sort(key=lambda row: (-value(row), row.name))
    kept = rows if limit is None else rows[:limit]
    return TopOps(tuple(kept), by, group, len(rows), work_ns)
