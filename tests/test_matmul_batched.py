"""matmul with np.matmul's rules: batch axes that broadcast, transposes, both kernels, every
thread setting with the sequential run's bits, the GPU in the simulator, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import parallelgraph as pg

# (a shape, b shape): 2-D, a dense layer on a sequence (b without batch: one 2-D product),
# batches that broadcast on either side, size-1 and size-0 axes, odd and prime sizes
SHAPES = [
    ((5, 3), (3, 7)),
    ((2, 5, 3), (3, 7)),
    ((4, 2, 5, 3), (3, 7)),
    ((2, 5, 3), (2, 3, 7)),
    ((3, 1, 5, 3), (2, 3, 7)),
    ((5, 3), (4, 3, 7)),
    ((1, 5, 3), (1, 3, 7)),
    ((2, 13, 11), (1, 11, 17)),
    ((2, 0, 3), (2, 3, 4)),
    ((2, 5, 0), (2, 0, 4)),
    ((1, 1), (1, 1)),
]


def values(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run(graph, out, config):
    with pg.Session(graph, config) as session:
        return session.run(out)


@pytest.mark.parametrize("kernel", ["blas", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES, ids=str)
def test_batched_matmul_against_numpy(a_shape, b_shape, dtype, kernel):
    a, b = values(a_shape, dtype, 1), values(b_shape, dtype, 2)
    graph = pg.Graph("matmul")
    with graph.as_default():
        out = pg.constant(a) @ pg.constant(b)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    value = run(graph, out, pg.Config(executor="sequential", matmul_kernel=kernel))
    assert value.shape == expected.shape and value.dtype == np.dtype(dtype)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(value, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("kernel", ["blas", "numba"])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES[:8], ids=str)
def test_every_setting_gives_the_sequential_bits(a_shape, b_shape, kernel, many_shards):
    a, b = values((*a_shape[:-2], 50, a_shape[-1]), "float32", 3), values(b_shape, "float32", 4)
    graph = pg.Graph("matmul")
    with graph.as_default():
        out = pg.tanh(pg.constant(a) @ pg.constant(b)) + 1.0
    reference = run(graph, out, pg.Config(executor="sequential", matmul_kernel=kernel))
    for inter, intra, fuse in [(2, 1, False), (1, 2, True), (2, 2, False), (1, 3, False)]:
        config = pg.Config(
            inter_op_threads=inter, intra_op_threads=intra, matmul_kernel=kernel, fuse=fuse
        )
        assert run(graph, out, config).tobytes() == reference.tobytes(), (inter, intra, fuse)


def test_transposes_of_constants_and_of_computed_values():
    a, b = values((2, 4, 3), "float64", 5), values((2, 5, 4), "float64", 6)
    graph = pg.Graph("transposes")
    with graph.as_default():
        x = pg.tanh(pg.constant(a))  # computed: a transpose op
        both = pg.matmul(x, pg.constant(b), transpose_a=True, transpose_b=True, name="qk")
    assert "qk/transpose_b" in {op.name for op in graph.ops}  # the constant, folded
    value = run(graph, both, pg.Config())
    expected = np.matmul(np.tanh(a).transpose(0, 2, 1), b.transpose(0, 2, 1))
    np.testing.assert_allclose(value, expected, rtol=1e-12)


@pytest.mark.parametrize(
    "a_shape, b_shape, message",
    [
        ((5, 3), (4, 7), "inner dimensions differ"),
        ((3,), (3, 2), "2 or more axes"),
        ((2, 5, 3), (4, 3, 7), "batch axes"),
    ],
)
def test_misfits_are_refused_when_built(a_shape, b_shape, message):
    graph = pg.Graph("bad")
    with graph.as_default(), pg.scope("head1"):
        a, b = pg.constant(np.ones(a_shape)), pg.constant(np.ones(b_shape))
        with pytest.raises(pg.GraphError, match=message) as refused:
            pg.matmul(a, b)
    assert "'head1'" in str(refused.value)


def test_int_operands_are_refused():
    graph = pg.Graph("bad")
    with graph.as_default(), pytest.raises(pg.GraphError, match="computes in floats"):
        pg.matmul(pg.constant(np.ones((2, 2), np.int32)), pg.constant(np.ones((2, 2), np.int32)))


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5))])
def test_batched_matmul_on_the_gpu_simulator(a_shape, b_shape):
    a, b = values(a_shape, "float32", 7), values(b_shape, "float32", 8)
    graph = pg.Graph("gpu")
    with graph.as_default(), pg.device("gpu:0"):
        out = pg.constant(a) @ pg.constant(b)
    value = run(graph, out, pg.Config(streams=1))
    np.testing.assert_allclose(value, np.matmul(a, b), rtol=1e-5, atol=1e-5)
