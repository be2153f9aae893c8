"""take_along_axis, gather_nd and broadcast_to (ops.indexing) against NumPy, bit for bit: they
only move values, so every dtype, executor, thread setting and the GPU (under the simulator
here) must give exactly NumPy's bytes. Shapes are generated: sizes 0 and 1, odd and prime,
every axis, broadcasting on either side, negative indices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import random_values, same_bits

import parallelgraph as pg
from parallelgraph.ops import opdef
from parallelgraph.ops.shape_ops import fewest_axes

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
SETTINGS = [(1, 1), (2, 1), (1, 2), (2, 2)]


def indices_in(rng, length, shape, dtype="int64"):
    """Indices into an axis of `length`, negative ones among them ([-length, length))."""
    if length == 0:
        return np.zeros(shape, dtype)
    return rng.integers(-length, length, shape).astype(dtype)


def gather_nd_plain(params, indices, batch_dims=0):
    """tf.gather_nd as its documentation says, written as loops over the index tuples."""
    b, q = batch_dims, indices.shape[-1]
    out_shape = indices.shape[:-1] + params.shape[b + q :]
    out = np.empty(out_shape, params.dtype)
    for position in np.ndindex(*indices.shape[:-1]):
        batch = position[:b]
        key = tuple(int(i) for i in indices[position])
        out[position] = params[batch + key]
    return out


# --- generated cases ---------------------------------------------------------------------------

X_SHAPES = [(7,), (5, 3), (1, 4), (4, 1, 6), (0, 3), (3, 0, 2), (2, 3, 5, 2), (13, 1)]


def take_along_shape(shape, ishape, axis):
    """np.take_along_axis's output shape: the broadcast sizes, indices' along `axis`."""
    return tuple(m if a == axis or n == 1 else n for a, (n, m) in enumerate(zip(shape, ishape)))


def take_along_cases(rng, dtype):
    """(name, x, indices, axis) for every axis of every shape: indices of x's shape with the
    axis 0, 1 or 3 long, and with a broadcast on another axis on either side."""
    out = []
    for shape in X_SHAPES:
        x = random_values(rng, shape, dtype)
        for axis in range(len(shape)):
            for m in (0, 1, 3):
                target = list(shape)
                target[axis] = m
                variants = [tuple(target)]
                others = [a for a in range(len(shape)) if a != axis]
                if others:
                    a = others[len(others) // 2]
                    if shape[a] != 1:  # indices broadcast over axis a of x
                        narrow = list(target)
                        narrow[a] = 1
                        variants.append(tuple(narrow))
                    else:  # x broadcast over axis a: indices 4 long there
                        wide = list(target)
                        wide[a] = 4
                        variants.append(tuple(wide))
                for k, ishape in enumerate(variants):
                    if shape[axis] == 0 and np.prod(take_along_shape(shape, ishape, axis)):
                        continue  # no index can be in range (refused: test_bad_arguments)
                    idx = indices_in(rng, shape[axis], ishape, "int32" if k else "int64")
                    out.append((f"take{shape}-axis{axis}-{ishape}", x, idx, axis))
    neg = random_values(rng, (4, 6), dtype)
    out.append(("take-negative-axis", neg, indices_in(rng, 6, (4, 2)), -1))
    return out


def gather_nd_cases(rng, dtype):
    """(name, params, indices, batch_dims): tuples of every length q the rank allows, under
    batch_dims 0, 1 and 2, with index shapes (), (3,), (2, 3) and (0,) before the tuples."""
    out = []
    for shape in [(7,), (5, 3), (4, 1, 6), (3, 0, 2), (2, 3, 5, 2), (0, 4)]:
        params = random_values(rng, shape, dtype)
        for b in range(0, min(3, len(shape))):
            for q in range(0, len(shape) - b + 1):
                for lead in [(), (3,), (2, 3), (0,)]:
                    ishape = shape[:b] + lead + (q,)
                    if b and lead == (2, 3):
                        continue
                    axes = shape[b : b + q]
                    empty_out = np.prod(ishape[:-1]) == 0 or np.prod(shape[b + q :]) == 0
                    if 0 in axes and not empty_out:
                        continue  # no index can be in range (refused)
                    columns = [indices_in(rng, n, (*ishape[:-1], 1)) for n in axes]
                    idx = np.concatenate(columns, -1) if columns else np.zeros(ishape, np.int64)
                    idx = idx.astype("int32" if (b + q) % 2 else "int64")
                    out.append((f"gather_nd{shape}-b{b}-q{q}-{lead}", params, idx, b))
    return out


BROADCASTS = [
    ((), (3, 4)),
    ((1,), (5,)),
    ((3,), (2, 3)),
    ((4, 1), (4, 7)),
    ((1, 5), (3, 5)),
    ((2, 1, 3), (2, 5, 3)),
    ((1, 1), (0, 3)),
    ((3, 1), (2, 3, 1)),
    ((0, 1), (2, 0, 4)),
    ((1, 1, 1), (2, 3, 2)),
    ((5, 3), (5, 3)),
    ((7, 1, 1), (1, 7, 11, 2)),
]


def build_all(dtype, device=None, seed=0):
    """One graph with every generated case: (name, tensor, NumPy's value)."""
    rng = np.random.default_rng(seed)
    g = pg.Graph(f"indexing-{dtype}")
    fetches = []
    with g.as_default(), pg.device(device):
        for name, x, idx, axis in take_along_cases(rng, dtype):
            tensor = pg.take_along_axis(pg.constant(x), pg.constant(idx), axis)
            fetches.append((name, tensor, np.take_along_axis(x, idx.astype(np.int64), axis)))
        for name, params, idx, b in gather_nd_cases(rng, dtype):
            tensor = pg.gather_nd(pg.constant(params), pg.constant(idx), batch_dims=b)
            fetches.append((name, tensor, gather_nd_plain(params, idx, b)))
        for shape, target in BROADCASTS:
            x = random_values(rng, shape, dtype)
            tensor = pg.broadcast_to(pg.constant(x), target)
            fetches.append((f"broadcast{shape}->{target}", tensor, np.broadcast_to(x, target)))
    return g, fetches


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_case_gives_numpys_bits(dtype):
    g, fetches = build_all(dtype)
    tensors = [t for _, t, _ in fetches]
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        got = sess.run(tensors)
        for (name, tensor, want), value in zip(fetches, got):
            same_bits(value, want, name)
            if dtype in ("float64", "int32"):  # the OpDef's reference is NumPy's answer too
                args = sess.run(list(tensor.op.inputs))
                same_bits(opdef(tensor.op.type).reference(tensor.op, args), want, name)
            assert value.flags.c_contiguous and value.flags.writeable


def sharded_graph(dtype):
    """Cases with rows enough to shard: every op, axes first, middle and last."""
    rng = np.random.default_rng(1)
    x = random_values(rng, (23, 7, 5), dtype)
    g = pg.Graph("sharded")
    fetches = []
    with g.as_default():
        c = pg.constant(x)
        for axis, shape in [(0, (31, 7, 5)), (1, (23, 3, 5)), (2, (23, 1, 9)), (1, (1, 4, 5))]:
            idx = indices_in(rng, x.shape[axis], shape)
            fetches.append(pg.take_along_axis(c, idx, axis))
        for b, ishape in [(0, (19, 3, 2)), (1, (23, 4, 1)), (0, (29, 3))]:
            q = ishape[-1]
            columns = [indices_in(rng, n, (*ishape[:-1], 1)) for n in x.shape[b : b + q]]
            fetches.append(pg.gather_nd(c, np.concatenate(columns, -1), batch_dims=b))
        fetches.append(pg.broadcast_to(c[:, :1], (3, 23, 7, 5)))
        fetches.append(pg.broadcast_to(c[0], (41, 7, 5)))
    return g, fetches


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_the_same_bits_on_every_thread_setting(dtype, many_shards):
    g, fetches = sharded_graph(dtype)
    with pg.Session(g, pg.Config(executor="sequential")) as sess:
        reference = sess.run(fetches)
        plan = sess.plan_for(fetches)
    sharded = {s.op.type for s in plan.steps if len(s.shards) > 1}
    assert {"take_along", "gather_nd", "broadcast_to"} <= sharded
    for inter, intra in SETTINGS:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra)
        with pg.Session(g, config) as sess:
            for k, (got, want) in enumerate(zip(sess.run(fetches), reference)):
                assert got.tobytes() == want.tobytes(), (k, inter, intra)


