"""The GPU matmul: a register-tiled, double-buffered SGEMM/DGEMM in numba.cuda, with split-K.

``out[m, n] = a[m, k] @ b[k, n]`` for float32 and float64 device arrays of any shape (edges that
are not multiples of the tiles, and empty dimensions, included). `matmul_launches` returns the
`Launch` objects (see `parallelgraph.kernels.gpu`): one kernel, or two with split-K.

How the kernel works, step by step
----------------------------------
A matmul moves O(mk + kn) data for O(mkn) arithmetic; the whole game is to reuse every loaded
value many times from fast storage. Three levels:

1. **Block tile (shared memory).** Block (bx, by) computes the BM x BN tile of ``out`` at rows
   ``by*BM``, columns ``bx*BN``. It walks k in steps of BK: each step stages a BM x BK tile of
   ``a`` and a BK x BN tile of ``b`` in shared memory, so every value read from global memory
   is used BN (for ``a``) or BM (for ``b``) times. The ``a`` tile is stored *transposed*,
   ``a_tile[kk, row]``, so that for one kk the inner loop reads the TM values it needs from
   one row of the tile; that row is padded by `A_PAD` elements so the transposing stores (a
   warp writes 8 kk x 4 rows) fall in 32 different banks instead of queueing on one.

2. **Thread tile (registers).** Each of the (BM/TM) x (BN/TN) threads owns a TM x TN block of
   outputs in ``cuda.local.array`` accumulators. For each kk it reads TM values of ``a`` and TN
   values of ``b`` from shared memory into registers and does TM * TN fused multiply-adds: the
   ratio of FMAs to shared-memory loads is TM*TN / (TM + TN) (2.7 for 8 x 4, 4 for 8 x 8)
   instead of 1/2 for one output per thread, which is what lets the FMA units, not shared
   memory, set the speed. The TM and TN loops have compile-time trip counts (the tile sizes
   are closure constants), so NVVM unrolls them and keeps the local arrays in registers: the
   PTX has no ``ld.local``/``st.local`` (``ptxas -v``: 0 bytes of spill). Indices are unsigned
   (``uint64``), so Numba emits no negative-index wraparound code in the loop. The thread's rows
   and columns are *strided*: thread (tr, tc) owns rows ``tr + i*(BM/TM)`` and columns
   ``tc + j*(BN/TN)``. A warp is then 2 thread-rows x 16 thread-columns: its ``b`` reads are 16
   consecutive words (no bank conflicts), its ``a`` reads two words (broadcast), and its stores
   of ``out`` write runs of 16 consecutive elements (coalesced).

3. **Double buffering.** Shared memory holds two stages of both tiles. Step t stores the tile
   it loaded during step t - 1 (held in registers) into stage t % 2, waits at the one
   ``cuda.syncthreads()`` of the step, then issues the global loads of tile t + 1 into
   registers and computes on stage t % 2 while those loads are in flight: global-memory latency
   hides behind the step's BK*TM*TN FMAs. One barrier per step is enough: a thread writes stage
   t % 2 only after passing step t - 1's barrier, which every thread reaches only after it
   finished computing on that stage in step t - 2.

**Wide loads.** CUDA C would load ``float4``s; Numba has no vector loads (and NVVM does not
vectorize guarded loads). Each thread instead loads BM*BK/threads elements of ``a`` and
BK*BN/threads of ``b`` per step, as scalar loads laid out so that each warp-wide load
instruction reads whole contiguous segments: ``a`` as rows of BK consecutive elements (8
floats = one 32-byte sector each), ``b`` as rows of BN consecutive elements (64 floats = two
128-byte lines). The memory system merges a warp's 32 scalar loads into those segments, so the
DRAM/L2 traffic is what float4 loads would give; the cost is 4x more load instructions, small
next to the FMAs (e.g. 6 loads per 256 FMAs per thread and step for float32).

**Edges.** Tiles are loaded with guards: an element outside ``a``, ``b`` or the block's k
range is stored as zero, so partial tiles add exact zeros and the FMA loop has no conditions
at all; stores of ``out`` are guarded per element. The guards cost a few integer compares per
loaded element (amortized over BK*TM*TN FMAs), and nothing in the inner loop.

**Split-K.** A thin problem such as the seed's ``narrow`` first matmul (m = 32, n = 1024,
k = 16384) has 16 output tiles: 16 blocks on a 132-SM GPU, each walking 16384 k. When the
output tiles give fewer than ``split_target_blocks`` blocks (264: two per SM of an H200) and k
is long, `matmul_splits` cuts k into S slices (each at least ``split_min_slice`` long and a
multiple of BK); grid z runs the slices, and slice s writes its partial product into
``scratch[s, m, n]``. A second kernel adds the S partials of each output in slice order and
rounds once to the output dtype. Not atomics: float atomics add in whatever order blocks
finish, so results would change from run to run; here every result depends only on the shapes
and the config (the same bits on every run). The scratch is the float64 buffer the executor
allocates once per plan (``OpDef.gpu_scratch_size``): float32 partials are widened exactly and
summed in float64. Without scratch (a caller that does not pass one) there is no split.

Tile sizes, and why
-------------------
For an H100/H200-class SM (64K 32-bit registers, 228 KB shared memory, at most 2048 threads
and 32 blocks per SM, 4 schedulers issuing 32 FP32 FMAs each per clock):

* float32: BM x BN x BK = 128 x 64 x 8, 256 threads, TM x TN = 8 x 4. 32 accumulators, 12
  fragment registers, 6 staging registers and addresses: ptxas (sm_90, CUDA 13.0) allocates
  96 registers a thread, no spills, so a block takes 24K of the SM's 64K registers and 2 blocks
  (16 warps) fit per SM. Shared memory: 2 stages x (8 x 132 + 8 x 64) x 4 B = 12.5 KB a
  block, far from the limit. 2 blocks an SM is low occupancy on purpose: each warp has 32
  independent FMAs per kk and the next tile's loads in flight, which is what hides latency
  here (more, smaller thread tiles would need more shared-memory loads per FMA).
  The medium seed shape (512 x 1024) gives 64 tiles, so split-K (x4) runs it as 256 blocks.
* float64: 64 x 64 x 8, 256 threads, TM x TN = 4 x 4: a float64 takes two registers, so half
  the outputs per thread keeps the register budget (ptxas: 96 registers); 16.5 KB of shared
  memory.

`CONFIGS` holds these; `MatmulConfig` builds a kernel for any other sizes (tests use a tiny
one so the CUDA simulator exercises every path quickly; benchmarks/gpu_matmul.py ``--sweep``
times alternatives on a real GPU).

What remains (why this is still slower than cuBLAS)
---------------------------------------------------
No tensor cores (TF32/FP64 MMA): FP32 FMAs only, so the ceiling is the ~67 TFLOP/s FP32 peak,
which cuBLAS SGEMM with TF32 off also uses. No asynchronous copies (``cp.async``/TMA): loads go
through registers, so staging costs registers and instructions. No vector loads (see above), no
warp-level tiling or swizzled block order for L2 reuse, one config per dtype rather than a
heuristic per shape. Numerics: each output sums k in order (per slice, then slices in order),
with FMA contraction; results are deterministic but not bitwise equal to the CPU kernels.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda, uint64

from .checks import check_device, check_dtype, check_scratch, check_shape
from .launch import (
    ELEMENTWISE_THREADS,
    MAX_GRID_Y,
    DeviceArray,
    Launch,
    launch_config,
)

__all__ = [
    "A_PAD",
    "CONFIGS",
    "MatmulConfig",
    "config_kernel",
    "matmul_config",
    "matmul_kernel",
    "matmul_launches",
    "matmul_scratch_size",
    "matmul_splits",
]

A_PAD = 4
"""Padding of each row of the transposed ``a`` tile (elements): conflict-free stores."""

H200_SMS = 132


@dataclass(frozen=True)
class MatmulConfig:
    """Tile sizes of one matmul kernel, and its split-K rule.

    bm x bn: outputs per block; bk: k per shared-memory step; tm x tn: outputs per thread
    (so (bm / tm) * (bn / tn) threads a block). Split-K (with scratch only): when the output
    tiles give fewer than `split_target_blocks` blocks, k is cut into up to `split_max` slices
    of at least `split_min_slice` (rounded up to a multiple of bk).
    """

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    split_target_blocks: int = 2 * H200_SMS
    split_min_slice: int = 256
    split_max: int = 32

    def __post_init__(self) -> None:
        if self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"{self}: bm must be a multiple of tm and bn of tn")
        threads = self.threads
        if threads > 1024 or threads % self.bk or threads % self.bn:
            raise ValueError(f"{self}: {threads} threads must be <= 1024, multiples of bk and bn")
        if (self.bm * self.bk) % threads or (self.bk * self.bn) % threads:
            raise ValueError(f"{self}: each tile must split evenly over {threads} threads")
        if self.split_min_slice < 1 or self.split_max < 1:
            raise ValueError(f"{self}: split_min_slice and split_max must be >= 1")

    @property
    def threads(self) -> int:
        """Threads per block."""
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def shared_bytes(self) -> int:
        """Shared memory per block for a dtype of 4 bytes (double it for float64)."""
        return 2 * self.bk * (self.bm + A_PAD + self.bn) * 4

    def label(self) -> str:
        """'128x64x8/8x4': bm x bn x bk / tm x tn."""
        return f"{self.bm}x{self.bn}x{self.bk}/{self.tm}x{self.tn}"


CONFIGS: dict[np.dtype, MatmulConfig] = {
    np.dtype(np.float32): MatmulConfig(bm=128, bn=64, bk=8, tm=8, tn=4),
    np.dtype(np.float64): MatmulConfig(bm=64, bn=64, bk=8, tm=4, tn=4),
}
"""The config `matmul_launches` uses for each dtype unless given one."""


def matmul_config(dtype: Any) -> MatmulConfig:
    """The default config for float32 or float64."""
    return CONFIGS[np.dtype(dtype)]


@functools.cache
def matmul_kernel(bm: int, bn: int, bk: int, tm: int, tn: int) -> Any:
    """The kernel for these tile sizes (built once; see the module docstring for its steps).

    ``kernel[(ceil(n/bn), ceil(m/bm), slices), threads](a, b, dest, k_slice)``: block z sums
    k in ``[z*k_slice, min((z+1)*k_slice, k))`` into ``dest[z]`` (``dest`` is ``out`` seen as
    (1, m, n) without split-K, the scratch seen as (slices, m, n) with it).
    """
    col_threads = bn // tn  # threads along a block's columns; a warp spans 32 / col_threads rows
    row_threads = bm // tm
    threads = row_threads * col_threads
    a_loads = bm * bk // threads  # elements of `a` each thread loads per step
    b_loads = bk * bn // threads
    a_row_step = threads // bk  # rows of the a tile covered by one load of every thread
    b_row_step = threads // bn
    a_pitch = bm + A_PAD

    @cuda.jit(device=True, inline="always")
    def load_tiles(a, b, a_next, b_next, k0, k_end, a_first_row, a_k, b_first_k, b_column, zero):
        """This thread's share of the A and B tiles at k0 into registers (zeros off the edges);
        inlined into the kernel (Numba IR), so the register arrays stay registers."""
        m = a.shape[0]
        n = b.shape[1]
        ka = k0 + a_k
        for p in range(a_loads):
            row = a_first_row + p * a_row_step
            a_next[p] = a[row, ka] if row < m and ka < k_end else zero
        for p in range(b_loads):
            kb = k0 + b_first_k + p * b_row_step
            b_next[p] = b[kb, b_column] if kb < k_end and b_column < n else zero

    @cuda.jit(cache=True)
    def kernel(a, b, dest, k_slice):
        a_tile = cuda.shared.array((2, bk, a_pitch), dtype=a.dtype)  # transposed: [kk, row]
        b_tile = cuda.shared.array((2, bk, bn), dtype=a.dtype)
        acc = cuda.local.array((tm, tn), dtype=a.dtype)
        a_frag = cuda.local.array(tm, dtype=a.dtype)
        b_frag = cuda.local.array(tn, dtype=a.dtype)
        a_next = cuda.local.array(a_loads, dtype=a.dtype)  # the next tiles, on their way
        b_next = cuda.local.array(b_loads, dtype=a.dtype)
        zero = a.dtype.type(0)

        m = a.shape[0]
        k = a.shape[1]
        n = b.shape[1]
        tid = uint64(cuda.threadIdx.x)  # unsigned indices: Numba adds no negative-index fixups
        m0 = cuda.blockIdx.y * bm
        n0 = cuda.blockIdx.x * bn
        slice_ = cuda.blockIdx.z
        k_begin = slice_ * k_slice
        k_end = min(k_begin + k_slice, k)
        steps = (k_end - k_begin + bk - 1) // bk  # 0 when k == 0: the block stores zeros

        # Compute layout: thread (tr, tc) owns rows tr + i*row_threads, cols tc + j*col_threads.
        tr = tid // col_threads
        tc = tid - tr * col_threads
        # Load layout: a as rows of bk consecutive k, b as rows of bn consecutive columns.
        a_kk = tid % bk
        a_row = tid // bk
        b_col = tid % bn
        b_kk = tid // bn

        for i in range(tm):
            for j in range(tn):
                acc[i, j] = zero

        # Prologue: the first tiles into registers.
        k0 = k_begin
        if steps > 0:
            load_tiles(a, b, a_next, b_next, k0, k_end, m0 + a_row, a_kk, b_kk, n0 + b_col, zero)

        for step in range(steps):
            stage = uint64(step & 1)
            # 1. The tiles loaded during the previous step go to shared memory (stage t % 2).
            for p in range(a_loads):
                a_tile[stage, a_kk, a_row + p * a_row_step] = a_next[p]
            for p in range(b_loads):
                b_tile[stage, b_kk + p * b_row_step, b_col] = b_next[p]
            cuda.syncthreads()
            # 2. Issue the loads of the next tiles; they complete while this step computes.
            if step + 1 < steps:
                k0 += bk
                load_tiles(
                    a, b, a_next, b_next, k0, k_end, m0 + a_row, a_kk, b_kk, n0 + b_col, zero
                )
            # 3. bk rank-1 updates of the tm x tn register tile.
            for kk in range(uint64(bk)):
                for i in range(tm):
                    a_frag[i] = a_tile[stage, kk, tr + i * row_threads]
                for j in range(tn):
                    b_frag[j] = b_tile[stage, kk, tc + j * col_threads]
                for i in range(tm):
                    for j in range(tn):
                        acc[i, j] += a_frag[i] * b_frag[j]

        # Epilogue: the register tile to dest[z] (out, or this slice's partials).
        for i in range(tm):
            row = m0 + tr + i * row_threads
            if row < m:
                for j in range(tn):
                    col = n0 + tc + j * col_threads
                    if col < n:
                        dest[slice_, row, col] = acc[i, j]

    return kernel


def config_kernel(dtype: Any, config: MatmulConfig | None = None) -> Any:
    """The kernel of `config` (default: the dtype's entry of `CONFIGS`)."""
    config = config or matmul_config(dtype)
    return matmul_kernel(config.bm, config.bn, config.bk, config.tm, config.tn)


@cuda.jit(cache=True)
def _sum_slices_kernel(partials, out):
    """One thread per out[row, col]: the split-K partials added in slice order, rounded once."""
    j = cuda.grid(1)
    n = out.shape[1]
    if j < out.size:
        row = j // n
        col = j - row * n
        total = partials[0, row, col]
        for s in range(1, partials.shape[0]):
            total += partials[s, row, col]
        out[row, col] = total


def matmul_splits(m: int, k: int, n: int, config: MatmulConfig) -> tuple[int, int]:
    """(slices, k_slice) of split-K for this shape: (1, k) when k is not split.

    Split only when the output tiles give fewer than ``config.split_target_blocks`` blocks and
    k holds at least two slices of ``config.split_min_slice``; then as many slices as reach
    the target, at most ``config.split_max``, each a multiple of bk long (the last may be
    shorter). A function of the shape and config only.
    """
    tiles = math.ceil(m / config.bm) * math.ceil(n / config.bn)
    if tiles == 0 or tiles >= config.split_target_blocks or k < 2 * config.split_min_slice:
        return 1, k
    wanted = math.ceil(config.split_target_blocks / tiles)
    slices = min(wanted, k // config.split_min_slice, config.split_max)
    if slices < 2:
        return 1, k
    k_slice = math.ceil(math.ceil(k / slices) / config.bk) * config.bk
    return math.ceil(k / k_slice), k_slice


def matmul_scratch_size(
    m: int, k: int, n: int, dtype: Any, config: MatmulConfig | None = None
) -> int:
    """Float64 elements of scratch `matmul_launches` uses for split-K on this shape; 0: none."""
    slices, _ = matmul_splits(m, k, n, config or matmul_config(dtype))
    return 0 if slices == 1 else slices * m * n


def matmul_launches(
    a: DeviceArray,
    b: DeviceArray,
    out: DeviceArray,
    scratch: DeviceArray | None = None,
    config: MatmulConfig | None = None,
) -> list[Launch]:
    """out[m, n] = a[m, k] @ b[k, n] (k may be 0: zeros), accumulated in the dtype.

    The launches: the tiled kernel, plus the slice sum with split-K.

    `scratch`, optional: a 1-D float64 device array of at least `matmul_scratch_size`
    elements; with it, thin shapes split k (see `matmul_splits`). `config`: tile sizes
    (default: `CONFIGS` for the dtype).
    """
    check_device(a, b, out)
    dtype = check_dtype(a, b, out)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs [m, k] @ [k, n], got {a.shape} @ {b.shape}")
    (m, k), n = a.shape, b.shape[1]
    check_shape("matmul out", out, (m, n))
    if m == 0 or n == 0:
        return []
    config = config or matmul_config(dtype)
    kernel = config_kernel(dtype, config)
    slices, k_slice = matmul_splits(m, k, n, config) if scratch is not None else (1, k)
    grid = (math.ceil(n / config.bn), math.ceil(m / config.bm), slices)
    if grid[1] > MAX_GRID_Y:
        raise ValueError(f"matmul: {m} rows exceed the grid limit ({MAX_GRID_Y * config.bm})")
    if slices == 1:
        return [Launch(kernel, grid, config.threads, (a, b, out.reshape(1, m, n), k_slice))]
    needed = slices * m * n
    check_scratch("matmul", scratch, needed)
    partials = scratch[:needed].reshape(slices, m, n)
    return [
        Launch(kernel, grid, config.threads, (a, b, partials, k_slice)),
        Launch(_sum_slices_kernel, *launch_config(m * n, ELEMENTWISE_THREADS), (partials, out)),
    ]
