"""Whether this process's BLAS gives a matmul the same bits when consecutive shards go to it as
one call: proven on first use, for each shape, by a probe.

Why merge shards at all
-----------------------
A matmul's shards are row blocks fixed by its shapes (never by thread counts: that is what keeps
the bits of every thread setting), and each BLAS call packs all of B again. Where fewer threads
take part than there are shards (4 shards at intra-op 1 or 2), those extra packs are pure loss:
measured on a 2-core AVX-512 VM, OpenBLAS float32, GFLOP/s (benchmarks/RESULTS.md, "Matmul
shards merged"): 1024^3 on one thread 207 as one call, 188 as 4 shards; on two threads 355 as
2 halves, 336 as 4 shards; 2048^3 on two threads 392 as 2 calls, 356 as 8. So an op computes each
taking thread's consecutive shards in one call — where that gives the same bits.

Why a probe
-----------
Whether it does depends on the library and on the kernel it picked for this CPU: OpenBLAS
chooses its edge micro-kernels and M blocking from the rows it is given, and no BLAS documents
that its bits do not depend on them. With the OpenBLAS of NumPy 2 here, its SkylakeX and Haswell
kernels gave the same bits for every shape and grouping we tried (float32 and float64, 512 to
4096 rows, odd sizes too); an earlier OpenBLAS on an AVX2 machine changed ~2% of the elements of
a 1024-row matmul split at 512, in the last place. So `merges_exactly` settles it once per
case, here: random operands of the op's shapes, dtype and memory order, multiplied shard by
shard and group by group, compared bit for bit. The answer is cached for the process; a "no"
leaves the op's calls one per shard, as before.

Why one probe settles a case: a GEMM kernel's sequence of floating-point operations does not
depend on the values (no data-dependent branches), so two partitions that order any element's
arithmetic differently give different bits for almost any full-mantissa operands; agreeing on
all M x N elements of random ones, they compute the same sequence, and so the same bits for any
operands. Random operands rather than the op's own, because structured values (ones, zeros,
small integers) round alike under different orders and would prove nothing. And random values
of wildly different sizes (normal ones times 2**j, j uniform in [-20, 20]), not of one scale: a
reordering that touches few elements, or only the last additions of a dot product, leaves
many elements of same-scale operands with the same bits. A hypothesis test found such a case
(tests/test_merged_shards.py): 200x66 @ 66x1 float32 in 16 shards, which NumPy hands to
OpenBLAS's GEMV, whose row blocks round a few rows' sums differently merged (2-4 of 200
elements); standard normal probe operands agreed on all 200, and the op was merged.

Only GEMM is probed. NumPy's matmul hands a (1, k) @ (k, 1) product to DOT and a product with
one row or one column to GEMV: a shard of one row, or a one-column B, is then computed by
another routine than the merged call, or by GEMV, whose row blocks round differently (the two
cases above), and the difference can hide from any probe on a few short sums (7x3 @ 3x1 split
into 6 rows and 1: DOT for the last row, GEMV merged, one element apart in the last place;
found by the same test). Those cases are never merged; they gain nothing from it either, as
GEMV and DOT pack nothing. A GEMM case is probed with two draws, the spread values and plain
standard normal ones (short sums of spread values are decided by their largest term and
round alike in any order), and merged only when both agree bit for bit.

Costs: one probe is four matmuls of the op's size, once per process and shape (a session's
warm-up run pays it); a probe would need more than `PROBE_BYTES` of memory is not made, and the
answer is "no". Probes hold a lock: two threads never probe at once, and the BLAS thread count
is whatever the caller's run holds (one thread, as every shard's call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["PROBE_BYTES", "merges_exactly", "probed"]

#: The most memory a probe may use (operands and two outputs); bigger cases are not merged.
PROBE_BYTES = 256 * 2**20

Bounds = Sequence[tuple[int, int]]
_answers: dict[tuple[object, ...], bool] = {}
_lock = threading.Lock()


def _order(array: np.ndarray) -> str | None:
    """'C' or 'F' for a contiguous operand; None for any other layout (not probed)."""
    if array.flags.c_contiguous:
        return "C"
    if array.flags.f_contiguous:
        return "F"
    return None


def merges_exactly(a: np.ndarray, b: np.ndarray, shards: Bounds, groups: Bounds) -> bool:
    """True when ``a[r0:r1] @ b`` for each of `groups` (runs of consecutive `shards`) gives the
    same bits as the calls for each of `shards`, through NumPy's BLAS; see the module docstring.
    """
    orders = (_order(a), _order(b))
    if None in orders or a.dtype != b.dtype or a.dtype.kind != "f":
        return False
    if not _all_gemm(b.shape[1], (*shards, *groups)):
        return False
    key = (a.shape, b.shape, a.dtype.str, orders, tuple(shards), tuple(groups))
    answer = _answers.get(key)
    if answer is None:
        with _lock:
            answer = _answers.get(key)
            if answer is None:
                answer = _answers[key] = _probe(a.shape, b.shape, a.dtype, orders, shards, groups)
    return answer


def probed() -> dict[tuple[object, ...], bool]:
    """A copy of the answers so far (key: shapes, dtype, memory orders, shards, groups)."""
    return dict(_answers)


def _all_gemm(columns: int, calls: Bounds) -> bool:
    """Whether NumPy's matmul hands every one of these row-block calls to GEMM (not DOT or
    GEMV): more than one column of B and more than one row in each non-empty block."""
    return columns > 1 and all(stop - start > 1 for start, stop in calls if stop > start)


def _probe(
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
    dtype: np.dtype,
    orders: tuple[str | None, str | None],
    shards: Bounds,
    groups: Bounds,
    matmul: Callable[..., object] = np.matmul,
) -> bool:
    """The probe itself (`matmul`: the row-block call; tests give it one whose bits do depend
    on the rows, to see a "no")."""
    (m, k), n = a_shape, b_shape[1]
    if (m * k + k * n + 2 * m * n) * dtype.itemsize > PROBE_BYTES:
        return False
    rng = np.random.default_rng(0x5EED)
    bits = np.dtype(f"u{dtype.itemsize}")
    for draw in (_spread_values, _same_scale_values):
        a = np.asarray(draw(rng, a_shape), dtype=dtype, order=orders[0])
        b = np.asarray(draw(rng, b_shape), dtype=dtype, order=orders[1])
        by_shard, by_group = np.empty((m, n), dtype), np.empty((m, n), dtype)
        for out, bounds in ((by_shard, shards), (by_group, groups)):
            for start, stop in bounds:
                if stop > start:
                    matmul(a[start:stop], b, out=out[start:stop])
        if not np.array_equal(by_shard.view(bits), by_group.view(bits)):
            return False
    return True


def _same_scale_values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal values: short sums of them round differently under another order."""
    return rng.standard_normal(shape)


def _spread_values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values times 2**j, j uniform in [-20, 20]: sums of them round differently under
    almost any change of order (see the module docstring)."""
    return rng.standard_normal(shape) * np.exp2(rng.integers(-20, 21, shape))
