"""numba.cuda kernels for every op, with host-side launchers that only enqueue work.

Imported only when a GPU path is used (it imports `numba.cuda`; under
``NUMBA_ENABLE_CUDASIM=1`` the same code runs in Numba's CUDA simulator).

Launcher contract
-----------------
Every op comes in two forms. ``matmul_launches(a, b, out)`` (and ``add_launches``, ...) takes
**device arrays** (numba ``DeviceNDArray``; a host NumPy array raises `TypeError`, since numba
would copy it in and back synchronously), checks shapes and dtypes once, and returns the list of
`Launch` objects that compute the op: each is one kernel with every argument fixed, enqueued by
``launch(stream)``. ``matmul(a, b, out, stream)`` is the one-shot form: build and enqueue.
Nothing here synchronizes the host, allocates device memory or copies between host and device:
the caller allocates every buffer once (and, for a large reduction, an optional float64 scratch
buffer of `reduce_scratch_size` elements). Empty outputs launch nothing (a grid of zero blocks
is an error in CUDA). Launch order on one stream is execution order, so ``add_n`` folds as
``add(x0, x1, out)`` then ``accumulate(out, x2)``, ... like the CPU.

Why `Launch` objects: the cuda executor allocates a plan's buffers once, so a step's kernels see
the same arrays on every run and their launches can be built once and replayed. Numba's own
launch path (``kernel[grid, block, stream](*args)``) types every argument and converts each
array to kernel parameters on every call: 58-275 us per launch of a three-array kernel on the
host of an H200 machine (6-9 us prepared), more than many of the kernels take. A `Launch` does
that work once: its first call goes through numba (which compiles and launches), a hook captures
the compiled kernel, and later calls hand the converted parameters straight to
``cuda.core.launch`` (`DIRECT_LAUNCH`; in the CUDA simulator, or if numba's internals ever change
shape, every call simply goes through numba).

Numerics
--------
The kernels follow the CPU ops in `parallelgraph.ops`: float32 and float64, arithmetic in the
array dtype (constants are cast to it on the host or with ``out.dtype.type`` in the kernel, so
float32 kernels do no float64 arithmetic: checked in their PTX, where only libdevice's sinf/cosf
keep a float64 path for huge arguments), except `reduce_sum`, which accumulates in float64 like
the CPU. Nothing uses atomics, so every result depends only on the shapes (and, for
`reduce_sum`, on whether scratch is passed): the same inputs give the same bits on every run.
Results are *not* bitwise equal to the CPU kernels: NVVM contracts ``a * b + c`` into fused
multiply-adds, CUDA's libm differs from the host's in the last ulp, and matmul sums k in plain
order (the CPU kernel sums 256-long k blocks). Tests compare with tolerances.

Kernels
-------
* `matmul` -- lives in `parallelgraph.kernels.gpu_matmul` (re-exported here): a
  register-tiled, double-buffered GEMM with split-K for thin shapes; its docstring explains
  each step.
* `add`, `multiply` -- one thread per output element of the 2-D ``out``; ``b`` is the same shape,
  a bias over the last axis, or a 1-element scalar (read as ``b[col * step]`` with step 1 or 0).
* `relu`, `tanh`, `accumulate` -- one thread per element of 1-D arrays.
* `reduce_sum` -- ``x`` seen as (outer, length, inner). With many outputs (or a short axis, or
  no scratch) one thread per output sums ``l`` in order in float64. With few outputs and a long
  axis, two passes through the scratch buffer: pass 1 gives each of ``chunks`` threads per
  output an interleaved slice (l = c, c + chunks, ...: adjacent threads read adjacent memory),
  pass 2 adds the ``chunks`` partials in order. ``chunks`` is a function of the shape only.
* `random_normal` -- one thread per group of four elements: Philox4x32-10 on the counter
  ``j // 4`` with the 64-bit seed as key, in uint64 arithmetic exactly as
  `parallelgraph.kernels.random` (no Python ints mixed in: they would promote to float64), then
  Box-Muller in the output's precision.

Block sizes are chosen for real GPUs (256 threads for 1-D kernels; matmul: see its module);
grids are sized from the shapes, one output per thread (no grid-stride loops). Kernels are compiled
with ``cache=True`` (ignored by the simulator).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, TypeAlias

import numpy as np

if not hasattr(np, "row_stack"):
    # numba-cuda 0.30.4 registers an overload for np.row_stack when it compiles its first
    # kernel; NumPy 2.5 removed that alias of vstack, and the compile then fails. Restore it.
    np.row_stack = np.vstack

from numba import cuda

from .random import PHILOX_M0, PHILOX_M1, PHILOX_MASK32, PHILOX_SHIFT, PHILOX_W0, PHILOX_W1

__all__ = [
    "DIRECT_LAUNCH",
    "ELEMENTWISE_THREADS",
    "DeviceCopy",
    "Launch",
    "accumulate",
    "accumulate_launches",
    "add",
    "add_launches",
    "launch_config",
    "matmul",
    "matmul_launches",
    "matmul_scratch_size",
    "multiply",
    "multiply_launches",
    "random_normal",
    "random_normal_launches",
    "reduce_chunks",
    "reduce_scratch_size",
    "reduce_sum",
    "reduce_sum_launches",
    "relu",
    "relu_launches",
    "run_launches",
    "tanh",
    "tanh_launches",
]

DeviceArray: TypeAlias = Any
"""A numba device array (`DeviceNDArray`, or the simulator's stand-in)."""
Stream: TypeAlias = Any
"""A numba stream (`cuda.stream()`), or anything numba accepts as a launch stream."""

ELEMENTWISE_THREADS = 256
"""Threads per block of every 1-D kernel."""
_MAX_GRID_Y = 65535

#: `reduce_sum` splits the reduced axis only while the outputs alone give fewer threads than
#: this, only into slices of at least REDUCE_MIN_SLICE elements, and into at most
#: REDUCE_MAX_CHUNKS slices (pass 2 adds that many partials per output, one thread each).
REDUCE_TARGET_THREADS = 32768
REDUCE_MIN_SLICE = 64
REDUCE_MAX_CHUNKS = 1024

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_MASK64 = 0xFFFFFFFFFFFFFFFF

# Philox4x32-10 constants, shared with the CPU kernel (uint64, so every operation stays uint64).
_ZERO64 = np.uint64(0)


# ---------------------------------------------------------------------------------------------
# Launches

DIRECT_LAUNCH = True
"""Replay prepared launches through ``cuda.core.launch`` (True) or always through numba."""


class Launch:
    """One kernel with its grid, block and arguments fixed; ``launch(stream)`` enqueues it.

    The first call goes through numba's dispatcher (compiling if needed). With `DIRECT_LAUNCH`
    on a real GPU, that call also captures the compiled kernel (numba's pre-launch hook) and
    converts the arguments to kernel parameters once; later calls pass them straight to
    ``cuda.core.launch``. The arguments (device arrays) are kept alive by this object.
    """

    __slots__ = ("_direct", "args", "block", "grid", "kernel")

    def __init__(self, kernel: Any, grid: Any, block: Any, args: tuple[Any, ...]):
        self.kernel, self.grid, self.block, self.args = kernel, grid, block, args
        # None: not prepared yet; False: numba launches it every time; else: the direct launcher
        self._direct: Any = None

    def __call__(self, stream: Stream) -> None:
        direct = self._direct
        if direct:
            direct(stream)
            return
        configured = self.kernel[self.grid, self.block, stream]
        captured: list[Any] = []
        hooks = getattr(configured, "pre_launch_callbacks", None)
        if DIRECT_LAUNCH and direct is None and hooks is not None:  # no hooks in the simulator
            hooks.append(lambda kernel, _config: captured.append(kernel))
        configured(*self.args)
        if captured:
            self._direct = _direct_launcher(captured[0], configured, self.args) or False

    def __repr__(self) -> str:
        name = getattr(self.kernel, "__name__", None) or getattr(self.kernel, "py_func", "?")
        return f"Launch({name}, grid={self.grid}, block={self.block})"


class DeviceCopy:
    """A device-to-device copy, enqueued like a `Launch` (add_n of a single term)."""

    __slots__ = ("source", "target")

    def __init__(self, source: DeviceArray, target: DeviceArray):
        self.source, self.target = source, target

    def __call__(self, stream: Stream) -> None:
        self.target.copy_to_device(self.source, stream=stream)


def run_launches(launches: list[Any], stream: Stream) -> None:
    """Enqueue `launches` on `stream`, in order."""
    for launch in launches:
        launch(stream)


_core_streams: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _direct_launcher(kernel: Any, configured: Any, args: tuple[Any, ...]) -> Any:
    """A function(stream) that launches the compiled `kernel` with `args` through cuda.core,
    or None when numba's internals are not the expected ones (then numba launches every time).
    """
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch
        from numba.cuda._compat import CUDA_CORE_GE_1_0
        from numba.cuda.cudadrv.driver import _to_core_stream

        if getattr(kernel, "debug", False) or getattr(kernel, "extensions", None):
            return None
        parameters: list[Any] = []
        for argument_type, value in zip(kernel.argument_types, args, strict=True):
            kernel._prepare_args(argument_type, value, 0, [], parameters)
        cooperative = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": False}
        config = LaunchConfig(
            grid=configured.griddim,
            block=configured.blockdim,
            shmem_size=configured.sharedmem,
            **cooperative,
        )
        function = kernel._codelibrary.get_cufunc().kernel
    except Exception:  # noqa: BLE001 - any surprise: keep numba's own launch path
        return None

    def launch(stream: Stream) -> None:
        core_stream = _core_streams.get(stream)
        if core_stream is None:
            core_stream = _core_streams[stream] = _to_core_stream(stream)
        core_launch(core_stream, config, function, *parameters)

    return launch


# ---------------------------------------------------------------------------------------------
# Host-side helpers


def launch_config(n: int, threads: int = ELEMENTWISE_THREADS) -> tuple[int, int]:
    """(blocks, threads per block) for a 1-D kernel with one thread per item of `n`."""
    return (n + threads - 1) // threads, threads


def _check_device(*arrays: DeviceArray) -> None:
    for array in arrays:
        if isinstance(array, np.ndarray):
            raise TypeError(
                "GPU launchers take device arrays (cuda.to_device / cuda.device_array), not "
                "host NumPy arrays: numba would copy them in and back synchronously"
            )


def _check_scratch(what: str, scratch: DeviceArray, needed: int) -> None:
    """`scratch` is a 1-D float64 device array of at least `needed` elements."""
    _check_device(scratch)
    if len(scratch.shape) != 1 or scratch.shape[0] < needed or scratch.dtype != np.float64:
        raise ValueError(
            f"{what} scratch must be 1-D float64 with >= {needed} elements, "
            f"got {scratch.shape} {scratch.dtype}"
        )


def _check_dtype(*arrays: DeviceArray) -> np.dtype:
    dtype = np.dtype(arrays[0].dtype)
    if dtype not in _FLOAT_DTYPES or any(np.dtype(a.dtype) != dtype for a in arrays[1:]):
        names = ", ".join(str(a.dtype) for a in arrays)
        raise ValueError(f"GPU kernels need one dtype, float32 or float64; got {names}")
    return dtype


def _check_shape(name: str, array: DeviceArray, shape: tuple[int, ...]) -> None:
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(array.shape)}, expected {tuple(shape)}")


