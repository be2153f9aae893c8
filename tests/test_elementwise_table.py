"""Every entry of the elementwise op table (`ops.elementwise`), from its one test row here.

A new elementwise op is one entry in the table and one row in `ROWS` (the values its inputs
take); everything below runs for it: the kernel against NumPy on generated shapes that
broadcast on either side (sizes 0, 1, odd and prime; NaN, infinities and -0.0 where the row
allows), the same bits on every executor and thread setting and fused or not, the GPU kernel
in the CUDA simulator, and the build-time errors.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.ops import opdef
from parallelgraph.ops.broadcast import broadcast_shapes
from parallelgraph.ops.elementwise import TABLE
from parallelgraph.ops.registry import ShapeError

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0]


def mixed(scale=4.0, special=True):
    """Normals times `scale`, with NaN, infinities and signed zeros first when `special`."""

    def values(shape, dtype, rng):
        x = rng.standard_normal(shape) * scale
        if special and x.size:
            flat = x.reshape(-1)
            flat[: min(flat.size, len(SPECIAL))] = SPECIAL[: flat.size]
            rng.shuffle(flat)
        return x

    return values


def uniform(low, high, special=()):
    def values(shape, dtype, rng):
        x = rng.uniform(low, high, shape)
        if special and x.size:
            flat = x.reshape(-1)
            flat[: min(flat.size, len(special))] = list(special)[: flat.size]
        return x

    values.low = low  # the domain's bound, for the CUDA simulator (Python's math raises)
    return values


def booleans(shape, dtype, rng):
    return rng.random(shape) < 0.5


def integers(shape, dtype, rng):
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, -1, 1]
    x = rng.integers(-1000, 1000, shape)
    if x.size:
        flat = x.reshape(-1)
        flat[: min(flat.size, len(edges))] = edges[: flat.size]
    return x


#: THE TEST ROW OF EACH OP: the values of each input (floats; integer and bool inputs come from
#: `integers` and `booleans` wherever the entry takes them).
ROWS = {
    "add": [mixed(), mixed()],
    "subtract": [mixed(), mixed()],
    "multiply": [mixed(), mixed()],
    "divide": [mixed(), mixed()],
    "maximum": [mixed(), mixed()],
    "minimum": [mixed(), mixed()],
    "pow": [uniform(0.05, 4.0, special=[1.0, 0.0]), uniform(-3.0, 3.0, special=[0.0, 2.0])],
    "negative": [mixed()],
    "abs": [mixed()],
    "square": [mixed()],
    "sqrt": [uniform(0.0, 100.0, special=[0.0, -0.0, np.inf, -1.0, np.nan])],
    "rsqrt": [uniform(1e-3, 100.0, special=[np.inf, np.nan])],
    "relu": [mixed()],
    "tanh": [mixed(scale=3.0)],
    "exp": [mixed(scale=10.0)],
    "sigmoid": [mixed(scale=10.0)],
    "log": [uniform(1e-3, 1e3, special=[0.0, np.inf, -1.0, np.nan, 1.0])],
    "erf": [mixed(scale=2.0)],
    "gelu": [mixed(scale=3.0)],
    "greater": [mixed(), mixed()],
    "greater_equal": [mixed(), mixed()],
    "less": [mixed(), mixed()],
    "less_equal": [mixed(), mixed()],
    "equal": [uniform(-2, 2), uniform(-2, 2)],
    "not_equal": [uniform(-2, 2), uniform(-2, 2)],
    "where": [booleans, mixed(), mixed()],
    "cast": [uniform(-1e3, 1e3, special=[0.0, -0.0, 0.5, -0.5, 1.5])],
    "logical_and": [booleans, booleans],
    "logical_or": [booleans, booleans],
    "logical_xor": [booleans, booleans],
    "logical_not": [booleans],
    "is_nan": [mixed()],
    "is_inf": [mixed()],
    "reciprocal": [mixed(scale=1e3)],
    "sign": [mixed()],
}

#: Shape pairs that broadcast, every rule on either side: equal, scalar, bias, column, outer,
#: 3-D middle axes, size 0 and 1, odd and prime sizes.
SHAPES = [
    (7, 5),
    (),
    (5,),
    (7, 1),
    (1, 5),
    (3, 7, 5),
    (3, 1, 5),
    (1, 7, 1),
    (0, 5),
    (1,),
    (13,),
]


def shape_pairs(arity):
    """Shapes of `arity` operands that broadcast together, drawn from `SHAPES`."""
    pairs = []
    for shapes in itertools.product(SHAPES, repeat=min(arity, 2)):
        try:
            broadcast_shapes(*shapes)
        except ShapeError:
            continue
        pairs.append(shapes)
    if arity == 3:  # where: the condition's shape from the list too, rotated
        pairs = [(shapes[-1], *shapes) for shapes in pairs]
    return pairs


def input_dtypes(entry, dtype):
    """The dtypes of the entry's inputs when its values are `dtype`."""
    if entry.name == "where":
        return [np.dtype(np.bool_), dtype, dtype]
    return [dtype] * entry.arity


