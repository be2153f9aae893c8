"""Trace events: the frozen records a trace is made of, and the records executors append.

`TraceEvent` is one bar of a timeline; its `kind` (`EventKind`: op, shard, copy) and `role`
(`EventRole`: work, waiting, setup) are str enums, so files and JSON hold their values
unchanged. `StepRecord` and `CopyRecord` name the plain tuples an executor appends in its hot
path (`parallelgraph.trace.records` turns them into events). `parallelgraph.trace.model` says
what the fields mean (nesting, roles, program order) and re-exports everything here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from ..devices import Device


class EventKind(str, enum.Enum):
    """What an event is a bar of: a whole op, one shard of an op, or a copy between host and
    device. A `str` enum: the value is what files record, and it compares equal to it."""

    OP = "op"
    SHARD = "shard"
    COPY = "copy"

    def __str__(self) -> str:
        return self.value


class EventRole(str, enum.Enum):
    """What an event's time was (see the module docstring); the value is what files record."""

    WORK = "work"
    WAITING = "waiting"
    SETUP = "setup"

    def __str__(self) -> str:
        return self.value


WORK = EventRole.WORK

#: The op type of a copy's event (its kind is `EventKind.COPY`).
COPY_OP_TYPE = EventKind.COPY.value
#: The device of the CUDA executor's copies ("copy/h2d", "copy/d2h"): the one GPU it uses.
COPY_DEVICE = Device("gpu:0")


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One bar on the timeline: an op, a shard of an op, or a copy. Times in ns.

    `depth` and `parent` say where the event nests on its lane (see the module docstring);
    they are set by the Trace that holds the event.
    """

    name: str
    op_type: str
    scope: str
    device: str
    kind: EventKind
    lane: str
    start: int
    end: int
    flops: int = 0
    bytes: int = 0
    shard: int | None = None
    inputs: tuple[str, ...] = ()
    depth: int = 0
    parent: str | None = None
    shapes: str = ""  # "(512, 1024) x (1024, 1024) -> (512, 1024) float32", or the profiler's
    role: EventRole = WORK
    after: str | None = None  # the op before it on its lane, in program order
    idle_ns: int = 0  # of a work event: its lane's time in waiting/setup nested inside it
    #: Of a shard event: how many of the op's shards it computed (from `shard` on), in one call
    #: (an op whose kernel gives the same bits that way merges a thread's shards: executors.step).
    shards: int = 1

    @property
    def duration_ns(self) -> int:
        return self.end - self.start

    @property
    def work_ns(self) -> int:
        """ns of work: the duration less the nested waiting and setup (0 for those events)."""
        return self.end - self.start - self.idle_ns if self.role is WORK else 0

    @property
    def duration(self) -> int:
        """`duration_ns`, under its name before units were spelled out."""
        return self.end - self.start

    @property
    def work(self) -> int:
        """`work_ns`, under its name before units were spelled out."""
        return self.work_ns

    def in_scope(self, scope: str) -> bool:
        """True if the event belongs to `scope` or to a scope nested in it."""
        return self.scope == scope or self.scope.startswith(scope + "/")


class StepRecord(NamedTuple):
    """What an executor appends when an op or one of its shards ran (a plain tuple in the hot
    path: two clock reads and an append; named here, where it is read).

    `kind` is `EventKind.OP` or `EventKind.SHARD` (its value, "op" or "shard", reads the same:
    the record is turned into an event with `EventKind(kind)`); `shard` is the shard's number,
    None for a whole op; `shards` how many consecutive shards one call computed (a record of
    merged shards is 7 long, every other 6).
    """

    kind: EventKind
    step: int  # index into plan.steps
    lane: str
    start_ns: int
    end_ns: int
    shard: int | None
    shards: int = 1


class CopyRecord(NamedTuple):
    """What an executor appends when a value was copied between host and device (`kind` is
    `EventKind.COPY`)."""

    kind: EventKind
    op_name: str  # the op whose value moved
    lane: str  # "copy/h2d", "copy/d2h", "worker-1/transfer"
    start_ns: int
    end_ns: int
    nbytes: int
