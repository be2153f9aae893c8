"""`Preset`: a built graph with what to fetch and what to call it (the record the presets of
`experiments.presets` and of `pg.models` both return; a module of its own so that neither
imports the other for it)."""

from __future__ import annotations

from dataclasses import dataclass

from ..graph import Graph, Tensor


@dataclass(frozen=True)
class Preset:
    """A built preset: the graph, the tensor to fetch, and a one-line description."""

    name: str
    size: str
    graph: Graph
    fetch: Tensor
    description: str
    scopes: tuple[str, ...] = ()