def first_dtype(entry):
    """float32 for an entry that takes floats, else the dtype of its first kind (bool for the
    logical ops): what the sharding and GPU tests run it on."""
    return np.dtype({"float": "float32", "integer": "int32", "bool": "bool"}[entry.kinds[0]])


def make_values(name, shapes, dtypes, seed):
    rng = np.random.default_rng(seed)
    values = []
    for maker, shape, dtype in zip(ROWS[name], shapes, dtypes):
        if dtype.kind == "b":
            values.append(booleans(shape, dtype, rng))
        elif dtype.kind == "i":
            values.append(integers(shape, dtype, rng).astype(dtype))
        else:
            with np.errstate(all="ignore"):
                values.append(np.asarray(maker(shape, dtype, rng)).astype(dtype))
    return values


def build(name, values, dtype_attr=None):
    graph = pg.Graph(name)
    with graph.as_default():
        inputs = [pg.constant(value) for value in values]
        if name == "cast":
            out = pg.cast(inputs[0], dtype_attr)
        else:
            out = getattr(pg, name)(*inputs)
    return graph, out


def run(graph, out, config):
    with pg.Session(graph, config) as session:
        with np.errstate(all="ignore"):
            return session.run(out)


def assert_matches_reference(name, value, values, op):
    entry = TABLE[name]
    with np.errstate(all="ignore"):
        expected = opdef(name).reference(op, values)
    assert value.shape == expected.shape and value.dtype == expected.dtype == op.dtype
    if entry.exact or value.dtype.kind != "f":
        np.testing.assert_array_equal(value, expected, err_msg=name)
        return
    # float32: the float64 reference is exact to well under an ulp; float64: it is no more
    # precise than the kernel, and where a function is ill-conditioned (gelu's negative tail)
    # the rounding of its argument dominates: 1e-13 relative there
    eps = np.finfo(value.dtype).eps
    rtol = (entry.ulp + 1) * eps if value.dtype == np.float32 else 1e-13
    np.testing.assert_allclose(
        value, expected, rtol=rtol, atol=4 * np.finfo(value.dtype).tiny, err_msg=name
    )


def cases():
    for name, entry in TABLE.items():
        kinds = ["float32", "float64"] if "float" in entry.kinds else []
        kinds += ["int32", "int64"] if "integer" in entry.kinds else []
        kinds += ["bool"] if "bool" in entry.kinds and name != "where" else []
        for dtype in kinds:
            yield name, np.dtype(dtype)


CASES = list(cases())


