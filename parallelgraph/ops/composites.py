"""Composite ops: softmax, log_softmax, layer_norm and batch_norm, each a few primitives (the
reductions and elementwise ops) built inside one named scope.

Along the last axis alone (the common case: attention scores, a transformer's layer norm with
gamma and beta of the last axis's size or None) softmax, log_softmax and layer_norm build one
row op instead (`ops.rowwise`: one kernel reads, reduces and writes each row while it is in the
cache). On one thread, 512x1024 and 2048x128 float32, softmax took 0.6-0.8x NumPy's time
where its five primitives took 1.0-1.5x, layer_norm 0.3-0.5x where its nine took 0.85-1.7x.
It is named as a TensorFlow op is: "Softmax", "LogSoftmax", "LayerNorm" (or `name`), in the
current scope; softmax and log_softmax give the composite's bits. Other axes build the
composite, and so does anything the composite would refuse (an int x, a bad axis or epsilon, a
parameter of another shape), which keeps its errors.

A composite adds no op type of its own: its ops are the primitives', so they shard, run on the
GPU and fuse (`Config(fuse=True)`: `ops.fused_elementwise` takes those of their elementwise ops
that read full rows or one row, such as layer_norm's `* gamma + beta`) like any others, and
give the bits of the same primitives built by hand. The scope (`pg.scope`) makes them read as
one group on the timeline and in errors: `softmax(x, axis=0)` builds "Softmax/Max", "Softmax/Sub",
"Softmax/Exp", "Softmax/Sum" and "Softmax/RealDiv". Without a `name`, a composite takes the
first of "Softmax", "Softmax_1", ... that no earlier composite of the graph took; with one, it
takes `name` as given (a repeated name shares the scope, as `pg.scope` does).

Normalizing over an axis keeps the reduced axes as 1s (`keepdims=True`) so that the statistics
broadcast back over them. Parameters along the normalized axes (layer_norm's gamma and beta,
batch_norm's mean, variance, offset and scale) may be given as NumPy broadcasts them against x,
or as exactly the sizes of those axes (a (C,) vector for axis 1 of an (N, C, H, W) x), which is
laid out along them (a reshape to (C, 1, 1): on the host for an array, a `reshape` op for a
tensor). Where both readings fit (a (5,) gamma for axis 1 of a (4, 5, 5) x) the axes' sizes win:
the parameter belongs to the normalized axes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ..errors import GraphError
from ..graph import Tensor, _context, get_default_graph, scope
from . import elementwise_op as ew
from .broadcast import broadcast_shapes
from .builder import as_tensor, build
from .reductions import normalize_axes, reduce_max, reduce_mean, reduce_sum
from .registry import ShapeError

__all__ = ["batch_norm", "layer_norm", "log_softmax", "softmax"]

Axis = int | Sequence[int]


@contextmanager
def _composite(label: str, name: str | None, first: str) -> Iterator[str]:
    """`pg.scope` of the composite: `name`, or the first of label, label_1, ... under which the
    graph has no op called `first` yet (the composite's first op: no earlier composite of this
    kind took it)."""
    if name is None:
        graph, outer = get_default_graph(), "/".join(_context().scopes)
        name, count = label, 0
        while _has_op(graph, "/".join(filter(None, (outer, name, first)))):
            count += 1
            name = f"{label}_{count}"
    with scope(name) as full:
        yield full


def _has_op(graph: object, name: str) -> bool:
    try:
        graph.op(name)  # type: ignore[attr-defined]
    except GraphError:
        return False
    return True


def _refuse(what: str, x: Tensor, problem: str) -> GraphError:
    where = "/".join(_context().scopes) or "<root>"
    return GraphError(f"cannot build {what} in scope {where!r}: {problem} (x: {list(x.shape)})")


def _axes(what: str, x: Tensor, axis: object) -> tuple[int, ...]:
    try:
        return normalize_axes(axis, x.shape)
    except ShapeError as problem:
        raise _refuse(what, x, str(problem)) from None


def _along(what: str, value: object, x: Tensor, axes: tuple[int, ...], role: str) -> Tensor | None:
    """`value` (a parameter of the normalized axes) as a tensor ready to broadcast against x:
    as given when NumPy broadcasts it without growing x, laid out along `axes` when it has
    exactly their sizes (module docstring); GraphError otherwise. A number or an array becomes
    a constant of x's dtype."""
    if value is None:
        return None
    if not isinstance(value, Tensor):
        value = np.asarray(value, dtype=x.dtype)
    target = _laid_out(what, tuple(value.shape), x, axes, role)
    if target == tuple(value.shape):
        return as_tensor(value)
    if isinstance(value, Tensor):
        from .shape_ops import reshape

        return reshape(value, target, name=f"{role}_along_axes")
    return as_tensor(np.reshape(value, target))


