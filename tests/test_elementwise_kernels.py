"""The vectorized elementwise kernels (kernels.vecmath, kernels.elementwise): accuracy within
the stated ulp bound on a dense sweep, the special values, and the same bits however the rows
are split, laid out or threaded.

The accuracy proofs for float32 (every one of the 2**32 inputs) take minutes, so they run only
with PG_EXHAUSTIVE=1; the sweep here samples every exponent densely.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import parallelgraph as pg
from parallelgraph.kernels import elementwise, vecmath
from parallelgraph.ops import opdef
from parallelgraph.ops.broadcast import NO_MAP

DTYPES = [np.float32, np.float64]
MANTISSA = {np.float32: 23, np.float64: 52}
SMALLEST = {np.float32: -149, np.float64: -1074}
EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x86's 80-bit long double


def ulp_error(value: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """|value - exact| in units of the last place of `dtype` at `exact` (exact in a wider type)."""
    _, exponent = np.frexp(exact)
    ulp = np.ldexp(np.ones_like(exact), np.maximum(exponent - 1 - MANTISSA[dtype], SMALLEST[dtype]))
    return np.abs(value.astype(exact.dtype) - exact) / ulp


def apply(name: str, *operands: np.ndarray) -> np.ndarray:
    """One of vecmath's row kernels (`tanh_rows`, ..., `pow_rows`) on 1-D arrays."""
    out = np.empty_like(operands[0])
    rows = [x.reshape(1, -1) for x in operands]
    getattr(vecmath, f"{name}_rows")(*rows, out.reshape(1, -1), 0, 1)
    return out


def tanh_of(x: np.ndarray) -> np.ndarray:
    return apply("tanh", x)


def exact(name: str, *operands: np.ndarray) -> np.ndarray:
    """float32: the function in float64 (exact to ~2**-29 float32 ulp); float64: in long
    double."""
    wide = np.float64 if operands[0].dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return opdef(name).entry.reference(*(x.astype(wide) for x in operands))


def exact_tanh(x: np.ndarray) -> np.ndarray:
    return exact("tanh", x)


