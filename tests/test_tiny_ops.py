"""The tiny-op fast path: one-shard steps computed in one call (`OpDef.compute_whole`), and
chains that run on one thread whatever `inter_op_threads` says.

The fast path must give exactly the bits of prepare / compute / finish, for every op that
offers it, on every shape the builders accept: same shape, bias over the last axis, scalars on
either side, 0-d, 1-D, 3-D, and empty dimensions; NaN, infinities and signed zeros included.
"""

from __future__ import annotations

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.config import Config
from parallelgraph.ops import REGISTRY, opdef

WHOLE_OPS = sorted(name for name, definition in REGISTRY.items() if definition.computes_whole)

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38, 1.0])

# (shape of a, shape of b) the builders accept for binary ops; unary ops use the first shape
SHAPES = [
    ((1, 1), (1, 1)),
    ((7, 5), (7, 5)),
    ((7, 5), (5,)),
    ((5,), (7, 5)),
    ((7, 5), ()),
    ((), (7, 5)),
    ((), ()),
    ((9,), (9,)),
    ((2, 3, 4), (4,)),
    ((0, 5), (0, 5)),
    ((0, 5), (5,)),
    ((4, 0), ()),
    ((0,), (0,)),
]


def _value(shape, dtype, rng):
    values = rng.standard_normal(shape) * 10.0
    flat = values.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return np.asarray(values, dtype=dtype)


def _slow_path(definition, op, args):
    """prepare, compute (all rows as shard 0) and finish: what the kernels do for any shard."""
    work = definition.prepare(op, args, 1, Config())
    definition.compute(op, work, 0, 0, definition.rows(op))
    return definition.finish(op, work)


def _op(op_type, shapes, dtype):
    graph = pg.Graph("tiny")
    with graph.as_default():
        inputs = [pg.placeholder(shape, dtype) for shape in shapes]
        tensor = getattr(pg, op_type)(*inputs)
    return tensor.op


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op_type", WHOLE_OPS)
def test_whole_op_gives_the_bits_of_the_sharded_path(op_type, shapes, dtype):
    definition = opdef(op_type)
    unary = op_type in ("relu", "tanh")
    shapes = shapes[:1] if unary else shapes
    op = _op(op_type, shapes, dtype)
    rng = np.random.default_rng(len(str(shapes)))
    args = [_value(shape, dtype, rng) for shape in shapes]
    before = [arg.copy() for arg in args]

    whole = definition.compute_whole(op, args)
    expected = _slow_path(definition, op, args)

    assert isinstance(whole, np.ndarray)
    assert whole.shape == op.shape == expected.shape
    assert whole.dtype == op.dtype
    assert whole.tobytes() == expected.tobytes()  # bits: NaN payloads and -0.0 included
    assert whole.flags.writeable and whole.flags.c_contiguous
    assert not any(np.shares_memory(whole, arg) for arg in args)
    for arg, copy in zip(args, before):
        assert arg.tobytes() == copy.tobytes()


def test_every_elementwise_op_offers_the_fast_path():
    assert set(WHOLE_OPS) >= {"add", "multiply", "relu", "tanh"}


def _chain(length):
    graph = pg.Graph("chain")
    with graph.as_default():
        x = pg.constant(np.full((1, 1), 0.5, np.float32))
        for index in range(length):
            x = pg.tanh(x) if index % 3 == 0 else pg.relu(x + 0.25) * 0.75
    return graph, x


@pytest.mark.parametrize("inter", [1, 2, 4])
def test_a_chain_runs_on_one_thread_with_the_reference_bits(inter):
    graph, x = _chain(300)
    with pg.Session(graph, Config(executor="sequential")) as reference_session:
        reference = reference_session.run(x)
    with pg.Session(graph, Config(inter_op_threads=inter, intra_op_threads=1)) as session:
        plan = session.plan_for(x)
        assert plan.useful_workers(inter) == 1
        value, trace = session.run(x, trace=True)
    assert value.tobytes() == reference.tobytes()
    assert {event.lane for event in trace.events} == {"inter-op/0"}


def test_max_concurrent_steps_bounds_what_ever_runs_at_once():
    graph = pg.Graph("shapes")
    with graph.as_default():
        a = pg.constant(np.ones((2, 2), np.float32))
        chain_one = pg.tanh(pg.tanh(a))
        chain_two = pg.relu(pg.relu(a))
        joined = pg.add(chain_one, chain_two)
        fan = [pg.tanh(joined) for _ in range(5)]
        total = pg.add_n(fan)
    with pg.Session(graph, Config(inter_op_threads=8)) as session:
        assert session.plan_for(chain_one).max_concurrent_steps == 1
        assert session.plan_for(joined).max_concurrent_steps == 2
        plan = session.plan_for(total)
        assert plan.max_concurrent_steps == 2 + 4  # two chains, then a fan-out of five
        assert plan.useful_workers(8) == 6
        assert plan.useful_workers(3) == 3
