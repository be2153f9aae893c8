"""The dask executor on a real LocalCluster: 2 worker processes, 1 thread each.

One cluster serves the module (starting one costs seconds); sessions borrow its Client. Tests
that need a cluster of their own (an owned LocalCluster, a killed worker) say so.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from helpers import failing, seed_graph

import parallelgraph as pg
from parallelgraph.config import Config
from parallelgraph.plan import place
from parallelgraph.plot import lane_group

distributed = pytest.importorskip("distributed")

#: A run on this cluster must end (finish or fail) within this many seconds: never hang.
BOUNDED_S = 60


def two_worker_cluster(log_level: int):
    """A LocalCluster of 2 worker processes with 1 thread each, and a Client of it."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=log_level,
    )
    return cluster, distributed.Client(cluster, set_as_default=False)


@pytest.fixture(scope="module")
def client():
    cluster, client = two_worker_cluster(logging.ERROR)
    client.wait_for_workers(2, timeout=30)
    yield client
    client.close()
    cluster.close()


def dask_config(client, **settings):
    return pg.Config(executor="dask", dask_client=client, **{"intra_op_threads": 1, **settings})


def reference(graph, fetches, feed_dict=None):
    """The sequential executor's values (it runs "worker:N" ops on cpu:0, and says so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pg.Session(graph, pg.Config(executor="sequential")) as sess:
            return sess.run(fetches, feed_dict)


def pinned_seed_graph(batch=64, n_in=96, n_hidden=80, n_out=48):
    """The seed graph with net1 on worker:0 and net2 on worker:1."""
    g = pg.Graph("pinned")
    with g.as_default():
        results = []
        for index, name in enumerate(("net1", "net2")):
            with pg.device(f"worker:{index}"), pg.scope(name):
                x = pg.random_normal((batch, n_in), seed=index + 1)
                w1 = pg.variable((n_in, n_hidden), name="w1")
                b1 = pg.variable((n_hidden,), name="b1")
                w2 = pg.variable((n_hidden, n_out), name="w2")
                results.append(pg.matmul(pg.matmul(x, w1) + b1, w2))
        out = pg.add(*results, name="out")
    return g, out


# -- results ------------------------------------------------------------------------------------
def test_outputs_are_bit_identical_to_sequential_and_numpy(client, many_shards):
    g, out, (r1, _) = seed_graph(batch=40, n_in=24, n_hidden=20, n_out=12)
    with g.as_default():
        total = pg.reduce_sum(pg.tanh(out), axis=0)
    fetches = [out, r1, total, out, g.op("net1/w1").output]
    expected = reference(g, fetches)
    config = dask_config(client, intra_op_threads=2)  # shards on each worker's intra-op pool
    with pg.Session(g, config) as sess:
        plan = sess.plan_for(total)
        assert max(len(s.shards) for s in plan.steps) > 1
        for _ in range(2):
            values = sess.run(fetches)
            for value, want in zip(values, expected):
                assert isinstance(value, np.ndarray) and value.flags.writeable
                assert value.dtype == want.dtype and np.array_equal(value, want)


def test_feeds_travel_and_only_fetched_values_come_back(client, monkeypatch):
    g = pg.Graph()
    with g.as_default():
        x = pg.placeholder((16, 8), name="x")
        hidden = pg.relu(pg.matmul(x, pg.variable((8, 8), name="w")))
        out = pg.reduce_mean(pg.tanh(hidden) + hidden, axis=1)
    feed = np.linspace(-1, 1, 128, dtype=np.float32).reshape(16, 8)
    gathered = []
    real_gather = client.gather
    monkeypatch.setattr(client, "gather", lambda fs, **kw: gathered.append(fs) or real_gather(fs))
    with pg.Session(g, dask_config(client)) as sess:
        executor = sess._executor
        for scale in (1, 2):
            value = sess.run(out, {x: feed * scale})
            assert np.array_equal(value, reference(g, out, {x: feed * scale}))
        # MatMul+Relu, Tanh, Add+Mean: Relu feeds two ops and Add reads two, so 3 tasks a run
        assert executor.stats["tasks"] == 6 and executor.stats["gathered"] == 2
        assert executor.stats["sources_sent"] == 3  # the variable once, the feed every run
        assert x.op.id not in executor._sources
    assert [[f.key.split("-")[1] for f in fs] for fs in gathered] == [["Mean"], ["Mean"]]


@pytest.mark.parametrize("fuse", [True, False])
def test_chains_run_as_one_task_each_with_every_op_still_in_the_trace(client, monkeypatch, fuse):
    """The seed graph: net1's four ops, net2's four, and `out` (which reads both) are three
    tasks; unfused, nine. Same bits either way, and the trace shows every op."""
    from parallelgraph.executors import dask as dask_executor

    monkeypatch.setattr(dask_executor, "FUSE_CHAINS", fuse)
    g, out = pinned_seed_graph()
    with pg.Session(g, dask_config(client)) as sess:
        value, trace = sess.run(out, trace=True)
        assert sess._executor.stats["tasks"] == (3 if fuse else 9)
    assert np.array_equal(value, reference(g, out))
    steps = [op.name for op in g.ops if op.type != "variable"]
    assert sorted(e.name for e in trace.ops()) == sorted(steps)
    by_name = {e.name: e for e in trace.ops()}
    for net in ("net1", "net2"):  # a chain's ops ran one after another on one worker thread
        chain = [by_name[f"{net}/{name}"] for name in ("RandomNormal", "MatMul", "Add")]
        assert len({e.lane for e in chain}) == 1 or not fuse
        assert all(a.end <= b.start for a, b in itertools.pairwise(chain))


def test_variables_are_sent_once_per_session(client):
    g, out, _ = seed_graph()
    variables = [op for op in g.ops if op.type == "variable"]
    with pg.Session(g, dask_config(client)) as sess:
        executor = sess._executor
        first = sess.run(out)
        futures = [executor._sources[op.id].future for op in variables]
        keys = {op.id: future.key for op, future in zip(variables, futures)}
        assert executor.stats["sources_sent"] == len(variables) == 6
        for _ in range(2):
            assert np.array_equal(sess.run(out), first)
        assert executor.stats["sources_sent"] == 6
        assert {op.id: executor._sources[op.id].future.key for op in variables} == keys
        assert all(client.who_has(futures).values())  # they live on the workers
        sess.run([pg.global_variables_initializer(), out])  # new arrays: sent again
        assert executor.stats["sources_sent"] == 12


# -- placement and the trace --------------------------------------------------------------------
def test_worker_pins_show_in_the_trace_and_analyses_work(client):
    g, out = pinned_seed_graph()
    workers = sorted(client.scheduler_info()["workers"])
    with pg.Session(g, dask_config(client)) as sess:
        sess.run(out)
        before = time.perf_counter_ns()
        value, trace = sess.run(out, trace=True)
        after = time.perf_counter_ns()
        plan = sess.plan_for(out)
    assert np.array_equal(value, reference(g, out))
    assert {s.device for s in plan.steps if s.op.scope} == {"worker:0", "worker:1"}
    assert not plan.notes
    ops = trace.ops()
    assert {e.lane for e in ops if e.in_scope("net1")} == {"worker-0/0"}
    assert {e.lane for e in ops if e.in_scope("net2")} == {"worker-1/0"}
    assert {e.lane for e in ops} <= {"worker-0/0", "worker-1/0"}  # one lane per worker thread
    assert {lane_group(lane) for lane in trace.lanes} == {"worker"}
    assert len(ops) == len(plan.steps)
    # Worker clocks are put on the session's clock: every event lies inside the run.
    assert before <= trace.start <= trace.end <= after
    assert 0.0 <= trace.overlap("net1", "net2") <= 1.0
    assert re.search("net1 and net2|net2 and net1", str(trace.explain()))
    assert trace.critical_path().names[-1] == "out"
    assert trace.metadata["executor"] == "dask"
    assert len(workers) == 2
    assert trace.plot() is not None


def test_placement_option_pins_scopes(client):
    g, out, _ = seed_graph(batch=16, n_in=8, n_hidden=8, n_out=4)
    with pg.Session(g, dask_config(client)) as sess:
        sess._executor.placement = {"net1": 1, "net2": 0}  # Config.dask_placement, once added
        value, trace = sess.run(out, trace=True)
    assert np.array_equal(value, reference(g, out))
    assert {e.lane for e in trace.ops() if e.in_scope("net1")} == {"worker-1/0"}
    assert {e.lane for e in trace.ops() if e.in_scope("net2")} == {"worker-0/0"}


def test_transfers_appear_as_copy_events(client):
    g, out = pinned_seed_graph()
    with pg.Session(g, dask_config(client)) as sess:
        sess.run(out)
        _, trace = sess.run(out, trace=True)
    copies = [e for e in trace.events if e.kind == "copy"]
    # `out` reads one network's result from the other worker: Dask logs that transfer.
    assert copies and all(e.lane.endswith("/transfer") and e.bytes > 0 for e in copies)
    assert {e.name.split(" ")[0] for e in copies} <= {"net1/MatMul_1", "net2/MatMul_1"}


def test_placement_of_worker_ops():
    g, _ = pinned_seed_graph()
    op = g.op("net2/MatMul")
    assert place(op, Config(executor="dask")) == ("worker:1", None)
    device, note = place(op, Config(executor="threads"))
    assert device == "cpu:0" and "soft placement" in note
    gpu = pg.Graph()
    with gpu.as_default(), pg.device("gpu:0"):
        y = pg.relu(pg.constant([[1.0]]))
    device, note = place(y.op, Config(executor="dask"), gpu_available=True)
    assert device == "cpu:0" and "soft placement" in note


def test_missing_worker_is_refused_without_soft_placement(client):
    g = pg.Graph()
    with g.as_default(), pg.device("worker:7"):
        y = pg.relu(pg.constant([[1.0, -1.0]]))
    with pg.Session(g, dask_config(client, soft_placement=False)) as sess:
        with pytest.raises(pg.GraphError, match=r"worker:7.*2 worker"):
            sess.run(y)
    with pg.Session(g, dask_config(client)) as sess:
        with pytest.warns(RuntimeWarning, match="worker:7 does not exist"):
            assert sess.run(y).tolist() == [[1.0, 0.0]]


# -- failures ---------------------------------------------------------------------------------
def test_failing_kernel_raises_op_error_and_session_stays_usable(client):
    g = pg.Graph()
    with g.as_default():
        with pg.scope("good"):
            ok = pg.tanh(pg.random_normal((32, 8), seed=1))
        with pg.scope("bad"):
            after = pg.relu(failing(pg.random_normal((32, 8), seed=2), name="boom"))
        out = pg.add(ok, after)
    with pg.Session(g, dask_config(client)) as sess:
        with pytest.raises(pg.OpError, match=r"op 'bad/boom' \(test_failing") as info:
            sess.run(out)
        assert isinstance(info.value.__cause__, ZeroDivisionError)
        assert info.value.op.name == "bad/boom"
        if sys.version_info >= (3, 11):  # the worker's traceback comes along as a note
            assert "in compute" in "".join(info.value.__cause__.__notes__)
        with pytest.raises(pg.OpError, match="bad/boom"):
            sess.run(out, trace=True)
        assert np.array_equal(sess.run(ok), reference(g, ok))  # still usable


def chains_graph(length=14, size=384):
    """Two long independent chains of matmuls, one per worker: a run of ~1 s to interrupt."""
    g = pg.Graph("chains")
    with g.as_default():
        ends = []
        for index in range(2):
            with pg.device(f"worker:{index}"), pg.scope(f"chain{index}"):
                x = pg.random_normal((size, size), seed=index, stddev=0.05)
                w = pg.variable((size, size), name="w")
                for _ in range(length):
                    x = pg.tanh(pg.matmul(x, w))
                ends.append(x)
        out = pg.add(*ends, name="out")
    return g, out


def wait_for_fresh_workers(client, victim: int, timeout: float = 30.0) -> None:
    """Until the cluster has two live workers again and the killed process is not among them
    (the scheduler may list the dead one for a while: later tests need both)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = client.run(os.getpid, on_error="ignore")
        if len(pids) == 2 and victim not in pids.values():
            return
        time.sleep(0.1)
    raise AssertionError(f"the cluster did not get two live workers back within {timeout} s")