def test_fed_indices_out_of_range_are_an_op_error_naming_the_index(many_shards):
    x = np.arange(60.0).reshape(5, 12)
    g = pg.Graph()
    with g.as_default(), pg.scope("onnx"):
        along = pg.placeholder((5, 3), "int64", name="along")
        taken = pg.take_along_axis(x, along, axis=1)
        tuples = pg.placeholder((6, 2), "int32", name="tuples")
        picked = pg.gather_nd(x, tuples)
    with pg.Session(g, pg.Config(intra_op_threads=2)) as sess:
        good = np.array([[0, -1, 11]] * 5)
        assert len(sess.plan_for(taken, {along: good}).steps[0].shards) > 1
        for bad, index in [(12, 12), (-13, -13)]:
            fed = good.copy()
            fed[3, 1] = bad
            with pytest.raises(
                pg.OpError,
                match=rf"onnx/TakeAlong.*index {index} is out of range for axis 1 of size 12",
            ):
                sess.run(taken, {along: fed})
        same_bits(sess.run(taken, {along: good}), np.take_along_axis(x, good, 1), "after")
        fine = np.array([[0, 0], [4, 11], [-5, -12], [2, 3], [1, 1], [3, -1]], np.int32)
        for column, bad, axis, size in [(0, 5, 0, 5), (1, -13, 1, 12)]:
            fed = fine.copy()
            fed[4, column] = bad
            with pytest.raises(
                pg.OpError,
                match=rf"onnx/GatherNd.*index {bad} is out of range for axis {axis} of size "
                rf"{size}",
            ):
                sess.run(picked, {tuples: fed})
        same_bits(sess.run(picked, {tuples: fine}), gather_nd_plain(x, fine), "after")


