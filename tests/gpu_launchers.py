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


def add(a: DeviceArray, b: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.add_launches(a, b, out), stream)


def multiply(a: DeviceArray, b: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.multiply_launches(a, b, out), stream)


def relu(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.relu_launches(x, out), stream)


def tanh(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.tanh_launches(x, out), stream)


def exp(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.exp_launches(x, out), stream)


def sigmoid(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.sigmoid_launches(x, out), stream)


def accumulate(out: DeviceArray, x: DeviceArray, stream: Stream) -> None:
    gpu.run_launches(gpu.accumulate_launches(out, x), stream)


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