def test_killing_a_worker_mid_run_completes_or_names_the_op(client):
    g, out = chains_graph()
    expected = reference(g, out)
    op_names = {op.name for op in g.ops}
    with pg.Session(g, dask_config(client)) as sess:
        sess.run(out)  # warm: kernels loaded on both workers
        pids = client.run(os.getpid)
        victim = pids[sorted(pids)[1]]
        killer = threading.Timer(0.15, os.kill, (victim, signal.SIGKILL))
        start = time.monotonic()
        killer.start()
        try:
            with warnings.catch_warnings():  # "worker:1 does not exist" while it restarts
                warnings.simplefilter("ignore", RuntimeWarning)
                value = sess.run(out)
        except pg.OpError as error:  # the other allowed outcome: a clear error naming an op
            assert error.op.name in op_names and error.op.name in str(error)
        else:
            assert np.array_equal(value, expected)
        finally:
            killer.join()
        assert time.monotonic() - start < BOUNDED_S
        wait_for_fresh_workers(client, victim)  # the nanny restarts the worker
        assert np.array_equal(sess.run(out), expected)  # and the session goes on


def test_a_run_past_its_timeout_fails_naming_an_op_and_the_session_goes_on(client):
    g, out = chains_graph(length=10)
    with pg.Session(g, dask_config(client)) as sess:
        sess.run(out)
        # shorter than one round trip through the scheduler (milliseconds), so no run can
        # finish in time however fast its ops got (at 0.05 s a run of fused chains did)
        sess._executor.run_timeout_s = 0.001
        start = time.monotonic()
        with pytest.raises(pg.OpError, match=r"op 'out' .*TimeoutError: not finished within"):
            sess.run(out)
        assert time.monotonic() - start < 5
        sess._executor.run_timeout_s = None
        assert np.array_equal(sess.run(out), reference(g, out))