def _check_1d(*arrays: DeviceArray) -> None:
    shape = tuple(arrays[0].shape)
    if len(shape) != 1 or any(tuple(a.shape) != shape for a in arrays[1:]):
        raise ValueError(
            f"expected 1-D arrays of one shape, got {[tuple(a.shape) for a in arrays]}"
        )


# ---------------------------------------------------------------------------------------------
# add, multiply


@cuda.jit(cache=True)
def _binary_same_kernel(a, b, out, multiply):
    j = cuda.grid(1)
    if j < out.size:
        row = j // out.shape[1]
        col = j - row * out.shape[1]
        if multiply:
            out[row, col] = a[row, col] * b[row, col]
        else:
            out[row, col] = a[row, col] + b[row, col]


@cuda.jit(cache=True)
def _binary_vector_kernel(a, b, out, multiply, b_step):
    """b is 1-D: a bias over the columns (b_step 1) or a single scalar (b_step 0)."""
    j = cuda.grid(1)
    if j < out.size:
        row = j // out.shape[1]
        col = j - row * out.shape[1]
        value = b[col * b_step]
        if multiply:
            out[row, col] = a[row, col] * value
        else:
            out[row, col] = a[row, col] + value


def _binary_launches(
    a: DeviceArray, b: DeviceArray, out: DeviceArray, multiply: bool
) -> list[Launch]:
    _check_device(a, b, out)
    _check_dtype(a, b, out)
    if len(a.shape) != 2:
        raise ValueError(f"add/multiply need a 2-D (rows, cols) operand a, got {a.shape}")
    _check_shape("out", out, a.shape)
    rows, cols = a.shape
    blocks, threads = launch_config(rows * cols)
    if tuple(b.shape) == tuple(a.shape):
        arguments: tuple[Any, ...] = (a, b, out, multiply)
        return [Launch(_binary_same_kernel, blocks, threads, arguments)] if blocks else []
    if len(b.shape) != 1 or b.shape[0] not in (1, cols):
        raise ValueError(f"b must be {a.shape}, ({cols},) or (1,), got {b.shape}")
    step = 1 if b.shape[0] == cols else 0
    arguments = (a, b, out, multiply, step)
    return [Launch(_binary_vector_kernel, blocks, threads, arguments)] if blocks else []


