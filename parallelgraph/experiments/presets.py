"""Ready-made graphs for the demo, the CLI, benchmarks and notebooks.

- `two-networks`: the seed graph. Two independent networks (scopes net1, net2), each
  `matmul(matmul(x, w1) + b1, w2)` on its own random input, summed at the end. Inter-op threads
  let them overlap.
- `wide`: many small independent branches summed by add_n: inter-op parallelism or nothing.
- `chain`: a stack of dependent layers: no two ops can overlap; only intra-op threads help.
- `random`: a seeded random DAG of matmuls, elementwise ops and sums.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Tensor, device, scope
from ..models.presets import ARCHITECTURES
from ..ops import add, add_n, matmul, random_normal, reduce_sum, relu, tanh, variable
from .preset_record import Preset

#: (batch, input, hidden, output) of the two-network graph, as in the issue tracker.
TWO_NETWORK_SIZES = {
    "tiny": (8, 16, 16, 8),
    # Long, thin matmuls: each first matmul is 128 blocks of 16x16 threads (a 132-SM H200 holds
    # about 1000) that each walk k = 16384, so two of them fit side by side and each runs long
    # enough that launching kernels from Python is not what limits it (the timings: "GPU
    # streams" in benchmarks/RESULTS.md).
    "narrow": (32, 16384, 1024, 32),
    "small": (64, 256, 256, 64),
    "medium": (512, 1024, 1024, 512),
    "large": (2048, 2048, 2048, 1024),
}
#: (batch, width) of the other presets.
WIDTH_SIZES = {"tiny": (8, 16), "small": (64, 128), "medium": (256, 512), "large": (1024, 1024)}
#: The graphs of this module, then the architectures of `pg.models` (attention, ...).
GRAPH_PRESETS = ("two-networks", "wide", "chain", "random")
PRESETS = GRAPH_PRESETS + tuple(ARCHITECTURES)


def network(batch: int, n_in: int, n_hidden: int, n_out: int, dtype: str, seed: int) -> Tensor:
    """The seed's network in the current scope: matmul(matmul(x, w1) + b1, w2)."""
    x = random_normal((batch, n_in), seed=seed, dtype=dtype)
    w1 = variable((n_in, n_hidden), name="w1", dtype=dtype)
    b1 = variable((n_hidden,), name="b1", dtype=dtype)
    w2 = variable((n_hidden, n_out), name="w2", dtype=dtype)
    return matmul(matmul(x, w1) + b1, w2)


def two_networks(
    size: str | tuple[int, ...] = "medium", dtype: str = "float32", device_name: str | None = None
) -> Preset:
    """The seed experiment's graph; `device_name="gpu:0"` places it like the original."""
    batch, n_in, n_hidden, n_out = _size(TWO_NETWORK_SIZES, size)
    graph = Graph(f"two-networks-{size_label(size)}")
    with graph.as_default(), device(device_name):
        with scope("net1"):
            result1 = network(batch, n_in, n_hidden, n_out, dtype, seed=1)
        with scope("net2"):
            result2 = network(batch, n_in, n_hidden, n_out, dtype, seed=2)
        out = add(result1, result2, name="out")
    description = (
        f"two independent networks, (batch, in, hidden, out) = {(batch, n_in, n_hidden, n_out)}"
    )
    return Preset("two-networks", size, graph, out, description, ("net1", "net2"))


def wide(
    size: str | tuple[int, ...] = "medium",
    dtype: str = "float32",
    branches: int = 8,
    device_name: str | None = None,
) -> Preset:
    """`branches` independent tanh(x @ w) branches, summed: only inter-op threads help."""
    batch, width = _size(WIDTH_SIZES, size)
    graph = Graph(f"wide-{size_label(size)}")
    with graph.as_default(), device(device_name):
        outputs = []
        for index in range(branches):
            with scope(f"branch{index}"):
                x = random_normal((batch, width), seed=index, dtype=dtype)
                outputs.append(tanh(matmul(x, variable((width, width), name="w", dtype=dtype))))
        out = add_n(outputs, name="out")
    scopes = tuple(f"branch{i}" for i in range(branches))
    return Preset("wide", size, graph, out, f"{branches} branches of [{batch}x{width}]", scopes)


