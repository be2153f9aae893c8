"""Nesting on a lane, and the time each lane spent in work: computed once per trace.

`nesting` places events (or a reader's drafts) in the innermost earlier event that contains
them on their lane; `role_nesting` nests work among work and waiting or setup among
themselves; `work_layout` finds, per lane, the intervals in which the innermost open event was
work (see `parallelgraph.trace.model` for why). Pure functions over sequences.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from typing import Protocol

from . import intervals as intervals_module
from .events import WORK, EventRole, TraceEvent

merge_intervals = intervals_module.merge  # the union of [start, end) intervals
Intervals = intervals_module.Intervals


class Spanned(Protocol):
    """Anything with a lane and a [start, end) time: an event, or a reader's draft of one."""

    lane: str
    start: int
    end: int


def nesting(items: Sequence[Spanned]) -> list[tuple[int, int]]:
    """(depth, index of the parent or -1) of each item, from how they nest on each lane.

    On a lane, an item nests in the innermost earlier item that contains it (starts no later,
    ends no earlier); ties keep the given order, so a parent listed first stays the parent. Its
    depth is the number of items still open when it starts, so an item that overlaps a sibling
    without nesting in it (possible only in imported files) is drawn a row below it, and its
    parent is the innermost item that does contain it (or none). O(n log n).
    """
    starts = [item.start for item in items]
    ends = [item.end for item in items]
    by_lane: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        by_lane.setdefault(item.lane, []).append(position)
    placed = [(0, -1)] * len(items)
    for positions in by_lane.values():
        positions.sort(key=lambda p: (starts[p], -ends[p], p))
        stack: list[int] = []
        for position in positions:
            start, end = starts[position], ends[position]
            while stack and ends[stack[-1]] <= start and ends[stack[-1]] < end:
                stack.pop()
            if not stack:
                stack.append(position)
                continue
            parent = stack[-1] if end <= ends[stack[-1]] else -1
            if parent < 0:  # overlaps the top without nesting in it: look further down
                parent = next((p for p in reversed(stack) if end <= ends[p]), -1)
            placed[position] = (len(stack), parent)
            stack.append(position)
    return placed


class Roled(Spanned, Protocol):
    role: EventRole


def role_nesting(items: Sequence[Roled]) -> list[tuple[int, int]]:
    """`nesting`, with work items nested among work items and the others among themselves
    (see the module docstring)."""
    if all(item.role is WORK for item in items):
        return nesting(items)
    placed = [(0, -1)] * len(items)
    work = [position for position, item in enumerate(items) if item.role is WORK]
    other = [position for position, item in enumerate(items) if item.role is not WORK]
    for group in (work, other):
        for position, (depth, parent) in zip(group, nesting([items[p] for p in group])):
            placed[position] = (depth, group[parent] if parent >= 0 else -1)
    return placed


def nest(events: Sequence[TraceEvent]) -> tuple[TraceEvent, ...]:
    """`events` with `depth` and `parent` set by `role_nesting`; events already right are
    kept."""
    placed = list(events)
    for position, (depth, parent) in enumerate(role_nesting(events)):
        event = events[position]
        name = events[parent].name if parent >= 0 else None
        if depth != event.depth or name != event.parent:
            placed[position] = dataclasses.replace(event, depth=depth, parent=name)
    return tuple(placed)


def work_layout(events: Sequence[TraceEvent]) -> tuple[dict[str, Intervals], list[int]]:
    """Per lane, the intervals its thread spent in work (the innermost open event decides),
    and each event's `idle_ns` (the time in waiting or setup nested inside a work event).

    O(n log n): one nesting of all events, each event's exclusive time (its span less its
    children's), the union of the work events' exclusive time per lane.
    """
    if all(event.role is WORK for event in events):
        per_lane: dict[str, list[tuple[int, int]]] = {}
        for event in events:
            per_lane.setdefault(event.lane, []).append((event.start, event.end))
        return {lane: merge_intervals(spans) for lane, spans in per_lane.items()}, [0] * len(events)
    children: dict[int, list[tuple[int, int]]] = {}
    for position, (_, parent) in enumerate(nesting(events)):
        if parent >= 0:
            children.setdefault(parent, []).append((events[position].start, events[position].end))
    exclusive: dict[str, list[tuple[int, int]]] = {}
    for position, event in enumerate(events):
        own = [(event.start, event.end)]
        if position in children:
            own = intervals_module.subtract(own, merge_intervals(children[position]))
        if event.role is WORK:
            exclusive.setdefault(event.lane, []).extend(own)
        else:
            exclusive.setdefault(event.lane, [])
    lanes = {lane: merge_intervals(spans) for lane, spans in exclusive.items()}
    idle = [
        event.duration_ns - covered(lanes[event.lane], event.start, event.end)
        if event.role is WORK
        else 0
        for event in events
    ]
    return lanes, idle


def with_idle(event: TraceEvent, idle_ns: int) -> TraceEvent:
    return event if event.idle_ns == idle_ns else dataclasses.replace(event, idle_ns=idle_ns)


def covered(intervals: Intervals, start: int, end: int) -> int:
    """How much of [start, end) the sorted disjoint `intervals` cover (by bisection)."""
    position = max(0, bisect.bisect_right(intervals, (start, start)) - 1)
    total = 0
    while position < len(intervals) and intervals[position][0] < end:
        low, high = max(intervals[position][0], start), min(intervals[position][1], end)
        if low < high:
            total += high - low
        position += 1
    return total


def intersection_length(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Total length of the intersection of two sorted disjoint interval lists."""
    return intervals_module.length(intervals_module.intersect(list(a), list(b)))
