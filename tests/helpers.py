"""Helpers shared by the tests: the seed graph at small sizes, a fault-injection op, a busy
neighbour process, and values and a bit-for-bit check for the ops that only move values."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

import parallelgraph as pg
from parallelgraph.ops.builder import build
from parallelgraph.ops.registry import REGISTRY, OpDef, register


def random_values(rng, shape, dtype):
    """Random values of `dtype`; floats with NaN, infinities and -0.0 among them."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
    mask = rng.random(shape) < 0.15
    x[mask] = rng.choice(specials, int(mask.sum()))
    return x


def same_bits(got, want, what) -> None:
    """`got` has `want`'s shape, dtype and bytes (`what` names the case when it does not)."""
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), what


def seed_graph(batch=8, n_in=12, n_hidden=10, n_out=6, dtype="float32", device=None):
    """The seed example, line for line (with small sizes)."""
    g = pg.Graph("seed")
    with g.as_default(), pg.device(device):
        with pg.scope("net1"):
            x = pg.random_normal((batch, n_in), seed=1, dtype=dtype)
            w1 = pg.variable((n_in, n_hidden), name="w1", dtype=dtype)
            b1 = pg.variable((n_hidden,), name="b1", dtype=dtype)
            w2 = pg.variable((n_hidden, n_out), name="w2", dtype=dtype)
            r1 = pg.matmul(pg.matmul(x, w1) + b1, w2)
        with pg.scope("net2"):
            x = pg.random_normal((batch, n_in), seed=2, dtype=dtype)
            w1 = pg.variable((n_in, n_hidden), name="w1", dtype=dtype)
            b1 = pg.variable((n_hidden,), name="b1", dtype=dtype)
            w2 = pg.variable((n_hidden, n_out), name="w2", dtype=dtype)
            r2 = pg.matmul(pg.matmul(x, w1) + b1, w2)
        out = r1 + r2
    return g, out, (r1, r2)


if "test_failing" in REGISTRY:  # imported twice under different names
    del REGISTRY["test_failing"]


@register
class FailingOp(OpDef):
    """Test-only op: copies its input, or raises when built with fail=True (fault injection)."""

    type = "test_failing"
    default_name = "Failing"
    calls: list[str] = []

    def infer(self, inputs, attrs):
        return inputs[0].shape, inputs[0].dtype

    def prepare(self, op, args, num_shards, config):
        return args[0], np.empty(op.shape, op.dtype)

    def compute(self, op, work, shard, row_start, row_stop):
        FailingOp.calls.append(op.name)
        fail = op.attrs["fail"]
        if fail == "exit":  # kills the process running it: only ever run on a Dask worker
            import os

            os._exit(13)
        if fail is True or (fail == "once" and FailingOp.calls.count(op.name) == 1):
            raise ZeroDivisionError(f"injected failure in {op.name}")
        work[1][row_start:row_stop] = work[0][row_start:row_stop]

    def reference(self, op, args):
        return args[0]


def failing(x, fail=True, name=None):
    return build("test_failing", (x,), {"fail": fail}, name)


def matmul_tanh_chain(name: str, rows: int, width: int, layers: int):
    """`layers` dependent tanh(x @ w) layers on a (rows, width) random input: a chain whose
    matmuls keep a session busy (and OpenBLAS wanting its threads) for as long as wanted."""
    g = pg.Graph(name)
    with g.as_default():
        x = pg.random_normal((rows, width), seed=1)
        w = pg.variable((width, width), name="w")
        for _ in range(layers):
            x = pg.tanh(pg.matmul(x, w))
    return g, x


def assert_load_refused_in_one_line(path, message: str) -> None:
    """`pg.Trace.load(path)` raises a ValueError of one line that starts with the file's path
    and matches the regular expression `message`."""
    import re

    import pytest

    import parallelgraph as pg

    with pytest.raises(ValueError) as caught:
        pg.Trace.load(path)
    line = str(caught.value)
    assert line.startswith(f"{path}: ") and "\n" not in line, line
    assert re.search(message, line), line


BUSY_LOOP = [sys.executable, "-c", "while True: pass"]


@contextmanager
def neighbour() -> Iterator[subprocess.Popen]:
    """A process that keeps one core busy until the block ends (killed and waited for then)."""
    process = subprocess.Popen(BUSY_LOOP)
    try:
        time.sleep(0.15)  # past the interpreter's start-up, into the loop
        yield process
    finally:
        process.kill()
        process.wait()
