"""Lanes: the rows of a timeline, parsed once into what they are.

A lane is named by a string (`TraceEvent.lane`), and every part of parallelgraph that needs to
know what a lane *is* — a thread that runs ops, an intra-op helper that runs shards, a GPU
stream, a copy engine — asks this module, never the name itself. `Lane` is the parsed value:

- `kind`: a `LaneKind` — WORKER (a thread that runs ops: an inter-op worker, a Dask worker
  thread, a thread of an imported CPU trace), HELPER (an intra-op helper running shards),
  STREAM (a GPU stream: its ops queue in order and share the GPU), COPY (host <-> device copies,
  Dask transfers);
- `pool`: the group it is drawn in and exported as one process ("inter-op", "stream",
  "worker-1", "gpu:0/stream:14"...); `index`: its number in the pool when it has one.

Our own executors name lanes "<pool>/<worker>" ("inter-op/0", "intra-op/1", "stream/0",
"copy/d2h", "worker-2/3", "worker-2/intra-op-1", "worker-2/transfer"); `parse_lane` reads those
names and the names our trace readers give imported lanes ("gpu:0/stream:14/0",
"gpu:0/memcpy/0", "cpu/MainThread"). A reader that knows better (a producer whose GPU streams
or threads are named otherwise) records the kinds on the trace (`Trace.lane_kinds`), and
`Trace.lane()` prefers them.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass


class LaneKind(enum.Enum):
    """What a lane is; the value is the word used in reports."""

    WORKER = "worker thread"
    HELPER = "intra-op helper"
    STREAM = "stream"
    COPY = "copy"

    @property
    def computes(self) -> bool:
        """Whether the lane's time is compute work (copies and transfers are not)."""
        return self is not LaneKind.COPY


#: Display order of kinds: CPU workers, their helpers, GPU streams, copies.
KIND_ORDER = {LaneKind.WORKER: 0, LaneKind.HELPER: 1, LaneKind.STREAM: 2, LaneKind.COPY: 3}


@dataclass(frozen=True)
class Lane:
    """A parsed lane (see the module docstring)."""

    name: str
    pool: str
    kind: LaneKind
    index: int | None = None

    @property
    def cluster_worker(self) -> str | None:
        """The Dask worker whose lane this is ("worker-1": its threads, helpers and transfers),
        or None for a lane of the process that ran the session."""
        return self.pool if self.pool.startswith("worker-") else None

    @property
    def sort_key(self) -> tuple[int, str, int, str]:
        """Display order: worker threads, helpers, GPU streams, copies, then the lanes of Dask
        workers (each worker's threads, helpers and transfers together); by pool, then by
        number."""
        rank = len(KIND_ORDER) if self.cluster_worker is not None else KIND_ORDER[self.kind]
        return (rank, self.pool, self.index if self.index is not None else -1, self.name)


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and text.isascii() else None


def _kind_of(pool: str, worker: str) -> LaneKind:
    """The kind of a lane from its pool and worker parts (see the module docstring)."""
    last = pool.rpartition("/")[2]
    if pool == "intra-op" or worker.startswith("intra-op"):
        return LaneKind.HELPER
    if pool == "copy" or last == "memcpy" or worker in ("transfer", "memcpy"):
        return LaneKind.COPY
    if pool == "stream" or last.startswith("stream") or pool.endswith("-stream"):
        return LaneKind.STREAM
    return LaneKind.WORKER


@functools.lru_cache(maxsize=4096)
def parse_lane(name: str) -> Lane:
    """The `Lane` a name stands for, by our naming rules (see the module docstring).

    >>> parse_lane("intra-op/2").kind, parse_lane("gpu:0/stream:14/0").kind
    (<LaneKind.HELPER: 'intra-op helper'>, <LaneKind.STREAM: 'stream'>)
    """
    pool, _, worker = name.rpartition("/")
    if not pool:
        pool, worker = name, ""
    return Lane(name, pool, _kind_of(pool, worker), _number(worker))


def lane_of(name: str, kinds: Mapping[str, str] | None = None) -> Lane:
    """The lane `name`, with its kind taken from `kinds` (a reader's record) when listed."""
    lane = parse_lane(name)
    recorded = (kinds or {}).get(name)
    if recorded is None or recorded == lane.kind.value:
        return lane
    return Lane(lane.name, lane.pool, LaneKind(recorded), lane.index)
