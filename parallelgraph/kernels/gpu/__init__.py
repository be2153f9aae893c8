"""numba.cuda kernels for every op, with host-side launchers that only enqueue work.

Imported only when a GPU path is used (it imports `numba.cuda`; under
``NUMBA_ENABLE_CUDASIM=1`` the same code runs in Numba's CUDA simulator). Modules: `launch`
(`Launch`, `DeviceCopy`, grids), `checks` (what every launcher checks on the host),
`generated` (the elementwise ops' kernels, rendered from the op table), `reduce`, `random`,
`gemm` (matmul) and `cublas`; this package re-exports their launchers.

Launcher contract
-----------------
Every op has one launcher: ``matmul_launches(a, b, out)`` (and ``elementwise_launches``, ...) takes
**device arrays** (numba ``DeviceNDArray``; a host NumPy array raises `TypeError`, since numba
would copy it in and back synchronously), checks shapes and dtypes once, and returns the list of
`Launch` objects that compute the op: each is one kernel with every argument fixed, enqueued by
``launch(stream)``; ``run_launches(launches, stream)`` enqueues a list in order. There is no
one-shot form in the package: the cuda executor builds a step's launches once and replays them
(the tests' one-shot helpers, ``tests/gpu_launchers.py``, are this one line each).
Nothing here synchronizes the host, allocates device memory or copies between host and device:
the caller allocates every buffer once (and, for a large reduction, an optional float64 scratch
buffer of `reduce_scratch_size` elements). Empty outputs launch nothing (a grid of zero blocks
is an error in CUDA). Launch order on one stream is execution order, so ``add_n`` folds as
``add`` of x0 and x1 into out, then ``add`` of out and x2 into out, ... like the CPU.

Why `Launch` objects: a step's launches are built once and replayed without numba's per-call
typing and conversion (`launch`, whose docstring has the numbers).

Numerics
--------
The kernels follow the CPU ops in `parallelgraph.ops`: float32 and float64, arithmetic in the
array dtype (constants are cast to it on the host or with ``out.dtype.type`` in the kernel, so
float32 kernels do no float64 arithmetic: checked in their PTX, where only libdevice's sinf/cosf
keep a float64 path for huge arguments), except ``reduce_sum``, which accumulates in float64 like
the CPU. Nothing uses atomics, so every result depends only on the shapes (and, for
``reduce_sum``, on whether scratch is passed): the same inputs give the same bits on every run.
Results are *not* bitwise equal to the CPU kernels: NVVM contracts ``a * b + c`` into fused
multiply-adds, CUDA's libm differs from the host's in the last ulp, and matmul sums k in plain
order (the CPU kernel sums 256-long k blocks). Tests compare with tolerances.

Kernels
-------
By op; each op's launcher is ``<op>_launches``.

* ``matmul`` -- `gemm`: a register-tiled, double-buffered GEMM with split-K for thin shapes; its
  docstring explains each step (`cublas`: cuBLAS through CuPy, `Config(matmul_kernel="blas")`).
* every elementwise op of the table (``elementwise_launches(name, inputs, out)``) -- one thread
  per output element, operands read through broadcast strides (`generated`); add_n folds with
  ``add`` in place.
* ``conv2d``, ``max_pool2d``/``avg_pool2d`` -- `conv`: one thread per output element, in the
  output's memory order (NHWC or NCHW); padded positions skipped.
* shape ops -- `shape`: one strided-copy kernel (transpose, slice, split, ``t[...]``), concat,
  gather and take-along (indices wrapped and clamped into range: the GPU cannot raise), top_k
  (one thread a row). reshape-like ops are a `DeviceCopy`.
* reductions over any axes -- ``reduce_axes_launches(kind, x, out, axes)`` (sum, mean, max,
  min): one thread per output, walking the reduced axes through their strides.
* ``reduce_sum`` -- ``x`` seen as (outer, length, inner). With many outputs (or a short axis, or
  no scratch) one thread per output sums ``l`` in order in float64. With few outputs and a long
  axis, two passes through the scratch buffer: pass 1 gives each of ``chunks`` threads per
  output an interleaved slice (l = c, c + chunks, ...: adjacent threads read adjacent memory),
  pass 2 adds the ``chunks`` partials in order. ``chunks`` is a function of the shape only.
* ``random_normal`` -- one thread per group of four elements: Philox4x32-10 on the counter
  ``j // 4`` with the 64-bit seed as key, in uint64 arithmetic exactly as
  `parallelgraph.kernels.random` (no Python ints mixed in: they would promote to float64), then
  Box-Muller in the output's precision.

Block sizes are chosen for real GPUs (256 threads for 1-D kernels; matmul: see its module);
grids are sized from the shapes, one output per thread (no grid-stride loops). Kernels are compiled
with ``cache=True`` (ignored by the simulator).
"""

from __future__ import annotations

from . import launch
from .conv import conv2d_launches, pool2d_launches
from .gemm import matmul_launches, matmul_scratch_size
from .generated import elementwise_launches
from .launch import (
    ELEMENTWISE_THREADS,
    DeviceCopy,
    Launch,
    launch_config,
    run_launches,
)
from .random import random_normal_launches
from .reduce import (
    REDUCE_MAX_CHUNKS,
    REDUCE_MIN_SLICE,
    REDUCE_TARGET_THREADS,
    reduce_axes_launches,
    reduce_chunks,
    reduce_scratch_size,
    reduce_sum_launches,
)
from .shape import (
    concat_launches,
    gather_launches,
    strided_copy_launches,
    take_along_last_launches,
    top_k_launches,
)

__all__ = [
    "ELEMENTWISE_THREADS",
    "REDUCE_MAX_CHUNKS",
    "REDUCE_MIN_SLICE",
    "REDUCE_TARGET_THREADS",
    "DeviceCopy",
    "Launch",
    "concat_launches",
    "conv2d_launches",
    "cublas",
    "elementwise_launches",
    "gather_launches",
    "gemm",
    "launch",
    "launch_config",
    "matmul_launches",
    "matmul_scratch_size",
    "pool2d_launches",
    "random_normal_launches",
    "reduce_axes_launches",
    "reduce_chunks",
    "reduce_scratch_size",
    "reduce_sum_launches",
    "run_launches",
    "strided_copy_launches",
    "take_along_last_launches",
    "top_k_launches",
]
