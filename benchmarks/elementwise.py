"""Elementwise kernels on one thread: ns per element, parallelgraph's row kernels against NumPy's
ufuncs, medians of interleaved repeats, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/elementwise.py [--repeats 41]

For each op (tanh, exp, sigmoid, relu, add, multiply, add_n's accumulate; add of a bias
[columns] and multiply by a scalar as the ops pass them, one row every row reads) and dtype, at
256x512 and 1024x1024: the kernel the op runs on all rows in one call (`kernels.elementwise`),
the NumPy call that computes the same thing into a preallocated output (sigmoid: SciPy's
`expit`, one ufunc), for the bias the row-stride-0 view it replaced (against NumPy's add of
the bias), and for tanh the kernel it replaced (`np.tanh` on each row inside `@njit`: a scalar
libm call per element). Every case of
one size runs once per round, rounds repeated: drift and other load hit all alike; each timed
call follows an untimed call of the same case, so every case reads operands the cache holds
alike (otherwise the first reader of an array after another op's pays for fetching it). Prints the
CPU's SIMD level, the BLAS kernel threadpoolctl reports (no BLAS runs here; printed so runs
with and without the workplace's OpenBLAS pin can be told apart) and the load average.
Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from numba import njit
from scipy.special import expit  # sigmoid as one ufunc: the fastest NumPy-world call

sys.path.insert(0, os.path.dirname(__file__))
from _common import median, spread, table
from threadpoolctl import ThreadpoolController, threadpool_limits

from parallelgraph.kernels import elementwise
from parallelgraph.ops.math import _rows_of

SIZES = ((256, 512), (1024, 1024))


@njit(nogil=True, cache=True)
def libm_tanh_rows(x, out, row_start, row_stop):
    """The previous tanh kernel: NumPy's tanh on each row, which Numba compiles to libm calls."""
    for i in range(row_start, row_stop):
        np.tanh(x[i], out[i])


def cases(rows: int, columns: int, dtype) -> dict[str, tuple]:
    """name -> (parallelgraph callable, NumPy callable) for one size and dtype."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((rows, columns)) * 2).astype(dtype)
    y = (rng.standard_normal((rows, columns)) * 2).astype(dtype)
    out = np.empty_like(x)
    bias = (rng.standard_normal(columns) * 2).astype(dtype)
    scalar = np.asarray(1.5, dtype=dtype)
    bias_row = _rows_of(bias, rows, columns)  # what the Add op passes its kernel
    scalar_row = _rows_of(scalar, rows, columns)
    bias_view = np.broadcast_to(bias.reshape(1, -1), (rows, columns))  # the layout it replaced
    ew = elementwise
    return {
        "tanh": (lambda: ew.tanh_rows(x, out, 0, rows), lambda: np.tanh(x, out=out)),
        "tanh, previous kernel (libm)": (lambda: libm_tanh_rows(x, out, 0, rows), None),
        "exp": (lambda: ew.exp_rows(x, out, 0, rows), lambda: np.exp(x, out=out)),
        "sigmoid": (lambda: ew.sigmoid_rows(x, out, 0, rows), lambda: expit(x, out=out)),
        "relu": (lambda: ew.relu_rows(x, out, 0, rows), lambda: np.maximum(x, 0, out=out)),
        "add": (lambda: ew.add_rows(x, y, out, 0, rows), lambda: np.add(x, y, out=out)),
        "multiply": (
            lambda: ew.multiply_rows(x, y, out, 0, rows),
            lambda: np.multiply(x, y, out=out),
        ),
        "add bias": (
            lambda: ew.add_rows(x, bias_row, out, 0, rows),
            lambda: np.add(x, bias, out=out),
        ),
        "add bias, previous layout (row stride 0)": (
            lambda: ew.add_rows(x, bias_view, out, 0, rows),
            None,
        ),
        "multiply scalar": (
            lambda: ew.multiply_rows(x, scalar_row, out, 0, rows),
            lambda: np.multiply(x, scalar, out=out),
        ),
        "add_n (accumulate)": (
            lambda: ew.accumulate_rows(out, x, 0, rows),
            lambda: np.add(out, x, out=out),
        ),
    }


def warm_rounds(cases: dict, repeats: int) -> dict[str, list[float]]:
    """Seconds of each case, `repeats` rounds of every case in turn, each timed call right
    after an untimed one of the same case."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, case in cases.items():
            case()
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
    return times


def simd_level() -> str:
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    features = set(codegen._get_host_cpu_features().split(","))
    for level in ("avx512f", "avx2", "avx", "sse4.2"):
        if "+" + level in features:
            return f"{codegen._get_host_cpu_name()} (widest: {level})"
    return codegen._get_host_cpu_name()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args()
    blas = [
        f"{info.get('internal_api')} {info.get('version')} kernel {info.get('architecture')}"
        for info in ThreadpoolController().info()
        if info.get("user_api") == "blas"
    ]
    pins = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    print(f"CPU: {simd_level()}; {os.cpu_count()} cores; NumPy {np.__version__}")
    print(f"BLAS: {'; '.join(blas) or 'none loaded'}; OpenBLAS pins: {pins or 'none'}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows_out = []
    with threadpool_limits(1):
        for rows, columns in SIZES:
            count = rows * columns
            for dtype in (np.float32, np.float64):
                timed = {}
                for name, (ours, numpy_call) in cases(rows, columns, dtype).items():
                    timed[f"pg {name}"] = ours
                    if numpy_call is not None:
                        timed[f"np {name}"] = numpy_call
                times = warm_rounds(timed, args.repeats)
                for name, (_, numpy_call) in cases(1, 1, dtype).items():
                    pg_ns = median(times[f"pg {name}"]) / count * 1e9
                    np_ns = median(times[f"np {name}"]) / count * 1e9 if numpy_call else None
                    replaced = name.split(",")[0]  # "tanh, previous kernel" -> "tanh"
                    reference = np_ns or median(times[f"np {replaced}"]) / count * 1e9
                    rows_out.append(
                        [
                            f"{rows}x{columns}",
                            np.dtype(dtype).name,
                            name,
                            f"{pg_ns:.3f} ({spread(times[f'pg {name}'])})",
                            f"{np_ns:.3f} ({spread(times[f'np {name}'])})" if np_ns else "-",
                            f"{pg_ns / reference:.2f}",
                        ]
                    )
    header = ["size", "dtype", "op", "pg ns/el (IQR)", "NumPy ns/el (IQR)", "pg/NumPy"]
    print(f"one thread, medians of {args.repeats} interleaved rounds")
    print(table(header, rows_out))
    print("pg/NumPy: time ratio, below 1 pg is faster (a 'previous' row: against NumPy's same op)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
