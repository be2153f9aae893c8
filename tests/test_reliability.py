"""Reliability: random DAGs on random configs, faults, interrupts, concurrency, leaks and soak.

Every test that runs threads carries a timeout, so a deadlock fails instead of hanging.
"""

import _thread
import gc
import threading
import time

import numpy as np
import pytest
from helpers import FailingOp, failing, matmul_tanh_chain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parallelgraph as pg
from parallelgraph import plan as plan_module
from parallelgraph.ops.math import MatMul

UNARY = ("relu", "tanh", "exp", "sigmoid")


def random_dag(draw, max_ops=60):
    """A random DAG of every op kind on tensors of a few compatible shapes."""
    dtype = draw(st.sampled_from(["float32", "float64"]))
    rows, cols = draw(st.integers(1, 24)), draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32))
    rng = np.random.default_rng(seed)
    g = pg.Graph("random")
    with g.as_default():
        matrices = [pg.random_normal((rows, cols), seed=int(rng.integers(1 << 30)), dtype=dtype)]
        matrices.append(pg.constant(rng.standard_normal((rows, cols)).astype(dtype)))
        vectors = [pg.variable((cols,), name="bias", dtype=dtype)]
        square = pg.variable((cols, cols), name="w", dtype=dtype)
        for index in range(draw(st.integers(1, max_ops))):
            kind = draw(
                st.sampled_from(
                    ["matmul", "add", "multiply", "bias", "unary", "add_n", "sum", "mean"]
                )
            )
            pick = lambda: matrices[int(rng.integers(len(matrices)))]  # noqa: E731
            with pg.scope(f"s{index % 5}"):
                if kind == "matmul":
                    matrices.append(pg.matmul(pick(), square))
                elif kind in ("add", "multiply"):
                    matrices.append(getattr(pg, kind)(pick(), pick()))
                elif kind == "bias":
                    matrices.append(pick() + vectors[int(rng.integers(len(vectors)))])
                elif kind == "unary":
                    matrices.append(getattr(pg, UNARY[int(rng.integers(len(UNARY)))])(pick()))
                elif kind == "add_n":
                    matrices.append(pg.add_n([pick() for _ in range(int(rng.integers(1, 4)))]))
                else:
                    reduce = pg.reduce_sum if kind == "sum" else pg.reduce_mean
                    vectors.append(reduce(pick(), axis=0))
    fetches = matrices[-3:] + vectors[-2:]
    return g, fetches


@st.composite
def dags(draw):
    return random_dag(draw)


def run(graph, fetches, config):
    with pg.Session(graph, config) as sess:
        return sess.run(fetches)


@pytest.mark.timeout(240)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dag=dags(),
    inter=st.integers(1, 4),
    intra=st.integers(1, 4),
    shard_all=st.booleans(),
    kernel=st.sampled_from(["blas", "numba"]),
    fuse=st.booleans(),
)
def test_random_dags_match_the_sequential_reference_bit_for_bit(
    dag, inter, intra, shard_all, kernel, fuse
):
    graph, fetches = dag
    saved = plan_module.MIN_SHARD_NS, MatMul.min_shard_rows, plan_module.inexpensive_ns
    if shard_all:  # force every op with rows to be split, however small, and (fused, at
        # inter-op >= 2 and intra-op 1) every group into its branches
        plan_module.MIN_SHARD_NS, MatMul.min_shard_rows = 1, 1
        plan_module.inexpensive_ns = lambda: 0
    try:
        expected = run(graph, fetches, pg.Config(executor="sequential", matmul_kernel=kernel))
        actual = run(
            graph,
            fetches,
            pg.Config(
                inter_op_threads=inter, intra_op_threads=intra, matmul_kernel=kernel, fuse=fuse
            ),
        )
    finally:
        plan_module.MIN_SHARD_NS, MatMul.min_shard_rows, plan_module.inexpensive_ns = saved
    for want, got in zip(expected, actual):
        assert want.tobytes() == got.tobytes()


@pytest.mark.timeout(240)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dag=st.composite(lambda draw: random_dag(draw, max_ops=8))(),
    policy=st.sampled_from(["single", "branches", "round_robin"]),
    streams=st.integers(1, 3),
)
def test_random_dags_on_simulated_gpu_streams_match_within_tolerance(dag, policy, streams):
    graph, fetches = dag
    for op in graph.ops:  # the same graph, every op placed on the GPU
        object.__setattr__(op, "device", "gpu:0")
    expected = run(graph, fetches, pg.Config(executor="sequential"))
    actual = run(graph, fetches, pg.Config(streams=streams, stream_policy=policy))
    for want, got in zip(expected, actual):
        tolerance = 1e-4 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.timeout(120)
