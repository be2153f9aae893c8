"""The architectures as presets: self-contained graphs (random inputs, initialized variables) at
named sizes, for the CLI (`parallelgraph run --preset attention --size medium`), the dashboard
(`pg.dashboard(preset="attention")`, with sliders for the branches, the width and the batch),
sweeps and the benchmarks.

Each `Architecture` is one record: its build function (keyword parameters, all with defaults:
the dashboard makes a control of each), its named sizes, the slider ranges, and which
parameter counts its branches. The build function places ops on the device of the surrounding
`pg.device(...)` block, as every build function does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..experiments.preset_record import Preset
from ..graph import Graph, _context, device
from ..ops import constant, random_normal
from ..scopes import branch_level
from .architectures import (
    attention,
    ensemble,
    inception_block,
    mixture_of_experts,
    resnet_block,
    two_tower,
    wide_and_deep,
)

SIZES = ("tiny", "small", "medium", "large")


@dataclass(frozen=True)
class Architecture:
    """A preset architecture (module docstring)."""

    name: str
    build: Callable[..., Preset]
    #: Named sizes: keyword arguments of `build`.
    sizes: dict[str, dict[str, int]]
    #: The dashboard's controls: parameter -> (low, high) for an int slider, or a list.
    controls: dict[str, Any] = field(default_factory=dict)
    #: The parameter that sets how many independent branches there are.
    branches: str = ""

    def preset(
        self, size: str = "medium", dtype: str = "float32", device_name: str | None = None
    ) -> Preset:
        """The graph at a named size (`SIZES`), on `device_name` (None: the default)."""
        if size not in self.sizes:
            raise ValueError(f"unknown size {size!r} for {self.name}; choose from {SIZES}")
        with device(device_name):
            built = self.build(**self.sizes[size], dtype=dtype)
        return dataclasses.replace(built, size=size)


def _device_now() -> str | None:
    devices = _context().devices
    return devices[-1] if devices else None


def branch_scopes(graph: Graph) -> tuple[str, ...]:
    """The graph's branch scopes (`scopes.branch_level`): the heads, experts or towers."""
    return tuple(branch_level(op.scope for op in graph.ops))


def _preset(name: str, graph: Graph, out: Any, description: str) -> Preset:
    return Preset(name, "custom", graph, out, description, branch_scopes(graph))


def attention_graph(
    batch: int = 8, time: int = 128, width: int = 512, heads: int = 8, dtype: str = "float32"
) -> Preset:
    """Multi-head self-attention on a random (batch, time, width) input."""
    graph = Graph(f"attention-{batch}x{time}x{width}-{heads}-heads")
    with graph.as_default(), device(_device_now()):
        x = random_normal((batch, time, width), seed=1, dtype=dtype, name="x")
        out = attention(x, heads=heads)
    text = f"{heads}-head self-attention, (batch, time, width) = {(batch, time, width)}"
    return _preset("attention", graph, out, text)


def inception_graph(
    batch: int = 8,
    side: int = 28,
    channels: int = 192,
    width: int = 64,
    branches: int = 4,
    dtype: str = "float32",
) -> Preset:
    """An Inception block on a random NHWC image batch."""
    graph = Graph(f"inception-{batch}x{side}x{side}x{channels}-{branches}x{width}")
    with graph.as_default(), device(_device_now()):
        x = random_normal((batch, side, side, channels), seed=1, dtype=dtype, name="x")
        out = inception_block(x, branches=branches, width=width)
    text = f"Inception block: {branches} branches of {width} channels on"
    return _preset("inception", graph, out, f"{text} {batch}x{side}x{side}x{channels}")


def resnet_graph(
    batch: int = 8,
    side: int = 56,
    channels: int = 64,
    out_channels: int = 128,
    dtype: str = "float32",
) -> Preset:
    """A ResNet basic block; its shortcut is a projection where the channels change."""
    graph = Graph(f"resnet-{batch}x{side}x{side}x{channels}-{out_channels}")
    with graph.as_default(), device(_device_now()):
        x = random_normal((batch, side, side, channels), seed=1, dtype=dtype, name="x")
        out = resnet_block(x, channels=out_channels)
    text = f"ResNet block {channels}->{out_channels} channels on {batch}x{side}x{side}"
    return _preset("resnet", graph, out, text)


