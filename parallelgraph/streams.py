"""CUDA stream assignment: a swappable policy object decides which stream each GPU op uses.

- `single`: every op on stream 0 — TensorFlow 1.x's behaviour, which serialized the seed's two
  networks on one GPU.
- `branches`: an op continues the stream of an input whose stream it directly follows (its
  chain), except that an op of a branch scope (`scopes.branch_level`: net1, or
  attention/head3) whose branch has a stream already takes that one; an op that starts a new
  chain elsewhere (no GPU input, or a fork) opens the next stream, round robin over
  `Config.streams`. Independent chains — the seed's net1 and
  net2 — get their own streams, and so do the heads, experts and towers of `pg.models` (a
  head's q, k and v projections, three chains forked from one input, stay on the head's
  stream); a join (out = r1 + r2) continues one of its inputs' streams and waits on the others.
- `round_robin`: the i-th GPU op (in plan order) goes to stream i mod streams, chains or not.

Policies are pure functions of the plan's GPU steps (no CUDA import), so they are tested
without a GPU. Whatever the policy, the executor makes a consumer wait (a CUDA event) on every
producer that ran on another stream, so correctness never depends on the assignment.

The launch order is here too, once for the planner and for the replay of a GPU trace
(`trace/replay.py`): `depths` (the longest chain of producers of each node) and `ready_walk`,
the order in which one worker takes nodes when it always takes the ready node of lowest key.
With key (depth, index) that is breadth-first, which gives every stream its first kernel before
any gets its second. This module imports nothing of ours, so trace analysis may use it without
importing the planner.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Protocol


class StreamPolicy(Protocol):
    name: str

    def assign(
        self,
        steps: Sequence[int],
        producers: dict[int, Sequence[int]],
        streams: int,
        groups: dict[int, str] | None = None,
    ) -> dict[int, int]:
        """Stream index for each GPU step (given in plan order) from its GPU producers;
        `groups`: the branch scope of each step that has one."""
        ...


class SingleStream:
    name = "single"

    def assign(
        self,
        steps: Sequence[int],
        producers: dict[int, Sequence[int]],
        streams: int,
        groups: dict[int, str] | None = None,
    ) -> dict[int, int]:
        return dict.fromkeys(steps, 0)


class RoundRobin:
    name = "round_robin"

    def assign(
        self,
        steps: Sequence[int],
        producers: dict[int, Sequence[int]],
        streams: int,
        groups: dict[int, str] | None = None,
    ) -> dict[int, int]:
        return {step: position % streams for position, step in enumerate(steps)}


class Branches:
    name = "branches"

    def assign(
        self,
        steps: Sequence[int],
        producers: dict[int, Sequence[int]],
        streams: int,
        groups: dict[int, str] | None = None,
    ) -> dict[int, int]:
        groups = groups or {}
        stream_of: dict[int, int] = {}
        tail: dict[int, int] = {}  # stream -> the last step placed on it
        of_group: dict[str, int] = {}  # branch scope -> its stream
        opened = 0
        for step in steps:
            continuing = [
                stream_of[p] for p in producers.get(step, ()) if tail.get(stream_of[p]) == p
            ]
            group = groups.get(step)
            if group is not None and group in of_group:  # the branch's own stream
                stream = of_group[group]
            elif continuing:
                stream = continuing[0]
            else:
                stream = opened % streams
                opened += 1
            if group is not None:
                of_group.setdefault(group, stream)
            stream_of[step] = stream
            tail[stream] = step
        return stream_of


POLICIES: dict[str, StreamPolicy] = {
    policy.name: policy for policy in (SingleStream(), Branches(), RoundRobin())
}


def depths(consumers: Sequence[Sequence[int]]) -> list[int]:
    """depth[i]: the longest chain of producers before node i (0: none). Nodes are numbered in
    a topological order, and `consumers[i]` lists the nodes that read node i."""
    depth = [0] * len(consumers)
    for node, readers in enumerate(consumers):  # a node's depth is final before it is read
        for reader in readers:
            depth[reader] = max(depth[reader], depth[node] + 1)
    return depth


def ready_walk(
    consumers: Sequence[Sequence[int]],
    keys: Sequence[Any],
    pending: Sequence[int] | None = None,
) -> list[int]:
    """The nodes in the order one worker takes them: always the ready node of lowest `keys[i]`
    (a node is ready once every producer was taken); `pending[i]`, its producer count, is
    counted from `consumers` when not given. Keys must be unique (ties broken by the index
    inside the key), so the order is deterministic. Always a topological order."""
    if pending is None:
        counts = [0] * len(consumers)
        for readers in consumers:
            for reader in readers:
                counts[reader] += 1
    else:
        counts = list(pending)
    ready = [(keys[node], node) for node, count in enumerate(counts) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for reader in consumers[node]:
            counts[reader] -= 1
            if counts[reader] == 0:
                heapq.heappush(ready, (keys[reader], reader))
    return order


def breadth_first(consumers: Sequence[Sequence[int]]) -> list[int]:
    """The launch order for several streams: by depth, then index (`ready_walk`)."""
    depth = depths(consumers)
    return ready_walk(consumers, [(depth[node], node) for node in range(len(consumers))])