@settings(max_examples=10, deadline=None)
@given(data=st.data(), inter=st.integers(1, 3), intra=st.integers(1, 3))
def test_a_failing_op_anywhere_names_itself_and_the_session_recovers(data, inter, intra):
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    length = data.draw(st.integers(2, 15))
    where = data.draw(st.integers(0, length - 1))
    g = pg.Graph("faulty")
    with g.as_default():
        x = pg.random_normal((16, 8), seed=1)
        for index in range(length):
            if index == where:
                x = failing(x, fail="once", name="boom")
                after = failing(x, fail=False, name="after")
                x = after
            x = pg.tanh(x) if rng.integers(2) else x * 0.5
        out = x
    FailingOp.calls.clear()
    before = threading.active_count()
    with pg.Session(g, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as sess:
        with pytest.raises(pg.OpError, match="'boom'"):
            sess.run(out)
        assert "after" not in FailingOp.calls  # nothing that depends on it ran
        recovered = sess.run(out)
    with pg.Session(g, pg.Config(executor="sequential")) as reference:
        assert np.array_equal(recovered, reference.run(out))
    assert threading.active_count() == before


def long_graph():
    return matmul_tanh_chain("long", rows=256, width=256, layers=400)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("inter, intra", [(1, 1), (2, 2)])
def test_keyboard_interrupt_stops_a_run_quickly_and_leaves_the_session_usable(inter, intra):
    """Ctrl-C lands while runs are in flight: the runs repeat until it does (a run timed before
    can come out faster than the delay, and a late interrupt would then hit the test runner),
    and the stop is measured from the moment the interrupt was sent."""
    g, out = long_graph()
    before = threading.active_count()
    with pg.Session(g, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as sess:
        sess.run(out)
        sent: list[float] = []

        def interrupt() -> None:
            sent.append(time.perf_counter())
            _thread.interrupt_main()

        timer = threading.Timer(0.2, interrupt)
        deadline = time.perf_counter() + 30
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            while time.perf_counter() < deadline:
                sess.run(out)
        stopped = time.perf_counter()
        timer.join()
        assert sent and stopped - sent[0] < 1.0
        assert sess.run(out).shape == (256, 256)
    assert threading.active_count() == before


@pytest.mark.timeout(60)
def test_concurrent_runs_from_several_threads_are_serialized_and_correct():
    g, out = long_graph()
    with pg.Session(g, pg.Config(inter_op_threads=2)) as sess:
        expected = sess.run(out)
        results, errors = [], []

        def worker():
            try:
                results.append(sess.run(out))
            except Exception as error:  # noqa: BLE001
                errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors and len(results) == 4
    assert all(np.array_equal(r, expected) for r in results)


def resident_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096 / 2**20


@pytest.mark.timeout(240)
def test_500_sessions_keep_threads_flat_and_memory_bounded():
    g = pg.Graph("soak")
    with g.as_default():
        out = pg.reduce_sum(pg.tanh(pg.random_normal((32, 32), seed=1)) @ pg.variable((32, 8)))
    before_threads = threading.active_count()
    for _ in range(20):  # warm up allocators and caches
        with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=2)) as sess:
            sess.run(out, trace=True)
    gc.collect()
    before_memory = resident_mb()
    for _ in range(500):
        with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=2)) as sess:
            sess.run(out, trace=True)
    gc.collect()
    assert threading.active_count() == before_threads
    assert resident_mb() - before_memory < 50


@pytest.mark.timeout(240)
def test_10000_runs_on_two_inter_op_threads_never_fail_or_grow():
    g = pg.Graph("many-runs")
    with g.as_default():
        a = pg.tanh(pg.random_normal((8, 8), seed=1))
        b = pg.relu(pg.random_normal((8, 8), seed=2))
        out = a + b
    with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=1)) as sess:
        expected = sess.run(out)
        threads = threading.active_count()
        for _ in range(200):
            sess.run(out)
        gc.collect()
        memory = resident_mb()
        for _ in range(10_000):
            assert np.array_equal(sess.run(out), expected)
        gc.collect()
        assert threading.active_count() == threads
        assert resident_mb() - memory < 20
