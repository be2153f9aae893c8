"""Graphs, ops and tensors: plain data that every executor reads and none of them changes.

A `Graph` is an append-only list of `Op` records. Each op has exactly one output, the `Tensor`
handle that builder functions return (so `pg.matmul(x, w)` is a Tensor whose `.op` is the
MatMul). Because an op can only take tensors that already exist, the list order is a topological
order, and op ids double as the deterministic tie-break of every scheduler.

Builder state — the default graph, the scope and the device — lives in a thread-local stack of
contexts (`graph.as_default()`, `pg.scope()`, `pg.device()`), the way TensorFlow 1.x did it, so
the seed example translates line for line. Shapes and dtypes are inferred and checked when an op
is built (by the op's registry entry in `parallelgraph.ops`), so a wrong graph fails at the line
that made it. A Session finalizes the graph it runs: after that, adding ops raises GraphError.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from .devices import CPU0, Device
from .dtypes import Shape
from .errors import GraphError

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]+$")


def parse_device(spec: str) -> Device:
    """Normalise "gpu:0", "/gpu:0", "/device:GPU:0", "cpu" ... to a `Device` ("kind:index").

    >>> parse_device("/device:GPU:1")
    'gpu:1'
    """
    return Device(spec)


@dataclass(frozen=True, eq=False)
class Op:
    """One node: what to compute (`type`, `attrs`), from what (`inputs`), and where (`device`).

    `shape` and `dtype` describe the single output. Ops compare by identity.
    """

    graph: Graph
    id: int
    type: str
    name: str
    scope: str
    #: Where the op was placed (a `Device`: a "kind:index" str that knows its kind).
    device: Device
    inputs: tuple[Tensor, ...]
    attrs: Mapping[str, Any]
    shape: Shape
    dtype: np.dtype

    @property
    def output(self) -> Tensor:
        return Tensor(self)

    def __repr__(self) -> str:
        return f"<Op {self.name!r} {self.type} shape={self.shape} {self.dtype.name} {self.device}>"


class Tensor:
    """The output of an op: a handle used to build further ops and to fetch or feed values.

    Supports `+ - * / ** @`, unary `-` and `abs()`, `< <= > >=` (bool masks) and indexing
    (`t[:, 0]`, `t[..., 1:3]`), with NumPy's broadcasting. Two handles of the same op are equal.
    A Tensor is not an array: NumPy's ufuncs leave it alone (`np.ones(3) + t` builds one add op
    through `t.__radd__`, as `3 + t` does), and `np.asarray(t)` raises TypeError.
    """

    __slots__ = ("op",)

    #: Opt out of NumPy's ufunc dispatch. Without this, `array + tensor` made NumPy loop over
    #: the array and build one op per element, returning an object array of Tensors.
    __array_ufunc__ = None

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{self!r} has no value until a Session runs it: use sess.run(tensor) to get one"
        )

    def __init__(self, op: Op):
        self.op = op

    shape = property(lambda self: self.op.shape, doc="Static shape, a tuple of ints.")
    dtype = property(lambda self: self.op.dtype, doc="NumPy dtype (float, int or bool).")
    name = property(lambda self: self.op.name, doc="The op's full name, e.g. 'net1/MatMul'.")
    graph = property(lambda self: self.op.graph)
    ndim = property(lambda self: len(self.op.shape))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and other.op is self.op

    def __hash__(self) -> int:
        return id(self.op)

    def __repr__(self) -> str:
        return f"<Tensor {self.name!r} shape={self.shape} {self.dtype.name}>"

    # Operators build ops (`ops.elementwise`'s table), with NumPy's broadcasting. `==` and `!=`
    # stay identity (handles are dict keys, as in TensorFlow 1.x): use pg.equal / pg.not_equal.
    def __add__(self, other: object) -> Tensor:
        return _build("add", self, other)

    def __radd__(self, other: object) -> Tensor:
        return _build("add", other, self)

    def __sub__(self, other: object) -> Tensor:
        return _build("subtract", self, other)

    def __rsub__(self, other: object) -> Tensor:
        return _build("subtract", other, self)

    def __mul__(self, other: object) -> Tensor:
        return _build("multiply", self, other)

    def __rmul__(self, other: object) -> Tensor:
        return _build("multiply", other, self)

    def __truediv__(self, other: object) -> Tensor:
        return _build("divide", self, other)

    def __rtruediv__(self, other: object) -> Tensor:
        return _build("divide", other, self)

    def __pow__(self, other: object) -> Tensor:
        return _build("pow", self, other)

    def __rpow__(self, other: object) -> Tensor:
        return _build("pow", other, self)

    def __matmul__(self, other: object) -> Tensor:
        return _build("matmul", self, other)

    def __rmatmul__(self, other: object) -> Tensor:
        return _build("matmul", other, self)

    def __neg__(self) -> Tensor:
        return _build("negative", self)

    def __abs__(self) -> Tensor:
        return _build("abs", self)

    def __lt__(self, other: object) -> Tensor:
        return _build("less", self, other)

    def __le__(self, other: object) -> Tensor:
        return _build("less_equal", self, other)

    def __gt__(self, other: object) -> Tensor:
        return _build("greater", self, other)

    def __ge__(self, other: object) -> Tensor:
        return _build("greater_equal", self, other)

    def __iter__(self) -> Any:
        raise TypeError(f"{self!r} is not iterable: use pg.split or index it (t[0])")

    def __getitem__(self, key: object) -> Tensor:
        from .ops.shape_ops import getitem

        return getitem(self, key)


def _build(op_type: str, *operands: object) -> Tensor:
    """The builder `pg.<op_type>` applied to `operands` (an operator of `Tensor`)."""
    from . import ops

    return getattr(ops, op_type)(*operands)


class Graph:
    """An append-only list of ops. Build it inside `with graph.as_default():`.

    Thread safety: building one graph from several threads at once is serialized by a lock;
    once a Session has taken the graph it is frozen (`finalized`) and safe to share.

    >>> g = pg.Graph()
    >>> with g.as_default():
    ...     y = pg.constant([[1.0, 2.0]]) @ pg.constant([[3.0], [4.0]])
    >>> y.shape
    (1, 1)
    """

    def __init__(self, name: str = "graph"):
        self.name = name
        self._ops: list[Op] = []
        self._by_name: dict[str, Op] = {}
        self._name_counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._finalized = False

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(self._ops)

    @property
    def finalized(self) -> bool:
        return self._finalized

    def __len__(self) -> int:
        return len(self._ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(tuple(self._ops))

    def __repr__(self) -> str:
        return f"<Graph {self.name!r} with {len(self._ops)} ops>"

    def finalize(self) -> None:
        """Freeze the graph; a Session calls this. Adding ops afterwards raises GraphError."""
        self._finalized = True

    def op(self, name: str) -> Op:
        """The op called `name` (its full scoped name)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise GraphError(f"graph {self.name!r} has no op named {name!r}") from None

    def tensor(self, name: str) -> Tensor:
        """The output tensor of the op called `name`."""
        return Tensor(self.op(name))

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this graph the one that builder functions add to, inside the `with` block."""
        _context().graphs.append(self)
        try:
            yield self
        finally:
            _context().graphs.pop()

    def add_op(
        self,
        type: str,
        inputs: tuple[Tensor, ...],
        attrs: Mapping[str, Any],
        shape: Shape,
        dtype: np.dtype,
        name: str | None,
        default_name: str,
    ) -> Tensor:
        """Append an op whose shape and dtype were already inferred; builders call this."""
        context = _context()
        scope = "/".join(context.scopes)
        device = context.devices[-1] if context.devices else CPU0
        with self._lock:
            if self._finalized:
                raise GraphError(
                    f"graph {self.name!r} is finalized (a Session runs it); cannot add "
                    f"{type} op {name or default_name!r}: build a new Graph instead"
                )
            for tensor in inputs:
                if tensor.op.graph is not self:
                    raise GraphError(
                        f"cannot add {type} op {name or default_name!r} in scope "
                        f"{scope or '<root>'!r}: its input {tensor.name!r} belongs to graph "
                        f"{tensor.op.graph.name!r}, not {self.name!r}"
                    )
            full_name = self._unique_name(scope, name or default_name)
            op = Op(
                graph=self,
                id=len(self._ops),
                type=type,
                name=full_name,
                scope=scope,
                device=device,
                inputs=inputs,
                attrs=MappingProxyType(dict(attrs)),
                shape=shape,
                dtype=dtype,
            )
            self._ops.append(op)
            self._by_name[full_name] = op
        return Tensor(op)

    def _unique_name(self, scope: str, name: str) -> str:
        if not _NAME_PATTERN.match(name):
            raise GraphError(f"op name {name!r} may only hold letters, digits, '_', '.', '-'")
        base = f"{scope}/{name}" if scope else name
        candidate, count = base, self._name_counts.get(base, 0)
        while candidate in self._by_name:
            count += 1
            candidate = f"{base}_{count}"
        self._name_counts[base] = count
        return candidate


class _BuilderContext(threading.local):
    def __init__(self) -> None:
        self.graphs: list[Graph] = []
        self.scopes: list[str] = []
        self.devices: list[Device] = []


_local = _BuilderContext()
_global_default_graph = Graph("default")


def _context() -> _BuilderContext:
    return _local


def get_default_graph() -> Graph:
    """The innermost `as_default()` graph of this thread, else the process-wide default graph."""
    graphs = _context().graphs
    return graphs[-1] if graphs else _global_default_graph


def reset_default_graph() -> Graph:
    """Replace the process-wide default graph with a new empty one and return it."""
    global _global_default_graph
    _global_default_graph = Graph("default")
    return _global_default_graph


@contextlib.contextmanager
def scope(name: str) -> Iterator[str]:
    """Name ops inside the block `name/...`; nests. Entering "net1" twice reuses "net1".

    >>> with pg.scope("net1"), pg.scope("layer"):
    ...     pass  # ops built here are called "net1/layer/<Op>"
    """
    parts = name.strip("/").split("/") if isinstance(name, str) else [""]
    if not all(part and _NAME_PATTERN.match(part) for part in parts):
        raise GraphError(f"bad scope name {name!r}: use letters, digits, '_', '.', '-'")
    scopes = _context().scopes
    scopes.extend(parts)
    try:
        yield "/".join(scopes)
    finally:
        del scopes[len(scopes) - len(parts) :]


@contextlib.contextmanager
def device(spec: str | None) -> Iterator[Device | None]:
    """Place ops built inside the block on `spec` ("cpu:0", "gpu:0"); None means the default.

    With `Config(soft_placement=True)` (the default) a session runs ops placed on a missing
    device on the CPU instead; with False it refuses the graph before running.
    """
    normalized = None if spec is None else parse_device(spec)
    devices = _context().devices
    devices.append(normalized if normalized is not None else CPU0)
    try:
        yield normalized
    finally:
        devices.pop()
