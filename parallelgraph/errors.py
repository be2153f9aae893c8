"""The two errors a user meets.

`GraphError` is raised while a graph, a config or a feed is checked: always *before* any kernel
runs, with a message that names the op, its scope and the shapes involved. `OpError` is raised
when a kernel fails during a run; it names the op and chains the original exception. After an
`OpError` the session is still usable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph import Op


class GraphError(ValueError):
    """Something is wrong with the graph, a fetch or a feed; nothing has run."""


class OpError(RuntimeError):
    """A kernel failed while running `op`; the original exception is chained as __cause__."""

    def __init__(self, message: str, op: Op | None = None):
        super().__init__(message)
        self.op = op


def describe(op: Op) -> str:
    """`'net1/MatMul' (matmul, scope 'net1', device cpu:0)`: how errors name an op."""
    scope = op.scope or "<root>"
    return f"{op.name!r} ({op.type}, scope {scope!r}, device {op.device})"