def chain(
    size: str | tuple[int, ...] = "medium",
    dtype: str = "float32",
    layers: int = 8,
    device_name: str | None = None,
) -> Preset:
    """`layers` dependent relu(x @ w) layers: only intra-op threads help."""
    batch, width = _size(WIDTH_SIZES, size)
    graph = Graph(f"chain-{size_label(size)}")
    with graph.as_default(), device(device_name):
        x = random_normal((batch, width), seed=0, dtype=dtype)
        for index in range(layers):
            with scope(f"layer{index}"):
                x = relu(matmul(x, variable((width, width), name="w", dtype=dtype)))
        out = reduce_sum(x, axis=0, name="out")
    return Preset("chain", size, graph, out, f"{layers} dependent layers of [{batch}x{width}]")


def random_dag(
    size: str | tuple[int, ...] = "medium",
    dtype: str = "float32",
    ops: int = 30,
    seed: int = 0,
    device_name: str | None = None,
) -> Preset:
    """A seeded random DAG: each new op takes one or two earlier tensors of the same shape."""
    batch, width = _size(WIDTH_SIZES, size)
    rng = np.random.default_rng(seed)
    graph = Graph(f"random-{size_label(size)}-{seed}")
    with graph.as_default(), device(device_name):
        tensors = [random_normal((batch, width), seed=i, dtype=dtype) for i in range(3)]
        for index in range(ops):
            with scope(f"op{index}"):
                a = tensors[rng.integers(len(tensors))]
                kind = rng.choice(["matmul", "add", "tanh", "relu"])
                if kind == "matmul":
                    tensors.append(matmul(a, variable((width, width), name="w", dtype=dtype)))
                elif kind == "add":
                    tensors.append(a + tensors[rng.integers(len(tensors))])
                else:
                    tensors.append(tanh(a) if kind == "tanh" else relu(a))
        out = add_n(tensors[-4:], name="out")
    return Preset("random", size, graph, out, f"random DAG of {ops} ops on [{batch}x{width}]")


def build_preset(
    name: str,
    size: str | tuple[int, ...] = "medium",
    dtype: str = "float32",
    device_name: str | None = None,
) -> Preset:
    """Build a preset by its CLI name: two-networks, wide, chain, random, or an architecture of
    `pg.models` (at a named size)."""
    if name in ARCHITECTURES:
        if not isinstance(size, str):
            raise ValueError(f"{name} takes a named size (tiny, small, medium, large), not {size}")
        return ARCHITECTURES[name].preset(size, dtype, device_name)
    builders = {"two-networks": two_networks, "wide": wide, "chain": chain, "random": random_dag}
    if name not in builders:
        raise ValueError(f"unknown preset {name!r}; choose from {PRESETS}")
    return builders[name](size=size, dtype=dtype, device_name=device_name)


def _size(table: dict[str, tuple[int, ...]], size: str | tuple[int, ...]) -> tuple[int, ...]:
    """A named size from `table`, or explicit dimensions (a tuple as long as the table's)."""
    if isinstance(size, tuple):
        width = len(next(iter(table.values())))
        if len(size) != width or not all(isinstance(d, int) and d > 0 for d in size):
            raise ValueError(
                f"size {size!r}: give {width} positive ints or a name from {tuple(table)}"
            )
        return size
    if size not in table:
        raise ValueError(f"unknown size {size!r}; choose from {tuple(table)}")
    return table[size]


def size_label(size: str | tuple[int, ...]) -> str:
    """ "medium", or "128x512" for explicit dimensions."""
    return size if isinstance(size, str) else "x".join(map(str, size))
