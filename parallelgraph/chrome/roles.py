"""Waiting found by its timing: for producers that cannot name the events that wait.

A known producer says which of its events wait (PyTorch's fork callers, ONNX Runtime's
`model_run`, `ray.get`, a Python thread's join) and sets `Draft.role` itself. For a file whose
producer we do not know, an event is *waiting* when it has the shape of a caller that handed its
work to other threads and held its span until they were done:

- it **launched** something: it encloses other events on its own lane (the calls that handed
  the work over) or a dependency (flow, correlation) leads from it to an event on another lane;
- most of its time is its **own** (`OWN_SHARE`: not covered by the events nested in it), so it
  is not a container of its own lane's work;
- and that own time is **covered by work it contains on other lanes** (`COVERED_SHARE`): events
  of other threads that began after it began and ended before it ended, with no other thread
  working at its start or at its end — the work was handed over and waited for.

A leaf event is never judged waiting by timing alone, and neither is an op whose neighbours were
already busy when it began: two threads computing side by side look alike, whichever is longer —
only a producer that knows the names can say a leaf waits (a `lock.acquire`). What was judged
waiting is said in a note.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence

from ..trace.intervals import Intervals, intersect, length, merge, subtract
from ..trace.model import WORK, EventKind, EventRole, nesting
from .producers.base import Converted, Draft

#: An event's own time (not covered by its children) must be at least this share of it ...
OWN_SHARE = 0.5
#: ... and at least this share of that own time must have other lanes working.
COVERED_SHARE = 0.9


def _own_time(drafts: Sequence[Draft]) -> tuple[list[Intervals], set[int]]:
    """Each draft's span less its children's spans on its lane, and which drafts have
    children."""
    children: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for position, (_, parent) in enumerate(nesting(drafts)):
        if parent >= 0:
            children[parent].append((drafts[position].start, drafts[position].end))
    own = [
        subtract([(d.start, d.end)], merge(children[p])) if p in children else [(d.start, d.end)]
        for p, d in enumerate(drafts)
    ]
    return own, set(children)


def draft_ends(draft: Draft) -> tuple[int, int]:
    return draft.start, draft.end


def _working_at(spans: Intervals, starts: list[int], t: int) -> bool:
    """Whether the sorted disjoint `spans` have work strictly around time `t`."""
    position = bisect.bisect_left(starts, t) - 1
    return position >= 0 and spans[position][0] < t < spans[position][1]


def _within(spans: Intervals, starts: list[int], draft: Draft) -> Intervals:
    """The busy spans that lie inside the draft's span and began after it began (work it
    launched: two events that start together cannot both have launched the other)."""
    first = bisect.bisect_right(starts, draft.start)
    inside = []
    for start, end in spans[first:]:
        if start >= draft.end:
            break
        if end <= draft.end:
            inside.append((start, end))
    return inside


def infer_waiting(drafts: Sequence[Draft], converted: Converted) -> None:
    """Set `role = WAITING` on the drafts that wait by the rule of the module docstring."""
    own, children = _own_time(drafts)
    launched = {
        id(producer)
        for producer, consumer in converted.edges
        if (producer.parent or producer).lane != (consumer.parent or consumer).lane
    }
    per_lane: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for draft in drafts:
        if draft.role is WORK and draft.kind != EventKind.COPY:
            per_lane[draft.lane].append((draft.start, draft.end))
    busy = {lane: merge(spans) for lane, spans in per_lane.items()}
    starts = {lane: [span[0] for span in spans] for lane, spans in busy.items()}
    waiting = []
    for position, draft in enumerate(drafts):
        if draft.role is not WORK or draft.kind != EventKind.OP or draft.parent is not None:
            continue
        if position not in children and id(draft) not in launched:
            continue
        own_ns = length(own[position])
        if own_ns < OWN_SHARE * max(1, draft.end - draft.start):
            continue
        others = [lane for lane in busy if lane != draft.lane]
        if any(
            _working_at(busy[lane], starts[lane], t) for lane in others for t in draft_ends(draft)
        ):
            continue  # another thread was mid-work when it began or ended: a peer, not a waiter
        contained = merge(
            span for lane in others for span in _within(busy[lane], starts[lane], draft)
        )
        if length(intersect(own[position], contained)) >= COVERED_SHARE * own_ns:
            waiting.append(draft)
    for draft in waiting:
        draft.role = EventRole.WAITING
    if waiting:
        names = ", ".join(sorted({repr(d.name[:40]) for d in waiting})[:3])
        converted.notes.append(
            f"{len(waiting)} event(s) ({names}) held their thread while other threads did the "
            "work they had launched: counted as waiting, not work."
        )
