"""`pg.models`: the parallel architectures people ask about, as builders and as presets.

    >>> g = pg.Graph()
    >>> with g.as_default():
    ...     x = pg.random_normal((2, 16, 64), seed=1)
    ...     y = pg.models.attention(x, heads=4)        # heads in scopes attention/head0..3
    >>> preset = pg.models.preset("inception", "small")  # a self-contained graph to run

Builders (`architectures`): `attention`, `inception_block`, `resnet_block`, `wide_and_deep`,
`two_tower`, `mixture_of_experts`, `ensemble`, on the layers of `layers` (`dense`, `mlp`,
`conv`, `norm`). Presets (`presets.ARCHITECTURES`): the same at named sizes, for the CLI
(`parallelgraph run --preset attention`), the dashboard (`pg.dashboard(preset="attention")`)
and the benchmarks.
"""

from __future__ import annotations

from ..experiments.preset_record import Preset
from .architectures import (
    attention,
    ensemble,
    inception_block,
    mixture_of_experts,
    resnet_block,
    two_tower,
    wide_and_deep,
)
from .layers import conv, dense, mlp, norm
from .presets import ARCHITECTURES, SIZES, Architecture, branch_scopes


def preset(
    name: str, size: str = "medium", dtype: str = "float32", device: str | None = None
) -> Preset:
    """The architecture `name` (`ARCHITECTURES`) at a named size (`SIZES`), ready to run."""
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {name!r}; choose from {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[name].preset(size, dtype, device)


__all__ = [
    "ARCHITECTURES",
    "SIZES",
    "Architecture",
    "attention",
    "branch_scopes",
    "conv",
    "dense",
    "ensemble",
    "inception_block",
    "mixture_of_experts",
    "mlp",
    "norm",
    "preset",
    "resnet_block",
    "two_tower",
    "wide_and_deep",
]
