"""The row ops softmax, log_softmax and layer_norm (last axis, `ops.rowwise`): what the builders
build, against float64 NumPy, the composite's bits, NaN and infinities, the same bits on every
shard split and thread setting, the kernels' range checks, and the GPU kernels (simulator)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax as scipy_log_softmax
from scipy.special import softmax as scipy_softmax

import parallelgraph as pg
from parallelgraph import kernels
from parallelgraph.config import Config
from parallelgraph.ops import opdef

TOLERANCE = {"float32": dict(rtol=2e-6, atol=1e-7), "float64": dict(rtol=1e-13, atol=1e-15)}
NORM_TOLERANCE = {"float32": dict(rtol=1e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
CONFIGS = [(1, 1), (2, 1), (1, 2), (2, 2)]
# size 1, a prime width under one vector of lanes, rows of 33 and 129 (lanes and a tail),
# leading axes of several sizes, no rows, empty rows
SHAPES = [(1, 1), (7,), (5, 13), (3, 4, 33), (2, 129), (0, 5), (4, 0), (2, 0, 3)]


def run(tensors, config=None):
    graph = tensors[0].op.graph
    with pg.Session(graph, config or pg.Config(executor="sequential")) as sess:
        return sess.run(list(tensors))


def layer_norm_reference(x, gamma=None, beta=None, epsilon=1e-5):
    x64 = np.asarray(x, np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    out = (x64 - mean) / np.sqrt(np.square(x64 - mean).mean(axis=-1, keepdims=True) + epsilon)
    out = out if gamma is None else out * np.asarray(gamma, np.float64)
    return out if beta is None else out + np.asarray(beta, np.float64)


def composite_softmax(x, log=False):
    """The composite of primitives, built by hand (what pg.softmax built before)."""
    shifted = pg.subtract(x, pg.reduce_max(x, -1, keepdims=True))
    e = pg.exp(shifted)
    total = pg.reduce_sum(e, -1, keepdims=True)
    return pg.subtract(shifted, pg.log(total)) if log else pg.divide(e, total)


def values(shape, dtype, seed=1, scale=5.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_row_ops_match_float64_numpy(shape, dtype):
    value = values(shape, dtype)
    rng = np.random.default_rng(2)
    gamma, beta = (rng.standard_normal(shape[-1]).astype(dtype) for _ in range(2))
    with pg.Graph().as_default():
        x = pg.constant(value)
        fetches = [
            pg.softmax(x),
            pg.log_softmax(x),
            pg.layer_norm(x, gamma, beta),
            pg.layer_norm(x, epsilon=0.5),
            pg.layer_norm(x, None, pg.constant(beta)),
        ]
    assert [t.op.type for t in fetches] == ["softmax", "log_softmax"] + ["layer_norm"] * 3
    probabilities, logs, normed, plain, shifted = run(fetches)
    for got in (probabilities, logs, normed, plain, shifted):
        assert got.shape == shape and got.dtype == np.dtype(dtype)
    if value.size == 0:
        return
    x64 = value.astype(np.float64)
    np.testing.assert_allclose(probabilities, scipy_softmax(x64, axis=-1), **TOLERANCE[dtype])
    np.testing.assert_allclose(logs, scipy_log_softmax(x64, axis=-1), **TOLERANCE[dtype])
    norm = NORM_TOLERANCE[dtype]
    np.testing.assert_allclose(normed, layer_norm_reference(value, gamma, beta), **norm)
    np.testing.assert_allclose(plain, layer_norm_reference(value, epsilon=0.5), **norm)
    np.testing.assert_allclose(shifted, layer_norm_reference(value, None, beta), **norm)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 1), (5, 31), (3, 2, 100), (4, 1000)], ids=str)
def test_softmax_and_log_softmax_give_the_bits_of_the_composite(shape, dtype):
    value = values(shape, dtype, seed=3, scale=20.0)
    value.reshape(-1)[::7] = -np.inf  # masked logits
    value[..., 0] = 1.0  # every row has a finite max
    with pg.Graph().as_default():
        x = pg.constant(value)
        fetches = [
            pg.softmax(x),
            pg.log_softmax(x),
            composite_softmax(x),
            composite_softmax(x, True),
        ]
    probabilities, logs, want_probabilities, want_logs = run(fetches)
    assert probabilities.tobytes() == want_probabilities.tobytes()
    assert logs.tobytes() == want_logs.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_infinities_as_numpy(dtype):
    big = np.finfo(dtype).max / 4
    value = np.array(
        [
            [1000.0, 0.0, -1000.0, 999.0],
            [big, big, -big, 0.0],
            [-np.inf, 3.0, -np.inf, 3.0],  # masked logits: 0, and -inf as log
            [1e-30, -1e-30, 0.0, -0.0],
            [np.nan, 1.0, 2.0, 3.0],  # a NaN: the row is NaN
            [np.inf, 1.0, 2.0, 3.0],  # +inf: inf - inf is NaN, as NumPy's x - max
            [-np.inf, -np.inf, -np.inf, -np.inf],  # -inf - -inf: NaN
            [2.5, 2.5, 2.5, 2.5],  # layer_norm of a constant row: beta (0 here)
        ],
        dtype,
    )
    with pg.Graph().as_default():
        x = pg.constant(value)
        fetches = [pg.softmax(x), pg.log_softmax(x), pg.layer_norm(x)]
    probabilities, logs, normed = run(fetches)
    x64 = value.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = x64 - x64.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        want = e / e.sum(axis=-1, keepdims=True)
        want_logs = shifted - np.log(e.sum(axis=-1, keepdims=True))
        want_norm = layer_norm_reference(x64)
    np.testing.assert_allclose(probabilities, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(logs, want_logs, rtol=1e-6)
    np.testing.assert_allclose(normed, want_norm, rtol=1e-5, atol=1e-6)
    assert np.isnan(probabilities[4:7]).all() and np.isnan(logs[4:7]).all()
    assert (probabilities[2] == [0, 0.5, 0, 0.5]).all() and logs[2, 0] == -np.inf
    assert np.isfinite(probabilities[:4]).all() and logs[0, 2] < -1000
    assert np.isnan(normed[4:7]).all() and (normed[7] == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_thread_setting_and_shard_split_gives_the_same_bits(many_shards, dtype):
    rng = np.random.default_rng(4)
    value = values((5, 7, 41), dtype, seed=4)
    value[1, 2, 3], value[2, 0, 0], value[3, 1, :5] = np.nan, np.inf, -np.inf
    graph = pg.Graph("rows")
    with graph.as_default():
        x = pg.constant(value)
        gamma = pg.variable((41,), name="gamma", dtype=dtype, seed=1)
        fetches = [
            pg.softmax(x),
            pg.log_softmax(x * 2.0),
            pg.layer_norm(x, gamma, rng.standard_normal(41)),
            pg.layer_norm(pg.tanh(x)),
        ]
    expected = run(fetches)
    with pg.Session(graph) as sess:
        plan = sess.plan_for(fetches)
    row_steps = [s for s in plan.steps if s.op.type in ("softmax", "log_softmax", "layer_norm")]
    assert len(row_steps) == 4 and all(len(s.shards) > 1 for s in row_steps)
    for fuse in (False, True):
        for inter, intra in CONFIGS:
            config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse)
            for tensor, want, got in zip(fetches, expected, run(fetches, config)):
                assert got.tobytes() == want.tobytes(), (tensor.name, fuse, inter, intra)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 4, 33), (0, 5), (4, 0)], ids=str)
def test_one_call_gives_the_bits_of_the_sharded_path(shape, dtype):
    value = values(shape, dtype, seed=5)
    gamma = values(shape[-1:], dtype, seed=6)
    with pg.Graph().as_default():
        x = pg.placeholder(shape, dtype)
        ops = [pg.softmax(x).op, pg.log_softmax(x).op, pg.layer_norm(x, gamma, None).op]
    for op in ops:
        definition = opdef(op.type)
        args = [value] + [t.op.attrs["value"] for t in op.inputs[1:]]
        whole = definition.whole(op)(args)
        rows = definition.rows(op)
        work = definition.prepare(op, args, 3, Config())
        cut = [0, rows // 3, rows - rows // 3, rows]
        for shard in (2, 0, 1):  # any order
            definition.compute(op, work, shard, cut[shard], cut[shard + 1])
        sharded = definition.finish(op, work)
        assert whole.tobytes() == sharded.tobytes(), op.type
        reference = definition.reference(op, args)
        np.testing.assert_allclose(whole, reference, **NORM_TOLERANCE[dtype])


def test_builders_make_the_row_op_for_the_last_axis_alone():
    with pg.Graph().as_default() as graph, pg.scope("layer1"):
        x = pg.placeholder((2, 3, 4), "float32")
        row_ops = [
            pg.softmax(x),
            pg.softmax(x, axis=2),
            pg.softmax(x, axis=(-1,)),
            pg.log_softmax(x, name="scores"),
            pg.layer_norm(x, np.ones(4), np.zeros(4), axis=[2]),
            pg.layer_norm(x, pg.constant(np.ones(4, np.float32))),
        ]
        composites = [
            pg.softmax(x, axis=1),
            pg.log_softmax(x, axis=(1, 2)),
            pg.layer_norm(x, np.ones((1, 4))),  # another shape broadcasting to x: composite
            pg.layer_norm(x, axis=(1, 2)),
        ]
    assert [t.op.type for t in row_ops] == ["softmax"] * 3 + ["log_softmax"] + ["layer_norm"] * 2
    assert [t.name for t in row_ops] == [
        "layer1/Softmax",
        "layer1/Softmax_1",
        "layer1/Softmax_2",
        "layer1/scores",
        "layer1/LayerNorm",
        "layer1/LayerNorm_1",
    ]
    assert all(t.op.scope == "layer1" for t in row_ops)
    assert [t.op.scope for t in composites] == [
        "layer1/Softmax",
        "layer1/LogSoftmax",
        "layer1/LayerNorm",
        "layer1/LayerNorm_1",
    ]
    assert [t.op.type for t in composites] == ["divide", "subtract", "multiply", "multiply"]
    assert len(graph.ops) > 20


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda x: pg.softmax(x, axis=2), r"reduce_max op 'Max' in scope 'net/Softmax'.*axis 2"),
        (lambda x: pg.log_softmax(pg.cast(x, "int32")), r"in scope 'net/LogSoftmax'"),
        (lambda x: pg.layer_norm(x, np.ones(4)), r"gamma of shape \[4\] does not broadcast"),
        (lambda x: pg.layer_norm(x, None, np.ones(2)), r"beta of shape \[2\] does not broadcast"),
        (lambda x: pg.layer_norm(x, epsilon="small"), r"epsilon must be a number"),
        (lambda x: pg.layer_norm(x, pg.constant(np.ones(3))), r"dtypes differ"),
    ],
)
def test_what_the_row_op_cannot_take_is_refused_as_by_the_composite(make, message):
    with pg.Graph().as_default(), pg.scope("net"):
        x = pg.placeholder((2, 3), "float32")
        with pytest.raises(pg.GraphError, match=message):
            make(x)


@pytest.mark.parametrize("name", ["softmax_rows", "log_softmax_rows"])
def test_kernels_refuse_rows_out_of_range(name):
    kernel = getattr(kernels.rowwise, name)
    x = np.ones((4, 8), np.float32)
    out, parts, tops = np.empty_like(x), np.empty(kernels.rowwise.LANES), np.empty(8, np.float32)
    for start, stop in [(0, 5), (-1, 2), (3, 2)]:
        with pytest.raises(IndexError):
            kernel(x, out, start, stop, parts, tops)
    with pytest.raises(IndexError):
        kernel(x, np.empty((4, 7), np.float32), 0, 4, parts, tops)
    for parts_of_a_bad_length in (np.empty(0), np.empty(12)):  # the fold needs a power of 2
        with pytest.raises(IndexError):
            kernel(x, out, 0, 4, parts_of_a_bad_length, tops)
    ones = np.ones(8, np.float32)
    with pytest.raises(IndexError):
        kernels.rowwise.layer_norm_rows(x, ones, ones, out, 1e-5, 0, 5, parts)
    with pytest.raises(IndexError):
        kernels.rowwise.layer_norm_rows(x, ones[:7], ones, out, 1e-5, 0, 4, parts)
    with pytest.raises(IndexError):
        kernels.rowwise.layer_norm_rows(x, ones, ones, out, 1e-5, 0, 4, np.empty(12))
    kernels.rowwise.layer_norm_rows(x, ones, ones, out, 1e-5, 0, 4, parts)  # all fit: no error


@pytest.mark.parametrize("name", ["softmax_rows", "log_softmax_rows"])
def test_the_max_lanes_do_not_change_the_bits(name):
    kernel = getattr(kernels.rowwise, name)
    x = values((3, 77), "float32", seed=11)
    parts = np.empty(kernels.rowwise.LANES)
    results = []
    for lanes in (1, 12, 32, 128):  # any length of tops, a power of 2 or not
        out = np.empty_like(x)
        kernel(x, out, 0, 3, parts, np.empty(lanes, np.float32))
        results.append(out.tobytes())
    assert len(set(results)) == 1


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the simulator's NaN row
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_ops_on_the_gpu_match_the_cpu(dtype):
    value = values((3, 2, 5), dtype, seed=7, scale=3.0)
    value[0, 0, 1], value[1, 1, 2] = -np.inf, np.nan
    wide = values((2, 131), dtype, seed=8)  # more elements than a block's threads
    narrow = values((4, 1), dtype, seed=10)  # one thread a block
    rng = np.random.default_rng(9)
    gamma, beta = (rng.standard_normal(5).astype(dtype) for _ in range(2))
    graph = pg.Graph("gpu rows")
    with graph.as_default(), pg.device("gpu:0"):
        x, w, one = pg.constant(value), pg.constant(wide), pg.constant(narrow)
        fetches = [
            pg.softmax(x),
            pg.log_softmax(x),
            pg.layer_norm(x, gamma, beta),
            pg.layer_norm(x, None, beta),
            pg.layer_norm(x, gamma),
            pg.softmax(w),
            pg.log_softmax(w),
            pg.layer_norm(w),
            pg.softmax(one),
            pg.layer_norm(one, None, narrow[:, 0][:1]),
        ]
    expected = run(fetches)
    with pg.Session(graph) as sess:
        got, trace = sess.run(fetches, trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for tensor, want, result in zip(fetches, expected, got):
        assert result.shape == want.shape and result.dtype == want.dtype
        np.testing.assert_allclose(
            result, want, rtol=tolerance, atol=tolerance, err_msg=tensor.name
        )