X = np.zeros((2, 3), np.float32)
I32 = np.zeros((2, 3), np.int32)
BAD = [
    (lambda c: pg.take_along_axis(c, [0, 1], 0), r"take_along op 'TakeAlong'.*x's rank \(2\)"),
    (lambda c: pg.take_along_axis(c, pg.constant(X), 1), r"int32 or int64, not float32"),
    (lambda c: pg.take_along_axis(c, I32, 2), r"axis 2 is out of range for rank 2"),
    (lambda c: pg.take_along_axis(c, np.zeros((3, 1), int), 1), r"axis 0 of x \(2\) and of"),
    (lambda c: pg.take_along_axis(c, [[3], [0]], 1), r"index 3 is out of range for axis 1 of"),
    (lambda c: pg.take_along_axis(c, [[0, -3, 1]], 0), r"index -3 is out of range for axis 0 of "),
    (lambda c: pg.take_along_axis(c[:, :0], [[0]], 1), r"axis 1 of x is empty"),
    (lambda c: pg.gather_nd(c, [[0, 0, 0]]), r"gather_nd op 'GatherNd'.*3 entries are longer"),
    (lambda c: pg.gather_nd(c, 0), r"at least one axis"),
    (lambda c: pg.gather_nd(c, [[2, 0]]), r"index 2 is out of range for axis 0 of size 2"),
    (lambda c: pg.gather_nd(c, [[0, 3]]), r"index 3 is out of range for axis 1 of size 3"),
    (lambda c: pg.gather_nd(c, [[[0]], [[1]]], batch_dims=3), r"batch_dims 3 must be less"),
    (lambda c: pg.gather_nd(c, [[0], [1], [1]], batch_dims=1), r"batch_dims=1 axes of params"),
    (lambda c: pg.gather_nd(c, [[0]], batch_dims=-1), r"non-negative int"),
    (lambda c: pg.gather_nd(c, [[0.5]]), r"int32 or int64, not float64"),
    (lambda c: pg.gather_nd(c[:0], [[0]]), r"axis 0 of params is empty"),
    (lambda c: pg.broadcast_to(c, (3, 3)), r"cannot broadcast \[2, 3\] to \[3, 3\]: axis 0"),
    (lambda c: pg.broadcast_to(c, (3,)), r"broadcast_to op 'BroadcastTo'.*fewer axes"),
    (lambda c: pg.broadcast_to(c, (2, -3)), r"non-negative ints"),
    (lambda c: pg.broadcast_to(c, "2, 3"), r"list of ints"),
    (lambda c: pg.broadcast_to(c, (4, 2, 1)), r"axis 1 of x has size 3, not 1 or 1"),
]


@pytest.mark.parametrize("make, message", BAD)
def test_bad_arguments_are_refused_naming_op_scope_and_shapes(make, message):
    g = pg.Graph()
    with g.as_default(), pg.scope("net"):
        c = pg.constant(X, name="x")
        with pytest.raises(pg.GraphError, match=message) as caught:
            make(c)
    text = str(caught.value)
    assert "scope 'net" in text
    assert "[2, 3]" in text or "[2, 0]" in text or "[0, 3]" in text


