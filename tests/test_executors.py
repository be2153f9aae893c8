"""Every executor and thread setting gives outputs bit-identical to the sequential reference."""

import threading

import numpy as np
import pytest
from helpers import failing, seed_graph

import parallelgraph as pg
from parallelgraph.experiments.presets import build_preset

SETTINGS = [(inter, intra) for inter in (1, 2, 4) for intra in (1, 2, 4)]


def run_all(graph, fetch, configs):
    results = []
    for config in configs:
        with pg.Session(graph, config) as sess:
            results.append(sess.run(fetch))
    return results


def assert_bit_identical(reference, other):
    for expected, actual in zip(reference, other):
        assert expected.dtype == actual.dtype
        assert np.array_equal(expected, actual), "outputs differ from the sequential reference"
        assert expected.tobytes() == actual.tobytes()


@pytest.mark.parametrize("matmul_kernel", ["blas", "numba"])
def test_seed_graph_identical_across_inter_and_intra(many_shards, matmul_kernel):
    g, out, (r1, r2) = seed_graph(batch=40, n_in=24, n_hidden=36, n_out=20)
    fetch = [out, r1, r2]
    reference = pg.Session(g, pg.Config(executor="sequential", matmul_kernel=matmul_kernel))
    with reference:
        expected = reference.run(fetch)
        assert max(len(s.shards) for s in reference.plan_for(fetch).steps) > 1
    configs = [
        pg.Config(inter_op_threads=i, intra_op_threads=j, matmul_kernel=matmul_kernel)
        for i, j in SETTINGS
    ]
    for result in run_all(g, fetch, configs):
        assert_bit_identical(expected, result)


@pytest.mark.parametrize("preset", ["wide", "chain", "random"])
def test_presets_identical_across_settings(preset, many_shards):
    built = build_preset(preset, "tiny", dtype="float64")
    expected = run_all(built.graph, [built.fetch], [pg.Config(executor="sequential")])[0]
    configs = [pg.Config(inter_op_threads=i, intra_op_threads=j) for i, j in SETTINGS[1:]]
    for result in run_all(built.graph, [built.fetch], configs):
        assert_bit_identical(expected, result)


def test_repeated_runs_are_identical_and_variables_persist():
    g, out, _ = seed_graph()
    with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=2)) as sess:
        first = sess.run(out)
        for _ in range(20):
            assert np.array_equal(first, sess.run(out))
        w1 = g.tensor("net1/w1")
        assert np.array_equal(sess.run(w1), sess.run(w1))


def test_sequential_executor_uses_only_the_calling_thread():
    g, out, _ = seed_graph()
    before = threading.active_count()
    with pg.Session(g, pg.Config(executor="sequential", inter_op_threads=4)) as sess:
        assert threading.active_count() == before
        _, trace = sess.run(out, trace=True)
    assert trace.lanes == ["inter-op/0"]


def test_session_threads_match_config_and_are_released():
    g, out, _ = seed_graph()
    before = threading.active_count()
    sess = pg.Session(g, pg.Config(inter_op_threads=3, intra_op_threads=4))
    assert threading.active_count() == before + 2 + 3
    sess.run(out)
    sess.close()
    assert threading.active_count() == before
    sess.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(out)


def test_ops_overlap_with_two_inter_op_threads():
    """Two independent branches with enough work each overlap on two inter-op threads."""
    g = pg.Graph()
    with g.as_default():
        outs = []
        for name in ("net1", "net2"):
            with pg.scope(name):
                x = pg.random_normal((200, 400), seed=1)
                outs.append(pg.reduce_sum(pg.tanh(pg.tanh(pg.tanh(x)))))
        total = outs[0] + outs[1]
    with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=1)) as sess:
        sess.run(total)
        overlaps = [sess.run(total, trace=True)[1].overlap("net1", "net2") for _ in range(5)]
    with pg.Session(g, pg.Config(inter_op_threads=1, intra_op_threads=1)) as sess:
        _, serial = sess.run(total, trace=True)
    assert max(overlaps) > 0.5
    assert serial.overlap("net1", "net2") == 0.0


