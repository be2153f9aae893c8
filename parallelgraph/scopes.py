"""Branch scopes: which named scopes are the independent parts of a graph or a run.

The top-level scopes ("net1", "net2") when there are two or more; where every scoped op is in
one (a model built in `pg.scope("attention")`), the scopes one level below it, and so on down,
until a level has two or more ("attention/head0", "attention/head1", ..., "attention/out").
The planner gives each its own CUDA stream (`streams.Branches`), `explain()` compares them
(`trace.branches`), and a preset names them (`models.presets`). A leaf module: plain strings in,
plain strings out.
"""

from __future__ import annotations

from collections.abc import Iterable


def branch_level(scopes: Iterable[str]) -> list[str]:
    """The branch scopes (module docstring) among `scopes` (the scopes of ops, in order; "" for
    ops outside any scope), in order of first appearance."""
    scopes = list(scopes)
    level = list(dict.fromkeys(s.split("/", 1)[0] for s in scopes if s))
    while len(level) == 1:
        prefix = level[0] + "/"
        below = [prefix + s[len(prefix) :].split("/", 1)[0] for s in scopes if s.startswith(prefix)]
        if not below:
            break
        level = list(dict.fromkeys(below))
    return level


def branch_of(scope: str, branches: Iterable[str]) -> str | None:
    """The branch scope `scope` is in (itself or a scope below it), or None."""
    for branch in branches:
        if scope == branch or scope.startswith(branch + "/"):
            return branch
    return None
