"""CUDA stream assignment: a swappable policy object decides which stream each GPU op uses.

- `single`: every op on stream 0 — TensorFlow 1.x's behaviour, which serialized the seed's two
  networks on one GPU.
- `branches`: an op continues the stream of an input whose stream it directly follows (its
  chain); an op that starts a new chain (no GPU input, or a fork) opens the next stream, round
  robin over `Config.streams`. Independent chains — the seed's net1 and net2 — get their own
  streams; a join (out = r1 + r2) continues one of its inputs' streams and waits on the others.
- `round_robin`: the i-th GPU op (in plan order) goes to stream i mod streams, chains or not.

Policies are pure functions of the plan's GPU steps (no CUDA import), so they are tested
without a GPU. Whatever the policy, the executor makes a consumer wait (a CUDA event) on every
producer that ran on another stream, so correctness never depends on the assignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class StreamPolicy(Protocol):
    name: str

    def assign(
        self, steps: Sequence[int], producers: dict[int, Sequence[int]], streams: int
    ) -> dict[int, int]:
        """Stream index for each GPU step (given in plan order) from its GPU producers."""
        ...


class SingleStream:
    name = "single"

    def assign(
        self, steps: Sequence[int], producers: dict[int, Sequence[int]], streams: int
    ) -> dict[int, int]:
        return dict.fromkeys(steps, 0)


class RoundRobin:
    name = "round_robin"

    def assign(
        self, steps: Sequence[int], producers: dict[int, Sequence[int]], streams: int
    ) -> dict[int, int]:
        return {step: position % streams for position, step in enumerate(steps)}


class Branches:
    name = "branches"

    def assign(
        self, steps: Sequence[int], producers: dict[int, Sequence[int]], streams: int
    ) -> dict[int, int]:
        stream_of: dict[int, int] = {}
        tail: dict[int, int] = {}  # stream -> the last step placed on it
        opened = 0
        for step in steps:
            continuing = [
                stream_of[p] for p in producers.get(step, ()) if tail.get(stream_of[p]) == p
            ]
            if continuing:
                stream = continuing[0]
            else:
                stream = opened % streams
                opened += 1
            stream_of[step] = stream
            tail[stream] = step
        return stream_of


POLICIES: dict[str, StreamPolicy] = {
    policy.name: policy for policy in (SingleStream(), Branches(), RoundRobin())
}
