"""reduce_sum, reduce_mean, reduce_max, reduce_min: NumPy's axis semantics on generated shapes,
against float64 NumPy; integers, NaN/inf/-0.0; the same bits on every executor and thread
setting; errors at build time; the GPU kernels in the simulator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.ops import opdef
from parallelgraph.ops.reductions import Layout, reduced_view

OPS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"]
SHAPES = [
    (),
    (0,),
    (1,),
    (13,),
    (1, 1),
    (0, 5),
    (5, 0),
    (3, 7),
    (1, 13),
    (13, 1),
    (2, 3, 5),
    (3, 1, 7),
    (0, 3, 2),
    (2, 3, 5, 7),
    (1, 5, 1, 3),
    (4, 2, 3, 1),
]
CONFIGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def axis_specs(rank: int) -> list[object]:
    """None, every single axis (as an int, and negative), every tuple of axes (some as lists
    and out of order)."""
    specs: list[object] = [None]
    specs += list(range(rank)) + [a - rank for a in range(rank)]
    for count in range(0, rank + 1):
        for axes in itertools.combinations(range(rank), count):
            specs.append(axes)
            if count > 1:
                specs.append(list(reversed(axes)))
    return specs


def normalized(axis: object, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    listed = axis if isinstance(axis, (tuple, list)) else [axis]
    return tuple(sorted(a % rank for a in listed))


def values(shape, dtype, rng, special=True):
    x = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    if special and x.size > 4:
        flat = x.reshape(-1)
        flat[rng.choice(x.size, 2, replace=False)] = [np.inf, -0.0]
    return x.astype(dtype)


def reference(op_type, x, axis, keepdims):
    axes = normalized(axis, x.ndim)
    if op_type in ("reduce_max", "reduce_min"):
        function = np.max if op_type == "reduce_max" else np.min
        return np.asarray(function(x, axis=axes, keepdims=keepdims))
    if x.dtype.kind == "i":
        return np.asarray(np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype))
    x64 = x.astype(np.float64)
    total = np.sum(x64, axis=axes, keepdims=keepdims)
    if op_type == "reduce_sum":
        return np.asarray(total)
    count = int(np.prod([x.shape[a] for a in axes]))
    with np.errstate(all="ignore"):
        return np.asarray(total / count if count else total * np.nan)


def check(op_type, got, want, dtype, scale):
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    if op_type in ("reduce_max", "reduce_min") or np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(got, want)  # exact (NaN where NaN; 0.0 == -0.0)
        return
    tolerance = 2e-6 if np.dtype(dtype) == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * scale)


def build_all(shape, dtype, ops=OPS):
    """One graph: every op, axis spec and keepdims over one placeholder of `shape`."""
    graph = pg.Graph("reductions")
    cases = []
    with graph.as_default():
        x = pg.placeholder(shape, dtype)
        for op_type, axis, keepdims in itertools.product(ops, axis_specs(len(shape)), (0, 1)):
            axes = normalized(axis, len(shape))
            if op_type in ("reduce_max", "reduce_min") and 0 in (shape[a] for a in axes):
                continue  # refused (test_errors)
            if op_type == "reduce_mean" and np.dtype(dtype).kind == "i":
                continue
            tensor = getattr(pg, op_type)(x, axis=axis, keepdims=bool(keepdims))
            cases.append((op_type, axis, bool(keepdims), tensor))
    return graph, x, cases


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axis_combination_matches_numpy(shape, dtype):
    rng = np.random.default_rng(len(shape) * 100 + sum(shape))
    graph, x, cases = build_all(shape, dtype)
    value = values(shape, dtype, rng)
    with pg.Session(graph, pg.Config(executor="sequential")) as sess:
        got = sess.run([t for *_, t in cases], {x: value})
    scale = float(np.abs(value[np.isfinite(value)]).sum()) + 1.0
    for (op_type, axis, keepdims, tensor), result in zip(cases, got):
        want = reference(op_type, value, axis, keepdims)
        assert tensor.shape == want.shape, (op_type, axis, keepdims)
        check(op_type, result, want, dtype, scale)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("shape", [(0, 3), (7,), (3, 5), (2, 3, 4)], ids=str)
def test_integers_sum_in_their_dtype_and_max_min_exactly(shape, dtype):
    rng = np.random.default_rng(5)
    graph, x, cases = build_all(shape, dtype, ["reduce_sum", "reduce_max", "reduce_min"])
    value = values(shape, dtype, rng)
    with pg.Session(graph) as sess:
        got = sess.run([t for *_, t in cases], {x: value})
    for (op_type, axis, keepdims, _), result in zip(cases, got):
        check(op_type, result, reference(op_type, value, axis, keepdims), dtype, 0)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_sums_wrap_as_numpy_in_the_same_dtype(dtype, many_shards):
    big = np.iinfo(dtype).max // 3
    value = np.full((5, 300), big, dtype)
    value[::2] = -big - 7
    expected = [np.sum(value, axis=a, dtype=dtype) for a in (None, 0, 1)]
    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant(value)
        sums = [pg.reduce_sum(x, axis=a) for a in (None, 0, 1)]
    with pg.Session(graph, pg.Config(intra_op_threads=2)) as sess:
        got = sess.run(sums)
    for want, result in zip(expected, got):
        assert result.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(result, want)


@pytest.mark.parametrize("op_type", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("shape, axis", [((3, 100), 1), ((100, 3), 0), ((4, 9, 5), (0, 2))])
def test_max_and_min_propagate_nan_and_infinities(op_type, shape, axis, many_shards):
    rng = np.random.default_rng(9)
    value = rng.standard_normal(shape)
    flat = value.reshape(-1)
    flat[[3, 17]] = np.nan
    flat[[5, 40]] = [np.inf, -np.inf]
    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant(value)
        result = getattr(pg, op_type)(x, axis=axis)
        everything = getattr(pg, op_type)(x)
    with pg.Session(graph, pg.Config(intra_op_threads=2)) as sess:
        got, total = sess.run([result, everything])
    function = np.max if op_type == "reduce_max" else np.min
    np.testing.assert_array_equal(got, function(value, axis=axis))
    assert np.isnan(total)


@pytest.mark.parametrize("length", [1, 5, 64, 300])
def test_the_first_nan_wins_and_plus_zero_beats_minus_zero_whatever_the_shards(length, many_shards):
    """Max and min depend on the values only: the NaN that comes out is the first in index
    order (its payload kept), and of two zeros max gives +0.0, min -0.0, on every layout,
    kernel and shard setting."""
    first, second = np.array([0x7FF8000000000001, 0x7FF8000000000002]).view(np.float64)
    zeros = np.where(np.arange(length) % 3 == 0, 0.0, -0.0)
    rows = np.stack([zeros, -zeros, np.full(length, -0.0), np.full(length, 0.0)])
    nans = np.random.default_rng(1).standard_normal((2, length))
    nans[:, length // 2] = first
    nans[:, -1] = second
    value = np.concatenate([rows, nans])
    graph = pg.Graph()
    with graph.as_default():
        x = pg.constant(value)
        fetches = [f(x, axis=a) for f in (pg.reduce_max, pg.reduce_min) for a in (1, 0)] + [
            pg.reduce_max(pg.constant(value.T.copy()), axis=0)
        ]
    results = []
    for inter, intra in [(1, 1), (2, 2)]:
        with pg.Session(graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as s:
            results.append(s.run(fetches))
    for got in results:
        top, top_columns, bottom, bottom_columns, transposed = got
        np.testing.assert_array_equal(np.signbit(top[:4]), [False, length == 1, True, False])
        np.testing.assert_array_equal(np.signbit(bottom[:4]), [length > 1, True, True, False])
        nan = first if length > 1 else second  # (one value: the second NaN overwrote it)
        assert top[4:].tobytes() == bottom[4:].tobytes() == np.array([nan, nan]).tobytes()
        assert transposed.tobytes() == top.tobytes()
        assert np.isnan(top_columns[length // 2]) and np.isnan(bottom_columns[-1])
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*results))


SHARDED = [
    ((64, 33), None),
    ((64, 33), 0),
    ((64, 33), 1),
    ((257, 3), 0),
    ((3, 257), (0, 1)),
    ((6, 17, 5), (0, 2)),
    ((2, 9, 3, 11), (1, 3)),
    ((9, 5, 13), (1,)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_every_thread_setting_gives_the_same_bits(dtype, many_shards):
    rng = np.random.default_rng(11)
    graph = pg.Graph("sharded")
    fetches = []
    with graph.as_default():
        for shape, axis in SHARDED:
            x = pg.constant(values(shape, dtype, rng, special=False))
            for op_type in OPS:
                if op_type == "reduce_mean" and dtype == "int32":
                    continue
                for keepdims in (False, True):
                    fetches.append(getattr(pg, op_type)(x, axis=axis, keepdims=keepdims))
    with pg.Session(graph, pg.Config(executor="sequential")) as sess:
        expected = sess.run(fetches)
        plan = sess.plan_for(fetches)
    assert sum(len(step.shards) > 1 for step in plan.steps) > len(fetches) // 2
    for inter, intra in CONFIGS:
        with pg.Session(graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra)) as s:
            got = s.run(fetches)
        for tensor, want, result in zip(fetches, expected, got):
            assert result.tobytes() == want.tobytes(), (tensor.name, inter, intra)
    for tensor, want in zip(fetches, expected):  # and the sharded results are right
        op = tensor.op
        args = [op.inputs[0].op.attrs["value"]]
        check(op.type, want, opdef(op.type).reference(op, args), dtype, 1e4)


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("shape, axis", [*SHARDED[:6], ((0, 4), 1), ((4, 0), 1), ((7,), ())])
def test_a_one_shard_reduction_gives_the_bits_of_prepare_compute_finish(op_type, shape, axis):
    """`whole` (the one-shard fast path) against prepare / compute / finish of one shard."""
    if op_type in ("reduce_max", "reduce_min") and shape == (4, 0):
        axis = 0  # max and min of nothing are refused
    graph = pg.Graph()
    with graph.as_default():
        op = getattr(pg, op_type)(pg.placeholder(shape, "float32"), axis=axis).op
    definition = opdef(op_type)
    args = [values(shape, "float32", np.random.default_rng(2))]
    work = definition.prepare(op, args, 1, pg.Config())
    definition.compute(op, work, 0, 0, definition.rows(op))
    expected = definition.finish(op, work)
    whole = definition.whole(op)(args)
    assert whole.shape == op.shape and whole.tobytes() == expected.tobytes()


def test_layouts_merge_adjacent_axes_and_transpose_only_separated_ones():
    assert reduced_view((4, 5, 6), (1,)) == Layout(None, 4, 5, 6)
    assert reduced_view((4, 5, 6), (1, 2)) == Layout(None, 4, 30, 1)
    assert reduced_view((4, 5, 6), (0, 1)) == Layout(None, 1, 20, 6)
    assert reduced_view((4, 1, 6), (0, 2)) == Layout(None, 1, 24, 1)  # size 1 between
    assert reduced_view((4, 5, 6), (0, 2)) == Layout((1, 0, 2), 5, 24, 1)
    assert reduced_view((2, 3, 4, 5), (1, 3)) == Layout((0, 2, 1, 3), 8, 15, 1)
    assert reduced_view((4, 5), ()) == Layout(None, 20, 1, 1)
    assert reduced_view((0, 5, 6), (0, 2)) == Layout(None, 5, 0, 1)  # nothing to read


def test_keepdims_shapes_and_the_old_api_still_work():
    with pg.Graph().as_default():
        x = pg.constant(np.ones((2, 3, 4), np.float32))
        assert pg.reduce_sum(x).shape == ()
        assert pg.reduce_sum(x, axis=1).shape == (2, 4)
        assert pg.reduce_mean(x, axis=-1, keepdims=True).shape == (2, 3, 1)
        assert pg.reduce_max(x, axis=[2, 0], keepdims=True).shape == (1, 3, 1)
        assert pg.reduce_min(x, axis=(), keepdims=False).shape == (2, 3, 4)
        assert pg.reduce_sum(x, keepdims=True).shape == (1, 1, 1)
        assert pg.reduce_sum(x, name="total").name == "total"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda x: pg.reduce_sum(x, axis=(1, -2)), r"names axis 1 twice"),
        (lambda x: pg.reduce_max(x, axis=3), r"axis 3 is out of range for shape \[2, 3, 0\]"),
        (lambda x: pg.reduce_mean(x, axis=(0, -4)), r"axis -4 is out of range"),
        (lambda x: pg.reduce_sum(x, axis="1"), r"axis must be None or an int"),
        (lambda x: pg.reduce_sum(x, axis=(1.0,)), r"axis must be None or an int"),
        (lambda x: pg.reduce_sum(x, axis=True), r"axis must be None or an int"),
        (lambda x: pg.reduce_max(x, axis=2), r"no values.*zero-size array"),
        (lambda x: pg.reduce_min(x), r"no values"),
        (lambda x: pg.reduce_sum(x, keepdims="yes"), r"keepdims must be True or False"),
        (lambda x: pg.reduce_mean(pg.cast(x, "int32")), r"int32 values is refused.*cast"),
        (lambda x: pg.reduce_sum(pg.cast(x, "bool")), r"takes float or int values, not bool"),
    ],
)
def test_bad_reductions_are_refused_at_build_time_naming_op_scope_and_shape(make, message):
    with pg.Graph().as_default(), pg.scope("net"):
        x = pg.placeholder((2, 3, 0), "float32", name="x")
        with pytest.raises(pg.GraphError, match=message) as caught:
            make(x)
    text = str(caught.value)
    assert "in scope 'net'" in text and "[2, 3, 0]" in text and "cannot build reduce_" in text


def test_max_over_an_empty_output_is_fine_as_in_numpy():
    """np.max(np.empty((0, 5)), axis=1) is an empty array: nothing is reduced over nothing."""
    graph = pg.Graph()
    with graph.as_default():
        top = pg.reduce_max(pg.constant(np.empty((0, 5))), axis=1)
    with pg.Session(graph) as sess:
        assert sess.run(top).shape == (0,)


# --- GPU (the CUDA simulator: tiny) -----------------------------------------------------------

GPU_CASES = [
    ((3, 4, 5), None, False),
    ((3, 4, 5), 1, True),
    ((3, 4, 5), (0, 2), False),
    ((3, 4, 5), (-1, 0), True),
    ((2, 0, 3), 1, False),
    ((1, 70), 0, False),
    ((), None, False),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_gpu_reductions_match_the_cpu(dtype):
    rng = np.random.default_rng(4)
    graph = pg.Graph("gpu reductions")
    fetches = []
    with graph.as_default():
        for shape, axis, keepdims in GPU_CASES:
            value = values(shape, dtype, rng, special=False)
            if value.size > 6 and dtype.startswith("float"):
                value.reshape(-1)[[1, 6]] = [np.nan, -0.0]
            x = pg.constant(value)
            with pg.device("gpu:0"):
                for op_type in OPS:
                    axes = normalized(axis, len(shape))
                    empty = 0 in (shape[a] for a in axes)
                    if op_type in ("reduce_max", "reduce_min") and empty:
                        continue
                    if op_type == "reduce_mean" and dtype.startswith("int"):
                        continue
                    fetches.append(getattr(pg, op_type)(x, axis=axis, keepdims=keepdims))
    with pg.Session(graph, pg.Config(executor="sequential")) as sess:
        expected = sess.run(fetches)
    with pg.Session(graph) as sess:
        got, trace = sess.run(fetches, trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    for tensor, want, result in zip(fetches, expected, got):
        assert result.shape == want.shape and result.dtype == want.dtype, tensor.name
        if tensor.op.type in ("reduce_max", "reduce_min") or dtype.startswith("int"):
            np.testing.assert_array_equal(result, want, err_msg=tensor.name)
            assert np.array_equal(np.signbit(result), np.signbit(want)), tensor.name
        else:
            tolerance = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(result, want, rtol=tolerance, atol=tolerance)


def test_the_gpu_axes_launcher_checks_its_arguments():
    from numba import cuda

    from parallelgraph.kernels.gpu.reduce import reduce_axes_launches

    x = cuda.to_device(np.ones((2, 3), np.int32))
    with pytest.raises(TypeError, match="device arrays"):
        reduce_axes_launches("sum", np.ones((2, 3)), cuda.device_array(2), (1,))
    with pytest.raises(ValueError, match="mean of int32"):
        reduce_axes_launches("mean", x, cuda.device_array(2, np.int32), (1,))
    with pytest.raises(ValueError, match="3 elements, expected 2"):
        reduce_axes_launches("max", x, cuda.device_array(3, np.int32), (1,))
    with pytest.raises(ValueError, match="kind"):
        reduce_axes_launches("prod", x, cuda.device_array(2, np.int32), (1,))
