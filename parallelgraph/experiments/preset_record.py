"""`Preset`: a built graph with what to fetch and what to call it (the record the presets of
`experiments.presets` and of `pg.models` both return; a module of its own so that neither
imports the other for it), and `graph_and_fetches`, the one reading of what a build function
returned, shared by `pg.sweep`, `pg.dashboard` and the CLI."""

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


def graph_and_fetches(built: object) -> tuple[Graph, object]:
    """(graph, what to fetch) from what a build function returned: a Preset, a
    `(graph, fetches)` pair, a Graph (its sink ops are fetched), or the tensors themselves (a
    Tensor, or a list, tuple or dict of them, all of one graph)."""
    if isinstance(built, Preset) or (hasattr(built, "graph") and hasattr(built, "fetch")):
        return built.graph, built.fetch  # type: ignore[attr-defined]
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], Graph):
        return built
    if isinstance(built, Graph):
        consumed = {t.op.id for op in built.ops for t in op.inputs}
        return built, [op.output for op in built.ops if op.id not in consumed]
    tensors = tensors_in(built)
    if not tensors:
        raise TypeError(
            "nothing to fetch: a build function returns what to fetch (a Tensor, or a list, tuple "
            f"or dict of them), a (graph, fetches) pair, a Graph or a Preset, not {built!r:.80}"
        )
    graphs = {id(t.graph): t.graph for t in tensors}
    if len(graphs) > 1:
        raise ValueError("the fetches a build function returns must be tensors of one graph")
    return tensors[0].graph, built


def tensors_in(fetches: object) -> list[Tensor]:
    if isinstance(fetches, Tensor):
        return [fetches]
    if isinstance(fetches, dict):
        fetches = list(fetches.values())
    if isinstance(fetches, (list, tuple)):
        return [t for item in fetches for t in tensors_in(item)]
    return []
