"""The graph builder: names, scopes, devices, operators, shape and dtype checks."""

import numpy as np
import pytest
from helpers import seed_graph

import parallelgraph as pg


def test_seed_graph_names_shapes_and_scopes():
    g, out, (r1, _) = seed_graph()
    names = [op.name for op in g.ops]
    assert "net1/w1" in names and "net2/w1" in names
    assert r1.name == "net1/MatMul_1" and r1.shape == (8, 6)
    assert out.shape == (8, 6) and out.op.scope == ""
    assert g.op("net2/b1").shape == (10,)
    assert len(g) == len(names) == len(set(names))


def test_nested_scopes_and_unique_names():
    g = pg.Graph()
    with g.as_default(), pg.scope("a"), pg.scope("b"):
        x = pg.constant(np.ones((2, 2), np.float32), name="x")
        y = pg.constant(np.ones((2, 2), np.float32), name="x")
        z = x + y
    assert (x.name, y.name, z.name) == ("a/b/x", "a/b/x_1", "a/b/Add")
    assert z.op.scope == "a/b"


def test_operators_build_the_right_ops():
    g = pg.Graph()
    with g.as_default():
        a = pg.constant(np.ones((2, 3)))
        b = pg.constant(np.ones((3, 4)))
        assert (a @ b).op.type == "matmul"
        assert (a * 2.0).op.type == "multiply"
        assert (1.0 + a).op.type == "add"
        assert (a @ b).dtype == np.float64


def test_device_contexts_and_spellings():
    g = pg.Graph()
    with g.as_default():
        with pg.device("/gpu:0"):
            x = pg.constant([1.0])
            with pg.device("/device:CPU:0"):
                y = pg.constant([1.0])
        z = pg.constant([1.0])
    assert (x.op.device, y.op.device, z.op.device) == ("gpu:0", "cpu:0", "cpu:0")
    with pytest.raises(pg.GraphError, match="unknown device 'tpu:0'"):
        with pg.device("tpu:0"):
            pass


def test_default_graph_is_used_by_short_scripts():
    g = pg.reset_default_graph()
    x = pg.constant([[1.0, 2.0]])
    assert x.graph is g is pg.get_default_graph()
    with pg.Session() as sess:
        np.testing.assert_array_equal(sess.run(x), [[1.0, 2.0]])


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: pg.matmul(pg.constant(np.ones((2, 3))), pg.constant(np.ones((4, 5)))),
            r"cannot build matmul op 'MatMul' in scope 'net1': "
            r"inner dimensions differ: \[2, 3\] @ \[4, 5\]",
        ),
        (
            lambda: pg.add(pg.constant(np.ones((2, 3))), pg.constant(np.ones((3, 2)))),
            r"shapes \[2, 3\] and \[3, 2\] do not broadcast",
        ),
        (
            lambda: pg.add(pg.constant(np.ones(3, np.float32)), pg.constant(np.ones(3))),
            r"dtypes differ \(float32, float64\)",
        ),
        (
            lambda: pg.matmul(pg.constant(np.ones(3)), pg.constant(np.ones((3, 1)))),
            r"matmul needs operands of 2 or more axes",
        ),
        (
            lambda: pg.reduce_sum(pg.constant(np.ones((2, 3))), axis=2),
            r"axis 2 is out of range for shape \[2, 3\]",
        ),
        (
            lambda: pg.add_n([pg.constant(np.ones(2)), pg.constant(np.ones(3))]),
            r"add_n needs equal shapes",
        ),
        (lambda: pg.add_n([]), r"add_n takes a non-empty list"),
        (
            lambda: pg.variable((2, 2), name="w", init=np.ones((3, 3))),
            r"variable 'w': initial value has shape \[3, 3\], but the variable's shape is \[2, 2\]",
        ),
        (lambda: pg.variable((2, 2), name="w", init="uniformish"), r"unknown init 'uniformish'"),
        (lambda: pg.variable((2, -1), name="w"), r"must hold non-negative ints"),
        (lambda: pg.placeholder((None, 3)), r"unknown \(None\) dimension"),
        (lambda: pg.random_normal((2, 2), dtype="int32"), r"unsupported dtype 'int32'"),
        (lambda: pg.constant(["a"]), r"cannot make a float32 tensor"),
        (lambda: pg.relu("x"), r"must be a Tensor, a number or an array"),
    ],
)
def test_bad_graphs_are_refused_with_names_scopes_and_shapes(build, message):
    g = pg.Graph()
    with g.as_default(), pg.scope("net1"):
        with pytest.raises(pg.GraphError, match=message):
            build()
    assert issubclass(pg.GraphError, ValueError)


def test_mixing_graphs_is_refused():
    g1, g2 = pg.Graph("one"), pg.Graph("two")
    with g1.as_default():
        x = pg.constant([1.0])
    with g2.as_default(), pytest.raises(pg.GraphError, match="belongs to graph 'one', not 'two'"):
        pg.relu(x)


def test_finalized_graph_cannot_grow():
    g, out, _ = seed_graph()
    with pg.Session(g, pg.Config(executor="sequential")):
        pass
    with g.as_default(), pytest.raises(pg.GraphError, match="is finalized"):
        pg.relu(out)


def test_numpy_arrays_on_the_left_build_one_op_not_an_array_of_tensors():
    """Before: np.ones(3) + tensor went through NumPy's ufunc loop: an object array of three
    Tensors and three add ops."""
    g = pg.Graph()
    with g.as_default():
        t = pg.constant(np.ones(3))
        total = np.ones(3) + t
        product = np.full(3, 2.0) * t
        square = np.ones((2, 3)) @ pg.constant(np.ones((3, 2)))
    assert isinstance(total, pg.Tensor) and total.op.type == "add" and total.shape == (3,)
    assert isinstance(product, pg.Tensor) and product.op.type == "multiply"
    assert isinstance(square, pg.Tensor) and square.shape == (2, 2)
    assert [op.type for op in g.ops].count("add") == 1
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.add(np.ones(3), t)
    with pg.Session(g) as sess:
        assert np.array_equal(sess.run(total), np.full(3, 2.0))
