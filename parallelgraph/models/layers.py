"""The layers the architectures are made of: dense, conv, batch norm and an MLP, each a few
primitives in a named scope with its own variables (Glorot-initialized from a hash of its full
name, so two sessions, or two builds, start from the same values)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np

from ..graph import Tensor, scope
from ..ops import (
    add,
    batch_norm,
    constant,
    conv2d,
    gelu,
    matmul,
    relu,
    sigmoid,
    tanh,
    variable,
)

#: Activations by name (None: linear).
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": relu,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "gelu": gelu,
}


def _activate(x: Tensor, activation: str | None) -> Tensor:
    if activation is None:
        return x
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; use one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[activation](x)


def dense(x: Tensor, units: int, activation: str | None = None, name: str = "dense") -> Tensor:
    """activation(x @ w + b) over the last axis of x (any leading axes: one 2-D product)."""
    with scope(name):
        w = variable((x.shape[-1], units), name="w", dtype=x.dtype)
        b = variable((units,), name="b", dtype=x.dtype, init="zeros")
        return _activate(add(matmul(x, w), b), activation)


def mlp(x: Tensor, widths: Sequence[int], activation: str = "relu", name: str = "mlp") -> Tensor:
    """Dense layers of `widths`, `activation` between them, the last one linear."""
    with scope(name):
        for index, units in enumerate(widths):
            last = index == len(widths) - 1
            x = dense(x, units, None if last else activation, name=f"dense{index}")
        return x


def conv(
    x: Tensor,
    channels: int,
    size: int,
    strides: int = 1,
    activation: str | None = "relu",
    normalize: bool = False,
    name: str = "conv",
) -> Tensor:
    """A `size` x `size` SAME convolution of an NHWC `x` to `channels` (Glorot-initialized
    over its receptive field), batch-normalized (inference) when `normalize`, then
    `activation`."""
    with scope(name):
        filters = variable((size, size, x.shape[-1], channels), name="filters", dtype=x.dtype)
        y = conv2d(x, filters, strides=strides, padding="SAME")
        if normalize:
            y = norm(y, name="bn")
        return _activate(y, activation)


def norm(x: Tensor, name: str = "bn") -> Tensor:
    """Inference batch norm over the last axis with its own statistics and scale: constants, as
    a trained model's are at inference (seeded from the layer's full name, so a build is the
    same every time), which `pg.batch_norm` folds into one factor and one shift (two ops)."""
    with scope(name) as full_name:
        rng = np.random.default_rng(zlib.crc32(full_name.encode()))
        channels = x.shape[-1]
        statistics = {
            "mean": rng.normal(0.0, 0.1, channels),
            "variance": rng.uniform(0.5, 1.5, channels),
            "offset": rng.normal(0.0, 0.1, channels),
            "scale": rng.normal(1.0, 0.1, channels),
        }
        values = {k: constant(v.astype(x.dtype), name=k) for k, v in statistics.items()}
        return batch_norm(x, **values)
