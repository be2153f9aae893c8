"""Session: fetch structures, feeds, errors before running, kernel failures, usability after."""

from collections import namedtuple

import numpy as np
import pytest
from helpers import FailingOp, failing, seed_graph

import parallelgraph as pg


def small_graph():
    g = pg.Graph("small")
    with g.as_default(), pg.scope("s"):
        x = pg.placeholder((2, 3), name="x")
        w = pg.variable((3, 2), name="w", init=np.ones((3, 2)))
        y = pg.relu(x @ w)
        z = pg.reduce_sum(y)
    return g, x, w, y, z


def test_fetch_structures_are_preserved():
    g, x, w, y, z = small_graph()
    feed = {x: np.ones((2, 3))}
    Pair = namedtuple("Pair", "first second")
    with pg.Session(g) as sess:
        assert sess.run(z, feed).shape == ()
        values = sess.run({"y": y, "both": [z, (w,)], "pair": Pair(y, z)}, feed)
    assert set(values) == {"y", "both", "pair"}
    assert isinstance(values["both"][1], tuple) and values["both"][1][0].shape == (3, 2)
    assert isinstance(values["pair"], Pair) and float(values["pair"].second) == 12.0


def test_trace_flag_returns_values_and_trace():
    g, x, _, y, _ = small_graph()
    with pg.Session(g) as sess:
        value, trace = sess.run(y, {x: np.ones((2, 3))}, trace=True)
    assert isinstance(trace, pg.Trace) and value.shape == (2, 2)
    assert [e.name for e in trace.ops()] == ["s/MatMul", "s/Relu"]


def test_feeds_are_copied_and_cast():
    g, x, _, y, _ = small_graph()
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    with pg.Session(g) as sess:
        first = sess.run(y, {x: data})
        data[:] = 0
        assert first.dtype == np.float32 and first.sum() == 30
        assert sess.run(y, {"s/x": [[1, 1, 1], [1, 1, 1]]}).sum() == 12


@pytest.mark.parametrize(
    "feed, message",
    [
        (
            {},
            r"placeholder 's/x' \(placeholder, scope 's', device cpu:0\) with shape \[2, 3\] "
            r"needs a value",
        ),
        ("x", r"wrong shape: \[3, 2\]"),
        (
            "shape",
            r"feed for 's/x' \(placeholder, scope 's', device cpu:0\): shape \[3, 2\] does "
            r"not match the tensor's shape \[2, 3\]",
        ),
        ("dtype", r"dtype complex128 cannot become float32"),
        ("strings", r"dtype <U1 cannot become float32"),
        ("other-graph", r"belongs to graph 'other'"),
        ("missing-name", r"has no op named 'nope'"),
        ("not-dict", r"feed_dict must be a dict"),
    ],
)
def test_bad_feeds_are_refused_before_running(feed, message):
    g, x, _, y, _ = small_graph()
    other = pg.Graph("other")
    with other.as_default():
        foreign = pg.placeholder((2, 3))
    feeds = {
        "x": {x: np.ones((3, 2))},
        "shape": {x: np.ones((3, 2))},
        "dtype": {x: np.ones((2, 3), complex)},
        "strings": {x: np.full((2, 3), "a")},
        "other-graph": {foreign: np.ones((2, 3))},
        "missing-name": {"nope": 1.0},
        "not-dict": [1, 2],
    }
    if message.startswith("wrong shape"):
        message = r"shape \[3, 2\] does not match"
    FailingOp.calls.clear()
    with pg.Session(g) as sess, pytest.raises(pg.GraphError, match=message):
        sess.run(y, feeds.get(feed, feed) if isinstance(feed, str) else feed)


def test_bad_fetches_are_refused():
    g, *_ = small_graph()
    other = pg.Graph("other")
    with other.as_default():
        foreign = pg.constant([1.0])
    with pg.Session(g) as sess:
        with pytest.raises(pg.GraphError, match="belongs to graph 'other'"):
            sess.run(foreign)
        with pytest.raises(pg.GraphError, match="cannot fetch 3"):
            sess.run([3])


