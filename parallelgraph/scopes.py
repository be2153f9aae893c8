"""Branch scopes: which named scopes are the independent parts of a graph or a run.

The top-level scopes ("net1", "net2") when there are two or more; where every scoped op is in
one (a model built in `pg.scope("attention")`), the scopes one level below it, and so on down,
until a level has two or more ("attention/head0", "attention/head1", ..., "attention/out").
The planner gives each its own CUDA stream (`streams.Branches`), `explain()` compares them
(`trace.branches`), and a preset names them (`models.presets`). A leaf module: plain strings in,
plain strings out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


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


def enclosing_scopes(scope: str) -> list[str]:
    """`scope` and every scope it is in, innermost first: "a/b/c", "a/b", "a" (each prefix
    that ends before a "/"). Looking these up in a set of scopes finds the ones `scope` is in
    without comparing it with each of them.

    >>> enclosing_scopes("a/b/c")
    ['a/b/c', 'a/b', 'a']
    """
    return [scope] + [scope[:i] for i in range(len(scope) - 1, -1, -1) if scope[i] == "/"]


def branch_of(scope: str, branches: Iterable[str]) -> str | None:
    """The branch scope `scope` is in (itself or a scope below it), or None."""
    return branch_finder(branches)(scope)


def branch_finder(branches: Iterable[str]) -> Callable[[str], str | None]:
    """`branch_of` for many scopes against one list of branches: each scope's enclosing scopes
    looked up (the first of `branches` that holds it wins), not every branch compared with it
    (a plot of thousands of scopes compared each with each)."""
    rank: dict[str, int] = {}
    for position, branch in enumerate(branches):
        rank.setdefault(branch, position)

    def find(scope: str) -> str | None:
        return min((s for s in enclosing_scopes(scope) if s in rank), key=rank.get, default=None)

    return find
