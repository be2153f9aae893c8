"""Every elementwise op of the table, the broadcasts, softmax and layer_norm on one thread:
parallelgraph against NumPy, ns per output element, medians of interleaved repeats, side by side
in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/ops.py [--repeats 21]

For each op of `ops.elementwise.TABLE` (from the table: a new op is measured without a line
here, against its NumPy reference when NumPy has no faster form in `NUMPY`), both float dtypes
where the op takes them, at 256x512 and 1024x1024: `kernel` is the generated row kernel on all
rows in one call (what a one-shard step runs), `session` the op as a one-op graph through a
Session at inter-op 1 / intra-op 1 (what a user gets, with the step's overhead), `NumPy` the
ufunc into a preallocated output (SciPy's `expit` and `erf` where NumPy has none). Broadcast rows
(a bias, a column, a scalar, an outer sum) and the composites softmax and layer_norm (whole
graphs, unfused and fused) follow. Each timed call follows an untimed call of the same case, so
every case reads operands the cache holds alike. Prints the CPU's SIMD level and the load.
Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
from scipy.special import erf, expit

sys.path.insert(0, os.path.dirname(__file__))
from _common import median, simd_level, spread, table, warm_rounds
from threadpoolctl import threadpool_limits

import parallelgraph as pg
from parallelgraph.ops import opdef
from parallelgraph.ops.elementwise import TABLE

SIZES = ((256, 512), (1024, 1024))
SQRT_HALF = 1 / math.sqrt(2)

#: NumPy's fastest form of an op, into `out` (args, out) -> None; the others use the reference.
NUMPY = {
    "add": lambda a, out: np.add(*a, out=out),
    "subtract": lambda a, out: np.subtract(*a, out=out),
    "multiply": lambda a, out: np.multiply(*a, out=out),
    "divide": lambda a, out: np.divide(*a, out=out),
    "maximum": lambda a, out: np.maximum(*a, out=out),
    "minimum": lambda a, out: np.minimum(*a, out=out),
    "pow": lambda a, out: np.power(*a, out=out),
    "negative": lambda a, out: np.negative(*a, out=out),
    "abs": lambda a, out: np.abs(*a, out=out),
    "square": lambda a, out: np.square(*a, out=out),
    "sqrt": lambda a, out: np.sqrt(*a, out=out),
    "rsqrt": lambda a, out: np.divide(1, np.sqrt(a[0], out=out), out=out),
    "relu": lambda a, out: np.maximum(a[0], 0, out=out),
    "tanh": lambda a, out: np.tanh(*a, out=out),
    "exp": lambda a, out: np.exp(*a, out=out),
    "sigmoid": lambda a, out: expit(*a, out=out),
    "log": lambda a, out: np.log(*a, out=out),
    "erf": lambda a, out: erf(*a, out=out),
    "gelu": lambda a, out: np.multiply(
        np.multiply(a[0], 0.5), np.add(erf(np.multiply(a[0], SQRT_HALF)), 1), out=out
    ),
    "greater": lambda a, out: np.greater(*a, out=out),
    "greater_equal": lambda a, out: np.greater_equal(*a, out=out),
    "less": lambda a, out: np.less(*a, out=out),
    "less_equal": lambda a, out: np.less_equal(*a, out=out),
    "equal": lambda a, out: np.equal(*a, out=out),
    "not_equal": lambda a, out: np.not_equal(*a, out=out),
    "where": lambda a, out: np.copyto(out, np.where(*a)),
    "cast": lambda a, out: np.copyto(out, a[0], casting="unsafe"),
}
#: Input values each op is measured on (in its domain, no special values).
POSITIVE = ("sqrt", "rsqrt", "log", "pow")


def operands(name: str, shapes: list[tuple[int, ...]], dtype: np.dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    values = []
    for k, shape in enumerate(shapes):
        if name == "where" and k == 0:
            values.append(rng.random(shape) < 0.5)
        elif name in POSITIVE:
            values.append(rng.uniform(0.1, 3.0, shape).astype(dtype))
        else:
            values.append((rng.standard_normal(shape) * 2).astype(dtype))
    return values


def one_op_session(name: str, values: list[np.ndarray], out_dtype: object) -> tuple:
    """(session, fetch) of a graph of the one op on constants."""
    graph = pg.Graph(name)
    with graph.as_default():
        inputs = [pg.constant(v) for v in values]
        out = pg.cast(inputs[0], out_dtype) if name == "cast" else getattr(pg, name)(*inputs)
    session = pg.Session(graph, pg.Config(inter_op_threads=1, intra_op_threads=1))
    return session, out


def op_cases(name: str, shapes: list[tuple[int, ...]], dtype: np.dtype) -> dict:
    """name -> callable: the kernel on all rows, the op through a session, NumPy."""
    values = operands(name, shapes, dtype)
    out_dtype = np.float64 if name == "cast" else None
    session, fetch = one_op_session(name, values, out_dtype)
    op = fetch.op
    definition = opdef(op.type)
    call = definition.whole(op)
    out = np.empty(op.shape, op.dtype)
    numpy = NUMPY.get(name)
    cases = {
        "kernel": lambda: call(values),
        "session": lambda: session.run(fetch),
        "NumPy": (lambda: numpy(values, out)) if numpy else (lambda: entry_reference(op, values)),
    }
    return cases, session


def entry_reference(op, values):
    return opdef(op.type).entry.reference(*values)


def composite_cases(rows: int, columns: int, dtype: np.dtype) -> dict:
    """softmax and layer_norm as graphs (unfused, fused) against NumPy's same arithmetic."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((rows, columns)) * 3).astype(dtype)
    gamma, beta = (rng.standard_normal(columns).astype(dtype) for _ in range(2))
    graph = pg.Graph("composites")
    with graph.as_default():
        xs = pg.constant(x)
        softmax = pg.softmax(xs)
        norm = pg.layer_norm(xs, pg.constant(gamma), pg.constant(beta))
    sessions = {
        fuse: pg.Session(graph, pg.Config(inter_op_threads=1, intra_op_threads=1, fuse=fuse))
        for fuse in (False, True)
    }

    def numpy_softmax():
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def numpy_layer_norm():
        mean = x.mean(axis=-1, keepdims=True)
        centered = x - mean
        variance = np.square(centered).mean(axis=-1, keepdims=True)
        return centered / np.sqrt(variance + 1e-5) * gamma + beta

    cases = {
        "softmax": {
            "session": lambda: sessions[False].run(softmax),
            "fused": lambda: sessions[True].run(softmax),
            "NumPy": numpy_softmax,
        },
        "layer_norm": {
            "session": lambda: sessions[False].run(norm),
            "fused": lambda: sessions[True].run(norm),
            "NumPy": numpy_layer_norm,
        },
    }
    return cases, list(sessions.values())