def test_every_entry_has_its_test_row():
    assert set(ROWS) == set(TABLE), "a table entry needs a row in ROWS (and a row, an entry)"
    for name, entry in TABLE.items():
        assert len(ROWS[name]) == entry.arity, name


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_each_op_against_numpy_on_broadcast_shapes(name, dtype):
    entry = TABLE[name]
    targets = ["int32", "float64", "bool"] if name == "cast" else [None]
    for n, shapes in enumerate(shape_pairs(entry.arity)):
        dtypes = input_dtypes(entry, dtype)
        values = make_values(name, shapes, dtypes, seed=n)
        for target in targets:
            if target == "int32" and dtype.kind == "f":
                values = [np.trunc(np.nan_to_num(values[0], posinf=0, neginf=0))]  # defined
            graph, out = build(name, values, target)
            value = run(graph, out, pg.Config(executor="sequential"))
            assert_matches_reference(name, value, values, out.op)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_op_gives_the_same_bits_on_every_setting(name, many_shards):
    """Sharded on every thread setting, and fused with a neighbour where it fuses: the bits of
    the sequential run (NaN payloads and signs included)."""
    entry = TABLE[name]
    dtype = first_dtype(entry)
    shapes = [(61, 7), (61, 7), (1, 7)][: entry.arity]
    values = make_values(name, shapes, input_dtypes(entry, dtype), seed=3)
    graph = pg.Graph(name)
    with graph.as_default():
        inputs = [pg.constant(v) for v in values]
        if name == "cast":
            out = pg.cast(inputs[0], "float64")
        else:
            out = getattr(pg, name)(*inputs)
        if entry.fuses:  # a group of three: x -> op -> * 2 -> + x
            out = (out * 2.0) + inputs[-1]
    reference = run(graph, out, pg.Config(executor="sequential"))
    for inter, intra, fuse in [(1, 1, True), (2, 1, False), (1, 2, False), (2, 2, True)]:
        config = pg.Config(inter_op_threads=inter, intra_op_threads=intra, fuse=fuse)
        assert run(graph, out, config).tobytes() == reference.tobytes(), (inter, intra, fuse)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_each_op_on_the_gpu_in_the_simulator(name):
    entry = TABLE[name]
    dtype = first_dtype(entry)
    shapes = [(3, 4), (4,), (3, 1)][: entry.arity]
    values = make_values(name, shapes, input_dtypes(entry, dtype), seed=5)
    # the simulator runs Python's math, which raises where CUDA gives NaN: finite, in-domain
    for k, maker in enumerate(ROWS[name]):
        if values[k].dtype.kind == "f":
            finite = np.where(np.isfinite(values[k]), values[k], 1.0)
            values[k] = np.maximum(finite, getattr(maker, "low", -np.inf)).astype(dtype)
    graph = pg.Graph(name)
    with graph.as_default(), pg.device("gpu:0"):
        inputs = [pg.constant(v) for v in values]
        out = pg.cast(inputs[0], "int32") if name == "cast" else getattr(pg, name)(*inputs)
    value = run(graph, out, pg.Config(streams=1))
    if name == "cast":
        values = [values[0]]
    with np.errstate(all="ignore"):
        expected = opdef(name).reference(out.op, values)
    assert value.dtype == expected.dtype and value.shape == expected.shape
    if value.dtype.kind == "f":
        np.testing.assert_allclose(value, expected, rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_operators_build_the_table_ops(dtype):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2, (4, 3)).astype(dtype)
    b = rng.uniform(0.5, 2, (3,)).astype(dtype)
    graph = pg.Graph("operators")
    with graph.as_default():
        x, y = pg.constant(a), pg.constant(b)
        results = [x - y, 2 - x, x / y, 1 / x, x**2, 2**x, -x, abs(-x), x < y, x <= 1, x > y]
        results += [x >= 1, pg.where(x > 1, x, 0.0)]
    values = run(graph, results, pg.Config())
    two = np.asarray(2, dtype)
    expected = [a - b, two - a, a / b, 1 / a, a**two, two**a, -a, a, a < b, a <= 1, a > b]
    expected += [a >= 1, np.where(a > 1, a, 0).astype(dtype)]
    for value, want in zip(values, expected):
        np.testing.assert_allclose(value, want, rtol=1e-6)
        assert value.dtype == np.asarray(want).dtype


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: pg.constant(np.ones((3, 4))) - pg.constant(np.ones((3, 5))), "do not broadcast"),
        (lambda: pg.constant(np.ones(3, np.float32)) + pg.constant(np.ones(3)), "dtypes differ"),
        (lambda: pg.divide(pg.constant(np.ones(3, np.int32)), 2), "takes float"),
        (lambda: pg.where(pg.constant(np.ones(3)), 1.0, 2.0), "condition must be bool"),
        (lambda: pg.constant(np.ones(3, np.int32)) > 0.5, "not a int32 value"),
        (lambda: pg.sqrt(pg.constant(np.ones(3, np.int64))), "takes float"),
        (lambda: pg.cast(pg.constant(np.ones(3)), "float16"), "unsupported dtype"),
    ],
)
def test_bad_operands_are_refused_when_the_graph_is_built(build, message):
    graph = pg.Graph("bad")
    with graph.as_default(), pg.scope("block"), pytest.raises(pg.GraphError, match=message):
        build()