def wide_and_deep_graph(
    batch: int = 512,
    features: int = 1000,
    fields: int = 26,
    vocabulary: int = 10000,
    hidden: int = 512,
    dtype: str = "float32",
) -> Preset:
    """Wide & Deep on random wide features and random categorical ids."""
    graph = Graph(f"wide_and_deep-{batch}-{features}-{fields}-{hidden}")
    with graph.as_default(), device(_device_now()):
        wide = random_normal((batch, features), seed=1, dtype=dtype, name="wide_features")
        rng = np.random.default_rng(2)
        ids = constant(rng.integers(0, vocabulary, (batch, fields)), name="ids")
        out = wide_and_deep(wide, ids, vocabulary, hidden=(hidden, hidden // 2))
    text = f"Wide & Deep: {features} wide features, {fields} embedded fields, batch {batch}"
    return _preset("wide_and_deep", graph, out, text)


def two_tower_graph(
    batch: int = 512, features: int = 256, hidden: int = 512, dtype: str = "float32"
) -> Preset:
    """A two-tower model on random user and item features."""
    graph = Graph(f"two_tower-{batch}-{features}-{hidden}")
    with graph.as_default(), device(_device_now()):
        user = random_normal((batch, features), seed=1, dtype=dtype, name="user")
        item = random_normal((batch, features), seed=2, dtype=dtype, name="item")
        out = two_tower(user, item, hidden=(hidden, hidden // 2))
    text = f"two towers of ({hidden}, {hidden // 2}) on {features} features, batch {batch}"
    return _preset("two_tower", graph, out, text)


def moe_graph(
    batch: int = 512,
    width: int = 512,
    experts: int = 8,
    hidden: int = 1024,
    top: int = 0,
    dtype: str = "float32",
) -> Preset:
    """A dense mixture of experts (top > 0: each row keeps its `top` largest gates)."""
    graph = Graph(f"moe-{batch}-{width}-{experts}x{hidden}-top{top}")
    with graph.as_default(), device(_device_now()):
        x = random_normal((batch, width), seed=1, dtype=dtype, name="x")
        out = mixture_of_experts(x, experts=experts, hidden=hidden, top=top or None)
    text = f"{experts} experts {width}->{hidden}->{width}, batch {batch}"
    return _preset("mixture_of_experts", graph, out, text + (f", top-{top}" if top else ""))


def ensemble_graph(
    batch: int = 512, width: int = 512, members: int = 4, hidden: int = 512, dtype: str = "float32"
) -> Preset:
    """An ensemble of MLPs on one random input, averaged."""
    graph = Graph(f"ensemble-{batch}-{width}-{members}x{hidden}")
    with graph.as_default(), device(_device_now()):
        x = random_normal((batch, width), seed=1, dtype=dtype, name="x")
        out = ensemble(x, members=members, hidden=(hidden, hidden))
    text = f"{members} MLPs {width}->{hidden}->{hidden}->10, batch {batch}"
    return _preset("ensemble", graph, out, text)


def _sizes(**by_size: dict[str, int]) -> dict[str, dict[str, int]]:
    return dict(by_size)


ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in (
        Architecture(
            "attention",
            attention_graph,
            _sizes(
                tiny=dict(batch=2, time=8, width=16, heads=2),
                small=dict(batch=4, time=64, width=128, heads=4),
                medium=dict(batch=8, time=128, width=512, heads=8),
                large=dict(batch=16, time=256, width=1024, heads=16),
            ),
            dict(batch=(1, 64), time=(8, 512), width=(16, 2048), heads=(1, 16)),
            "heads",
        ),
        Architecture(
            "inception",
            inception_graph,
            _sizes(
                tiny=dict(batch=1, side=6, channels=4, width=2, branches=4),
                small=dict(batch=4, side=14, channels=64, width=32, branches=4),
                medium=dict(batch=8, side=28, channels=192, width=64, branches=4),
                large=dict(batch=16, side=28, channels=256, width=128, branches=4),
            ),
            dict(batch=(1, 32), side=(7, 56), channels=(8, 512), width=(4, 256), branches=(1, 8)),
            "branches",
        ),
        Architecture(
            "resnet",
            resnet_graph,
            _sizes(
                tiny=dict(batch=1, side=6, channels=2, out_channels=4),
                small=dict(batch=4, side=28, channels=32, out_channels=64),
                medium=dict(batch=8, side=56, channels=64, out_channels=128),
                large=dict(batch=16, side=56, channels=128, out_channels=256),
            ),
            dict(batch=(1, 32), side=(7, 112), channels=(8, 512), out_channels=(8, 512)),
        ),
        Architecture(
            "wide_and_deep",
            wide_and_deep_graph,
            _sizes(
                tiny=dict(batch=4, features=8, fields=3, vocabulary=20, hidden=8),
                small=dict(batch=128, features=256, fields=13, vocabulary=1000, hidden=256),
                medium=dict(batch=512, features=1000, fields=26, vocabulary=10000, hidden=512),
                large=dict(batch=2048, features=4000, fields=26, vocabulary=100000, hidden=1024),
            ),
            dict(batch=(1, 4096), features=(8, 8192), fields=(1, 64), hidden=(8, 2048)),
        ),
        Architecture(
            "two_tower",
            two_tower_graph,
            _sizes(
                tiny=dict(batch=4, features=8, hidden=8),
                small=dict(batch=128, features=128, hidden=256),
                medium=dict(batch=512, features=256, hidden=512),
                large=dict(batch=2048, features=512, hidden=1024),
            ),
            dict(batch=(1, 4096), features=(8, 2048), hidden=(8, 2048)),
        ),
        Architecture(
            "mixture_of_experts",
            moe_graph,
            _sizes(
                tiny=dict(batch=4, width=8, experts=3, hidden=8, top=2),
                small=dict(batch=128, width=256, experts=4, hidden=512, top=0),
                medium=dict(batch=512, width=512, experts=8, hidden=1024, top=0),
                large=dict(batch=2048, width=1024, experts=8, hidden=2048, top=0),
            ),
            dict(batch=(1, 4096), width=(8, 2048), experts=(1, 16), hidden=(8, 4096), top=(0, 8)),
            "experts",
        ),
        Architecture(
            "ensemble",
            ensemble_graph,
            _sizes(
                tiny=dict(batch=4, width=8, members=3, hidden=8),
                small=dict(batch=128, width=256, members=4, hidden=256),
                medium=dict(batch=512, width=512, members=4, hidden=512),
                large=dict(batch=2048, width=1024, members=8, hidden=1024),
            ),
            dict(batch=(1, 4096), width=(8, 2048), members=(1, 16), hidden=(8, 2048)),
            "members",
        ),
    )
}
