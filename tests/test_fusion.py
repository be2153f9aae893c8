"""Config(fuse=True): matmul -> add(bias) [-> relu | tanh | sigmoid] as one step, bit-identical
to the unfused sequential reference, visible as one bar that names the ops it covers, and only
where nothing else needs the values in between."""

from __future__ import annotations

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.experiments.presets import build_preset

SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def reference(graph, fetch, feed=None):
    with pg.Session(graph, pg.Config(executor="sequential")) as session:
        return session.run(fetch, feed_dict=feed)


def mlp(dtype="float32", activation=pg.relu):
    """Two layers act(x @ w + b) and a plain matmul, in two scopes."""
    graph = pg.Graph()
    with graph.as_default():
        outs = []
        for name in ("net1", "net2"):
            with pg.scope(name):
                x = pg.random_normal((96, 40), seed=len(outs) + 1, dtype=dtype)
                for layer in range(2):
                    w = pg.variable((x.shape[1], 48), name=f"w{layer}", dtype=dtype)
                    b = pg.variable((48,), name=f"b{layer}", dtype=dtype)
                    x = activation(pg.matmul(x, w) + b)
                outs.append(pg.matmul(x, pg.variable((48, 8), name="w_out", dtype=dtype)))
        out = pg.add(*outs, name="out")
    return graph, out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", [pg.relu, pg.tanh, pg.sigmoid])
def test_fused_runs_are_bit_identical_to_the_unfused_reference(dtype, activation):
    graph, out = mlp(dtype, activation)
    expected = reference(graph, out)
    for inter, intra in SETTINGS:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=True)
        with pg.Session(graph, config) as session:
            np.testing.assert_array_equal(session.run(out), expected)


@pytest.mark.parametrize("preset", ["two-networks", "chain", "random"])
def test_presets_fused_and_not_agree_bit_for_bit(preset):
    built = build_preset(preset, "small")
    expected = reference(built.graph, built.fetch)
    for fuse in (False, True):
        config = pg.Config(inter_op_threads=2, intra_op_threads=2, fuse=fuse)
        with pg.Session(built.graph, config) as session:
            np.testing.assert_array_equal(session.run(built.fetch), expected)


def test_the_trace_shows_one_bar_per_fused_chain_naming_its_ops():
    graph, out = mlp()
    with pg.Session(graph, pg.Config(inter_op_threads=2, fuse=True)) as session:
        _, trace = session.run(out, trace=True)
    names = [e.name for e in trace.ops()]
    assert "net1/MatMul+Add+Relu" in names and "net1/MatMul_1+Add_1+Relu_1" in names
    assert not any(name in ("net1/MatMul", "net1/Add", "net1/Relu") for name in names)
    fused = next(e for e in trace.ops() if e.name == "net1/MatMul+Add+Relu")
    assert fused.op_type == "matmul+add+relu" and fused.flops > 0
    second = next(e for e in trace.ops() if e.name == "net1/MatMul_1+Add_1+Relu_1")
    assert "net1/MatMul+Add+Relu" in second.inputs  # dependencies follow the fused names
    assert trace.critical_path().length_ns > 0 and trace.lower_bound_s() <= trace.makespan_s
    with pg.Session(graph, pg.Config(inter_op_threads=2)) as session:  # the default: unfused
        _, plain = session.run(out, trace=True)
    assert {"net1/MatMul", "net1/Add", "net1/Relu"} <= {e.name for e in plain.ops()}


def test_no_fusion_where_an_intermediate_value_is_fetched_or_fed():
    graph = pg.Graph()
    with graph.as_default():
        x = pg.random_normal((16, 8), seed=3)
        product = pg.matmul(x, pg.variable((8, 8), name="w"))
        biased = product + pg.variable((8,), name="b")
        y = pg.relu(biased)
    config = pg.Config(fuse=True)
    with pg.Session(graph, config) as session:
        fetched = session.run([product, y])
        plan = session.plan_for([product, y])
        # the add and relu still make an elementwise group (tests/test_fusion_elementwise.py)
        types = ["random_normal", "matmul", "fused_elementwise"]
        assert [step.op.type for step in plan.steps] == types
        plan = session.plan_for(y, {biased: np.ones((16, 8), np.float32)})
        assert [step.op.type for step in plan.steps] == ["relu"]
        assert [step.op.type for step in session.plan_for(y).steps] == ["random_normal", "fused"]
    np.testing.assert_array_equal(fetched[1], reference(graph, y))


def test_fuse_must_be_a_bool():
    with pytest.raises(ValueError, match=r"Config\.fuse must be True or False"):
        pg.Config(fuse="yes")
