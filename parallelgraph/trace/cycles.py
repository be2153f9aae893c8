"""Dependency cycles: a replay needs an order, and a trace whose dependencies form a cycle has
none (an op would wait for itself). A hand-edited or foreign trace can hold one; `simulate()`
used to replay the ops it could reach and drop the rest without a word.

- `find_cycle(ops)`: one cycle as the names of its ops, in dependency order (each one consumes
  the one before it, and the first consumes the last), or None. Linear time and memory in ops
  plus dependencies (an iterative depth-first search: no recursion limit at a million ops).
- `require_acyclic(ops, what)`: a ValueError naming the ops of a cycle, if there is one.

`ops` is a mapping of op name -> the names it depends on (`analysis.outermost_inputs`), or a
sequence of ops that have `.name` and `.inputs` (TraceEvent) or `.event.name` and `.inputs`
(replay.OpModel). Dependencies on names that are not ops are ignored, as the replay ignores
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: How many op names a message shows of a long cycle (its start and its end).
SHOWN = 8


def _graph(ops: Any) -> dict[str, list[str]]:
    if isinstance(ops, Mapping):
        pairs: Iterable[tuple[str, Iterable[str]]] = ops.items()
    else:
        pairs = ((op.event.name if hasattr(op, "event") else op.name, op.inputs) for op in ops)
    graph: dict[str, list[str]] = {}
    for name, inputs in pairs:
        graph.setdefault(name, []).extend(inputs)
    return graph


def find_cycle(ops: Any) -> list[str] | None:
    """The op names of one dependency cycle, each consuming the one before it (and the first
    the last), or None when the dependencies have an order."""
    graph = _graph(ops)
    NEW, OPEN, DONE = 0, 1, 2
    state = dict.fromkeys(graph, NEW)
    for root in graph:
        if state[root] != NEW:
            continue
        state[root] = OPEN
        path = [root]  # the open ops, each an input of the one before it
        inputs = [iter(graph[root])]
        while path:
            step = next(inputs[-1], None)
            if step is None:
                state[path.pop()] = DONE
                inputs.pop()
                continue
            seen = state.get(step)
            if seen is None or seen == DONE:  # not an op, or finished without a cycle
                continue
            if seen == OPEN:  # back to an op on the path: path[i:] is a cycle
                cycle = path[path.index(step) :]
                return cycle[::-1]  # producer first: each consumes the one before it
            state[step] = OPEN
            path.append(step)
            inputs.append(iter(graph[step]))
    return None


def describe_cycle(cycle: list[str]) -> str:
    """'a -> b -> c -> a' (the start and end of a long one)."""
    names = cycle if len(cycle) <= SHOWN else [*cycle[: SHOWN // 2], "...", *cycle[-SHOWN // 2 :]]
    return " -> ".join([*names, cycle[0]])


def require_acyclic(ops: Any, what: str = "simulate()") -> None:
    """A ValueError naming the ops of a dependency cycle in `ops`, if there is one."""
    cycle = find_cycle(ops)
    if cycle is not None:
        raise ValueError(
            f"{what}: the trace's dependencies form a cycle of {len(cycle)} op(s): "
            f"{describe_cycle(cycle)} (each consumes the one before it); an op cannot wait for "
            "itself, so the trace has no order to replay: check its inputs or flow events"
        )