def test_feeding_an_intermediate_tensor_cuts_the_graph():
    g, _, _, y, z = small_graph()
    with pg.Session(g) as sess:
        assert float(sess.run(z, {y: np.full((2, 2), 2.0)})) == 8.0


@pytest.mark.parametrize(
    "config",
    [
        pg.Config(executor="sequential"),
        pg.Config(inter_op_threads=2, intra_op_threads=2),
        pg.Config(inter_op_threads=4, intra_op_threads=1),
    ],
)
def test_failing_kernel_raises_op_error_and_session_survives(config, many_shards):
    g = pg.Graph()
    with g.as_default():
        with pg.scope("good"):
            ok = pg.tanh(pg.random_normal((32, 8), seed=1))
        with pg.scope("bad"):
            boom = failing(pg.random_normal((32, 8), seed=2), name="boom")
            after = pg.relu(boom, name="after")
        out = pg.add(ok, after)
    FailingOp.calls.clear()
    with pg.Session(g, config) as sess:
        with pytest.raises(pg.OpError, match=r"op 'bad/boom' \(test_failing, scope 'bad'") as info:
            sess.run(out)
        assert isinstance(info.value.__cause__, ZeroDivisionError)
        assert info.value.op.name == "bad/boom"
        with pytest.raises(pg.OpError):
            sess.run(out, trace=True)
        assert np.isfinite(sess.run(ok)).all()  # still usable
        assert sess.runs == 1


def test_dependents_of_a_failed_op_do_not_run():
    g = pg.Graph()
    with g.as_default():
        boom = failing(pg.constant(np.ones((4, 4))), name="boom")
        after = failing(boom, fail=False, name="after")
    FailingOp.calls.clear()
    with pg.Session(g, pg.Config(inter_op_threads=2)) as sess, pytest.raises(pg.OpError):
        sess.run(after)
    assert "after" not in FailingOp.calls and "boom" in FailingOp.calls


def test_soft_placement_runs_gpu_ops_on_cpu_and_says_so(no_gpu):
    g, out, _ = seed_graph(device="gpu:0")
    with pg.Session(g) as sess, pytest.warns(RuntimeWarning, match="soft placement") as warned:
        value, trace = sess.run(out, trace=True)
        sess.run(out)
    assert len(warned) == 1  # one warning per session, not per run
    assert value.shape == (8, 6)
    assert {e.device for e in trace.events} == {"cpu:0"}
    assert any("soft placement" in note for note in trace.metadata["notes"])


def test_without_soft_placement_gpu_ops_are_refused_before_running(no_gpu):
    g, out, _ = seed_graph(device="gpu:0")
    with pg.Session(g, pg.Config(allow_soft_placement=False)) as sess:
        with pytest.raises(pg.GraphError, match=r"'net1/RandomNormal' .* is placed on gpu:0"):
            sess.run(out)


def test_global_variables_initializer_and_fetching_variables_gives_copies():
    g, _, w, _, _ = small_graph()
    with pg.Session(g) as sess:
        value = sess.run(w)
        value[:] = 42
        assert (sess.run(w) == 1).all()
        assert sess.run(pg.global_variables_initializer()) is None


def test_config_and_graph_types_are_checked():
    with pytest.raises(TypeError, match=r"takes a pg\.Config"):
        pg.Session(pg.Graph(), {"inter_op_threads": 2})
    with pytest.raises(TypeError, match=r"takes a pg\.Graph"):
        pg.Session("graph")