def test_fewest_axes_merges_what_every_array_steps_over_alike():
    assert fewest_axes((4, 5, 6), (30, 6, 1), (30, 6, 1)) == ((120,), (1,), (1,))
    assert fewest_axes((4, 5, 6), (30, 6, 1), (0, 6, 1)) == ((4, 30), (30, 1), (0, 1))
    assert fewest_axes((4, 1, 6), (6, 99, 0), (6, 6, 1)) == ((4, 6), (6, 0), (6, 1))
    assert fewest_axes((1, 1), (3, 1)) == ((1,), (0,))
    assert fewest_axes((3, 0, 2), (2, 2, 1)) == ((0,), (0,))
    for dims, strides in [((2, 3, 4), (0, 0, 1)), ((2, 3), (0, 0))]:  # stride-0 runs merge
        merged = fewest_axes(dims, strides)
        flat = [
            sum(i * s for i, s in zip(ix, strides)) for ix in itertools.product(*map(range, dims))
        ]
        walked = [
            sum(i * s for i, s in zip(ix, merged[1]))
            for ix in itertools.product(*map(range, merged[0]))
        ]
        assert flat == walked


def test_take_along_axis_none_reads_x_flattened_and_indices_broadcast_both_ways():
    x = np.arange(12.0).reshape(3, 4)
    rows = np.array([[0, 3, -1]])  # (1, 3): broadcast over x's 3 rows
    g = pg.Graph()
    with g.as_default():
        flat = pg.take_along_axis(x, [11, -12, 5], axis=None)
        spread = pg.take_along_axis(pg.constant(x[:1]), np.array([[1], [2], [-1]]), axis=1)
        shared = pg.take_along_axis(x, rows, axis=1)
    with pg.Session(g) as sess:
        a, b, c = sess.run([flat, spread, shared])
    same_bits(a, x.reshape(-1)[[11, 0, 5]], "axis None")
    same_bits(b, np.array([[1.0], [2.0], [3.0]]), "x broadcast")
    same_bits(c, x[:, [0, 3, 3]], "indices broadcast")


# --- GPU (Numba's CUDA simulator unless a real GPU is there) --------------------------------


def gpu_graph(dtype, device):
    rng = np.random.default_rng(2)
    x = random_values(rng, (3, 4, 2), dtype)
    g = pg.Graph("gpu-indexing")
    fetches = []
    with g.as_default(), pg.device(device):
        c = pg.constant(x)
        fetches.append(pg.take_along_axis(c, indices_in(rng, 4, (3, 2, 1)), 1))
        fetches.append(pg.take_along_axis(c, indices_in(rng, 3, (2, 1, 2), "int32"), 0))
        fetches.append(pg.take_along_axis(c, indices_in(rng, 2, (3, 4, 3)), -1))
        fetches.append(pg.gather_nd(c, np.array([[2, -1], [0, 1]])))
        fetches.append(pg.gather_nd(c, np.array([[[1, 0]], [[3, 1]], [[-4, 0]]]), batch_dims=1))
        fetches.append(pg.gather_nd(c, np.zeros((2, 0), np.int32)))
        fetches.append(pg.gather_nd(c, np.zeros((0, 2), np.int64)))
        fetches.append(pg.broadcast_to(c[:, :1], (2, 3, 3, 2)))
        fetches.append(pg.broadcast_to(c[0, 0], (0, 2)))
    return g, fetches


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_gpu_kernels_give_the_cpu_bits(dtype):
    g_cpu, cpu = gpu_graph(dtype, None)
    g_gpu, gpu = gpu_graph(dtype, "gpu:0")
    with pg.Session(g_cpu, pg.Config(executor="sequential")) as sess:
        reference = sess.run(cpu)
    with pg.Session(g_gpu, pg.Config(streams=2)) as sess:
        got, trace = sess.run(gpu, trace=True)
    assert {e.device for e in trace.ops()} == {"gpu:0"}
    ran = {e.name.split("/")[-1].split("_")[0] for e in trace.ops()}
    assert {"TakeAlong", "GatherNd", "BroadcastTo"} <= ran
    for k, (value, want) in enumerate(zip(got, reference)):
        same_bits(value, want, k)


def test_gpu_clamps_an_index_the_cpu_refuses():
    """Documented difference: the GPU kernels cannot raise, so a fed out-of-range index is
    clamped into its axis (they never read outside the array)."""
    x = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    g = pg.Graph()
    with g.as_default(), pg.device("gpu:0"):
        along = pg.placeholder((3, 2), "int64")
        tuples = pg.placeholder((3, 2), "int32")
        taken = pg.take_along_axis(x, along, 0)
        picked = pg.gather_nd(x, tuples)
    with pg.Session(g, pg.Config()) as sess:
        a, b = sess.run(
            [taken, picked],
            {
                along: np.array([[9, -1], [-8, 0], [4, 7]]),
                tuples: np.array([[7, 0], [-9, 5], [1, -1]]),
            },
        )
    same_bits(a, x[[[4, 4], [0, 0], [4, 4]], [[0, 1]] * 3], "take clamped")
    same_bits(b, x[[4, 0, 1], [0, 1, 1]], "gather_nd clamped")
