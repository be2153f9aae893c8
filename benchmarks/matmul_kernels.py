"""Matmul row-block kernels against NumPy/OpenBLAS, float32, side by side in one run.

    python benchmarks/matmul_kernels.py [--quick]

For n = 1024 and 2048 and 1 and 2 threads, GFLOP/s (2 n^3 / median time) of:

* numpy     -- ``np.matmul(a, b, out=c)`` with OpenBLAS limited to that many threads;
* blas      -- `matmul_rows_blas` (NumPy's BLAS on a row block);
* numba     -- `matmul_rows_numba` (pure Numba, no BLAS);

and each kernel's ratio to numpy at the same thread count. With 2 threads the rows are split
in two halves at a `ROW_ALIGN` boundary and the halves run on 2 Python threads while BLAS is
held to one thread, as the intra-op pool runs them. Within one (n, threads) group numpy is
timed first, on its own (its OpenBLAS workers busy-wait for ~0.1 s after each multi-threaded
call and would steal a core from whatever runs next), then the two kernels round-robin (so
drift hits both alike); every case gets a warm-up call. The 2-thread rows need both cores
idle: the script prints the load average so a busy machine shows.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import functools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import interleaved, median, spread, table
from threadpoolctl import ThreadpoolController

from parallelgraph.kernels.matmul import ROW_ALIGN, matmul_rows_blas, matmul_rows_numba


def sharded(kernel, a, b, out, pool, threads):
    """Run `kernel` over all rows: in the calling thread, or in 2 aligned halves on the pool."""
    n = a.shape[0]
    if threads == 1:
        return lambda: kernel(a, b, out, 0, n)
    split = round(n / 2 / ROW_ALIGN) * ROW_ALIGN

    def run():
        parts = [pool.submit(kernel, a, b, out, 0, split), pool.submit(kernel, a, b, out, split, n)]
        for part in parts:
            part.result()

    return run


def limited(controller, fn, blas_threads):
    """`fn` with every loaded BLAS limited to `blas_threads` threads around each call."""

    def run():
        with controller.limit(limits=blas_threads, user_api="blas"):
            fn()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    sizes = (1024, 2048)
    thread_counts = (1, 2)
    controller = ThreadpoolController()
    print(
        f"ROW_ALIGN={ROW_ALIGN}, float32, {repeats} repeats ({3 * repeats} at n=1024), "
        f"cores: {os.cpu_count()}"
    )

    # First call: compiles (or loads from the cache) the float32 specialization.
    x = np.ones((8, 8), np.float32)
    start = time.perf_counter()
    matmul_rows_numba(x, x, np.empty_like(x), 0, 8)
    print(
        f"matmul_rows_numba first call (compile or cache load): {time.perf_counter() - start:.2f} s"
    )

    rows = []
    with futures.ThreadPoolExecutor(max(thread_counts), thread_name_prefix="bench") as pool:
        for n in sizes:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            outs = {name: np.empty((n, n), np.float32) for name in ("numpy", "blas", "numba")}
            reps = 3 * repeats if n <= 1024 else repeats  # short runs are noisier
            for threads in thread_counts:
                numpy_case = functools.partial(np.matmul, a, b, out=outs["numpy"])
                blas_case = sharded(matmul_rows_blas, a, b, outs["blas"], pool, threads)
                numba_case = sharded(matmul_rows_numba, a, b, outs["numba"], pool, threads)
                # numpy first, on its own: after a multi-threaded call OpenBLAS's workers
                # busy-wait for ~0.1 s, which would steal a core from the shards timed next.
                times = interleaved(
                    {"numpy": limited(controller, numpy_case, threads)}, reps, warmup=1
                )
                time.sleep(0.3)
                cases = {
                    "blas": limited(controller, blas_case, 1),
                    "numba": limited(controller, numba_case, 1),
                }
                times.update(interleaved(cases, repeats=reps, warmup=1))
                for name in ("blas", "numba"):
                    np.testing.assert_allclose(outs[name], outs["numpy"], rtol=1e-3, atol=1e-2)
                gflops = {name: 2 * n**3 / median(t) / 1e9 for name, t in times.items()}
                base = gflops["numpy"]
                rows.append(
                    [
                        n,
                        threads,
                        f"{base:.1f} ({spread(times['numpy'])})",
                        f"{gflops['blas']:.1f} ({spread(times['blas'])})",
                        f"{gflops['blas'] / base:.0%}",
                        f"{gflops['numba']:.1f} ({spread(times['numba'])})",
                        f"{gflops['numba'] / base:.0%}",
                    ]
                )
                print(f"  n={n} threads={threads} done", flush=True)

    header = [
        "n",
        "threads",
        "numpy GFLOP/s (IQR)",
        "blas GFLOP/s (IQR)",
        "blas/numpy",
        "numba GFLOP/s (IQR)",
        "numba/numpy",
    ]
    print()
    print(table(header, rows))
    # The 2-thread rows need both cores: anything else running skews them (check the load).
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