def test_the_error_names_the_op_its_scope_and_the_shapes():
    graph = pg.Graph("bad")
    with graph.as_default(), pg.scope("head0"):
        x = pg.constant(np.ones((2, 3), np.float32), name="x")
        with pytest.raises(pg.GraphError) as refused:
            pg.subtract(x, pg.constant(np.ones((4, 1, 2), np.float32), name="y"))
    text = str(refused.value)
    assert "subtract" in text and "'head0'" in text and "[2, 3]" in text and "[4, 1, 2]" in text


def test_the_generated_kernels_are_readable_source():
    from parallelgraph.kernels import codegen

    source = open(codegen.cpu_module().__file__).read()
    for name in TABLE:
        assert f"def {name}_rows(" in source
    assert "def apply_tile(" in source and "def run_program(" in source


@pytest.mark.parametrize(
    "shapes, out, rows_at_least",
    [
        (((16, 32, 32, 32), (32, 1, 1)), (16, 32, 32, 32), 1024),  # an NCHW bias: rows of H*W
        (((2048, 32), (2048, 32)), (2048, 32), 256),  # the same shape: flat, wide rows
        (((3, 1, 5), (1, 7, 1)), (3, 7, 5), 5),  # an outer broadcast keeps its axes
    ],
)
def test_layouts_take_the_widest_rows_the_shapes_allow(shapes, out, rows_at_least, many_shards):
    from parallelgraph.ops.broadcast import elementwise_layout

    layout = elementwise_layout(shapes, out)
    assert layout.columns >= rows_at_least and layout.rows * layout.columns == int(np.prod(out))
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    graph = pg.Graph("wide rows")
    with graph.as_default():
        y = pg.constant(values[0]) * pg.constant(values[1]) + pg.constant(values[0])
    expected = values[0] * values[1] + values[0]
    for config in (
        pg.Config(executor="sequential"),
        pg.Config(inter_op_threads=2, intra_op_threads=2),
    ):
        assert run(graph, y, config).tobytes() == expected.tobytes()


def test_random_broadcasts_against_numpy():
    """200 random shape pairs (ranks 0-4, sizes 1-3 and some 1s in the output itself): the
    layouts' coalesced axes give NumPy's values, bit for bit (a middle axis of size 1 once
    merged a broadcast axis into a full one)."""
    rng = np.random.default_rng(42)
    for _ in range(200):
        out = tuple(int(d) for d in rng.integers(1, 4, rng.integers(0, 5)))
        shapes = []
        for _ in range(2):
            shape = [1 if rng.random() < 0.4 else d for d in out]
            shapes.append(tuple(shape[int(rng.integers(0, len(shape) + 1)) :]))
        values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        graph = pg.Graph("random broadcasts")
        with graph.as_default():
            y = pg.constant(values[0]) - pg.constant(values[1])
        got = run(graph, y, pg.Config(executor="sequential"))
        np.testing.assert_array_equal(got, values[0] - values[1], err_msg=str(shapes))