# -- lifecycle --------------------------------------------------------------------------------
def test_session_close_shuts_down_its_own_cluster():
    g, out, _ = seed_graph()
    config = pg.Config(executor="dask", inter_op_threads=1, intra_op_threads=1)
    sess = pg.Session(g, config)
    executor = sess._executor
    cluster, own_client = executor._cluster, executor.client
    pids = list(own_client.run(os.getpid).values())
    assert len(pids) == 1 and np.array_equal(sess.run(out), reference(g, out))
    sess.close()
    sess.close()  # idempotent
    assert executor._cluster is None and own_client.status == "closed"
    assert cluster.status.name == "closed"
    deadline = time.monotonic() + 10
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids[0])


def test_borrowed_client_and_address_leave_the_cluster_running(client):
    g, out, _ = seed_graph()
    with pg.Session(g, dask_config(client)) as sess:
        sess.run(out)
    assert client.status == "running" and client.submit(sum, [1, 2]).result() == 3
    address = client.scheduler.address
    config = pg.Config(executor="dask", dask_address=address, intra_op_threads=1)
    with pg.Session(g, config) as sess:
        own_client = sess._executor.client
        assert own_client is not client
        assert np.array_equal(sess.run(out), reference(g, out))
    assert own_client.status == "closed" and client.status == "running"
    assert len(client.scheduler_info()["workers"]) == 2


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_an_op_that_keeps_killing_its_workers_fails_naming_it_without_hanging():
    """The KilledWorker path: a task that kills every worker it lands on."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster, own = two_worker_cluster(logging.CRITICAL)
    try:
        own.wait_for_workers(2, timeout=30)
        g = pg.Graph("poison")
        with g.as_default(), pg.scope("bad"):
            out = pg.relu(failing(pg.random_normal((8, 8), seed=1), fail="exit", name="poison"))
        start = time.monotonic()
        with pg.Session(g, dask_config(own)) as sess:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                with pytest.raises(pg.OpError, match=r"'bad/poison'"):
                    sess.run(out)
        assert time.monotonic() - start < BOUNDED_S
    finally:
        own.close()
        cluster.close()