def add_launches(a: DeviceArray, b: DeviceArray, out: DeviceArray) -> list[Launch]:
    """The launches of `add`."""
    return _binary_launches(a, b, out, False)


def multiply_launches(a: DeviceArray, b: DeviceArray, out: DeviceArray) -> list[Launch]:
    """The launches of `multiply`."""
    return _binary_launches(a, b, out, True)


def add(a: DeviceArray, b: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    """out = a + b; a, out 2-D (rows, cols); b the same shape, a bias (cols,) or a scalar (1,)."""
    run_launches(add_launches(a, b, out), stream)


def multiply(a: DeviceArray, b: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    """out = a * b, broadcasting `b` like `add`."""
    run_launches(multiply_launches(a, b, out), stream)


# ---------------------------------------------------------------------------------------------
# relu, tanh, accumulate


@cuda.jit(cache=True)
def _relu_kernel(x, out):
    j = cuda.grid(1)
    if j < out.size:
        value = x[j]
        if value <= 0:  # NaN compares false and stays NaN, like np.maximum(x, 0)
            out[j] = 0
        else:
            out[j] = value


@cuda.jit(cache=True)
def _tanh_kernel(x, out):
    j = cuda.grid(1)
    if j < out.size:
        out[j] = math.tanh(x[j])


@cuda.jit(cache=True)
def _accumulate_kernel(out, x):
    j = cuda.grid(1)
    if j < out.size:
        out[j] += x[j]


def _unary_launches(kernel: Any, first: DeviceArray, second: DeviceArray) -> list[Launch]:
    _check_device(first, second)
    _check_dtype(first, second)
    _check_1d(first, second)
    blocks, threads = launch_config(first.shape[0])
    return [Launch(kernel, blocks, threads, (first, second))] if blocks else []


def relu_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """The launches of `relu`."""
    return _unary_launches(_relu_kernel, x, out)


def tanh_launches(x: DeviceArray, out: DeviceArray) -> list[Launch]:
    """The launches of `tanh`."""
    return _unary_launches(_tanh_kernel, x, out)


def accumulate_launches(out: DeviceArray, x: DeviceArray) -> list[Launch]:
    """The launches of `accumulate`."""
    return _unary_launches(_accumulate_kernel, out, x)


def relu(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    """out = max(x, 0) on 1-D arrays; NaN stays NaN."""
    run_launches(relu_launches(x, out), stream)


def tanh(x: DeviceArray, out: DeviceArray, stream: Stream) -> None:
    """out = tanh(x) on 1-D arrays."""
    run_launches(tanh_launches(x, out), stream)


def accumulate(out: DeviceArray, x: DeviceArray, stream: Stream) -> None:
    """out += x on 1-D arrays (add_n's fold step)."""
    run_launches(accumulate_launches(out, x), stream)


# ---------------------------------------------------------------------------------------------
# reduce_sum


@cuda.jit(device=True)
def _finish_sum(total, length, mean):
    """The float64 sum, or the mean (NaN for an empty axis, like the CPU op)."""
    if mean:
        if length == 0:
            return math.nan
        return total / length
    return total


@cuda.jit(cache=True)
def _reduce_direct_kernel(x, out, mean):
    """One thread per out[o, i]: sum of x[o, :, i] in order, in float64."""
    j = cuda.grid(1)
    inner = x.shape[2]
    if j < out.size:
        o = j // inner
        i = j - o * inner
        length = x.shape[1]
        total = 0.0
        for position in range(length):
            total += x[o, position, i]
        out[o, i] = _finish_sum(total, length, mean)


@cuda.jit(cache=True)
def _reduce_partials_kernel(x, partials, chunks):
    """Thread (o, c, i) sums x[o, c::chunks, i] in order into partials[(o*chunks + c)*inner + i]."""
    j = cuda.grid(1)
    inner = x.shape[2]
    if j < x.shape[0] * chunks * inner:
        rest = j // inner
        i = j - rest * inner
        o = rest // chunks
        c = rest - o * chunks
        total = 0.0
        for position in range(c, x.shape[1], chunks):
            total += x[o, position, i]
        partials[j] = total


@cuda.jit(cache=True)
def _reduce_combine_kernel(partials, out, chunks, length, mean):
    """One thread per out[o, i]: the `chunks` partials added in chunk order."""
    j = cuda.grid(1)
    inner = out.shape[1]
    if j < out.size:
        o = j // inner
        i = j - o * inner
        base = o * chunks * inner + i
        total = 0.0
        for c in range(chunks):
            total += partials[base + c * inner]
        out[o, i] = _finish_sum(total, length, mean)


def reduce_chunks(outer: int, length: int, inner: int) -> int:
    """How many interleaved slices `reduce_sum` splits the reduced axis into (with scratch).

    1 (a single pass, no scratch used) when the outputs alone give enough threads or the axis is
    short; otherwise enough slices to reach about REDUCE_TARGET_THREADS threads, each of at
    least REDUCE_MIN_SLICE elements, at most REDUCE_MAX_CHUNKS. A function of the shape only.
    """
    outputs = outer * inner
    if outputs == 0 or outputs >= REDUCE_TARGET_THREADS or length < 2 * REDUCE_MIN_SLICE:
        return 1
    wanted = -(-REDUCE_TARGET_THREADS // outputs)
    return max(1, min(wanted, length // REDUCE_MIN_SLICE, REDUCE_MAX_CHUNKS))


def reduce_scratch_size(outer: int, length: int, inner: int) -> int:
    """Float64 elements of scratch `reduce_sum` uses for this (outer, length, inner); 0: none."""
    chunks = reduce_chunks(outer, length, inner)
    return 0 if chunks == 1 else outer * chunks * inner


def reduce_sum(
    x: DeviceArray,
    out: DeviceArray,
    stream: Stream,
    mean: bool = False,
    scratch: DeviceArray | None = None,
) -> None:
    """out[o, i] = sum over l of x[o, l, i], accumulated in float64, then cast to out's dtype.

    x: 3-D (outer, length, inner); out: 2-D (outer, inner), the same dtype. `mean` divides by
    length (length 0: NaN; the sum of an empty axis is 0). `scratch`, optional: a 1-D float64
    device array of at least `reduce_scratch_size(outer, length, inner)` elements; with it, few
    outputs over a long axis are computed in two passes with many more threads. Deterministic:
    the result depends only on the shapes and on whether scratch is given.
    """
    run_launches(reduce_sum_launches(x, out, mean, scratch), stream)


def reduce_sum_launches(
    x: DeviceArray, out: DeviceArray, mean: bool = False, scratch: DeviceArray | None = None
) -> list[Launch]:
    """The launches of `reduce_sum`: one, or two with scratch (partials, then combine)."""
    _check_device(x, out)
    _check_dtype(x, out)
    if len(x.shape) != 3:
        raise ValueError(f"reduce_sum needs x as (outer, length, inner), got {x.shape}")
    outer, length, inner = x.shape
    _check_shape("reduce_sum out", out, (outer, inner))
    outputs = outer * inner
    if outputs == 0:
        return []
    chunks = reduce_chunks(outer, length, inner) if scratch is not None else 1
    if chunks == 1:
        blocks, threads = launch_config(outputs)
        return [Launch(_reduce_direct_kernel, blocks, threads, (x, out, mean))]
    needed = outer * chunks * inner
    _check_scratch("reduce_sum", scratch, needed)
    partials = Launch(_reduce_partials_kernel, *launch_config(needed), (x, scratch, chunks))
    arguments = (scratch, out, chunks, length, mean)
    combine = Launch(_reduce_combine_kernel, *launch_config(outputs), arguments)
    return [partials, combine]


# ---------------------------------------------------------------------------------------------
# random_normal


@cuda.jit(device=True)
def _philox4x32(counter, key):
    """Ten Philox rounds on the uint64 `counter` with the uint64 `key`: four words (as uint64).

    The same uint64 arithmetic as `parallelgraph.kernels.random.philox4x32`: 32 x 32-bit
    products in 64 bits, explicit masks, the Weyl key schedule.
    """
    c0 = counter & PHILOX_MASK32
    c1 = counter >> PHILOX_SHIFT
    c2 = _ZERO64
    c3 = _ZERO64
    k0 = key & PHILOX_MASK32
    k1 = key >> PHILOX_SHIFT
    for _ in range(10):
        product0 = PHILOX_M0 * c0
        product1 = PHILOX_M1 * c2
        hi0 = product0 >> PHILOX_SHIFT
        lo0 = product0 & PHILOX_MASK32
        hi1 = product1 >> PHILOX_SHIFT
        lo1 = product1 & PHILOX_MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + PHILOX_W0) & PHILOX_MASK32
        k1 = (k1 + PHILOX_W1) & PHILOX_MASK32
    return c0, c1, c2, c3


@cuda.jit(device=True)
def _box_muller(u1, u2, minus_two, two_pi):
    """Two standard normals from two uniforms in (0, 1), in the uniforms' precision."""
    radius = math.sqrt(minus_two * math.log(u1))
    angle = two_pi * u2
    return radius * math.cos(angle), radius * math.sin(angle)


@cuda.jit(cache=True)
def _normal_kernel(out, key, shift, scale, mean, stddev):
    """Thread g fills out[4g : 4g + 4] from Philox(counter g, key)."""
    group = cuda.grid(1)
    size = out.size
    base = group * 4
    if base >= size:
        return
    w0, w1, w2, w3 = _philox4x32(np.uint64(group), key)
    # Words -> the output dtype first (exact: they have at most 24 / 32 bits), then all the
    # arithmetic in that dtype, as the CPU kernel does.
    half = out.dtype.type(0.5)
    minus_two = out.dtype.type(-2.0)
    two_pi = out.dtype.type(2.0 * math.pi)
    u0 = (out.dtype.type(w0 >> shift) + half) * scale
    u1 = (out.dtype.type(w1 >> shift) + half) * scale
    u2 = (out.dtype.type(w2 >> shift) + half) * scale
    u3 = (out.dtype.type(w3 >> shift) + half) * scale
    z0, z1 = _box_muller(u0, u1, minus_two, two_pi)
    z2, z3 = _box_muller(u2, u3, minus_two, two_pi)
    out[base] = mean + stddev * z0
    if base + 1 < size:
        out[base + 1] = mean + stddev * z1
    if base + 2 < size:
        out[base + 2] = mean + stddev * z2
    if base + 3 < size:
        out[base + 3] = mean + stddev * z3


def random_normal(out: DeviceArray, seed: int, mean: float, stddev: float, stream: Stream) -> None:
    """Fill the 1-D `out` with mean + stddev * N(0, 1) from Philox4x32-10 keyed by `seed`.

    Element j is the number `parallelgraph.kernels.random.normal_rows` computes for flat index
    j (up to libm and FMA rounding): counter j // 4, 64-bit key `seed` (taken modulo 2**64),
    uniforms from the top 24 (float32) or 32 (float64) bits of each word.
    """
    run_launches(random_normal_launches(out, seed, mean, stddev), stream)


def random_normal_launches(out: DeviceArray, seed: int, mean: float, stddev: float) -> list[Launch]:
    """The launches of `random_normal`."""
    _check_device(out)
    dtype = _check_dtype(out)
    if len(out.shape) != 1:
        raise ValueError(f"random_normal needs a 1-D (flattened) out, got {out.shape}")
    count = out.shape[0]
    if count == 0:
        return []
    bits = 24 if dtype == np.float32 else 32
    cast = dtype.type
    arguments = (
        out,
        np.uint64(int(seed) & _MASK64),
        np.uint64(32 - bits),
        cast(2.0**-bits),
        cast(mean),
        cast(stddev),
    )
    return [Launch(_normal_kernel, *launch_config((count + 3) // 4), arguments)]


# ---------------------------------------------------------------------------------------------
# matmul: its own module, kernels.gpu_matmul, which imports the helpers above; these thin
# wrappers import it on first use, so either module can be imported first.


def matmul(
    a: DeviceArray,
    b: DeviceArray,
    out: DeviceArray,
    stream: Stream,
    scratch: DeviceArray | None = None,
) -> None:
    """out[m, n] = a[m, k] @ b[k, n]: `parallelgraph.kernels.gpu_matmul.matmul`."""
    from .gpu_matmul import matmul

    matmul(a, b, out, stream, scratch)


def matmul_launches(
    a: DeviceArray, b: DeviceArray, out: DeviceArray, scratch: DeviceArray | None = None
) -> list[Launch]:
    """The launches of `matmul`: `parallelgraph.kernels.gpu_matmul.matmul_launches`."""
    from .gpu_matmul import matmul_launches

    return matmul_launches(a, b, out, scratch)


def matmul_scratch_size(m: int, k: int, n: int, dtype: Any) -> int:
    """Float64 scratch elements for split-K: `kernels.gpu_matmul.matmul_scratch_size`."""
    from .gpu_matmul import matmul_scratch_size

    return matmul_scratch_size(m, k, n, dtype)


def __getattr__(name: str) -> Any:
    if name == "_matmul_kernel":  # the float32 kernel, which a float32 matmul launches first
        from .gpu_matmul import config_kernel

        return config_kernel(np.float32)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