def _laid_out(
    what: str, shape: tuple[int, ...], x: Tensor, axes: tuple[int, ...], role: str
) -> tuple[int, ...]:
    """The shape a parameter of `shape` takes to broadcast against x (module docstring): its
    own, or the normalized axes' sizes laid out along them; GraphError otherwise."""
    sizes = tuple(x.shape[a] for a in axes)
    laid_out = tuple(x.shape[a] if a in axes else 1 for a in range(len(x.shape)))
    trailing = laid_out[len(laid_out) - len(shape) :] if len(shape) <= len(laid_out) else None
    if shape == sizes and shape != trailing:  # (C,) for axis 1 of (N, C, H, W): (C, 1, 1)
        return laid_out
    try:
        grown = broadcast_shapes(tuple(x.shape), shape) != tuple(x.shape)
    except ShapeError:
        grown = True
    if grown:
        raise _refuse(
            what,
            x,
            f"{role} of shape {list(shape)} does not broadcast against x: give the sizes of "
            f"the normalized axes {list(sizes)} or a shape that broadcasts to x, such as "
            f"{list(laid_out)}",
        )
    return shape


def _number(value: object, x: Tensor) -> object:
    """epsilon, checked: a real number (the elementwise builder gives it x's dtype)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise _refuse("a normalization", x, f"epsilon must be a number, got {value!r}")
    return float(value)


def _last_axis_only(x: Tensor, axis: object) -> bool:
    """Whether `axis` names the last axis of a float x and nothing else: the row ops' case."""
    if x.dtype not in (np.float32, np.float64) or x.ndim == 0:
        return False
    try:
        return normalize_axes(axis, x.shape) == (x.ndim - 1,)
    except ShapeError:
        return False