def sweep(dtype, edges=None) -> np.ndarray:
    """Positive finite inputs of every exponent (bit patterns at a fixed stride), and every
    input around the places where a kernel switches methods (`edges`; by default tanh's 0.625
    and its clamp)."""
    bits = np.int32 if dtype == np.float32 else np.int64
    infinity = np.array(np.inf, dtype).view(bits)
    strided = np.arange(0, infinity, infinity // 2_000_000, dtype=bits)
    if edges is None:
        edges = [0.625, 9.0 if dtype == np.float32 else 19.0]
    window = np.arange(-(1 << 17), 1 << 17, dtype=bits)
    near = [edge + window for edge in np.array(edges, dtype).view(bits)]
    return np.concatenate([strided, *near]).view(dtype)


#: Where log's reduction turns over (1 + f = sqrt(1/2) and sqrt(2)) and where log is near 0.
LOG_EDGES = [np.sqrt(0.5), 1.0, np.sqrt(2.0), 2 * np.sqrt(2.0)]
UNARY = sorted(name for name in vecmath.ULP_BOUNDS if name != "pow")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_within_the_ulp_bound_on_a_dense_sweep(name, dtype):
    """Every exponent of both signs, where the result is finite: within
    `vecmath.ULP_BOUNDS[name]` (subnormal results in units of the smallest subnormal)."""
    if dtype == np.float64 and not EXTENDED:
        pytest.skip("needs an extended long double for the float64 reference")
    x = sweep(dtype, LOG_EDGES if name == "log" else None)
    for signed in (x,) if name == "log" else (x, -x):  # log below 0: NaN (special values)
        expected = exact(name, signed)
        finite = np.abs(expected) <= np.finfo(dtype).max
        error = ulp_error(apply(name, signed)[finite], expected[finite], dtype)
        bound = vecmath.ULP_BOUNDS[name][np.dtype(dtype).name]
        assert error.max() <= bound, signed[finite][np.argmax(error)]


@pytest.mark.skipif(not os.environ.get("PG_EXHAUSTIVE"), reason="minutes; PG_EXHAUSTIVE=1 runs it")
@pytest.mark.timeout(3600)  # tanh ~6 minutes on one core of a 2-core VM, exp, sigmoid, log ~4
@pytest.mark.parametrize("name", UNARY)
def test_float32_exhaustively(name):
    """Every float32 input whose exact result is finite: within the bound. tanh is odd, so
    its negative half is checked to be the positive half's negation, bit for bit."""
    worst = 0.0
    stop = 1 << 31 if name == "tanh" else 1 << 32
    for start in range(0, stop, 1 << 24):
        x = np.arange(start, start + (1 << 24), dtype=np.uint64).astype(np.uint32)
        x = x.view(np.float32)
        value = apply(name, x)
        expected = exact(name, x)
        finite = np.isfinite(x) & (np.abs(expected) <= np.finfo(np.float32).max)
        error = ulp_error(value[finite], expected[finite], np.float32)
        worst = max(worst, error.max(initial=0.0))  # log: no finite result below 0
        np.testing.assert_array_equal(np.isnan(value), np.isnan(expected))
        if name == "tanh":
            assert apply(name, -x).tobytes() == (-value).tobytes()
    assert worst <= vecmath.ULP_BOUNDS[name]["float32"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_tanh_special_values(dtype):
    info = np.finfo(dtype)
    below = 2.0**-14 if dtype == np.float32 else 2.0**-28  # x**3 / 3 is under half an ulp
    tiny = np.array([info.smallest_subnormal, info.smallest_normal, 1e-30, below], dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, info.max, -info.max, 30.0, -30.0], dtype)
    value = tanh_of(x)
    assert value.tobytes() == np.array([0.0, -0.0, 1, -1, 1, -1, 1, -1], dtype).tobytes()
    # tanh x = x - x**3/3 + ...: x itself to the last bit
    assert tanh_of(tiny).tobytes() == tiny.tobytes()
    assert tanh_of(-tiny).tobytes() == (-tiny).tobytes()
    nans = np.array([np.nan, -np.nan, np.inf - np.inf], dtype)
    assert np.isnan(tanh_of(nans)).all()
    assert np.all(np.abs(tanh_of(sweep(dtype)[::7])) <= 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_special_values(dtype):
    info = np.finfo(dtype)
    overflow, underflow = (88.73, -103.98) if dtype == np.float32 else (709.79, -745.14)
    x = np.array([0.0, -0.0, np.inf, -np.inf, overflow, underflow, info.max, -info.max], dtype)
    expected = np.array([1, 1, np.inf, 0, np.inf, 0, np.inf, 0], dtype)
    assert apply("exp", x).tobytes() == expected.tobytes()
    assert np.isnan(apply("exp", np.array([np.nan, -np.nan], dtype))).all()
    # the last results above 0: subnormals, correctly rounded, never flushed to zero
    smallest = np.log(np.float64(info.smallest_subnormal))
    tail = np.array([smallest, smallest + 0.5, smallest + 2], dtype)
    assert apply("exp", tail).tobytes() == np.exp(tail.astype(np.float64)).astype(dtype).tobytes()
    assert apply("exp", tail).min() > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_special_values_and_tails(dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, -np.inf, info.max, -info.max], dtype)
    assert apply("sigmoid", x).tobytes() == np.array([0.5, 0.5, 1, 0, 1, 0], dtype).tobytes()
    assert np.isnan(apply("sigmoid", np.array([np.nan], dtype))).all()
    # the negative tail is e**x (1 / (1 + e**-x) would be 1 / inf = 0 there)
    far = np.array([-60.0, -90.0, -100.0], dtype)
    np.testing.assert_allclose(apply("sigmoid", far), apply("exp", far), rtol=4 * info.eps)
    assert apply("sigmoid", far).min() > 0
    values = apply("sigmoid", sweep(dtype)[::7])
    assert np.all((values >= 0.5) & (values <= 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_special_values(dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, np.inf, 1.0, info.max, info.smallest_subnormal], dtype)
    value = apply("log", x)
    assert value[:4].tobytes() == np.array([-np.inf, -np.inf, np.inf, 0.0], dtype).tobytes()
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(value[4:], np.log(x[4:].astype(np.float64)), rtol=info.eps)
    # below 0 (-0.0 aside): NaN; a NaN comes out quieted with its sign and payload
    assert np.isnan(apply("log", np.array([-1.0, -np.inf, -info.smallest_subnormal], dtype))).all()
    if dtype == np.float32:
        nans, quiet = np.array([0x7F800001, 0xFF800123], np.uint32), 1 << 22
    else:
        nans, quiet = np.array([0x7FF0000000000001, 0xFFF0000000000123], np.uint64), 1 << 51
    assert (apply("log", nans.view(dtype)).view(nans.dtype) == (nans | quiet)).all()
    # every subnormal's exponent is taken into account: log(2**-k) = -k ln 2
    k = np.arange(1, -SMALLEST[dtype] + 1)
    powers = np.ldexp(np.ones(k.size), -k).astype(dtype)
    np.testing.assert_allclose(apply("log", powers), -k * np.log(2.0), rtol=2 * info.eps)


def c_pow_cases():
    """(a, b) pairs of C's special cases of pow, and integers with negative bases."""
    inf, nan = np.inf, np.nan
    pairs = [(x, 0.0) for x in (nan, inf, -inf, 0.0, -0.0, 2.5, -2.5)]
    pairs += [(x, -0.0) for x in (nan, -3.0)]
    pairs += [(1.0, y) for y in (nan, inf, -inf, 7.5, -7.5)]
    pairs += [(-1.0, inf), (-1.0, -inf), (-1.0, nan), (nan, 1.0), (2.0, nan), (nan, nan)]
    for zero in (0.0, -0.0):  # +-0 to odd and even integers and non-integers of both signs
        pairs += [(zero, y) for y in (3.0, -3.0, 2.0, -2.0, 0.5, -0.5, inf, -inf, 1e30)]
    for big in (inf, -inf):
        pairs += [(big, y) for y in (3.0, -3.0, 2.0, -2.0, 0.5, -0.5, inf, -inf)]
    for a in (0.5, -0.5, 2.0, -2.0):
        pairs += [(a, inf), (a, -inf)]
    pairs += [(-2.0, y) for y in (0.5, -0.5, 2.5, 1e-3)]  # negative base, non-integer: NaN
    pairs += [(-2.0, y) for y in (1.0, 3.0, -3.0, 2.0, -2.0, 31.0, 1e30, -1e30)]
    pairs += [(-1.5, 2.0**23 + 1), (-1.0, 2.0**24 + 2), (-1.0, 2.0**52 + 1), (-1.0, 2.0**53)]
    return pairs


@pytest.mark.parametrize("dtype", DTYPES)
def test_pow_special_values_as_c(dtype):
    """C's (and np.power's) special cases, bit for bit (NaN: wherever NumPy's is)."""
    a, b = (np.array(column, dtype) for column in zip(*c_pow_cases()))
    value = apply("pow", a, b)
    with np.errstate(all="ignore"):
        expected = np.power(a, b)
    np.testing.assert_array_equal(np.isnan(value), np.isnan(expected))
    numbers = ~np.isnan(expected)
    assert value[numbers].tobytes() == expected[numbers].tobytes()


def pow_pairs(dtype, n=400_000, seed=0):
    """Bases of every exponent (both signs) with exponents b that keep a**b finite and above
    0, half of them integers (a negative base's sign), and bases near 1 with large b."""
    rng = np.random.default_rng(seed)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    top = np.array(np.finfo(dtype).max, dtype).view(bits)
    a = rng.integers(1, top, n, dtype=np.uint64).astype(bits).view(dtype)
    a[: n // 4] = (1 + rng.uniform(-0.01, 0.01, n // 4)).astype(dtype)
    low, high = (-103.9, 88.7) if dtype == np.float32 else (-745.1, 709.7)
    with np.errstate(all="ignore"):
        b = (rng.uniform(low, high, n) / np.log(a.astype(np.float64))).astype(dtype)
    b[::2] = np.round(b[::2])
    a[::4] = -a[::4]  # with integer exponents (one with a non-integer is NaN)
    a[1::8] = -a[1::8]
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
def test_pow_within_the_ulp_bound(dtype):
    if dtype == np.float64 and not EXTENDED:
        pytest.skip("needs an extended long double for the float64 reference")
    a, b = pow_pairs(dtype)
    value = apply("pow", a, b)
    expected = exact("pow", a, b)
    finite = np.isfinite(expected) & (np.abs(expected) <= np.finfo(dtype).max)
    assert finite.mean() > 0.8
    error = ulp_error(value[finite], expected[finite], dtype)
    bound = vecmath.ULP_BOUNDS["pow"][np.dtype(dtype).name]
    assert error.max() <= bound, (a[finite][np.argmax(error)], b[finite][np.argmax(error)])
    # negative bases with non-integers: NaN; overflow and underflow as NumPy's
    with np.errstate(all="ignore"):
        reference = np.power(a, b)
    np.testing.assert_array_equal(np.isnan(value), np.isnan(reference))
    np.testing.assert_array_equal(np.isinf(value[~finite]), np.isinf(reference[~finite]))


def mixed_values(shape, dtype, seed=0) -> np.ndarray:
    """Values that take every path of every kernel: both tanh methods, the clamp, tiny ones,
    signed zeros, infinities and NaN."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * np.exp(rng.uniform(-12, 3.5, shape))
    flat = values.reshape(-1)
    special = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, 0.625, -0.625, 9.5, 25.0]
    flat[: min(flat.size, len(special))] = special[: flat.size]
    rng.shuffle(flat)
    return values.astype(dtype)


KERNELS = {
    "tanh": (elementwise.tanh_rows, 1),
    "exp": (elementwise.exp_rows, 1),
    "sigmoid": (elementwise.sigmoid_rows, 1),
    "log": (elementwise.log_rows, 1),
    "pow": (elementwise.pow_rows, 2),
    "relu": (elementwise.relu_rows, 1),
    "add": (elementwise.add_rows, 2),
    "multiply": (elementwise.multiply_rows, 2),
}


def run_kernel(name, operands, ranges):
    """The row kernel on `operands` (a binary one's each without a row map: the output's rows,
    or one row every row reads)."""
    kernel, arity = KERNELS[name]
    shape = max((x.shape for x in operands), key=lambda shape: shape[0])  # a one-row operand
    out = np.full(shape, np.nan, operands[0].dtype)
    arguments = [x for operand in operands for x in (operand, NO_MAP)] if arity > 1 else operands
    for start, stop in ranges:
        kernel(*arguments, out, start, stop)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("width", [1, 3, 7, 8, 9, 17, 31, 64, 65, 127, 513])
def test_the_bits_do_not_depend_on_how_the_rows_are_split(name, width, dtype):
    """One call on all rows, each row alone, odd row blocks, one long row, one element per row
    (all scalar remainder), unaligned and strided views: the same bits."""
    rows = 13
    arity = KERNELS[name][1]
    operands = [mixed_values((rows, width), dtype, seed) for seed in range(arity)]
    whole = run_kernel(name, operands, [(0, rows)])
    one_by_one = run_kernel(name, operands, [(r, r + 1) for r in range(rows)])
    blocks = run_kernel(name, operands, [(0, 5), (5, 6), (6, 13)])
    assert whole.tobytes() == one_by_one.tobytes() == blocks.tobytes()
    long_row = run_kernel(name, [x.reshape(1, -1) for x in operands], [(0, 1)])
    column = run_kernel(name, [x.reshape(-1, 1) for x in operands], [(0, rows * width)])
    assert long_row.tobytes() == whole.tobytes() == column.tobytes()
    unaligned = []
    for x in operands:
        raw = np.zeros(x.nbytes + 1, np.uint8)[1:]
        view = raw.view(dtype).reshape(x.shape)
        view[...] = x
        unaligned.append(view)
    assert run_kernel(name, unaligned, [(0, rows)]).tobytes() == whole.tobytes()
    strided = []
    for x in operands:
        wide = np.zeros((rows, 2 * width), dtype)
        wide[:, 1::2] = x
        strided.append(wide[:, 1::2])
    assert run_kernel(name, strided, [(0, rows)]).tobytes() == whole.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_keeps_nan_and_zeroes_the_rest_below_zero(dtype):
    x = np.array([[np.nan, -np.inf, -1.0, -0.0, 0.0, 1e-45, 2.5, np.inf]], dtype)
    out = np.empty_like(x)
    elementwise.relu_rows(x, out, 0, 1)
    assert np.isnan(out[0, 0])
    assert out[0, 1:].tobytes() == np.array([0, 0, 0, 0, 1e-45, 2.5, np.inf], dtype).tobytes()


def tanh_relu_graph(dtype):
    graph = pg.Graph("elementwise")
    with graph.as_default():
        x = pg.constant(mixed_values((301, 77), dtype))
        y = pg.relu(pg.tanh(x) * 3.0 + pg.tanh(pg.tanh(x)))
    return graph, y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_same_bits_on_every_thread_count(dtype, many_shards):
    graph, y = tanh_relu_graph(dtype)
    with pg.Session(graph, pg.Config(executor="sequential")) as session:
        reference = session.run(y)
    for inter, intra in [(1, 1), (2, 1), (1, 3), (2, 2)]:
        with pg.Session(
            graph, pg.Config(inter_op_threads=inter, intra_op_threads=intra)
        ) as session:
            assert len(session.plan_for(y).steps[-1].shards) > 1
            assert session.run(y).tobytes() == reference.tobytes()


#: The vector kernels, by dtype (float64 pow is libm's, a call per element).
VECTORIZED = {name: (32, 64) for name in UNARY} | {"pow": (32,)}

_VECTOR_CHECK = f"""
import re
import numpy as np
from parallelgraph.kernels import vecmath
for name, widths in {VECTORIZED!r}.items():
    kernel = getattr(vecmath, name + "_rows")
    for bits in widths:
        x = np.ones((2, 3), np.float32 if bits == 32 else np.float64)
        kernel(*[x] * (2 if name == "pow" else 1), x.copy(), 0, 2)
        ir = kernel.inspect_llvm(kernel.signatures[-1])
        lanes = [int(w) for w in re.findall(r"@llvm\\.fma\\.v(\\d+)f(?:32|64)", ir)]
        print(f"{{name}}-{{bits}}", max(lanes, default=0))
"""


def _host_has_fma() -> bool:
    from numba.core.registry import cpu_target

    return "+fma" in cpu_target.target_context.codegen()._get_host_cpu_features().split(",")


@pytest.mark.skipif(not _host_has_fma(), reason="without FMA, fma is a libm call per element")
def test_vector_math_compiles_to_vector_loops(tmp_path):
    """tanh, exp, sigmoid, log and float32 pow: the fmas (and with them the whole body) are done
    on vectors of at least 4 lanes: LLVM vectorized the loop. In a fresh process with an empty
    cache: cached code cannot be shown.
    (On a CPU without FMA the bits stay the same -- libm's fma rounds once too, checked with
    NUMBA_CPU_NAME=generic -- but the float64 loop is scalar.)"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", _VECTOR_CHECK], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    lanes = dict(line.split() for line in result.stdout.splitlines())
    assert set(lanes) == {
        f"{name}-{bits}" for name, widths in VECTORIZED.items() for bits in widths
    }
    assert all(int(count) >= 4 for count in lanes.values()), lanes


@pytest.mark.parametrize("name", ["add", "multiply"])
@pytest.mark.parametrize("width", [1, 5, 8, 16, 33])
def test_binary_nan_rule_in_the_vector_body_and_the_remainder(name, width):
    """kernels.elementwise.NAN_RULE in every lane: the first NaN operand quieted, a lone NaN
    operand quieted, and numbers as IEEE says (whose invalid results are the default NaN)."""
    quiet = np.uint32(0x00400000)
    a_bits = np.array([0x7F800001, 0xFF800002, 0x3F800000, 0x7FC00003, 0x7F800000], np.uint32)
    b_bits = np.array([0xFF800004, 0x3F800000, 0x7F800005, 0xFFC00006, 0xFF800000], np.uint32)
    reps = -(-width * 3 // a_bits.size)
    a = np.tile(a_bits, reps)[: 3 * width].view(np.float32).reshape(3, width)
    b = np.tile(b_bits, reps)[: 3 * width].view(np.float32).reshape(3, width)
    out = run_kernel(name, [a, b], [(0, 3)]).view(np.uint32)
    a_u, b_u = a.view(np.uint32), b.view(np.uint32)
    with np.errstate(invalid="ignore"):
        numbers = (a + b if name == "add" else a * b).view(np.uint32)
    expected = np.where(np.isnan(a), a_u | quiet, np.where(np.isnan(b), b_u | quiet, numbers))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["add", "multiply", "accumulate"])
@pytest.mark.parametrize("width", [1, 7, 8, 33, 513])
def test_a_one_row_operand_is_read_by_every_row(name, width, dtype):
    """A bias or a scalar reaches the kernels as ONE contiguous row (ops.math._rows_of): the
    same bits as that row repeated out to the full shape, on either side, in any row blocks."""
    rows = 11
    x = mixed_values((rows, width), dtype, 0)
    row = mixed_values((1, width), dtype, 1)
    repeated = np.repeat(row, rows, axis=0)
    if name == "accumulate":

        def run(operand, ranges):
            out = x.copy()
            for start, stop in ranges:
                elementwise.add_accumulate_rows(out, operand, start, stop)
            return out

        expected = run(repeated, [(0, rows)])
        assert run(row, [(0, rows)]).tobytes() == expected.tobytes()
        assert run(row, [(0, 4), (4, 5), (5, rows)]).tobytes() == expected.tobytes()
        return
    for operands, one_row in (([x, repeated], [x, row]), ([repeated, x], [row, x])):
        expected = run_kernel(name, operands, [(0, rows)])
        assert run_kernel(name, one_row, [(0, rows)]).tobytes() == expected.tobytes()
        blocks = run_kernel(name, one_row, [(0, 4), (4, 5), (5, rows)])
        assert blocks.tobytes() == expected.tobytes()


def test_a_one_row_operand_of_another_width_is_refused():
    x = np.ones((4, 8), np.float32)
    with pytest.raises(IndexError, match="widths differ"):
        elementwise.add_rows(x, NO_MAP, np.ones((1, 7), np.float32), NO_MAP, np.empty_like(x), 0, 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bias_and_scalar_operands_through_the_ops_on_every_thread_count(dtype, many_shards):
    """Add of a bias and multiply by a scalar (both one row for the kernels) against NumPy and
    the sequential run, bit for bit, sharded."""
    values = mixed_values((301, 77), dtype)
    bias = mixed_values((77,), dtype, 5)
    graph = pg.Graph("one-row operands")
    with graph.as_default():
        y = (pg.constant(values) + pg.constant(bias)) * 3.0
    with np.errstate(invalid="ignore", over="ignore"):
        expected = (values + bias) * np.asarray(3.0, dtype)
    with pg.Session(graph, pg.Config(executor="sequential")) as session:
        reference = session.run(y)
    np.testing.assert_array_equal(reference, expected)
    with pg.Session(graph, pg.Config(inter_op_threads=2, intra_op_threads=2)) as session:
        assert len(session.plan_for(y).steps[-1].shards) > 1
        assert session.run(y).tobytes() == reference.tobytes()
