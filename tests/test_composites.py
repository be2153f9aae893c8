"""softmax, log_softmax, layer_norm and batch_norm: against float64 NumPy, at extreme values, their
scopes, the same bits fused and unfused on every thread setting, and on the GPU simulator."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax as scipy_log_softmax
from scipy.special import softmax as scipy_softmax

import parallelgraph as pg

TOLERANCE = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
CONFIGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def run(tensors, config=None):
    graph = tensors[0].op.graph
    with pg.Session(graph, config or pg.Config(executor="sequential")) as sess:
        return sess.run(list(tensors))


def layer_norm_reference(x, gamma, beta, axes, epsilon):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    variance = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x64 - mean) / np.sqrt(variance + epsilon) * gamma + beta


def along(vector, shape, axis):
    """A vector of axis `axis`'s size laid out to broadcast against `shape`."""
    laid_out = [1] * len(shape)
    laid_out[axis] = shape[axis]
    return np.reshape(vector, laid_out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, axis",
    [((1, 1), -1), ((7,), 0), ((5, 13), -1), ((5, 13), 0), ((3, 4, 5), 1), ((3, 4, 5), (0, 2))],
    ids=str,
)
def test_softmax_and_log_softmax_match_numpy(shape, axis, dtype):
    value = (np.random.default_rng(1).standard_normal(shape) * 5).astype(dtype)
    with pg.Graph().as_default():
        x = pg.constant(value)
        probabilities, logs = pg.softmax(x, axis=axis), pg.log_softmax(x, axis=axis)
    got, got_logs = run([probabilities, logs])
    assert got.dtype == got_logs.dtype == np.dtype(dtype) and got.shape == shape
    x64 = value.astype(np.float64)
    np.testing.assert_allclose(got, scipy_softmax(x64, axis=axis), **TOLERANCE[dtype])
    np.testing.assert_allclose(got_logs, scipy_log_softmax(x64, axis=axis), **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_of_extreme_logits_does_not_overflow(dtype):
    big = np.finfo(dtype).max / 4
    value = np.array(
        [
            [1000.0, 0.0, -1000.0, 999.0],
            [big, big, -big, 0.0],
            [-np.inf, 3.0, -np.inf, 3.0],  # masked logits
            [1e-30, -1e-30, 0.0, -0.0],
        ],
        dtype,
    )
    with pg.Graph().as_default():
        x = pg.constant(value)
        probabilities, logs = pg.softmax(x), pg.log_softmax(x)
    got, got_logs = run([probabilities, logs])
    assert np.isfinite(got).all() and not np.isnan(got_logs).any()
    np.testing.assert_allclose(got, scipy_softmax(value.astype(np.float64), axis=-1), atol=1e-7)
    want_logs = scipy_log_softmax(value.astype(np.float64), axis=-1)
    np.testing.assert_allclose(got_logs, want_logs, rtol=1e-6)
    assert got_logs[0, 2] < -1000  # where softmax underflows to 0, its log stays finite


def test_softmax_of_a_row_of_minus_infinities_is_nan_as_numpy():
    with pg.Graph().as_default():
        probabilities = pg.softmax(pg.constant(np.array([[-np.inf, -np.inf], [0.0, 0.0]])))
    (got,) = run([probabilities])
    np.testing.assert_array_equal(got, [[np.nan, np.nan], [0.5, 0.5]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, axis", [((6, 33), -1), ((1, 1), -1), ((4, 5, 6), (1, 2)), ((4, 5, 6), 1)], ids=str
)
def test_layer_norm_matches_numpy(shape, axis, dtype):
    rng = np.random.default_rng(2)
    value = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    axes = axis if isinstance(axis, tuple) else (axis % len(shape),)
    sizes = tuple(shape[a] for a in axes)
    gamma, beta = rng.standard_normal(sizes), rng.standard_normal(sizes)
    laid_out = [shape[a] if a in axes else 1 for a in range(len(shape))]
    with pg.Graph().as_default():
        x = pg.constant(value)
        given = pg.layer_norm(x, gamma, beta, axis=axis)  # arrays of the axes' sizes
        tensors = pg.layer_norm(  # tensors: a reshape op lays them out where needed
            x, pg.constant(gamma.astype(dtype)), pg.constant(beta.astype(dtype)), axis=axis
        )
        plain = pg.layer_norm(x, axis=axis, epsilon=0.5)
    got, got_tensors, got_plain = run([given, tensors, plain])
    gamma32, beta32 = (v.astype(dtype).astype(np.float64) for v in (gamma, beta))
    want = layer_norm_reference(
        value, gamma32.reshape(laid_out), beta32.reshape(laid_out), axes, 1e-5
    )
    tolerance = TOLERANCE[dtype] if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, want, **tolerance)
    assert got_tensors.tobytes() == got.tobytes()
    np.testing.assert_allclose(got_plain, layer_norm_reference(value, 1, 0, axes, 0.5), **tolerance)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, axis", [((8, 5), -1), ((2, 3, 4, 5), 1), ((2, 4, 5, 3), -1)])
def test_batch_norm_matches_numpy(shape, axis, dtype):
    rng = np.random.default_rng(3)
    value = rng.standard_normal(shape).astype(dtype)
    channels = shape[axis]
    mean, offset, scale = (rng.standard_normal(channels).astype(dtype) for _ in range(3))
    variance = (rng.random(channels) + 0.1).astype(dtype)
    with pg.Graph().as_default():
        x = pg.constant(value)
        full = pg.batch_norm(x, mean, variance, offset, scale, epsilon=1e-3, axis=axis)
        bare = pg.batch_norm(x, pg.constant(mean), pg.constant(variance), axis=axis)
    got, got_bare = run([full, bare])
    m, v, o, s = (along(p.astype(np.float64), shape, axis) for p in (mean, variance, offset, scale))
    x64 = value.astype(np.float64)
    tolerance = TOLERANCE[dtype] if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, (x64 - m) / np.sqrt(v + 1e-3) * s + o, **tolerance)
    np.testing.assert_allclose(got_bare, (x64 - m) / np.sqrt(v + 1e-5), **tolerance)