def softmax(x: object, axis: Axis = -1, name: str | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis` (an int or a tuple of ints), computed as
    e = exp(x - max(x)); e / sum(e), so large logits do not overflow. Along the last axis
    alone: one row op (module docstring).

    >>> pg.softmax(pg.constant([[1.0, 2.0, 3.0]])).op.name
    'Softmax'
    >>> pg.softmax(pg.constant([[1.0, 2.0, 3.0]]), axis=0).op.name
    'Softmax/RealDiv'
    """
    x = as_tensor(x)
    if _last_axis_only(x, axis):
        return build("softmax", (x,), name=name)
    with _composite("Softmax", name, "Max"):
        shifted = ew.subtract(x, reduce_max(x, axis, keepdims=True))
        e = ew.exp(shifted)
        return ew.divide(e, reduce_sum(e, axis, keepdims=True))


def log_softmax(x: object, axis: Axis = -1, name: str | None = None) -> Tensor:
    """log(softmax(x)) along `axis`, as x - max(x) - log(sum(exp(x - max(x)))): accurate where
    softmax's value underflows to 0 (its log is then a finite large negative number). Along
    the last axis alone: one row op (module docstring)."""
    x = as_tensor(x)
    if _last_axis_only(x, axis):
        return build("log_softmax", (x,), name=name)
    with _composite("LogSoftmax", name, "Max"):
        shifted = ew.subtract(x, reduce_max(x, axis, keepdims=True))
        total = reduce_sum(ew.exp(shifted), axis, keepdims=True)
        return ew.subtract(shifted, ew.log(total))


def layer_norm(
    x: object,
    gamma: object = None,
    beta: object = None,
    axis: Axis = -1,
    epsilon: float = 1e-5,
    name: str | None = None,
) -> Tensor:
    """Layer normalization over `axis` (an int or a tuple of ints):
    (x - mean) * rsqrt(var + epsilon) * gamma + beta, with the mean and the (biased) variance
    over the axes, gamma and beta (None: 1 and 0) of those axes' sizes or broadcasting to x.
    Over the last axis alone, with gamma and beta of its size or None: one row op whose mean
    and variance are float64 (module docstring).

    >>> x = pg.constant(np.arange(6.0).reshape(2, 3))
    >>> pg.layer_norm(x, np.ones(3), np.zeros(3)).op.name
    'LayerNorm'
    """
    x = as_tensor(x)
    row_op = _layer_norm_row_op(x, gamma, beta, axis, epsilon, name)
    if row_op is not None:
        return row_op
    with _composite("LayerNorm", name, "Mean"):
        axes = _axes("layer_norm", x, axis)
        gamma = _along("layer_norm", gamma, x, axes, "gamma")
        beta = _along("layer_norm", beta, x, axes, "beta")
        centered = ew.subtract(x, reduce_mean(x, axes, keepdims=True))
        variance = reduce_mean(ew.square(centered), axes, keepdims=True)
        out = ew.multiply(centered, ew.rsqrt(ew.add(variance, _number(epsilon, x))))
        if gamma is not None:
            out = ew.multiply(out, gamma)
        return out if beta is None else ew.add(out, beta)


def _layer_norm_row_op(
    x: Tensor, gamma: object, beta: object, axis: Axis, epsilon: object, name: str | None
) -> Tensor | None:
    """layer_norm as the row op where it applies (the last axis alone, gamma and beta None or
    of its size, a valid epsilon: `layer_norm`'s docstring); else None, and nothing built."""
    if not _last_axis_only(x, axis):
        return None
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (int, float, np.number)):
        return None
    parameters = [_row_parameter(value, x) for value in (gamma, beta)]
    if any(p is _UNFIT for p in parameters):
        return None
    given = tuple(as_tensor(p) for p in parameters if p is not None)
    attrs = {"epsilon": float(epsilon), "gamma": gamma is not None, "beta": beta is not None}
    return build("layer_norm", (x, *given), attrs, name)


_UNFIT = object()


def _row_parameter(value: object, x: Tensor) -> object:
    """gamma or beta for the row op: None; a tensor of x's dtype and the last axis's size; an
    array (or list) of that size, as x's dtype (as the composite casts it); else `_UNFIT`."""
    if value is None:
        return None
    size = (x.shape[-1],)
    if isinstance(value, Tensor):
        return value if value.shape == size and value.dtype == x.dtype else _UNFIT
    try:
        array = np.asarray(value, dtype=x.dtype)
    except (TypeError, ValueError, OverflowError):
        return _UNFIT
    return array if array.shape == size else _UNFIT


def batch_norm(
    x: object,
    mean: object,
    variance: object,
    offset: object = None,
    scale: object = None,
    epsilon: float = 1e-5,
    axis: Axis = -1,
    name: str | None = None,
) -> Tensor:
    """Batch normalization at inference, as tf.nn.batch_normalization:
    (x - mean) * rsqrt(variance + epsilon) * scale + offset, with mean, variance, offset and
    scale (None: 1 and 0) vectors along the channel `axis` (or shapes broadcasting to x).

    Where the statistics and scale are known when the graph is built (arrays, constants: a
    trained model's, an ONNX file's initializers), they are folded then, in float64, into one
    factor and one shift: x * a + b, two ops on x instead of six (as inference runtimes fold a
    BatchNormalization).

    >>> x = pg.constant(np.ones((4, 3)))
    >>> pg.batch_norm(x, np.zeros(3), np.ones(3), epsilon=0.0).op.name
    'BatchNorm/Add'
    """
    x = as_tensor(x)
    with _composite("BatchNorm", name, "Sub"):
        axes = _axes("batch_norm", x, axis)
        roles = ("mean", "variance", "offset", "scale")
        given = (mean, variance, offset, scale)
        if mean is None or variance is None:
            raise _refuse("batch_norm", x, "mean and variance are needed")
        known = [_known(v) for v in given]
        if all(k is not _UNKNOWN for k in known):
            known = [  # each laid out against x as `_along` would (or refused, by its role)
                None if k is None else k.reshape(_laid_out("batch_norm", k.shape, x, axes, r))
                for k, r in zip(known, roles)
            ]
            folded_mean, folded_variance, folded_offset, folded_scale = known
            factor = 1.0 / np.sqrt(folded_variance + epsilon)
            if folded_scale is not None:
                factor = factor * folded_scale
            shift = -folded_mean * factor
            if folded_offset is not None:
                shift = shift + folded_offset
            a = _along("batch_norm", factor.astype(x.dtype), x, axes, "scale")
            b = _along("batch_norm", shift.astype(x.dtype), x, axes, "offset")
            return ew.add(ew.multiply(x, a), b)
        mean, variance, offset, scale = (
            _along("batch_norm", v, x, axes, role) for role, v in zip(roles, given)
        )
        inverse = ew.rsqrt(ew.add(variance, _number(epsilon, x)))
        out = ew.multiply(ew.subtract(x, mean), inverse)
        if scale is not None:
            out = ew.multiply(out, scale)
        return out if offset is None else ew.add(out, offset)


_UNKNOWN = object()


def _known(value: object) -> object:
    """A parameter's value in float64 when it is known when built (None stays None), else
    `_UNKNOWN` (a computed tensor)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value.op.type != "constant":
            return _UNKNOWN
        value = value.op.attrs["value"]
    return np.asarray(value, dtype=np.float64)
