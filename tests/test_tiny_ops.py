"""The tiny-op fast path: one-shard steps computed in one call (`OpDef.whole`), and
chains that run on one thread whatever `inter_op_threads` says.

The fast path must give exactly the bits of prepare / compute / finish, for every op that
offers it, on every shape the builders accept: same shape, bias over the last axis, scalars on
either side, 0-d, 1-D, 3-D, and empty dimensions; NaN, infinities and signed zeros included.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.config import Config
from parallelgraph.ops import REGISTRY, OpDef, opdef
from parallelgraph.ops.elementwise_op import ElementwiseOp

WHOLE_OPS = sorted(  # the elementwise ones of one or two float inputs; reductions: at the end
    name
    for name, definition in REGISTRY.items()
    if type(definition).whole is not OpDef.whole
    and isinstance(definition, ElementwiseOp)
    and definition.entry.arity <= 2
    and definition.entry.result != "cast"
    and "float" in definition.entry.kinds
)

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
    ((7, 1), (1, 5)),
    ((2, 1, 4), (3, 4)),
    ((2, 3, 1), (2, 1, 4)),
]


def _value(shape, dtype, rng):
    values = rng.standard_normal(shape) * 10.0
    flat = values.reshape(-1)
    flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return np.asarray(values, dtype=dtype)


def _slow_path(definition, op, args, config=None):
    """prepare, compute (all rows as shard 0) and finish: what the kernels do for any shard."""
    work = definition.prepare(op, args, 1, config or Config())
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
    unary = definition.entry.arity == 1
    shapes = shapes[:1] if unary else shapes
    op = _op(op_type, shapes, dtype)
    rng = np.random.default_rng(len(str(shapes)))
    args = [_value(shape, dtype, rng) for shape in shapes]
    before = [arg.copy() for arg in args]

    with np.errstate(all="ignore"):  # as the scheduler runs it
        whole = definition.whole(op)(args)
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
    assert set(WHOLE_OPS) >= {"add", "multiply", "relu", "tanh", "exp", "sigmoid"}


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
        a = pg.constant(np.ones((256, 256), np.float32))  # expensive enough to share out
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


def _unusual_layouts(value):
    """The same 2-D values in layouts Numba types differently: Fortran order, a strided slice,
    read-only, unaligned."""
    fortran = np.asfortranarray(value)
    wide = np.empty((value.shape[0], value.shape[1] * 2), value.dtype)
    wide[:, ::2] = value
    read_only = value.copy()
    read_only.flags.writeable = False
    raw = np.zeros(value.nbytes + 1, np.uint8)[1:]
    unaligned = raw.view(value.dtype).reshape(value.shape)
    unaligned[...] = value
    return {
        "fortran": fortran,
        "strided": wide[:, ::2],
        "read-only": read_only,
        "unaligned": unaligned,
    }


@pytest.mark.parametrize("op_type", WHOLE_OPS)
def test_the_fast_path_takes_2d_operands_in_any_layout(op_type):
    definition = opdef(op_type)
    unary = definition.entry.arity == 1
    shapes = [(3, 4)] if unary else [(3, 4), (3, 4)]
    op = _op(op_type, shapes, "float32")
    rng = np.random.default_rng(7)
    args = [_value(shape, "float32", rng) for shape in shapes]
    expected = _slow_path(definition, op, args)
    for name, unusual in _unusual_layouts(args[0]).items():
        mixed = [unusual, *args[1:]]
        with np.errstate(all="ignore"):
            value = definition.whole(op)(mixed)
        assert value.tobytes() == expected.tobytes(), name


@pytest.mark.parametrize("seed", range(4))
def test_one_worker_runs_the_serial_order_and_frees_each_value_after_its_last_reader(seed):
    preset = pg.presets.random_dag("tiny", seed=seed)
    with pg.Session(preset.graph, Config(inter_op_threads=1)) as session:
        plan = session.plan_for(preset.fetch)
        _, trace = session.run(preset.fetch, trace=True)
    order = plan.serial_order
    assert sorted(order) == list(range(len(plan.steps)))
    position = {index: k for k, index in enumerate(order)}
    for step in plan.steps:  # a topological order
        assert all(position[consumer] > position[step.index] for consumer in step.consumers)
    ran = [event.name for event in sorted(trace.ops(), key=lambda e: e.start)]
    assert ran == [plan.steps[index].op.name for index in order]

    freed = [slot for frees in plan.serial_frees for slot in frees]
    read = {slot for step in plan.steps for slot in step.input_slots}
    assert sorted(freed) == sorted(read - plan.kept_slots)  # each once, none kept
    for k, frees in enumerate(plan.serial_frees):
        for slot in frees:  # read at position k, never after
            readers = [position[s.index] for s in plan.steps if slot in s.input_slots]
            assert max(readers) == k


@pytest.mark.parametrize("inter", [1, 2])
def test_overflow_in_a_run_says_nothing_as_the_kernels_never_do(inter):
    graph = pg.Graph("overflow")
    with graph.as_default():
        big = pg.constant(np.full((2, 3), 3e38, np.float32))
        products = [pg.multiply(big, big), pg.add(big, big), pg.multiply(big * big, 0.0)]
        total = pg.add_n([pg.tanh(p) for p in products])
    with pg.Session(graph, Config(executor="sequential")) as session:
        reference = session.run(total)
    with pg.Session(graph, Config(inter_op_threads=inter)) as session:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = session.run(total)
    assert value.tobytes() == reference.tobytes()
    assert np.isnan(value).all()  # tanh(inf) + tanh(inf) + tanh(inf * 0 = nan)


def _fan_in(shape, leaves=16):
    graph = pg.Graph("fan-in")
    with graph.as_default():
        level = [pg.tanh(pg.constant(np.full(shape, k, np.float32))) for k in range(leaves)]
        while len(level) > 1:
            level = [pg.add(a, b) for a, b in zip(level[::2], level[1::2])]
    return graph, level[0]


def test_inexpensive_ops_run_on_the_thread_that_made_them_ready():
    graph, total = _fan_in((2, 2))
    with pg.Session(graph, Config(executor="sequential")) as session:
        reference = session.run(total)
    with pg.Session(graph, Config(inter_op_threads=4)) as session:
        plan = session.plan_for(total)
        assert not any(plan.expensive) and plan.useful_workers(4) == 1
        value, trace = session.run(total, trace=True)
    assert value.tobytes() == reference.tobytes()
    assert {event.lane for event in trace.events} == {"inter-op/0"}


def test_expensive_ops_still_get_every_worker_they_can_use():
    graph, total = _fan_in((256, 512))
    with pg.Session(graph, Config(inter_op_threads=4)) as session:
        plan = session.plan_for(total)
        tanh_steps = [step.index for step in plan.steps if step.op.type == "tanh"]
        assert all(plan.expensive[index] for index in tanh_steps)
        assert plan.useful_workers(4) == 4


def _mixed_dag(seed, ops=60):
    """A random DAG whose ops are tiny (inexpensive: run inline) or big enough to wake other
    workers, so one run mixes every path of the scheduler: the lone loop never, the shared loop
    with releases that wake workers and releases that do not."""
    rng = np.random.default_rng(seed)
    graph = pg.Graph(f"mixed-{seed}")
    with graph.as_default():
        pools = {
            shape: [pg.constant(rng.standard_normal(shape).astype(np.float32))]
            for shape in ((1, 3), (400, 400))
        }
        for _ in range(ops):
            shape = (1, 3) if rng.random() < 0.7 else (400, 400)
            pool = pools[shape]
            a = pool[rng.integers(len(pool))]
            kind = rng.integers(4)
            if kind == 0:
                pool.append(pg.tanh(a))
            elif kind == 1:
                pool.append(pg.relu(a) * 0.5)
            else:
                pool.append(a + pool[rng.integers(len(pool))])
        total = pg.reduce_sum(pools[(1, 3)][-1]) + pg.reduce_sum(pools[(400, 400)][-1])
    return graph, total


@pytest.mark.parametrize("seed", range(3))
def test_mixed_tiny_and_big_ops_from_two_sessions_at_once_keep_the_reference_bits(seed):
    graph, total = _mixed_dag(seed)
    with pg.Session(graph, Config(executor="sequential")) as session:
        reference = session.run(total)
    results, errors = [], []

    def runs(inter):
        try:
            with pg.Session(graph, Config(inter_op_threads=inter, intra_op_threads=2)) as sess:
                plan = sess.plan_for(total)
                assert any(plan.expensive) and not all(plan.expensive)
                results.extend(sess.run(total) for _ in range(15))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=runs, args=(inter,)) for inter in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a run hung"
    assert not errors, errors
    assert len(results) == 30
    assert all(value.tobytes() == reference.tobytes() for value in results)


def _holds_blas(monkeypatch, graph, fetch, config) -> bool:
    """Whether a run of `fetch` held the process-wide BLAS limit (and released it)."""
    from parallelgraph.executors import blas_threads

    calls = []
    limit = blas_threads.BLAS_LIMIT
    for name in ("hold", "release"):
        real = getattr(limit, name)
        monkeypatch.setattr(
            limit, name, lambda owner, real=real, name=name: (calls.append(name), real(owner))
        )
    with pg.Session(graph, config) as session:
        session.run(fetch)
    monkeypatch.undo()
    assert calls in ([], ["hold", "release"]), calls
    return bool(calls)


def test_only_runs_that_may_call_blas_hold_its_thread_limit(monkeypatch):
    """Holding BLAS to one thread and restoring it costs a run a few us (more after a kernel
    has pushed the Python code out of the caches), so a plan of Numba kernels only skips it; a
    BLAS matmul, fused or not, and an op type that does not say (a user's: it may call NumPy's
    matmul) keep it."""
    from helpers import failing

    graph = pg.Graph("blas or not")
    with graph.as_default():
        x = pg.constant(np.ones((4, 4), np.float32))
        numba_only = pg.reduce_sum(pg.sigmoid(x * 2.0) + pg.random_normal((4, 4), seed=1))
        product = pg.relu(pg.matmul(x, x) + pg.constant(np.ones(4, np.float32)))
        unknown = failing(x, fail=False)
    plain = Config(inter_op_threads=2, intra_op_threads=2)
    assert not _holds_blas(monkeypatch, graph, numba_only, plain)
    assert _holds_blas(monkeypatch, graph, product, plain)
    assert _holds_blas(monkeypatch, graph, product, Config(fuse=True))
    assert not _holds_blas(monkeypatch, graph, product, Config(matmul_kernel="numba"))
    assert _holds_blas(monkeypatch, graph, unknown, plain)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op_type", ["reduce_sum", "reduce_mean"])
@pytest.mark.parametrize(
    "shape, axis",
    [((7, 5), None), ((7, 5), 0), ((7, 5), 1), ((2, 3, 4), 1), ((0, 5), 1), ((4, 0), 0),
     ((1, 1), None), ((3, 70), -1), ((0,), None)],
)  # fmt: skip
def test_a_one_shard_reduction_gives_the_bits_of_the_sharded_path(op_type, shape, axis, dtype):
    """reduce_sum and reduce_mean have the one-call path too: the same bits as prepare,
    compute and finish, NaN and infinities included."""
    graph = pg.Graph("tiny reduce")
    with graph.as_default():
        op = getattr(pg, op_type)(pg.placeholder(shape, dtype), axis=axis).op
    definition = opdef(op_type)
    args = [_value(shape, dtype, np.random.default_rng(3))]
    with np.errstate(all="ignore"):
        whole = definition.whole(op)(args)
        expected = _slow_path(definition, op, args)
    assert whole.shape == op.shape == expected.shape and whole.dtype == op.dtype
    assert whole.tobytes() == expected.tobytes()
    assert not np.shares_memory(whole, args[0])
    if len(shape) == 2 and 0 not in shape:
        for name, unusual in _unusual_layouts(args[0]).items():
            assert definition.whole(op)([unusual]).tobytes() == expected.tobytes(), name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kernel", ["blas", "numba"])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (7, 5, 3), (64, 33, 17), (0, 4, 3), (3, 0, 2)])
def test_a_one_shard_matmul_gives_the_bits_of_the_sharded_path(m, k, n, kernel, dtype):
    """matmul has the one-call path: the kernel `Config.matmul_kernel` names, on all rows of a
    fresh output, as prepare / compute / finish call it; operands in any layout."""
    graph = pg.Graph("tiny matmul")
    with graph.as_default():
        op = pg.matmul(pg.placeholder((m, k), dtype), pg.placeholder((k, n), dtype)).op
    definition, config = opdef("matmul"), Config(matmul_kernel=kernel)
    rng = np.random.default_rng(m * 100 + k)
    args = [_value((m, k), dtype, rng), _value((k, n), dtype, rng)]
    before = [arg.tobytes() for arg in args]
    with np.errstate(all="ignore"):
        whole = definition.whole(op, config)(args)
        expected = _slow_path(definition, op, args, config)
    assert whole.shape == (m, n) and whole.dtype == op.dtype and whole.flags.c_contiguous
    assert whole.tobytes() == expected.tobytes()
    assert [arg.tobytes() for arg in args] == before
    if m and k:
        for name, unusual in _unusual_layouts(args[0]).items():
            with np.errstate(all="ignore"):
                again = definition.whole(op, config)([unusual, args[1]])
            assert again.tobytes() == expected.tobytes(), name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (7, 5), (2, 3, 4), (0, 5), ()], ids=str)
def test_a_one_shard_random_normal_gives_the_bits_of_the_sharded_path(shape, dtype):
    graph = pg.Graph("tiny normal")
    with graph.as_default():
        op = pg.random_normal(shape, mean=0.5, stddev=2.0, seed=7, dtype=dtype).op
    definition = opdef("random_normal")
    whole = definition.whole(op, Config())([])
    assert whole.shape == op.shape and whole.dtype == op.dtype
    assert whole.tobytes() == _slow_path(definition, op, []).tobytes()


def test_one_shard_matmuls_and_random_normals_run_through_the_one_call_path():
    graph = pg.Graph("small seed")
    with graph.as_default():
        x = pg.random_normal((64, 32), seed=1)
        product = pg.matmul(x, pg.constant(np.ones((32, 16), np.float32)))
    with pg.Session(graph, Config(inter_op_threads=1)) as session:
        steps = session.plan_for(product).steps
        assert all(step.whole is not None for step in steps if len(step.shards) == 1)
        assert {step.op.type for step in steps if step.whole} >= {"matmul", "random_normal"}
        value = session.run(product)
    with pg.Session(graph, Config(executor="sequential")) as reference:
        assert value.tobytes() == reference.run(product).tobytes()


@pytest.mark.parametrize("inter, intra", [(1, 1), (1, 2), (4, 1)])
def test_a_lone_worker_calls_one_shard_steps_itself_unless_traced(monkeypatch, inter, intra):
    """Untraced, on one worker, a one-shard step's `whole` is called by the loop itself (two
    Python calls an op fewer: `Run.direct`); a traced run goes through `execute_step`, which
    records each op. Both give the reference's bits."""
    from parallelgraph.executors import cpu

    graph, x = _chain(60)
    with pg.Session(graph, Config(executor="sequential")) as reference_session:
        reference = reference_session.run(x)
    calls = []
    real = cpu.execute_step
    monkeypatch.setattr(cpu, "execute_step", lambda *args: (calls.append(1), real(*args))[1])
    with pg.Session(graph, Config(inter_op_threads=inter, intra_op_threads=intra)) as session:
        assert session.run(x).tobytes() == reference.tobytes()
        assert calls == []
        value, trace = session.run(x, trace=True)
    assert value.tobytes() == reference.tobytes()
    assert len(calls) == len(trace.ops()) > 60  # every op recorded, constants too