def test_the_pools_share_the_cores_an_op_offers_shards_only_to_free_ones():
    """Issue 24, item 3: with every core computing (two inter-op workers inside ops on two
    cores), an op's shards stay on its own thread; with a core free, a helper takes some. The
    shards and their order are the plan's either way, so outputs keep their bits."""
    import time

    from parallelgraph.executors.pools import CoreBudget, IntraOpPool, ShardJob

    budget = CoreBudget(2)
    pool = IntraOpPool(2, budget)
    try:

        def lanes_of_shards() -> set[str]:
            records: list[tuple] = []
            job = ShardJob(
                4, lambda shard: time.sleep(0.02), 0, records.append, time.perf_counter_ns
            )
            pool.run(job, "inter-op/0")
            return {record[2] for record in records}

        budget.enter()
        budget.enter()  # this op's worker and another worker, both computing: no core free
        assert budget.free() == 0 and lanes_of_shards() == {"inter-op/0"}
        budget.leave()  # the other op ended: one core free, the helper joins
        assert lanes_of_shards() == {"inter-op/0", "intra-op/0"}
        budget.leave()
        assert budget.busy == 0
    finally:
        pool.close()


def test_an_interrupted_op_returns_only_once_no_helper_computes_its_shards():
    """An interrupt in the op's own thread (here: while it waits for its shards) cancels the
    shards no one has started and waits for those a helper is computing. Before: the run
    returned at once, and the helper went on computing into the next run, with the run's BLAS
    limit already lifted."""
    import time

    from parallelgraph.executors.pools import CoreBudget, IntraOpPool, ShardJob

    helper_computes = threading.Event()
    started, ended = [], []

    def compute(shard: int) -> None:
        started.append(shard)
        helper_computes.set()
        time.sleep(0.2)
        ended.append(shard)

    class InterruptedWhileWaiting(ShardJob):
        def work(self, lane: str) -> None:
            if lane == "inter-op/0":  # leave every shard to the helper, then get interrupted
                helper_computes.wait(5)
                raise KeyboardInterrupt
            super().work(lane)

    pool = IntraOpPool(2, CoreBudget(2))
    try:
        job = InterruptedWhileWaiting(3, compute, 0, None, time.perf_counter_ns)
        with pytest.raises(KeyboardInterrupt):
            pool.run(job, "inter-op/0", 1)
        assert started == ended == [0]  # the shard it had started ended; no other started
        later = ShardJob(2, lambda shard: None, 1, None, time.perf_counter_ns)
        pool.run(later, "inter-op/0", 1)  # the pool still works
    finally:
        pool.close()


def test_two_by_two_keeps_the_bits_and_counts_its_threads_out():
    """The threads executor enters the budget for every CPU op and leaves it however the op
    ends: after runs (one failing) nothing is left counted as computing."""
    g, out, _ = seed_graph(batch=64, n_in=64, n_hidden=64, n_out=8)
    with g.as_default():
        broken = failing(out)
    with pg.Session(g, pg.Config(inter_op_threads=1, intra_op_threads=1)) as sequential:
        reference = sequential.run(out)
    with pg.Session(g, pg.Config(inter_op_threads=2, intra_op_threads=2)) as sess:
        for _ in range(5):
            assert np.array_equal(sess.run(out), reference)
        with pytest.raises(pg.OpError, match="Failing"):
            sess.run(broken)
        assert np.array_equal(sess.run(out), reference)
        assert sess._executor.budget.busy == sess._executor.budget.caller == 0


def test_ready_ops_claim_the_cores_that_idle_workers_will_take():
    """Two independent matmuls ready at once on inter-op 2: the first to start offers no shard
    to a helper, because the second worker takes the other one as soon as it wakes (three
    threads on two cores otherwise); the second, with nothing left ready, may offer one.
    Deterministic: only lane 0 works, so the second worker is idle throughout."""
    from parallelgraph.executors.pools import CoreBudget
    from parallelgraph.executors.scheduler import Run

    graph = pg.Graph("two ready matmuls")
    with graph.as_default():
        a = pg.constant(np.ones((256, 256), np.float32))
        out = pg.add(pg.matmul(a, a, name="first"), pg.matmul(a, a, name="second"), name="out")
    with pg.Session(graph, pg.Config(inter_op_threads=2, intra_op_threads=2)) as session:
        plan = session.plan_for(out)
    assert sum(plan.expensive) >= 2
    budget, free_at_start = CoreBudget(2), {}

    def execute(step, lane):
        budget.caller = 1  # as the executor states it for lane 0
        free_at_start[step.op.name] = budget.free()
        budget.caller = 0

    Run(plan, [None] * plan.num_slots, execute, workers=2, budget=budget).work(0)
    assert free_at_start == {"first": 0, "second": 1, "out": 1}
    assert budget.claimed == 0