def measure(label: str, size: str, dtype: str, cases: dict, count: int, repeats: int) -> list:
    times = warm_rounds(cases, repeats)
    base = median(times["NumPy"])
    row = [size, dtype, label]
    for name in ("kernel", "session", "fused"):
        if name in cases:
            row.append(f"{median(times[name]) / count * 1e9:.3f} ({spread(times[name])})")
        else:
            row.append("-")
    row.append(f"{base / count * 1e9:.3f} ({spread(times['NumPy'])})")
    best = min(median(times[n]) for n in ("kernel", "fused", "session") if n in cases)
    row.append(f"{best / base:.2f}")
    return row


BROADCASTS = {
    "add bias [n]": ("add", lambda r, c: [(r, c), (c,)]),
    "subtract column [r, 1]": ("subtract", lambda r, c: [(r, c), (r, 1)]),
    "multiply scalar": ("multiply", lambda r, c: [(r, c), ()]),
    "add outer [r, 1] + [1, n]": ("add", lambda r, c: [(r, 1), (1, c)]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--ops", help="comma-separated op names (default: all)")
    args = parser.parse_args()
    pins = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    print(f"CPU: {simd_level()}; {os.cpu_count()} cores; NumPy {np.__version__}")
    print(f"OpenBLAS pins: {pins or 'none'}; load average before: {os.getloadavg()[0]:.2f}")
    chosen = args.ops.split(",") if args.ops else list(TABLE)
    rows = []
    with threadpool_limits(1):
        for r, c in SIZES:
            size = f"{r}x{c}"
            for dtype in ("float32", "float64"):
                for name in chosen:
                    entry = TABLE[name]
                    if "float" not in entry.kinds:
                        continue
                    shapes = [(r, c)] * entry.arity
                    cases, session = op_cases(name, shapes, np.dtype(dtype))
                    with session:
                        rows.append(measure(name, size, dtype, cases, r * c, args.repeats))
                if args.ops:
                    continue
                for label, (name, shapes_of) in BROADCASTS.items():
                    cases, session = op_cases(name, shapes_of(r, c), np.dtype(dtype))
                    with session:
                        rows.append(measure(label, size, dtype, cases, r * c, args.repeats))
                composites, sessions = composite_cases(r, c, np.dtype(dtype))
                for label, cases in composites.items():
                    rows.append(measure(label, size, dtype, cases, r * c, args.repeats))
                for session in sessions:
                    session.close()
    header = ["size", "dtype", "op", "kernel ns/el", "session", "fused", "NumPy", "best/NumPy"]
    print(f"one thread; ns per output element, medians of {args.repeats} rounds (IQR)")
    print(table(header, rows))
    print("best/NumPy: parallelgraph's best column over NumPy's time; below 1 is faster")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
