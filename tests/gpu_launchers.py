"""One-shot GPU launchers for the tests: build an op's launches and enqueue them on `stream`.

The package has only the ``*_launches`` form (`parallelgraph.kernels.gpu`): the cuda executor
builds a step's launches once and replays them, so a build-and-enqueue call in one would be used
by tests alone. Each helper here is that one line; the semantics, checks and errors are those of
the ``*_launches`` function it wraps (see its docstring). Importing this module imports
``numba.cuda``, like the kernels.
"""

from __future__ import annotations

from parallelgraph.kernels import gpu
from parallelgraph.kernels.gpu.launch import DeviceArray, Stream


def matmul(
    a: DeviceArray,
    b: DeviceArray,
    out: DeviceArray,
    stream: Stream,
    scratch: DeviceArray | None = None,
) -> None:
    gpu.run_launches(gpu.matmul_launches(a, b, out, scratch), stream)


def elementwise(name: str, inputs: list[DeviceArray], out: DeviceArray, stream: Stream) -> None:
    """The table's op `name` (`ops.elementwise`) on device arrays that broadcast to `out`."""
    gpu.run_launches(gpu.elementwise_launches(name, inputs, out), stream)


def reduce_sum(
    x: DeviceArray,
    out: DeviceArray,
    stream: Stream,
    mean: bool = False,
    scratch: DeviceArray | None = None,
) -> None:
    gpu.run_launches(gpu.reduce_sum_launches(x, out, mean, scratch), stream)


def random_normal(out: DeviceArray, seed: int, mean: float, stddev: float, stream: Stream) -> None:
    gpu.run_launches(gpu.random_normal_launches(out, seed, mean, stddev), stream)
