"""Matmul row-block kernels: out[r0:r1, :] = a[r0:r1, :] @ b.

Why row blocks
--------------
An intra-op shard owns a contiguous block of output rows. Shards never write the same memory
(no reduction across threads, no atomics), each reads the whole of `b`, and a shard's result
does not depend on which other shards exist or on the order they run in. The caller picks the
row boundaries as multiples of `ROW_ALIGN` (the register-tile height) so that no shard starts
in the middle of a tile and wastes a partly empty one.

Two kernels share that signature:

`matmul_rows_blas` -- ``np.matmul(a[r0:r1], b, out=out[r0:r1])`` from Python. NumPy releases the
GIL around OpenBLAS's sgemm/dgemm, so shards on several Python threads run truly in parallel.
BLAS must be held to one thread (threadpoolctl, `executors.blas_threads.single_threaded_blas`):
the intra-op pool owns the parallelism, and an OpenBLAS pool under each shard would
oversubscribe the cores. Measured on the 2-core dev VM (AMD EPYC, AVX2/FMA; float32, BLAS at
one thread, GFLOP/s, median of 7):

    n     1 shard, 1 thread    2 shards on 2 Python threads
    1024  69                   113
    2048  71                   122

The alternative, ``np.dot(a[r0:r1], b, out[r0:r1])`` inside an ``@njit(nogil=True)`` function,
measured the same (64/118 and 71/120) but calls scipy's *own* bundled OpenBLAS, a second
library with its own thread pool: unless it is loaded before the caller's threadpoolctl limit
is taken, it runs with all cores per shard (measured: the 2-shard run then fell to 27 GFLOP/s,
oversubscribed). It also needs scipy at runtime and a compile. So the NumPy call won.
OpenBLAS's bits may depend on the row partition (it picks its edge micro-kernels and M-blocking
from the number of rows it is given; an earlier OpenBLAS on an AVX2 machine changed ~2% of the
elements in the last ulp when 1024 rows were split at 512), but a fixed partition gives fixed
bits, whatever the thread count and whatever order the shards run in. Where a probe shows that
this BLAS gives the same bits for merged rows, a thread computes its run of consecutive shards
in one call (`kernels.blas_rows`); the numba kernel's bits never depend on the partition.

`matmul_rows_numba` -- a pure-Numba, BLAS-free GEMM in the GotoBLAS/BLIS style:

* Blocking. ``for jc (NC columns of b): for pc (KC rows of b): pack B block; for ic (MC rows):
  pack A block; for each MR-row micro-panel of A: for each NR-column micro-panel of B: tile``.
  With float32, a packed B micro-panel is KC x NR = 256 x 16 x 4 B = 16 KiB and an A
  micro-panel 6 KiB: the A panel stays in L1 while the row of B panels streams from L2/L3,
  and the output tile walks along a row of `out` (an earlier variant that walked down a
  column, BLIS-style, with a 4 KiB row stride in `out`, ran at about half the speed).
  NC = 1024 beat 256/512 (fewer re-packings of A, longer row walks); KC = 256 and MC hardly
  matter (within noise between 128 and 512, and 24 and 384).
* Packing. B is copied row by row (streaming reads) into NR-wide panels, p-major, zero-padded
  on the right; A into MR-tall panels, p-major, zero-padded at the bottom. Edge tiles are
  computed whole on the padding and only the valid part is written out, so every M, K, N works.
* Register tile. MR = 6 rows x NR = 2 SIMD vectors (6 x 16 float32 or 6 x 8 float64 on AVX2):
  12 vector accumulators + 2 vectors of B + 1 broadcast of A = 15 of 16 ymm registers. Each
  k step loads 2 vectors of B, broadcasts 6 scalars of A and issues 12 FMAs.
  The tile is an `@intrinsic` that emits the k loop in LLVM IR on explicit vector types
  (``<8 x float>``, ``llvm.fmuladd``), because Numba cannot express it in Python: it disables
  LLVM's SLP vectorizer by default (``NUMBA_SLP_VECTORIZE=0``), so 96 scalar accumulators
  stay scalar (3 GFLOP/s), and with ``fastmath`` the loop vectorizer vectorizes the k loop as a
  reduction instead (12 GFLOP/s). A local accumulator array is heap memory LLVM cannot keep
  in registers (2.7 GFLOP/s). The vector width is the host's (16, 32 or 64 bytes, from
  llvmlite's host features); the code is correct for any width LLVM legalizes.
  The tile alone, on L1-resident panels, runs at ~74 GFLOP/s (about the FMA peak of one
  core of this VM); the whole kernel reaches ~60-68.
* Numerics. Every output element is, for each KC block of k in order, a chain of fused
  multiply-adds over k in order starting from zero, then added to the running sum in `out`.
  No fastmath, no reassociation, accumulation in the array dtype. The arithmetic for an
  element does not depend on the tile it falls in or on the row range, so results are
  bitwise identical for any partition of the rows and any order of the shards, and the same
  on every call. They differ from BLAS in the last bits (different summation order).

Measured with `benchmarks/matmul_kernels.py` (float32, GFLOP/s, medians; the 2-core VM is
shared with another engineer's test runs, so runs vary by 10-20 %; ranges over 3-5 runs):

    n     threads  numpy/OpenBLAS  matmul_rows_blas  matmul_rows_numba  numba/numpy
    1024  1        64-81           63-69             56-64              78-94 %
    1024  2        102-129         90-120            94-110             78-92 %
    2048  1        65-72           69-74             55-65              84-92 %
    2048  2        101-128         117-130           100-114            78-109 %

Compile: the first call per dtype compiles in ~3.5-4 s (float32 ~4 s including Numba's own
start-up, float64 ~3.5 s); with ``cache=True`` a later process loads it in ~0.7 s (first
dtype, mostly Numba start-up) and ~0.02 s (next dtype). One call site for the micro-kernel and
no separate inner @njit helper (Numba re-optimizes an inlined callee) took it down from ~6.5 s.
"""

