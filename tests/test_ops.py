"""Every op against its NumPy reference (float64 where it matters), sharded and not."""

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.kernels.normal64 import normal_rows64
from parallelgraph.ops import opdef
from parallelgraph.ops.sources import philox_normal_reference

RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64"]
TOLERANCE = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def data(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


CASES = {
    "add": lambda d: pg.add(pg.constant(data(5, 7, dtype=d)), pg.constant(data(5, 7, dtype=d))),
    "add_bias": lambda d: pg.constant(data(6, 4, dtype=d)) + pg.constant(data(4, dtype=d)),
    "bias_add": lambda d: pg.constant(data(4, dtype=d)) + pg.constant(data(3, 2, 4, dtype=d)),
    "add_scalar": lambda d: pg.constant(data(5, 3, dtype=d)) + 2.5,
    "multiply": lambda d: pg.constant(data(9, 3, dtype=d)) * pg.constant(data(9, 3, dtype=d)),
    "multiply_bias": lambda d: pg.multiply(
        pg.constant(data(7, 5, dtype=d)), pg.constant(data(5, dtype=d))
    ),
    "relu": lambda d: pg.relu(pg.constant(data(11, 4, dtype=d))),
    "tanh": lambda d: pg.tanh(pg.constant(data(10, 3, dtype=d))),
    "exp": lambda d: pg.exp(pg.constant(data(10, 3, dtype=d) * 3)),
    "sigmoid": lambda d: pg.sigmoid(pg.constant(data(10, 3, dtype=d) * 8)),
    "add_n": lambda d: pg.add_n([pg.constant(data(6, 5, dtype=d)) for _ in range(4)]),
    "add_n_one": lambda d: pg.add_n([pg.constant(data(6, 5, dtype=d))]),
    "matmul": lambda d: pg.matmul(
        pg.constant(data(37, 13, dtype=d)), pg.constant(data(13, 21, dtype=d))
    ),
    "matmul_vector_like": lambda d: (
        pg.constant(data(1, 9, dtype=d)) @ pg.constant(data(9, 1, dtype=d))
    ),
    "reduce_sum_all": lambda d: pg.reduce_sum(pg.constant(data(33, 7, dtype=d))),
    "reduce_sum_0": lambda d: pg.reduce_sum(pg.constant(data(33, 7, dtype=d)), axis=0),
    "reduce_sum_1": lambda d: pg.reduce_sum(pg.constant(data(33, 7, dtype=d)), axis=-1),
    "reduce_sum_3d": lambda d: pg.reduce_sum(pg.constant(data(4, 5, 6, dtype=d)), axis=1),
    "reduce_mean_all": lambda d: pg.reduce_mean(pg.constant(data(20, 3, dtype=d))),
    "reduce_mean_0": lambda d: pg.reduce_mean(pg.constant(data(20, 3, dtype=d)), axis=0),
    "random_normal": lambda d: pg.random_normal((13, 7), seed=11, dtype=d, mean=1.5, stddev=2.0),
    "vector_relu": lambda d: pg.relu(pg.constant(data(17, dtype=d))),
    "scalar_add": lambda d: (
        pg.constant(np.array(2.0, dtype=d)) + pg.constant(np.array(3.0, dtype=d))
    ),
}


def run_and_reference(case, dtype, config):
    g = pg.Graph()
    with g.as_default():
        y = CASES[case](dtype)
    with pg.Session(g, config) as sess:
        value = sess.run(y)
    args = [t.op.attrs["value"] if t.op.type == "constant" else None for t in y.op.inputs]
    return value, opdef(y.op.type).reference(y.op, args), y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_numpy_reference(case, dtype):
    value, expected, y = run_and_reference(case, dtype, pg.Config(executor="sequential"))
    assert value.shape == y.shape and value.dtype == np.dtype(dtype)
    np.testing.assert_allclose(value, expected, **TOLERANCE[dtype])


@pytest.mark.parametrize("case", sorted(CASES))
def test_sharded_op_matches_reference_on_threads(case, many_shards):
    config = pg.Config(inter_op_threads=2, intra_op_threads=3)
    value, expected, _ = run_and_reference(case, "float64", config)
    np.testing.assert_allclose(value, expected, **TOLERANCE["float64"])


def test_random_normal_is_normal_and_independent_of_sharding(many_shards):
    g = pg.Graph()
    with g.as_default():
        y = pg.random_normal((400, 250), seed=3, dtype="float64")
    with pg.Session(g, pg.Config(intra_op_threads=2)) as sess:
        sharded = sess.run(y)
        assert len(sess.plan_for(y).steps[0].shards) > 1
    reference = philox_normal_reference(400 * 250, 3).reshape(400, 250)
    # float64 runs the vectorized kernel (kernels.normal64): its polynomial log/sin/cos are a
    # few ulp from NumPy's, so close to the reference; the shards' bits equal one whole call
    np.testing.assert_allclose(sharded, reference, rtol=1e-13, atol=1e-13)
    whole = np.empty((400, 250))
    normal_rows64(whole, np.uint64(3), 0.0, 1.0, 0, 400)
    np.testing.assert_array_equal(sharded, whole)
    assert abs(sharded.mean()) < 0.01 and abs(sharded.std() - 1) < 0.01


def test_random_normal_default_seed_is_stable_and_per_op():
    def build():
        g = pg.Graph()
        with g.as_default():
            return g, (pg.random_normal((3, 3)), pg.random_normal((3, 3)))

    (g1, (a1, b1)), (g2, (a2, _)) = build(), build()
    with pg.Session(g1) as s1, pg.Session(g2) as s2:
        first, second = s1.run([a1, b1])
        np.testing.assert_array_equal(first, s2.run(a2))
        assert not np.array_equal(first, second)
        np.testing.assert_array_equal(first, s1.run(a1))  # stateless: same every run


def test_variables_initializers():
    g = pg.Graph()
    with g.as_default():
        z = pg.variable((2, 3), name="z", init="zeros")
        o = pg.variable((4,), name="o", init="ones", dtype="float64")
        a = pg.variable((2, 2), name="a", init=np.arange(4.0).reshape(2, 2))
        glorot = pg.variable((50, 30), name="g", seed=5)
    with pg.Session(g) as sess:
        zv, ov, av, gv = sess.run([z, o, a, glorot])
    assert not zv.any() and ov.dtype == np.float64 and (ov == 1).all()
    np.testing.assert_array_equal(av, [[0, 1], [2, 3]])
    limit = np.sqrt(6 / 80)
    assert gv.dtype == np.float32 and np.abs(gv).max() <= limit and gv.std() > limit / 3


def test_matmul_kernels_agree_with_float64_reference():
    a = data(70, 33, dtype="float32")
    b = data(33, 45, dtype="float32")
    g = pg.Graph()
    with g.as_default():
        y = pg.constant(a) @ pg.constant(b)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    for kernel in ("blas", "numba"):
        with pg.Session(g, pg.Config(matmul_kernel=kernel)) as sess:
            np.testing.assert_allclose(sess.run(y), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_a_sum_over_the_middle_axis_adds_rows_in_order_for_every_range(dtype, layout):
    """Across rows (inner size > 1: axis 0 of a matrix, a middle axis), `sum_middle` adds four
    rows a pass; each element still gets the one-row loop's float64 additions in order, so every
    range [start, stop) of every length (all tails of a pass) gives the bits of adding its rows
    one by one, for either dtype and a strided view too; NaN and infinities come through."""
    from parallelgraph.kernels import reduce

    rng = np.random.default_rng(5)
    full = rng.standard_normal((3, 19, 14)).astype(dtype)
    x = full[:, :, ::2] if layout == "strided" else full[:, :, :7]
    x[1, 9, 3], x[2, 4, 0], x[2, 12, 6] = np.nan, np.inf, -np.inf
    for start in range(4):
        for stop in range(start, x.shape[1] + 1):
            acc = np.full((3, 7), 0.25)
            reduce.sum_middle(x, acc, 0, 3, start, stop)
            expected = np.full((3, 7), 0.25)
            for position in range(start, stop):
                expected = expected + x[:, position, :].astype(np.float64)
            assert acc.tobytes() == expected.tobytes(), (start, stop)


@pytest.mark.parametrize("kernel", ["sum_middle", "sum_last"])
def test_a_sum_along_the_last_axis_is_exact_in_float64_for_every_tail_length(kernel):
    """The last-axis reduction (axis=None or -1: inner size 1) runs in `LANES` interleaved
    float64 partial sums, on the 3-D view (`sum_middle`) or the 2-D one the op passes
    (`sum_last`), from any start; every length up to three blocks and a bit (every tail) agrees
    with math.fsum, the two kernels give the same bits, and a NaN or an infinity in the input
    comes out as NumPy's does."""
    import math

    from parallelgraph.kernels import reduce

    def summed(x, start, stop):
        acc = np.zeros((x.shape[0], 1))
        if kernel == "sum_middle":
            reduce.sum_middle(x, acc, 0, x.shape[0], start, stop)
        else:
            reduce.sum_last(x[:, :, 0], acc, 0, x.shape[0], start, stop, np.empty(reduce.LANES))
        return acc

    rng = np.random.default_rng(3)
    for length in range(3 * reduce.LANES + 9):
        x = rng.standard_normal((2, length + 3, 1)).astype(np.float32)
        acc = summed(x, 3, length + 3)
        for row in range(2):
            exact = math.fsum(float(v) for v in x[row, 3:, 0])
            assert acc[row, 0] == pytest.approx(exact, rel=1e-12, abs=1e-12), length
        other = np.zeros((2, 1))
        reduce.sum_middle(x, other, 0, 2, 3, length + 3)
        assert acc.tobytes() == other.tobytes()
    for bad, expected in ((np.nan, np.nan), (np.inf, np.inf)):
        for position in (11, 40, 70):
            x = np.ones((1, 75, 1), dtype=np.float32)
            x[0, position, 0] = bad
            np.testing.assert_equal(summed(x, 0, 75)[0, 0], expected)