def test_fetch_by_tensor_name_and_name_colon_zero_give_the_same_value():
    """Before: sess.run("z") ran the graph, then crashed ('str' object has no attribute 'op')."""
    g, x, _, y, z = small_graph()
    feed = {x: np.ones((2, 3))}
    with pg.Session(g) as sess:
        by_tensor = sess.run(z, feed)
        assert sess.run("s/Sum", feed) == by_tensor
        assert sess.run("s/Sum:0", {"s/x:0": np.ones((2, 3))}) == by_tensor
        mixed = sess.run({"t": y, "n": ["s/Relu", "s/Relu:0"]}, feed)
        assert all(np.array_equal(v, mixed["t"]) for v in mixed["n"])
        with pytest.raises(pg.GraphError, match=r"'s/Sum' .* has one output"):
            sess.run("s/Sum:1", feed)
        with pytest.raises(pg.GraphError, match="has no op named 'nope'"):
            sess.run("nope:0", feed)


def test_a_tensor_fetched_twice_gives_two_arrays():
    """Before: run([y, y]) returned one array object twice (writing one changed the other)."""
    g, x, w, y, _ = small_graph()
    with pg.Session(g) as sess:
        first, second, third, weight, weight_again = sess.run(
            [y, y, "s/Relu", w, w], {x: np.ones((2, 3))}
        )
    assert first is not second and first is not third and weight is not weight_again
    assert not np.shares_memory(first, second) and not np.shares_memory(weight, weight_again)
    first[:] = -1
    assert np.array_equal(second, third) and second.min() >= 0


def test_variable_init_arrays_are_copied_at_build_time():
    """Before: changing the array after the build changed what new sessions started from."""
    init = np.ones((2, 2), dtype=np.float32)
    g = pg.Graph()
    with g.as_default():
        v = pg.variable((2, 2), name="v", init=init)
    init[:] = 7
    with pg.Session(g) as sess:
        assert np.array_equal(sess.run(v), np.ones((2, 2)))


def test_the_plan_cache_is_bounded_and_keeps_the_recent_plans(monkeypatch):
    """Before: every distinct fetch kept its plan for the session's lifetime (3,000 fetches of
    a 3,000-op chain: +3.65 GB)."""
    monkeypatch.setattr(pg.Session, "plan_cache_size", 8)
    g = pg.Graph()
    with g.as_default():
        x = pg.constant(np.ones((2, 2)))
        chain = [x := pg.tanh(x) for _ in range(40)]
    with pg.Session(g) as sess:
        for tensor in chain:
            sess.run(tensor)
        assert len(sess._plans) == 8
        recent = sess.plan_for(chain[-1])
        sess.run(chain[0])  # evicts the least recently used, not the one just planned
        assert sess.plan_for(chain[-1]) is recent and len(sess._plans) == 8
        expected = np.ones((2, 2))
        for _ in range(4):
            expected = np.tanh(expected)
        np.testing.assert_allclose(sess.run(chain[3]), expected, rtol=1e-12)


def test_a_session_whose_threads_cannot_start_leaves_none_behind(monkeypatch):
    """Before: Config(inter_op_threads=100000) was accepted; Session() then failed with
    "can't start new thread" and left thousands of threads running."""
    import threading

    from conftest import parallelgraph_threads

    with pytest.raises(ValueError, match="inter_op_threads must be at most 1024"):
        pg.Config(inter_op_threads=100_000)
    real_start, started = threading.Thread.start, []

    def start_three_then_fail(thread):
        if len(started) == 3:
            raise RuntimeError("can't start new thread")
        started.append(thread)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_three_then_fail)
    g, *_ = small_graph()
    for inter, intra in [(8, 1), (2, 8)]:  # fails in the inter-op pool, then the intra-op pool
        started.clear()
        with pytest.raises(RuntimeError, match=r"could not start thread \d+ of 7"):
            pg.Session(g, pg.Config(inter_op_threads=inter, intra_op_threads=intra))
        assert not parallelgraph_threads()


def test_the_soft_placement_warning_points_at_the_callers_line_once_per_graph(no_gpu):
    g, out, _ = seed_graph(device="gpu:0")
    with pytest.warns(RuntimeWarning, match="soft placement") as warned:
        with pg.Session(g) as first:
            first.run(out)
        with pg.Session(g) as second:  # the same graph again: said already
            second.run(out)
    assert len(warned) == 1
    assert warned[0].filename == __file__  # this test's line, not parallelgraph's or IPython's