from __future__ import annotations

import llvmlite.binding as _llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = [
    "ROW_ALIGN",
    "matmul_batches_blas",
    "matmul_batches_numba",
    "matmul_rows_blas",
    "matmul_rows_numba",
]


def _host_vector_bytes() -> int:
    features = _llvm.get_host_cpu_features()
    if features.get("avx512f", False):
        return 64
    if features.get("avx", False):
        return 32
    return 16


_VEC_BYTES = _host_vector_bytes()
_MR = 6  # register-tile rows
_NV = 2  # register-tile width, in SIMD vectors
_KC = 256  # k block (rows of a packed B block)
_MC = 96  # rows of A packed at a time (multiple of _MR)
_NC = 1024  # columns of a packed B block (multiple of every NR)

ROW_ALIGN: int = _MR
"""Shard row boundaries should be multiples of this (the register-tile height)."""


def matmul_rows_blas(a, b, out, row_start, row_stop) -> None:
    """out[row_start:row_stop] = a[row_start:row_stop] @ b through NumPy's BLAS.

    Releases the GIL for the GEMM; hold BLAS to one thread while shards run in parallel.
    """
    if row_stop > row_start:
        np.matmul(a[row_start:row_stop], b, out=out[row_start:row_stop])


@intrinsic
def _tile(typingctx, ap, pa, bp, pb, kc, c, coff, ldc, accumulate):
    """MR x NR register tile: c[coff + i*ldc + j] (+)= sum_p ap[pa + p*MR + i] * bp[pb + p*NR + j].

    `ap`, `bp` are packed panels (1-D), `c` any C-contiguous array of the same dtype addressed
    through its flat data pointer; `accumulate` != 0 adds to c, otherwise stores.
    """
    dtypes = {getattr(t, "dtype", None) for t in (ap, bp, c)}
    if len(dtypes) != 1 or dtypes.pop() not in (types.float32, types.float64):
        return None
    sig = types.void(
        ap, types.intp, bp, types.intp, types.intp, c, types.intp, types.intp, types.intp
    )

    def codegen(context, builder, signature, args):
        apv, pav, bpv, pbv, kcv, cv, coffv, ldcv, accv = args
        dtype = signature.args[0].dtype
        elt = context.get_value_type(dtype)
        size = context.get_abi_sizeof(elt)
        lanes = _VEC_BYTES // size
        nr = _NV * lanes
        vty = ir.VectorType(elt, lanes)
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        a_ptr = context.make_array(signature.args[0])(context, builder, apv).data
        b_ptr = context.make_array(signature.args[2])(context, builder, bpv).data
        c_ptr = context.make_array(signature.args[5])(context, builder, cv).data
        suffix = f"v{lanes}{'f32' if size == 4 else 'f64'}"
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vty, [vty, vty, vty]), "llvm.fmuladd." + suffix
        )
        zero = ir.Constant(vty, [ir.Constant(elt, 0.0)] * lanes)
        undef = ir.Constant(vty, ir.Undefined)
        splat = ir.Constant(ir.VectorType(i32, lanes), [0] * lanes)
        # Entry-block allocas: SROA/mem2reg turn them into 12 vector registers.
        accs = []
        for _ in range(_MR * _NV):
            slot = cgutils.alloca_once(builder, vty)
            builder.store(zero, slot)
            accs.append(slot)
        with cgutils.for_range(builder, kcv) as loop:
            p = loop.index
            boff = builder.add(pbv, builder.mul(p, ir.Constant(i64, nr)))
            aoff = builder.add(pav, builder.mul(p, ir.Constant(i64, _MR)))
            bvecs = []
            for v in range(_NV):
                q = builder.gep(b_ptr, [builder.add(boff, ir.Constant(i64, v * lanes))])
                bvecs.append(builder.load(builder.bitcast(q, vty.as_pointer()), align=size))
            for i in range(_MR):
                s = builder.load(builder.gep(a_ptr, [builder.add(aoff, ir.Constant(i64, i))]))
                sv = builder.insert_element(undef, s, ir.Constant(i32, 0))
                sv = builder.shuffle_vector(sv, undef, splat)
                for v in range(_NV):
                    slot = accs[i * _NV + v]
                    builder.store(builder.call(fmuladd, [sv, bvecs[v], builder.load(slot)]), slot)
        ptrs = []
        for i in range(_MR):
            row = builder.add(coffv, builder.mul(ldcv, ir.Constant(i64, i)))
            for v in range(_NV):
                q = builder.gep(c_ptr, [builder.add(row, ir.Constant(i64, v * lanes))])
                ptrs.append(builder.bitcast(q, vty.as_pointer()))
        with builder.if_else(builder.icmp_signed("!=", accv, ir.Constant(i64, 0))) as (add, store):
            with add:
                for k in range(_MR * _NV):
                    old = builder.load(ptrs[k], align=size)
                    builder.store(builder.fadd(old, builder.load(accs[k])), ptrs[k], align=size)
            with store:
                for k in range(_MR * _NV):
                    builder.store(builder.load(accs[k]), ptrs[k], align=size)
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True, cache=True)
def matmul_rows_numba(a, b, out, row_start, row_stop):
    """out[row_start:row_stop] = a[row_start:row_stop] @ b, pure Numba (no BLAS).

    a: [M, K], b: [K, N], out: [M, N], 2-D float32 or float64, out C-contiguous. Rows of `out`
    outside [row_start, row_stop) are not touched. Bitwise deterministic and independent of
    how the rows are split into shards.
    """
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        raise ValueError("matmul_rows_numba: a, b and out must be 2-D")
    if a.shape[1] != b.shape[0] or out.shape[0] != a.shape[0] or out.shape[1] != b.shape[1]:
        raise ValueError("matmul_rows_numba: shapes do not match (a[M,K] @ b[K,N] -> out[M,N])")
    if not out.flags.c_contiguous:
        raise ValueError("matmul_rows_numba: out must be C-contiguous")
    if row_start < 0 or row_stop > a.shape[0] or row_start > row_stop:
        raise ValueError("matmul_rows_numba: row range out of bounds")
    if row_stop <= row_start or out.shape[1] == 0:
        return
    k = a.shape[1]
    n = b.shape[1]
    mr = _MR
    nr = _NV * (_VEC_BYTES // out.itemsize)
    ncmax = (min(_NC, n) + nr - 1) // nr * nr
    bpack = np.empty(_KC * ncmax, dtype=out.dtype)
    apack = np.empty(_KC * _MC, dtype=out.dtype)
    tile = np.zeros((mr, nr), dtype=out.dtype)
    zero = tile[0, 0]  # a zero of the output dtype (no float64 literal in float32 code)
    if k == 0:
        for i in range(row_start, row_stop):
            for j in range(n):
                out[i, j] = zero
        return
    for jc in range(0, n, _NC):
        nc = min(_NC, n - jc)
        npanels = (nc + nr - 1) // nr
        nfull = nc // nr
        for pc in range(0, k, _KC):
            kc = min(_KC, k - pc)
            accumulate = 1 if pc > 0 else 0
            # Pack b[pc:pc+kc, jc:jc+nc] into nr-wide panels, reading b row by row.
            for p in range(kc):
                brow = b[pc + p]
                for jb in range(nfull):
                    dst = jb * kc * nr + p * nr
                    src = jc + jb * nr
                    for j in range(nr):
                        bpack[dst + j] = brow[src + j]
                if nfull < npanels:
                    dst = nfull * kc * nr + p * nr
                    src = jc + nfull * nr
                    for j in range(nr):
                        bpack[dst + j] = brow[src + j] if src + j < n else zero
            for ic in range(row_start, row_stop, _MC):
                mc = min(_MC, row_stop - ic)
                mpanels = (mc + mr - 1) // mr
                # Pack a[ic:ic+mc, pc:pc+kc] into mr-tall panels.
                for ib in range(mpanels):
                    base = ib * kc * mr
                    for i in range(mr):
                        row = ic + ib * mr + i
                        if row < ic + mc:
                            arow = a[row]
                            for p in range(kc):
                                apack[base + p * mr + i] = arow[pc + p]
                        else:
                            for p in range(kc):
                                apack[base + p * mr + i] = zero
                for ib in range(mpanels):
                    i0 = ic + ib * mr
                    rows = min(mr, ic + mc - i0)
                    for jb in range(npanels):
                        j0 = jc + jb * nr
                        cols = min(nr, n - j0)
                        pa = ib * kc * mr
                        pb = jb * kc * nr
                        # Full tiles go straight to out, edge tiles through `tile`; a single
                        # call site keeps one copy of the micro-kernel (shorter compile).
                        full = rows == mr and cols == nr
                        dst = out if full else tile
                        coff = i0 * n + j0 if full else 0
                        ldc = n if full else nr
                        _tile(apack, pa, bpack, pb, kc, dst, coff, ldc, accumulate if full else 0)
                        if not full:
                            for i in range(rows):
                                for j in range(cols):
                                    if accumulate:
                                        out[i0 + i, j0 + j] += tile[i, j]
                                    else:
                                        out[i0 + i, j0 + j] = tile[i, j]


# -- batched matmul: a range of the output's flat rows, batch by batch ----------------------------
#
# A batched matmul's output (batch, m, n) is cut into shards of its batch * m rows, like a 2-D
# one's; a shard may start or end inside a batch. These wrappers run the row kernels above on
# each batch's part of the range: batch `i` of the output reads batch `a_of[i]` of `a` and
# `b_of[i]` of `b` (a broadcast batch axis maps many output batches to one).


def matmul_batches_blas(a, a_of, b, b_of, out, row_start, row_stop) -> None:
    """out's flat rows [row_start, row_stop) of a batched a @ b through NumPy's BLAS:
    a (batches_a, m, k), b (batches_b, k, n), out (batches, m, n)."""
    m = out.shape[1]
    if m == 0:
        return
    for batch in range(row_start // m, -(-row_stop // m)):
        lo, hi = max(row_start - batch * m, 0), min(row_stop - batch * m, m)
        matmul_rows_blas(a[a_of[batch]], b[b_of[batch]], out[batch], lo, hi)


@njit(nogil=True, cache=True)
def matmul_batches_numba(a, a_of, b, b_of, out, row_start, row_stop):
    """`matmul_batches_blas` with the pure Numba kernel (its bits do not depend on the range)."""
    m = out.shape[1]
    if row_start < 0 or row_stop > out.shape[0] * m or row_start > row_stop:
        raise ValueError("matmul_batches_numba: row range out of bounds")
    if m == 0:
        return
    for batch in range((row_start // m), (row_stop + m - 1) // m):
        lo, hi = max(row_start - batch * m, 0), min(row_stop - batch * m, m)
        matmul_rows_numba(a[a_of[batch]], b[b_of[batch]], out[batch], lo, hi)