def test_composites_read_as_one_scope_each():
    """Over axes other than the last alone (which build one row op: tests/test_rowwise.py)."""
    with pg.Graph().as_default() as graph, pg.scope("layer1"):
        x = pg.constant(np.ones((2, 3), np.float32))
        first, second = pg.softmax(x, axis=0), pg.softmax(x, axis=0)
        named = pg.log_softmax(x, axis=0, name="scores")
        normed = pg.layer_norm(x, np.ones(2), np.zeros(2), axis=0)
        batch = pg.batch_norm(x, np.zeros(3), np.ones(3))
    names = [op.name for op in graph.ops if op.type != "constant"]
    assert names[:5] == [
        "layer1/Softmax/Max",
        "layer1/Softmax/Sub",
        "layer1/Softmax/Exp",
        "layer1/Softmax/Sum",
        "layer1/Softmax/RealDiv",
    ]
    assert first.name == "layer1/Softmax/RealDiv" and second.name == "layer1/Softmax_1/RealDiv"
    assert named.name == "layer1/scores/Sub_1"
    assert normed.op.scope == "layer1/LayerNorm" and batch.op.scope == "layer1/BatchNorm"
    scopes = {op.scope for op in graph.ops if op.type != "constant"}
    assert scopes == {
        f"layer1/{s}" for s in ("Softmax", "Softmax_1", "scores", "LayerNorm", "BatchNorm")
    }


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda x: pg.softmax(x, axis=2), r"reduce_max op 'Max' in scope 'net/Softmax'.*axis 2"),
        (lambda x: pg.softmax(pg.cast(x, "int32")), r"in scope 'net/Softmax'"),
        (lambda x: pg.layer_norm(x, np.ones(4)), r"gamma of shape \[4\] does not broadcast"),
        (lambda x: pg.layer_norm(x, axis=(0, 0)), r"in scope 'net/LayerNorm'.*twice"),
        (lambda x: pg.batch_norm(x, np.zeros(3), None), r"mean and variance are needed"),
        (lambda x: pg.batch_norm(x, np.zeros(2), np.ones(2), axis=1), r"mean of shape \[2\]"),
        (lambda x: pg.layer_norm(x, epsilon="small"), r"epsilon must be a number"),
    ],
)
def test_bad_composites_are_refused_at_build_time_naming_their_scope(make, message):
    with pg.Graph().as_default(), pg.scope("net"):
        x = pg.placeholder((2, 3), "float32")
        with pytest.raises(pg.GraphError, match=message):
            make(x)


def composites_graph(dtype="float32", shape=(37, 29)):
    """Every composite over one input (shapes that give several shards with many_shards)."""
    rng = np.random.default_rng(4)
    value = (rng.standard_normal(shape) * 4).astype(dtype)
    graph = pg.Graph("composites")
    with graph.as_default():
        x = pg.constant(value)
        gamma = pg.variable((shape[-1],), name="gamma", dtype=dtype, seed=1)
        beta = pg.variable((shape[-1],), name="beta", dtype=dtype, seed=2)
        fetches = [
            pg.softmax(x),
            pg.softmax(x, axis=0),
            pg.log_softmax(x * 2.0),
            pg.layer_norm(x, gamma, beta),
            pg.layer_norm(pg.tanh(x), axis=0),
            pg.batch_norm(
                pg.relu(x), rng.standard_normal(shape[-1]), rng.random(shape[-1]) + 1, beta, gamma
            ),
        ]
    return graph, fetches


def test_fused_runs_give_the_bits_of_the_unfused_sequential_run(many_shards):
    graph, fetches = composites_graph()
    expected = run(fetches)
    with pg.Session(graph, pg.Config(fuse=True)) as sess:
        plan = sess.plan_for(fetches)
    assert any(step.op.type.startswith("fused") for step in plan.steps)  # layer_norm's * + fuse
    assert any(len(step.shards) > 1 for step in plan.steps)
    for fuse in (False, True):
        for inter, intra in CONFIGS:
            config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse)
            for tensor, want, got in zip(fetches, expected, run(fetches, config)):
                assert got.tobytes() == want.tobytes(), (tensor.name, fuse, inter, intra)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_composites_on_the_gpu_match_the_cpu(dtype):
    rng = np.random.default_rng(6)
    value = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    graph = pg.Graph("gpu composites")
    with graph.as_default(), pg.device("gpu:0"):
        x = pg.constant(value)
        fetches = [
            pg.softmax(x),
            pg.log_softmax(x, axis=(0, 2)),
            pg.layer_norm(x, rng.standard_normal(5), rng.standard_normal(5)),
            pg.batch_norm(x, np.zeros(4), np.ones(4) * 2, np.ones(4), np.ones(4) * 3, axis=1),
        ]
    expected = run(fetches)
    with pg.Session(graph) as sess:
        got, trace = sess.run(fetches, trace=True)
    assert "gpu:0" in {e.device for e in trace.ops()}
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for tensor, want, result in zip(fetches, expected, got):
        assert result.shape == want.shape and result.dtype == want.dtype
        np.testing.assert_allclose(
            result, want, rtol=tolerance, atol=tolerance, err_msg=tensor.name
        )
