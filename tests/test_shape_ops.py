"""The shape ops (reshape, expand_dims, squeeze, transpose, concat, split, slice, t[...], gather,
top_k) against NumPy, bit for bit: they only move values, so every dtype, executor, thread
setting and the GPU (under the simulator here) must give exactly NumPy's bytes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import random_values, same_bits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parallelgraph as pg
from parallelgraph.ops import opdef

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def cases(dtype, seed=0):
    """(name, builder of the tensor, NumPy's value) for every op, on shapes with sizes 0, 1,
    odd and prime. Builders take the dict of constants by name."""
    rng = np.random.default_rng(seed)
    a = random_values(rng, (7, 5, 3), dtype)
    m = random_values(rng, (17, 11), dtype)
    e = random_values(rng, (0, 3), dtype)
    s = random_values(rng, (), dtype)
    v = random_values(rng, (13,), dtype)
    w = random_values(rng, (2, 3, 5, 4), dtype)
    data = dict(a=a, m=m, e=e, s=s, v=v, w=w)
    i32 = np.array([[3, -1], [0, 4]], np.int32)
    out = [
        ("reshape", lambda c: pg.reshape(c["a"], (5, -1)), a.reshape(5, -1)),
        ("reshape_empty", lambda c: pg.reshape(c["e"], (3, 0, 1)), e.reshape(3, 0, 1)),
        ("reshape_scalar", lambda c: pg.reshape(c["s"], (1, 1)), s.reshape(1, 1)),
        ("expand_dims", lambda c: pg.expand_dims(c["a"], -1), a[..., None]),
        ("expand_dims_0", lambda c: pg.expand_dims(c["s"], 0), s[None]),
        ("squeeze_all", lambda c: pg.squeeze(pg.reshape(c["v"], (1, 13, 1))), v),
        ("squeeze_axis", lambda c: pg.squeeze(pg.reshape(c["v"], (1, 13, 1)), -1), v[None]),
        ("transpose", lambda c: pg.transpose(c["a"]), a.T),
        ("transpose_102", lambda c: pg.transpose(c["a"], (1, 0, 2)), a.transpose(1, 0, 2)),
        ("transpose_2d", lambda c: pg.transpose(c["m"]), m.T),
        ("transpose_4d", lambda c: pg.transpose(c["w"], (3, 1, 0, 2)), w.transpose(3, 1, 0, 2)),
        ("transpose_neg", lambda c: pg.transpose(c["w"], (0, -1, 1, 2)), w.transpose(0, 3, 1, 2)),
        ("transpose_empty", lambda c: pg.transpose(c["e"]), e.T),
        ("transpose_scalar", lambda c: pg.transpose(c["s"]), s),
        ("transpose_1d", lambda c: pg.transpose(c["v"]), v),
        (
            "concat_0",
            lambda c: pg.concat([c["a"], c["a"][:2], c["a"][:0]], 0),
            np.concatenate([a, a[:2], a[:0]], 0),
        ),
        (
            "concat_1",
            lambda c: pg.concat([c["a"][:, 1:], c["a"]], 1),
            np.concatenate([a[:, 1:], a], 1),
        ),
        (
            "concat_last",
            lambda c: pg.concat([c["m"], c["m"][:, :1], c["m"][:, 3:]], -1),
            np.concatenate([m, m[:, :1], m[:, 3:]], -1),
        ),
        ("concat_one", lambda c: pg.concat([c["v"]], 0), v),
        ("concat_empty", lambda c: pg.concat([c["e"], c["e"]], 1), np.concatenate([e, e], 1)),
        ("slice", lambda c: pg.slice(c["a"], [1, 0, 1], [5, -1, 2]), a[1:6, :, 1:3]),
        ("slice_rows", lambda c: pg.slice(c["m"], [3, 0], [11, 11]), m[3:14]),
        ("slice_zero", lambda c: pg.slice(c["m"], [17, 2], [0, 3]), m[17:17, 2:5]),
        ("getitem_int", lambda c: c["a"][-1], a[-1]),
        ("getitem_steps", lambda c: c["a"][::-2, None, 3:0:-1, 1], a[::-2, None, 3:0:-1, 1]),
        ("getitem_ellipsis", lambda c: c["w"][..., 1, ::3], w[..., 1, ::3]),
        ("getitem_scalar", lambda c: c["m"][16, 10], m[16, 10]),
        ("getitem_newaxis", lambda c: c["s"][None, ..., None], s[None, ..., None]),
        ("getitem_empty", lambda c: c["m"][5:2], m[5:2]),
        ("gather", lambda c: pg.gather(c["a"], [6, -7, 0, 2]), np.take(a, [6, -7, 0, 2], 0)),
        (
            "gather_int32_axis1",
            lambda c: pg.gather(c["a"], pg.constant(i32), axis=1),
            np.take(a, i32, 1),
        ),
        ("gather_last", lambda c: pg.gather(c["m"], [10, 0, -1], axis=-1), m[:, [10, 0, -1]]),
        ("gather_scalar", lambda c: pg.gather(c["w"], 2, axis=1), w[:, 2]),
        ("gather_none", lambda c: pg.gather(c["m"], [], axis=0), m[:0]),
        (
            "gather_1d",
            lambda c: pg.gather(c["v"], [[3, -1, 0], [12, 5, 5]]),
            np.take(v, [[3, -1, 0], [12, 5, 5]]),
        ),
        (
            "gather_2d_indices_last",
            lambda c: pg.gather(c["a"], [[2, 0], [1, 1], [0, -3]], axis=-1),
            np.take(a, [[2, 0], [1, 1], [0, -3]], -1),
        ),
        ("gather_empty_params", lambda c: pg.gather(c["e"], [2, 0], axis=1), e[:, [2, 0]]),
    ]
    if dtype != "bool":
        for k in (0, 1, 3, 11):
            values_, indices = top_k_expected(m, k)
            out.append((f"top_k_{k}_values", lambda c, k=k: pg.top_k(c["m"], k)[0], values_))
            out.append((f"top_k_{k}_indices", lambda c, k=k: pg.top_k(c["m"], k)[1], indices))
        values_, indices = top_k_expected(a, 2)
        out.append(("top_k_3d", lambda c: pg.top_k(c["a"], 2, sorted=False)[1], indices))
    return data, out


def top_k_expected(x, k):
    """top_k as the docs say, written plainly: larger first, NaN above all, ties by position."""
    rows = x.reshape(-1, x.shape[-1])
    picks = []
    for row in rows:
        key = [(0 if math.isnan(float(v)) else 1, -float(v), j) for j, v in enumerate(row)]
        picks.append([j for *_, j in sorted(key)[:k]])
    indices = np.array(picks, np.int32).reshape((*x.shape[:-1], k))
    return np.take_along_axis(x, indices.astype(np.int64), -1), indices


def build_all(dtype, device=None):
    data, listed = cases(dtype)
    g = pg.Graph(f"shape-{dtype}")
    with g.as_default(), pg.device(device):
        constants = {name: pg.constant(value) for name, value in data.items()}
        fetches = [(name, build(constants), want) for name, build, want in listed]
    return g, fetches


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_op_gives_numpys_bits_on_every_thread_setting(dtype, many_shards):
    g, fetches = build_all(dtype)
    tensors = [t for _, t, _ in fetches]
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        reference = sess.run(tensors)
        plan = sess.plan_for(tensors)
    for (name, _, want), got in zip(fetches, reference):
        same_bits(got, want, name)
    sharded = {s.op.type for s in plan.steps if len(s.shards) > 1}
    movers = {"transpose", "concat", "strided_slice", "gather"}
    assert movers | ({"top_k_indices", "take_along_axis"} if dtype != "bool" else set()) <= sharded
    for inter, intra in SETTINGS:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra)
        with pg.Session(g, config) as sess:
            for (name, _, _), got, want in zip(fetches, sess.run(tensors), reference):
                assert got.tobytes() == want.tobytes(), (name, inter, intra)


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_references_agree_with_numpy(dtype):
    """Each OpDef's `reference` is NumPy's answer (what other tests compare against)."""
    g, fetches = build_all(dtype)
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        for name, tensor, want in fetches:
            args = sess.run(list(tensor.op.inputs))
            expected = opdef(tensor.op.type).reference(tensor.op, args)
            same_bits(np.asarray(expected).astype(want.dtype), want, name)


def test_view_ops_cost_nothing_and_reshape_is_a_view_on_the_cpu():
    g = pg.Graph()
    x = np.arange(6.0).reshape(2, 3)
    with g.as_default():
        c = pg.constant(x)
        ops = [pg.reshape(c, (3, 2)), pg.expand_dims(c, 1), pg.squeeze(pg.expand_dims(c, 0))]
    for t in ops:
        definition = opdef(t.op.type)
        assert definition.cost(t.op).bytes == 0 and definition.cost(t.op).flops == 0
        value = definition.whole(t.op)([x])
        assert np.shares_memory(value, x) and value.shape == t.shape
    with pg.Session(g) as sess:
        first = sess.run(ops[0])
        first[...] = -1  # the fetched value is the caller's own: the constant is unchanged
        np.testing.assert_array_equal(sess.run(ops[0]), x.reshape(3, 2))


def test_split_makes_one_slice_op_per_piece_in_one_scope():
    g = pg.Graph()
    x = np.arange(35.0).reshape(5, 7)
    with g.as_default(), pg.scope("net"):
        c = pg.constant(x)
        equal = pg.split(c, 5)
        sized = pg.split(c, [2, -1, 0, 1], axis=-1, name="cut")
    assert [t.name for t in equal] == ["net/split/Slice"] + [
        f"net/split/Slice_{i}" for i in (1, 2, 3, 4)
    ]
    assert [t.name.rsplit("/", 1)[0] for t in sized] == ["net/cut"] * 4
    with pg.Session(g, pg.Config(inter_op_threads=2)) as sess:
        got = sess.run([equal, sized])
    for piece, want in zip(got[0], np.split(x, 5)):
        same_bits(piece, want, "split 5")
    for piece, want in zip(got[1], np.split(x, [2, 6, 6], axis=1)):
        same_bits(piece, want, "split sizes")


def test_top_k_order_nan_ties_and_signed_zero():
    x = np.array(
        [
            [1.0, np.nan, 3.0, 3.0, -np.inf, np.nan],
            [-0.0, 0.0, -0.0, -1.0, 2.0, np.inf],
            [5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
        ],
        np.float32,
    )
    g = pg.Graph()
    with g.as_default():
        values_, indices = pg.top_k(x, k=4)
        ints = pg.top_k(np.array([[2, 7, 7, -3]], np.int64), k=3)
    assert values_.name == "TopKV2/values" and indices.name == "TopKV2/indices"
    with pg.Session(g) as sess:
        (got_values, got_indices), int_result = sess.run([(values_, indices), ints])
    np.testing.assert_array_equal(got_indices, [[1, 5, 2, 3], [5, 4, 0, 1], [0, 1, 2, 3]])
    assert got_indices.dtype == np.int32 and got_values.dtype == np.float32
    same_bits(got_values, np.take_along_axis(x, got_indices.astype(np.int64), -1), "values")
    assert np.signbit(got_values[1, 2]) and not np.signbit(got_values[1, 3])  # -0.0 then 0.0
    np.testing.assert_array_equal(int_result.values, [[7, 7, 2]])
    np.testing.assert_array_equal(int_result.indices, [[1, 2, 0]])


# --- t[...] against NumPy on generated shapes and keys ---------------------------------------


@st.composite
def shapes_and_keys(draw):
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=4)))
    bound = st.one_of(st.none(), st.integers(-7, 7))
    items, axis = [], 0
    ellipsis = False
    for _ in range(draw(st.integers(0, len(shape) + 2))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if kind == "int" and axis < len(shape) and shape[axis] > 0:
            items.append(draw(st.integers(-shape[axis], shape[axis] - 1)))
            axis += 1
        elif kind == "slice" and axis < len(shape):
            step = draw(st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3])))
            items.append(slice(draw(bound), draw(bound), step))
            axis += 1
        elif kind == "ellipsis" and not ellipsis:
            items.append(Ellipsis)
            ellipsis = True
        elif kind == "none":
            items.append(None)
    key = items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)
    return shape, key


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes_and_keys())
def test_getitem_matches_numpy_basic_indexing(shape_and_key):
    shape, key = shape_and_key
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    g = pg.Graph()
    with g.as_default():
        try:
            x[key]
        except IndexError:  # an int out of range after an Ellipsis: refused as NumPy does
            with pytest.raises(pg.GraphError, match="out of range"):
                pg.constant(x)[key]
            return
        y = pg.constant(x)[key]
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        same_bits(sess.run(y), x[key], repr(key))


# --- refused at build time -------------------------------------------------------------------

X = np.zeros((2, 3), np.float32)

BAD = [
    (lambda c: pg.reshape(c, (4, -1)), r"reshape op 'Reshape'.*cannot reshape \[2, 3\] \(6 "),
    (lambda c: pg.reshape(c, (5,)), r"cannot reshape \[2, 3\] \(6 elements\) into \[5\]"),
    (lambda c: pg.reshape(c, (-1, -1)), r"one -1"),
    (lambda c: pg.expand_dims(c, 3), r"axis 3 is out of range for a new axis of a rank-2"),
    (lambda c: pg.expand_dims(c, -4), r"axis -4 is out of range .*use -3 to 2"),
    (lambda c: pg.squeeze(c, 0), r"cannot squeeze axis 0 of size 2"),
    (lambda c: pg.squeeze(c, 5), r"axis 5 is out of range"),
    (lambda c: pg.transpose(c, (0, 0)), r"transpose op.*perm \[0, 0\] must list each"),
    (lambda c: pg.transpose(c, (1,)), r"perm \[1\] must list each of the 2 axes"),
    (lambda c: pg.transpose(c, (0, -2)), r"perm \[0, -2\] must list each"),
    (lambda c: pg.transpose(c, (0, 2)), r"perm entry 2 is out of range for rank 2"),
    (lambda c: pg.reshape(c, pg.constant([3, 2])), r"shape must be a list of ints"),
    (lambda c: pg.concat([c, pg.constant(np.zeros((3, 3), np.float32))], 1), r"differ off axis 1"),
    (lambda c: pg.concat([c, pg.constant(np.zeros((2, 3)))], 0), r"dtypes differ"),
    (lambda c: pg.concat([c, c], 2), r"axis 2 is out of range for rank 2"),
    (lambda c: pg.concat([], 0), r"concat op 'concat'.*non-empty list"),
    (lambda c: pg.split(c, 4, axis=1), r"split op 'split'.*axis of 3 into 4 equal"),
    (lambda c: pg.split(c, [1, 1], axis=1), r"sizes \[1, 1\] do not add up to the axis's 3"),
    (lambda c: pg.split(c, [-1, -1, 3], axis=1), r"at most one -1"),
    (lambda c: pg.split(c, [4, -1], axis=1), r"do not add up"),
    (lambda c: pg.split(c, 1, axis=2), r"axis 2 is out of range"),
    (
        lambda c: pg.slice(c, [1, 0], [2, 3]),
        r"strided_slice op 'Slice'.*out of bounds for \[2, 3\]",
    ),
    (lambda c: pg.slice(c, [0, 4], [1, -1]), r"out of bounds"),
    (lambda c: pg.slice(c, [0], [1]), r"one entry per axis"),
    (lambda c: c[2], r"index 2 is out of range for axis 0 of size 2"),
    (lambda c: c[0, -4], r"index -4 is out of range for axis 1 of size 3"),
    (lambda c: c[0, 0, 0], r"too many indices \(3\)"),
    (lambda c: c[..., ...], r"one Ellipsis"),
    (lambda c: c[[0, 1]], r"advanced indexing.*pg.gather"),
    (lambda c: c[np.array([0])], r"advanced indexing.*pg.gather"),
    (lambda c: c[pg.constant(np.array([0]))], r"advanced indexing.*pg.gather"),
    (lambda c: c[True], r"advanced indexing.*pg.gather"),
    (lambda c: c[::0], r"bad slice"),
    (lambda c: pg.gather(c, [0.5]), r"gather op 'GatherV2'.*int32 or int64, not float"),
    (lambda c: pg.gather(c, pg.constant([1.0])), r"indices must be int32 or int64, not float32"),
    (lambda c: pg.gather(c, [0, 3], axis=1), r"index 3 is out of range for axis 1 of size 3"),
    (lambda c: pg.gather(c, [-3]), r"index -3 is out of range for axis 0 of size 2"),
    (lambda c: pg.gather(c, [0], axis=2), r"axis 2 is out of range"),
    (lambda c: pg.top_k(c, 4), r"top_k_indices op 'indices' in scope 'net/TopKV2'.*k=4"),
    (lambda c: pg.top_k(c, -1), r"k must be a non-negative int"),
    (lambda c: pg.top_k(c > 0.0, 1), r"not bool"),
]


@pytest.mark.parametrize("make, message", BAD)
def test_bad_arguments_are_refused_naming_op_scope_and_shapes(make, message):
    g = pg.Graph()
    with g.as_default(), pg.scope("net"):
        c = pg.constant(X)
        with pytest.raises(pg.GraphError, match=message) as caught:
            make(c)
    assert "scope 'net" in str(caught.value)
    if "non-empty" not in message:  # every refusal but the empty concat names the shapes
        assert "[2, 3]" in str(caught.value)


def test_gather_index_out_of_range_at_run_time_is_an_op_error_and_the_session_lives(
    many_shards,
):
    x = np.arange(40.0).reshape(5, 8)
    g = pg.Graph()
    with g.as_default(), pg.scope("lookup"):
        indices = pg.placeholder((6,), "int32", name="ids")
        y = pg.gather(x, indices)
    with pg.Session(g, pg.Config(intra_op_threads=2)) as sess:
        assert len(sess.plan_for(y, {indices: np.zeros(6, np.int32)}).steps[0].shards) > 1
        for bad in ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, -6]):
            with pytest.raises(
                pg.OpError,
                match=r"lookup/GatherV2.*index -?[56] is out of range "
                r"for axis 0 of size 5",
            ):
                sess.run(y, {indices: np.array(bad, np.int32)})
        good = np.array([4, -5, 0, 1, 2, 3], np.int32)
        same_bits(sess.run(y, {indices: good}), x[good], "after the error")


# --- GPU (Numba's CUDA simulator unless a real GPU is there) --------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_gpu_ops_give_the_cpu_bits(dtype):
    g, fetches = build_all(dtype, device="gpu:0")
    tensors = [t for _, t, _ in fetches]
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        reference = sess.run(tensors)
    with pg.Session(g, pg.Config(streams=2)) as sess:
        got, trace = sess.run(tensors, trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    for (name, _, want), value, cpu in zip(fetches, got, reference):
        same_bits(value, want, name)
        same_bits(value, cpu, name)


def test_gpu_gather_clamps_an_index_the_cpu_refuses():
    """Documented difference: the GPU kernel cannot raise, so a fed out-of-range index is
    clamped into the axis (it never reads outside the array)."""
    x = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    g = pg.Graph()
    with g.as_default(), pg.device("gpu:0"):
        indices = pg.placeholder((3,), "int64")
        y = pg.gather(x, indices)
    with pg.Session(g, pg.Config()) as sess:
        got = sess.run(y, {indices: np.array([9, -1, -8])})
    np.testing.assert_array_equal(got, x[[4, 4, 0]])
